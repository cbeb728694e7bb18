//! A switch with a bare link end on every port: forwarding, order, losslessness, arbitration,
//! latency and the frames it cannot forward.

use ethlink_link::{Config as LinkConfig, Duration, Event, Instant, Link, Release};
use ethlink_protocol::{DataRepr, GpuId, MemTarget, PathId, Space, TxnRepr, Txns, Vc};
use ethlink_switch::{Config, Mode, Routes, Switch};

/// A peer on each switch port: GPU `gpu_of[p]` sits behind port `p`.
struct Bench {
    sw: Switch,
    peers: Vec<Link>,
    /// Per peer: delivered payloads with their arrival time, and whether to keep their credits.
    rx: Vec<Vec<(u64, Vc, Vec<u8>)>>,
    hold: Vec<bool>,
    held: Vec<Vec<Release>>,
    now: u64,
    buf: Vec<u8>,
    ports_ready: Vec<u16>,
}

fn gpu(v: u16) -> GpuId {
    GpuId::new(v).unwrap()
}

impl Bench {
    fn new(cfg: Config, routes: Routes) -> Self {
        Self::with_peers(cfg, routes, |_, l| l)
    }

    /// As [`Bench::new`], with `peer(p, config)` giving peer `p`'s link configuration.
    fn with_peers(
        cfg: Config,
        routes: Routes,
        peer: impl Fn(usize, LinkConfig) -> LinkConfig,
    ) -> Self {
        let n = usize::from(cfg.ports);
        let mut sw = Switch::new(cfg.clone(), routes).unwrap();
        let mut peers = Vec::new();
        for p in 0..n {
            let mut l = peer(p, cfg.link.clone());
            l.mac.0 = [0x02, 0x09, 0, 0, 0, p as u8];
            l.nonce_seed = 1000 + p as u64;
            let mut link = Link::new(l).unwrap();
            link.physical_up(Instant::ZERO);
            peers.push(link);
            sw.port_up(Instant::ZERO, p);
        }
        let mut b = Bench {
            sw,
            peers,
            rx: vec![Vec::new(); n],
            hold: vec![false; n],
            held: (0..n).map(|_| Vec::new()).collect(),
            now: 0,
            buf: vec![0; 9216],
            ports_ready: Vec::new(),
        };
        b.run(20_000);
        for r in &mut b.rx {
            r.clear();
        }
        b
    }

    /// Runs `ns` nanoseconds in 10 ns rounds over a wire without delay.
    fn run(&mut self, ns: u64) {
        let end = self.now + ns;
        while self.now < end {
            let now = Instant::from_nanos(self.now);
            self.sw.handle_timeout(now);
            for p in 0..self.peers.len() {
                if self.peers[p].poll_timeout().is_some_and(|t| t <= now) {
                    self.peers[p].handle_timeout(now);
                }
                while let Ok(Some(t)) = self.peers[p].poll_transmit(now, &mut self.buf) {
                    self.sw.handle_frame(now, p, &self.buf[..t.len]);
                }
            }
            self.ports_ready.clear();
            self.sw.take_ready_ports(&mut self.ports_ready);
            for p in 0..self.peers.len() {
                while let Ok(Some(t)) = self.sw.poll_transmit(now, p, &mut self.buf) {
                    self.peers[p].handle_frame(now, &self.buf[..t.len]);
                }
                while let Some(ev) = self.peers[p].poll_event() {
                    if let Event::Delivered {
                        vc,
                        payload,
                        release,
                        ..
                    } = ev
                    {
                        self.rx[p].push((self.now, vc, payload.to_vec()));
                        if self.hold[p] {
                            self.held[p].push(release);
                        } else {
                            let _ = self.peers[p].release(release);
                        }
                    }
                }
            }
            self.now += 10;
        }
    }

    fn resume(&mut self, p: usize) {
        self.hold[p] = false;
        for r in std::mem::take(&mut self.held[p]) {
            let _ = self.peers[p].release(r);
        }
    }

    /// Peer `p` sends a frame from GPU `src` to GPU `dst` on `vc` carrying an RDMA write segment
    /// of `tag` with `len` bytes.
    #[allow(clippy::too_many_arguments)]
    fn send(&mut self, p: usize, src: u16, dst: u16, path: u8, vc: u8, tag: u16, len: usize) {
        let data = vec![tag as u8; len];
        let txn = [TxnRepr::RdmaWrite {
            tag,
            target: MemTarget {
                space: Space::Global,
                key: 1,
                addr: u64::from(tag),
            },
            offset: 0,
            total: len as u32,
            data: &data,
        }];
        let repr = DataRepr {
            dst: gpu(dst),
            src: gpu(src),
            path: PathId(path),
            txns: Txns::Slice(&txn),
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        self.peers[p]
            .submit(Vc::new(vc).unwrap(), &buf)
            .expect("peer queue has room");
    }

    /// Tags of the stores peer `p` received, in order.
    fn tags(&self, p: usize) -> Vec<u16> {
        self.rx[p]
            .iter()
            .map(|(_, _, payload)| {
                DataRepr::parse(payload)
                    .unwrap()
                    .txns
                    .iter()
                    .next()
                    .unwrap()
                    .unwrap()
                    .tag()
            })
            .collect()
    }
}

fn routes(n: u16) -> Routes {
    let mut r = Routes::new();
    for p in 0..n {
        r.add(gpu(p), p);
    }
    r
}

fn cfg(ports: u16) -> Config {
    let mut c = Config {
        ports,
        ..Config::default()
    };
    c.link.tx_queue_frames = 512;
    c.link.tx_queue_bytes = 1 << 20;
    c
}

#[test]
fn forwards_by_destination_and_keeps_path_order() {
    let mut b = Bench::new(cfg(4), routes(4));
    for k in 0..200u16 {
        b.send(0, 0, 2, 0x10, 0, k, 64);
        b.send(1, 1, 3, 0x11, 1, 1000 + k, 200);
    }
    b.run(50_000);
    //= docs/spec/switch.md#2-forwarding
    //= type=test
    //# SW-2-1 A switch MUST forward a DATA frame to an egress port that its forwarding table
    //# lists for the frame's destination GPU.
    assert_eq!(b.rx[2].len(), 200);
    assert_eq!(b.rx[3].len(), 200);
    assert!(b.rx[0].is_empty() && b.rx[1].is_empty());
    //= docs/spec/switch.md#3-order
    //= type=test
    //# SW-3-1 Frames received on one input port and VC and forwarded to one egress port MUST be
    //# handed to the egress port's link in the order they were received.
    assert_eq!(b.tags(2), (0..200).collect::<Vec<_>>());
    assert_eq!(b.tags(3), (1000..1200).collect::<Vec<_>>());
    //= docs/spec/switch.md#2-forwarding
    //= type=test
    //# SW-2-2 A switch MUST NOT change the network header or the transactions of a frame it
    //# forwards; it sends them behind its own Ethernet and link headers.
    //= docs/spec/wire.md#5-data-frames-the-network-header
    //= type=test
    //# WIRE-5-4 A switch MUST forward a DATA frame on its destination GPU id, path id and VC only,
    //# and MUST NOT change the network header or the transactions.
    assert_eq!(b.rx[2][0].2, {
        let data = vec![0u8; 64];
        let txn = [TxnRepr::RdmaWrite {
            tag: 0,
            target: MemTarget {
                space: Space::Global,
                key: 1,
                addr: 0,
            },
            offset: 0,
            total: 64,
            data: &data,
        }];
        let repr = DataRepr {
            dst: gpu(2),
            src: gpu(0),
            path: PathId(0x10),
            txns: Txns::Slice(&txn),
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        buf
    });
    let d = DataRepr::parse(&b.rx[2][0].2).unwrap();
    assert_eq!((d.src, d.dst, d.path), (gpu(0), gpu(2), PathId(0x10)));
    let c = b.sw.counters();
    //= docs/spec/switch.md#8-counters
    //= type=test
    //# SW-8-1 A switch MUST count, per port: DATA frames and bytes received and sent per VC;
    assert_eq!(c.ports[0].rx_frames[0], 200);
    assert_eq!(c.ports[1].rx_frames[1], 200);
    assert_eq!(c.ports[2].tx_frames[0], 200);
    assert_eq!(c.ports[3].tx_bytes[1], 200 * b.rx[3][0].2.len() as u64);
    assert_eq!(c.forwarded(), 400);
}

#[test]
fn equal_cost_ports_are_chosen_per_path() {
    // GPU 9 is reachable through ports 2 and 3.
    let mut r = routes(2);
    r.add(gpu(9), 2);
    r.add(gpu(9), 3);
    let mut b = Bench::new(cfg(4), r);
    for k in 0..64u16 {
        for path in 0..8u8 {
            b.send(0, 0, 9, path, 0, path as u16 * 100 + k, 64);
        }
    }
    b.run(100_000);
    let (mut on2, mut on3) = (Vec::new(), Vec::new());
    for (p, set) in [(2usize, &mut on2), (3, &mut on3)] {
        for (_, _, pl) in &b.rx[p] {
            set.push(DataRepr::parse(pl).unwrap().path.0);
        }
    }
    // Each path on exactly one port, both ports used.
    for path in 0..8u8 {
        let a = on2.iter().filter(|&&x| x == path).count();
        let c = on3.iter().filter(|&&x| x == path).count();
        assert!(
            a == 64 && c == 0 || a == 0 && c == 64,
            "path {path}: {a} + {c}"
        );
    }
    assert!(!on2.is_empty() && !on3.is_empty());
    // Order per path kept across the two ports.
    for p in [2usize, 3] {
        let tags = b.tags(p);
        for path in 0..8u16 {
            let mine: Vec<_> = tags.iter().filter(|&&t| t / 100 == path).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
    }
}

#[test]
fn a_stalled_egress_holds_back_neither_other_egresses_nor_a_single_byte_too_many() {
    let mut c = cfg(3);
    c.link = LinkConfig {
        tx_queue_frames: 512,
        tx_queue_bytes: 1 << 20,
        ..LinkConfig::default().with_uniform_credits(4, 2048)
    };
    // Frames wait for as long as the test holds egress 1: no aging here.
    c.max_residence = Duration::from_secs(1);
    // Peer 1 has a 4 KiB buffer; the switch's inputs 128 KiB.
    let mut b = Bench::with_peers(c, routes(3), |p, l| {
        if p == 1 {
            l.with_uniform_credits(4, 64)
        } else {
            l
        }
    });
    // Peer 1 stops returning credits: the switch's egress 1 stalls once the peer's buffer is full.
    b.hold[1] = true;
    for k in 0..250u16 {
        b.send(0, 0, 1, 0, 0, k, 256);
        b.send(0, 0, 2, 0, 0, 1000 + k, 256);
    }
    b.run(200_000);
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-3 A frame waiting for an egress port that cannot take it MUST NOT hold back a frame
    //# received after it on the same input port and VC for another egress port that can take
    //# it.
    assert_eq!(b.rx[2].len(), 250, "egress 2 is not held back by egress 1");
    assert!(b.rx[1].len() < 250, "egress 1 stalled");
    let input_buffer = 2048 * 64u64;
    let held = b.sw.counters().ports[0].held_max_bytes[0];
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-1 The buffer of an input port for a VC is its link's receive buffer for the VC
    //# (`rx_credits` x `credit_size` bytes). A switch MUST keep a received frame's credits until
    //# the frame has been handed to its egress port's link, and only then return them
    assert!(
        held <= input_buffer,
        "held {held} B in a {input_buffer} B buffer"
    );
    assert!(held > input_buffer / 2, "the input buffer filled: {held}");
    b.resume(1);
    b.run(300_000);
    assert_eq!(b.tags(1), (0..250).collect::<Vec<_>>());
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-4 A switch MUST NOT discard a frame its input link accepted for want of buffer
    assert_eq!(b.sw.counters().discarded(), 0);
    assert_eq!(b.rx[2].len() + b.rx[1].len(), 500);
}

#[test]
fn inputs_share_an_egress_round_robin() {
    let mut b = Bench::new(cfg(3), routes(3));
    for k in 0..120u16 {
        b.send(0, 0, 2, 0, 1, k, 4000);
        b.send(1, 1, 2, 0, 1, 1000 + k, 4000);
    }
    // Both inputs are backlogged; run part of the way.
    b.run(600);
    let tags = b.tags(2);
    assert!((40..200).contains(&tags.len()), "{}", tags.len());
    let from0 = tags.iter().filter(|&&t| t < 1000).count();
    let from1 = tags.len() - from0;
    //= docs/spec/switch.md#5-arbitration
    //= type=test
    //# SW-5-1 For each egress port and VC, a switch MUST take ready frames from the input ports
    //# round-robin: after taking from input *i* it next considers input *i*+1.
    assert!(from0.abs_diff(from1) <= 2, "{from0} vs {from1}");
}

#[test]
fn responses_go_before_requests() {
    let mut c = cfg(2);
    c.egress_depth = 1;
    c.mode = Mode::StoreAndForward;
    let mut b = Bench::new(c, routes(2));
    // Everything arrives within a few ns, then waits out the latency together.
    for k in 0..20u16 {
        b.send(0, 0, 1, 0, 0, k, 64);
    }
    for k in 0..20u16 {
        b.send(0, 0, 1, 0, 2, 100 + k, 64);
    }
    b.run(20_000);
    let tags = b.tags(1);
    assert_eq!(tags.len(), 40);
    // Once both are ready, the response VC is served first: every response is delivered before
    // the last requests.
    let last_resp = tags.iter().rposition(|&t| t >= 100).unwrap();
    let first_req_after = tags.iter().rposition(|&t| t < 100).unwrap();
    //= docs/spec/switch.md#5-arbitration
    //= type=test
    //# SW-5-2 An egress port MUST offer ready frames of the response VCs (2 and 3, endpoint.md
    //# EP-3-1) to its link before those of the request VCs (0 and 1).
    assert!(last_resp < first_req_after, "{tags:?}");
    //= docs/spec/switch.md#5-arbitration
    //= type=test
    //# SW-5-3 A switch MUST hand an egress link no more than `egress_depth` frames of one VC
    //# beyond those it is sending
    assert!(b.sw.link(1).unwrap().queued(Vc::new(0).unwrap()).0 <= 1);
}

fn one_frame_latency(mode: Mode, len: usize) -> u64 {
    let mut c = cfg(2);
    c.mode = mode;
    let mut b = Bench::new(c, routes(2));
    let t0 = b.now;
    b.send(0, 0, 1, 0, 0, 7, len);
    b.run(5_000);
    b.rx[1][0].0 - t0
}

#[test]
fn latency_is_added_from_the_first_or_the_last_bit() {
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-1 A frame MUST NOT be handed to its egress port's link before `latency` has passed
    //# since it began to arrive (cut-through: since its first bit, which is its last bit's
    //# arrival less its serialisation time at `rate`) or since it arrived whole
    //# (store-and-forward).
    let sf = one_frame_latency(Mode::StoreAndForward, 4000);
    assert!((250..=280).contains(&sf), "store-and-forward {sf} ns");
    // On this zero-delay bench the frame arrives whole at once, so cut-through takes off the
    // 4 KiB frame's 81 ns of serialisation.
    let ct = one_frame_latency(Mode::CutThrough, 4000);
    assert!(ct + 70 <= sf && ct >= 160, "cut-through {ct} vs {sf}");
}

#[test]
fn malformed_unroutable_and_port_down_frames_are_discarded_and_counted() {
    let mut b = Bench::new(cfg(3), routes(3));
    // A network header with a zero transaction count.
    let mut bad = vec![0u8; 16];
    bad[0..2].copy_from_slice(&1u16.to_be_bytes());
    bad[6..8].copy_from_slice(&8u16.to_be_bytes());
    b.peers[0].submit(Vc::new(0).unwrap(), &bad).unwrap();
    b.send(0, 0, 77, 0, 0, 1, 64);
    b.run(5_000);
    let c = b.sw.counters().ports[0];
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-1 A DATA frame whose network header is malformed (WIRE-5-3) MUST be discarded and
    //# counted.
    assert_eq!(c.discard_malformed[0], 1);
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-2 A DATA frame for a GPU the table does not list, or all of whose listed egress ports
    //# are down, MUST be discarded and counted as unroutable.
    assert_eq!(c.discard_unroutable[0], 1);
    assert!(b.rx.iter().all(Vec::is_empty));
    // Egress 2 stalls, frames queue for it, then its link goes down.
    b.hold[2] = true;
    for k in 0..100u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    b.run(20_000);
    let now = Instant::from_nanos(b.now);
    b.sw.port_down(now, 2);
    b.peers[2].physical_down(now);
    b.run(1_000);
    let c = b.sw.counters();
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-3 Frames waiting for an egress port whose link goes down, and frames its link reports
    //# of unknown fate or withdrawn, MUST be discarded and counted as lost to the port
    assert!(c.ports[2].discard_port_down[0] > 0);
    assert_eq!(b.sw.queued(), 0);
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-4 Every discarded frame's credits MUST be returned at once.
    assert_eq!(c.ports[0].held_bytes[0], 0);
    // With port 2 down, GPU 2 is unroutable; the input still works for GPU 1.
    b.send(0, 0, 2, 0, 0, 500, 64);
    b.send(0, 0, 1, 0, 0, 501, 64);
    b.run(5_000);
    // The frames for GPU 2 still on their way when port 2 went down are unroutable too.
    assert!(b.sw.counters().ports[0].discard_unroutable[0] >= 2);
    assert_eq!(b.tags(1), vec![501]);
    assert_eq!(b.sw.counters().total(|p| &p.discard_aged), 0);
    let _ = Duration::ZERO;
}

#[test]
fn an_equal_cost_port_that_is_down_is_not_chosen() {
    let mut r = routes(2);
    r.add(gpu(9), 2);
    r.add(gpu(9), 3);
    let mut b = Bench::new(cfg(4), r);
    let now = Instant::from_nanos(b.now);
    b.sw.port_down(now, 2);
    b.peers[2].physical_down(now);
    for path in 0..16u8 {
        b.send(0, 0, 9, path, 0, u16::from(path), 64);
    }
    b.run(10_000);
    //= docs/spec/switch.md#2-forwarding
    //= type=test
    //# SW-2-3 An egress port whose link is not UP MUST NOT be chosen while the table lists another
    //# port for the destination whose link is UP.
    assert_eq!(b.rx[3].len(), 16);
    assert_eq!(b.sw.counters().ports[0].discard_unroutable[0], 0);
}
