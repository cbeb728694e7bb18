//! Frames per second through a pair of link ends, for 64 B and 1500 B DATA frames (wire length,
//! destination MAC through FCS), loss-free and with one DATA frame in 1000 damaged.
//!
//! Groups:
//! - `direct`: two [`Link`]s wired back to back, no wire model. Each step A tops up its transmit
//!   queue on VC 0 (refilled with `submit` until refused whenever it falls to half of
//!   `tx_queue_frames`), A's `poll_transmit` goes into B's `handle_frame_fcs` (the wire says
//!   whether it damaged the frame, so the CRC is computed once per hop, by the sender), B's
//!   events are drained
//!   and every delivered frame is released at once, B's `poll_transmit` output (ACK, NACK, CF)
//!   goes into A's `handle_frame_fcs`, A's events are drained and both ends run `handle_timeout`
//!   when `poll_timeout` has passed. A simulated clock advances by the serialisation time at
//!   400 Gb/s (wire overhead included) of every frame A sends, so the ACK, CF and CC timers run
//!   as on a busy 400 Gb/s link with zero propagation delay. The lossy case flips one byte of a
//!   DATA frame (a fresh one or a replay) with probability 1e-3 from a fixed-seed xorshift, so
//!   B sees a bad FCS and recovery goes through NACK and go-back-N. One iteration is 10 000
//!   frames delivered at B; the link pair lives across iterations.
//! - `shared`: as `direct`, through the calls a simulator whose wire knows each frame's fate
//!   uses (the fabric's): A hands its DATA frames out by reference with the FCS deferred
//!   (`Link::defer_fcs`, `Link::poll_transmit_shared`), the bench's wire reads them in place (a
//!   damaged frame is an exact copy with one byte flipped), and B hands accepted payloads
//!   straight to the bench (`Link::handle_frame_deliver`) instead of queueing them as events.
//! - `harness`: [`Pair::run`] of a [`Scenario`] carrying 10 000 frames from A to B (one VC,
//!   drain at line rate, 5 m of cable, `faults.loss` 0 or 1e-3): the cost per frame of the full
//!   discrete-event simulation with its bookkeeping and report. Building and freeing the pair
//!   are not timed.
//!
//! Both end configurations are [`Config::default`] (B with its own MAC and nonce seed). Before
//! timing, each case runs once with checks: every frame is delivered exactly once, in order,
//! with its sequence number and bytes intact, and the lossy runs did lose and recover frames.
//!
//! Run: `cargo bench -p ethlink-link --bench pair`.

use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ethlink_link::harness::{Faults, Pair, Scenario, Traffic, Wire, build_payload};
use ethlink_link::{Config, Event, Instant, Link};
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{
    DataRepr, FrameKind, MAX_FRAME_LEN, MacAddr, Seq, TxnRepr, Vc, WIRE_OVERHEAD,
};

/// Frame sizes on the wire, destination MAC through FCS.
const SIZES: [usize; 2] = [64, 1500];
/// Frames delivered per timed iteration.
const BATCH: u64 = 10_000;
/// Probability that a DATA frame is damaged in the lossy cases.
const LOSS: f64 = 1e-3;
/// Picoseconds per byte on the wire at 400 Gb/s.
const PS_PER_BYTE: u64 = 20;
/// Where the frame index goes in a payload: the address of the RDMA_WRITE, after the 8-byte
/// network header, the 8-byte transaction prefix and the 4-byte key.
const ADDR_AT: usize = 20;
/// The VC the traffic uses.
const VC: u8 = 0;

fn configs() -> (Config, Config) {
    let a = Config::default();
    let b = Config {
        mac: MacAddr([0x02, 0, 0, 0, 0, 2]),
        nonce_seed: 2,
        ..Config::default()
    };
    (a, b)
}

/// Two link ends back to back, A sending to B.
struct Direct {
    a: Link,
    b: Link,
    vc: Vc,
    /// Simulated time, ps.
    now_ps: u64,
    /// The payload submitted, with the frame index written at `ADDR_AT`.
    payload: Vec<u8>,
    frame_size: usize,
    /// Index of the next frame to submit.
    next_index: u64,
    /// Frames delivered at B.
    delivered: u64,
    /// Refill A's queue when it holds this many frames or fewer.
    low_water: usize,
    buf_a: Vec<u8>,
    buf_b: Vec<u8>,
    /// Damage a DATA frame when the xorshift draws below this (0: never).
    loss_below: u64,
    rng: u64,
    damaged: u64,
    /// Steps in which neither end sent anything.
    idle_steps: u64,
    /// Frames by reference (the `shared` group).
    by_ref: bool,
    /// Releases of the frames B delivered straight to the bench, given back after the call.
    releases: Vec<ethlink_link::Release>,
    /// An exact copy of a shared frame, to damage.
    exact: Vec<u8>,
}

impl Direct {
    fn new(frame_size: usize, loss: f64, by_ref: bool) -> Self {
        let (ca, cb) = configs();
        let low_water = ca.tx_queue_frames as usize / 2;
        let mut payload = vec![0u8; MAX_FRAME_LEN];
        let len = build_payload(&mut payload, 0, 0, frame_size);
        payload.truncate(len);
        let mut d = Direct {
            a: Link::new(ca).expect("config A"),
            b: Link::new(cb).expect("config B"),
            vc: Vc::new(VC).expect("VC"),
            now_ps: 0,
            payload,
            frame_size,
            next_index: 0,
            delivered: 0,
            low_water,
            buf_a: vec![0; MAX_FRAME_LEN],
            buf_b: vec![0; MAX_FRAME_LEN],
            loss_below: (loss * u64::MAX as f64) as u64,
            rng: 0x9E37_79B9_7F4A_7C15,
            damaged: 0,
            idle_steps: 0,
            by_ref,
            releases: Vec::new(),
            exact: Vec::new(),
        };
        d.a.defer_fcs(by_ref);
        d.bring_up();
        d
    }

    fn now(&self) -> Instant {
        Instant::from_nanos(self.now_ps / 1000)
    }

    /// Exchanges INIT and INIT_ECHO until both ends are UP.
    fn bring_up(&mut self) {
        self.a.physical_up(Instant::ZERO);
        self.b.physical_up(Instant::ZERO);
        for _ in 0..16 {
            let now = self.now();
            while let Some(t) = self.a.poll_transmit(now, &mut self.buf_a).expect("buffer") {
                self.b.handle_frame(now, &self.buf_a[..t.len]);
            }
            while let Some(t) = self.b.poll_transmit(now, &mut self.buf_b).expect("buffer") {
                self.a.handle_frame(now, &self.buf_b[..t.len]);
            }
            if self.a.is_up() && self.b.is_up() {
                break;
            }
            self.now_ps += 1000;
        }
        assert!(self.a.is_up() && self.b.is_up(), "bring-up failed");
        for end in [&mut self.a, &mut self.b] {
            assert!(matches!(end.poll_event(), Some(Event::LinkUp(_))));
            assert!(end.poll_event().is_none());
        }
    }

    fn xorshift(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// Runs until `frames` more frames are delivered at B. With `CHECK`, verifies each one.
    fn run<const CHECK: bool>(&mut self, frames: u64) -> u64 {
        let target = self.delivered + frames;
        let mut sink = 0u64;
        while self.delivered < target {
            sink = sink.wrapping_add(self.step::<CHECK>());
        }
        sink
    }

    /// One step: A sends at most one frame; B answers. Returns a value depending on what B
    /// delivered, so that nothing is optimised away.
    fn step<const CHECK: bool>(&mut self) -> u64 {
        let now = self.now();
        if self.a.queued(self.vc).0 <= self.low_water {
            loop {
                self.payload[ADDR_AT..ADDR_AT + 8].copy_from_slice(&self.next_index.to_be_bytes());
                if self.a.submit(self.vc, &self.payload).is_err() {
                    break;
                }
                self.next_index += 1;
            }
        }
        let mut sent = false;
        let mut sink = 0u64;
        if self.by_ref {
            if let Some((t, shared)) = self
                .a
                .poll_transmit_shared(now, &mut self.buf_a)
                .expect("buffer A")
            {
                sent = true;
                self.now_ps += (t.len + WIRE_OVERHEAD) as u64 * PS_PER_BYTE;
                if CHECK && t.kind == FrameKind::Data {
                    assert_eq!(t.len, self.frame_size);
                }
                let mut fcs = FcsStatus::Good;
                let damage = self.loss_below > 0
                    && t.kind == FrameKind::Data
                    && self.xorshift() < self.loss_below;
                let bytes: &[u8] = match &shared {
                    Some(f) if damage => {
                        // The wire's own copy, exact, with one byte flipped.
                        f.write_exact(&mut self.exact);
                        let at = (self.xorshift() % t.len as u64) as usize;
                        self.exact[at] ^= 0x10;
                        self.damaged += 1;
                        fcs = FcsStatus::Bad;
                        &self.exact
                    }
                    Some(f) => f.as_bytes(),
                    None => &self.buf_a[..t.len],
                };
                let (template, delivered, releases) =
                    (&self.payload, &mut self.delivered, &mut self.releases);
                self.b.handle_frame_deliver(
                    Instant::from_nanos(self.now_ps / 1000),
                    bytes,
                    Some(fcs),
                    &mut |_, seq, payload, release| {
                        if CHECK {
                            check_delivery(template, *delivered, seq, payload);
                        }
                        sink = sink.wrapping_add(payload.len() as u64);
                        *delivered += 1;
                        releases.push(release);
                    },
                );
                for r in self.releases.drain(..) {
                    self.b.release(r).expect("release");
                }
                if let Some(ev) = self.b.poll_event() {
                    panic!("unexpected event at B: {ev:?}");
                }
            }
        } else if let Some(t) = self
            .a
            .poll_transmit(now, &mut self.buf_a)
            .expect("buffer A")
        {
            sent = true;
            self.now_ps += (t.len + WIRE_OVERHEAD) as u64 * PS_PER_BYTE;
            if CHECK && t.kind == FrameKind::Data {
                assert_eq!(t.len, self.frame_size);
            }
            // The wire knows whether it damaged the frame, as a MAC that checked the FCS would:
            // the receiver takes that status instead of computing the CRC again (one CRC per
            // hop, the sender's).
            let mut fcs = FcsStatus::Good;
            if self.loss_below > 0 && t.kind == FrameKind::Data && self.xorshift() < self.loss_below
            {
                let at = (self.xorshift() % t.len as u64) as usize;
                self.buf_a[at] ^= 0x10;
                self.damaged += 1;
                fcs = FcsStatus::Bad;
            }
            self.b
                .handle_frame_fcs(self.now(), &self.buf_a[..t.len], fcs);
            while let Some(ev) = self.b.poll_event() {
                let Event::Delivered {
                    seq,
                    payload,
                    release,
                    ..
                } = ev
                else {
                    panic!("unexpected event at B: {ev:?}");
                };
                if CHECK {
                    check_delivery(&self.payload, self.delivered, seq, payload);
                }
                sink = sink.wrapping_add(payload.len() as u64);
                self.delivered += 1;
                self.b.release(release).expect("release");
            }
        }
        let now = self.now();
        while let Some(t) = self
            .b
            .poll_transmit(now, &mut self.buf_b)
            .expect("buffer B")
        {
            sent = true;
            self.a
                .handle_frame_fcs(now, &self.buf_b[..t.len], FcsStatus::Good);
        }
        if let Some(ev) = self.a.poll_event() {
            panic!("unexpected event at A: {ev:?}");
        }
        let now = self.now();
        for end in [&mut self.a, &mut self.b] {
            if end.poll_timeout().is_some_and(|t| t <= now) {
                end.handle_timeout(now);
            }
        }
        if !sent {
            // Nothing moved: wait for the earliest timer.
            self.idle_steps += 1;
            let next = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min()
                .map_or(0, Instant::as_nanos);
            self.now_ps = (next * 1000).max(self.now_ps + 1000);
        }
        sink
    }
}

/// Checks that the delivered frame is frame `index` of the stream, with its sequence number and
/// bytes intact.
fn check_delivery(template: &[u8], index: u64, seq: Seq, payload: &[u8]) {
    assert_eq!(
        seq,
        Seq::new(index as u32),
        "sequence number of frame {index}"
    );
    assert_eq!(payload.len(), template.len(), "length of frame {index}");
    assert_eq!(payload[..ADDR_AT], template[..ADDR_AT], "frame {index}");
    assert_eq!(
        payload[ADDR_AT + 8..],
        template[ADDR_AT + 8..],
        "frame {index}"
    );
    let repr = DataRepr::parse(payload).expect("delivered payload parses");
    let Some(Ok(TxnRepr::RdmaWrite { target, .. })) = repr.txns.iter().next() else {
        panic!("frame {index} carries no RDMA_WRITE");
    };
    assert_eq!(target.addr, index, "frames out of order");
}

/// One checked run per case before anything is timed.
fn check_direct(frame_size: usize, loss: f64, by_ref: bool) {
    let frames = 200_000;
    let mut d = Direct::new(frame_size, loss, by_ref);
    d.run::<true>(frames);
    assert_eq!(d.delivered, frames);
    assert!(d.idle_steps < frames / 100, "{} idle steps", d.idle_steps);
    let (ca, cb) = (d.a.counters(), d.b.counters());
    assert_eq!(
        cb.rx_fcs_errors, d.damaged,
        "every damaged frame failed its FCS"
    );
    assert_eq!(cb.duplicates, 0);
    assert_eq!(ca.flushes, 0);
    if loss > 0.0 {
        assert!(
            d.damaged > 0 && ca.frames_replayed > 0,
            "the lossy run lost nothing"
        );
    } else {
        assert_eq!(d.damaged + ca.frames_replayed, 0);
    }
}

fn scenario(frame_size: usize, loss: f64) -> Scenario {
    Scenario {
        wire: Wire {
            faults: Faults {
                loss,
                ..Faults::default()
            },
            ..Wire::default()
        },
        traffic: Traffic {
            frames: BATCH,
            frame_size,
            ..Traffic::default()
        },
        ..Scenario::default()
    }
}

fn check_harness(s: &Scenario) {
    let r = Pair::new(s.clone()).expect("scenario").run();
    assert!(!r.timed_out, "harness run timed out");
    assert_eq!(r.delivered, BATCH);
    assert_eq!(
        (r.lost, r.duplicates, r.corrupted, r.unknown_fate),
        (0, 0, 0, 0)
    );
    assert!(r.in_order, "harness delivered out of order");
    assert_eq!(r.bound_violations, 0);
    if s.wire.faults.loss > 0.0 {
        assert!(r.injected[0] > 0, "the lossy run lost nothing");
    }
}

fn cases() -> impl Iterator<Item = (usize, f64, String)> {
    SIZES.into_iter().flat_map(|size| {
        [(0.0, "lossless"), (LOSS, "loss1e-3")]
            .into_iter()
            .map(move |(loss, name)| (size, loss, format!("{size}B/{name}")))
    })
}

fn direct(c: &mut Criterion) {
    for (group, by_ref) in [("direct", false), ("shared", true)] {
        let mut g = c.benchmark_group(group);
        g.throughput(Throughput::Elements(BATCH));
        for (size, loss, name) in cases() {
            check_direct(size, loss, by_ref);
            let mut d = Direct::new(size, loss, by_ref);
            g.bench_function(name, |b| b.iter(|| black_box(d.run::<false>(BATCH))));
        }
        g.finish();
    }
}

fn harness(c: &mut Criterion) {
    let mut g = c.benchmark_group("harness");
    g.throughput(Throughput::Elements(BATCH));
    for (size, loss, name) in cases() {
        let s = scenario(size, loss);
        check_harness(&s);
        g.bench_function(name, |b| {
            b.iter_batched(
                || Pair::new(s.clone()).expect("scenario"),
                // The pair is handed back so that freeing it is not timed.
                |mut p| {
                    let delivered = p.run().delivered;
                    (p, delivered)
                },
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(4));
    targets = direct, harness
}
criterion_main!(benches);
