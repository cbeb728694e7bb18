//! A switch in cut-through mode forwards a frame on its header, before its end has arrived, and
//! ends its copy with a stomped FCS when the end turns out bad (switch.md §6).
//!
//! Frames from the peers reach the switch in two steps, as over a wire of 400 Gb/s: the header
//! (`Switch::handle_header`) when the first bytes have arrived, and the whole frame
//! (`Switch::handle_frame`) when the last one has. Everything else crosses without delay.

use core::time::Duration;

use ethlink_link::{Event, Instant, Link};
use ethlink_protocol::fcs::{self, FcsStatus};
use ethlink_protocol::{DataRepr, FrameKind, GpuId, MemTarget, PathId, Space, TxnRepr, Txns, Vc};
use ethlink_switch::{Config, FrameEnd, Mode, Routes, Switch};

/// Nanoseconds a frame of `len` bytes takes at 400 Gb/s, preamble and gap included.
fn ser_ns(len: usize) -> u64 {
    ((len + 20) as u64 * 8).div_ceil(400)
}

struct Rig {
    sw: Switch,
    peers: Vec<Link>,
    buf: Vec<u8>,
    /// Per peer: the payloads it delivered.
    rx: Vec<Vec<Vec<u8>>>,
    /// Per peer: DATA frames from the switch, with the time their first byte left and whether
    /// they ended stomped.
    data: Vec<Vec<(u64, bool)>>,
}

fn gpu(v: u16) -> GpuId {
    GpuId::new(v).unwrap()
}

fn config(mode: Mode) -> Config {
    let mut c = Config {
        ports: 3,
        mode,
        latency: Duration::from_nanos(50),
        ..Config::default()
    };
    c.link.tx_queue_frames = 64;
    c.link.tx_queue_bytes = 1 << 20;
    c
}

/// An RDMA write of `len` bytes from GPU 0 to GPU 2, its bytes all `tag`.
fn payload(tag: u16, len: usize) -> Vec<u8> {
    let data = vec![tag as u8; len];
    let txn = [TxnRepr::RdmaWrite {
        tag,
        target: MemTarget {
            space: Space::Global,
            key: 1,
            addr: 0,
        },
        offset: 0,
        total: len as u32,
        data: &data,
    }];
    let repr = DataRepr {
        dst: gpu(2),
        src: gpu(0),
        path: PathId(0),
        txns: Txns::Slice(&txn),
    };
    let mut buf = vec![0u8; repr.buffer_len()];
    repr.emit(&mut buf).unwrap();
    buf
}

impl Rig {
    fn new(mode: Mode) -> Rig {
        let cfg = config(mode);
        let mut routes = Routes::new();
        for p in 0..3 {
            routes.add(gpu(p), p);
        }
        let mut sw = Switch::new(cfg.clone(), routes).unwrap();
        let mut peers = Vec::new();
        for p in 0..3 {
            let mut l = cfg.link.clone();
            l.mac.0 = [0x02, 0x09, 0, 0, 0, p as u8];
            l.nonce_seed = 77 + p as u64;
            let mut link = Link::new(l).unwrap();
            link.physical_up(Instant::ZERO);
            peers.push(link);
            sw.port_up(Instant::ZERO, p);
        }
        let mut r = Rig {
            sw,
            peers,
            buf: vec![0; 9216],
            rx: vec![Vec::new(); 3],
            data: vec![Vec::new(); 3],
        };
        for t in 0..2000 {
            r.step(t * 10);
        }
        assert!((0..3).all(|p| r.sw.link(p).unwrap().is_up()));
        r
    }

    /// Everything due at `now` crosses, whole, without delay; DATA frames of peer 0 too unless
    /// `hold0`, in which case the first one is returned, not sent on.
    fn exchange(&mut self, now: u64, hold0: bool) -> Option<Vec<u8>> {
        let at = Instant::from_nanos(now);
        let mut held = None;
        self.sw.handle_timeout(at);
        for p in 0..3 {
            if self.peers[p].poll_timeout().is_some_and(|t| t <= at) {
                self.peers[p].handle_timeout(at);
            }
            while let Ok(Some(t)) = self.peers[p].poll_transmit(at, &mut self.buf) {
                let frame = self.buf[..t.len].to_vec();
                if p == 0 && hold0 && t.kind == FrameKind::Data && held.is_none() {
                    held = Some(frame);
                    continue;
                }
                self.sw.handle_frame(at, p, &frame);
            }
        }
        for p in 0..3 {
            while let Ok(Some(t)) = self.sw.poll_transmit(at, p, &mut self.buf) {
                let frame = self.buf[..t.len].to_vec();
                if t.kind == FrameKind::Data {
                    let stomped = self.sw.stomped(p);
                    assert_eq!(stomped, fcs::is_stomped(&frame), "the FCS says what it is");
                    self.data[p].push((now, stomped));
                }
                self.peers[p].handle_frame(at, &frame);
            }
            while let Some(ev) = self.peers[p].poll_event() {
                if let Event::Delivered {
                    payload, release, ..
                } = ev
                {
                    self.rx[p].push(payload.to_vec());
                    let _ = self.peers[p].release(release);
                }
            }
        }
        held
    }

    fn step(&mut self, now: u64) {
        self.exchange(now, false);
    }

    fn run(&mut self, from: u64, to: u64) {
        let mut t = from;
        while t < to {
            self.step(t);
            t += 10;
        }
    }

    /// Peer 0 sends one frame carrying `payload`; returns its bytes and the time it left.
    fn take_frame(&mut self, now: u64, payload: &[u8]) -> Vec<u8> {
        self.peers[0].submit(Vc::new(0).unwrap(), payload).unwrap();
        self.exchange(now, true).expect("peer 0 sends its frame")
    }

    /// The frame's header reaches the switch at `t0 + header time`; the switch's egress port 2
    /// is polled every nanosecond until `end`, when the frame (`arrives`, its bytes as they
    /// arrive) reaches it whole with the status `fcs`.
    fn cut(&mut self, t0: u64, frame: &[u8], arrives: &[u8], end: FrameEnd) -> u64 {
        let hdr = t0 + ser_ns(36);
        self.sw
            .handle_header(Instant::from_nanos(hdr), 0, frame, end);
        let last = end.at.map_or(t0 + ser_ns(frame.len()), |t| t.as_nanos());
        for t in hdr..last {
            let at = Instant::from_nanos(t);
            self.sw.handle_timeout(at);
            while let Ok(Some(tx)) = self.sw.poll_transmit(at, 2, &mut self.buf) {
                let f = self.buf[..tx.len].to_vec();
                if tx.kind == FrameKind::Data {
                    let stomped = self.sw.stomped(2);
                    assert_eq!(stomped, fcs::is_stomped(&f));
                    self.data[2].push((t, stomped));
                }
                self.peers[2].handle_frame(at, &f);
            }
        }
        if end.at.is_some() {
            let at = Instant::from_nanos(last);
            match end.fcs {
                FcsStatus::Good => self.sw.handle_frame(at, 0, arrives),
                fcs => self.sw.handle_frame_fcs(at, 0, arrives, fcs),
            }
        } else {
            // The wire is cut before the end.
            self.sw.port_down(Instant::from_nanos(last), 0);
        }
        last
    }
}

#[test]
fn a_good_frame_leaves_before_its_end_and_is_counted_once_accepted() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(7, 8000));
    let end = t0 + ser_ns(frame.len());
    r.cut(
        t0,
        &frame,
        &frame,
        FrameEnd {
            fcs: FcsStatus::Good,
            at: Some(Instant::from_nanos(end)),
        },
    );
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-1 A frame MUST NOT begin to leave its egress port before latency has passed since it
    //# began to arrive (cut-through: since its first bit, which is its last bit's arrival less its
    //# serialisation time at rate) or since it arrived whole (store-and-forward). (1.3: 1.2 said
    //# "handed to its egress port's link", an instant inside the switch; the first bit on the
    //# egress wire is what a port observes, and never comes earlier.)
    let (sent, stomped) = r.data[2][0];
    assert!(!stomped);
    assert!(sent >= t0 + 49 && sent < end, "{t0} {sent} {end}");
    let c = r.sw.counters().ports[2];
    assert_eq!((c.tx_cut[0], c.tx_stomped[0]), (1, 0));
    r.run(end, end + 3000);
    assert_eq!(r.rx[2], [payload(7, 8000)]);
    let (ci, c) = (r.sw.counters().ports[0], r.sw.counters().ports[2]);
    assert_eq!((ci.rx_frames[0], c.tx_frames[0]), (1, 1));
    assert_eq!(ci.held_bytes[0], 0);
    // Its credits came back at its acceptance.
    assert_eq!(r.sw.link(0).unwrap().rx_occupied(Vc::new(0).unwrap()), 0);
    // Residence begins at the last byte: a frame that left before it has none.
    assert_eq!(c.residence_max_ns[0], 0);
}

#[test]
fn a_damaged_frame_is_stomped_taken_back_and_its_replay_forwarded() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(9, 8000));
    let mut damaged = frame.clone();
    damaged[5000] ^= 0x40;
    let end = t0 + ser_ns(frame.len());
    let seq_before = r.sw.link(2).unwrap().next_seq();
    r.cut(
        t0,
        &frame,
        &damaged,
        FrameEnd {
            fcs: FcsStatus::Bad,
            at: Some(Instant::from_nanos(end)),
        },
    );
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-2 A switch that has begun to send a frame whose FCS then turns out bad (damaged, or
    //# stomped by the hop before) MUST end it with a stomped FCS (WIRE-2.5-4).
    assert_eq!(r.data[2].len(), 1);
    let (sent, stomped) = r.data[2][0];
    assert!(stomped && sent < end);
    let l2 = r.sw.link(2).unwrap();
    assert_eq!(l2.counters().tx_stomped, 1);
    // Its link takes it back: the sequence number goes to the next frame, nothing to replay.
    assert_eq!(l2.next_seq(), seq_before);
    assert_eq!(l2.replay_frames(), 0);
    assert_eq!(r.peers[2].counters().rx_stomped, 1);
    r.run(end, end + 10_000);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-4 A switch MUST NOT keep a frame received with a bad FCS to send it again; the copy the
    //# input link accepts later (replayed by the hop before) is forwarded as any other frame.
    assert_eq!(r.rx[2], [payload(9, 8000)]);
    assert!(r.sw.link(0).unwrap().counters().rx_fcs_errors >= 1);
    //= docs/spec/switch.md#8-counters
    //= type=test
    //# SW-8-5 A switch MUST count a frame in `tx_frames` of its egress port once the frame has
    //# been handed to that port's link and accepted by its input link, and MUST NOT count in
    //# `tx_frames` a frame whose copy it ends with a stomped FCS.
    let c = r.sw.counters().ports[2];
    assert_eq!((c.tx_frames[0], c.tx_stomped[0]), (1, 1));
    assert_eq!(r.sw.counters().ports[0].rx_frames[0], 1);
    assert_eq!(r.peers[2].counters().rx_fcs_errors, 0);
}

#[test]
fn a_frame_that_arrives_stomped_is_stomped_again() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(3, 6000));
    // The hop before gave up on it and takes it back.
    let mut stomped = frame.clone();
    let body = stomped.len() - 4;
    let s = fcs::stomped_bytes(&stomped[..body]);
    stomped[body..].copy_from_slice(&s);
    assert!(
        r.peers[0].stomp_last().is_none(),
        "a bare end does not stomp"
    );
    let end = t0 + ser_ns(frame.len());
    r.cut(
        t0,
        &frame,
        &stomped,
        FrameEnd {
            fcs: FcsStatus::Stomped,
            at: Some(Instant::from_nanos(end)),
        },
    );
    assert_eq!(r.data[2], [(r.data[2][0].0, true)]);
    assert_eq!(r.sw.link(0).unwrap().counters().rx_stomped, 1);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-11 A switch MUST NOT send a copy of a frame its input link did not accept other than
    //# ended by a stomped FCS, and MUST NOT count such a frame as received or forwarded.
    let (ci, c) = (r.sw.counters().ports[0], r.sw.counters().ports[2]);
    assert_eq!(
        (ci.rx_frames[0], c.tx_frames[0], c.tx_stomped[0]),
        (0, 0, 1)
    );
}

#[test]
fn a_frame_longer_than_its_header_says_is_stomped() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(4, 6000));
    // Sixteen bytes beyond the padding, FCS good (a faulty sender, WIRE-2.4-3).
    let mut long = frame[..frame.len() - 4].to_vec();
    long.extend_from_slice(&[0xEE; 16]);
    let f = fcs::fcs_bytes(&long);
    long.extend_from_slice(&f);
    let end = t0 + ser_ns(long.len());
    r.cut(
        t0,
        &long,
        &long,
        FrameEnd {
            fcs: FcsStatus::Good,
            at: Some(Instant::from_nanos(end)),
        },
    );
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-9 A cut-through switch that has begun to send a frame MUST end it with a stomped FCS
    //# when the frame's end shows it longer or shorter than the length its network header
    //# declares (for instance bytes beyond its padding, WIRE-2.4-3).
    assert!(r.data[2][0].1);
    r.run(end, end + 3000);
    // Accepted by its link, it is malformed and discarded there (SW-7-1): nothing else leaves.
    assert_eq!(r.data[2].len(), 1);
    assert!(r.rx[2].is_empty());
    assert_eq!(r.sw.counters().ports[0].discard_malformed[0], 1);
    assert_eq!(r.sw.counters().ports[2].tx_frames[0], 0);
}

#[test]
fn a_frame_whose_end_comes_too_late_or_never_is_stomped() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(5, 6000));
    // Its end would come after max_residence (40 us) from its first bit.
    let late = t0 + 41_000;
    r.cut(
        t0,
        &frame,
        &frame,
        FrameEnd {
            fcs: FcsStatus::Good,
            at: Some(Instant::from_nanos(late)),
        },
    );
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-10 A cut-through switch that has begun to send a frame whose last byte has not
    //# arrived `max_residence` after its first MUST end it with a stomped FCS.
    assert_eq!(r.data[2].len(), 1);
    assert!(r.data[2][0].1);
    // Accepted by its link all the same, it leaves again, whole, stored first.
    r.run(late, late + 3000);
    assert_eq!(r.rx[2], [payload(5, 6000)]);
    assert_eq!(r.sw.counters().ports[2].tx_frames[0], 1);
    // A second frame whose wire is cut before its end.
    let mut r = Rig::new(Mode::CutThrough);
    let frame = r.take_frame(t0, &payload(6, 6000));
    r.cut(
        t0,
        &frame,
        &frame,
        FrameEnd {
            fcs: FcsStatus::Good,
            at: None,
        },
    );
    assert_eq!(r.data[2].len(), 1);
    assert!(r.data[2][0].1);
    assert_eq!(r.sw.counters().ports[0].rx_frames[0], 0);
}

#[test]
fn duplicates_gaps_and_frames_without_credit_are_not_forwarded_on_their_header() {
    let mut r = Rig::new(Mode::CutThrough);
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(8, 6000));
    // Its sequence number, one too far: a gap.
    let mut gap = frame.clone();
    gap[19] = gap[19].wrapping_add(1);
    let end = FrameEnd {
        fcs: FcsStatus::Good,
        at: Some(Instant::from_nanos(t0 + ser_ns(frame.len()))),
    };
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-8 A cut-through switch MUST NOT begin to forward a frame before its end unless its
    //# input link would accept the frame on its link header: the link is UP, the sequence
    //# number is the expected one, the VC is agreed and its free buffer holds the cost of the
    //# length the network header declares.
    r.sw.handle_header(Instant::from_nanos(t0 + 1), 0, &gap, end);
    r.exchange(t0 + 100, false);
    assert!(r.data[2].is_empty(), "a gap is not forwarded");
    // On a VC the link did not agree (it agreed 4).
    let mut vc7 = frame.clone();
    vc7[15] = (vc7[15] & 0x1F) | 7 << 5;
    r.sw.handle_header(Instant::from_nanos(t0 + 101), 0, &vc7, end);
    r.exchange(t0 + 200, false);
    assert!(r.data[2].is_empty(), "a VC not agreed is not forwarded");
    // A duplicate: the sequence number before the expected one.
    let mut dup = frame.clone();
    dup[19] = dup[19].wrapping_sub(1);
    r.sw.handle_header(Instant::from_nanos(t0 + 201), 0, &dup, end);
    r.exchange(t0 + 300, false);
    assert!(r.data[2].is_empty(), "a duplicate is not forwarded");
    // In store-and-forward mode the header is ignored.
    let mut sf = Rig::new(Mode::StoreAndForward);
    let frame = sf.take_frame(t0, &payload(8, 6000));
    let end = t0 + ser_ns(frame.len());
    sf.cut(
        t0,
        &frame,
        &frame,
        FrameEnd {
            fcs: FcsStatus::Good,
            at: Some(Instant::from_nanos(end)),
        },
    );
    assert!(sf.data[2].is_empty());
    sf.run(end, end + 3000);
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-6 A switch that does not announce CUT_THROUGH MUST check a frame's FCS before it
    //# begins to send it.
    assert_eq!(sf.data[2].len(), 1);
    assert!(sf.data[2][0].0 >= end);
    assert_eq!(sf.sw.counters().ports[2].tx_cut[0], 0);
}

#[test]
fn a_run_of_frames_some_damaged_arrives_whole_in_order() {
    // Eight frames back to back, every third damaged on the wire: each copy the switch begins
    // for a damaged one is stomped, each replay goes through, and peer 2 gets all eight once,
    // in order.
    let mut r = Rig::new(Mode::CutThrough);
    let mut t = 30_000;
    for k in 0..8u16 {
        let frame = r.take_frame(t, &payload(k, 5000));
        let end = t + ser_ns(frame.len());
        let bad = k % 3 == 1;
        let mut arrives = frame.clone();
        if bad {
            arrives[3000] ^= 1;
        }
        r.cut(
            t,
            &frame,
            &arrives,
            FrameEnd {
                fcs: if bad { FcsStatus::Bad } else { FcsStatus::Good },
                at: Some(Instant::from_nanos(end)),
            },
        );
        r.run(end, end + 2000);
        t = end + 2000;
    }
    r.run(t, t + 10_000);
    let want: Vec<_> = (0..8).map(|k| payload(k, 5000)).collect();
    assert_eq!(r.rx[2], want);
    let c = r.sw.counters().ports[2];
    assert_eq!(c.tx_frames[0], 8);
    assert_eq!(c.tx_stomped[0], 3);
    let l = r.sw.link(2).unwrap().counters();
    //= docs/spec/switch.md#6-latency-and-cut-through
    //= type=test
    //# SW-6-12 A cut-through switch MUST NOT let its egress link begin a replay while that link
    //# is sending a frame: a replay waits for the end of the frame in flight, and a stomped
    //# frame is out of the replay buffer before it starts.
    assert_eq!(
        (l.tx_stomped, l.tx_frames_total()),
        (3, 8),
        "stomped copies are not sent frames (LINK-7-5)"
    );
    assert_eq!(r.peers[2].counters().rx_stomped, 3);
}

#[test]
fn any_header_bytes_are_taken_without_harm() {
    // Headers of every length and content, and real frames with bytes flipped, shown to a
    // cut-through switch with every kind of end and no end ever delivered: nothing panics,
    // nothing is counted as received, and a good frame afterwards goes through. (A caller whose
    // `FrameEnd` says good and then delivers no end gets copies sent whole: the switch trusts
    // its wire's verdict.)
    let mut r = Rig::new(Mode::CutThrough);
    let mut seed = 0x1234_5678_9ABC_DEF1u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let t0 = 30_000;
    let frame = r.take_frame(t0, &payload(1, 6000));
    let mut t = t0 + 1;
    for k in 0..400 {
        let mut bytes = if k % 2 == 0 {
            frame.clone()
        } else {
            (0..next() % 200).map(|_| next() as u8).collect()
        };
        if !bytes.is_empty() {
            for _ in 0..1 + next() % 3 {
                let i = (next() as usize) % bytes.len().min(40);
                bytes[i] ^= 1 << (next() % 8);
            }
        }
        let fcs = match next() % 3 {
            0 => FcsStatus::Good,
            1 => FcsStatus::Bad,
            _ => FcsStatus::Stomped,
        };
        let at = (next() % 4 != 0).then(|| Instant::from_nanos(t + next() % 500));
        r.sw.handle_header(
            Instant::from_nanos(t),
            next() as usize % 4,
            &bytes,
            FrameEnd { fcs, at },
        );
        t += 1 + next() % 50;
        let at = Instant::from_nanos(t);
        r.sw.handle_timeout(at);
        while let Ok(Some(tx)) = r.sw.poll_transmit(at, 2, &mut r.buf) {
            let f = r.buf[..tx.len].to_vec();
            if tx.kind == FrameKind::Data {
                r.data[2].push((t, r.sw.stomped(2)));
            }
            r.peers[2].handle_frame(at, &f);
        }
    }
    assert_eq!(r.sw.counters().ports[0].rx_frames[0], 0);
    assert_eq!(r.sw.counters().ports[2].tx_frames[0], 0);
    assert!(r.data[2].iter().any(|&(_, stomped)| stomped));
    // The frame itself, whole, goes through.
    r.sw.handle_frame(Instant::from_nanos(t), 0, &frame);
    r.run(t, t + 5000);
    assert_eq!(r.rx[2].last(), Some(&payload(1, 6000)));
}
