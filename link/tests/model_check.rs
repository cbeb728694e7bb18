//! Exhaustive model check of link-level retry (LLR) and credit-based flow control (CBFC), as
//! specified by docs/spec/link.md §3 to §5, on small parameters, with stateright.
//!
//! The model is written from the specification alone and does not use the `ethlink-link` crate:
//! it checks the protocol, not an implementation of it.
//!
//! # The model
//! One direction of data: the TX of end A sends DATA frames to the RX of end B over a forward
//! wire, and B's RX sends ACK, NACK and CF frames back to A's TX over a reverse wire. The link is
//! UP throughout (§2 and §6 are not modelled).
//!
//! - Sequence numbers are taken modulo a small `seq_mod` (2^20 in the protocol) and compared as
//!   LINK-3-4 (ACK/NACK acceptance) and LINK-4-1, LINK-4-3 and LINK-4-5 (expected; duplicate when
//!   within `llr_window` behind the expected one; gap otherwise) say. Both ends may start at
//!   `seq_start` instead of 0 (§2): every comparison is modular, so this is the protocol after a
//!   wrap, reached in a few frames.
//! - TX (§3): next sequence number; a replay buffer bounded by `min(llr_window,
//!   replay_max_frames)` (LINK-3-3); go-back-N replay on NACK (LINK-3-5) and on replay-timer
//!   expiry (LINK-3-6), one retransmitted frame per step, before any new frame. The timer is a
//!   nondeterministic action enabled whenever the replay buffer is not empty, so it may expire at
//!   any moment, too early included. `replay_max_bytes`, the replay counter and FLUSH (§3, §6)
//!   are left out: the fault budget is bounded, so a replay always succeeds in the end, no frame
//!   is ever of unknown fate, and every frame must be delivered exactly once.
//! - RX (§4): expected sequence number and the states SEND_ACKS and NACK_SENT (SEND_NACK is
//!   passed through at once: the NACK goes on the wire as the frame that causes it is handled,
//!   and the RX waits while the reverse wire is full). In NACK_SENT a gap frame not beyond the
//!   last gap frame seen since the NACK draws one more NACK (LINK-4-8). A cumulative ACK of the last accepted
//!   sequence number may be sent at any time after a frame is accepted (the `ack_spacing`,
//!   `ack_timer` and ACK_REQ triggers of §4 are timing, abstracted as nondeterminism), and is
//!   sent at once for a duplicate (LINK-4-5), in NACK_SENT too; see
//!   `nack_sent_without_duplicate_acks_can_stall` for why.
//! - CBFC (§5) on two VCs: every frame has a VC and a cost of 1 or 2 credits. The TX keeps
//!   `consumed` and `freed_seen`, the RX `received` and `freed`, all modulo a small `credit_mod`
//!   (2^20 in the protocol) and starting at `credit_start` so that they wrap. The upper layer
//!   drains the RX buffer one frame at a time whenever it likes. The RX may send a CF at any time
//!   (LINK-5-5, timing abstracted) except while a CF with the same counters is on the reverse
//!   wire. CC (§5) is left out: it repairs credits leaked by a fault, and without FLUSH no credit
//!   leaks (every run can still end with every credit back at the TX).
//! - The upper layer submits a fixed list of frames on each VC. The TX may send the next frame
//!   of any VC that has credit (LINK-5-2: a VC without credit does not stop the others), so the
//!   checker chooses the link order; frame ids number the frames in the order the TX first sends
//!   them, and the RX must deliver ids 0, 1, 2, ... in that order.
//! - Each wire is an in-order queue of at most `wire_cap` frames; a step that would overfill it
//!   waits. A fault budget is shared by: loss of the frame at the head of either wire, its
//!   duplication, and damage to it (a damaged DATA frame reaches the RX as a frame with a bad FCS;
//!   a damaged control frame is discarded by the TX, which is a loss). Faulting a frame when it
//!   reaches the head of its in-order wire is as general as faulting it anywhere on the wire
//!   (but for the room a duplicate takes up).
//!
//! # What is checked
//! - exactly-once, in-order delivery: the RX delivers frames 0, 1, 2, ... in that order, each
//!   once;
//! - no buffer overrun: the occupancy of each VC of the RX never exceeds its grant and matches
//!   the frames it holds, the RX never has to discard a frame for want of buffer (LINK-4-6), and
//!   the TX never believes more credit free than there is;
//! - the replay buffer never holds more than `min(llr_window, replay_max_frames)` frames;
//! - no deadlock: every state either has a successor or is complete (every frame delivered and
//!   drained, every credit back at the TX, the replay buffer empty);
//! - completion is reachable (a `sometimes` property) and, on the explicit state graph (built
//!   outside stateright, whose `eventually` is not sound on cyclic graphs such as this one, where
//!   the replay timer may fire forever), completion stays reachable from every reachable state:
//!   no fault within the budget can leave the link unable to finish. Under strong fairness (a
//!   step enabled again and again is taken in the end), every run therefore finishes.
//!
//! Mutations show that the properties can fail: a window as large as the sequence space (a stale
//! retransmission is taken for a new frame), a TX that ignores its credit (the RX buffer
//! overruns), and an RX that answers no duplicate in NACK_SENT (a lost NACK stalls the link).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Instant;

use stateright::{Checker, HasDiscoveries, Model, Path, Property};

/// Virtual channels in the model.
const VCS: usize = 2;

/// The parameters of one model.
#[derive(Clone, Debug)]
struct Params {
    /// Sequence numbers are taken modulo this (2^20 in the protocol); at most 128.
    seq_mod: u8,
    /// `llr_window`.
    window: u8,
    /// `replay_max_frames`.
    replay_max_frames: u8,
    /// First sequence number of both ends (0 in the protocol).
    seq_start: u8,
    /// Credit counters are taken modulo this (2^20 in the protocol); at most 128.
    credit_mod: u8,
    /// First value of every credit counter (0 in the protocol).
    credit_start: u8,
    /// `rx_credits[v]`: the credits the RX grants on each VC.
    grant: [u8; VCS],
    /// Costs of the frames the upper layer submits on each VC, in order.
    frames: [&'static [u8]; VCS],
    /// Most frames on each wire.
    wire_cap: usize,
    /// Faults (loss, duplication, damage) allowed in one run.
    faults: u8,
    /// Whether the TX checks its credit before sending (LINK-5-2); false only in a mutation.
    tx_checks_credit: bool,
    /// Whether the RX in NACK_SENT answers a duplicate with an ACK as LINK-4-5 says; false only
    /// in a mutation that reads LINK-4-7 as silencing duplicates too.
    ack_duplicates_in_nack_sent: bool,
}

impl Params {
    /// Frames the upper layer submits in all.
    fn total_frames(&self) -> usize {
        self.frames.iter().map(|f| f.len()).sum()
    }

    /// Most frames the replay buffer may hold (LINK-3-3).
    fn replay_limit(&self) -> usize {
        usize::from(self.window.min(self.replay_max_frames))
    }
}

/// `(a + b) mod m`, for `a, b < m <= 128`.
fn add(a: u8, b: u8, m: u8) -> u8 {
    (a + b) % m
}

/// `(a - b) mod m`, for `a, b < m <= 128`.
fn sub(a: u8, b: u8, m: u8) -> u8 {
    (a + m - b) % m
}

/// Whether `a` is ahead of `b` by less than half of the modulus `m` (LINK-5-6).
fn ahead(a: u8, b: u8, m: u8) -> bool {
    let d = sub(a, b, m);
    d != 0 && d < m / 2
}

/// A DATA frame, as sent and as kept in the replay buffer.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Data {
    /// Sequence number.
    seq: u8,
    /// Which frame this is: 0 for the first the TX sent as new, 1 for the next, ...
    id: u8,
    /// Virtual channel.
    vc: u8,
    /// Cost in credits.
    cost: u8,
}

/// A control frame from the RX to the TX.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
enum Ctrl {
    /// ACK carrying the last accepted sequence number.
    Ack(u8),
    /// NACK carrying the last good sequence number.
    Nack(u8),
    /// CF carrying `freed[v]` for every VC.
    Cf([u8; VCS]),
}

/// The transmit side of end A.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Tx {
    /// Sequence number of the next new frame.
    next_seq: u8,
    /// The replay buffer, oldest frame first.
    replay: Vec<Data>,
    /// In REPLAY, the index in `replay` of the next frame to retransmit; `None` in ADVANCE.
    replaying: Option<u8>,
    /// Frames of each VC sent so far as new frames.
    sent: [u8; VCS],
    /// `consumed[v]`.
    consumed: [u8; VCS],
    /// `freed_seen[v]`.
    freed_seen: [u8; VCS],
}

/// The receive side of end B, and its upper layer.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct Rx {
    /// Expected sequence number; the last good one is the one before it.
    expected: u8,
    /// NACK_SENT (true) or SEND_ACKS (false).
    nack_sent: bool,
    /// In NACK_SENT: how far ahead of the expected number the last gap frame was, 0 if none
    /// came since the NACK (LINK-4-8).
    nack_ahead: u8,
    /// A frame has been accepted since the last ACK or NACK.
    ack_due: bool,
    /// `received[v]`.
    received: [u8; VCS],
    /// `freed[v]`.
    freed: [u8; VCS],
    /// Costs of the frames of each VC accepted and not yet drained, oldest first.
    buffer: [Vec<u8>; VCS],
    /// Ids of the frames delivered to the upper layer, in order.
    delivered: Vec<u8>,
    /// A frame has been discarded for want of buffer (LINK-4-6).
    overrun: bool,
}

/// The whole system.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
struct State {
    /// A's TX.
    tx: Tx,
    /// B's RX.
    rx: Rx,
    /// The forward wire (A's TX to B's RX), head first.
    data_wire: VecDeque<Data>,
    /// The reverse wire (B's RX to A's TX), head first.
    ctrl_wire: VecDeque<Ctrl>,
    /// Faults still allowed.
    faults_left: u8,
}

/// One step of the system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    /// The TX sends the next submitted frame of a VC as a new frame.
    SendNew(u8),
    /// The TX retransmits the next frame of a replay.
    Retransmit,
    /// The replay timer expires.
    ReplayTimer,
    /// The frame at the head of the forward wire reaches the RX.
    DeliverData,
    /// The frame at the head of the forward wire reaches the RX damaged.
    DamageData,
    /// The frame at the head of the forward wire is lost.
    LoseData,
    /// The frame at the head of the forward wire is duplicated.
    DuplicateData,
    /// The frame at the head of the reverse wire reaches the TX.
    DeliverCtrl,
    /// The frame at the head of the reverse wire is lost (or damaged, which is the same).
    LoseCtrl,
    /// The frame at the head of the reverse wire is duplicated.
    DuplicateCtrl,
    /// The RX sends a cumulative ACK.
    SendAck,
    /// The RX sends a CF.
    SendCf,
    /// The upper layer drains the oldest frame of a VC from the RX buffer.
    Drain(u8),
}

/// Every action, in the fixed order stateright needs to rebuild paths.
const ACTIONS: [Action; 15] = [
    Action::SendNew(0),
    Action::SendNew(1),
    Action::Retransmit,
    Action::ReplayTimer,
    Action::DeliverData,
    Action::DamageData,
    Action::LoseData,
    Action::DuplicateData,
    Action::DeliverCtrl,
    Action::LoseCtrl,
    Action::DuplicateCtrl,
    Action::SendAck,
    Action::SendCf,
    Action::Drain(0),
    Action::Drain(1),
];

/// The model: LLR and CBFC of one direction of a link.
struct Link {
    /// Its parameters.
    p: Params,
}

impl Link {
    fn new(p: Params) -> Self {
        assert!(p.seq_mod <= 128 && p.credit_mod <= 128);
        assert!(p.seq_start < p.seq_mod && p.credit_start < p.credit_mod);
        assert!(p.total_frames() <= usize::from(u8::MAX));
        Self { p }
    }

    /// The RX's last accepted (last good) sequence number.
    fn last_good(&self, rx: &Rx) -> u8 {
        sub(rx.expected, 1, self.p.seq_mod)
    }

    /// Credits of VC `v` the RX holds.
    fn occupied(&self, rx: &Rx, v: usize) -> u8 {
        sub(rx.received[v], rx.freed[v], self.p.credit_mod)
    }

    /// Whether the run is over: every frame delivered and drained, every credit back at the TX
    /// and nothing left to acknowledge.
    fn complete(&self, s: &State) -> bool {
        s.rx.delivered.len() == self.p.total_frames()
            && s.rx.buffer.iter().all(Vec::is_empty)
            && s.tx.replay.is_empty()
            && s.tx.freed_seen == s.tx.consumed
    }

    /// Puts a frame on the reverse wire, or returns false if the wire is full.
    fn send_ctrl(&self, s: &mut State, c: Ctrl) -> bool {
        if s.ctrl_wire.len() >= self.p.wire_cap {
            return false;
        }
        s.ctrl_wire.push_back(c);
        true
    }

    /// The RX handles a frame from the wire, `None` for a damaged frame. Returns false if the
    /// RX cannot handle it now because the reverse wire is full.
    fn rx_handle(&self, s: &mut State, frame: Option<Data>) -> bool {
        let m = self.p.seq_mod;
        let Some(d) = frame.filter(|d| d.seq == s.rx.expected) else {
            // A damaged frame, a duplicate or a gap: discarded.
            let last_good = self.last_good(&s.rx);
            let duplicate = frame.is_some_and(|d| sub(s.rx.expected, d.seq, m) <= self.p.window);
            if duplicate && (!s.rx.nack_sent || self.p.ack_duplicates_in_nack_sent) {
                // LINK-4-5: a duplicate is answered with an ACK.
                if !self.send_ctrl(s, Ctrl::Ack(last_good)) {
                    return false;
                }
                s.rx.ack_due = false;
            } else if !duplicate {
                // How far ahead of the expected number a gap frame is (0 for a damaged frame,
                // whose number is unknown).
                let gap = frame.map_or(0, |d| sub(d.seq, s.rx.expected, m));
                // LINK-4-3: in SEND_ACKS a damaged frame or a gap is answered with one NACK.
                // LINK-4-8: in NACK_SENT, a gap frame not beyond the last one shows that a new
                // replay lost the expected frame again: one more NACK.
                let renack = s.rx.nack_sent && gap > 0 && gap <= s.rx.nack_ahead;
                if !s.rx.nack_sent || renack {
                    if !self.send_ctrl(s, Ctrl::Nack(last_good)) {
                        return false;
                    }
                    s.rx.ack_due = false;
                    s.rx.nack_sent = true;
                    s.rx.nack_ahead = gap;
                } else if gap > 0 {
                    s.rx.nack_ahead = gap;
                }
            }
            // LINK-4-7: otherwise, in NACK_SENT, discarded without a NACK.
            return true;
        };
        let v = usize::from(d.vc);
        let free = self.p.grant[v].saturating_sub(self.occupied(&s.rx, v));
        if d.cost > free {
            // LINK-4-6: discarded as if it had not arrived.
            s.rx.overrun = true;
            return true;
        }
        // LINK-4-1, LINK-5-4: accepted.
        s.rx.delivered.push(d.id);
        s.rx.expected = add(s.rx.expected, 1, m);
        s.rx.received[v] = add(s.rx.received[v], d.cost, self.p.credit_mod);
        s.rx.buffer[v].push(d.cost);
        s.rx.ack_due = true;
        s.rx.nack_sent = false;
        s.rx.nack_ahead = 0;
        true
    }

    /// The TX handles a control frame.
    fn tx_handle(&self, s: &mut State, c: Ctrl) {
        match c {
            Ctrl::Ack(seq) | Ctrl::Nack(seq) => {
                // LINK-3-4: accepted only if `seq` is between the sequence number before the
                // oldest frame of the buffer and the newest frame sent, inclusive.
                let tx = &mut s.tx;
                let oldest = tx.replay.first().map_or(tx.next_seq, |d| d.seq);
                let acked = sub(add(seq, 1, self.p.seq_mod), oldest, self.p.seq_mod);
                if usize::from(acked) > tx.replay.len() {
                    return;
                }
                tx.replay.drain(..usize::from(acked));
                tx.replaying = tx
                    .replaying
                    .map(|i| i.saturating_sub(acked))
                    .filter(|&i| usize::from(i) < tx.replay.len());
                if matches!(c, Ctrl::Nack(_)) && !tx.replay.is_empty() {
                    // LINK-3-5: go back N.
                    tx.replaying = Some(0);
                }
            }
            Ctrl::Cf(freed) => {
                // LINK-5-6.
                let m = self.p.credit_mod;
                let tx = &mut s.tx;
                for (v, &f) in freed.iter().enumerate() {
                    if ahead(f, tx.freed_seen[v], m) && !ahead(f, tx.consumed[v], m) {
                        tx.freed_seen[v] = f;
                    }
                }
            }
        }
    }
}

impl Model for Link {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let c = self.p.credit_start;
        vec![State {
            tx: Tx {
                next_seq: self.p.seq_start,
                replay: Vec::new(),
                replaying: None,
                sent: [0; VCS],
                consumed: [c; VCS],
                freed_seen: [c; VCS],
            },
            rx: Rx {
                expected: self.p.seq_start,
                nack_sent: false,
                nack_ahead: 0,
                ack_due: false,
                received: [c; VCS],
                freed: [c; VCS],
                buffer: [Vec::new(), Vec::new()],
                delivered: Vec::new(),
                overrun: false,
            },
            data_wire: VecDeque::new(),
            ctrl_wire: VecDeque::new(),
            faults_left: self.p.faults,
        }]
    }

    fn actions(&self, _: &State, actions: &mut Vec<Action>) {
        // `next_state` returns `None` for an action that is not enabled.
        actions.extend(ACTIONS);
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let p = &self.p;
        let fault = matches!(
            action,
            Action::DamageData
                | Action::LoseData
                | Action::DuplicateData
                | Action::LoseCtrl
                | Action::DuplicateCtrl
        );
        if fault && last.faults_left == 0 {
            return None;
        }
        let mut s = last.clone();
        if fault {
            s.faults_left -= 1;
        }
        match action {
            Action::SendNew(vc) => {
                let v = usize::from(vc);
                let tx = &mut s.tx;
                // LINK-3-5: no new frame during a replay; LINK-3-3: replay buffer bound.
                if tx.replaying.is_some() || tx.replay.len() >= p.replay_limit() {
                    return None;
                }
                let cost = *p.frames[v].get(usize::from(tx.sent[v]))?;
                // LINK-5-2.
                let in_use = sub(tx.consumed[v], tx.freed_seen[v], p.credit_mod);
                if p.tx_checks_credit && cost > p.grant[v].saturating_sub(in_use) {
                    return None;
                }
                if s.data_wire.len() >= p.wire_cap {
                    return None;
                }
                // LINK-3-1, LINK-3-2.
                let d = Data {
                    seq: tx.next_seq,
                    id: tx.sent.iter().sum(),
                    vc,
                    cost,
                };
                tx.next_seq = add(tx.next_seq, 1, p.seq_mod);
                tx.replay.push(d);
                tx.sent[v] += 1;
                tx.consumed[v] = add(tx.consumed[v], cost, p.credit_mod);
                s.data_wire.push_back(d);
            }
            Action::Retransmit => {
                // LINK-3-5: the same frame again; LINK-5-3: no credit consumed again.
                let i = s.tx.replaying?;
                if s.data_wire.len() >= p.wire_cap {
                    return None;
                }
                s.data_wire.push_back(s.tx.replay[usize::from(i)]);
                s.tx.replaying = Some(i + 1).filter(|&j| usize::from(j) < s.tx.replay.len());
            }
            Action::ReplayTimer => {
                // LINK-3-6.
                if s.tx.replay.is_empty() || s.tx.replaying == Some(0) {
                    return None;
                }
                s.tx.replaying = Some(0);
            }
            Action::DeliverData | Action::DamageData => {
                let d = s.data_wire.pop_front()?;
                let frame = (action == Action::DeliverData).then_some(d);
                if !self.rx_handle(&mut s, frame) {
                    return None;
                }
            }
            Action::LoseData => {
                s.data_wire.pop_front()?;
            }
            Action::DuplicateData => {
                let &d = s.data_wire.front()?;
                if s.data_wire.len() >= p.wire_cap {
                    return None;
                }
                s.data_wire.push_front(d);
            }
            Action::DeliverCtrl => {
                let c = s.ctrl_wire.pop_front()?;
                self.tx_handle(&mut s, c);
            }
            Action::LoseCtrl => {
                s.ctrl_wire.pop_front()?;
            }
            Action::DuplicateCtrl => {
                let &c = s.ctrl_wire.front()?;
                if s.ctrl_wire.len() >= p.wire_cap {
                    return None;
                }
                s.ctrl_wire.push_front(c);
            }
            Action::SendAck => {
                // The ACK of an accepted frame, sent at a time of the checker's choosing.
                let ack = Ctrl::Ack(self.last_good(&s.rx));
                if !s.rx.ack_due || !self.send_ctrl(&mut s, ack) {
                    return None;
                }
                s.rx.ack_due = false;
            }
            Action::SendCf => {
                // LINK-5-5: a CF may go at any time, but not while one with the same counters
                // is on the wire (it would tell the TX nothing new).
                let cf = Ctrl::Cf(s.rx.freed);
                if s.ctrl_wire.contains(&cf) || !self.send_ctrl(&mut s, cf) {
                    return None;
                }
            }
            Action::Drain(vc) => {
                // LINK-5-4.
                let v = usize::from(vc);
                if s.rx.buffer[v].is_empty() {
                    return None;
                }
                let cost = s.rx.buffer[v].remove(0);
                s.rx.freed[v] = add(s.rx.freed[v], cost, p.credit_mod);
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            Property::always(IN_ORDER, in_order),
            Property::always(NO_OVERRUN, no_overrun),
            Property::always(REPLAY_BOUND, replay_bound),
            Property::always(NO_DEADLOCK, no_deadlock),
            Property::sometimes(COMPLETE, Link::complete),
        ]
    }

    fn within_boundary(&self, s: &State) -> bool {
        // Only a broken model delivers more frames than were submitted, and the state before
        // has already broken `IN_ORDER`. This keeps the mutated models finite.
        s.rx.delivered.len() <= self.p.total_frames() + 1
    }
}

const IN_ORDER: &str = "exactly-once in-order delivery";
const NO_OVERRUN: &str = "no RX buffer overrun";
const REPLAY_BOUND: &str = "replay buffer bound";
const NO_DEADLOCK: &str = "no deadlock";
const COMPLETE: &str = "every frame delivered, drained and paid for";

/// The RX has delivered frames 0, 1, 2, ... in that order, each once.
fn in_order(_: &Link, s: &State) -> bool {
    s.rx.delivered
        .iter()
        .enumerate()
        .all(|(i, &id)| usize::from(id) == i)
}

/// No VC of the RX holds more than its grant, its occupancy counts the frames it holds, the TX
/// believes at least as many credits in use as there are, and the RX never discarded a frame
/// for want of buffer.
fn no_overrun(m: &Link, s: &State) -> bool {
    let within = (0..VCS).all(|v| {
        let occupied = m.occupied(&s.rx, v);
        let in_use = sub(s.tx.consumed[v], s.tx.freed_seen[v], m.p.credit_mod);
        occupied <= m.p.grant[v]
            && occupied == s.rx.buffer[v].iter().sum::<u8>()
            && in_use >= occupied
    });
    within && !s.rx.overrun
}

/// The replay buffer holds at most `min(llr_window, replay_max_frames)` frames.
fn replay_bound(m: &Link, s: &State) -> bool {
    s.tx.replay.len() <= m.p.replay_limit()
}

/// The state is complete or has a successor.
fn no_deadlock(m: &Link, s: &State) -> bool {
    m.complete(s) || ACTIONS.iter().any(|&a| m.next_state(s, a).is_some())
}

/// Runs stateright's breadth-first checker over every reachable state, prints what it explored
/// and asserts every property. Returns the number of unique states.
fn check_all_properties(name: &str, params: Params) -> usize {
    let t = Instant::now();
    let checker = Link::new(params).checker().threads(2).spawn_bfs().join();
    let states = checker.unique_state_count();
    println!(
        "{name}: {states} states ({} with repeats), depth {}, {:.1?}",
        checker.state_count(),
        checker.max_depth(),
        t.elapsed()
    );
    checker.assert_properties();
    states
}

/// Runs stateright's breadth-first checker until it breaks `property`, and returns the path it
/// found.
fn find_counterexample(params: Params, property: &'static str) -> Path<State, Action> {
    let t = Instant::now();
    let checker = Link::new(params)
        .checker()
        .threads(2)
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_bfs()
        .join();
    let path = checker
        .discovery(property)
        .unwrap_or_else(|| panic!("no counterexample to \"{property}\""));
    let actions = path.clone().into_actions();
    println!(
        "\"{property}\" broken after {} steps ({} states explored, {:.1?}): {actions:?}",
        actions.len(),
        checker.unique_state_count(),
        t.elapsed()
    );
    path
}

/// Builds the reachable state graph of `model` and checks that a complete state is reachable
/// from each of its states. Returns the numbers of states and transitions, or a state from which
/// no complete state is reachable.
fn check_completion_stays_reachable(model: &Link) -> Result<(usize, usize), Box<State>> {
    // States are known by a 64-bit hash, as stateright knows them.
    let fingerprint = |s: &State| {
        let mut h = DefaultHasher::new();
        s.hash(&mut h);
        h.finish()
    };
    let mut index: HashMap<u64, u32> = HashMap::new();
    let mut states: Vec<State> = Vec::new();
    let mut complete: Vec<bool> = Vec::new();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    let mut visit = |s: State, states: &mut Vec<State>| {
        *index.entry(fingerprint(&s)).or_insert_with(|| {
            let i = u32::try_from(states.len()).expect("too many states");
            complete.push(model.complete(&s));
            states.push(s);
            i
        })
    };
    for s in model.init_states() {
        visit(s, &mut states);
    }
    let mut from = 0;
    while from < states.len() {
        for next in model.next_states(&states[from]) {
            if model.within_boundary(&next) {
                let to = visit(next, &mut states);
                edges.push((u32::try_from(from).expect("too many states"), to));
            }
        }
        from += 1;
    }
    // Walk the transitions backwards from the complete states.
    let n = complete.len();
    let mut first = vec![0usize; n + 1];
    for &(_, to) in &edges {
        first[to as usize + 1] += 1;
    }
    for i in 0..n {
        first[i + 1] += first[i];
    }
    let mut fill = first.clone();
    let mut preds = vec![0u32; edges.len()];
    for &(from, to) in &edges {
        preds[fill[to as usize]] = from;
        fill[to as usize] += 1;
    }
    let mut reaches = complete.clone();
    let mut work: Vec<usize> = (0..n).filter(|&i| complete[i]).collect();
    while let Some(i) = work.pop() {
        for &p in &preds[first[i]..first[i + 1]] {
            if !reaches[p as usize] {
                reaches[p as usize] = true;
                work.push(p as usize);
            }
        }
    }
    match reaches.iter().position(|&r| !r) {
        Some(stuck) => Err(Box::new(states.swap_remove(stuck))),
        None => Ok((n, edges.len())),
    }
}

/// Four frames, two per VC, of costs 1 and 2 against grants of 2 and 3 credits (so VC 0 waits
/// for a CF); sequence numbers modulo 4 from 0, so they wrap, with the window at half the
/// sequence space, as the range of `llr_window` allows (2^19 of 2^20); credit counters modulo 8
/// that wrap; one fault of any kind.
fn four_frames_one_fault() -> Params {
    Params {
        seq_mod: 4,
        window: 2,
        replay_max_frames: 3,
        seq_start: 0,
        credit_mod: 8,
        credit_start: 5,
        grant: [2, 3],
        frames: [&[1, 2], &[2, 1]],
        wire_cap: 2,
        faults: 1,
        tx_checks_credit: true,
        ack_duplicates_in_nack_sent: true,
    }
}

/// Three frames; sequence numbers modulo 8 from 6, so they wrap, with the window at half the
/// sequence space and a smaller replay buffer; two faults of any kinds.
fn three_frames_two_faults() -> Params {
    Params {
        seq_mod: 8,
        window: 4,
        replay_max_frames: 2,
        seq_start: 6,
        frames: [&[1, 2], &[2]],
        faults: 2,
        ..four_frames_one_fault()
    }
}

/// Every reachable state of LLR and CBFC with faults keeps delivery exactly-once and in order,
/// the RX buffers within their grants and the replay buffer within its bound, and is never a
/// deadlock; and a run can complete.
//= docs/spec/link.md#3-link-level-retry-transmit-side
//= type=test
//# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
//# (modulo 2^20) for every new frame; control frames carry none.
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames, [...]
//# LINK-3-4 An ACK or NACK carrying *S* acknowledges every frame of the replay buffer up to and
//# including *S*. The TX MUST accept it only if *S* lies between the sequence number before the
//# oldest frame of the buffer and the newest frame sent, inclusive (modulo 2^20); [...]
//# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit every
//# frame of the replay buffer in sequence order (go-back-N), [...] before any new frame.
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
//= docs/spec/link.md#4-link-level-retry-receive-side
//= type=test
//# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted: delivered
//# to the upper layer once, the expected number advanced by one, [...]
//# LINK-4-3 A damaged frame [...] or a DATA frame whose sequence number is ahead of the expected
//# one (a gap) MUST make an RX in SEND_ACKS send one NACK carrying the last good sequence number
//# and enter NACK_SENT. The frame MUST be discarded.
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says.
//# LINK-4-5 A DATA frame whose sequence number is within llr_window behind the expected one is a
//# duplicate: it MUST be discarded and counted.
//# LINK-4-6 [...] A conformant TX never causes this.
//= docs/spec/link.md#5-credit-based-flow-control
//= type=test
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
//# `consumed[v]`. A VC without credit MUST NOT stop the other VCs.
//# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a sequence number
//# is paid for once.
//# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
//# upper layer drains it, the RX MUST add its cost to `freed[v]`.
//# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the mask
//# when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v]; otherwise
//# the entry is stale or impossible and MUST be ignored and counted. An entry equal to
//# freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither taken nor counted;
//# an entry for a VC not agreed is counted. A lost CF is therefore repaired by the next one.
#[test]
fn model_check_llr_cbfc_small() {
    let states = check_all_properties("four frames, one fault", four_frames_one_fault());
    assert!(states > 100_000, "only {states} states");
    let states = check_all_properties("three frames, two faults", three_frames_two_faults());
    assert!(states > 50_000, "only {states} states");
}

/// No fault within the budget leaves the link unable to finish: from every reachable state,
/// every frame can still be delivered and every credit returned.
//= docs/spec/link.md#3-link-level-retry-transmit-side
//= type=test
//# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer, restarted
//# whenever an ACK or NACK acknowledges at least one frame and when a replay starts, and stopped
//# when the buffer empties.
//= docs/spec/link.md#4-link-level-retry-receive-side
//= type=test
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says; it processes control frames as in every other state.
//# LINK-4-5 A DATA frame whose sequence number is within llr_window behind the expected one is a
//# duplicate: it MUST be discarded and counted.
//= docs/spec/link.md#5-credit-based-flow-control
//= type=test
//# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits, summed
//# over the VCs, have been freed since its last CF (or since UP) and, if it has sent a CF since UP,
//# cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for no interval, as
//# Table LINK-T2 starts cf_min_interval at a CF sent.)
//# LINK-5-6 [...] A lost CF is therefore repaired by the next one.
#[test]
fn completion_stays_reachable_small() {
    for (name, params) in [
        ("four frames, one fault", four_frames_one_fault()),
        ("three frames, two faults", three_frames_two_faults()),
    ] {
        let t = Instant::now();
        match check_completion_stays_reachable(&Link::new(params)) {
            Ok((states, edges)) => println!(
                "{name}: completion reachable from all {states} states ({edges} transitions), \
                 {:.1?}",
                t.elapsed()
            ),
            Err(stuck) => panic!("{name}: no way to complete from {stuck:#?}"),
        }
    }
}

/// With a window as large as the sequence space, a retransmission of a frame the RX has
/// accepted, whose ACK has not reached the TX yet, carries the sequence number the RX expects
/// next and is delivered a second time. The window must stay within the sequence space; the
/// specification keeps it within half of it (2^19 of 2^20).
//= docs/spec/link.md#4-link-level-retry-receive-side
//= type=test
//# LINK-4-5 A DATA frame whose sequence number is within llr_window behind the expected one is a
//# duplicate: it MUST be discarded and counted.
//= docs/spec/link.md#3-link-level-retry-transmit-side
//= type=test
//# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
//# `min(llr_window, replay_max_frames)` frames, [...]
#[test]
fn too_small_sequence_space_is_caught() {
    let params = Params {
        seq_mod: 4,
        window: 4,
        replay_max_frames: 4,
        seq_start: 0,
        frames: [&[1, 1], &[1, 1]],
        faults: 0,
        ..four_frames_one_fault()
    };
    let path = find_counterexample(params, IN_ORDER);
    let delivered = &path.last_state().rx.delivered;
    assert_eq!(delivered.len(), 5, "{delivered:?}");
    assert_eq!(delivered[4], 0, "frame 0 delivered again: {delivered:?}");
}

/// A TX that sends without credit overruns the RX buffer: the RX has to discard a frame.
//= docs/spec/link.md#5-credit-based-flow-control
//= type=test
//# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
//# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20).
//= docs/spec/link.md#4-link-level-retry-receive-side
//= type=test
//# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of its
//# VC. It MUST discard it as if it had not arrived (no ACK, no NACK) and count a credit overrun;
//# the TX's replay recovers it. A conformant TX never causes this.
#[test]
fn tx_ignoring_credit_is_caught() {
    let params = Params {
        tx_checks_credit: false,
        faults: 0,
        ..four_frames_one_fault()
    };
    let path = find_counterexample(params, NO_OVERRUN);
    assert!(path.last_state().rx.overrun);
}

/// If LINK-4-7 is read as silencing duplicates in NACK_SENT too, a damaged frame followed by
/// the loss of its NACK can leave the RX in NACK_SENT after it has accepted every frame the TX
/// holds: the replay timer retransmits frames the RX discards without an answer, the expected
/// frame is never sent (the TX has no more, or its window is full), and the link can only
/// FLUSH. The ACK of LINK-4-5 is what recovers, so the model sends it in NACK_SENT too.
//= docs/spec/link.md#4-link-level-retry-receive-side
//= type=test
//# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST NOT
//# send another NACK except as LINK-4-8 says; it processes control frames as in every other state.
//# LINK-4-5 A DATA frame whose sequence number is within llr_window behind the expected one is a
//# duplicate: it MUST be discarded and counted.
#[test]
fn nack_sent_without_duplicate_acks_can_stall() {
    let params = Params {
        frames: [&[1], &[]],
        faults: 2,
        ack_duplicates_in_nack_sent: false,
        ..four_frames_one_fault()
    };
    let stuck = check_completion_stays_reachable(&Link::new(params))
        .expect_err("the link should be able to stall");
    println!("stuck: {stuck:?}");
    assert!(stuck.rx.nack_sent && !stuck.tx.replay.is_empty());
    assert_eq!(stuck.rx.delivered, [0]);
}
