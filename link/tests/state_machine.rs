//! Model-based property tests of two [`Link`] ends (docs/spec/link.md), with
//! `proptest-state-machine`.
//!
//! The reference model is what the link promises its upper layers: for each end and VC, the
//! sequence of payloads submitted. The system under test is two ends joined by a wire that this
//! file drives one frame at a time. Proptest draws small configurations (1..=3 VCs, replay
//! buffers of 1..=8 frames and 512..=2048 bytes, grants of one to a few 512-byte frames, timers
//! of hundreds of nanoseconds, credit counters that may start just short of 2^20) and sequences
//! of steps: submissions of 64..=512-byte frames, transmissions, deliveries of the next frames
//! in flight, faults on the next frame (drop, one flipped bit, duplicate, a lost control frame,
//! lost CF and CC frames), time advances and timer expiries, releases of delivered frames,
//! credit leaks, physical link bounces, and an upper layer that takes its events late.
//!
//! Every frame and event is checked as it appears, and the state after every step:
//!
//! - per VC, the receiver delivers the submitted sequence, in order and at most once, with the
//!   bytes submitted and the sequence numbers accepted; frames of unknown fate are reported by
//!   the sender right after a link-down, in sequence order, only for frames it sent; every
//!   frame before one delivered or reported is itself delivered or reported;
//! - an end enters UP only on the INIT_ECHO of its nonce, with the nonce and parameters it
//!   carries, and an INIT of another nonce restarts an UP end; DATA leaves only an end that is
//!   UP and whose peer is UP too or will be before the frame reaches it;
//! - new DATA frames carry consecutive sequence numbers from 0 after UP, leave each transmit
//!   queue in submission order and are paid for once, at the cost the credit rules give and
//!   within the grant; a retransmission is the original frame but for the REPLAY flag and the
//!   FCS, and only of a frame sent since the last UP;
//! - ACK and NACK carry the last accepted sequence number, a receiver NACKs once per gap (once
//!   more only when a retransmission skipped the expected frame again), CF carries `freed` and
//!   CC `consumed` of every VC, no CC leaves while the replay buffer holds a frame, and a FLUSH
//!   comes exactly when a replay would exceed `replay_count_max` replays without progress;
//! - `poll_timeout` is never later than an ACK, CF, CC or INIT the end owes;
//! - the replay buffer stays within its frame and byte bounds (the high-water counters too),
//!   each VC's receive buffer within its grant, and while UP its occupancy equals the credits of
//!   the frames delivered and not released; a claim from before a re-initialisation frees
//!   nothing; the parameters agreed at UP and the counters reset then are as specified;
//! - the counters never decrease and agree with what was observed: frames and bytes sent and
//!   received per VC, frames queued, frames of unknown fate, link-ups; no credit overrun.
//!
//! After the sequence the faults stop and a bounded fault-free drive (every frame delivered at
//! once, time advanced from deadline to deadline, every event taken and every delivered frame
//! released) must bring the link to rest: both ends UP and idle, every submitted frame
//! delivered exactly once or reported of unknown fate, and every credit back: for each VC,
//! `consumed - freed_seen == 0` at the transmitter and `received == freed` at the receiver,
//! whatever CF and CC frames were lost and however many credits leaked.
//!
//! Four properties, one per profile of steps: `clean` (no fault; time moves only with every
//! frame delivered first: nothing may be lost, replayed or NACKed), `credit_faults` (lost CF and
//! CC frames and leaked credits: the CC recovers exactly what leaked, nothing is lost),
//! `wire_faults` (every fault of the wire, any time advance, leaks) and `restarts` (all of that
//! and physical link bounces of either end or both). Four fixed sequences run through the same
//! machine keep the bring-up and late-event hazards the properties found as regression tests.
//!
//! 64 cases per property and 1..=60 steps per case by default; `PROPTEST_CASES` overrides the
//! cases. The seed is fixed so runs are repeatable; set `PROPTEST_RNG_SEED` to explore others.
//! Failing cases are kept in `proptest-regressions/state_machine.txt` and replayed first.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::marker::PhantomData;

use ethlink_link::{
    Agreed, Config, Counters, Duration, Event, Instant, Link, LostReason, Release, RxState, TxState,
};
use ethlink_protocol::{FLAG_REPLAY, FrameKind, FrameRepr, LinkFrame, MacAddr, Seq, Vc};
use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest, prop_state_machine};

// ---------------------------------------------------------------------------------------------
// Frames and payloads

/// Maximum frame size of both ends.
const MFS: u16 = 512;
/// Bytes of a DATA frame around its network payload: Ethernet 14, link 6, network header 8,
/// FCS 4.
const DATA_OVERHEAD: usize = 32;
/// Offset of the network header in a DATA frame (no VLAN tag).
const PAYLOAD_AT: usize = 20;
/// Offset of the flags byte in a DATA frame.
const FLAGS_AT: usize = 15;
/// Bytes after the network header that name a payload: source end, VC, index (LE u32).
const ID_LEN: u16 = 6;
/// Largest data part of a payload: frames of 64..=512 bytes.
const MAX_DATA: u16 = MFS - DATA_OVERHEAD as u16;
/// Sequence numbers and credit counters are 20 bits.
const MASK: u32 = Seq::MASK;

/// Length of the DATA frame carrying `data` bytes after the network header, FCS included.
fn frame_len(data: u16) -> usize {
    (DATA_OVERHEAD + usize::from(data)).max(64)
}

/// The payload (network header and data) of frame `index` submitted by `src` on `vc`.
fn payload(src: usize, vc: u8, index: u32, data: u16) -> Vec<u8> {
    let mut p = Vec::with_capacity(8 + usize::from(data));
    p.extend_from_slice(&[0, 1, 0, 0, 0, 0]);
    p.extend_from_slice(&data.to_be_bytes());
    p.push(src as u8);
    p.push(vc);
    p.extend_from_slice(&index.to_le_bytes());
    let mut x = (index.wrapping_mul(0x9E37_79B9) ^ (u32::from(vc) << 8) ^ src as u32) | 1;
    for _ in ID_LEN..data {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p.push(x as u8);
    }
    p
}

/// (source end, VC, index) of a payload built by [`payload`].
fn identify(payload: &[u8]) -> (usize, u8, u32) {
    assert!(
        payload.len() >= 8 + usize::from(ID_LEN),
        "payload too short"
    );
    let idx = u32::from_le_bytes([payload[10], payload[11], payload[12], payload[13]]);
    (usize::from(payload[8]), payload[9], idx)
}

fn vc(v: usize) -> Vc {
    Vc::new(v as u8).expect("VC in range")
}

fn diff20(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & MASK
}

/// LINK-5-1: the cost of a frame of `len` bytes.
fn cost(len: usize, overhead: u16, credit_size: u16) -> u32 {
    (len + usize::from(overhead)).div_ceil(usize::from(credit_size)) as u32
}

// ---------------------------------------------------------------------------------------------
// Reference model

/// The knobs of one end's configuration that proptest draws.
#[derive(Clone, Debug)]
struct EndKnobs {
    credit_size: u16,
    /// Credits granted per VC beyond the cost of the largest frame.
    slack: [u32; 3],
    replay_max_frames: u32,
    window_extra: u32,
    replay_max_bytes: u32,
    ack_spacing: u32,
    ack_timer: u64,
    replay_timer: u64,
    replay_count_max: u8,
    cf_min_credits: u32,
    cf_min_interval: u64,
    cf_max_interval: u64,
    cc_interval: u64,
    init_interval: u64,
}

fn end_knobs() -> impl Strategy<Value = EndKnobs> {
    (
        (
            prop_oneof![Just(32u16), Just(64u16)],
            proptest::array::uniform3(0u32..=24),
            1u32..=8,
            0u32..=8,
            512u32..=2048,
        ),
        (64u32..=2048, 50u64..=1000, 1500u64..=5000, 1u8..=3),
        (
            1u32..=8,
            0u64..=200,
            500u64..=3000,
            2000u64..=10_000,
            500u64..=2000,
        ),
    )
        .prop_map(
            |(
                (credit_size, slack, replay_max_frames, window_extra, replay_max_bytes),
                (ack_spacing, ack_timer, replay_timer, replay_count_max),
                (cf_min_credits, cf_min_interval, cf_max_interval, cc_interval, init_interval),
            )| EndKnobs {
                credit_size,
                slack,
                replay_max_frames,
                window_extra,
                replay_max_bytes,
                ack_spacing,
                ack_timer,
                replay_timer,
                replay_count_max,
                cf_min_credits,
                cf_min_interval,
                cf_max_interval,
                cc_interval,
                init_interval,
            },
        )
}

/// A small configuration for end `end`: replay buffer of 1..=8 frames and 512..=2048 bytes,
/// grants of one to a few largest frames, short timers. Both ends share the VCs, the MFS and
/// the credit overhead (which INIT does not carry).
fn build_config(end: usize, vcs: u8, overhead: u16, k: &EndKnobs) -> Config {
    let largest = cost(usize::from(MFS), overhead, k.credit_size);
    let mut rx_credits = [0u32; 8];
    for (v, c) in rx_credits.iter_mut().take(usize::from(vcs)).enumerate() {
        *c = largest + k.slack[v];
    }
    let ns = Duration::from_nanos;
    Config {
        mac: MacAddr([0x02, 0, 0, 0, 0, 1 + end as u8]),
        vlan: None,
        vcs,
        credit_size: k.credit_size,
        rx_credits,
        credit_overhead: overhead,
        mfs: MFS,
        llr_window: k.replay_max_frames + k.window_extra,
        replay_max_frames: k.replay_max_frames,
        replay_max_bytes: k.replay_max_bytes,
        ack_spacing: k.ack_spacing,
        ack_timer: ns(k.ack_timer),
        replay_timer: ns(k.replay_timer),
        replay_count_max: k.replay_count_max,
        cf_min_credits: k.cf_min_credits,
        cf_min_interval: ns(k.cf_min_interval),
        cf_max_interval: ns(k.cf_max_interval),
        cc_interval: ns(k.cc_interval),
        init_interval: ns(k.init_interval),
        tx_queue_frames: 256,
        tx_queue_bytes: 64 * 1024,
        nonce_seed: end as u64 + 1,
        ..Config::default()
    }
}

/// What the link must guarantee: the frames submitted, per end and VC (their data lengths; the
/// bytes follow from [`payload`]). The configurations of both ends ride along.
#[derive(Clone, Debug)]
struct Model {
    cfg: [Config; 2],
    /// When set, every credit counter starts `4 * wrap` short of 2^20 (see [`Sut::new`]).
    wrap: Option<u32>,
    /// The upper layers take their events only in `PollEvents` steps (and at rest).
    lazy: bool,
    submitted: [Vec<Vec<u16>>; 2],
}

impl Model {
    fn vcs(&self) -> usize {
        usize::from(self.cfg[0].vcs)
    }
}

/// One step of a test case. `end` is 0 (A) or 1 (B); `dir` is the wire from end `dir`.
#[derive(Clone, Debug)]
enum Step {
    /// The upper layer of `end` submits a frame with `data` bytes after the network header.
    Submit { end: usize, vc: usize, data: u16 },
    /// `end` puts up to `frames` frames on its wire.
    Transmit { end: usize, frames: usize },
    /// The next `frames` frames of the wire arrive.
    Deliver { dir: usize, frames: usize },
    /// The next frame of the wire vanishes.
    Drop { dir: usize },
    /// The next frame of the wire arrives with one bit flipped (a bad FCS).
    Corrupt { dir: usize, bit: u16 },
    /// A copy of the next frame of the wire arrives; the frame stays next.
    Duplicate { dir: usize },
    /// The first control frame on the wire vanishes.
    DropControl { dir: usize },
    /// Every CF and CC frame on the wire vanishes.
    DropCredit { dir: usize },
    /// Time passes; expired timers run.
    Advance { ns: u64 },
    /// Time jumps to the earliest deadline of either end; expired timers run.
    NextTimer,
    /// Every frame is sent and delivered at once, time jumps to the next deadline, and again
    /// every frame is sent and delivered; with `drop_credit`, CF and CC frames vanish meanwhile.
    Settle { drop_credit: bool },
    /// The upper layer of `end` gives back up to `n` delivered frames, starting at `pick`.
    Release { end: usize, pick: usize, n: usize },
    /// `end`'s transmitter loses `credits` credits of `vc` (`Link::inject_credit_leak`).
    Leak { end: usize, vc: usize, credits: u32 },
    /// The physical link of end 0, end 1 or (2) both goes down and up again; when both, the
    /// frames in flight are lost.
    Bounce { which: usize },
    /// The upper layer of `end` takes up to `n` events (with `Model::lazy`; otherwise it takes
    /// every event at once).
    PollEvents { end: usize, n: usize },
}

/// The steps a profile draws, and what it expects at rest.
trait Profile: 'static {
    /// No faults at all: nothing lost, replayed, NACKed or recovered.
    const CLEAN: bool;
    /// No fault but lost CF/CC frames and leaks: the CC recovers exactly what leaked.
    const EXACT_RECOVERY: bool;
    fn steps(vcs: usize) -> BoxedStrategy<Step>;
}

fn submit(vcs: usize) -> impl Strategy<Value = Step> {
    (0..2usize, 0..vcs, ID_LEN..=MAX_DATA).prop_map(|(end, vc, data)| Step::Submit {
        end,
        vc,
        data,
    })
}

fn transmit() -> impl Strategy<Value = Step> {
    (0..2usize, 1..=4usize).prop_map(|(end, frames)| Step::Transmit { end, frames })
}

fn deliver() -> impl Strategy<Value = Step> {
    (0..2usize, 1..=4usize).prop_map(|(dir, frames)| Step::Deliver { dir, frames })
}

fn poll_events() -> impl Strategy<Value = Step> {
    (0..2usize, 1..=4usize).prop_map(|(end, n)| Step::PollEvents { end, n })
}

fn release() -> impl Strategy<Value = Step> {
    (0..2usize, 0..64usize, 1..=4usize).prop_map(|(end, pick, n)| Step::Release { end, pick, n })
}

/// A few credits, or up to 2^18 at once so that the 20-bit counters wrap within a case.
fn leak(vcs: usize) -> impl Strategy<Value = Step> {
    let credits = prop_oneof![3 => 1..=16u32, 1 => (1u32 << 16)..=(1 << 18)];
    (0..2usize, 0..vcs, credits).prop_map(|(end, vc, credits)| Step::Leak { end, vc, credits })
}

/// No faults; time moves only through `Settle`.
struct Clean;

impl Profile for Clean {
    const CLEAN: bool = true;
    const EXACT_RECOVERY: bool = true;
    fn steps(vcs: usize) -> BoxedStrategy<Step> {
        prop_oneof![
            15 => submit(vcs),
            15 => transmit(),
            25 => deliver(),
            10 => release(),
            6 => poll_events(),
            3 => Just(Step::Settle { drop_credit: false }),
        ]
        .boxed()
    }
}

/// Lost CF and CC frames and credit leaks; time moves only through `Settle`.
struct CreditFaults;

impl Profile for CreditFaults {
    const CLEAN: bool = false;
    const EXACT_RECOVERY: bool = true;
    fn steps(vcs: usize) -> BoxedStrategy<Step> {
        prop_oneof![
            15 => submit(vcs),
            15 => transmit(),
            25 => deliver(),
            12 => release(),
            6 => poll_events(),
            4 => any::<bool>().prop_map(|drop_credit| Step::Settle { drop_credit }),
            4 => (0..2usize).prop_map(|dir| Step::DropCredit { dir }),
            4 => leak(vcs),
        ]
        .boxed()
    }
}

/// Every fault of the wire, time advances of any length, credit leaks; no bounce.
struct WireFaults;

impl Profile for WireFaults {
    const CLEAN: bool = false;
    const EXACT_RECOVERY: bool = false;
    fn steps(vcs: usize) -> BoxedStrategy<Step> {
        prop_oneof![
            12 => submit(vcs),
            14 => transmit(),
            20 => deliver(),
            5 => (0..2usize).prop_map(|dir| Step::Drop { dir }),
            5 => (0..2usize, any::<u16>()).prop_map(|(dir, bit)| Step::Corrupt { dir, bit }),
            4 => (0..2usize).prop_map(|dir| Step::Duplicate { dir }),
            5 => (0..2usize).prop_map(|dir| Step::DropControl { dir }),
            8 => (1..=6000u64).prop_map(|ns| Step::Advance { ns }),
            8 => Just(Step::NextTimer),
            3 => Just(Step::Settle { drop_credit: false }),
            8 => release(),
            5 => poll_events(),
            2 => leak(vcs),
        ]
        .boxed()
    }
}

/// Every fault of [`WireFaults`] and physical link bounces of either end or both.
struct Restarts;

impl Profile for Restarts {
    const CLEAN: bool = false;
    const EXACT_RECOVERY: bool = false;
    fn steps(vcs: usize) -> BoxedStrategy<Step> {
        prop_oneof![
            12 => submit(vcs),
            14 => transmit(),
            20 => deliver(),
            2 => (0..2usize).prop_map(|dir| Step::Drop { dir }),
            2 => (0..2usize, any::<u16>()).prop_map(|(dir, bit)| Step::Corrupt { dir, bit }),
            2 => (0..2usize).prop_map(|dir| Step::Duplicate { dir }),
            2 => (0..2usize).prop_map(|dir| Step::DropControl { dir }),
            4 => (1..=3000u64).prop_map(|ns| Step::Advance { ns }),
            3 => Just(Step::NextTimer),
            3 => Just(Step::Settle { drop_credit: false }),
            8 => release(),
            5 => poll_events(),
            1 => leak(vcs),
            8 => (0..3usize).prop_map(|which| Step::Bounce { which }),
        ]
        .boxed()
    }
}

/// The state machine of one profile.
struct LinkTest<P>(PhantomData<P>);

impl<P: Profile> ReferenceStateMachine for LinkTest<P> {
    type State = Model;
    type Transition = Step;

    fn init_state() -> BoxedStrategy<Model> {
        let wrap = proptest::option::of(1u32..=32);
        (
            1u8..=3,
            0u16..=64,
            end_knobs(),
            end_knobs(),
            wrap,
            any::<bool>(),
        )
            .prop_map(|(vcs, overhead, a, b, wrap, lazy)| Model {
                cfg: [
                    build_config(0, vcs, overhead, &a),
                    build_config(1, vcs, overhead, &b),
                ],
                wrap,
                lazy,
                submitted: [
                    vec![Vec::new(); usize::from(vcs)],
                    vec![Vec::new(); usize::from(vcs)],
                ],
            })
            .boxed()
    }

    fn transitions(state: &Model) -> BoxedStrategy<Step> {
        P::steps(state.vcs())
    }

    fn apply(mut state: Model, step: &Step) -> Model {
        if let Step::Submit { end, vc, data } = *step {
            state.submitted[end][vc].push(data);
        }
        state
    }

    fn preconditions(state: &Model, step: &Step) -> bool {
        match *step {
            Step::Submit { vc, .. } | Step::Leak { vc, .. } => vc < state.vcs(),
            _ => true,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// System under test

/// A frame on the wire.
#[derive(Clone)]
struct Flight {
    kind: FrameKind,
    bytes: Vec<u8>,
}

const DELIVERED: u8 = 1;
const UNKNOWN: u8 = 2;

/// What was observed of the frames one end submitted on one VC.
#[derive(Default)]
struct Stream {
    /// Per index: DELIVERED and/or UNKNOWN.
    status: Vec<u8>,
    /// Frames delivered (each at most once) and their bytes on the wire.
    delivered: u64,
    delivered_bytes: u64,
    last_delivered: Option<u32>,
    /// Frames reported of unknown fate.
    lost: u64,
    last_lost: Option<u32>,
    /// New DATA frames sent: always the first `sent` submitted.
    sent: u32,
}

impl Stream {
    fn status(&mut self, index: u32) -> &mut u8 {
        let i = index as usize;
        if self.status.len() <= i {
            self.status.resize(i + 1, 0);
        }
        &mut self.status[i]
    }

    /// True when every frame before `index` was delivered or reported of unknown fate.
    fn resolved_before(&self, index: u32) -> bool {
        (0..index as usize).all(|j| self.status.get(j).is_some_and(|s| *s != 0))
    }
}

/// Whether the receiver of an end has sent a NACK since it last accepted a frame, whether a
/// frame has since shown that a new replay lost the expected frame again (LINK-4-8), and how far
/// ahead of the expected number the last gap frame was (0: none since the frame that made the
/// NACK due).
#[derive(Clone, Copy, Default)]
struct NackState {
    sent: bool,
    renack: bool,
    ahead: u32,
}

/// When the timers of an end last ran, to check that `poll_timeout` never skips a deadline.
#[derive(Clone, Copy, Default)]
struct Due {
    /// When the oldest frame accepted since the last ACK or NACK was accepted (LINK-4-2).
    unacked_since: Option<u64>,
    /// Last CF (or UP) and last CC (or UP) (LINK-5-5, LINK-5-7).
    last_cf: u64,
    last_cc: u64,
    /// Last INIT of this initialisation; `None` when one is due at once (LINK-2-1).
    last_init: Option<u64>,
}

/// A delivered frame's claim on its receive buffer, with the link-up (counted from 1) during
/// which it was delivered.
struct Claim {
    release: Release,
    up: u64,
}

/// What the checks know of one end: its state as the inputs and outputs show it, and what its
/// upper layer learnt from the events.
#[derive(Default)]
struct End {
    /// The sequence number of the next new DATA frame, and every DATA frame sent since UP as
    /// first sent, by sequence number (LINK-3-1, LINK-3-8, LINK-6-1).
    next_seq: u32,
    sent: BTreeMap<u32, Vec<u8>>,
    /// Sequence number of every frame this end ever sent, by (VC, index).
    seq_of: BTreeMap<(usize, u32), u32>,
    /// The peer's nonce this end went UP with; the echo nonces of the INIT_ECHOs it sent since
    /// it entered INIT; whether, since UP, it sent the INIT_ECHO of that nonce or received a
    /// frame only an UP peer sends (LINK-2-8).
    peer_nonce: Option<u32>,
    echoed: Vec<u32>,
    peer_ready: bool,
    /// Replays since acknowledgement progress (LINK-3-7).
    replays: u32,
    /// The sequence number the next retransmission must carry (LINK-3-5).
    replay_next: u32,
    nack: NackState,
    due: Due,
    /// Credits leaked per VC, in all and since UP.
    leaked: [u64; 8],
    leaked_since_up: [u32; 8],
    // What the events told.
    up: bool,
    ups: u64,
    downs: u64,
    /// The last event was a link-down or a frame of unknown fate.
    after_down: bool,
    /// Sequence number of the next delivery since the last link-up event.
    rx_seq: u32,
    /// Sequence number of the last frame of unknown fate since the last link-down event.
    last_lost_seq: Option<u32>,
    /// Claims of frames delivered and not yet released.
    claims: Vec<Claim>,
    /// Every event was taken since the last input.
    drained: bool,
}

/// An event with its payload copied out of the link.
enum Ev {
    Up(Agreed),
    Down,
    Delivered {
        vc: Vc,
        seq: u32,
        payload: Vec<u8>,
        release: Release,
    },
    Lost {
        vc: Vc,
        reason: LostReason,
        payload: Vec<u8>,
    },
}

/// Two link ends, the wire between them and everything observed so far.
struct Sut {
    links: [Link; 2],
    ends: [End; 2],
    cfg: [Config; 2],
    vcs: usize,
    now: u64,
    /// Frames in flight from end 0 and from end 1, oldest first.
    wire: [VecDeque<Flight>; 2],
    /// [sender][vc].
    streams: [Vec<Stream>; 2],
    /// Events wait for `PollEvents` steps, unless `eager` (while settling).
    lazy: bool,
    eager: bool,
    /// The counters at the last check.
    prev: RefCell<[Counters; 2]>,
    buf: Vec<u8>,
}

fn model_payload(model: &Model, src: usize, v: usize, index: u32) -> Vec<u8> {
    let lens = &model.submitted[src][v];
    let data = *lens
        .get(index as usize)
        .unwrap_or_else(|| panic!("frame {index} of end {src} VC {v} was never submitted"));
    payload(src, v as u8, index, data)
}

impl Sut {
    fn new(model: &Model) -> Self {
        let links = [
            Link::new(model.cfg[0].clone()).expect("valid config"),
            Link::new(model.cfg[1].clone()).expect("valid config"),
        ];
        let vcs = model.vcs();
        let end = || End {
            drained: true,
            ..End::default()
        };
        let mut sut = Sut {
            links,
            ends: [end(), end()],
            cfg: model.cfg.clone(),
            vcs,
            now: 0,
            wire: [VecDeque::new(), VecDeque::new()],
            streams: [
                (0..vcs).map(|_| Stream::default()).collect(),
                (0..vcs).map(|_| Stream::default()).collect(),
            ],
            lazy: model.lazy,
            eager: false,
            prev: RefCell::new([Counters::default(), Counters::default()]),
            buf: vec![0; 2048],
        };
        for e in 0..2 {
            sut.call(e, model, |l| l.physical_up(Instant::ZERO));
        }
        sut.settle_until(
            model,
            |s| s.ends[0].up && s.ends[1].up,
            "the link did not come up",
        );
        if let Some(w) = model.wrap {
            // Four leaks, each recovered by a CC (LINK-5-8), bring every credit counter of both
            // sides to 2^20 - 4w: the frames of the case make them wrap.
            for _ in 0..4 {
                for e in 0..2 {
                    for v in 0..vcs {
                        sut.leak(e, v, (1 << 18) - w);
                    }
                }
                sut.settle_until(
                    model,
                    |s| {
                        (0..2).all(|e| {
                            (0..s.vcs).all(|v| {
                                let (consumed, seen) = s.links[e].tx_counters(vc(v));
                                consumed == seen && s.links[1 - e].rx_counters(vc(v)).0 == consumed
                            })
                        })
                    },
                    "the leaked credits were not recovered",
                );
            }
        }
        sut
    }

    fn t(&self) -> Instant {
        Instant::from_nanos(self.now)
    }

    /// Runs `input` on end `e` and follows its state: UP entered or left, a frame accepted, the
    /// replay count (LINK-3-7, LINK-3-13: FLUSH exactly when a replay would make the replays
    /// without acknowledgement progress exceed `replay_count_max`). Then the upper layer takes the
    /// events, unless it is lazy.
    fn call(&mut self, e: usize, model: &Model, input: impl FnOnce(&mut Link)) {
        let l = &self.links[e];
        let replays = |l: &Link| l.counters().replays_by_nack + l.counters().replay_timeouts;
        let (up0, frames0, flushes0, replays0, expected0, nonce0) = (
            l.is_up(),
            l.replay_frames(),
            l.counters().flushes,
            replays(l),
            l.expected_seq(),
            l.nonce(),
        );
        input(&mut self.links[e]);
        let l = &self.links[e];
        let st = &mut self.ends[e];
        let up1 = l.is_up();
        st.drained = false;
        if l.nonce() != nonce0 {
            // A new initialisation: INIT is due at once (LINK-2-1).
            st.due.last_init = None;
            st.echoed.clear();
        }
        if !up0 && up1 {
            // LINK-2-5: sequence numbers and credit counters reset on entering UP.
            assert_eq!(
                l.next_seq().value(),
                0,
                "LINK-2-5 end {e} TX sequence number"
            );
            assert_eq!(l.expected_seq().value(), 0, "LINK-2-5 end {e} RX expected");
            for v in 0..self.vcs {
                assert_eq!(l.tx_counters(vc(v)), (0, 0), "LINK-2-5 end {e} TX credits");
                assert_eq!(l.rx_counters(vc(v)), (0, 0), "LINK-2-5 end {e} RX credits");
            }
            st.next_seq = 0;
            st.sent.clear();
            st.peer_nonce = None;
            st.peer_ready = false;
            st.nack = NackState::default();
            st.leaked_since_up = [0; 8];
            st.due = Due {
                unacked_since: None,
                last_cf: self.now,
                last_cc: self.now,
                last_init: None,
            };
        } else if up0 && !up1 {
            // Nothing sent before may be retransmitted (LINK-6-1).
            st.sent.clear();
            st.nack = NackState::default();
            st.due.unacked_since = None;
        } else if up1 && l.expected_seq() != expected0 {
            // A frame accepted (LINK-4-1): back to SEND_ACKS, an ACK now owed (LINK-4-2).
            st.nack = NackState::default();
            st.due.unacked_since.get_or_insert(self.now);
        }
        let started = (replays(l) - replays0) as u32;
        let max = u32::from(self.cfg[e].replay_count_max);
        if l.counters().flushes > flushes0 {
            // LINK-3-13: the count had reached the maximum; the request for one more replay
            // (counted by the replay counters) turned into a FLUSH.
            assert_eq!(
                st.replays + started,
                max + 1,
                "LINK-3-13 end {e} flushed after {} replays without progress",
                st.replays + started
            );
            st.replays = 0;
        } else if !up0 || !up1 {
            st.replays = 0;
        } else if l.replay_frames() < frames0 {
            st.replays = started;
        } else {
            st.replays += started;
        }
        if up1 && l.counters().flushes == flushes0 {
            // LINK-3-5, LINK-3-6: a NACK or an expiry (re)starts the replay from the oldest
            // frame; an ACK during a replay lets it go on with the first frame unacknowledged.
            let oldest = l.next_seq().sub(l.replay_frames() as u32);
            if started > 0 && l.replay_frames() > 0 {
                assert_eq!(
                    l.tx_state(),
                    TxState::Replay,
                    "LINK-3-5 end {e} replay started"
                );
                st.replay_next = oldest.value();
            } else if l.replay_frames() < frames0 {
                let behind = oldest.distance_from(Seq::new(st.replay_next));
                if behind < Seq::MAX_WINDOW {
                    st.replay_next = oldest.value();
                }
            }
        }
        if up1 {
            assert!(
                st.replays <= max,
                "LINK-3-7 end {e}: {} replays without progress and no FLUSH",
                st.replays
            );
            assert_eq!(
                u32::from(l.replay_count()),
                st.replays,
                "end {e} replay count"
            );
        }
        if !self.lazy || self.eager {
            self.poll_events(e, usize::MAX, model);
        }
    }

    // ----- events --------------------------------------------------------------------------

    /// The upper layer of `e` takes up to `max` events.
    fn poll_events(&mut self, e: usize, max: usize, model: &Model) {
        for _ in 0..max {
            let ev = match self.links[e].poll_event() {
                None => {
                    self.ends[e].drained = true;
                    return;
                }
                Some(Event::LinkUp(a)) => Ev::Up(a),
                Some(Event::LinkDown(_)) => Ev::Down,
                // Notices change no frame's fate; the counters keep them.
                Some(Event::Notice(_)) => continue,
                Some(Event::Delivered {
                    vc,
                    seq,
                    payload,
                    release,
                }) => Ev::Delivered {
                    vc,
                    seq: seq.value(),
                    payload: payload.to_vec(),
                    release,
                },
                Some(Event::Lost {
                    vc,
                    reason,
                    payload,
                }) => Ev::Lost {
                    vc,
                    reason,
                    payload: payload.to_vec(),
                },
            };
            match ev {
                Ev::Up(agreed) => self.on_up(e, &agreed),
                Ev::Down => {
                    let st = &mut self.ends[e];
                    assert!(st.up, "end {e}: LinkDown while not UP");
                    st.up = false;
                    st.downs += 1;
                    st.after_down = true;
                    st.last_lost_seq = None;
                }
                Ev::Delivered {
                    vc,
                    seq,
                    payload,
                    release,
                } => self.on_delivered(e, vc, seq, &payload, release, model),
                Ev::Lost {
                    vc,
                    reason,
                    payload,
                } => self.on_lost(e, vc, reason, &payload),
            }
        }
    }

    fn on_up(&mut self, e: usize, agreed: &Agreed) {
        let st = &mut self.ends[e];
        assert!(!st.up, "end {e}: LinkUp while UP");
        st.up = true;
        st.ups += 1;
        st.after_down = false;
        st.rx_seq = 0;
        let (me, peer) = (&self.cfg[e], &self.cfg[1 - e]);
        // LINK-2-4: the agreed parameters.
        assert_eq!(agreed.vcs, me.vcs.min(peer.vcs), "LINK-2-4 vcs");
        assert_eq!(agreed.mfs, me.mfs.min(peer.mfs), "LINK-2-4 mfs");
        let window = me.llr_window.min(peer.llr_window);
        assert_eq!(agreed.window, window, "LINK-2-4 window");
        assert_eq!(
            agreed.tx_credit_size, peer.credit_size,
            "LINK-2-4 credit size"
        );
        let grants = &peer.rx_credits[..self.vcs];
        assert_eq!(&agreed.tx_credits[..self.vcs], grants, "LINK-2-4 grants");
    }

    fn on_delivered(
        &mut self,
        e: usize,
        vc: Vc,
        seq: u32,
        payload: &[u8],
        release: Release,
        model: &Model,
    ) {
        // What the sender reported is known once its upper layer took every event.
        let reports_known = self.ends[1 - e].drained;
        let st = &mut self.ends[e];
        assert!(st.up, "end {e} delivered a frame while not UP");
        st.after_down = false;
        // LINK-4-1: the expected sequence number, advanced by one per frame accepted.
        assert_eq!(seq, st.rx_seq & MASK, "LINK-4-1 end {e} accepted seq");
        st.rx_seq += 1;
        let (src, pvc, index) = identify(payload);
        let v = vc.index();
        assert_eq!(src, 1 - e, "end {e} delivered a frame it did not receive");
        assert_eq!(usize::from(pvc), v, "frame delivered on the wrong VC");
        let want = model_payload(model, src, v, index);
        assert_eq!(payload, &want[..], "delivered bytes differ");
        let s = &mut self.streams[src][v];
        // LINK-4-1, LINK-4-5: once, in order, nothing skipped that was not reported.
        assert!(
            *s.status(index) & DELIVERED == 0,
            "frame {index} of end {src} VC {v} delivered twice"
        );
        assert!(
            s.last_delivered.is_none_or(|last| last < index),
            "frame {index} of end {src} VC {v} delivered after frame {:?}",
            s.last_delivered
        );
        assert!(
            !reports_known || s.resolved_before(index),
            "frame {index} of end {src} VC {v} delivered but an earlier one was neither \
             delivered nor reported: {:?}",
            s.status
        );
        *s.status(index) |= DELIVERED;
        s.last_delivered = Some(index);
        s.delivered += 1;
        let len = frame_len(model.submitted[src][v][index as usize]);
        s.delivered_bytes += len as u64;
        // LINK-5-1 at the RX: its own credit size.
        let me = &self.cfg[e];
        assert_eq!(release.vc(), vc);
        let price = cost(len, me.credit_overhead, me.credit_size);
        assert_eq!(release.credits(), price, "LINK-5-1 cost at the RX");
        let up = st.ups;
        st.claims.push(Claim { release, up });
    }

    fn on_lost(&mut self, e: usize, vc: Vc, reason: LostReason, payload: &[u8]) {
        assert_eq!(reason, LostReason::UnknownFate, "end {e}: {reason:?}");
        let st = &mut self.ends[e];
        assert!(
            st.after_down,
            "end {e}: a frame of unknown fate reported other than right after a link-down"
        );
        let (src, pvc, index) = identify(payload);
        let v = vc.index();
        assert_eq!(src, e, "end {e} reported a frame it did not submit");
        assert_eq!(usize::from(pvc), v, "frame reported on the wrong VC");
        // LINK-6-1: in sequence order.
        let seq = *st
            .seq_of
            .get(&(v, index))
            .unwrap_or_else(|| panic!("end {e} reported frame {index} it never sent"));
        assert!(
            st.last_lost_seq.is_none_or(|last| last < seq),
            "LINK-6-1 end {e}: seq {seq} reported after seq {:?}",
            st.last_lost_seq
        );
        st.last_lost_seq = Some(seq);
        // What the receiver delivered is known once its upper layer took every event.
        let deliveries_known = self.ends[1 - e].drained;
        let s = &mut self.streams[e][v];
        assert!(
            *s.status(index) & UNKNOWN == 0,
            "frame {index} of end {e} VC {v} reported twice"
        );
        assert!(
            s.last_lost.is_none_or(|last| last < index),
            "frames of unknown fate out of order"
        );
        assert!(
            !deliveries_known || s.resolved_before(index),
            "frame {index} of end {e} VC {v} reported of unknown fate but an earlier one was \
             neither delivered nor reported: {:?}",
            s.status
        );
        *s.status(index) |= UNKNOWN;
        s.last_lost = Some(index);
        s.lost += 1;
    }

    // ----- wire ----------------------------------------------------------------------------

    /// `e` puts up to `max` frames on its wire; returns how many.
    fn transmit(&mut self, e: usize, max: usize, model: &Model) -> usize {
        let mut n = 0;
        while n < max {
            let before: Vec<(u32, u32)> = (0..self.vcs)
                .map(|v| self.links[e].tx_counters(vc(v)))
                .collect();
            let now = self.t();
            let replaying = self.links[e].tx_state() == TxState::Replay;
            let t = match self.links[e].poll_transmit(now, &mut self.buf) {
                Ok(Some(t)) => t,
                Ok(None) => break,
                Err(err) => panic!("end {e}: {err}"),
            };
            let bytes = self.buf[..t.len].to_vec();
            let after: Vec<(u32, u32)> = (0..self.vcs)
                .map(|v| self.links[e].tx_counters(vc(v)))
                .collect();
            match t.data {
                None => {
                    assert_ne!(t.kind, FrameKind::Data);
                    // LINK-5-9: control frames consume no credit.
                    assert_eq!(before, after, "LINK-5-9 a control frame consumed credits");
                    self.on_control_sent(e, &bytes);
                }
                Some((dvc, seq, replay)) => {
                    assert_eq!(t.kind, FrameKind::Data);
                    let sent = Sent {
                        vc: dvc.index(),
                        seq: seq.value(),
                        replay,
                        replaying,
                        bytes: &bytes,
                    };
                    self.on_data_sent(e, &sent, &before, &after, model);
                }
            }
            self.wire[e].push_back(Flight {
                kind: t.kind,
                bytes,
            });
            n += 1;
        }
        n
    }

    /// Checks what an ACK, NACK, CF, CC or INIT carries when `e` sends it.
    fn on_control_sent(&mut self, e: usize, bytes: &[u8]) {
        let repr = FrameRepr::parse_bytes(bytes, usize::from(MFS)).expect("a valid frame");
        let l = &self.links[e];
        let st = &mut self.ends[e];
        let last_good = l.expected_seq().sub(1).value();
        match repr.link {
            LinkFrame::Ack(s) => {
                // LINK-4-2: the last accepted sequence number.
                assert_eq!(s.value(), last_good, "LINK-4-2 end {e} ACK");
                st.due.unacked_since = None;
            }
            LinkFrame::Nack(s) => {
                // LINK-4-3: the last good sequence number, one NACK; LINK-4-7, LINK-4-8: one more
                // only when the numbers went back since (a new replay lost the expected frame).
                assert_eq!(s.value(), last_good, "LINK-4-3 end {e} NACK");
                assert!(
                    !st.nack.sent || st.nack.renack,
                    "LINK-4-8 end {e} sent another NACK for seq {last_good}"
                );
                st.nack = NackState {
                    sent: true,
                    renack: false,
                    ahead: st.nack.ahead,
                };
                st.due.unacked_since = None;
            }
            LinkFrame::CreditUpdate(c) => {
                // LINK-5-5: freed[v] of every VC.
                for (v, value) in c.counters.iter().enumerate() {
                    let want = (v < self.vcs).then(|| l.rx_counters(vc(v)).1);
                    assert_eq!(*value, want, "LINK-5-5 end {e} CF VC {v}");
                }
                st.due.last_cf = self.now;
            }
            LinkFrame::CreditResync(c) => {
                // LINK-5-7: consumed[v] of every VC, and only with the replay buffer empty.
                assert_eq!(
                    l.replay_frames(),
                    0,
                    "LINK-5-7 end {e} CC with frames unacknowledged"
                );
                for (v, value) in c.counters.iter().enumerate() {
                    let want = (v < self.vcs).then(|| l.tx_counters(vc(v)).0);
                    assert_eq!(*value, want, "LINK-5-7 end {e} CC VC {v}");
                }
                st.due.last_cc = self.now;
            }
            LinkFrame::Init(_) => st.due.last_init = Some(self.now),
            LinkFrame::InitEcho { echo_nonce, .. } => {
                st.echoed.push(echo_nonce);
                if l.is_up() && st.peer_nonce == Some(echo_nonce) {
                    st.peer_ready = true;
                }
            }
            _ => {}
        }
    }

    fn on_data_sent(
        &mut self,
        e: usize,
        d: &Sent<'_>,
        before: &[(u32, u32)],
        after: &[(u32, u32)],
        model: &Model,
    ) {
        // LINK-2-7: DATA only while UP; LINK-2-8: and once the peer is UP too, or will be
        // before the frame reaches it.
        assert!(
            self.links[e].is_up(),
            "LINK-2-7 end {e} sent DATA while not UP"
        );
        assert!(
            self.ends[e].peer_ready,
            "LINK-2-8 end {e} sent DATA before the peer could take it"
        );
        let (src, pvc, index) = identify(&d.bytes[PAYLOAD_AT..]);
        let (v, seq, bytes) = (d.vc, d.seq, d.bytes);
        assert_eq!(
            (src, usize::from(pvc)),
            (e, v),
            "DATA frame on the wrong VC"
        );
        let l = &self.links[e];
        let st = &mut self.ends[e];
        // LINK-3-5: retransmissions in sequence order, the whole buffer, before any new frame.
        assert_eq!(
            d.replay, d.replaying,
            "LINK-3-5 end {e}: replay {}",
            d.replay
        );
        if d.replay {
            assert_eq!(seq, st.replay_next, "LINK-3-5 end {e} replay order");
            st.replay_next = (seq + 1) & MASK;
            if l.tx_state() != TxState::Replay {
                assert_eq!(
                    l.next_seq().value(),
                    st.replay_next,
                    "LINK-3-5 end {e} replay cut"
                );
            }
            // LINK-5-3: a retransmission is not paid for again.
            assert_eq!(before, after, "LINK-5-3 a retransmission consumed credits");
            // LINK-6-1: only frames sent since UP; LINK-3-8: byte for byte the original but
            // for the REPLAY flag and the FCS.
            let orig = st.sent.get(&seq).unwrap_or_else(|| {
                panic!("end {e} retransmitted seq {seq}, not sent since its last UP (LINK-6-1)")
            });
            assert_eq!(orig.len(), bytes.len(), "LINK-3-8 length");
            for i in 0..bytes.len() - 4 {
                let want = if i == FLAGS_AT {
                    orig[i] | FLAG_REPLAY
                } else {
                    orig[i]
                };
                assert_eq!(bytes[i], want, "LINK-3-8 byte {i} of seq {seq} differs");
            }
            return;
        }
        // LINK-3-1: consecutive sequence numbers from 0 after UP.
        assert_eq!(seq, st.next_seq, "LINK-3-1 end {e}");
        st.next_seq = (seq + 1) & MASK;
        assert_eq!(bytes[FLAGS_AT] & FLAG_REPLAY, 0);
        st.sent.insert(seq, bytes.to_vec());
        st.seq_of.insert((v, index), seq);
        // LINK-6-2: each queue in submission order, across re-initialisations.
        let s = &mut self.streams[e][v];
        assert_eq!(
            index, s.sent,
            "end {e} VC {v} sent frame {index} out of order"
        );
        s.sent += 1;
        let want = model_payload(model, e, v, index);
        assert_eq!(&bytes[PAYLOAD_AT..PAYLOAD_AT + want.len()], &want[..]);
        assert_eq!(
            bytes.len(),
            frame_len(model.submitted[e][v][index as usize])
        );
        // LINK-5-1, LINK-5-2: paid once, at the peer's credit size, within the grant.
        let peer = &self.cfg[1 - e];
        let price = cost(bytes.len(), peer.credit_overhead, peer.credit_size);
        for (w, (b, a)) in before.iter().zip(after).enumerate() {
            let paid = diff20(a.0, b.0);
            assert_eq!(
                paid,
                if w == v { price } else { 0 },
                "LINK-5-2 consumed on VC {w}"
            );
            assert_eq!(a.1, b.1);
        }
        let in_use = diff20(after[v].0, after[v].1);
        assert!(
            in_use <= peer.rx_credits[v],
            "LINK-5-2 end {e} VC {v}: {in_use} credits in use, grant {}",
            peer.rx_credits[v]
        );
    }

    /// The frame `bytes` arrives at the end across wire `dir`; `intact` unless a bit was
    /// flipped.
    fn arrive(&mut self, dir: usize, bytes: &[u8], intact: bool, model: &Model) {
        let to = 1 - dir;
        let now = self.t();
        let repr = if intact {
            FrameRepr::parse_bytes(bytes, usize::from(MFS)).ok()
        } else {
            None
        };
        let link = repr.map(|r| r.link);
        let (rx0, expected) = (self.links[to].rx_state(), self.links[to].expected_seq());
        let window = self.links[to].agreed().map_or(0, |a| a.window);
        match link {
            Some(LinkFrame::Data { header, .. })
                if header.seq != expected
                    && expected.sub(1).distance_from(header.seq) >= window =>
            {
                // A gap frame (LINK-4-3, LINK-4-7, LINK-4-8).
                let ahead = header.seq.distance_from(expected);
                let n = &mut self.ends[to].nack;
                match rx0 {
                    RxState::SendAcks => n.ahead = ahead,
                    RxState::SendNack => n.ahead = n.ahead.max(ahead),
                    RxState::NackSent => {
                        if n.ahead > 0 && ahead <= n.ahead {
                            // LINK-4-8: the numbers went back: a new replay lost the expected
                            // frame again; one more NACK is due.
                            n.renack = true;
                        }
                        n.ahead = ahead;
                    }
                    RxState::Off => {}
                }
            }
            None if !intact && rx0 == RxState::SendAcks => self.ends[to].nack.ahead = 0,
            _ => {}
        }
        let (up0, nonce0) = (self.links[to].is_up(), self.links[to].nonce());
        self.call(to, model, |l| l.handle_frame(now, bytes));
        let l = &self.links[to];
        let up1 = l.is_up();
        let st = &mut self.ends[to];
        match link {
            Some(LinkFrame::InitEcho { echo_nonce, init }) if !up0 && up1 => {
                // LINK-2-3: UP on the echo of the current nonce, with the peer's nonce and
                // parameters it carries.
                assert_eq!(
                    echo_nonce, nonce0,
                    "LINK-2-3 end {to} UP on another nonce's echo"
                );
                let agreed = l.agreed().expect("UP");
                assert_eq!(agreed.tx_credit_size, init.credit_size, "LINK-2-3 end {to}");
                assert_eq!(agreed.tx_credits, init.credits, "LINK-2-3 end {to}");
                st.peer_nonce = Some(init.nonce);
                st.peer_ready = st.echoed.contains(&init.nonce);
            }
            _ if !up0 && up1 => panic!("LINK-2-3 end {to} came UP without an INIT_ECHO"),
            Some(LinkFrame::Init(init)) if up0 => {
                // LINK-2-6: an INIT of another nonce than the one the end went UP with
                // restarts it; one of that nonce does not.
                let restart = st.peer_nonce != Some(init.nonce);
                assert_eq!(up1, !restart, "LINK-2-6 end {to}: INIT, restart {restart}");
            }
            Some(
                LinkFrame::Ack(_)
                | LinkFrame::Nack(_)
                | LinkFrame::CreditUpdate(_)
                | LinkFrame::CreditResync(_)
                | LinkFrame::Data { .. },
            ) if up0 && up1 => st.peer_ready = true,
            _ => {}
        }
    }

    fn deliver(&mut self, dir: usize, frames: usize, model: &Model) {
        for _ in 0..frames {
            let Some(f) = self.wire[dir].pop_front() else {
                return;
            };
            self.arrive(dir, &f.bytes, true, model);
        }
    }

    /// Both ends send everything they have and it all arrives, until both are quiet; with
    /// `drop_credit`, CF and CC frames vanish. The upper layers take every event.
    fn quiesce(&mut self, model: &Model, drop_credit: bool) {
        let eager = std::mem::replace(&mut self.eager, true);
        for e in 0..2 {
            self.poll_events(e, usize::MAX, model);
        }
        for _ in 0..10_000 {
            let sent = self.transmit(0, 1000, model) + self.transmit(1, 1000, model);
            if sent == 0 && self.wire.iter().all(VecDeque::is_empty) {
                self.eager = eager;
                return;
            }
            for dir in 0..2 {
                while let Some(f) = self.wire[dir].pop_front() {
                    let credit =
                        matches!(f.kind, FrameKind::CreditUpdate | FrameKind::CreditResync);
                    if !(drop_credit && credit) {
                        self.arrive(dir, &f.bytes, true, model);
                    }
                }
            }
        }
        panic!(
            "livelock: the ends kept exchanging frames at {} ns without time passing: {}",
            self.now,
            self.describe(model)
        );
    }

    /// Fault-free: every frame delivered at once, time from deadline to deadline, until `done`.
    fn settle_until(&mut self, model: &Model, done: impl Fn(&Self) -> bool, what: &str) {
        for _ in 0..200 {
            self.quiesce(model, false);
            if done(self) {
                return;
            }
            self.next_timer(model);
        }
        panic!("{what} at {} ns: {}", self.now, self.describe(model));
    }

    // ----- time ----------------------------------------------------------------------------

    fn timers(&mut self, model: &Model) {
        let now = self.t();
        for e in 0..2 {
            if self.links[e].poll_timeout().is_some_and(|d| d <= now) {
                self.call(e, model, |l| l.handle_timeout(now));
            }
        }
    }

    /// Time jumps to the earliest deadline; returns whether time moved.
    fn next_timer(&mut self, model: &Model) -> bool {
        for e in 0..2 {
            self.check_deadline(e);
        }
        let next = (0..2).filter_map(|e| self.links[e].poll_timeout()).min();
        let before = self.now;
        if let Some(d) = next {
            self.now = self.now.max(d.as_nanos());
        }
        self.timers(model);
        self.now != before
    }

    /// `poll_timeout` of end `e` is no later than the next ACK (LINK-4-2), CF (LINK-5-5), CC
    /// (LINK-5-7) or INIT (LINK-2-1) the end owes.
    fn check_deadline(&self, e: usize) {
        let l = &self.links[e];
        let c = &self.cfg[e];
        let d = &self.ends[e].due;
        let ns = |x: Duration| x.as_nanos() as u64;
        let Some(deadline) = l.poll_timeout() else {
            return;
        };
        let deadline = deadline.as_nanos();
        let mut owed = Vec::new();
        if l.is_up() {
            if let Some(t) = d.unacked_since {
                owed.push(("LINK-4-2 ACK", t + ns(c.ack_timer)));
            }
            owed.push(("LINK-5-5 CF", d.last_cf + ns(c.cf_max_interval)));
            if l.replay_frames() == 0 {
                owed.push(("LINK-5-7 CC", d.last_cc + ns(c.cc_interval)));
            }
        } else {
            let t = d.last_init.map_or(self.now, |t| t + ns(c.init_interval));
            owed.push(("LINK-2-1 INIT", t));
        }
        for (what, t) in owed {
            assert!(
                deadline <= t.max(self.now),
                "end {e} at {} ns: poll_timeout is {deadline} ns, {what} due at {t} ns",
                self.now
            );
        }
    }

    // ----- upper layer and faults ----------------------------------------------------------

    fn release(&mut self, e: usize, pick: usize, n: usize) {
        for _ in 0..n {
            let claims = &mut self.ends[e].claims;
            if claims.is_empty() {
                return;
            }
            let Claim { release, up } = claims.swap_remove(pick % claims.len());
            let l = &mut self.links[e];
            let current = l.is_up() && up == l.counters().link_ups;
            let (v, credits) = (release.vc(), release.credits());
            let before = l.rx_counters(v);
            l.release(release).expect("a claim the link handed out");
            let after = l.rx_counters(v);
            if current {
                // LINK-5-4: draining adds the cost to freed.
                assert_eq!(after.0, before.0, "release changed received");
                assert_eq!(after.1, (before.1 + credits) & MASK, "LINK-5-4 freed");
            } else {
                // LINK-6-4: the reset freed that buffer already.
                assert_eq!(
                    after, before,
                    "LINK-6-4 a claim from before re-initialisation"
                );
            }
        }
    }

    fn release_all(&mut self) {
        for e in 0..2 {
            let n = self.ends[e].claims.len();
            self.release(e, 0, n);
        }
    }

    fn leak(&mut self, e: usize, v: usize, credits: u32) {
        // LINK-5-8 recovers less than 2^19 credits at once: leak no more than that (with a
        // margin for the credits of frames in flight) before a CC has recovered the last leak.
        let (l, peer) = (&self.links[e], &self.links[1 - e]);
        let outstanding = diff20(l.tx_counters(vc(v)).0, peer.rx_counters(vc(v)).0);
        let room = !peer.is_up() || outstanding + credits < 3 << 17;
        if l.is_up() && room {
            self.links[e].inject_credit_leak(vc(v), credits);
            self.ends[e].leaked[v] += u64::from(credits);
            self.ends[e].leaked_since_up[v] += credits;
        }
    }

    fn bounce(&mut self, which: usize, model: &Model) {
        let ends: &[usize] = match which {
            0 => &[0],
            1 => &[1],
            _ => &[0, 1],
        };
        let now = self.t();
        for &e in ends {
            self.call(e, model, |l| l.physical_down(now));
        }
        if ends.len() == 2 {
            self.wire[0].clear();
            self.wire[1].clear();
        }
        for &e in ends {
            self.call(e, model, |l| l.physical_up(now));
        }
    }

    fn step(&mut self, step: &Step, model: &Model) {
        match *step {
            Step::Submit { end, vc: v, data } => {
                let index = model.submitted[end][v].len() as u32 - 1;
                let p = payload(end, v as u8, index, data);
                self.links[end]
                    .submit(vc(v), &p)
                    .unwrap_or_else(|err| panic!("submit refused: {err}"));
            }
            Step::Transmit { end, frames } => {
                self.transmit(end, frames, model);
            }
            Step::Deliver { dir, frames } => self.deliver(dir, frames, model),
            Step::Drop { dir } => {
                self.wire[dir].pop_front();
            }
            Step::Corrupt { dir, bit } => {
                if let Some(mut f) = self.wire[dir].pop_front() {
                    let bit = usize::from(bit) % (f.bytes.len() * 8);
                    f.bytes[bit / 8] ^= 1 << (bit % 8);
                    self.arrive(dir, &f.bytes, false, model);
                }
            }
            Step::Duplicate { dir } => {
                if let Some(f) = self.wire[dir].front().cloned() {
                    self.arrive(dir, &f.bytes, true, model);
                }
            }
            Step::DropControl { dir } => {
                let control = self.wire[dir]
                    .iter()
                    .position(|f| f.kind != FrameKind::Data);
                if let Some(i) = control {
                    self.wire[dir].remove(i);
                }
            }
            Step::DropCredit { dir } => self.wire[dir]
                .retain(|f| !matches!(f.kind, FrameKind::CreditUpdate | FrameKind::CreditResync)),
            Step::Advance { ns } => {
                self.now += ns;
                self.timers(model);
            }
            Step::NextTimer => {
                self.next_timer(model);
            }
            Step::Settle { drop_credit } => {
                self.quiesce(model, drop_credit);
                self.next_timer(model);
                self.quiesce(model, drop_credit);
            }
            Step::Release { end, pick, n } => self.release(end, pick, n),
            Step::Leak { end, vc, credits } => self.leak(end, vc, credits),
            Step::Bounce { which } => self.bounce(which, model),
            Step::PollEvents { end, n } => self.poll_events(end, n, model),
        }
    }

    // ----- invariants ----------------------------------------------------------------------

    fn check(&self, model: &Model) {
        let drained = self.ends.iter().all(|st| st.drained);
        for e in 0..2 {
            let l = &self.links[e];
            let st = &self.ends[e];
            let c = &self.cfg[e];
            let peer = &self.cfg[1 - e];
            let k = l.counters();
            // LINK-3-3: the replay buffer bounds, now and at their high-water marks.
            let max_frames = c.replay_max_frames.min(c.llr_window.min(peer.llr_window)) as usize;
            let max_bytes = c.replay_max_bytes as usize;
            assert!(
                l.replay_frames() <= max_frames,
                "LINK-3-3 end {e} replay frames"
            );
            assert!(
                l.replay_bytes() <= max_bytes,
                "LINK-3-3 end {e} replay bytes"
            );
            assert!(
                k.replay_frames_max <= max_frames as u64,
                "LINK-3-3 end {e} frames max"
            );
            assert!(
                k.replay_bytes_max <= max_bytes as u64,
                "LINK-3-3 end {e} bytes max"
            );
            let grants: u64 = c.rx_credits.iter().map(|g| u64::from(*g)).sum();
            assert!(
                k.rx_occupied_max_credits <= grants,
                "end {e} receive buffer max"
            );
            for v in 0..self.vcs {
                let occupied = l.rx_occupied(vc(v));
                // LINK-4-6: never beyond the grant; a conformant TX causes no overrun.
                assert!(
                    occupied <= l.rx_grant(vc(v)),
                    "LINK-4-6 end {e} VC {v} occupancy"
                );
                assert_eq!(
                    k.credit_overruns[v], 0,
                    "LINK-4-6 end {e} VC {v} credit overrun"
                );
                if l.is_up() {
                    let (consumed, seen) = l.tx_counters(vc(v));
                    let in_use = diff20(consumed, seen);
                    assert!(
                        in_use <= peer.rx_credits[v] + st.leaked_since_up[v],
                        "LINK-5-2 end {e} VC {v}: {in_use} credits in use"
                    );
                }
                if l.is_up() && drained {
                    // LINK-5-4: occupancy is what was accepted and not drained.
                    let held: u32 = st
                        .claims
                        .iter()
                        .filter(|c| c.up == k.link_ups && c.release.vc().index() == v)
                        .map(|c| c.release.credits())
                        .sum();
                    assert_eq!(occupied, held, "LINK-5-4 end {e} VC {v} occupancy");
                }
            }
            // The counters agree with what was observed.
            let mut sent_total = 0u64;
            let mut delivered = 0u64;
            let mut lost = 0u64;
            let rx = self.links[1 - e].counters();
            for v in 0..self.vcs {
                let s = &self.streams[e][v];
                let lens = &model.submitted[e][v];
                let sent = s.sent as usize;
                let bytes: u64 = lens[..sent].iter().map(|d| frame_len(*d) as u64).sum();
                assert_eq!(
                    k.tx_frames[v],
                    u64::from(s.sent),
                    "end {e} VC {v} tx_frames"
                );
                assert_eq!(k.tx_bytes[v], bytes, "end {e} VC {v} tx_bytes");
                // LINK-6-2: whatever was not sent is still queued, in order.
                let queued_bytes: usize = lens[sent..].iter().map(|d| 8 + usize::from(*d)).sum();
                let queued = (lens.len() - sent, queued_bytes);
                assert_eq!(l.queued(vc(v)), queued, "LINK-6-2 end {e} VC {v} queue");
                if drained {
                    let r = 1 - e;
                    assert_eq!(rx.rx_frames[v], s.delivered, "end {r} VC {v} rx_frames");
                    assert_eq!(rx.rx_bytes[v], s.delivered_bytes, "end {r} VC {v} rx_bytes");
                }
                sent_total += u64::from(s.sent);
                delivered += s.delivered;
                lost += s.lost;
            }
            if drained {
                assert_eq!(st.up, l.is_up(), "end {e}: UP without its event");
                assert_eq!(k.link_ups, st.ups, "end {e} link_ups");
                assert_eq!(k.frames_unknown_fate, lost, "end {e} frames_unknown_fate");
                // Frames acknowledged (sent, not in the buffer, not flushed) were delivered.
                let acked = sent_total - l.replay_frames() as u64 - lost;
                assert!(
                    acked <= delivered,
                    "end {e}: {acked} frames acknowledged, {delivered} delivered"
                );
            }
            monotonic(&self.prev.borrow()[e], k, e);
        }
        *self.prev.borrow_mut() = [
            self.links[0].counters().clone(),
            self.links[1].counters().clone(),
        ];
    }

    // ----- liveness ------------------------------------------------------------------------

    fn at_rest(&self, model: &Model) -> bool {
        (0..2).all(|e| {
            let l = &self.links[e];
            let st = &self.ends[e];
            st.up
                && st.drained
                && st.claims.is_empty()
                && l.is_idle()
                && self.wire[e].is_empty()
                && (0..self.vcs).all(|v| {
                    let (consumed, seen) = l.tx_counters(vc(v));
                    let (received, freed) = l.rx_counters(vc(v));
                    let s = &self.streams[e][v];
                    consumed == seen
                        && received == freed
                        && (0..model.submitted[e][v].len())
                            .all(|i| s.status.get(i).is_some_and(|x| *x != 0))
                })
        })
    }

    /// Stops the faults and drives the link to rest, or fails.
    fn drive_to_rest(&mut self, model: &Model) {
        let start = self.now;
        let mut still = 0;
        // A link comes to rest within some 50 deadlines (about 10 us); 500 leave a wide margin.
        for _ in 0..500 {
            self.quiesce(model, false);
            self.release_all();
            self.quiesce(model, false);
            self.check(model);
            if self.at_rest(model) {
                return;
            }
            if self.next_timer(model) {
                still = 0;
            } else {
                still += 1;
                assert!(
                    still < 4,
                    "at {} ns a deadline stays due that neither handle_timeout nor \
                     poll_transmit clears",
                    self.now
                );
            }
        }
        panic!(
            "not at rest {} ns after the faults stopped: {}",
            self.now - start,
            self.describe(model)
        );
    }

    fn describe(&self, model: &Model) -> String {
        let mut out = String::new();
        for e in 0..2 {
            let l = &self.links[e];
            out += &format!(
                "\nend {e}: up {} tx {:?} rx {:?} idle {} replay {} wire {} claims {}",
                l.is_up(),
                l.tx_state(),
                l.rx_state(),
                l.is_idle(),
                l.replay_frames(),
                self.wire[e].len(),
                self.ends[e].claims.len()
            );
            for v in 0..self.vcs {
                let s = &self.streams[e][v];
                out += &format!(
                    "\n  vc {v}: submitted {} sent {} status {:?} queued {:?} tx {:?} rx {:?}",
                    model.submitted[e][v].len(),
                    s.sent,
                    s.status,
                    l.queued(vc(v)),
                    l.tx_counters(vc(v)),
                    l.rx_counters(vc(v))
                );
            }
            out += &format!("\n  {:?}", l.counters());
        }
        out
    }

    fn final_checks<P: Profile>(&self, model: &Model) {
        for e in 0..2 {
            let l = &self.links[e];
            let st = &self.ends[e];
            let k = l.counters();
            let rx = self.links[1 - e].counters();
            assert_eq!(l.tx_state(), TxState::Advance, "end {e} at rest");
            for v in 0..self.vcs {
                let s = &self.streams[e][v];
                let n = model.submitted[e][v].len();
                assert_eq!(s.sent as usize, n, "end {e} VC {v}: frames left unsent");
                // Exactly once, or of unknown fate.
                let missing: Vec<usize> =
                    (0..n).filter(|&i| s.status[i] & DELIVERED == 0).collect();
                assert!(
                    missing.iter().all(|&i| s.status[i] & UNKNOWN != 0),
                    "end {e} VC {v}: frames {missing:?} neither delivered nor reported"
                );
                // LINK-5-8: CC recovers leaked credits, never more.
                let (recovered, leaked) = (rx.credits_recovered[v], st.leaked[v]);
                let r = 1 - e;
                assert!(
                    recovered <= leaked,
                    "LINK-5-8 end {r} VC {v} recovered {recovered} credits, {leaked} leaked"
                );
                if P::EXACT_RECOVERY {
                    assert_eq!(recovered, leaked, "LINK-5-8 end {r} VC {v} recovered");
                }
            }
            if P::EXACT_RECOVERY {
                // Without frame faults nothing is lost and the link never goes down.
                assert_eq!(st.downs, 0, "end {e} went down");
                assert_eq!(k.frames_unknown_fate, 0, "end {e} frames of unknown fate");
                assert_eq!(k.flushes, 0, "end {e} flushed");
            }
            if P::CLEAN {
                // Without faults and with every frame delivered before time moves: no NACK,
                // no replay, no duplicate, no stale acknowledgement or CF entry.
                assert_eq!(k.nacks_sent, 0, "end {e} sent a NACK");
                assert_eq!(k.replay_timeouts, 0, "end {e} replay timer expired");
                assert_eq!(k.frames_replayed, 0, "end {e} replayed frames");
                assert_eq!(k.duplicates, 0, "end {e} received duplicates");
                assert_eq!(k.stale_acks, 0, "end {e} stale ACKs");
                assert_eq!(k.stale_cf_entries, 0, "end {e} stale CF entries");
                assert_eq!(k.discarded(), 0);
            }
        }
    }
}

/// A DATA frame as `poll_transmit` wrote it.
struct Sent<'a> {
    vc: usize,
    seq: u32,
    replay: bool,
    /// The end was in REPLAY before it wrote the frame.
    replaying: bool,
    bytes: &'a [u8],
}

/// Every counter is at least what it was (link.md §7: they increase monotonically). The
/// counters are compared as the numbers of their `Debug` form, in order, so that every counter
/// is covered, those added later too.
fn monotonic(prev: &Counters, now: &Counters, e: usize) {
    fn numbers(c: &Counters) -> Vec<(String, u64)> {
        let text = format!("{c:?}");
        let mut out = Vec::new();
        let mut field = String::new();
        let mut word = String::new();
        for ch in text.chars().chain([' ']) {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                word.push(ch);
                continue;
            }
            if let Ok(n) = word.parse::<u64>() {
                out.push((field.clone(), n));
            } else if !word.is_empty() {
                field = std::mem::take(&mut word);
            }
            word.clear();
        }
        out
    }
    let (p, n) = (numbers(prev), numbers(now));
    assert_eq!(p.len(), n.len());
    for ((name, a), (_, b)) in p.iter().zip(&n) {
        assert!(b >= a, "end {e}: counter {name} went down from {a} to {b}");
    }
}

impl<P: Profile> StateMachineTest for LinkTest<P> {
    type SystemUnderTest = Sut;
    type Reference = Self;

    fn init_test(model: &Model) -> Sut {
        Sut::new(model)
    }

    fn apply(mut sut: Sut, model: &Model, step: Step) -> Sut {
        sut.step(&step, model);
        sut
    }

    fn check_invariants(sut: &Sut, model: &Model) {
        sut.check(model);
    }

    fn teardown(mut sut: Sut, model: Model) {
        sut.drive_to_rest(&model);
        sut.final_checks::<P>(&model);
    }
}

// ---------------------------------------------------------------------------------------------
// Properties

fn config() -> ProptestConfig {
    // The defaults honour PROPTEST_CASES and PROPTEST_RNG_SEED; without PROPTEST_CASES, 64
    // cases keep the file fast in debug builds.
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x88B5);
    }
    if std::env::var_os("PROPTEST_MAX_SHRINK_TIME").is_none() {
        // A failing case shrinks for at most 10 s.
        config.max_shrink_time = 10_000;
    }
    config.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(
        "proptest-regressions/state_machine.txt",
    )));
    config
}

prop_state_machine! {
    #![proptest_config(config())]

    /// No fault: every frame delivered exactly once, nothing replayed, NACKed or recovered.
    //= type=test
    //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the
    //# MFS are the smaller of the two announced values; the LLR window of each direction is the
    //# smaller of the two windows; the TX of each end uses the credits granted, the credit size and
    //# the credit overhead announced by the peer (its RX's buffer and pricing), and its RX uses its
    //# own.
    //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
    //# sequence number to 0 [...] and every credit counter of both sides to 0.
    //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
    //# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
    //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
    //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an INIT_ECHO for
    //# the peer's current nonce since it last entered INIT, or received an ACK, NACK, CF, CC or
    //# DATA frame since it came UP. (An end comes UP on the peer's INIT_ECHO, possibly before the
    //# peer has the INIT_ECHO that brings it UP; the wire keeps order, so a DATA frame sent after
    //# that INIT_ECHO reaches an UP peer.)
    //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
    //# (modulo 2^20) for every new frame
    //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
    //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold
    //# more than `replay_max_bytes` bytes.
    //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
    //# to the upper layer once, the expected number advanced by one
    //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
    //# accepted since its last ACK or NACK reach ack_spacing.
    //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
    //# VC. [...] A conformant TX never causes this.
    //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
    //# `ceil((len + credit_overhead) / credit_size)` credits
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`.
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
    //# upper layer drains it, the RX MUST add its cost to `freed[v]`.
    //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits,
    //# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a
    //# CF since UP, cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for
    //# no interval, as Table LINK-T2 starts cf_min_interval at a CF sent.)
    //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at
    //# least cc_interval has passed since UP or since its last CC. (A VC that has been without
    //# credit for cc_interval therefore gets a CC as soon as the replay buffer is empty.)
    //# LINK-5-9 Control frames MUST NOT consume credits
    #[test]
    fn clean(sequential 1..=60 => LinkTest<Clean>);

    /// Lost CF and CC frames and leaked credits: credits come back, exactly what leaked is
    /// recovered, nothing is lost.
    //= type=test
    //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the
    //# MFS are the smaller of the two announced values; the LLR window of each direction is the
    //# smaller of the two windows; the TX of each end uses the credits granted, the credit size and
    //# the credit overhead announced by the peer (its RX's buffer and pricing), and its RX uses its
    //# own.
    //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
    //# sequence number to 0 [...] and every credit counter of both sides to 0.
    //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
    //# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
    //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
    //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an INIT_ECHO for
    //# the peer's current nonce since it last entered INIT, or received an ACK, NACK, CF, CC or
    //# DATA frame since it came UP. (An end comes UP on the peer's INIT_ECHO, possibly before the
    //# peer has the INIT_ECHO that brings it UP; the wire keeps order, so a DATA frame sent after
    //# that INIT_ECHO reaches an UP peer.)
    //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
    //# (modulo 2^20) for every new frame
    //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
    //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold
    //# more than `replay_max_bytes` bytes.
    //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
    //# to the upper layer once, the expected number advanced by one
    //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
    //# accepted since its last ACK or NACK reach ack_spacing.
    //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
    //# VC. [...] A conformant TX never causes this.
    //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
    //# `ceil((len + credit_overhead) / credit_size)` credits
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`.
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
    //# upper layer drains it, the RX MUST add its cost to `freed[v]`.
    //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits,
    //# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a
    //# CF since UP, cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for
    //# no interval, as Table LINK-T2 starts cf_min_interval at a CF sent.)
    //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at
    //# least cc_interval has passed since UP or since its last CC. (A VC that has been without
    //# credit for cc_interval therefore gets a CC as soon as the replay buffer is empty.)
    //# LINK-5-9 Control frames MUST NOT consume credits
    //# LINK-5-6 [...] A lost CF is therefore repaired by the next one.
    //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
    //# `received[v]` by less than 2^19, add the difference to both `received[v]` and `freed[v]`
    #[test]
    fn credit_faults(sequential 1..=60 => LinkTest<CreditFaults>);

    /// Dropped, damaged and duplicated frames, lost control frames, time in any steps, leaks.
    //= type=test
    //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the
    //# MFS are the smaller of the two announced values; the LLR window of each direction is the
    //# smaller of the two windows; the TX of each end uses the credits granted, the credit size and
    //# the credit overhead announced by the peer (its RX's buffer and pricing), and its RX uses its
    //# own.
    //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
    //# sequence number to 0 [...] and every credit counter of both sides to 0.
    //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
    //# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
    //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
    //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an INIT_ECHO for
    //# the peer's current nonce since it last entered INIT, or received an ACK, NACK, CF, CC or
    //# DATA frame since it came UP. (An end comes UP on the peer's INIT_ECHO, possibly before the
    //# peer has the INIT_ECHO that brings it UP; the wire keeps order, so a DATA frame sent after
    //# that INIT_ECHO reaches an UP peer.)
    //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
    //# (modulo 2^20) for every new frame
    //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
    //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold
    //# more than `replay_max_bytes` bytes.
    //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
    //# to the upper layer once, the expected number advanced by one
    //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
    //# accepted since its last ACK or NACK reach ack_spacing.
    //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
    //# VC. [...] A conformant TX never causes this.
    //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
    //# `ceil((len + credit_overhead) / credit_size)` credits
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`.
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
    //# upper layer drains it, the RX MUST add its cost to `freed[v]`.
    //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits,
    //# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a
    //# CF since UP, cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for
    //# no interval, as Table LINK-T2 starts cf_min_interval at a CF sent.)
    //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at
    //# least cc_interval has passed since UP or since its last CC. (A VC that has been without
    //# credit for cc_interval therefore gets a CC as soon as the replay buffer is empty.)
    //# LINK-5-9 Control frames MUST NOT consume credits
    //# LINK-5-6 [...] A lost CF is therefore repaired by the next one.
    //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
    //# `received[v]` by less than 2^19, add the difference to both `received[v]` and `freed[v]`
    //# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
    //# frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set, before
    //# any new frame. A NACK or a replay-timer expiry during a replay that has sent a frame
    //# restarts it from the oldest frame.
    //# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer,
    //# restarted whenever an ACK or NACK acknowledges at least one frame and when a replay starts,
    //# and stopped when the buffer empties.
    //# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since
    //# the last acknowledgement progress: the count rises by one when a replay starts and returns
    //# to 0 when an ACK or NACK acknowledges at least one frame, and on entering UP.
    //# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY flag
    //# and the FCS.
    //# LINK-4-3 A damaged frame [...] or a DATA frame whose sequence number is ahead of the
    //# expected one (a gap) MUST make an RX in SEND_ACKS send one NACK carrying the last good
    //# sequence number
    //# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
    //# send another NACK except as LINK-4-8 says
    //# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
    //# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame
    //# that drew the NACK included) shows that a new replay has begun and has lost the expected
    //# frame again: the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3:
    //# 1.2 said "since the last NACK", which left out the gap frame that drew it; Table LINK-T5
    //# remembered it.)
    //# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the expected one
    //# is a duplicate: it MUST be discarded
    //# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a sequence
    //# number is paid for once.
    //# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to
    //# the upper layer, in sequence order, as frames of unknown fate [...] It MUST NOT report them
    //# as delivered and MUST NOT retransmit them after re-initialisation.
    //# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
    //# re-initialisation and be sent after the link is UP again, in order.
    //# LINK-6-3 After FLUSH [...] the end MUST re-initialise [...] and report a link-down event to
    //# the upper layer; on UP it MUST report a link-up event.
    #[test]
    fn wire_faults(sequential 1..=60 => LinkTest<WireFaults>);

    /// All of `wire_faults` and physical link bounces of either end or both.
    //= type=test
    //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the
    //# MFS are the smaller of the two announced values; the LLR window of each direction is the
    //# smaller of the two windows; the TX of each end uses the credits granted, the credit size and
    //# the credit overhead announced by the peer (its RX's buffer and pricing), and its RX uses its
    //# own.
    //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
    //# sequence number to 0 [...] and every credit counter of both sides to 0.
    //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
    //# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
    //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
    //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an INIT_ECHO for
    //# the peer's current nonce since it last entered INIT, or received an ACK, NACK, CF, CC or
    //# DATA frame since it came UP. (An end comes UP on the peer's INIT_ECHO, possibly before the
    //# peer has the INIT_ECHO that brings it UP; the wire keeps order, so a DATA frame sent after
    //# that INIT_ECHO reaches an UP peer.)
    //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
    //# (modulo 2^20) for every new frame
    //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
    //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold
    //# more than `replay_max_bytes` bytes.
    //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
    //# to the upper layer once, the expected number advanced by one
    //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
    //# accepted since its last ACK or NACK reach ack_spacing.
    //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
    //# VC. [...] A conformant TX never causes this.
    //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
    //# `ceil((len + credit_overhead) / credit_size)` credits
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`.
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
    //# upper layer drains it, the RX MUST add its cost to `freed[v]`.
    //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits,
    //# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a
    //# CF since UP, cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for
    //# no interval, as Table LINK-T2 starts cf_min_interval at a CF sent.)
    //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at
    //# least cc_interval has passed since UP or since its last CC. (A VC that has been without
    //# credit for cc_interval therefore gets a CC as soon as the replay buffer is empty.)
    //# LINK-5-9 Control frames MUST NOT consume credits
    //# LINK-5-6 [...] A lost CF is therefore repaired by the next one.
    //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
    //# `received[v]` by less than 2^19, add the difference to both `received[v]` and `freed[v]`
    //# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
    //# frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set, before
    //# any new frame. A NACK or a replay-timer expiry during a replay that has sent a frame
    //# restarts it from the oldest frame.
    //# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer,
    //# restarted whenever an ACK or NACK acknowledges at least one frame and when a replay starts,
    //# and stopped when the buffer empties.
    //# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since
    //# the last acknowledgement progress: the count rises by one when a replay starts and returns
    //# to 0 when an ACK or NACK acknowledges at least one frame, and on entering UP.
    //# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY flag
    //# and the FCS.
    //# LINK-4-3 A damaged frame [...] or a DATA frame whose sequence number is ahead of the
    //# expected one (a gap) MUST make an RX in SEND_ACKS send one NACK carrying the last good
    //# sequence number
    //# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
    //# send another NACK except as LINK-4-8 says
    //# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
    //# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame
    //# that drew the NACK included) shows that a new replay has begun and has lost the expected
    //# frame again: the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3:
    //# 1.2 said "since the last NACK", which left out the gap frame that drew it; Table LINK-T5
    //# remembered it.)
    //# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the expected one
    //# is a duplicate: it MUST be discarded
    //# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a sequence
    //# number is paid for once.
    //# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to
    //# the upper layer, in sequence order, as frames of unknown fate [...] It MUST NOT report them
    //# as delivered and MUST NOT retransmit them after re-initialisation.
    //# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
    //# re-initialisation and be sent after the link is UP again, in order.
    //# LINK-6-3 After FLUSH [...] the end MUST re-initialise [...] and report a link-down event to
    //# the upper layer; on UP it MUST report a link-up event.
    //# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
    //# once, then one every init_interval while it stays in INIT and physically up; each INIT
    //# carries the nonce and the end's configured parameters (never the agreed ones).
    //# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
    //# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
    //# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends
    //# its own INIT.
    //# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its receive
    //# buffer, charged to their VC, until the upper layer drains them. Draining them returns no
    //# credit: the counters of LINK-5-4 were reset at UP (LINK-2-5); LINK-2-18 keeps the peer from
    //# being granted that buffer before it is empty.
    #[test]
    fn restarts(sequential 1..=60 => LinkTest<Restarts>);
}

// ---------------------------------------------------------------------------------------------
// Fixed sequences: hazards the properties found, kept as regression tests

/// Both ends alike: one VC, 16 credits of 32 bytes (eight 64-byte frames), a replay buffer of
/// eight frames, short timers, one replay before FLUSH; upper layers that take their events at
/// once, or only in `PollEvents` steps when `lazy`.
fn small_model(lazy: bool) -> Model {
    let k = EndKnobs {
        credit_size: 32,
        slack: [0; 3],
        replay_max_frames: 8,
        window_extra: 0,
        replay_max_bytes: 2048,
        ack_spacing: 2048,
        ack_timer: 50,
        replay_timer: 1500,
        replay_count_max: 1,
        cf_min_credits: 1,
        cf_min_interval: 0,
        cf_max_interval: 500,
        cc_interval: 2000,
        init_interval: 500,
    };
    Model {
        cfg: [build_config(0, 1, 0, &k), build_config(1, 1, 0, &k)],
        wrap: None,
        lazy,
        submitted: [vec![Vec::new()], vec![Vec::new()]],
    }
}

/// Runs `steps` through the machine of the properties, checks and drive to rest included.
fn run(model: Model, steps: Vec<Step>) {
    <LinkTest<Restarts> as StateMachineTest>::test_sequential(config(), model, steps, None);
}

/// End A's physical link bounces twice while B answers A's first INIT. An end that entered UP
/// with the nonce of an INIT older than the INIT_ECHO would be restarted (LINK-2-6) by the next
/// INIT of its peer, and restart the peer in turn: the ends would restart each other forever at
/// the same instant. The link must come UP and stay UP.
//= type=test
//# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
//# once, then one every init_interval while it stays in INIT and physically up; each INIT carries
//# the nonce and the end's configured parameters (never the agreed ones).
//# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
//# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
//# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
//# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
//# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends its
//# own INIT.
#[test]
fn double_bounce_comes_up() {
    let steps = vec![
        Step::Bounce { which: 0 },
        Step::Transmit { end: 0, frames: 1 },
        Step::Deliver { dir: 0, frames: 1 },
        Step::Transmit { end: 1, frames: 2 },
        Step::Bounce { which: 0 },
        Step::Deliver { dir: 1, frames: 2 },
    ];
    run(small_model(false), steps);
}

/// B's physical link bounces, its INIT restarts A, then A's physical link bounces: B enters UP
/// and from then on answers A's INITs with INIT_ECHOs only. An end that waited for an INIT after
/// the INIT_ECHO of its nonce would wait for ever; A must come UP on B's INIT_ECHO.
//= type=test
//# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
//# once, then one every init_interval while it stays in INIT and physically up; each INIT carries
//# the nonce and the end's configured parameters (never the agreed ones).
//# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying the INIT's
//# nonce as echo nonce and its own configured parameters, in any state but OFF, unless LINK-2-12
//# refuses it. When several INITs arrive before the wire can take the INIT_ECHO (or before LINK-2-18
//# lets it go), only the newest is answered.
//# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
//# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO.
#[test]
fn bounce_during_peer_restart_comes_up() {
    let steps = vec![
        Step::Bounce { which: 1 },
        Step::Transmit { end: 1, frames: 1 },
        Step::Deliver { dir: 1, frames: 1 },
        Step::Bounce { which: 0 },
    ];
    run(small_model(false), steps);
}

/// B's physical link goes down with a frame in its replay buffer, then again before its upper
/// layer has taken the events of the first: one link-down, one frame of unknown fate, and no
/// second link-down for a link that was not UP.
//= type=test
//# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to the
//# upper layer, in sequence order, as frames of unknown fate
//# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise [...]
//# and report a link-down event to the upper layer; on UP it MUST report a link-up event.
#[test]
fn late_events_one_link_down() {
    let steps = vec![
        Step::Submit {
            end: 1,
            vc: 0,
            data: 6,
        },
        Step::Transmit { end: 1, frames: 1 },
        Step::Bounce { which: 1 },
        Step::Bounce { which: 1 },
    ];
    run(small_model(true), steps);
}

/// A accepts eight 64-byte frames (its whole grant) but its upper layer has not taken them when
/// both physical links bounce; after UP the credits are reset and B sends two more frames, which
/// A must accept without a credit overrun: their credits are free, whatever A still holds for
/// its upper layer.
//= type=test
//# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
//# VC. [...] A conformant TX never causes this.
//# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its receive
//# buffer, charged to their VC, until the upper layer drains them. Draining them returns no credit:
//# the counters of LINK-5-4 were reset at UP (LINK-2-5); LINK-2-18 keeps the peer from being
//# granted that buffer before it is empty.
#[test]
fn late_events_buffer_freed_by_reset() {
    let mut steps = Vec::new();
    let batch = |steps: &mut Vec<Step>, n: usize| {
        for _ in 0..n {
            steps.push(Step::Submit {
                end: 1,
                vc: 0,
                data: 6,
            });
        }
        steps.push(Step::Transmit { end: 1, frames: 8 });
        steps.push(Step::Deliver { dir: 1, frames: 8 });
    };
    batch(&mut steps, 8);
    steps.push(Step::Bounce { which: 2 });
    steps.push(Step::PollEvents { end: 1, n: 10 });
    for _ in 0..3 {
        steps.push(Step::Transmit { end: 0, frames: 2 });
        steps.push(Step::Transmit { end: 1, frames: 2 });
        steps.push(Step::Deliver { dir: 0, frames: 2 });
        steps.push(Step::Deliver { dir: 1, frames: 2 });
    }
    batch(&mut steps, 2);
    run(small_model(true), steps);
}
