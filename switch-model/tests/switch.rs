//! A switch with a bare link end on every port: forwarding, order, losslessness, arbitration,
//! latency and the frames it cannot forward.

use ethlink_link::TxState;
use ethlink_link::{Config as LinkConfig, Duration, Event, Instant, Link, Provenance, Release};
use ethlink_protocol::{
    Capabilities, DataRepr, FrameRepr, GpuId, LinkFrame, MacAddr, MemTarget, PathId, Role, Space,
    TxnRepr, Txns, Vc, fcs,
};
use ethlink_switch::{
    Config, Mode, ROUTE_PORTS_MAX, RouteError, Routes, Switch, path_hash, select,
};

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
    /// Flip a bit in every n-th DATA frame a peer sends to the switch (0: never).
    corrupt_every: u64,
    data_sent_by_peers: u64,
    /// Frames the switch sent with a stomped FCS.
    stomped_by_switch: u64,
    /// The peers hand their DATA frames out by reference and the switch takes them so
    /// (`Switch::handle_frame_by_ref`), as the fabric's wire does.
    by_ref: bool,
    /// With `by_ref`, references to the frames kept here, as a slow reader would: the switch
    /// never finds itself their last holder.
    kept: Option<Vec<ethlink_link::SharedFrame>>,
    /// Peers vouch for the data of the writes with even tags they send ([`Bench::send`]) as
    /// named `[tag, length]`.
    vouch: bool,
    /// When set, the switch hands its DATA frames out by reference and each one's port and
    /// provenance is kept here, in the order sent.
    egress: Option<Vec<(usize, Option<Provenance>)>>,
}

fn gpu(v: u16) -> GpuId {
    GpuId::new(v).unwrap()
}

/// The data of a payload's one write: where it begins in the payload, and the bytes.
fn write_data(payload: &[u8]) -> (u32, Vec<u8>) {
    let repr = DataRepr::parse(payload).unwrap();
    match repr.txns.iter().next().unwrap().unwrap() {
        TxnRepr::RdmaWrite { data, .. } => (
            ethlink_link::payload_offset(payload, data).unwrap() as u32,
            data.to_vec(),
        ),
        other => panic!("not a write: {other:?}"),
    }
}

fn data_at(payload: &[u8]) -> u32 {
    write_data(payload).0
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
            corrupt_every: 0,
            data_sent_by_peers: 0,
            stomped_by_switch: 0,
            by_ref: false,
            kept: None,
            vouch: false,
            egress: None,
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
                loop {
                    let (t, shared) = if self.by_ref {
                        match self.peers[p].poll_transmit_shared(now, &mut self.buf) {
                            Ok(Some(x)) => x,
                            _ => break,
                        }
                    } else {
                        match self.peers[p].poll_transmit(now, &mut self.buf) {
                            Ok(Some(t)) => (t, None),
                            _ => break,
                        }
                    };
                    // First transmissions only, so that every replay gets through.
                    let mut damage = false;
                    if t.data.is_some_and(|(_, _, replay)| !replay) {
                        self.data_sent_by_peers += 1;
                        damage = self.corrupt_every > 0
                            && self.data_sent_by_peers.is_multiple_of(self.corrupt_every);
                    }
                    match shared {
                        // A damaged frame is the wire's own copy.
                        Some(f) if !damage => {
                            if let Some(k) = self.kept.as_mut() {
                                k.push(f.clone());
                            }
                            self.sw.handle_frame_by_ref(now, p, f, fcs::FcsStatus::Good);
                        }
                        Some(f) => {
                            let mut copy = f.as_bytes().to_vec();
                            copy[40] ^= 0x10;
                            self.sw.handle_frame(now, p, &copy);
                        }
                        None => {
                            if damage {
                                self.buf[40] ^= 0x10;
                            }
                            self.sw.handle_frame(now, p, &self.buf[..t.len]);
                        }
                    }
                }
            }
            self.ports_ready.clear();
            self.sw.take_ready_ports(&mut self.ports_ready);
            for p in 0..self.peers.len() {
                loop {
                    let frame = if let Some(egress) = self.egress.as_mut() {
                        match self.sw.poll_transmit_shared(now, p, &mut self.buf) {
                            Ok(Some((_, Some(f)))) => {
                                egress.push((p, f.provenance()));
                                f.as_bytes().to_vec()
                            }
                            Ok(Some((t, None))) => self.buf[..t.len].to_vec(),
                            _ => break,
                        }
                    } else {
                        match self.sw.poll_transmit(now, p, &mut self.buf) {
                            Ok(Some(t)) => self.buf[..t.len].to_vec(),
                            _ => break,
                        }
                    };
                    if fcs::is_stomped(&frame) {
                        self.stomped_by_switch += 1;
                    }
                    self.peers[p].handle_frame(now, &frame);
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
        let mut out = self.peers[p].outgoing(&buf);
        if self.vouch && tag.is_multiple_of(2) {
            assert!(out.vouch(Provenance {
                at: data_at(&buf),
                len: len as u32,
                name: [u64::from(tag), len as u64],
            }));
        }
        self.peers[p]
            .submit_outgoing(Vc::new(vc).unwrap(), out)
            .map_err(|(e, _)| e)
            .expect("peer queue has room");
    }

    /// Tags of the writes peer `p` received, in order.
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
    // 32 KiB per VC: the tests fill the peers' and the inputs' buffers with a few dozen frames.
    c.link.rx_credits = [512, 512, 512, 512, 0, 0, 0, 0];
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
    //# WIRE-5-4 A switch MUST forward a DATA frame on its destination GPU id: to one of the egress
    //# ports its forwarding table lists for that destination, and when it lists several, to the one
    //# chosen by a fixed function of the source GPU id, the destination GPU id, the path id and the
    //# VC, so that every frame of one path and VC takes the same egress port (switch.md SW-2-4,
    //# whose §2.1 writes the function out). (1.1: the source GPU id was missing from the inputs.)
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
    //# SW-8-1 A switch MUST keep, for every port and VC, every counter of Table SW-T3 under the
    //# name the table gives.
    //= docs/spec/switch.md#8-counters
    //= type=test
    //# SW-8-2 A switch MUST increment each counter of Table SW-T3 exactly when the table says,
    //# and at no other time.
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
    // Peer 1 has a 4 KiB buffer (and so an MFS of 4 KiB at most, LINK-2-13); the switch's
    // inputs 128 KiB.
    let mut b = Bench::with_peers(c, routes(3), |p, l| {
        if p == 1 {
            LinkConfig {
                mfs: 4096,
                ..l.with_uniform_credits(4, 64)
            }
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
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-5 A switch MUST keep, for every input port and VC, the payload bytes of the received
    //# frames it holds (`held_bytes`) and the highest value that count has reached since reset
    //# (`held_max_bytes`).
    let now_held = b.sw.counters().ports[0].held_bytes[0];
    assert!(now_held > 0 && now_held <= held);
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
    //# SW-6-1 A frame MUST NOT begin to leave its egress port before latency has passed since it
    //# began to arrive (cut-through: since its first bit, which is its last bit's arrival less its
    //# serialisation time at rate) or since it arrived whole (store-and-forward). (1.3: 1.2 said
    //# "handed to its egress port's link", an instant inside the switch; the first bit on the
    //# egress wire is what a port observes, and never comes earlier.)
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
    //# of unknown fate or withdrawn because the port went down, MUST be discarded and counted as
    //# lost to the port (discard_port_down); the endpoints' deadlines end or retry their operations
    //# (TXN-5-4).
    assert!(c.ports[2].discard_port_down[0] > 0);
    assert_eq!(b.sw.queued(), 0);
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-6 A switch MUST count every frame it discards in exactly one of the discard counters
    //# of Table SW-T3.
    let sent_to_2 = c.ports[2].tx_frames[0];
    assert_eq!(c.ports[0].rx_frames[0], 102);
    // Frames for GPU 2 that reached the switch after port 2 went down are unroutable.
    let late = c.ports[0].discard_unroutable[0] - 1;
    assert_eq!(
        b.rx[2].len() as u64 + c.ports[2].discard_port_down[0] + late,
        100,
        "every frame for port 2 delivered or counted once"
    );
    assert!(sent_to_2 <= 100);
    assert_eq!(
        c.discarded(),
        1 + c.ports[0].discard_unroutable[0] + c.ports[2].discard_port_down[0]
    );
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
    // Port 2 comes back: its counters were kept across the link going down and up.
    let before = b.sw.counters().ports[2];
    let now = Instant::from_nanos(b.now);
    // The peer drains what it held before: its link comes UP only then (LINK-2-18).
    b.resume(2);
    b.peers[2].physical_up(now);
    b.sw.port_up(now, 2);
    b.run(20_000);
    //= docs/spec/switch.md#8-counters
    //= type=test
    //# SW-8-4 A switch MUST keep its counters and the values of Table SW-T4 when a port's link
    //# goes down or re-initialises; only a reset of the switch (§9) clears them.
    let after = b.sw.counters().ports[2];
    assert_eq!(after.discard_port_down, before.discard_port_down);
    assert_eq!(after.tx_frames, before.tx_frames);
    b.send(0, 0, 2, 0, 0, 502, 64);
    b.run(5_000);
    assert_eq!(b.tags(2).last(), Some(&502));
    assert_eq!(
        b.sw.counters().ports[2].tx_frames[0],
        before.tx_frames[0] + 1
    );
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

/// Table SW-T2: fixed inputs, their mix and the egress port chosen from the entry
/// [8, 9, 10, 11] with every port UP, and with port 9 down.
const VECTORS: [(u16, u16, u8, u8, u64, u16, u16); 8] = [
    (0, 1, 0x00, 0, 0x09aa_b36c_fda2_d1b3, 11, 11),
    (1, 0, 0x00, 0, 0xc42c_5a1a_a382_0138, 8, 8),
    (5, 9, 0x23, 2, 0xc925_021a_7797_74d2, 10, 10),
    (1023, 0, 0x10, 0, 0x8d97_b7d4_240f_6431, 9, 11),
    (0, 1023, 0x31, 1, 0x20a7_dafc_1959_fb46, 10, 10),
    (0x1234, 0x0567, 0xff, 7, 0x49a5_f12d_ea14_af6a, 10, 10),
    (12, 34, 0x05, 3, 0xd7ac_3726_3e23_d193, 11, 11),
    (100, 200, 0x12, 0, 0x3417_ebb4_facf_f109, 9, 8),
];

#[test]
fn the_choice_among_equal_ports_matches_the_vectors() {
    //= docs/spec/switch.md#21-the-choice-among-equal-ports
    //= type=test
    //# SW-2-4 When an entry of one group lists more than one port, the egress port MUST be the one
    //# the function of this section gives for the frame's source GPU, destination GPU, path id and
    //# VC and the link states of the listed ports. (1.2: "of one group"; an entry of several groups
    //# is SW-2-9. 1.3: a path whose bucket is busy keeps its port, §2.4, SW-2-11 and SW-2-12.)
    let listed = [8u16, 9, 10, 11];
    for (src, dst, path, vc, h, all_up, nine_down) in VECTORS {
        let got = path_hash(gpu(src), gpu(dst), PathId(path), Vc::new(vc).unwrap());
        assert_eq!(got, h, "mix of ({src}, {dst}, {path:#x}, {vc})");
        assert_eq!(select(&listed, h, |_| true), Some(all_up));
        assert_eq!(select(&listed, h, |p| p != 9), Some(nine_down));
        assert_eq!(select(&listed, h, |_| false), None);
    }
    // The same choices through a switch, before and after port 9 goes down.
    let mut r = Routes::new();
    for (_, dst, ..) in VECTORS {
        r.set(gpu(dst), &listed).unwrap();
    }
    let mut b = Bench::new(cfg(12), r);
    for (src, dst, path, vc, _, all_up, _) in VECTORS {
        let vc = Vc::new(vc).unwrap();
        assert_eq!(
            b.sw.route(gpu(src), gpu(dst), PathId(path), vc),
            Some(all_up)
        );
    }
    let now = Instant::from_nanos(b.now);
    b.sw.port_down(now, 9);
    b.peers[9].physical_down(now);
    b.run(1_000);
    for (src, dst, path, vc, _, _, nine_down) in VECTORS {
        let vc = Vc::new(vc).unwrap();
        assert_eq!(
            b.sw.route(gpu(src), gpu(dst), PathId(path), vc),
            Some(nine_down)
        );
    }
    // And on the wire: the frame of the fourth vector, with port 9 down, leaves on port 11.
    b.send(0, 1023, 0, 0x10, 0, 77, 64);
    b.run(5_000);
    assert_eq!(b.tags(11), vec![77]);
}

/// Table SW-T3: the paths of Table SW-T2 over the entry [8 | 9, 10, 11] (group sizes 1 and 3),
/// with every port UP, port 8 down, and ports 8 and 10 down.
const GROUPED: [(u16, u16, u8, u8, u16, u16, u16); 8] = [
    (0, 1, 0x00, 0, 8, 9, 9),
    (1, 0, 0x00, 0, 8, 10, 9),
    (5, 9, 0x23, 2, 8, 10, 9),
    (1023, 0, 0x10, 0, 8, 11, 11),
    (0, 1023, 0x31, 1, 8, 9, 9),
    (0x1234, 0x0567, 0xff, 7, 8, 9, 9),
    (12, 34, 0x05, 3, 8, 9, 9),
    (100, 200, 0x12, 0, 8, 9, 9),
];

#[test]
fn an_entry_in_groups_takes_its_first_group_with_a_port_up() {
    let listed = [8u16, 9, 10, 11];
    let mut r = Routes::new();
    for (_, dst, ..) in GROUPED {
        r.set_groups(gpu(dst), &listed, &[1, 3]).unwrap();
        assert_eq!(r.group_sizes(gpu(dst)), vec![1, 3]);
    }
    //= docs/spec/switch.md#23-groups-of-preference
    //= type=test
    //# SW-2-9 When an entry lists its ports in more than one group, the egress port MUST be
    //# the one the function of §2.1 gives over the first group, in table order, that holds a
    //# port whose link is UP, as if the entry were that group alone.
    for (src, dst, path, vc, all_up, eight_down, eight_ten_down) in GROUPED {
        let h = path_hash(gpu(src), gpu(dst), PathId(path), Vc::new(vc).unwrap());
        assert_eq!(r.choose(gpu(dst), h, |_| true), Some(all_up));
        assert_eq!(r.choose(gpu(dst), h, |p| p != 8), Some(eight_down));
        assert_eq!(select(&listed[1..], h, |p| p != 8), Some(eight_down));
        assert_eq!(
            r.choose(gpu(dst), h, |p| p != 8 && p != 10),
            Some(eight_ten_down)
        );
        assert_eq!(r.choose(gpu(dst), h, |_| false), None);
        // A port of a later group being down changes nothing while the first has one UP.
        assert_eq!(r.choose(gpu(dst), h, |p| p != 9 && p != 11), Some(8));
    }
    // Through a switch, and on the wire: all UP, then port 8 down, then back.
    let mut b = Bench::new(cfg(12), r);
    for (src, dst, path, vc, all_up, ..) in GROUPED {
        let vc = Vc::new(vc).unwrap();
        let got = b.sw.route(gpu(src), gpu(dst), PathId(path), vc);
        assert_eq!(got, Some(all_up));
    }
    b.send(0, 1023, 0, 0x10, 0, 70, 64);
    b.run(5_000);
    assert_eq!(b.tags(8), vec![70]);
    let now = Instant::from_nanos(b.now);
    b.sw.port_down(now, 8);
    b.peers[8].physical_down(now);
    b.run(1_000);
    for (src, dst, path, vc, _, eight_down, _) in GROUPED {
        let vc = Vc::new(vc).unwrap();
        let got = b.sw.route(gpu(src), gpu(dst), PathId(path), vc);
        assert_eq!(got, Some(eight_down));
    }
    // The fourth path, with port 8 down, leaves on port 11.
    b.send(0, 1023, 0, 0x10, 0, 71, 64);
    b.run(5_000);
    assert_eq!(b.tags(11), vec![71]);
    assert_eq!(b.tags(8), vec![70]);
}

#[test]
fn group_sizes_are_checked() {
    //= docs/spec/switch.md#23-groups-of-preference
    //= type=test
    //# SW-2-10 A switch MUST refuse an entry whose group sizes are not each at least 1 or do
    //# not add up to the number of ports it lists, and leave its table unchanged.
    let mut s = Switch::new(cfg(4), routes(4)).unwrap();
    s.set_route_groups(gpu(1), &[1, 2, 3], &[1, 2]).unwrap();
    assert_eq!(s.routes().group_sizes(gpu(1)), vec![1, 2]);
    for bad in [&[1u16, 1][..], &[1, 3], &[0, 3], &[3, 0], &[4]] {
        assert_eq!(
            s.set_route_groups(gpu(1), &[0, 2, 3], bad),
            Err(RouteError::BadGroups {
                ports: 3,
                sum: bad.iter().map(|&g| usize::from(g)).sum()
            }),
            "{bad:?}"
        );
        assert_eq!(s.routes().ports(gpu(1)), &[1, 2, 3]);
        assert_eq!(s.routes().group_sizes(gpu(1)), vec![1, 2]);
    }
    // One size, or none, is one group; a port the switch lacks is refused before the sizes.
    s.set_route_groups(gpu(1), &[0, 2], &[2]).unwrap();
    assert_eq!(s.routes().group_sizes(gpu(1)), vec![2]);
    s.set_route(gpu(1), &[3, 2]).unwrap();
    assert_eq!(s.routes().group_sizes(gpu(1)), vec![2]);
    assert_eq!(
        s.set_route_groups(gpu(1), &[4, 2], &[1, 1]),
        Err(RouteError::NoSuchPort { port: 4, ports: 4 })
    );
    // An empty entry has no group.
    s.set_route(gpu(1), &[]).unwrap();
    assert_eq!(s.routes().group_sizes(gpu(1)), Vec::<u16>::new());
}

#[test]
fn a_port_going_down_moves_only_the_paths_it_carried() {
    let listed: Vec<u16> = (0..8).collect();
    let mut moved = 0;
    for k in 0..4096u32 {
        let h = path_hash(
            gpu((k % 1000) as u16),
            gpu(7),
            PathId((k / 1000) as u8),
            Vc::new((k % 4) as u8).unwrap(),
        );
        let before = select(&listed, h, |_| true).unwrap();
        let after = select(&listed, h, |p| p != 3).unwrap();
        if before == 3 {
            assert_ne!(after, 3);
            moved += 1;
        } else {
            assert_eq!(after, before, "a path on an UP port moved");
        }
    }
    // About one eighth of the paths were on port 3.
    assert!((400..650).contains(&moved), "{moved}");
}

#[test]
fn forwarding_table_entries_are_bounded_and_checked() {
    //= docs/spec/switch.md#22-the-forwarding-table
    //= type=test
    //# SW-2-5 A switch MUST accept, for every destination GPU id 0..=0xFFFE, an entry of 0 to 64
    //# distinct egress ports.
    //= docs/spec/switch.md#22-the-forwarding-table
    //= type=test
    //# SW-2-6 A switch MUST refuse an entry that lists more than 64 ports, a port twice or a
    //# port it does not have, and leave its table unchanged.
    let mut r = Routes::new();
    let many: Vec<u16> = (0..ROUTE_PORTS_MAX as u16).collect();
    r.set(gpu(0xFFFE), &many).unwrap();
    r.set(gpu(0), &[3]).unwrap();
    let too_many: Vec<u16> = (0..=ROUTE_PORTS_MAX as u16).collect();
    assert_eq!(
        r.set(gpu(0), &too_many),
        Err(RouteError::TooManyPorts { ports: 65 })
    );
    assert_eq!(
        r.set(gpu(0), &[1, 2, 1]),
        Err(RouteError::Duplicate { port: 1 })
    );
    assert_eq!(r.ports(gpu(0)), &[3]);
    assert_eq!(r.ports(gpu(0xFFFE)).len(), 64);
    let c = Config {
        ports: 64,
        ..Config::default()
    };
    Switch::new(c.clone(), r.clone()).unwrap();
    let e = Switch::new(Config { ports: 63, ..c }, r)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.field, "routes");
    let mut s = Switch::new(cfg(4), routes(4)).unwrap();
    assert_eq!(
        s.set_route(gpu(1), &[4]),
        Err(RouteError::NoSuchPort { port: 4, ports: 4 })
    );
    assert_eq!(s.routes().ports(gpu(1)), &[1]);
}

#[test]
fn a_table_write_applies_to_frames_received_after_it() {
    let mut c = cfg(4);
    // The path pins' guard is then 30 us + 25 us + 1 us (§2.4).
    c.max_residence = Duration::from_micros(30);
    let mut b = Bench::new(c, routes(4));
    // Egress 2 stalls; frames for GPU 2 queue for it.
    b.hold[2] = true;
    for k in 0..60u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    b.run(10_000);
    let before = b.rx[2].len();
    assert!(before < 60);
    //= docs/spec/switch.md#22-the-forwarding-table
    //= type=test
    //# SW-2-7 A switch MUST let its forwarding table be written while it runs, one entry at a
    //# time, each write replacing the whole entry at once.
    b.sw.set_route(gpu(2), &[3]).unwrap();
    assert_eq!(b.sw.routes().ports(gpu(2)), &[3]);
    // The path is busy: its frames keep to port 2 behind those already waiting (§2.4).
    for k in 100..110u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    b.run(2_000);
    //= docs/spec/switch.md#22-the-forwarding-table
    //= type=test
    //# SW-2-8 A frame MUST leave by the egress port chosen when it was received, even if the
    //# table changes before it leaves.
    assert!(b.tags(3).is_empty());
    b.resume(2);
    b.run(50_000);
    let want: Vec<u16> = (0..60).chain(100..110).collect();
    assert_eq!(b.tags(2), want);
    // Idle for longer than the guard, the path takes the new entry.
    b.run(50_000);
    for k in 200..210u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    b.run(20_000);
    assert_eq!(b.tags(3), (200..210).collect::<Vec<_>>());
    assert_eq!(b.sw.counters().discarded(), 0);
}

#[test]
fn frames_older_than_max_residence_are_discarded_counted_and_their_credits_returned() {
    let mut c = cfg(3);
    c.max_residence = Duration::from_micros(5);
    c.egress_depth = 4;
    let mut b = Bench::new(c, routes(3));
    // Peer 2 keeps the buffers of what it receives: egress 2 stalls once peer 2's buffer is full
    // (32 KiB, some 30 frames), with frames in the switch's queues and in its egress link.
    b.hold[2] = true;
    let t0 = b.now;
    for k in 0..100u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    // Every frame arrived at or after t0: at t0 + 5 us none has been in the switch longer.
    b.run(5_000);
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-8 A switch MUST NOT discard as aged a frame whose residence is at most
    //# `max_residence`.
    assert_eq!(b.sw.counters().ports[0].discard_aged, [0; 8]);
    // Some wait in the switch's queues, some in the egress link for want of credit.
    let in_link = b.sw.link(2).unwrap().queued(Vc::new(0).unwrap()).0;
    assert_eq!(in_link, 4);
    let stalled = b.sw.queued() + in_link;
    assert!(stalled > 25, "{stalled} frames wait in the switch");
    // The input buffer holds some 32 of them; the rest enter as aged frames free it, and age
    // in turn.
    b.run(40_000);
    let c = &b.sw.counters().ports[0];
    let delivered = b.rx[2].len() as u64;
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-7 A frame whose residence exceeds `max_residence` MUST be discarded and counted in
    //# `discard_aged` of the port and VC it was received on
    assert_eq!(c.discard_aged[0] + delivered, 100);
    assert!(c.discard_aged[0] >= stalled as u64);
    assert_eq!(b.sw.counters().discarded(), c.discard_aged[0]);
    // Nothing is left: not in the queues, not in the egress link; the input's credits are back.
    assert_eq!(b.sw.queued(), 0);
    assert_eq!(b.sw.link(2).unwrap().queued(Vc::new(0).unwrap()), (0, 0));
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-4 Every discarded frame's credits MUST be returned at once.
    assert_eq!(c.held_bytes[0], 0);
    assert_eq!(b.sw.link(0).unwrap().rx_occupied(Vc::new(0).unwrap()), 0);
    let _ = t0;
    // Aged frames never leave later: peer 2 gets nothing more once it drains.
    b.resume(2);
    b.run(20_000);
    assert_eq!(b.rx[2].len() as u64, delivered);
    assert_eq!(b.tags(2), (0..delivered as u16).collect::<Vec<_>>());
    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //= type=test
    //# SW-4-6 A switch MUST NOT begin to send a frame on its egress port when the frame's
    //# residence exceeds `max_residence`.
    assert!(b.sw.counters().residence_max_ns() <= 5_000);
    // The switch works on: new frames go through.
    b.send(0, 0, 2, 0, 0, 500, 1000);
    b.run(5_000);
    assert_eq!(b.tags(2).last(), Some(&500));
    // Under a load that never waits long, nothing ages.
    let mut b = Bench::new(cfg(3), routes(3));
    for k in 0..300u16 {
        b.send(0, 0, 2, 0, 0, k, 2000);
        b.send(1, 1, 2, 0, 1, 1000 + k, 2000);
    }
    b.run(100_000);
    assert_eq!(b.rx[2].len(), 600);
    assert_eq!(b.sw.counters().discarded(), 0);
}

#[test]
fn max_residence_is_checked() {
    for (us, ok) in [
        (0u64, false),
        (1, true),
        (40, true),
        (1_000_000, true),
        (1_000_001, false),
    ] {
        let c = Config {
            max_residence: Duration::from_micros(us),
            ..Config::default()
        };
        assert_eq!(c.validate().is_ok(), ok, "{us} us");
    }
    let c = Config {
        max_residence: Duration::from_micros(2),
        latency: Duration::from_micros(2),
        ..Config::default()
    };
    assert_eq!(c.validate().unwrap_err().field, "max_residence");
}

#[test]
fn a_rate_out_of_range_is_named_as_given() {
    for (rate, shown) in [
        (f64::NAN, "rate_gbps = NaN"),
        (f64::INFINITY, "rate_gbps = inf"),
        (-400.0, "rate_gbps = -400"),
        (0.0, "rate_gbps = 0"),
    ] {
        let c = Config {
            rate_gbps: rate,
            ..Config::default()
        };
        let e = c.validate().unwrap_err().to_string();
        assert_eq!(e, format!("{shown}: must be a positive number"));
    }
}

#[test]
fn reset_leaves_every_port_off_every_counter_zero_and_names_the_ports() {
    let c = Config {
        id: 0x0102,
        ports: 300,
        ..Config::default()
    };
    let mut sw = Switch::new(c, routes(4)).unwrap();
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-1 After a reset a switch MUST hold no frame.
    assert_eq!(sw.queued(), 0);
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-2 After a reset every counter of Table SW-T3 and every value of Table SW-T4 MUST read
    //# zero.
    assert!(sw.counters().ports.iter().all(|p| *p == Default::default()));
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-3 After a reset a switch MUST keep every port's link end OFF until that port's
    //# physical link is up.
    let mut buf = vec![0u8; 9216];
    for p in [0usize, 299] {
        assert_eq!(sw.link(p).unwrap().tx_state(), TxState::Off);
        assert_eq!(sw.poll_transmit(Instant::ZERO, p, &mut buf), Ok(None));
    }
    sw.port_up(Instant::ZERO, 299);
    let t = sw
        .poll_transmit(Instant::ZERO, 299, &mut buf)
        .unwrap()
        .unwrap();
    let f = FrameRepr::parse_bytes(&buf[..t.len], 9216).unwrap();
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-4 Port *p* of the switch numbered *s* MUST use the MAC address `02:01:s1:s0:p1:p0`
    assert_eq!(f.eth.src, MacAddr([0x02, 0x01, 0x01, 0x02, 0x01, 0x2B]));
    let LinkFrame::Init(init) = f.link else {
        panic!("{f:?}")
    };
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-5 Every port of a switch MUST announce role Switch (2) in its INIT and INIT_ECHO
    //# frames.
    assert_eq!(init.role, Role::Switch);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-7 A cut-through switch MUST announce CUT_THROUGH in the INIT and INIT_ECHO frames
    //# of every port.
    assert_eq!(init.caps, Capabilities::CUT_THROUGH);
    // The same switch storing every frame whole announces nothing.
    let mut sf = Switch::new(
        Config {
            ports: 2,
            mode: Mode::StoreAndForward,
            ..Config::default()
        },
        routes(2),
    )
    .unwrap();
    sf.port_up(Instant::ZERO, 1);
    let t = sf
        .poll_transmit(Instant::ZERO, 1, &mut buf)
        .unwrap()
        .unwrap();
    let LinkFrame::Init(init) = FrameRepr::parse_bytes(&buf[..t.len], 9216).unwrap().link else {
        panic!("not an INIT")
    };
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-5 A switch that checks the FCS of every frame before it forwards it MUST NOT
    //# announce CUT_THROUGH.
    assert_eq!(init.caps, Capabilities::NONE);
    // The same switch with tagging ports announces TAGGED on every port.
    let mut tagged = Config {
        id: 0x0102,
        ports: 4,
        ..Config::default()
    };
    tagged.link.vlan = Some(ethlink_protocol::VlanTag {
        pcp: 0,
        dei: false,
        vid: 12,
    });
    let mut sw = Switch::new(tagged, routes(4)).unwrap();
    sw.port_up(Instant::ZERO, 3);
    let t = sw
        .poll_transmit(Instant::ZERO, 3, &mut buf)
        .unwrap()
        .unwrap();
    let f = FrameRepr::parse_bytes(&buf[..t.len], 9216).unwrap();
    assert!(f.eth.vlan.is_some());
    let LinkFrame::Init(init) = f.link else {
        panic!("{f:?}")
    };
    //= docs/spec/switch.md#9-reset-and-identity
    //= type=test
    //# SW-9-6 Every port of a switch that sends 802.1Q-tagged frames MUST announce TAGGED
    assert_eq!(
        (init.role, init.caps),
        (
            Role::Switch,
            Capabilities::TAGGED | Capabilities::CUT_THROUGH
        )
    );
}

#[test]
fn a_damaged_frame_is_forwarded_once_after_its_replay_and_never_stomped() {
    let mut b = Bench::new(cfg(3), routes(3));
    b.corrupt_every = 7;
    for k in 0..200u16 {
        b.send(0, 0, 2, 0, 0, k, 700);
    }
    b.run(100_000);
    assert!(b.sw.link(0).unwrap().counters().rx_fcs_errors > 10);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-6 A switch that does not announce CUT_THROUGH MUST check a frame's FCS before it
    //# begins to send it.
    assert_eq!(b.tags(2), (0..200).collect::<Vec<_>>());
    assert_eq!(b.stomped_by_switch, 0);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-2 A switch that has begun to send a frame whose FCS then turns out bad (damaged, or
    //# stomped by the hop before) MUST end it with a stomped FCS (WIRE-2.5-4).
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-3 A switch MUST NOT send a frame received with a bad FCS other than ended by a
    //# stomped FCS.
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-4 A switch MUST NOT keep a frame received with a bad FCS to send it again; the copy the
    //# input link accepts later (replayed by the hop before) is forwarded as any other frame.
    assert_eq!(b.sw.counters().ports[2].tx_frames[0], 200);
}

#[test]
fn frames_the_egress_link_cannot_carry_are_discarded_and_counted() {
    // Peer 2 agrees 2 VCs and an MFS of 1024 B with the switch.
    let mut b = Bench::with_peers(cfg(3), routes(3), |p, l| {
        if p == 2 {
            LinkConfig {
                mfs: 1024,
                ..l.with_uniform_credits(2, 512)
            }
        } else {
            l
        }
    });
    b.send(0, 0, 2, 0, 0, 1, 2000);
    b.send(0, 0, 2, 0, 3, 2, 64);
    b.send(0, 0, 2, 0, 1, 3, 64);
    b.run(5_000);
    let c = b.sw.counters();
    //= docs/spec/switch.md#7-frames-a-switch-cannot-forward
    //= type=test
    //# SW-7-5 A frame whose egress port's link cannot carry it (longer than the MFS agreed on that
    //# link, or on a VC that link did not agree) MUST be discarded and counted in
    //# `discard_egress_refused` of the egress port and VC.
    assert_eq!(c.ports[2].discard_egress_refused[0], 1);
    assert_eq!(c.ports[2].discard_egress_refused[3], 1);
    assert_eq!(c.discarded(), 2);
    assert_eq!(b.tags(2), vec![3]);
    assert_eq!(c.ports[0].held_bytes, [0; 8]);
}

proptest::proptest! {
    /// The choice is always a listed port whose link is UP when there is one, the first choice
    /// whenever its link is UP, and nothing when none is UP.
    #[test]
    fn the_choice_is_an_up_listed_port(
        listed in proptest::collection::btree_set(0u16..1024, 1..=ROUTE_PORTS_MAX),
        down in proptest::collection::btree_set(0u16..1024, 0..64),
        key in proptest::prelude::any::<(u16, u16, u8, u8)>(),
    ) {
        let listed: Vec<u16> = listed.into_iter().collect();
        let (src, dst, path, vc) = key;
        let h = path_hash(
            gpu(src % 0xFFFF),
            gpu(dst % 0xFFFF),
            PathId(path),
            Vc::new(vc % 8).unwrap(),
        );
        let up = |p: u16| !down.contains(&p);
        let got = select(&listed, h, up);
        let first = listed[(h % listed.len() as u64) as usize];
        match got {
            Some(p) => {
                proptest::prop_assert!(listed.contains(&p) && up(p));
                if up(first) {
                    proptest::prop_assert_eq!(p, first);
                }
            }
            None => proptest::prop_assert!(listed.iter().all(|&p| !up(p))),
        }
    }
}

#[test]
fn young_frames_taken_back_from_the_egress_link_with_aged_ones_keep_their_order() {
    let mut c = cfg(3);
    c.max_residence = Duration::from_micros(5);
    c.egress_depth = 4;
    let mut b = Bench::new(c, routes(3));
    b.hold[2] = true;
    // VC 0 stalls first; 3 us later VC 1 stalls too, each with frames in the egress link.
    for k in 0..60u16 {
        b.send(0, 0, 2, 0, 0, k, 1000);
    }
    b.run(3_000);
    for k in 0..60u16 {
        b.send(1, 1, 2, 0, 1, 1000 + k, 1000);
    }
    b.run(2_500);
    let vc1 = Vc::new(1).unwrap();
    assert_eq!(b.sw.link(2).unwrap().queued(vc1).0, 4);
    // VC 0's frames in the link have aged; VC 1's were taken back with them and handed back.
    assert!(b.sw.counters().ports[0].discard_aged[0] > 0);
    assert_eq!(b.sw.counters().ports[1].discard_aged[1], 0);
    assert_eq!(b.sw.link(2).unwrap().queued(Vc::new(0).unwrap()).0, 0);
    assert_eq!(b.sw.link(2).unwrap().counters().frames_withdrawn, 8);
    b.resume(2);
    b.run(30_000);
    let mut got1 = Vec::new();
    let mut got0 = Vec::new();
    for (_, vc, payload) in &b.rx[2] {
        let tag = DataRepr::parse(payload)
            .unwrap()
            .txns
            .iter()
            .next()
            .unwrap()
            .unwrap()
            .tag();
        if vc.value() == 1 {
            got1.push(tag)
        } else {
            got0.push(tag)
        }
    }
    let aged1 = b.sw.counters().ports[1].discard_aged[1];
    assert_eq!(got1.len() as u64 + aged1, 60);
    assert_eq!(got1, (1000..1000 + got1.len() as u16).collect::<Vec<_>>());
    assert_eq!(got0, (0..got0.len() as u16).collect::<Vec<_>>());
    assert!(b.sw.counters().residence_max_ns() <= 5_000);
}

/// A switch that takes frames by reference (`Switch::handle_frame_by_ref`) and one that copies
/// them send the same bytes at the same times, with the same counters, through queueing,
/// held credits and damaged frames: whether it takes each frame's buffer over at the egress
/// (its sender has let it go) or copies the payload there (someone still holds it).
#[test]
fn frames_taken_by_reference_leave_as_copied_ones_do() {
    let run = |by_ref: bool, keep: bool| {
        let mut b = Bench::new(cfg(4), routes(4));
        b.by_ref = by_ref;
        b.kept = keep.then(Vec::new);
        b.corrupt_every = 37;
        // Peer 3 holds its credits for a while: frames wait in the switch for it.
        b.hold[3] = true;
        for k in 0..300u16 {
            b.send(0, 0, 2, 0x10, 0, k, 64 + usize::from(k % 7) * 300);
            b.send(1, 1, 3, 0x11, 0, 1000 + k, 2000);
            b.send(2, 2, 3, 0x12, 1, 2000 + k, 100);
        }
        b.run(30_000);
        b.resume(3);
        b.run(200_000);
        let c = b.sw.counters();
        let damaged: u64 = (0..4)
            .map(|p| b.sw.link(p).unwrap().counters().rx_fcs_errors)
            .sum();
        (b.rx, format!("{:?}", c.ports), damaged)
    };
    let (copied, copied_counters, damaged) = run(false, false);
    let (by_ref, by_ref_counters, _) = run(true, false);
    // Every buffer still shared at the egress: each payload copied there instead.
    let (kept, kept_counters, _) = run(true, true);
    assert_eq!(kept, copied);
    assert_eq!(kept_counters, copied_counters);
    assert_eq!(copied[2].len(), 300);
    assert_eq!(copied[3].len(), 600);
    assert_eq!(damaged, 900 / 37, "damaged frames replayed");
    assert_eq!(by_ref, copied);
    assert_eq!(by_ref_counters, copied_counters);
}

/// What a sender vouched for of a payload leaves the switch with it, whether the switch took
/// the frame's buffer over at the egress or copied the payload there (its sender still held
/// it), and through frames damaged on the way in and replayed; a payload nobody vouched for
/// leaves with none.
#[test]
fn provenance_leaves_the_switch_with_its_payload() {
    for keep in [false, true] {
        let mut b = Bench::new(cfg(4), routes(4));
        b.by_ref = true;
        b.kept = keep.then(Vec::new);
        b.vouch = true;
        b.egress = Some(Vec::new());
        b.corrupt_every = 5;
        for k in 0..60u16 {
            b.send(0, 0, 2, 0x10, 0, k, 1000 + usize::from(k) * 8);
        }
        b.run(100_000);
        let egress: Vec<_> = b
            .egress
            .take()
            .unwrap()
            .into_iter()
            .filter(|&(p, _)| p == 2)
            .map(|(_, v)| v)
            .collect();
        assert_eq!(b.tags(2), (0..60).collect::<Vec<u16>>(), "keep {keep}");
        assert_eq!(egress.len(), 60, "keep {keep}");
        for ((_, _, payload), v) in b.rx[2].iter().zip(egress) {
            let (at, data) = write_data(payload);
            let tag = data[0];
            if tag.is_multiple_of(2) {
                let v = v.expect("vouched for");
                assert_eq!((v.at, v.len as usize), (at, data.len()));
                assert_eq!(v.name[1], data.len() as u64);
                assert_eq!(v.name[0] as u8, tag);
            } else {
                assert_eq!(v, None, "tag {tag}");
            }
        }
    }
}

/// 2^63 - 1 ns, the horizon of link.md §1.
const HORIZON_NS: u64 = (1 << 63) - 1;

/// Every frame the switch has for its ports at `now`, delivered to the peers and their answers
/// back, until both sides are quiet; returns the frames the switch sent and the payloads the
/// peers were delivered. Panics beyond a cap, so that a timer that fell due at every call fails
/// the test instead of hanging it.
fn exchange_at(sw: &mut Switch, peers: &mut [Link], now: Instant) -> (usize, usize) {
    let mut buf = vec![0u8; 9216];
    let (mut sent, mut delivered) = (0, 0);
    if sw.poll_timeout().is_some_and(|t| t <= now) {
        sw.handle_timeout(now);
    }
    for p in peers.iter_mut() {
        if p.poll_timeout().is_some_and(|t| t <= now) {
            p.handle_timeout(now);
        }
    }
    for _ in 0..100 {
        let mut moved = false;
        for (i, peer) in peers.iter_mut().enumerate() {
            while let Ok(Some(t)) = sw.poll_transmit(now, i, &mut buf) {
                peer.handle_frame(now, &buf[..t.len]);
                sent += 1;
                moved = true;
                assert!(sent < 1000, "the switch never ran dry at {now}");
            }
            while let Ok(Some(t)) = peer.poll_transmit(now, &mut buf) {
                sw.handle_frame(now, i, &buf[..t.len]);
                moved = true;
            }
            while let Some(ev) = peer.poll_event() {
                if let Event::Delivered { release, .. } = ev {
                    delivered += 1;
                    let _ = peer.release(release);
                }
            }
        }
        if !moved {
            return (sent, delivered);
        }
    }
    panic!("the switch and its peers never went quiet at {now}");
}

//= type=test
//# SW-1-1 A switch MUST keep link.md LINK-1-2 and LINK-1-3 for its own timers and deadlines
//# (latency, residence, aging) as well as its ports' links
#[test]
fn at_the_end_of_time_a_switch_sends_each_frame_once_and_waits() {
    // Ports in INIT at the horizon and after it: one INIT each, then nothing.
    for t in [HORIZON_NS, u64::MAX] {
        let mut sw = Switch::new(cfg(2), routes(2)).unwrap();
        sw.port_up(Instant::from_nanos(t), 0);
        sw.port_up(Instant::from_nanos(t), 1);
        let mut peers: Vec<Link> = Vec::new();
        assert_eq!(
            exchange_at(&mut sw, &mut peers, Instant::from_nanos(t)),
            (0, 0)
        );
        let mut buf = vec![0u8; 9216];
        for round in 0..3 {
            let now = Instant::from_nanos(t);
            sw.handle_timeout(now);
            let mut inits = 0;
            for p in 0..2 {
                while let Ok(Some(_)) = sw.poll_transmit(now, p, &mut buf) {
                    inits += 1;
                    assert!(inits < 1000, "at {t}: poll_transmit never ran dry");
                }
            }
            assert_eq!(
                inits,
                if round == 0 { 2 } else { 0 },
                "at {t}, round {round}"
            );
        }
        let next = sw.poll_timeout().expect("a deadline");
        assert!(next.as_nanos() > HORIZON_NS, "at {t}: {next}");
    }
    // Ports UP 20 us before the horizon, with a frame forwarded at it: each periodic frame once
    // at the horizon, then nothing, however often the switch is called.
    let t0 = HORIZON_NS - 20_000;
    let mut sw = Switch::new(cfg(2), routes(2)).unwrap();
    let mut peers: Vec<Link> = (0..2u8)
        .map(|p| {
            let mut l = cfg(2).link;
            l.mac.0 = [0x02, 0x09, 0, 0, 0, p];
            l.nonce_seed = 1000 + u64::from(p);
            let mut link = Link::new(l).unwrap();
            link.physical_up(Instant::from_nanos(t0));
            sw.port_up(Instant::from_nanos(t0), usize::from(p));
            link
        })
        .collect();
    exchange_at(&mut sw, &mut peers, Instant::from_nanos(t0));
    assert!(peers.iter().all(|l| l.is_up()));
    let txn = [TxnRepr::Fence { tag: 1 }];
    let repr = DataRepr {
        dst: gpu(1),
        src: gpu(0),
        path: PathId(0),
        txns: Txns::Slice(&txn),
    };
    let mut payload = vec![0u8; repr.buffer_len()];
    repr.emit(&mut payload).unwrap();
    // Sent 1 us before the horizon, forwarded once the switch's latency has passed.
    peers[0].submit(Vc::new(0).unwrap(), &payload).unwrap();
    exchange_at(&mut sw, &mut peers, Instant::from_nanos(HORIZON_NS - 1_000));
    assert_eq!(sw.queued(), 1, "the frame waits out the switch's latency");
    let (sent, delivered) = exchange_at(&mut sw, &mut peers, Instant::from_nanos(HORIZON_NS));
    assert_eq!(delivered, 1, "forwarded at the horizon");
    assert!(sent <= 8, "{sent} frames at the horizon");
    for t in [HORIZON_NS, u64::MAX, u64::MAX] {
        assert_eq!(
            exchange_at(&mut sw, &mut peers, Instant::from_nanos(t)),
            (0, 0),
            "at {t}"
        );
    }
    assert_eq!(sw.queued(), 0);
    assert!(sw.poll_timeout().is_some_and(|d| d.as_nanos() > HORIZON_NS));
}
