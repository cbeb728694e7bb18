//! One end of one link: the state machine of link.md.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use ethlink_protocol::{
    Action, CreditRepr, DataFlags, DataHeader, ETH_HEADER_LEN, ErrorKind, EthernetRepr,
    FLAG_REPLAY, Frame, FrameKind, FrameRepr, InitRepr, LINK_HEADER_LEN, LinkFrame, MacAddr,
    NETWORK_HEADER_LEN, Seq, VLAN_TAG_LEN, Vc, fcs, frame_len,
};

use crate::config::{Agreed, Config, ConfigError};
use crate::counters::Counters;
use crate::ring::Ring;
use crate::time::Instant;

const SEQ_HALF: u32 = Seq::MAX_WINDOW;

/// Difference `a - b` of two 20-bit cumulative counters, modulo 2^20.
fn diff20(a: u32, b: u32) -> u32 {
    a.wrapping_sub(b) & Seq::MASK
}

fn add20(a: u32, b: u32) -> u32 {
    a.wrapping_add(b) & Seq::MASK
}

/// State of the transmit side (link.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxState {
    /// The physical link is down.
    Off,
    /// Bring-up: INIT frames are being exchanged.
    Init,
    /// Sending new frames.
    Advance,
    /// Retransmitting the replay buffer.
    Replay,
    /// The replay buffer was given up; its frames are being reported of unknown fate.
    Flush,
}

/// State of the receive side (link.md §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RxState {
    /// The link is not UP.
    Off,
    /// Accepting frames in order.
    SendAcks,
    /// A NACK is due.
    SendNack,
    /// A NACK was sent; waiting for the expected frame.
    NackSent,
}

/// Why the link went down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DownReason {
    /// The replay count exceeded `replay_count_max` (LINK-3-7).
    Flush,
    /// The physical link went down.
    Physical,
    /// The peer re-initialised (a new INIT nonce while UP, LINK-2-6).
    PeerRestart,
}

/// Why a submitted frame was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LostReason {
    /// The frame was in the replay buffer at a FLUSH or a link down: it may have been delivered
    /// once or not at all (LINK-6-1).
    UnknownFate,
    /// The frame is longer than the MFS agreed with the peer; it was never sent.
    ExceedsPeerMfs,
}

/// A claim on receive-buffer credits, handed out with each delivered frame. Give it back with
/// [`Link::release`] when the upper layer has drained the frame from the buffer; that is what
/// returns credits to the peer (LINK-5-4). It is neither `Copy` nor `Clone`, so it can be given
/// back only once.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Release {
    vc: Vc,
    credits: u32,
    epoch: u32,
}

impl Release {
    /// The VC whose buffer holds the frame.
    pub fn vc(&self) -> Vc {
        self.vc
    }

    /// Credits the frame occupies.
    pub fn credits(&self) -> u32 {
        self.credits
    }
}

/// Something the upper layer must learn about.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// The link came UP with these parameters.
    LinkUp(Agreed),
    /// The link went down; `Lost` events for the frames of unknown fate follow.
    LinkDown(DownReason),
    /// A DATA frame accepted in order: its payload (network header and transactions).
    Delivered {
        /// Its VC.
        vc: Vc,
        /// Its link sequence number.
        seq: Seq,
        /// Network header and transactions, as submitted at the peer.
        payload: &'a [u8],
        /// The buffer it occupies, to give back when drained.
        release: Release,
    },
    /// A submitted frame the link could not deliver, with its payload, in submission order.
    Lost {
        /// Its VC.
        vc: Vc,
        /// Why.
        reason: LostReason,
        /// The payload as submitted.
        payload: &'a [u8],
    },
}

/// A frame written by [`Link::poll_transmit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transmit {
    /// Bytes written, FCS included.
    pub len: usize,
    /// Its kind.
    pub kind: FrameKind,
    /// For DATA frames: VC, sequence number and whether it is a retransmission.
    pub data: Option<(Vc, Seq, bool)>,
}

/// Why [`Link::submit`] refused a frame. Nothing was queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubmitError {
    /// The VC is beyond the configured number.
    NoSuchVc {
        /// The VC asked for.
        vc: u8,
        /// VCs configured.
        vcs: u8,
    },
    /// The payload is not a network header followed by exactly `payload length` bytes.
    BadPayload {
        /// Bytes given.
        len: usize,
    },
    /// The frame would be longer than the MFS.
    TooLong {
        /// Frame length, FCS included.
        len: usize,
        /// The MFS in force.
        mfs: usize,
    },
    /// The VC's transmit queue is full: try again after `poll_transmit` has sent some frames.
    QueueFull {
        /// The VC.
        vc: u8,
        /// Frames queued.
        frames: usize,
        /// Bytes queued.
        bytes: usize,
    },
}

impl fmt::Display for SubmitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubmitError::NoSuchVc { vc, vcs } => {
                write!(f, "VC {vc} does not exist: the link has {vcs} VCs")
            }
            SubmitError::BadPayload { len } => write!(
                f,
                "payload of {len} bytes is not an 8-byte network header followed by its payload length"
            ),
            SubmitError::TooLong { len, mfs } => {
                write!(f, "frame of {len} bytes exceeds the MFS of {mfs} bytes")
            }
            SubmitError::QueueFull { vc, frames, bytes } => write!(
                f,
                "transmit queue of VC {vc} is full ({frames} frames, {bytes} bytes)"
            ),
        }
    }
}

impl core::error::Error for SubmitError {}

/// [`Link::poll_transmit`] was given a buffer too small for the next frame. Nothing was consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferTooSmall {
    /// Bytes the next frame needs.
    pub needed: usize,
}

impl fmt::Display for BufferTooSmall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "transmit buffer too small: {} bytes needed", self.needed)
    }
}

impl core::error::Error for BufferTooSmall {}

/// [`Link::release`] was given a claim this end did not hand out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReleaseError {
    /// Credits claimed.
    pub credits: u32,
    /// Credits the VC holds.
    pub occupied: u32,
}

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "release of {} credits exceeds the {} the VC holds",
            self.credits, self.occupied
        )
    }
}

impl core::error::Error for ReleaseError {}

#[derive(Debug, Clone, Copy)]
struct ReplayMeta {
    seq: Seq,
    vc: Vc,
    /// Offset of the payload in the stored frame and its length.
    payload_at: u16,
    payload_len: u16,
}

#[derive(Debug, Clone, Copy)]
struct RxMeta {
    vc: Vc,
    seq: Seq,
    credits: u32,
    epoch: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EvRec {
    Up(Agreed),
    Down(DownReason),
    /// The front of the receive ring.
    Delivered,
    /// The front of the replay ring (flushed frames).
    Flushed,
    /// The front of a VC's transmit queue.
    Oversize(Vc),
}

#[derive(Debug, Clone, Copy)]
enum Pop {
    Rx,
    Replay,
    Queue(Vc),
}

/// Status events (up/down) that may wait unpolled before older transitions are merged.
const STATUS_EVENTS_MAX: usize = 64;

/// One end of one EthLink link: bring-up, LLR and CBFC, both directions.
///
/// Inputs are [`Link::handle_frame`], [`Link::handle_timeout`] and the commands
/// [`Link::submit`], [`Link::release`], [`Link::physical_up`] and [`Link::physical_down`].
/// After any of them the caller drains [`Link::poll_transmit`] (when its wire can take a frame)
/// and [`Link::poll_event`] until they return nothing, then asks [`Link::poll_timeout`] when to
/// call [`Link::handle_timeout`] next. Time passed in must never go backwards.
#[derive(Debug)]
pub struct Link {
    cfg: Config,
    eth_len: usize,
    now: Instant,
    physical: bool,
    agreed: Option<Agreed>,
    // Bring-up.
    nonce: u32,
    nonces_drawn: u64,
    peer_init: Option<InitRepr>,
    peer_mac: Option<MacAddr>,
    echo_ok: bool,
    echo_due: Option<u32>,
    init_next: Instant,
    // TX, LLR.
    next_seq: Seq,
    replay: Ring<ReplayMeta>,
    flushed: usize,
    flushed_new: usize,
    replay_cursor: Option<usize>,
    replay_count: u8,
    replay_deadline: Option<Instant>,
    // TX, CBFC.
    consumed: [u32; 8],
    freed_seen: [u32; 8],
    stalled_since: [Option<Instant>; 8],
    cc_next: Instant,
    rr: usize,
    queues: Vec<Ring<()>>,
    queue_blocked: [bool; 8],
    // RX, LLR.
    rx_state: RxState,
    expected: Seq,
    last_good: Seq,
    unacked_bytes: u32,
    ack_deadline: Option<Instant>,
    ack_due: bool,
    // RX, CBFC.
    received: [u32; 8],
    freed: [u32; 8],
    freed_since_cf: u32,
    last_cf: Instant,
    cf_forced: bool,
    epoch: u32,
    rx: Ring<RxMeta>,
    // Upper layer.
    events: VecDeque<EvRec>,
    status_events: usize,
    pending_pop: Option<Pop>,
    counters: Counters,
}

impl Link {
    /// A link end in OFF, with every buffer allocated now and never grown.
    pub fn new(cfg: Config) -> Result<Self, ConfigError> {
        cfg.validate()?;
        let eth_len = ETH_HEADER_LEN + if cfg.vlan.is_some() { VLAN_TAG_LEN } else { 0 };
        let mfs = usize::from(cfg.mfs);
        let replay_frames = cfg.replay_max_frames as usize;
        let replay = Ring::new(cfg.replay_max_bytes as usize + mfs, replay_frames);
        let queues = (0..cfg.vcs)
            .map(|_| {
                Ring::new(
                    cfg.tx_queue_bytes as usize + mfs,
                    cfg.tx_queue_frames as usize,
                )
            })
            .collect();
        // The receive ring holds what the credits cover, plus one frame of slack for the
        // record that cannot wrap.
        let rx_bytes = usize::try_from(cfg.rx_buffer_bytes()).unwrap_or(usize::MAX);
        let rx_recs = rx_bytes / 64 + 1;
        let rx = Ring::new(rx_bytes.saturating_add(mfs), rx_recs);
        let events = VecDeque::with_capacity(
            rx_recs + replay_frames + usize::from(cfg.vcs) + STATUS_EVENTS_MAX + 1,
        );
        let mut link = Link {
            eth_len,
            now: Instant::ZERO,
            physical: false,
            agreed: None,
            nonce: 0,
            nonces_drawn: 0,
            peer_init: None,
            peer_mac: None,
            echo_ok: false,
            echo_due: None,
            init_next: Instant::ZERO,
            next_seq: Seq::new(0),
            replay,
            flushed: 0,
            flushed_new: 0,
            replay_cursor: None,
            replay_count: 0,
            replay_deadline: None,
            consumed: [0; 8],
            freed_seen: [0; 8],
            stalled_since: [None; 8],
            cc_next: Instant::ZERO,
            rr: 0,
            queues,
            queue_blocked: [false; 8],
            rx_state: RxState::Off,
            expected: Seq::new(0),
            last_good: Seq::new(Seq::MASK),
            unacked_bytes: 0,
            ack_deadline: None,
            ack_due: false,
            received: [0; 8],
            freed: [0; 8],
            freed_since_cf: 0,
            last_cf: Instant::ZERO,
            cf_forced: false,
            epoch: 0,
            rx,
            events,
            status_events: 0,
            pending_pop: None,
            counters: Counters::default(),
            cfg,
        };
        link.nonce = link.draw_nonce();
        Ok(link)
    }

    // ----- getters -------------------------------------------------------------------------

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The parameters agreed with the peer, while UP.
    pub fn agreed(&self) -> Option<&Agreed> {
        self.agreed.as_ref()
    }

    /// True while the link is UP.
    pub fn is_up(&self) -> bool {
        self.agreed.is_some()
    }

    /// The transmit state (link.md §3).
    pub fn tx_state(&self) -> TxState {
        if !self.physical {
            TxState::Off
        } else if self.flushed > 0 {
            TxState::Flush
        } else if self.agreed.is_none() {
            TxState::Init
        } else if self.replay_cursor.is_some() {
            TxState::Replay
        } else {
            TxState::Advance
        }
    }

    /// The receive state (link.md §4).
    pub fn rx_state(&self) -> RxState {
        if self.agreed.is_none() {
            RxState::Off
        } else {
            self.rx_state
        }
    }

    /// The counters (link.md §7).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The nonce of the current initialisation.
    pub fn nonce(&self) -> u32 {
        self.nonce
    }

    /// Frames in the replay buffer awaiting acknowledgement.
    pub fn replay_frames(&self) -> usize {
        self.replay.len() - self.flushed
    }

    /// Bytes of the frames in the replay buffer awaiting acknowledgement.
    pub fn replay_bytes(&self) -> usize {
        self.live_replay_bytes()
    }

    /// The sequence number the next new DATA frame will carry.
    pub fn next_seq(&self) -> Seq {
        self.next_seq
    }

    /// The sequence number the receiver expects next.
    pub fn expected_seq(&self) -> Seq {
        self.expected
    }

    /// The replays started since the last acknowledgement progress (LINK-3-7).
    pub fn replay_count(&self) -> u8 {
        self.replay_count
    }

    /// Credits the receiver's buffer of `vc` holds (`received - freed`).
    pub fn rx_occupied(&self, vc: Vc) -> u32 {
        let v = vc.index();
        diff20(self.received[v], self.freed[v])
    }

    /// Credits the receiver grants on `vc` (its configured buffer).
    pub fn rx_grant(&self, vc: Vc) -> u32 {
        self.cfg.rx_credits[vc.index()]
    }

    /// The receiver's cumulative counters of `vc`: (received, freed).
    pub fn rx_counters(&self, vc: Vc) -> (u32, u32) {
        (self.received[vc.index()], self.freed[vc.index()])
    }

    /// The transmitter's cumulative counters of `vc`: (consumed, freed_seen).
    pub fn tx_counters(&self, vc: Vc) -> (u32, u32) {
        (self.consumed[vc.index()], self.freed_seen[vc.index()])
    }

    /// Credits the transmitter may still spend on `vc` (zero while not UP).
    pub fn tx_credits_available(&self, vc: Vc) -> u32 {
        let v = vc.index();
        let Some(a) = &self.agreed else { return 0 };
        a.tx_credits[v].saturating_sub(diff20(self.consumed[v], self.freed_seen[v]))
    }

    /// Frames and bytes (payloads) waiting in the transmit queue of `vc`.
    pub fn queued(&self, vc: Vc) -> (usize, usize) {
        self.queues
            .get(vc.index())
            .map_or((0, 0), |q| (q.len(), q.bytes()))
    }

    /// True when nothing waits to be sent or acknowledged.
    pub fn is_idle(&self) -> bool {
        self.replay.is_empty() && self.queues.iter().all(Ring::is_empty)
    }

    // ----- commands ------------------------------------------------------------------------

    /// The physical link came up: enter INIT (LINK-2-1).
    pub fn physical_up(&mut self, now: Instant) {
        self.settle(now);
        if self.physical {
            return;
        }
        self.physical = true;
        self.enter_init(now);
    }

    /// The physical link went down: the replay buffer's frames are reported of unknown fate, the
    /// link goes down and stays OFF until [`Link::physical_up`] (LINK-6-3).
    pub fn physical_down(&mut self, now: Instant) {
        self.settle(now);
        if !self.physical {
            return;
        }
        let was_up = self.agreed.is_some();
        self.flush_replay();
        self.physical = false;
        self.go_down();
        if was_up || self.flushed > 0 {
            self.push_status(EvRec::Down(DownReason::Physical));
        }
        self.queue_flushed_events();
    }

    /// Queues a frame on `vc`: `payload` is the network header and the transactions. The frame
    /// is sent in submission order on its VC; it is never dropped: either it is delivered, or a
    /// [`Event::Lost`] reports it.
    pub fn submit(&mut self, vc: Vc, payload: &[u8]) -> Result<(), SubmitError> {
        self.settle(self.now);
        let v = vc.index();
        if v >= usize::from(self.cfg.vcs) {
            return Err(SubmitError::NoSuchVc {
                vc: vc.value(),
                vcs: self.cfg.vcs,
            });
        }
        let declared = payload
            .get(6..8)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if declared.map(|d| d + NETWORK_HEADER_LEN) != Some(payload.len()) {
            return Err(SubmitError::BadPayload { len: payload.len() });
        }
        let len = frame_len(self.eth_len, payload.len());
        let mfs = self
            .agreed
            .map_or(usize::from(self.cfg.mfs), |a| usize::from(a.mfs));
        if len > mfs {
            return Err(SubmitError::TooLong { len, mfs });
        }
        let Some(q) = self.queues.get_mut(v) else {
            return Err(SubmitError::NoSuchVc {
                vc: vc.value(),
                vcs: self.cfg.vcs,
            });
        };
        let full = q.bytes() + payload.len() > self.cfg.tx_queue_bytes as usize;
        match (full, q.push(payload.len(), ())) {
            (false, Some(slot)) => {
                slot.copy_from_slice(payload);
                Ok(())
            }
            (true, Some(_)) => {
                q.pop_back();
                Err(SubmitError::QueueFull {
                    vc: vc.value(),
                    frames: q.len(),
                    bytes: q.bytes(),
                })
            }
            (_, None) => Err(SubmitError::QueueFull {
                vc: vc.value(),
                frames: q.len(),
                bytes: q.bytes(),
            }),
        }
    }

    /// Gives back the buffer of a delivered frame (LINK-5-4). A claim from before a
    /// re-initialisation is accepted and has no effect: the reset freed that buffer (LINK-6-4).
    pub fn release(&mut self, release: Release) -> Result<(), ReleaseError> {
        if release.epoch != self.epoch {
            return Ok(());
        }
        let v = release.vc.index();
        let occupied = diff20(self.received[v], self.freed[v]);
        if release.credits > occupied {
            return Err(ReleaseError {
                credits: release.credits,
                occupied,
            });
        }
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as
        //# the upper layer drains it, the RX MUST add its cost to `freed[v]`.
        self.freed[v] = add20(self.freed[v], release.credits);
        self.freed_since_cf = self.freed_since_cf.saturating_add(release.credits);
        Ok(())
    }

    /// Fault injection: makes the transmitter count `credits` as consumed on `vc` without sending
    /// anything, as a lost credit would. Only CC (LINK-5-7, LINK-5-8) can recover them.
    pub fn inject_credit_leak(&mut self, vc: Vc, credits: u32) {
        let v = vc.index();
        if v < 8 && self.agreed.is_some() {
            self.consumed[v] = add20(self.consumed[v], credits.min(SEQ_HALF - 1));
        }
    }

    // ----- input ---------------------------------------------------------------------------

    /// A frame arrived from the wire, FCS included.
    pub fn handle_frame(&mut self, now: Instant, bytes: &[u8]) {
        self.settle(now);
        if !self.physical {
            if bytes.len() >= 14 {
                self.counters.init_while_off += 1;
            } else {
                self.counters.damaged_frames += 1;
            }
            return;
        }
        let mfs = self
            .agreed
            .map_or(usize::from(self.cfg.mfs), |a| usize::from(a.mfs));
        let repr = match Frame::new_checked(bytes, mfs).and_then(|f| FrameRepr::parse(&f)) {
            Ok(r) => r,
            Err(e) => {
                self.count_bad_frame(e.kind, e.action);
                return;
            }
        };
        match repr.link {
            LinkFrame::Data { header, payload } => {
                self.on_data(now, header, payload, bytes.len());
            }
            LinkFrame::Ack(s) => {
                if self.control_up() {
                    self.counters.acks_received += 1;
                    self.on_ack(now, s, false);
                }
            }
            LinkFrame::Nack(s) => {
                if self.control_up() {
                    self.counters.nacks_received += 1;
                    self.on_ack(now, s, true);
                }
            }
            LinkFrame::CreditUpdate(c) => {
                if self.control_up() {
                    self.counters.cf_received += 1;
                    self.on_cf(&c);
                }
            }
            LinkFrame::CreditResync(c) => {
                if self.control_up() {
                    self.counters.cc_received += 1;
                    self.on_cc(&c);
                }
            }
            LinkFrame::Init(init) => {
                self.counters.inits_received += 1;
                self.on_init(now, init, repr.eth.src);
            }
            LinkFrame::InitEcho { echo_nonce, init } => {
                self.on_init_echo(now, echo_nonce, init, repr.eth.src);
            }
        }
    }

    /// Time has reached `now`: runs the timers that have expired.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.settle(now);
        if self.agreed.is_none() {
            return;
        }
        if self.replay_deadline.is_some_and(|d| d <= now) && self.replay_frames() > 0 {
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-6 [...] On its expiry the TX MUST retransmit the whole replay buffer as in
            //# LINK-3-5.
            self.counters.replay_timeouts += 1;
            self.start_replay(now);
        }
        if self.ack_deadline.is_some_and(|d| d <= now) {
            self.ack_due = true;
        }
    }

    // ----- output --------------------------------------------------------------------------

    /// Writes the next frame for the wire into `buf`, if any is due. Control frames go first,
    /// then retransmissions, then new frames, round-robin over the VCs that have credit.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        self.settle(now);
        if !self.physical {
            return Ok(None);
        }
        if let Some(echo) = self.echo_due {
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO
            //# carrying the INIT's nonce as echo nonce and its own parameters, in any state but
            //# OFF.
            let init = self.own_init();
            let t = self.emit_control(
                buf,
                LinkFrame::InitEcho {
                    echo_nonce: echo,
                    init,
                },
            )?;
            self.echo_due = None;
            self.counters.init_echoes_sent += 1;
            return Ok(Some(t));
        }
        let Some(agreed) = self.agreed else {
            if now >= self.init_next {
                //= docs/spec/link.md#2-bring-up
                //# LINK-2-1 On entering INIT an end MUST choose a nonce different from the one of
                //# its previous initialisation and send INIT frames carrying it and its
                //# parameters every `init_interval` until it is UP.
                let init = self.own_init();
                let t = self.emit_control(buf, LinkFrame::Init(init))?;
                self.init_next = now.saturating_add(self.cfg.init_interval);
                self.counters.inits_sent += 1;
                return Ok(Some(t));
            }
            return Ok(None);
        };
        if self.rx_state == RxState::SendNack {
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-3 A damaged frame [...] or a DATA frame whose sequence number is ahead of
            //# the expected one (a gap) MUST make an RX in SEND_ACKS send one NACK carrying the
            //# last good sequence number and enter NACK_SENT.
            let t = self.emit_control(buf, LinkFrame::Nack(self.last_good))?;
            self.rx_state = RxState::NackSent;
            self.counters.nacks_sent += 1;
            self.acked_now();
            return Ok(Some(t));
        }
        if self.ack_due || self.ack_deadline.is_some_and(|d| d <= now) {
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when
            //# the bytes accepted since its last ACK or NACK reach `ack_spacing`, when an
            //# accepted frame has waited `ack_timer`, and when an accepted frame has the
            //# ACK_REQ flag.
            //= docs/spec/wire.md#42-nack-kind-0x2
            //# WIRE-4.2-1 Before any DATA frame has been received after link initialisation,
            //# the "last good" sequence number is the value before the first sequence number,
            //# that is `(first - 1) mod 2^20`. ACK and NACK frames sent in that state MUST
            //# carry that value.
            let t = self.emit_control(buf, LinkFrame::Ack(self.last_good))?;
            self.counters.acks_sent += 1;
            self.acked_now();
            return Ok(Some(t));
        }
        if self.cf_due(now) {
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-5 The RX MUST send a CF carrying `freed[v]` for every VC when at least
            //# `cf_min_credits` credits have been freed since its last CF and `cf_min_interval`
            //# has passed since it, and in any case every `cf_max_interval` while UP, changed or
            //# not.
            let repr = credit_repr(agreed.vcs, &self.freed);
            let t = self.emit_control(buf, LinkFrame::CreditUpdate(repr))?;
            self.counters.cf_sent += 1;
            self.last_cf = now;
            self.freed_since_cf = 0;
            self.cf_forced = false;
            return Ok(Some(t));
        }
        if self.replay_frames() == 0 && self.flushed == 0 && now >= self.cc_next {
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-7 The TX MUST send a CC carrying `consumed[v]` for every VC every
            //# `cc_interval` while its replay buffer is empty, and, when a VC has been without
            //# credit for `cc_interval`, as soon as its replay buffer is empty. It MUST NOT send a
            //# CC while its replay buffer holds a frame.
            let repr = credit_repr(agreed.vcs, &self.consumed);
            let t = self.emit_control(buf, LinkFrame::CreditResync(repr))?;
            self.counters.cc_sent += 1;
            self.cc_next = now.saturating_add(self.cfg.cc_interval);
            return Ok(Some(t));
        }
        if self.flushed > 0 {
            // FLUSH: no DATA until the flushed frames are reported.
            return Ok(None);
        }
        if let Some(i) = self.replay_cursor {
            return self.transmit_replay(i, buf).map(Some);
        }
        self.transmit_new(now, &agreed, buf)
    }

    /// The next event for the upper layer. A `Delivered` or `Lost` payload borrows the link's
    /// buffer until the next call that takes `&mut self`.
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.settle(self.now);
        let rec = self.events.pop_front()?;
        match rec {
            EvRec::Up(a) => {
                self.status_events = self.status_events.saturating_sub(1);
                Some(Event::LinkUp(a))
            }
            EvRec::Down(r) => {
                self.status_events = self.status_events.saturating_sub(1);
                Some(Event::LinkDown(r))
            }
            EvRec::Delivered => {
                self.pending_pop = Some(Pop::Rx);
                let (m, bytes) = self.rx.front()?;
                Some(Event::Delivered {
                    vc: m.vc,
                    seq: m.seq,
                    payload: bytes,
                    release: Release {
                        vc: m.vc,
                        credits: m.credits,
                        epoch: m.epoch,
                    },
                })
            }
            EvRec::Flushed => {
                self.pending_pop = Some(Pop::Replay);
                let (m, bytes) = self.replay.front()?;
                let at = usize::from(m.payload_at);
                let payload = bytes.get(at..at + usize::from(m.payload_len))?;
                Some(Event::Lost {
                    vc: m.vc,
                    reason: LostReason::UnknownFate,
                    payload,
                })
            }
            EvRec::Oversize(vc) => {
                self.pending_pop = Some(Pop::Queue(vc));
                let (_, payload) = self.queues.get(vc.index())?.front()?;
                Some(Event::Lost {
                    vc,
                    reason: LostReason::ExceedsPeerMfs,
                    payload,
                })
            }
        }
    }

    /// The earliest deadline of a running timer (INIT, ACK, replay, CF, CC): when to call
    /// [`Link::handle_timeout`] and then [`Link::poll_transmit`] if no input comes first. Work
    /// that is due at once (a NACK, an ACK, a frame with credit) is found by `poll_transmit`,
    /// which the caller calls whenever its wire can take a frame. `None` while the physical
    /// link is down.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if !self.physical {
            return None;
        }
        if self.agreed.is_none() {
            return Some(self.init_next.max(self.now));
        }
        let mut t = self.last_cf.saturating_add(self.cfg.cf_max_interval);
        if self.freed_since_cf >= self.cfg.cf_min_credits {
            t = t.min(self.last_cf.saturating_add(self.cfg.cf_min_interval));
        }
        for d in [self.ack_deadline, self.replay_deadline]
            .into_iter()
            .flatten()
        {
            t = t.min(d);
        }
        if self.replay_frames() == 0 {
            t = t.min(self.cc_next);
        }
        Some(t.max(self.now))
    }

    // ----- internals: bring-up -------------------------------------------------------------

    fn draw_nonce(&mut self) -> u32 {
        // SplitMix64 over (seed, draw index): deterministic, and two draws differ.
        loop {
            self.nonces_drawn += 1;
            let mut z = self
                .cfg
                .nonce_seed
                .wrapping_add(self.nonces_drawn.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let n = (z >> 32) as u32;
            if n != self.nonce {
                return n;
            }
        }
    }

    fn own_init(&self) -> InitRepr {
        let mut credits = [0u32; 8];
        for (c, g) in credits
            .iter_mut()
            .zip(self.cfg.rx_credits.iter())
            .take(usize::from(self.cfg.vcs))
        {
            *c = *g;
        }
        InitRepr {
            nonce: self.nonce,
            vcs: self.cfg.vcs,
            credit_size: self.cfg.credit_size,
            mfs: self.cfg.mfs,
            window: self.cfg.llr_window,
            credits,
        }
    }

    fn enter_init(&mut self, now: Instant) {
        self.nonce = self.draw_nonce();
        self.echo_ok = false;
        self.init_next = now;
    }

    fn on_init(&mut self, now: Instant, init: InitRepr, src: MacAddr) {
        self.echo_due = Some(init.nonce);
        self.peer_mac = Some(src);
        match (&self.agreed, &self.peer_init) {
            (Some(_), Some(p)) if p.nonce != init.nonce => {
                //= docs/spec/link.md#2-bring-up
                //# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the
                //# last INIT it accepted MUST re-initialise (§6): the peer has restarted.
                self.reinit(now, DownReason::PeerRestart);
                self.peer_init = Some(init);
            }
            (Some(_), _) => {}
            (None, _) => {
                self.peer_init = Some(init);
                self.try_up(now);
            }
        }
    }

    fn on_init_echo(&mut self, now: Instant, echo_nonce: u32, init: InitRepr, src: MacAddr) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-3 An end MUST enter UP only when it has both received an INIT_ECHO whose echo
        //# nonce is its current nonce and received an INIT from the peer. INIT_ECHO frames with
        //# another echo nonce MUST be ignored and counted.
        if echo_nonce != self.nonce || self.agreed.is_some() {
            self.counters.init_echoes_ignored += 1;
            return;
        }
        self.counters.init_echoes_received += 1;
        self.peer_mac = Some(src);
        self.echo_ok = true;
        // The echo carries the peer's parameters too; its INIT stays the one that counts.
        let _ = init;
        self.try_up(now);
    }

    fn try_up(&mut self, now: Instant) {
        let (true, Some(peer)) = (self.echo_ok, self.peer_init) else {
            return;
        };
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-4 The parameters in use while UP are agreed as follows: the number of VCs and
        //# the MFS are the smaller of the two announced values; the LLR window of each direction
        //# is the smaller of the two windows; the TX of each end uses the credits granted and
        //# the credit size announced by the peer (its RX's buffer), and its RX uses its own.
        let vcs = self.cfg.vcs.min(peer.vcs);
        let mut tx_credits = [0u32; 8];
        for (c, g) in tx_credits
            .iter_mut()
            .zip(peer.credits.iter())
            .take(usize::from(vcs))
        {
            *c = *g;
        }
        let agreed = Agreed {
            vcs,
            mfs: self.cfg.mfs.min(peer.mfs),
            window: self.cfg.llr_window.min(peer.window),
            tx_credit_size: peer.credit_size,
            tx_credits,
        };
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
        //# sequence number to 0, its RX last good sequence number to 0xFFFFF (WIRE-4.2-1), and
        //# every credit counter of both sides to 0.
        self.next_seq = Seq::new(0);
        self.expected = Seq::new(0);
        self.last_good = Seq::new(0).sub(1);
        self.consumed = [0; 8];
        self.freed_seen = [0; 8];
        self.received = [0; 8];
        self.freed = [0; 8];
        self.stalled_since = [None; 8];
        self.freed_since_cf = 0;
        self.cf_forced = false;
        self.last_cf = now;
        self.cc_next = now.saturating_add(self.cfg.cc_interval);
        self.unacked_bytes = 0;
        self.ack_deadline = None;
        self.ack_due = false;
        self.replay_cursor = None;
        self.replay_count = 0;
        self.replay_deadline = None;
        self.rx_state = RxState::SendAcks;
        self.agreed = Some(agreed);
        self.counters.link_ups += 1;
        self.push_status(EvRec::Up(agreed));
    }

    /// Leaves UP: RX to OFF, timers stopped (the caller decides about the replay buffer).
    fn go_down(&mut self) {
        self.agreed = None;
        self.rx_state = RxState::Off;
        self.ack_due = false;
        self.ack_deadline = None;
        self.unacked_bytes = 0;
        self.replay_deadline = None;
        self.replay_cursor = None;
        self.replay_count = 0;
        self.echo_ok = false;
        // Delivered frames stay delivered; their buffer is freed by the reset (LINK-6-4).
        self.epoch = self.epoch.wrapping_add(1);
    }

    fn reinit(&mut self, now: Instant, reason: DownReason) {
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST
        //# re-initialise: enter INIT (§2) with a new nonce, reset its RX to OFF until UP, and
        //# report a link-down event to the upper layer; on UP it MUST report a link-up event.
        let was_up = self.agreed.is_some();
        self.flush_replay();
        self.go_down();
        self.counters.reinits += 1;
        if was_up || self.flushed > 0 {
            self.push_status(EvRec::Down(reason));
        }
        self.queue_flushed_events();
        self.enter_init(now);
    }

    // ----- internals: LLR transmit ---------------------------------------------------------

    fn live_replay_bytes(&self) -> usize {
        if self.flushed == 0 {
            self.replay.bytes()
        } else {
            // While flushed frames wait to be reported nothing else is in the buffer.
            0
        }
    }

    /// Moves every frame of the replay buffer to the flushed state (LINK-6-1); the caller
    /// queues the events after the status event.
    fn flush_replay(&mut self) {
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report
        //# them to the upper layer, in sequence order, as frames of unknown fate: each may have
        //# been delivered once or not at all. It MUST NOT report them as delivered and MUST NOT
        //# retransmit them after re-initialisation.
        let n = self.replay.len() - self.flushed;
        if n > 0 {
            self.counters.frames_unknown_fate += n as u64;
        }
        self.replay_cursor = None;
        self.replay_deadline = None;
        self.flushed_new = n;
        self.flushed = self.replay.len();
    }

    fn queue_flushed_events(&mut self) {
        for _ in 0..self.flushed_new {
            self.events.push_back(EvRec::Flushed);
        }
        self.flushed_new = 0;
    }

    fn start_replay(&mut self, now: Instant) {
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-7 The TX MUST count replays that happen without any acknowledgement progress
        //# in between; the count returns to 0 when an ACK or NACK acknowledges at least one
        //# frame. When a replay would make it exceed `replay_count_max` the TX MUST enter FLUSH
        //# instead.
        if self.replay_count >= self.cfg.replay_count_max {
            self.counters.flushes += 1;
            self.reinit(now, DownReason::Flush);
            return;
        }
        self.replay_count += 1;
        self.replay_cursor = Some(0);
        self.replay_deadline = Some(now.saturating_add(self.cfg.replay_timer));
    }

    fn on_ack(&mut self, now: Instant, s: Seq, nack: bool) {
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-4 An ACK or NACK carrying *S* acknowledges every frame of the replay buffer up
        //# to and including *S*. The TX MUST accept it only if *S* lies between the sequence
        //# number before the oldest frame of the buffer and the newest frame sent, inclusive
        //# (modulo 2^20); otherwise it is stale or impossible and MUST be ignored and counted.
        let live = self.replay.len() - self.flushed;
        let oldest = self
            .replay
            .get(self.flushed)
            .map_or(self.next_seq, |(m, _)| m.seq);
        let before = oldest.sub(1);
        // Frames acknowledged by S: S - before, which must not exceed the live frames.
        let n = s.distance_from(before) as usize;
        if n > live {
            self.counters.stale_acks += 1;
            return;
        }
        for _ in 0..n {
            self.replay.pop_front();
        }
        if n > 0 {
            self.replay_count = 0;
            self.replay_deadline = if self.replay.is_empty() {
                None
            } else {
                Some(now.saturating_add(self.cfg.replay_timer))
            };
            self.replay_cursor = match self.replay_cursor {
                Some(c) if c > n => Some(c - n),
                Some(_) if !self.replay.is_empty() => Some(0),
                _ => None,
            };
        }
        if nack {
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*,
            //# retransmit every frame of the replay buffer in sequence order (go-back-N), with
            //# the REPLAY flag set, before any new frame.
            if self.replay.is_empty() {
                return;
            }
            self.counters.replays_by_nack += 1;
            self.start_replay(now);
        }
    }

    fn transmit_replay(&mut self, i: usize, buf: &mut [u8]) -> Result<Transmit, BufferTooSmall> {
        let Some((m, frame)) = self.replay.get(i) else {
            self.replay_cursor = None;
            return Err(BufferTooSmall { needed: 0 });
        };
        let (vc, seq) = (m.vc, m.seq);
        let len = frame.len();
        let out = buf.get_mut(..len).ok_or(BufferTooSmall { needed: len })?;
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY
        //# flag and the FCS.
        out.copy_from_slice(frame);
        if let Some(b) = out.get_mut(self.eth_len + 1) {
            *b |= FLAG_REPLAY;
        }
        let body = len - fcs::FCS_LEN;
        let sum = fcs::fcs_bytes(out.get(..body).unwrap_or(&[]));
        if let Some(f) = out.get_mut(body..) {
            f.copy_from_slice(&sum);
        }
        self.counters.frames_replayed += 1;
        self.replay_cursor = if i + 1 < self.replay.len() {
            Some(i + 1)
        } else {
            None
        };
        Ok(Transmit {
            len,
            kind: FrameKind::Data,
            data: Some((vc, seq, true)),
        })
    }

    fn replay_has_room(&self, agreed: &Agreed, len: usize) -> bool {
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
        //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it
        //# hold more than `replay_max_bytes` bytes.
        let max_frames = (agreed.window.min(self.cfg.replay_max_frames)) as usize;
        self.replay.len() < max_frames
            && self.replay.bytes() + len <= self.cfg.replay_max_bytes as usize
            && self.replay.fits(len)
    }

    fn cost(&self, len: usize, credit_size: u16) -> u32 {
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
        //# `ceil((len + credit_overhead) / credit_size)` credits, with the peer's `credit_size`
        //# at the TX and the RX's own at the RX (LINK-2-4 makes them equal).
        let total = len + usize::from(self.cfg.credit_overhead);
        let cs = usize::from(credit_size.max(1));
        u32::try_from(total.div_ceil(cs)).unwrap_or(u32::MAX)
    }

    fn transmit_new(
        &mut self,
        now: Instant,
        agreed: &Agreed,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        let vcs = usize::from(agreed.vcs);
        let mut replay_full = false;
        for k in 0..vcs {
            let v = (self.rr + k) % vcs;
            if self.queue_blocked[v] {
                continue;
            }
            let Some(q) = self.queues.get(v) else {
                continue;
            };
            let Some((_, payload)) = q.front() else {
                continue;
            };
            let len = frame_len(self.eth_len, payload.len());
            if len > usize::from(agreed.mfs) {
                self.counters.oversize_for_peer += 1;
                self.queue_blocked[v] = true;
                self.events
                    .push_back(EvRec::Oversize(Vc::new(v as u8).unwrap_or_default()));
                continue;
            }
            if replay_full || !self.replay_has_room(agreed, len) {
                // The replay buffer bounds every VC alike; no VC can go.
                replay_full = true;
                continue;
            }
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at
            //# most `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the
            //# cost to `consumed[v]`. A VC without credit MUST NOT stop the other VCs.
            let cost = self.cost(len, agreed.tx_credit_size);
            let in_use = diff20(self.consumed[v], self.freed_seen[v]);
            if cost > agreed.tx_credits[v].saturating_sub(in_use) {
                if self.stalled_since[v].is_none() {
                    self.stalled_since[v] = Some(now);
                    self.counters.credit_stalls[v] += 1;
                }
                continue;
            }
            if buf.len() < len {
                return Err(BufferTooSmall { needed: len });
            }
            if let Some(since) = self.stalled_since[v].take() {
                self.counters.credit_stall_ns[v] += now.since(since).as_nanos() as u64;
            }
            let t = self.send_new(now, v, len, buf)?;
            self.consumed[v] = add20(self.consumed[v], cost);
            self.rr = (v + 1) % vcs;
            return Ok(Some(t));
        }
        Ok(None)
    }

    fn send_new(
        &mut self,
        now: Instant,
        v: usize,
        len: usize,
        buf: &mut [u8],
    ) -> Result<Transmit, BufferTooSmall> {
        let vc = Vc::new(v as u8).unwrap_or_default();
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by
        //# one (modulo 2^20) for every new frame; control frames carry none.
        let seq = self.next_seq;
        // Ask for an ACK at once when this frame fills half the replay buffer, by frames or by
        // bytes, so that the buffer drains before it stops the TX.
        let half_frames = (self.cfg.replay_max_frames as usize).div_ceil(2);
        let half_bytes = self.cfg.replay_max_bytes as usize / 2;
        let crosses = |before: usize, after: usize, mark: usize| before < mark && after >= mark;
        let ack_req = crosses(self.replay.len(), self.replay.len() + 1, half_frames)
            || crosses(self.replay.bytes(), self.replay.bytes() + len, half_bytes);
        let eth = self.eth();
        let Some(q) = self.queues.get(v) else {
            return Err(BufferTooSmall { needed: len });
        };
        let Some((_, payload)) = q.front() else {
            return Err(BufferTooSmall { needed: len });
        };
        let payload_len = payload.len();
        let repr = FrameRepr {
            eth,
            link: LinkFrame::Data {
                header: DataHeader {
                    vc,
                    flags: DataFlags {
                        replay: false,
                        ack_req,
                    },
                    seq,
                },
                payload,
            },
        };
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-2 The TX MUST keep a copy of every DATA frame it sends in a replay buffer until
        //# an ACK or NACK acknowledges it.
        let meta = ReplayMeta {
            seq,
            vc,
            payload_at: (self.eth_len + LINK_HEADER_LEN) as u16,
            payload_len: payload_len as u16,
        };
        let Some(slot) = self.replay.push(len, meta) else {
            return Err(BufferTooSmall { needed: len });
        };
        if repr.emit(slot).is_err() {
            self.replay.pop_back();
            return Err(BufferTooSmall { needed: len });
        }
        if let (Some(out), Some((_, stored))) =
            (buf.get_mut(..len), self.replay.get(self.replay.len() - 1))
        {
            out.copy_from_slice(stored);
        }
        if let Some(q) = self.queues.get_mut(v) {
            q.pop_front();
        }
        self.next_seq = seq.next();
        if self.replay_deadline.is_none() {
            self.replay_deadline = Some(now.saturating_add(self.cfg.replay_timer));
        }
        self.counters.tx_frames[v] += 1;
        self.counters.tx_bytes[v] += len as u64;
        self.counters.replay_frames_max = self
            .counters
            .replay_frames_max
            .max(self.replay.len() as u64);
        self.counters.replay_bytes_max = self
            .counters
            .replay_bytes_max
            .max(self.replay.bytes() as u64);
        Ok(Transmit {
            len,
            kind: FrameKind::Data,
            data: Some((vc, seq, false)),
        })
    }

    // ----- internals: LLR receive ----------------------------------------------------------

    fn control_up(&mut self) -> bool {
        if self.agreed.is_none() {
            self.counters.control_not_up += 1;
            false
        } else {
            true
        }
    }

    fn count_bad_frame(&mut self, kind: ErrorKind, action: Action) {
        match action {
            Action::DiscardDamaged => {
                if kind == ErrorKind::BadFcs {
                    self.counters.fcs_errors += 1;
                } else {
                    self.counters.damaged_frames += 1;
                }
                if self.agreed.is_some() && self.rx_state == RxState::SendAcks {
                    self.rx_state = RxState::SendNack;
                }
            }
            Action::DiscardForeign => self.counters.foreign_frames += 1,
            _ => self.counters.malformed_frames += 1,
        }
    }

    fn acked_now(&mut self) {
        self.unacked_bytes = 0;
        self.ack_deadline = None;
        self.ack_due = false;
    }

    fn on_data(&mut self, now: Instant, header: DataHeader, payload: &[u8], len: usize) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP. DATA frames received while
        //# not UP MUST be discarded and counted.
        let Some(agreed) = self.agreed else {
            self.counters.data_not_up += 1;
            return;
        };
        let v = header.vc.index();
        if v >= usize::from(agreed.vcs) {
            self.counters.malformed_frames += 1;
            return;
        }
        let seq = header.seq;
        if seq == self.expected {
            let cost = self.cost(len, self.cfg.credit_size);
            let free =
                self.cfg.rx_credits[v].saturating_sub(diff20(self.received[v], self.freed[v]));
            let meta = RxMeta {
                vc: header.vc,
                seq,
                credits: cost,
                epoch: self.epoch,
            };
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free
            //# buffer of its VC. It MUST discard it as if it had not arrived (no ACK, no NACK)
            //# and count a credit overrun; the TX's replay recovers it.
            if cost > free || self.events.len() >= self.events.capacity() {
                self.counters.credit_overruns[v] += 1;
                return;
            }
            let Some(slot) = self.rx.push(payload.len(), meta) else {
                self.counters.credit_overruns[v] += 1;
                return;
            };
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted:
            //# delivered to the upper layer once, the expected number advanced by one, and the
            //# frame's bytes added to the count of bytes not yet acknowledged. In NACK_SENT,
            //# accepting it returns the RX to SEND_ACKS.
            slot.copy_from_slice(payload);
            self.events.push_back(EvRec::Delivered);
            self.received[v] = add20(self.received[v], cost);
            let total: u64 = (0..usize::from(agreed.vcs))
                .map(|i| u64::from(diff20(self.received[i], self.freed[i])))
                .sum();
            self.counters.rx_occupied_max_credits =
                self.counters.rx_occupied_max_credits.max(total);
            self.counters.rx_frames[v] += 1;
            self.counters.rx_bytes[v] += len as u64;
            self.last_good = seq;
            self.expected = seq.next();
            self.rx_state = RxState::SendAcks;
            self.unacked_bytes = self.unacked_bytes.saturating_add(len as u32);
            if self.ack_deadline.is_none() {
                self.ack_deadline = Some(now.saturating_add(self.cfg.ack_timer));
            }
            if self.unacked_bytes >= self.cfg.ack_spacing || header.flags.ack_req {
                self.ack_due = true;
            }
            return;
        }
        let behind = self.expected.sub(1).distance_from(seq);
        if behind < agreed.window {
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the
            //# expected one is a duplicate: it MUST be discarded and counted, and the RX MUST
            //# send an ACK carrying the last accepted sequence number so that a TX whose ACKs
            //# were lost learns of them.
            self.counters.duplicates += 1;
            self.ack_due = true;
            return;
        }
        match self.rx_state {
            RxState::SendAcks => {
                self.counters.discarded_after_nack += 1;
                self.rx_state = RxState::SendNack;
            }
            RxState::NackSent => {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-4 In NACK_SENT the RX MUST discard, without sending another NACK,
                //# every frame until the expected sequence number arrives, with one exception:
                //# a frame with the REPLAY flag whose sequence number is the one after the
                //# expected shows that the replay the NACK asked for has lost the expected
                //# frame again, and the RX MUST then send one more NACK.
                self.counters.discarded_after_nack += 1;
                if header.flags.replay && seq == self.expected.next() {
                    self.rx_state = RxState::SendNack;
                }
            }
            RxState::SendNack | RxState::Off => self.counters.discarded_after_nack += 1,
        }
    }

    // ----- internals: CBFC -----------------------------------------------------------------

    fn on_cf(&mut self, c: &CreditRepr) {
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-6 On a CF, the TX MUST set `freed_seen[v]` to the carried value for every VC in
        //# the mask when the value is ahead of `freed_seen[v]` by less than 2^19 and not ahead
        //# of `consumed[v]`; otherwise the entry is stale or impossible and MUST be ignored and
        //# counted. A lost CF is therefore repaired by the next one.
        let vcs = self.agreed.map_or(0, |a| usize::from(a.vcs));
        for (v, entry) in c.counters.iter().enumerate() {
            let Some(value) = *entry else { continue };
            if v >= vcs {
                self.counters.stale_cf_entries += 1;
                continue;
            }
            let ahead = diff20(value, self.freed_seen[v]);
            let beyond = diff20(value, self.consumed[v]);
            if ahead == 0 {
                continue;
            }
            if ahead < SEQ_HALF && (beyond == 0 || beyond >= SEQ_HALF) {
                self.freed_seen[v] = value;
            } else {
                self.counters.stale_cf_entries += 1;
            }
        }
    }

    fn on_cc(&mut self, c: &CreditRepr) {
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose `consumed[v]` is ahead of
        //# `received[v]` by less than 2^19, add the difference to both `received[v]` and
        //# `freed[v]`: those credits were paid for frames it will never hold. It MUST then send
        //# a CF at once.
        let vcs = self.agreed.map_or(0, |a| usize::from(a.vcs));
        for (v, entry) in c.counters.iter().enumerate() {
            let Some(value) = *entry else { continue };
            if v >= vcs {
                self.counters.stale_cc_entries += 1;
                continue;
            }
            let d = diff20(value, self.received[v]);
            if d == 0 {
                continue;
            }
            if d < SEQ_HALF {
                self.received[v] = add20(self.received[v], d);
                self.freed[v] = add20(self.freed[v], d);
                self.counters.credits_recovered[v] += u64::from(d);
            } else {
                self.counters.stale_cc_entries += 1;
            }
        }
        self.cf_forced = true;
    }

    fn cf_due(&self, now: Instant) -> bool {
        self.cf_forced
            || (self.freed_since_cf >= self.cfg.cf_min_credits
                && now >= self.last_cf.saturating_add(self.cfg.cf_min_interval))
            || now >= self.last_cf.saturating_add(self.cfg.cf_max_interval)
    }

    // ----- internals: frames and events ----------------------------------------------------

    fn eth(&self) -> EthernetRepr {
        //= docs/spec/wire.md#23-mac-addresses
        //# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
        EthernetRepr {
            dst: self.peer_mac.unwrap_or(MacAddr::LINK_LOCAL),
            src: self.cfg.mac,
            vlan: self.cfg.vlan,
        }
    }

    fn emit_control(
        &mut self,
        buf: &mut [u8],
        link: LinkFrame<'_>,
    ) -> Result<Transmit, BufferTooSmall> {
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-9 Control frames MUST NOT consume credits and MUST NOT be refused for want of
        //# credit.
        let repr = FrameRepr {
            eth: self.eth(),
            link,
        };
        let needed = repr.buffer_len();
        let len = repr.emit(buf).map_err(|_| BufferTooSmall { needed })?;
        Ok(Transmit {
            len,
            kind: link.kind(),
            data: None,
        })
    }

    fn push_status(&mut self, rec: EvRec) {
        if self.status_events >= STATUS_EVENTS_MAX {
            // Merge: a down after an unpolled up cancels both; the counters keep every one.
            if let (EvRec::Down(_), Some(EvRec::Up(_))) = (rec, self.events.back()) {
                self.events.pop_back();
                self.status_events -= 1;
                return;
            }
        }
        self.status_events += 1;
        self.events.push_back(rec);
    }

    /// Completes the removal of the record the last event lent out, and records the time.
    fn settle(&mut self, now: Instant) {
        if now > self.now {
            self.now = now;
        }
        match self.pending_pop.take() {
            None => {}
            Some(Pop::Rx) => {
                self.rx.pop_front();
            }
            Some(Pop::Replay) => {
                self.replay.pop_front();
                self.flushed = self.flushed.saturating_sub(1);
            }
            Some(Pop::Queue(vc)) => {
                if let Some(q) = self.queues.get_mut(vc.index()) {
                    q.pop_front();
                }
                if let Some(b) = self.queue_blocked.get_mut(vc.index()) {
                    *b = false;
                }
            }
        }
    }
}

fn credit_repr(vcs: u8, values: &[u32; 8]) -> CreditRepr {
    let mut counters = [None; 8];
    for (c, v) in counters
        .iter_mut()
        .zip(values.iter())
        .take(usize::from(vcs))
    {
        *c = Some(*v & Seq::MASK);
    }
    CreditRepr { counters }
}
