//! Frames by reference give the bytes and the behaviour of frames by copy.
//!
//! Two copies of the same link pair run side by side on the same seeded, lossy wires: one through
//! the copying calls ([`Link::submit`], [`Link::poll_transmit`], [`Channel::transmit`],
//! [`Channel::pop_arrival_fcs`], [`Link::handle_frame_fcs`] then [`Link::poll_event`]), the other
//! through the calls that move buffers ([`Link::outgoing`] and [`Link::submit_outgoing`],
//! [`Link::poll_transmit_shared`], [`Channel::transmit_shared`], [`Channel::pop_arrival_wire`],
//! [`Link::handle_frame_deliver`]). Every frame put on a wire, every payload delivered, every
//! event and every counter must be the same, through damaged, vanished, duplicated and stomped
//! frames, replays and credit stalls, tagged and untagged, with the FCS written at once or
//! deferred to whoever needs the exact bytes ([`Link::defer_fcs`]).

use ethlink_link::harness::{Channel, Faults, Injector, Verdict, WireBytes};
use ethlink_link::{Config, Event, Instant, Link, Release, SharedFrame};
use ethlink_protocol::{FrameKind, MacAddr, NETWORK_HEADER_LEN, Vc, VlanTag};

/// What one side saw, in order.
#[derive(Debug, Default, PartialEq)]
struct Log {
    /// (time ns, end, frame bytes) of every frame put on a wire.
    sent: Vec<(u64, usize, Vec<u8>)>,
    /// (end, vc, seq, payload) of every frame delivered.
    delivered: Vec<(usize, u8, u32, Vec<u8>)>,
    /// Every other event, as text.
    events: Vec<(usize, String)>,
}

fn payload(n: u32) -> Vec<u8> {
    // 8..=1500 bytes: short frames that need padding and long ones.
    let body = (n as usize * 97) % 1493;
    let mut p = vec![(n % 251) as u8; NETWORK_HEADER_LEN + body];
    p[0..2].copy_from_slice(&1u16.to_be_bytes());
    p[2..4].copy_from_slice(&0u16.to_be_bytes());
    p[4] = 0;
    p[5] = (n % 3) as u8;
    p[6..8].copy_from_slice(&(body as u16).to_be_bytes());
    for (i, b) in p[NETWORK_HEADER_LEN..].iter_mut().enumerate() {
        *b = (n as usize * 31 + i) as u8;
    }
    p
}

struct Side {
    ends: [Link; 2],
    wires: [Channel; 2],
    by_ref: bool,
    /// Releases held back by each end's upper layer (drained one per step: credit stalls).
    held: [Vec<Release>; 2],
    next: [u32; 2],
    buf: Vec<u8>,
    log: Log,
    /// Frames handed out by reference without their FCS written.
    deferred: usize,
}

impl Side {
    fn new(by_ref: bool, vlan: bool, faults: Faults) -> Side {
        let cfg = |mac: u8, seed: u64| Config {
            mac: MacAddr([2, 0, 0, 0, 0, mac]),
            nonce_seed: seed,
            vlan: vlan.then_some(VlanTag {
                pcp: 3,
                dei: false,
                vid: 7,
            }),
            rx_credits: [200, 200, 200, 200, 0, 0, 0, 0],
            ..Config::default()
        };
        let wire =
            |seed: u64| Channel::new(400.0, 25.0, Injector::new(faults, seed).with_stomp(0.01));
        Side {
            ends: [
                Link::new(cfg(1, 11)).unwrap(),
                Link::new(cfg(2, 22)).unwrap(),
            ],
            wires: [wire(5), wire(6)],
            by_ref,
            held: [Vec::new(), Vec::new()],
            next: [0, 0],
            buf: vec![0; 9216],
            log: Log::default(),
            deferred: 0,
        }
    }

    fn events(&mut self, e: usize) {
        while let Some(ev) = self.ends[e].poll_event() {
            match ev {
                Event::Delivered {
                    vc,
                    seq,
                    payload,
                    release,
                } => {
                    self.log
                        .delivered
                        .push((e, vc.value(), seq.value(), payload.to_vec()));
                    self.held[e].push(release);
                }
                other => self.log.events.push((e, format!("{other:?}"))),
            }
        }
    }

    fn step(&mut self, ns: u64) {
        let now = Instant::from_nanos(ns);
        let ps = ns * 1000;
        for e in 0..2 {
            self.ends[e].handle_timeout(now);
            // The upper layer drains one held frame per step.
            if !self.held[e].is_empty() {
                let r = self.held[e].remove(0);
                self.ends[e].release(r).unwrap();
            }
            // Offer frames on the request VCs while the queues take them.
            for _ in 0..4 {
                let n = self.next[e];
                let p = payload(n);
                let vc = Vc::new((n % 2) as u8).unwrap();
                let ok = if self.by_ref {
                    let out = self.ends[e].outgoing(&p);
                    self.ends[e].submit_outgoing(vc, out).is_ok()
                } else {
                    self.ends[e].submit(vc, &p).is_ok()
                };
                if !ok {
                    break;
                }
                self.next[e] += 1;
            }
            // Arrivals from the other end's wire.
            let from = 1 - e;
            if self.by_ref {
                while let Some((bytes, fcs)) = self.wires[from].pop_arrival_wire(ps) {
                    let log = &mut self.log;
                    let held = &mut self.held[e];
                    self.ends[e].handle_frame_deliver(
                        now,
                        bytes.as_bytes(),
                        Some(fcs),
                        &mut |vc, seq, payload, release| {
                            log.delivered
                                .push((e, vc.value(), seq.value(), payload.to_vec()));
                            held.push(release);
                        },
                    );
                    self.wires[from].recycle(bytes);
                    self.events(e);
                }
            } else {
                let mut rx = Vec::new();
                while let Some(fcs) = self.wires[from].pop_arrival_fcs(ps, &mut rx) {
                    self.ends[e].handle_frame_fcs(now, &rx, fcs);
                    self.events(e);
                }
            }
            // Send while the wire is free.
            while self.wires[e].free_at() <= ps {
                let sent: Option<(FrameKind, Vec<u8>, Option<SharedFrame>)> = if self.by_ref {
                    match self.ends[e]
                        .poll_transmit_shared(now, &mut self.buf)
                        .unwrap()
                    {
                        Some((t, Some(f))) => {
                            let mut exact = Vec::new();
                            f.write_exact(&mut exact);
                            if f.has_fcs() {
                                assert_eq!(exact, f.as_bytes());
                            } else {
                                self.deferred += 1;
                            }
                            Some((t.kind, exact, Some(f)))
                        }
                        Some((t, None)) => Some((t.kind, self.buf[..t.len].to_vec(), None)),
                        None => None,
                    }
                } else {
                    self.ends[e]
                        .poll_transmit(now, &mut self.buf)
                        .unwrap()
                        .map(|t| (t.kind, self.buf[..t.len].to_vec(), None))
                };
                let Some((kind, bytes, shared)) = sent else {
                    break;
                };
                self.log.sent.push((ns, e, bytes.clone()));
                match shared {
                    Some(f) => self.wires[e].transmit_shared(ps, f, kind, Verdict::Pass),
                    None => self.wires[e].transmit(ps, &bytes, kind, Verdict::Pass),
                };
            }
            self.events(e);
        }
    }
}

fn run(vlan: bool, faults: Faults, physical_at: u64, defer: bool) {
    let mut a = Side::new(false, vlan, faults);
    let mut b = Side::new(true, vlan, faults);
    for e in &mut b.ends {
        e.defer_fcs(defer);
    }
    for s in [&mut a, &mut b] {
        for e in 0..2 {
            s.ends[e].physical_up(Instant::from_nanos(physical_at));
        }
    }
    for ns in (physical_at..physical_at + 400_000).step_by(20) {
        a.step(ns);
        b.step(ns);
    }
    assert!(a.log.delivered.len() > 1000, "{}", a.log.delivered.len());
    assert_eq!(a.log.sent.len(), b.log.sent.len());
    for (i, (x, y)) in a.log.sent.iter().zip(&b.log.sent).enumerate() {
        assert_eq!(x, y, "frame {i} on the wire");
    }
    assert_eq!(a.log.delivered, b.log.delivered);
    assert_eq!(a.log.events, b.log.events);
    for e in 0..2 {
        assert_eq!(a.ends[e].counters(), b.ends[e].counters(), "end {e}");
    }
    // The faults happened on both sides alike: damaged, vanished, duplicated and stomped
    // frames, and the replays that recovered them.
    let replayed: u64 = (0..2).map(|e| a.ends[e].counters().frames_replayed).sum();
    for e in 0..2 {
        let (x, y) = (a.wires[e].injected(), b.wires[e].injected());
        assert_eq!(x, y);
        if faults.loss > 0.0 {
            assert!(
                x.damaged > 0 && x.dropped > 0 && x.duplicated > 0 && x.stomped > 0,
                "{x:?}"
            );
        }
    }
    if faults.loss > 0.0 {
        assert!(replayed > 0);
    }
    assert_eq!(b.deferred > 0, defer, "{}", b.deferred);
}

#[test]
fn by_reference_equals_by_copy_through_faults() {
    let faults = Faults {
        loss: 0.01,
        drop: 0.005,
        burst: 2,
        ber: 0.0,
        duplicate: 0.005,
        control_loss: 0.01,
    };
    run(false, faults, 0, false);
    run(true, faults, 0, false);
    run(false, faults, 0, true);
    run(true, faults, 0, true);
}

#[test]
fn by_reference_equals_by_copy_without_faults() {
    run(false, Faults::default(), 100, false);
    run(false, Faults::default(), 100, true);
}

#[test]
fn a_payload_laid_out_for_another_layout_is_laid_out_again() {
    let tagged = Config {
        vlan: Some(VlanTag {
            pcp: 0,
            dei: false,
            vid: 1,
        }),
        ..Config::default()
    };
    let mut plain = Link::new(Config::default()).unwrap();
    let mut tag = Link::new(tagged).unwrap();
    assert_ne!(plain.layout(), tag.layout());
    let p = payload(5);
    let out = plain.outgoing(&p);
    assert_eq!(out.payload(), &p[..]);
    // Queued on the tagged link: the payload is moved to its place behind the longer header.
    tag.submit_outgoing(Vc::new(0).unwrap(), out).unwrap();
    assert_eq!(tag.queued(Vc::new(0).unwrap()), (1, p.len()));
    // A refused payload comes back whole.
    let bad = plain.outgoing(&p[..7]);
    let (err, back) = plain.submit_outgoing(Vc::new(0).unwrap(), bad).unwrap_err();
    assert_eq!(back.payload(), &p[..7]);
    assert!(format!("{err:?}").contains("BadPayload"));
    // Its buffer can be reused.
    assert!(back.into_buffer().capacity() >= 7);
}

#[test]
fn a_shared_frame_stays_intact_on_the_wire_and_a_damaged_one_is_a_copy() {
    let faults = Faults {
        loss: 1.0,
        ..Faults::default()
    };
    let mut wire = Channel::new(400.0, 10.0, Injector::new(faults, 1));
    let mut clean = Channel::new(400.0, 10.0, Injector::new(Faults::default(), 1));
    let mut ends = [
        Link::new(Config::default()).unwrap(),
        Link::new(Config {
            mac: MacAddr([2, 0, 0, 0, 0, 9]),
            nonce_seed: 3,
            ..Config::default()
        })
        .unwrap(),
    ];
    let mut buf = vec![0u8; 9216];
    // Bring the pair up by hand, then send one DATA frame by reference over each wire.
    let mut ns = 0;
    for e in &mut ends {
        e.physical_up(Instant::from_nanos(0));
    }
    while !(ends[0].is_up() && ends[1].is_up()) {
        ns += 100;
        let now = Instant::from_nanos(ns);
        for x in 0..2 {
            while let Some(t) = ends[x].poll_transmit(now, &mut buf).unwrap() {
                ends[1 - x].handle_frame(now, &buf[..t.len]);
            }
            while ends[1 - x].poll_event().is_some() {}
        }
        assert!(ns < 1_000_000);
    }
    let now = Instant::from_nanos(ns);
    let [a, _] = &mut ends;
    a.submit(Vc::new(0).unwrap(), &payload(40)).unwrap();
    let (t, f) = a.poll_transmit_shared(now, &mut buf).unwrap().unwrap();
    let f = f.unwrap();
    assert_eq!(
        (t.len, f.len(), f.is_empty()),
        (f.as_bytes().len(), t.len, false)
    );
    let original = f.as_bytes().to_vec();
    wire.transmit_shared(ns * 1000, f.clone(), t.kind, Verdict::Pass);
    clean.transmit_shared(ns * 1000, f.clone(), t.kind, Verdict::Pass);
    let late = u64::MAX / 2;
    let (damaged, fcs) = wire.pop_arrival_wire(late).unwrap();
    assert!(
        matches!(damaged, WireBytes::Owned(_)),
        "a damaged frame is the wire's copy"
    );
    assert_ne!(damaged.as_bytes(), &original[..]);
    assert_eq!(format!("{fcs:?}"), "Bad");
    let (intact, fcs) = clean.pop_arrival_wire(late).unwrap();
    assert!(matches!(intact, WireBytes::Shared(_)));
    assert_eq!(
        (intact.as_bytes(), format!("{fcs:?}").as_str()),
        (&original[..], "Good")
    );
    assert_eq!(
        f.as_bytes(),
        &original[..],
        "the sender's frame is untouched"
    );
}

#[test]
fn the_last_holder_of_a_shared_frame_takes_its_buffer_and_its_payload_in_place() {
    let mut a = Link::new(Config::default()).unwrap();
    let mut b = Link::new(Config {
        mac: MacAddr([2, 0, 0, 0, 0, 9]),
        nonce_seed: 3,
        ..Config::default()
    })
    .unwrap();
    let mut buf = vec![0u8; 9216];
    let mut ns = 0;
    a.physical_up(Instant::from_nanos(0));
    b.physical_up(Instant::from_nanos(0));
    while !(a.is_up() && b.is_up()) {
        ns += 100;
        let now = Instant::from_nanos(ns);
        while let Some(t) = a.poll_transmit(now, &mut buf).unwrap() {
            b.handle_frame(now, &buf[..t.len]);
        }
        while let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
            a.handle_frame(now, &buf[..t.len]);
        }
        while a.poll_event().is_some() {}
        while b.poll_event().is_some() {}
        assert!(ns < 1_000_000);
    }
    let p = payload(40);
    a.submit(Vc::new(0).unwrap(), &p).unwrap();
    let (_, f) = a
        .poll_transmit_shared(Instant::from_nanos(ns), &mut buf)
        .unwrap()
        .unwrap();
    let f = f.unwrap();
    let original = f.as_bytes().to_vec();
    let at = original.windows(p.len()).position(|w| w == p).unwrap();
    // Held by the replay buffer and by another reference: it comes back as it was.
    let other = f.clone();
    let f = f.into_buffer().unwrap_err();
    assert_eq!(f.as_bytes(), &original[..]);
    // The frame is acknowledged and the link lets it go: one reference is left besides this
    // one, then none.
    b.handle_frame(Instant::from_nanos(ns), f.as_bytes());
    while b.poll_event().is_some() {}
    while a.replay_frames() > 0 {
        ns += 100;
        let now = Instant::from_nanos(ns);
        b.handle_timeout(now);
        while let Some(t) = b.poll_transmit(now, &mut buf).unwrap() {
            a.handle_frame(now, &buf[..t.len]);
        }
        assert!(ns < 1_000_000);
    }
    let f = f.into_buffer().unwrap_err();
    drop(other);
    let owned = f.into_buffer().unwrap();
    assert_eq!(&owned[..original.len()], &original[..]);
    // Its payload is where a link of the same layout puts one: taken as it lies.
    let layout = a.layout();
    let out = layout.in_place(owned, at, p.len()).unwrap();
    assert_eq!(out.payload(), &p[..]);
    // Anywhere else, or beyond the buffer, the buffer comes back.
    let back = layout
        .in_place(out.into_buffer(), at + 1, p.len())
        .unwrap_err();
    let back = layout.in_place(back, at, 1 << 20).unwrap_err();
    assert!(back.len() >= at + p.len());
}
