//! One end of one link: the state machine of link.md.

use alloc::vec::Vec;
use core::fmt;

use ethlink_protocol::{
    Action, Capabilities, CreditRepr, DataFlags, DataHeader, ETH_HEADER_LEN, ErrorKind,
    EthernetRepr, FLAG_ACK_REQ, FLAG_REPLAY, Field, Frame, FrameKind, FrameRepr, InitRepr,
    LINK_HEADER_LEN, LinkFrame, MacAddr, NETWORK_HEADER_LEN, Seq, VLAN_TAG_LEN, Vc,
    emit_data_in_place, emit_data_in_place_without_fcs, fcs, fcs::FcsStatus, frame_len, write_fcs,
};

use crate::config::{Agreed, Config, ConfigError};
use crate::counters::Counters;
use crate::ring::{Data, Ring, Shared};
use crate::slots::Slots;
use crate::time::{Duration, Instant, nanos};

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
    /// The frame was queued on a VC beyond the number agreed with the peer; it was never sent.
    VcNotAgreed,
    /// The upper layer took the frame back with [`Link::withdraw`] before it was sent; it was
    /// never sent.
    Withdrawn,
}

/// A claim on receive-buffer credits, handed out with each delivered frame. Give it back with
/// [`Link::release`] when the upper layer has drained the frame from the buffer; that is what
/// returns credits to the peer (LINK-5-4). It is neither `Copy` nor `Clone`, so it can be given
/// back only once. A claim dropped without being given back is buffer never drained: it stays
/// charged to its VC, and after the next re-initialisation the link does not come UP again
/// (LINK-2-18).
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
        /// Network header and transactions, as submitted at the peer. Empty for a frame accepted
        /// by the LLR whose body is malformed (LINK-4-17): the upper layer counts it and releases
        /// it at once.
        payload: &'a [u8],
        /// The buffer it occupies, to give back when drained.
        release: Release,
    },
    /// Something the upper layer should know that changes no frame's fate: a refused INIT, an
    /// initialisation that takes too long.
    Notice(Notice),
    /// A submitted frame the link could not deliver, or that the upper layer withdrew, with its
    /// payload, in submission order on its VC.
    Lost {
        /// Its VC.
        vc: Vc,
        /// Why.
        reason: LostReason,
        /// The payload as submitted.
        payload: &'a [u8],
    },
}

/// A report of [`Event::Notice`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Notice {
    /// An INIT or INIT_ECHO was refused: the peer's grant on `vc` cannot carry one frame of the
    /// MFS that would be agreed (LINK-2-12). The end stays in INIT. Reported once per distinct
    /// reason and initialisation; `init_refused` counts every refused frame.
    InitRefused {
        /// True for an INIT_ECHO, false for an INIT.
        echo: bool,
        /// The first VC whose grant is too small.
        vc: Vc,
        /// The peer's grant on it, in credits.
        grant: u32,
        /// Credits one frame of the agreed MFS costs: `ceil((mfs + credit_overhead) /
        /// credit_size)` with the peer's credit size and overhead.
        needed: u32,
        /// The MFS that would be agreed.
        mfs: u16,
        /// The peer's credit size.
        credit_size: u16,
        /// The peer's credit overhead.
        credit_overhead: u8,
    },
    /// The end has been in INIT, physically up, for `init_timeout` without coming UP
    /// (LINK-2-14). It goes on sending INIT.
    InitTimeout {
        /// Time since it entered INIT.
        waited: Duration,
    },
}

/// A DATA frame taken back by [`Link::stomp_last`] (LINK-3-12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Stomped {
    /// Its VC.
    pub vc: Vc,
    /// Its sequence number, which the next new DATA frame carries instead.
    pub seq: Seq,
    /// Credits refunded to its VC.
    pub credits: u32,
    /// Its length, FCS included.
    pub len: usize,
}

/// A DATA frame a link sent, for whoever carries it (a simulated wire): a long frame is held by
/// reference, its bytes in the replay buffer shared instead of copied (cloning it shares them
/// again); a short one, up to [`SharedFrame::INLINE_MAX`] bytes, is carried as a copy of its own,
/// which costs less than counting references to the buffer. The bytes are the same either way.
#[derive(Debug, Clone)]
pub struct SharedFrame {
    data: FrameBytes,
    len: usize,
    fcs: bool,
}

/// The bytes of a [`SharedFrame`].
#[derive(Debug, Clone)]
enum FrameBytes {
    /// A long frame's buffer, with what its payload's writer vouched for.
    Shared(Shared, Option<Provenance>),
    Inline(Inline),
}

/// A short frame's copy, aligned so that it moves in whole words.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(16))]
struct Inline([u8; SharedFrame::INLINE_MAX]);

impl SharedFrame {
    /// The longest frame carried as a copy rather than by reference: a frame of the minimum
    /// size (wire.md §2.4), which every frame that carries a few bytes is.
    pub const INLINE_MAX: usize = 64;

    /// The frame, destination MAC through FCS; the last four bytes are the FCS only if
    /// [`SharedFrame::has_fcs`] (see [`Link::defer_fcs`]).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.data {
            FrameBytes::Shared(d, _) => d.get(..self.len).unwrap_or(&[]),
            FrameBytes::Inline(b) => b.0.get(..self.len).unwrap_or(&[]),
        }
    }

    /// Whether the FCS is written: false for a frame of a link that defers it
    /// ([`Link::defer_fcs`]), whose receiver takes its FCS status from the wire.
    pub fn has_fcs(&self) -> bool {
        self.fcs
    }

    /// Writes the whole frame into `out` (replacing what it held), its FCS computed if it is
    /// deferred: the bytes a real transmitter puts on the wire.
    pub fn write_exact(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.as_bytes());
        if !self.fcs {
            write_fcs(out);
        }
    }

    /// Its length, FCS included.
    pub fn len(&self) -> usize {
        self.len
    }

    /// What the writer of its payload vouched for ([`Outgoing::vouch`]), carried with the frame
    /// unread. A short frame carried as a copy has none.
    pub fn provenance(&self) -> Option<Provenance> {
        match &self.data {
            FrameBytes::Shared(_, p) => *p,
            FrameBytes::Inline(_) => None,
        }
    }

    /// True for a frame of no bytes (never one a link sent).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The buffer holding the frame (its first [`SharedFrame::len`] bytes), if this is the last
    /// reference to it: its sender's replay buffer has let it go, as on the frame's
    /// acknowledgement, and no other copy of the reference is left (a short frame carried as a
    /// copy is always its own). Otherwise the reference itself comes back.
    pub fn into_buffer(self) -> Result<Vec<u8>, SharedFrame> {
        let SharedFrame { data, len, fcs } = self;
        match data {
            FrameBytes::Shared(a, p) => alloc::sync::Arc::try_unwrap(a).map_err(|a| SharedFrame {
                data: FrameBytes::Shared(a, p),
                len,
                fcs,
            }),
            // A short frame's copy is this reference's alone.
            FrameBytes::Inline(b) => Ok(b.0.get(..len).unwrap_or(&b.0).to_vec()),
        }
    }
}

impl AsRef<[u8]> for SharedFrame {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

/// Where [`Link::handle_frame_deliver`] hands an accepted DATA frame: its VC, sequence number,
/// payload and the release that gives its buffer back.
pub type Deliver<'a> = &'a mut dyn FnMut(Vc, Seq, &[u8], Release);

/// Where `payload`, a payload handed to a [`Deliver`], lies in `frame`, the bytes given to
/// [`Link::handle_frame_deliver`]: its offset, so that a caller can take it from the frame after
/// the call (or keep the frame instead of a copy), or `None` if it is not within them.
pub fn payload_offset(frame: &[u8], payload: &[u8]) -> Option<usize> {
    let at = (payload.as_ptr() as usize).checked_sub(frame.as_ptr() as usize)?;
    (at.checked_add(payload.len())? <= frame.len()).then_some(at)
}

/// What the writer of a payload knows of some of its bytes without reading them back: the `len`
/// bytes from `at` (counted from the payload's first byte) are the bytes its writer names `name`
/// (an endpoint names a run of its data pattern by seed and position). A link carries it with
/// the payload, unread, from [`Outgoing::vouch`] to [`SharedFrame::provenance`], and a switch
/// from frame to frame, so that the receiver of a frame handed on by reference can take the name
/// instead of reading the bytes again. Nothing that changes a payload's bytes keeps it
/// ([`Outgoing::payload_mut`] forgets it; a damaged frame is a copy of its own), and a frame
/// carried as bytes has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Provenance {
    /// Where the bytes begin in the payload.
    pub at: u32,
    /// How many bytes.
    pub len: u32,
    /// Their writer's name for them.
    pub name: [u64; 2],
}

impl Provenance {
    /// The name of `data`, if `data` is exactly the bytes this speaks of in `payload` (a slice
    /// of it).
    pub fn of(self, payload: &[u8], data: &[u8]) -> Option<[u64; 2]> {
        let at = payload_offset(payload, data)?;
        (u32::try_from(at).ok() == Some(self.at)
            && u32::try_from(data.len()).ok() == Some(self.len))
        .then_some(self.name)
    }
}

/// A payload laid out in a buffer of its own for one link, with room for the headers, padding and
/// FCS of its frame: made by [`Link::outgoing`] (the one copy of the payload), held by the caller
/// (a switch's queue) and queued by [`Link::submit_outgoing`] without another copy.
#[derive(Debug)]
pub struct Outgoing {
    data: Vec<u8>,
    at: usize,
    len: usize,
    provenance: Option<Provenance>,
}

impl Outgoing {
    /// The payload: network header and transactions.
    pub fn payload(&self) -> &[u8] {
        self.data.get(self.at..self.at + self.len).unwrap_or(&[])
    }

    /// The payload, to write in place. Forgets the payload's [`Provenance`]: the bytes it
    /// vouched for may change.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.provenance = None;
        self.data
            .get_mut(self.at..self.at + self.len)
            .unwrap_or(&mut [])
    }

    /// Records what the payload's writer knows of some of its bytes, for the receiver of its
    /// frame ([`Provenance`]); refused (nothing recorded) unless the bytes lie within the
    /// payload. The writer answers for it: the bytes must be those it names.
    pub fn vouch(&mut self, provenance: Provenance) -> bool {
        let end = u64::from(provenance.at) + u64::from(provenance.len);
        let fits = end <= self.len as u64;
        if fits {
            self.provenance = Some(provenance);
        }
        fits
    }

    /// What the payload's writer vouched for, if nothing changed the payload since.
    pub fn provenance(&self) -> Option<Provenance> {
        self.provenance
    }

    /// Gives the buffer back for reuse.
    pub fn into_buffer(self) -> Vec<u8> {
        self.data
    }
}

/// Where a link's frames put their payload: what [`Layout::outgoing`] needs to lay a payload out
/// for that link's frames without the link at hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    eth_len: usize,
}

impl Layout {
    /// The layout of the frames of a link configured by `cfg`.
    pub fn of(cfg: &Config) -> Layout {
        Layout {
            eth_len: ETH_HEADER_LEN + if cfg.vlan.is_some() { VLAN_TAG_LEN } else { 0 },
        }
    }

    /// Room for a payload of `len` bytes laid out in `buf` (its storage reused) for the frames
    /// of a link of this layout, to be written in place ([`Outgoing::payload_mut`]) by a caller
    /// that writes all of it: a payload made where it will be sent from, with no copy. Its bytes
    /// are whatever `buf` held until then (zero where `buf` was shorter).
    pub fn outgoing_room(self, mut buf: Vec<u8>, len: usize) -> Outgoing {
        let hdr = self.eth_len + LINK_HEADER_LEN;
        buf.resize(frame_len(self.eth_len, len), 0);
        Outgoing {
            data: buf,
            at: hdr,
            len,
            provenance: None,
        }
    }

    /// Takes `buf`, which holds a payload of `len` bytes at `at` (a frame received from a link
    /// of the same layout), as that payload laid out for the frames of a link of this layout,
    /// without moving it: possible when `at` is where this layout puts a payload. Otherwise
    /// `buf` comes back.
    pub fn in_place(self, mut buf: Vec<u8>, at: usize, len: usize) -> Result<Outgoing, Vec<u8>> {
        let hdr = self.eth_len + LINK_HEADER_LEN;
        if at != hdr || buf.len() < at + len {
            return Err(buf);
        }
        buf.resize(frame_len(self.eth_len, len), 0);
        Ok(Outgoing {
            data: buf,
            at: hdr,
            len,
            provenance: None,
        })
    }

    /// Lays `payload` out in `buf` (its contents are overwritten, its storage reused) for the
    /// frames of a link of this layout: the argument of [`Link::submit_outgoing`].
    pub fn outgoing(self, mut buf: Vec<u8>, payload: &[u8]) -> Outgoing {
        let plen = payload.len();
        let hdr = self.eth_len + LINK_HEADER_LEN;
        buf.resize(frame_len(self.eth_len, plen), 0);
        if let Some(slot) = buf.get_mut(hdr..hdr + plen) {
            slot.copy_from_slice(payload);
        }
        Outgoing {
            data: buf,
            at: hdr,
            len: plen,
            provenance: None,
        }
    }
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

/// A receive buffer that held more than its VC grants: what the check of every accepted frame
/// found the first time it failed. CBFC (LINK-5-2, LINK-4-6) and the echo held back across a
/// re-initialisation (LINK-2-18) make it impossible for a conformant pair; a fabric run that
/// sees one fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferOverrun {
    /// When the frame that overfilled the buffer was accepted.
    pub at: Instant,
    /// The VC whose buffer it was.
    pub vc: Vc,
    /// Credits the buffer held with that frame.
    pub held: u32,
    /// Credits the VC grants (`rx_credits`).
    pub granted: u32,
}

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
    /// Credits it cost (refunded by a stomp, LINK-3-12).
    credits: u32,
    /// When it was first sent: its age runs from here (LINK-3-18).
    sent: Instant,
    /// What its payload's writer vouched for, handed on with the frame when it is shared.
    provenance: Option<Provenance>,
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
    Notice(Notice),
    /// The front of the receive ring.
    Delivered,
    /// The front of the replay ring (flushed frames).
    Flushed,
    /// The front of a VC's transmit queue: longer than the peer's MFS.
    Oversize(Vc),
    /// The front of a VC's transmit queue: a VC the peer does not have.
    NotAgreed(Vc),
    /// The next this many frames of a VC's transmit queue, from its front when the record is
    /// reached: withdrawn by the upper layer.
    Withdrawn(Vc, u32),
}

#[derive(Debug, Clone, Copy)]
enum Pop {
    Rx,
    Replay,
    Queue(Vc),
    Withdrawn(Vc),
}

/// The timers of a [`Config`] the link runs per frame, in nanoseconds ([`nanos`]).
#[derive(Debug, Clone, Copy)]
struct TimerNanos {
    ack_timer: u64,
    replay_timer: u64,
    llr_max_age: u64,
    cf_min_interval: u64,
    cf_max_interval: u64,
    cc_interval: u64,
}

/// Status events (up/down) that may wait unpolled before older transitions are merged.
const STATUS_EVENTS_MAX: usize = 64;

/// One end of one EthLink link: bring-up, LLR and CBFC, both directions.
///
/// Inputs are [`Link::handle_frame`], [`Link::handle_timeout`] and the commands
/// [`Link::submit`], [`Link::withdraw`], [`Link::release`], [`Link::physical_up`] and
/// [`Link::physical_down`].
/// After any of them the caller drains [`Link::poll_transmit`] (when its wire can take a frame)
/// and [`Link::poll_event`] until they return nothing, then asks [`Link::poll_timeout`] when to
/// call [`Link::handle_timeout`] next. Time passed in must never go backwards.
#[derive(Debug)]
pub struct Link {
    cfg: Config,
    /// The configuration's timers in nanoseconds, for the per-frame deadline arithmetic.
    ns: TimerNanos,
    eth_len: usize,
    now: Instant,
    physical: bool,
    agreed: Option<Agreed>,
    // Bring-up.
    nonce: u32,
    nonces_drawn: u64,
    /// The nonce of the peer this end went UP with (LINK-2-6).
    peer_nonce: Option<u32>,
    peer_mac: Option<MacAddr>,
    echo_due: Option<u32>,
    /// The nonce of the last INIT_ECHO sent.
    echoed: Option<u32>,
    /// While UP: the peer is known to be UP too (it has our INIT_ECHO of its current nonce
    /// ahead of anything we send now, or it sent a frame only an UP end sends).
    peer_up: bool,
    init_next: Instant,
    /// When the end last entered INIT, and whether LINK-2-14's report was made since.
    init_since: Instant,
    init_timeout_reported: bool,
    /// The last refusal reported since entering INIT (LINK-2-12).
    last_refusal: Option<Notice>,
    // TX, LLR.
    next_seq: Seq,
    replay: Ring<ReplayMeta>,
    flushed: usize,
    /// When the oldest frame of the replay buffer not yet flushed was first sent (the `sent` of
    /// `replay.get(flushed)`), kept beside the other deadlines: [`Link::earliest_deadline`] is
    /// asked far more often than the buffer changes, and need not read the ring's record.
    oldest_sent: Option<Instant>,
    replay_cursor: Option<usize>,
    /// The current replay has sent at least one frame (LINK-3-9).
    replay_sent_any: bool,
    /// The newest frame of the replay buffer was sent by the last call to `poll_transmit` and
    /// may still be stomped (LINK-3-12).
    stompable: bool,
    replay_count: u8,
    replay_deadline: Option<Instant>,
    // TX, CBFC.
    consumed: [u32; 8],
    freed_seen: [u32; 8],
    stalled_since: [Option<Instant>; 8],
    cc_next: Instant,
    rr: usize,
    queues: Vec<Ring<Option<Provenance>>>,
    /// Frames in all the transmit queues together (withdrawn and blocked ones included).
    queued_total: usize,
    /// A VC's queue front is reported by a pending `Oversize` or `NotAgreed` record.
    queue_blocked: [bool; 8],
    /// Frames of each VC's queue withdrawn (LINK-6-5) whose events are still pending, and their
    /// bytes. They follow the blocked front, if any, and precede every frame not withdrawn.
    withdrawn: [usize; 8],
    withdrawn_bytes: [usize; 8],
    // RX, LLR.
    rx_state: RxState,
    expected: Seq,
    last_good: Seq,
    /// In SEND_NACK and NACK_SENT: how far ahead of the expected number the last gap frame was
    /// (0: none since the NACK) (LINK-4-8).
    nack_ahead: u32,
    /// Whether a duplicate has made an ACK due since the RX last accepted a frame, sent a NACK
    /// or came UP, and the duplicate bytes since that ACK fell due (LINK-4-16).
    dup_run: bool,
    dup_bytes: u32,
    unacked_bytes: u32,
    ack_deadline: Option<Instant>,
    ack_due: bool,
    // RX, CBFC.
    received: [u32; 8],
    freed: [u32; 8],
    freed_since_cf: u32,
    /// Credits of the frames each VC's buffer holds, whatever incarnation of the link accepted
    /// them: what the memory holds, as against `received - freed`, which counts the current
    /// incarnation only (LINK-6-4).
    held: [u32; 8],
    /// Credits, over all VCs, of the frames accepted before the last re-initialisation that
    /// the buffer still holds (LINK-6-4); LINK-2-18 holds the echo back until it is 0.
    held_stale: u64,
    /// The first time a VC's buffer held more than it grants, if it ever did.
    overrun: Option<BufferOverrun>,
    /// When the last CF was sent, or UP when none has been since (`cf_max_interval` runs from
    /// either).
    last_cf: Instant,
    /// Whether a CF has been sent since UP: `cf_min_interval` runs only from a CF (LINK-5-5).
    cf_sent_since_up: bool,
    cf_forced: bool,
    epoch: u32,
    rx: Ring<RxMeta>,
    // Upper layer.
    events: Slots<EvRec>,
    /// The most records `events` may hold (see `Link::new`): storage is taken as it fills.
    events_max: usize,
    status_events: usize,
    pending_pop: Option<Pop>,
    /// Set by [`Link::poll_transmit_shared`] for its call: a DATA frame is handed out by
    /// reference instead of written into the caller's buffer: the index in the replay buffer of
    /// the frame to hand out and whether its FCS is written go into `shared_out`.
    share_out: bool,
    shared_out: Option<(usize, bool)>,
    /// DATA frames are framed without their FCS until something needs the bytes whole
    /// ([`Link::defer_fcs`]).
    defer_fcs: bool,
    counters: Counters,
}

impl Link {
    /// A link end in OFF. Its buffers are bounded now, by the configuration, and take their storage as
    /// traffic first reaches into it, never beyond those bounds.
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
        // The receive ring holds what the credits cover twice over (frames delivered before a
        // re-initialisation whose events the upper layer has not taken yet stay delivered, while
        // the reset frees their credits, LINK-6-4), plus one frame of slack for the record that
        // cannot wrap. Beyond that a frame is refused as a credit overrun and replayed later.
        let rx_bytes = usize::try_from(cfg.rx_buffer_bytes())
            .unwrap_or(usize::MAX / 4)
            .saturating_mul(2);
        let rx_recs = rx_bytes / 64 + 1;
        let rx = Ring::new(rx_bytes.saturating_add(mfs), rx_recs);
        // Every record but the status ones names a frame it reports, or (`Withdrawn`) at least
        // one: at most one per frame the receive ring, the replay ring and the transmit queues
        // can hold, plus one blocked front per VC.
        let queued_frames = usize::from(cfg.vcs).saturating_mul(cfg.tx_queue_frames as usize);
        let events_max =
            rx_recs + replay_frames + queued_frames + usize::from(cfg.vcs) + STATUS_EVENTS_MAX + 1;
        let events = Slots::new();
        let ns = TimerNanos {
            ack_timer: nanos(cfg.ack_timer),
            replay_timer: nanos(cfg.replay_timer),
            llr_max_age: nanos(cfg.llr_max_age),
            cf_min_interval: nanos(cfg.cf_min_interval),
            cf_max_interval: nanos(cfg.cf_max_interval),
            cc_interval: nanos(cfg.cc_interval),
        };
        let mut link = Link {
            ns,
            eth_len,
            now: Instant::ZERO,
            physical: false,
            agreed: None,
            nonce: 0,
            nonces_drawn: 0,
            peer_nonce: None,
            peer_mac: None,
            echo_due: None,
            echoed: None,
            peer_up: false,
            init_next: Instant::ZERO,
            init_since: Instant::ZERO,
            init_timeout_reported: false,
            last_refusal: None,
            next_seq: Seq::new(0),
            replay,
            flushed: 0,
            oldest_sent: None,
            replay_cursor: None,
            replay_sent_any: false,
            stompable: false,
            replay_count: 0,
            replay_deadline: None,
            consumed: [0; 8],
            freed_seen: [0; 8],
            stalled_since: [None; 8],
            cc_next: Instant::ZERO,
            rr: 0,
            queues,
            queued_total: 0,
            queue_blocked: [false; 8],
            withdrawn: [0; 8],
            withdrawn_bytes: [0; 8],
            rx_state: RxState::Off,
            expected: Seq::new(0),
            last_good: Seq::new(Seq::MASK),
            nack_ahead: 0,
            dup_run: false,
            dup_bytes: 0,
            unacked_bytes: 0,
            ack_deadline: None,
            ack_due: false,
            received: [0; 8],
            freed: [0; 8],
            freed_since_cf: 0,
            held: [0; 8],
            held_stale: 0,
            overrun: None,
            last_cf: Instant::ZERO,
            cf_sent_since_up: false,
            cf_forced: false,
            epoch: 0,
            rx,
            events,
            events_max,
            status_events: 0,
            pending_pop: None,
            share_out: false,
            shared_out: None,
            defer_fcs: false,
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

    /// Credits of the frames `vc`'s receive buffer holds now, those of earlier incarnations of
    /// the link included (LINK-6-4): what its memory holds, never more than
    /// [`Link::rx_grant`] (checked at every accepted frame, see [`Link::buffer_overrun`]).
    pub fn rx_held(&self, vc: Vc) -> u32 {
        self.held[vc.index()]
    }

    /// Credits the receive buffers of all VCs hold together.
    fn held_total(&self) -> u64 {
        self.held.iter().copied().map(u64::from).sum()
    }

    /// The first time a receive buffer held more than its VC grants, if it ever did: `None` in
    /// every run of a conformant pair.
    pub fn buffer_overrun(&self) -> Option<BufferOverrun> {
        self.overrun
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

    /// Frames and bytes (payloads) waiting in the transmit queue of `vc`. Frames withdrawn by
    /// [`Link::withdraw`] are not counted, though each keeps its room in the queue until its
    /// [`Event::Lost`] has been taken.
    pub fn queued(&self, vc: Vc) -> (usize, usize) {
        let v = vc.index();
        let (frames, bytes) = self.queues.get(v).map_or((0, 0), |q| (q.len(), q.bytes()));
        let withdrawn = self.withdrawn.get(v).copied().unwrap_or(0);
        let withdrawn_bytes = self.withdrawn_bytes.get(v).copied().unwrap_or(0);
        (
            frames.saturating_sub(withdrawn),
            bytes.saturating_sub(withdrawn_bytes),
        )
    }

    /// True when nothing waits to be sent or acknowledged. Withdrawn frames whose events have not
    /// been taken yet wait for neither.
    pub fn is_idle(&self) -> bool {
        self.replay.is_empty()
            && self
                .queues
                .iter()
                .zip(self.withdrawn.iter())
                .all(|(q, w)| q.len() <= *w)
    }

    // ----- commands ------------------------------------------------------------------------

    /// The physical link came up: enter INIT (LINK-2-1).
    pub fn physical_up(&mut self, now: Instant) {
        let now = self.settle(now);
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
        self.physical = false;
        self.go_down(DownReason::Physical);
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-15 An end MUST take the peer's MAC address from every INIT it answers and from
        //# the INIT_ECHO that brings it UP, MUST keep it across re-initialisation, and MUST
        //# forget it when the physical link goes down.
        self.peer_mac = None;
    }

    /// Queues a frame on `vc`: `payload` is the network header and the transactions. The frame
    /// is sent in submission order on its VC; it is never dropped: either it is delivered, or a
    /// [`Event::Lost`] reports it.
    pub fn submit(&mut self, vc: Vc, payload: &[u8]) -> Result<(), SubmitError> {
        let v = self.check_submit(vc, payload)?;
        let plen = payload.len();
        let hdr = self.eth_len + LINK_HEADER_LEN;
        let flen = frame_len(self.eth_len, plen);
        let start = self.queue_room(v, plen)?;
        // The payload goes straight into a buffer laid out for its frame: sending it writes the
        // headers around it and moves the buffer into the replay buffer.
        let mut data = self.replay.buffer(flen);
        if let Some(slot) = data.get_mut(hdr..hdr + plen) {
            slot.copy_from_slice(payload);
        }
        self.queue_push(v, start, data, plen, None)
            .map_err(|(e, _)| e)
    }

    /// Lays `payload` out in a buffer of its own for this link's frames, ready for
    /// [`Link::submit_outgoing`]: the one copy a caller that holds payloads for a while (a switch
    /// between its input and this egress) makes of them.
    pub fn outgoing(&mut self, payload: &[u8]) -> Outgoing {
        let buf = self.replay.buffer(0);
        self.layout().outgoing(buf, payload)
    }

    /// Where this link's frames put their payload.
    pub fn layout(&self) -> Layout {
        Layout::of(&self.cfg)
    }

    /// A buffer of a frame the link no longer needs (acknowledged and not shared), for the caller
    /// to reuse with [`Layout::outgoing`], if the link keeps one.
    pub fn spare_buffer(&mut self) -> Option<Vec<u8>> {
        self.replay.take_spare()
    }

    /// For an embedder whose wire tells the receiver what became of each frame's FCS (a
    /// simulated wire and [`Link::handle_frame_fcs`], as a receiving MAC that checks the FCS as
    /// the frame streams in): with `on`, DATA frames handed out by reference
    /// ([`Link::poll_transmit_shared`]) carry no FCS yet ([`SharedFrame::has_fcs`] is false),
    /// and whoever needs the exact bytes (a capture, a fault that damages the frame) computes it
    /// with [`SharedFrame::write_exact`]. Frames written by [`Link::poll_transmit`] always carry
    /// their FCS. Off by default.
    pub fn defer_fcs(&mut self, on: bool) {
        self.defer_fcs = on;
    }

    /// As [`Link::submit`] for a payload already laid out by [`Link::outgoing`]: queued without a
    /// copy. A refused payload is handed back with the reason, unchanged.
    pub fn submit_outgoing(
        &mut self,
        vc: Vc,
        out: Outgoing,
    ) -> Result<(), (SubmitError, Outgoing)> {
        let v = match self.check_submit(vc, out.payload()) {
            Ok(v) => v,
            Err(e) => return Err((e, out)),
        };
        let plen = out.len;
        let start = match self.queue_room(v, plen) {
            Ok(start) => start,
            Err(e) => return Err((e, out)),
        };
        let hdr = self.eth_len + LINK_HEADER_LEN;
        let provenance = out.provenance;
        let data = if out.at == hdr && out.data.len() == frame_len(self.eth_len, plen) {
            out.data
        } else {
            // Laid out for a link with other headers (an 802.1Q tag): lay it out again, the
            // same bytes.
            self.outgoing(out.payload()).data
        };
        self.queue_push(v, start, data, plen, provenance)
            .map_err(|(e, data)| {
                (
                    e,
                    Outgoing {
                        data,
                        at: hdr,
                        len: plen,
                        provenance,
                    },
                )
            })
    }

    /// The checks of [`Link::submit`] on the VC and the payload; returns the VC's index.
    fn check_submit(&mut self, vc: Vc, payload: &[u8]) -> Result<usize, SubmitError> {
        self.settle(self.now);
        let v = vc.index();
        let vcs = self.agreed.map_or(self.cfg.vcs, |a| a.vcs);
        if v >= usize::from(vcs) {
            return Err(SubmitError::NoSuchVc {
                vc: vc.value(),
                vcs,
            });
        }
        let declared = payload
            .get(6..8)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])));
        if declared.map(|d| d + NETWORK_HEADER_LEN) != Some(payload.len()) {
            return Err(SubmitError::BadPayload { len: payload.len() });
        }
        //= docs/spec/link.md#1-model
        //# LINK-1-1 Every byte count of this document (the length of a frame for its credit cost,
        //# `ack_spacing`, `replay_max_bytes`, the byte counters) MUST count a frame from the first
        //# byte of its destination MAC address to the last byte of its FCS, 802.1Q tag and
        //# padding included; preamble, SFD and inter-frame gap are not counted.
        let len = frame_len(self.eth_len, payload.len());
        let mfs = self
            .agreed
            .map_or(usize::from(self.cfg.mfs), |a| usize::from(a.mfs));
        if len > mfs {
            return Err(SubmitError::TooLong { len, mfs });
        }
        if self.queues.get(v).is_none() {
            return Err(SubmitError::NoSuchVc {
                vc: vc.value(),
                vcs: self.cfg.vcs,
            });
        }
        Ok(v)
    }

    /// Whether VC `v`'s queue has room for a payload of `plen` bytes, and where in its ring.
    fn queue_room(&self, v: usize, plen: usize) -> Result<usize, SubmitError> {
        let Some(q) = self.queues.get(v) else {
            return Err(SubmitError::NoSuchVc {
                vc: v as u8,
                vcs: self.cfg.vcs,
            });
        };
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-19 An end MUST bound the transmit queue of each VC by `tx_queue_frames` frames and
        //# `tx_queue_bytes` bytes (Table LINK-T1) and MUST refuse a frame whose submission would
        //# exceed either, saying which, without changing what is queued.
        let full = || SubmitError::QueueFull {
            vc: v as u8,
            frames: q.len(),
            bytes: q.bytes(),
        };
        if q.bytes() + plen > self.cfg.tx_queue_bytes as usize {
            return Err(full());
        }
        q.place(plen).ok_or_else(full)
    }

    /// Queues a payload laid out for this link at `start` (given by [`Link::queue_room`], the
    /// queue unchanged since).
    fn queue_push(
        &mut self,
        v: usize,
        start: usize,
        data: Vec<u8>,
        plen: usize,
        provenance: Option<Provenance>,
    ) -> Result<(), (SubmitError, Vec<u8>)> {
        let hdr = self.eth_len + LINK_HEADER_LEN;
        let vcs = self.cfg.vcs;
        let Some(q) = self.queues.get_mut(v) else {
            return Err((SubmitError::NoSuchVc { vc: v as u8, vcs }, data));
        };
        let pushed = q
            .push_data_placed(start, Data::Own(data), hdr, plen, provenance)
            .map_err(|data| {
                (
                    SubmitError::QueueFull {
                        vc: v as u8,
                        frames: q.len(),
                        bytes: q.bytes(),
                    },
                    data.into_vec().unwrap_or_default(),
                )
            });
        if pushed.is_ok() {
            self.queued_total += 1;
        }
        pushed
    }

    /// Takes back every frame queued by [`Link::submit`] that has not been sent yet, on every VC,
    /// and returns how many (LINK-6-5). Works in every state (UP, INIT, OFF, during a FLUSH).
    ///
    /// None of them is sent afterwards. Each is reported by [`Link::poll_event`] as an
    /// [`Event::Lost`] with [`LostReason::Withdrawn`] and its payload, after every event already
    /// pending: VC 0's frames first, then VC 1's, and so on, each VC's in submission order.
    /// Frames already sent stay in the replay buffer and are settled as usual (acknowledged, or
    /// reported of unknown fate by a FLUSH or a link down). A frame already reported refused by
    /// the peer ([`LostReason::ExceedsPeerMfs`], [`LostReason::VcNotAgreed`]) whose event is
    /// still pending is reported that way only. A withdrawn frame keeps its room in its queue
    /// until its event has been taken; frames submitted afterwards queue behind it and are sent
    /// once it is gone.
    pub fn withdraw(&mut self) -> usize {
        self.settle(self.now);
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-5 An upper layer MAY withdraw the frames it submitted that have not been sent
        //# yet, for instance to send them over another link while this one is down. The end MUST
        //# then remove every such frame from its transmit queues, whatever its state, and MUST
        //# NOT send any of them afterwards.
        let mut total = 0usize;
        for v in 0..self.queues.len().min(8) {
            let Some(q) = self.queues.get(v) else {
                continue;
            };
            // The queue holds, front to back: the frame a pending Oversize or NotAgreed record
            // reports (if any), the frames withdrawn before whose events are pending, then the
            // frames not withdrawn, which are the ones taken now.
            let blocked = self.queue_blocked.get(v).copied().unwrap_or(false);
            let before = self.withdrawn.get(v).copied().unwrap_or(0);
            let skip = usize::from(blocked) + before;
            let (mut frames, mut bytes) = (0usize, 0usize);
            for i in skip..q.len() {
                if let Some((_, payload)) = q.get(i) {
                    frames += 1;
                    bytes += payload.len();
                }
            }
            if frames == 0 {
                continue;
            }
            if let (Some(w), Some(b)) = (self.withdrawn.get_mut(v), self.withdrawn_bytes.get_mut(v))
            {
                *w += frames;
                *b += bytes;
            }
            // Nothing waits on this VC any more: a credit stall ends here.
            if let Some(since) = self.stalled_since.get_mut(v).and_then(Option::take) {
                self.counters.credit_stall_ns[v] = self.counters.credit_stall_ns[v]
                    .wrapping_add(self.now.since(since).as_nanos() as u64);
            }
            //= docs/spec/link.md#6-flush-and-re-initialisation
            //# LINK-6-6 The end MUST report each frame withdrawn by LINK-6-5 to the upper layer as
            //# a frame that was never sent, after the events already pending and, on each VC, in
            //# submission order.
            let vc = Vc::new(v as u8).unwrap_or_default();
            let n = u32::try_from(frames).unwrap_or(u32::MAX);
            match self.events.back_mut() {
                Some(EvRec::Withdrawn(last, m)) if *last == vc => *m = m.saturating_add(n),
                _ => self.events.push_back(EvRec::Withdrawn(vc, n)),
            }
            total += frames;
        }
        self.counters.frames_withdrawn = self.counters.frames_withdrawn.wrapping_add(total as u64);
        total
    }

    /// Gives back the buffer of a delivered frame (LINK-5-4). A claim from before a
    /// re-initialisation frees its buffer but returns no credit: the peer's credits were reset
    /// (LINK-2-5, LINK-6-4). The last such claim given back lets an INIT_ECHO held back by
    /// LINK-2-18 go: call [`Link::poll_transmit`] after it.
    pub fn release(&mut self, release: Release) -> Result<(), ReleaseError> {
        let v = release.vc.index();
        if release.credits > self.held[v] {
            return Err(ReleaseError {
                credits: release.credits,
                occupied: self.held[v],
            });
        }
        if release.epoch != self.epoch {
            //= docs/spec/link.md#6-flush-and-re-initialisation
            //# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its
            //# receive buffer, charged to their VC, until the upper layer drains them.
            self.held[v] -= release.credits;
            self.held_stale = self.held_stale.saturating_sub(u64::from(release.credits));
            // Every claim of an earlier incarnation is counted in `held_stale`, so this is the
            // last of them.
            if self.held_stale == 0 && self.physical && self.agreed.is_none() {
                // A new nonce, so that an echo the peer gave while this end could not come UP
                // does not open the peer's LINK-2-8 gate: its DATA waits for this end to be UP.
                self.nonce = self.draw_nonce();
                self.init_next = self.now;
            }
            return Ok(());
        }
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
        self.held[v] -= release.credits;
        self.freed_since_cf = self.freed_since_cf.saturating_add(release.credits);
        Ok(())
    }

    /// Takes back the DATA frame the last call to [`Link::poll_transmit`] wrote, because the
    /// caller is ending it on the wire with a stomped FCS (WIRE-2.5-4): a cut-through device whose
    /// frame turned out bad after its first bytes left. The frame leaves the replay buffer, its
    /// sequence number goes to the next new frame and its credits return to its VC, as if it had
    /// never been sent; its payload is dropped. Returns `None`, changing nothing, unless the
    /// last frame written was a new DATA frame (not a retransmission) and no input came since.
    pub fn stomp_last(&mut self) -> Option<Stomped> {
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-12 An end that ends a DATA frame with a stomped FCS (WIRE-2.5-4) MUST take the
        //# frame back out of its replay buffer, give its sequence number to the next new DATA
        //# frame and return its credits to its VC, so that the link goes on as if the frame had
        //# never been sent.
        //= docs/spec/classes.md#3-capabilities
        //# CLS-3-3 A device that does not announce `CUT_THROUGH` MUST NOT send a frame with a
        //# stomped FCS.
        // An end that does not announce the capability cannot have stomped a frame, so it has
        // nothing to take back.
        if !self.cfg.caps.contains(Capabilities::CUT_THROUGH) {
            return None;
        }
        if !self.stompable || self.flushed > 0 {
            return None;
        }
        let (m, frame) = self.replay.get(self.replay.len().checked_sub(1)?)?;
        let (vc, seq, credits, len) = (m.vc, m.seq, m.credits, frame.len());
        if seq.next() != self.next_seq {
            return None;
        }
        self.replay.pop_back();
        self.note_oldest();
        self.stompable = false;
        self.next_seq = seq;
        let v = vc.index();
        if let Some(c) = self.consumed.get_mut(v) {
            *c = diff20(*c, credits);
        }
        if self.replay.is_empty() {
            self.replay_deadline = None;
            self.replay_cursor = None;
        }
        //= docs/spec/link.md#7-counters
        //# LINK-7-5 A DATA frame the end takes back by LINK-3-12 MUST be counted in `tx_stomped`
        //# and in neither `tx_frames` nor `tx_bytes`.
        // Counted when it was written, it is taken back out: a count kept at the end of each
        // frame, when its FCS goes, gives the same figures.
        if let (Some(f), Some(b)) = (
            self.counters.tx_frames.get_mut(v),
            self.counters.tx_bytes.get_mut(v),
        ) {
            *f = f.wrapping_sub(1);
            *b = b.wrapping_sub(len as u64);
        }
        self.counters.tx_stomped = self.counters.tx_stomped.wrapping_add(1);
        Some(Stomped {
            vc,
            seq,
            credits,
            len,
        })
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

    /// A frame arrived from the wire, FCS included. It goes through the receive pipeline of
    /// wire.md §7: size, FCS, EtherType, version and kind, then the control body or the link-layer
    /// acceptance of a DATA frame.
    pub fn handle_frame(&mut self, now: Instant, bytes: &[u8]) {
        self.receive(now, bytes, None);
    }

    /// As [`Link::handle_frame`] for a frame whose FCS the receiving MAC has already judged (a
    /// MAC checks it as the frame streams in, and a simulated wire knows whether it damaged a
    /// frame): `fcs` stands for the CRC the link would otherwise compute again. The frame is
    /// still whole, FCS included, and every other stage of the pipeline is the same.
    pub fn handle_frame_fcs(&mut self, now: Instant, bytes: &[u8], fcs: FcsStatus) {
        self.receive(now, bytes, Some(fcs));
    }

    /// As [`Link::handle_frame_fcs`] (or [`Link::handle_frame`] when `fcs` is `None`), with the
    /// payload of a DATA frame it accepts handed straight to `deliver` (VC, sequence number,
    /// payload, release) when no event waits before it, instead of being copied into the receive
    /// buffer for [`Link::poll_event`]; behind a waiting event it is queued as usual, so that the
    /// upper layer sees everything in order. Nothing else differs: counters, credits,
    /// acknowledgement.
    pub fn handle_frame_deliver(
        &mut self,
        now: Instant,
        bytes: &[u8],
        fcs: Option<FcsStatus>,
        deliver: Deliver<'_>,
    ) {
        self.receive_with(now, bytes, fcs, Some(deliver));
    }

    /// The receive pipeline, with the FCS status a MAC judged if there is one.
    fn receive(&mut self, now: Instant, bytes: &[u8], fcs: Option<FcsStatus>) {
        self.receive_with(now, bytes, fcs, None);
    }

    fn receive_with(
        &mut self,
        now: Instant,
        bytes: &[u8],
        fcs: Option<FcsStatus>,
        deliver: Option<Deliver<'_>>,
    ) {
        let now = self.settle(now);
        self.stompable = false;
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-16 Before it is UP an end MUST check a received frame's size against its own
        //# configured MFS; while UP, against the agreed MFS.
        let mfs = self
            .agreed
            .map_or(usize::from(self.cfg.mfs), |a| usize::from(a.mfs));
        let checked = match fcs {
            //= docs/spec/wire.md#25-frame-check-sequence
            //# WIRE-2.5-3 A receiver MUST check the FCS before it interprets any other field.
            // A status from the MAC is that check, made as the frame arrived.
            Some(status) => Frame::new_checked_fcs(bytes, mfs, status),
            None => Frame::new_checked(bytes, mfs),
        };
        let frame = match checked {
            Ok(f) => f,
            Err(e) => {
                self.count_bad_frame(e.kind, e.action, e.field);
                return;
            }
        };
        if !self.physical {
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-11 An end MUST discard, and count as received while not UP, every frame
            //# that passes the checks of wire.md §7 up to the kind while its physical link is
            //# down, and every ACK, NACK, CF or CC frame while it is not UP.
            self.counters.rx_not_up = self.counters.rx_not_up.wrapping_add(1);
            return;
        }
        let repr = match FrameRepr::parse(&frame) {
            Ok(r) => r,
            Err(_) if frame.kind() == FrameKind::Data => {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-12 The RX MUST judge a DATA frame that passed the checks of wire.md §7
                //# up to the kind on its link header alone: a malformed network header, payload
                //# length or padding MUST NOT keep it from being accepted by LINK-4-1.
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-17 A DATA frame accepted by LINK-4-12 whose body the end found
                //# malformed MUST be handed to the upper layer marked as malformed, with its
                //# credits, so that the upper layer discards it, counts it and releases its
                //# credits at once.
                // The mark is an empty payload: every well-formed payload starts with an
                // 8-byte network header, and every parser of one rejects an empty payload.
                let h = frame.link_header();
                let flags = h.flags();
                let header = DataHeader {
                    vc: h.vc(),
                    flags: DataFlags {
                        replay: flags & FLAG_REPLAY != 0,
                        ack_req: flags & FLAG_ACK_REQ != 0,
                    },
                    seq: h.seq(),
                };
                self.on_data(now, header, &[], bytes.len(), deliver);
                return;
            }
            Err(_) => {
                self.counters.rx_malformed_control =
                    self.counters.rx_malformed_control.wrapping_add(1);
                return;
            }
        };
        match repr.link {
            LinkFrame::Data { header, payload } => {
                self.on_data(now, header, payload, bytes.len(), deliver);
            }
            LinkFrame::Ack(s) => {
                if self.control_up() {
                    self.counters.acks_received = self.counters.acks_received.wrapping_add(1);
                    self.on_ack(now, s, false);
                }
            }
            LinkFrame::Nack(s) => {
                if self.control_up() {
                    self.counters.nacks_received = self.counters.nacks_received.wrapping_add(1);
                    self.on_ack(now, s, true);
                }
            }
            LinkFrame::CreditUpdate(c) => {
                if self.control_up() {
                    self.counters.cf_received = self.counters.cf_received.wrapping_add(1);
                    self.on_cf(&c);
                }
            }
            LinkFrame::CreditResync(c) => {
                if self.control_up() {
                    self.counters.cc_received = self.counters.cc_received.wrapping_add(1);
                    self.on_cc(&c);
                }
            }
            LinkFrame::Init(init) => {
                self.on_init(now, init, repr.eth.src);
            }
            LinkFrame::InitEcho { echo_nonce, init } => {
                self.on_init_echo(now, echo_nonce, init, repr.eth.src);
            }
        }
    }

    /// Time has reached `now`: runs the timers that have expired.
    pub fn handle_timeout(&mut self, now: Instant) {
        let now = self.settle(now);
        self.stompable = false;
        if self.agreed.is_none() {
            if self.physical
                && !self.init_timeout_reported
                && now >= self.init_since.saturating_add(self.cfg.init_timeout)
            {
                //= docs/spec/link.md#2-bring-up
                //# LINK-2-14 An end in INIT whose physical link is up MUST go on sending INIT
                //# frames for as long as it stays in INIT; when it has stayed there for
                //# `init_timeout` it MUST report it to the upper layer and count it, once per
                //# initialisation.
                self.init_timeout_reported = true;
                self.counters.init_timeouts = self.counters.init_timeouts.wrapping_add(1);
                self.push_status(EvRec::Notice(Notice::InitTimeout {
                    waited: now.since(self.init_since),
                }));
            }
            return;
        }
        if self.aged(now) {
            self.flush_aged(now);
            return;
        }
        if self.replay_deadline.is_some_and(|d| d <= now) && self.replay_frames() > 0 {
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-11 On the expiry of the replay timer the TX MUST start a replay of the whole
            //# replay buffer (LINK-3-5) and restart the timer: each expiry is one replay.
            self.start_replay(now, false);
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
        self.transmit(now, buf)
    }

    /// [`Link::poll_transmit`], inlined into it and into [`Link::poll_transmit_shared`] so that
    /// neither reads its result back from memory.
    #[inline(always)]
    fn transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        let now = self.settle(now);
        if !self.physical {
            return Ok(None);
        }
        // Only the frame sent by the very last call may be stomped (LINK-3-12).
        self.stompable = false;
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-15 When several frames are due, the TX MUST send them in this order: INIT_ECHO,
        //# INIT, NACK, ACK, CF, CC, retransmitted DATA, new DATA.
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-18 While its receive buffer holds a frame it delivered before it last left UP, an
        //# end MUST NOT send an INIT_ECHO and MUST NOT enter UP: an INIT_ECHO it receives then is
        //# ignored and counted as LINK-2-17 says. When its upper layer has drained the last of
        //# them, an end in INIT MUST draw a new nonce (LINK-2-9), answer the newest INIT it has
        //# received, if any, and send its INIT at once. (An end physically down draws its nonce
        //# when the physical link comes up, LINK-6-3.)
        let echo_may_go = self.held_stale == 0;
        if let Some(echo) = self.echo_due.filter(|_| echo_may_go) {
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying
            //# the INIT's nonce as echo nonce and its own configured parameters, in any state but
            //# OFF, unless LINK-2-12 refuses it. When several INITs arrive before the wire can take
            //# the INIT_ECHO (or before LINK-2-18 lets it go), only the newest is answered.
            let init = self.own_init();
            let t = self.emit_control(
                buf,
                LinkFrame::InitEcho {
                    echo_nonce: echo,
                    init,
                },
            )?;
            self.echo_due = None;
            self.echoed = Some(echo);
            if self.peer_nonce == Some(echo) {
                self.peer_up = true;
            }
            self.counters.init_echoes_sent = self.counters.init_echoes_sent.wrapping_add(1);
            return Ok(Some(t));
        }
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
        let Some(agreed) = self.agreed else {
            if now >= self.init_next {
                //= docs/spec/link.md#2-bring-up
                //# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its
                //# first INIT at once, then one every init_interval while it stays in INIT and
                //# physically up; each INIT carries the nonce and the end's configured parameters
                //# (never the agreed ones).
                let init = self.own_init();
                let t = self.emit_control(buf, LinkFrame::Init(init))?;
                self.init_next = now.saturating_add(self.cfg.init_interval);
                self.counters.inits_sent = self.counters.inits_sent.wrapping_add(1);
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
            self.dup_run = false;
            self.counters.nacks_sent = self.counters.nacks_sent.wrapping_add(1);
            self.acked_now();
            return Ok(Some(t));
        }
        if self.ack_due || self.ack_deadline.is_some_and(|d| d <= now) {
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the
            //# bytes accepted since its last ACK or NACK reach ack_spacing.
            //= docs/spec/wire.md#42-nack-kind-0x2
            //# WIRE-4.2-1 Before any DATA frame has been received after link initialisation,
            //# the "last good" sequence number is the value before the first sequence number,
            //# that is `(first - 1) mod 2^20`. ACK and NACK frames sent in that state MUST
            //# carry that value.
            let t = self.emit_control(buf, LinkFrame::Ack(self.last_good))?;
            self.counters.acks_sent = self.counters.acks_sent.wrapping_add(1);
            self.acked_now();
            return Ok(Some(t));
        }
        if self.cf_due(now) {
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits
            //# credits, summed over the VCs, have been freed since its last CF (or since UP) and,
            //# if it has sent a CF since UP, cf_min_interval has passed since that CF. (1.3: the
            //# first CF after UP waits for no interval, as Table LINK-T2 starts cf_min_interval at
            //# a CF sent.)
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-10 The RX MUST send a CF every `cf_max_interval` while UP, whether its
            //# entries changed or not.
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-11 A CF and a CC MUST carry an entry for every agreed VC and none for
            //# another.
            let repr = credit_repr(agreed.vcs, &self.freed);
            let t = self.emit_control(buf, LinkFrame::CreditUpdate(repr))?;
            self.counters.cf_sent = self.counters.cf_sent.wrapping_add(1);
            self.last_cf = now;
            self.cf_sent_since_up = true;
            self.freed_since_cf = 0;
            self.cf_forced = false;
            return Ok(Some(t));
        }
        if self.replay_frames() == 0 && self.flushed == 0 && now >= self.cc_next {
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty
            //# and at least cc_interval has passed since UP or since its last CC. (A VC that has
            //# been without credit for cc_interval therefore gets a CC as soon as the replay buffer
            //# is empty.)
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-12 The TX MUST NOT send a CC while its replay buffer holds a frame.
            let repr = credit_repr(agreed.vcs, &self.consumed);
            let t = self.emit_control(buf, LinkFrame::CreditResync(repr))?;
            self.counters.cc_sent = self.counters.cc_sent.wrapping_add(1);
            self.cc_next = now.saturating_add_nanos(self.ns.cc_interval);
            return Ok(Some(t));
        }
        if !self.peer_up {
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an
            //# INIT_ECHO for the peer's current nonce since it last entered INIT, or received an
            //# ACK, NACK, CF, CC or DATA frame since it came UP. (An end comes UP on the peer's
            //# INIT_ECHO, possibly before the peer has the INIT_ECHO that brings it UP; the wire
            //# keeps order, so a DATA frame sent after that INIT_ECHO reaches an UP peer.)
            return Ok(None);
        }
        if self.flushed > 0 {
            //= docs/spec/link.md#6-flush-and-re-initialisation
            //# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
            //# re-initialisation and be sent after the link is UP again, in order.
            // FLUSH: no DATA until the flushed frames are reported; the queues wait intact.
            return Ok(None);
        }
        if self.aged(now) {
            // The age limit passed before the timer was handled: no copy of the oldest frame,
            // nor anything behind it, may go any more (LINK-3-18).
            self.flush_aged(now);
            return Ok(None);
        }
        if let Some(i) = self.replay_cursor
            && let Some(t) = self.transmit_replay(i, buf)?
        {
            return Ok(Some(t));
        }
        self.transmit_new(now, &agreed, buf)
    }

    /// As [`Link::poll_transmit`], but a DATA frame (new or retransmitted) is handed out by
    /// reference, shared with the replay buffer that keeps it (a short one as a copy of its own,
    /// see [`SharedFrame`]), instead of written into `buf`;
    /// control frames are written into `buf` as by `poll_transmit`. The bytes are those
    /// `poll_transmit` would have written. A retransmission marks the stored frame itself with
    /// the REPLAY flag and its FCS, which is what every retransmission of it carries.
    pub fn poll_transmit_shared(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Result<Option<(Transmit, Option<SharedFrame>)>, BufferTooSmall> {
        self.share_out = true;
        self.shared_out = None;
        let r = self.transmit(now, buf);
        self.share_out = false;
        match r {
            Ok(Some(t)) => {
                let shared = match self.shared_out.take() {
                    Some((index, fcs)) => self.share_replay(index, fcs),
                    None => None,
                };
                Ok(Some((t, shared)))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The next event for the upper layer. A `Delivered` or `Lost` payload borrows the link's
    /// buffer until the next call that takes `&mut self`.
    #[inline]
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.settle(self.now);
        // The common cases inline, so that the caller gets the event in registers: nothing, or
        // a delivered frame.
        match self.events.front()? {
            EvRec::Delivered => {
                self.events.pop_front();
                self.delivered_event()
            }
            _ => self.poll_event_record(),
        }
    }

    /// The `Delivered` event of the oldest frame of the receive ring, whose record was just
    /// taken from the event queue.
    #[inline(always)]
    fn delivered_event(&mut self) -> Option<Event<'_>> {
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

    /// [`Link::poll_event`] for the record at the front of the queue.
    #[inline(never)]
    fn poll_event_record(&mut self) -> Option<Event<'_>> {
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
            EvRec::Notice(n) => {
                self.status_events = self.status_events.saturating_sub(1);
                Some(Event::Notice(n))
            }
            EvRec::Delivered => self.delivered_event(),
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
            EvRec::Oversize(vc) | EvRec::NotAgreed(vc) => {
                self.pending_pop = Some(Pop::Queue(vc));
                let reason = if matches!(rec, EvRec::Oversize(_)) {
                    LostReason::ExceedsPeerMfs
                } else {
                    LostReason::VcNotAgreed
                };
                let (_, payload) = self.queues.get(vc.index())?.front()?;
                Some(Event::Lost {
                    vc,
                    reason,
                    payload,
                })
            }
            EvRec::Withdrawn(vc, n) => {
                if n > 1 {
                    // The record stays first for the frames behind this one (no allocation:
                    // it takes the place it was just taken from).
                    self.events.push_front(EvRec::Withdrawn(vc, n - 1));
                }
                self.pending_pop = Some(Pop::Withdrawn(vc));
                let (_, payload) = self.queues.get(vc.index())?.front()?;
                Some(Event::Lost {
                    vc,
                    reason: LostReason::Withdrawn,
                    payload,
                })
            }
        }
    }

    /// The earliest deadline of a running timer (INIT, ACK, replay, CF, CC): when to call
    /// [`Link::handle_timeout`] and then [`Link::poll_transmit`] if no input comes first. Work
    /// that is due at once (a NACK, an ACK, a frame with credit) is found by `poll_transmit`,
    /// which the caller calls whenever its wire can take a frame. `None` while the physical
    /// link is down. A deadline after [`Instant::HORIZON`] is never reached (LINK-1-2).
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.earliest_deadline().map(|t| t.max(self.now))
    }

    /// The earliest deadline as the timers hold it, possibly already past: what
    /// [`Link::poll_timeout`] gives before it rounds a past deadline up to the link's current
    /// time. After [`Link::handle_timeout`] at `now`, a deadline at or before `now` that is
    /// still there is work for the wire (an ACK, a CF, a CC or an INIT waiting to be sent),
    /// which the next [`Link::poll_transmit`] does; calling `handle_timeout` again for it does
    /// nothing.
    pub fn earliest_deadline(&self) -> Option<Instant> {
        if !self.physical {
            return None;
        }
        if self.agreed.is_none() {
            let mut t = self.init_next;
            if !self.init_timeout_reported {
                t = t.min(self.init_since.saturating_add(self.cfg.init_timeout));
            }
            return Some(t);
        }
        let mut t = self.last_cf.saturating_add_nanos(self.ns.cf_max_interval);
        if self.freed_since_cf >= self.cfg.cf_min_credits {
            t = t.min(self.cf_min_deadline());
        }
        for d in [self.ack_deadline, self.replay_deadline, self.age_deadline()]
            .into_iter()
            .flatten()
        {
            t = t.min(d);
        }
        if self.replay_frames() == 0 {
            t = t.min(self.cc_next);
        }
        Some(t)
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
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-9 A nonce MUST NOT be 0 and MUST differ from the end's previous nonce.
            if n != 0 && n != self.nonce {
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
            // The range check of Config::validate keeps the overhead within a byte.
            credit_overhead: u8::try_from(self.cfg.credit_overhead).unwrap_or(u8::MAX),
            //= docs/spec/classes.md#2-announcing-role-and-capabilities
            //# CLS-2-1 A device MUST announce its role in every INIT and INIT_ECHO it sends.
            //# CLS-2-2 A device MUST set, in every INIT and INIT_ECHO it sends, the bit of each
            //# capability of Table CLS-T2 it implements, and no other bit.
            caps: self.announced_caps(),
            role: self.cfg.role,
        }
    }

    /// The capabilities this end announces: its configured ones, and TAGGED when it tags its
    /// frames.
    fn announced_caps(&self) -> Capabilities {
        //= docs/spec/classes.md#3-capabilities
        //# CLS-3-2 A device that does not announce `TAGGED` MUST NOT send a frame with an 802.1Q
        //# tag.
        // An end configured with a tag sends every frame tagged, so it announces the capability
        // whatever its configuration says.
        if self.cfg.vlan.is_some() {
            self.cfg.caps | Capabilities::TAGGED
        } else {
            self.cfg.caps
        }
    }

    fn enter_init(&mut self, now: Instant) {
        self.nonce = self.draw_nonce();
        self.init_next = now;
        self.init_since = now;
        self.init_timeout_reported = false;
        self.last_refusal = None;
    }

    /// The reason to refuse an INIT or INIT_ECHO carrying `peer`, if any (LINK-2-12).
    fn refusal(&self, peer: &InitRepr, echo: bool) -> Option<Notice> {
        //= docs/spec/wire.md#45-init-kind-0x5-and-init_echo-kind-0x6
        //# WIRE-4.5-9 An end MUST NOT come UP on an INIT_ECHO, nor act on an INIT, whose credit
        //# grant on some agreed VC cannot carry one frame of the agreed MFS
        let mfs = self.cfg.mfs.min(peer.mfs);
        let short = peer.check_grants(self.cfg.vcs.min(peer.vcs), mfs).err()?;
        Some(Notice::InitRefused {
            echo,
            vc: Vc::new(short.vc).unwrap_or_default(),
            grant: short.grant,
            needed: short.needed,
            mfs,
            credit_size: peer.credit_size,
            credit_overhead: peer.credit_overhead,
        })
    }

    /// Counts a refused INIT or INIT_ECHO and reports its reason unless it was the last one
    /// reported (LINK-2-12).
    fn refuse(&mut self, notice: Notice) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-12 An end MUST NOT answer an INIT, nor come UP on an INIT_ECHO, whose grants
        //# cannot carry one frame of the MFS that would be agreed on some VC that would be
        //# agreed: `grant[v] < ceil((mfs + credit_overhead) / credit_size)` with the sender's
        //# credit size and overhead. It MUST count the frame as refused, stay in its state and
        //# report the reason (the VC and the numbers) to the upper layer.
        self.counters.init_refused = self.counters.init_refused.wrapping_add(1);
        if self.last_refusal != Some(notice) {
            self.last_refusal = Some(notice);
            self.push_status(EvRec::Notice(notice));
        }
    }

    fn on_init(&mut self, now: Instant, init: InitRepr, src: MacAddr) {
        if let Some(n) = self.refusal(&init, false) {
            self.refuse(n);
            return;
        }
        self.counters.inits_received = self.counters.inits_received.wrapping_add(1);
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying
        //# the INIT's nonce as echo nonce and its own configured parameters, in any state but
        //# OFF.
        // One echo is pending at most: a newer INIT replaces an older one not yet answered.
        self.echo_due = Some(init.nonce);
        self.peer_mac = Some(src);
        if self.agreed.is_some() && self.peer_nonce.is_some_and(|p| p != init.nonce) {
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's
            //# nonce it went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT:
            //# the peer has restarted. It then answers that INIT with an INIT_ECHO carrying its own
            //# new nonce, and sends its own INIT.
            // The echo stays due: it goes out after the re-initialisation, with the new nonce.
            self.reinit(now, DownReason::PeerRestart);
        }
    }

    fn on_init_echo(&mut self, now: Instant, echo_nonce: u32, init: InitRepr, src: MacAddr) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is
        //# its current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-17 INIT_ECHO frames with an echo nonce other than the end's current nonce, and
        //# every INIT_ECHO received while UP, MUST be ignored and counted.
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-18 While its receive buffer holds a frame it delivered before it last left UP, an
        //# end MUST NOT send an INIT_ECHO and MUST NOT enter UP: an INIT_ECHO it receives then is
        //# ignored and counted as LINK-2-17 says. When its upper layer has drained the last of
        //# them, an end in INIT MUST draw a new nonce (LINK-2-9), answer the newest INIT it has
        //# received, if any, and send its INIT at once. (An end physically down draws its nonce
        //# when the physical link comes up, LINK-6-3.)
        if echo_nonce != self.nonce || self.agreed.is_some() || self.held_stale > 0 {
            self.counters.init_echoes_ignored = self.counters.init_echoes_ignored.wrapping_add(1);
            return;
        }
        if let Some(n) = self.refusal(&init, true) {
            self.refuse(n);
            return;
        }
        self.counters.init_echoes_received = self.counters.init_echoes_received.wrapping_add(1);
        self.peer_mac = Some(src);
        // The echo is the peer's freshest word: it was sent after our INIT reached it.
        self.go_up(now, init);
    }

    // CLS-2-3: the peer's role and capability bits inform; nothing here refuses a link for them.
    fn go_up(&mut self, now: Instant, peer: InitRepr) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and
        //# the MFS are the smaller of the two announced values; the LLR window of each direction is
        //# the smaller of the two windows; the TX of each end uses the credits granted, the credit
        //# size and the credit overhead announced by the peer (its RX's buffer and pricing), and
        //# its RX uses its own.
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
            tx_credit_overhead: peer.credit_overhead,
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
        // No frame of the last incarnation is in the buffer: LINK-2-18 kept this end out of UP,
        // and the peer out of UP (it needs our echo), until they had left.
        self.stalled_since = [None; 8];
        self.freed_since_cf = 0;
        self.cf_forced = false;
        self.last_cf = now;
        self.cf_sent_since_up = false;
        self.cc_next = now.saturating_add_nanos(self.ns.cc_interval);
        self.unacked_bytes = 0;
        self.ack_deadline = None;
        self.ack_due = false;
        self.replay_cursor = None;
        self.replay_sent_any = false;
        self.replay_count = 0;
        self.replay_deadline = None;
        self.nack_ahead = 0;
        self.dup_run = false;
        self.rx_state = RxState::SendAcks;
        self.agreed = Some(agreed);
        self.peer_nonce = Some(peer.nonce);
        // The peer is UP, or will be before our next frame reaches it, once it has our echo
        // of its current nonce.
        self.peer_up = self.echoed == Some(peer.nonce);
        self.counters.link_ups = self.counters.link_ups.wrapping_add(1);
        self.push_status(EvRec::Up(agreed));
        // Frames queued on VCs the peer lacks can never go: report them, one at a time.
        for v in usize::from(vcs)..usize::from(self.cfg.vcs) {
            self.reject_not_agreed(v);
        }
    }

    //= docs/spec/link.md#2-bring-up
    //# LINK-2-19 While UP, a frame at the front of its VC's transmit queue whose VC is not agreed,
    //# or that is longer than the agreed MFS, MUST NOT be sent: the end MUST report it to the upper
    //# layer as lost (reason VC not agreed, or longer than the peer's MFS), count it
    //# (`not_agreed_vc`, `oversize_for_peer`) and go on with the frame behind it.
    fn reject_not_agreed(&mut self, v: usize) {
        // Withdrawn frames are reported as such; the frame behind them is looked at once they
        // are gone.
        let pending = self.queues.get(v).is_some_and(|q| !q.is_empty())
            && self.withdrawn.get(v).is_some_and(|w| *w == 0);
        if let (true, Some(blocked)) = (pending, self.queue_blocked.get_mut(v))
            && !*blocked
        {
            *blocked = true;
            self.counters.not_agreed_vc = self.counters.not_agreed_vc.wrapping_add(1);
            self.events
                .push_back(EvRec::NotAgreed(Vc::new(v as u8).unwrap_or_default()));
        }
    }

    /// Leaves UP (or INIT): the replay buffer is flushed, RX to OFF, timers stopped, and the
    /// upper layer told: a link-down if the link was UP or frames were lost, then the frames of
    /// unknown fate.
    fn go_down(&mut self, reason: DownReason) {
        let was_up = self.agreed.is_some();
        let flushed = self.flush_replay();
        self.agreed = None;
        self.rx_state = RxState::Off;
        self.ack_due = false;
        self.ack_deadline = None;
        self.unacked_bytes = 0;
        self.replay_deadline = None;
        self.replay_cursor = None;
        self.replay_sent_any = false;
        self.stompable = false;
        self.replay_count = 0;
        self.nack_ahead = 0;
        self.peer_up = false;
        // A credit stall ends when the link leaves UP (LINK-7-4).
        for v in 0..8 {
            if let Some(since) = self.stalled_since.get_mut(v).and_then(Option::take) {
                self.counters.credit_stall_ns[v] = self.counters.credit_stall_ns[v]
                    .wrapping_add(self.now.since(since).as_nanos() as u64);
            }
        }
        self.echoed = None;
        self.peer_nonce = None;
        // Delivered frames stay delivered, and in the buffer until drained (LINK-6-4): every
        // claim handed out so far is now of an earlier incarnation.
        self.epoch = self.epoch.wrapping_add(1);
        self.held_stale = self.held_total();
        self.counters.reinits = self.counters.reinits.wrapping_add(1);
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-7 An end MUST report the link-down event of an edge out of UP before the frames
        //# of unknown fate that edge reports (LINK-6-1), those in sequence order, and all of them
        //# before the link-up event of the next incarnation.
        if was_up || flushed > 0 {
            self.push_status(EvRec::Down(reason));
        }
        for _ in 0..flushed {
            self.events.push_back(EvRec::Flushed);
        }
    }

    fn reinit(&mut self, now: Instant, reason: DownReason) {
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise:
        //# enter INIT (§2) with a new nonce (after physical down: when the physical link comes up
        //# again), reset its RX to OFF until UP, and report a link-down event to the upper layer;
        //# on UP it MUST report a link-up event.
        self.go_down(reason);
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

    /// Moves every frame of the replay buffer to the flushed state (LINK-6-1) and returns how
    /// many; the caller queues their events after the status event.
    fn flush_replay(&mut self) -> usize {
        //= docs/spec/link.md#6-flush-and-re-initialisation
        //# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report
        //# them to the upper layer, in sequence order, as frames of unknown fate: each may have
        //# been delivered once or not at all. It MUST NOT report them as delivered and MUST NOT
        //# retransmit them after re-initialisation.
        let n = self.replay.len() - self.flushed;
        if n > 0 {
            self.counters.frames_unknown_fate =
                self.counters.frames_unknown_fate.wrapping_add(n as u64);
        }
        self.replay_cursor = None;
        self.replay_deadline = None;
        self.flushed = self.replay.len();
        self.oldest_sent = None;
        n
    }

    /// A NACK (`nack`) or the replay timer asks for a replay of the whole buffer.
    fn start_replay(&mut self, now: Instant, nack: bool) {
        if self.replay_cursor.is_some() && !self.replay_sent_any {
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-9 A NACK or a replay-timer expiry that comes while a replay is due but has
            //# not sent its first frame yet MUST NOT start another replay and MUST NOT count
            //# towards `replay_count_max`: the pending replay already begins with the oldest
            //# frame. The replay timer is restarted.
            self.replay_cursor = Some(0);
            self.replay_deadline = Some(now.saturating_add_nanos(self.ns.replay_timer));
            return;
        }
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer,
        //# since the last acknowledgement progress: the count rises by one when a replay starts
        //# and returns to 0 when an ACK or NACK acknowledges at least one frame, and on entering
        //# UP.
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-13 When a replay would make the count exceed `replay_count_max` the TX MUST
        //# enter FLUSH (§6) instead of starting it.
        // The counters count the NACKs and expiries that asked for a replay, the one that turns
        // into a FLUSH included.
        if nack {
            self.counters.replays_by_nack = self.counters.replays_by_nack.wrapping_add(1);
        } else {
            self.counters.replay_timeouts = self.counters.replay_timeouts.wrapping_add(1);
        }
        if self.replay_count >= self.cfg.replay_count_max {
            self.counters.flushes = self.counters.flushes.wrapping_add(1);
            self.reinit(now, DownReason::Flush);
            return;
        }
        self.replay_count += 1;
        self.replay_cursor = Some(0);
        self.replay_sent_any = false;
        self.replay_deadline = Some(now.saturating_add_nanos(self.ns.replay_timer));
    }

    /// When the oldest frame of the replay buffer reaches `llr_max_age` (LINK-3-18).
    /// Frames flushed and not yet reported are of the last incarnation: the oldest frame is the
    /// first behind them.
    fn age_deadline(&self) -> Option<Instant> {
        debug_assert_eq!(
            self.oldest_sent,
            self.replay.get(self.flushed).map(|(m, _)| m.sent),
            "oldest_sent not noted after a change of the replay buffer"
        );
        self.oldest_sent
            .map(|sent| sent.saturating_add_nanos(self.ns.llr_max_age))
    }

    /// Notes the send time of the oldest frame not flushed: called after every change of
    /// `replay` or `flushed`.
    fn note_oldest(&mut self) {
        self.oldest_sent = self.replay.get(self.flushed).map(|(m, _)| m.sent);
    }

    /// Whether the oldest frame of the replay buffer has reached `llr_max_age` at `now`.
    fn aged(&self, now: Instant) -> bool {
        self.agreed.is_some() && self.age_deadline().is_some_and(|d| d <= now)
    }

    /// FLUSH for age (LINK-3-18).
    fn flush_aged(&mut self, now: Instant) {
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-18 When the oldest frame of its replay buffer was first sent `llr_max_age` ago,
        //# the TX MUST enter FLUSH (§6), whatever its replay count, and MUST NOT begin to send any
        //# copy of that frame or of a frame behind it afterwards.
        self.counters.flushes = self.counters.flushes.wrapping_add(1);
        self.counters.flushes_aged = self.counters.flushes_aged.wrapping_add(1);
        self.reinit(now, DownReason::Flush);
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
            self.counters.stale_acks = self.counters.stale_acks.wrapping_add(1);
            return;
        }
        if n > 0
            && let Some((m, _)) = self.replay.get(self.flushed)
        {
            // The oldest frame acknowledged is the one that waited longest.
            let age = now.as_nanos().saturating_sub(m.sent.as_nanos());
            self.counters.replay_age_max_ns = self.counters.replay_age_max_ns.max(age);
        }
        for _ in 0..n {
            self.replay.pop_front();
        }
        if n > 0 {
            self.note_oldest();
            self.replay_count = 0;
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay
            //# buffer, restarted whenever an ACK or NACK acknowledges at least one frame and when
            //# a replay starts, and stopped when the buffer empties.
            self.replay_deadline = if self.replay.is_empty() {
                None
            } else {
                Some(now.saturating_add_nanos(self.ns.replay_timer))
            };
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-10 An ACK or NACK that acknowledges frames during a replay MUST remove them
            //# from the buffer; the replay then goes on with the first frame it has not re-sent
            //# yet, or with the oldest frame left if that is later.
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
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-14 A NACK that leaves the replay buffer empty MUST NOT start a replay and
            //# MUST NOT count towards `replay_count_max`.
            if self.replay_frames() == 0 {
                return;
            }
            self.start_replay(now, true);
        }
    }

    fn transmit_replay(
        &mut self,
        i: usize,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        let Some((m, frame)) = self.replay.get(i) else {
            // Everything the replay was to resend has been acknowledged meanwhile.
            self.replay_cursor = None;
            return Ok(None);
        };
        let (vc, seq) = (m.vc, m.seq);
        let len = frame.len();
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY
        //# flag and the FCS.
        let mark = |out: &mut [u8], eth_len: usize| {
            if let Some(b) = out.get_mut(eth_len + 1) {
                *b |= FLAG_REPLAY;
            }
            let body = out.len().saturating_sub(fcs::FCS_LEN);
            let sum = fcs::fcs_bytes(out.get(..body).unwrap_or(&[]));
            if let Some(f) = out.get_mut(body..) {
                f.copy_from_slice(&sum);
            }
        };
        if self.share_out {
            // Handed out by reference: the stored frame takes the flag (every later
            // retransmission carries it too) and the wire shares it.
            let (eth_len, fcs_now) = (self.eth_len, !self.defer_fcs);
            if let Some(stored) = self.replay.get_mut(i) {
                if fcs_now {
                    mark(stored, eth_len);
                } else if let Some(b) = stored.get_mut(eth_len + 1) {
                    *b |= FLAG_REPLAY;
                }
            }
            self.shared_out = Some((i, fcs_now));
        } else {
            let out = buf.get_mut(..len).ok_or(BufferTooSmall { needed: len })?;
            out.copy_from_slice(frame);
            mark(out, self.eth_len);
        }
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a
        //# sequence number is paid for once.
        // (Nothing here touches `consumed`: the frame was paid for when first sent.)
        self.counters.frames_replayed = self.counters.frames_replayed.wrapping_add(1);
        self.replay_sent_any = true;
        self.replay_cursor = if i + 1 < self.replay.len() {
            Some(i + 1)
        } else {
            None
        };
        Ok(Some(Transmit {
            len,
            kind: FrameKind::Data,
            data: Some((vc, seq, true)),
        }))
    }

    /// The frame at `index` of the replay buffer for the wire, with its FCS written or not: a
    /// copy if it is short, else a reference to the stored frame.
    fn share_replay(&mut self, index: usize, fcs: bool) -> Option<SharedFrame> {
        let (m, bytes) = self.replay.get(index)?;
        if let Ok(inline) = <[u8; SharedFrame::INLINE_MAX]>::try_from(bytes) {
            return Some(SharedFrame {
                data: FrameBytes::Inline(Inline(inline)),
                len: SharedFrame::INLINE_MAX,
                fcs,
            });
        }
        let provenance = m.provenance;
        self.replay.shared(index).map(|(data, _, len)| SharedFrame {
            data: FrameBytes::Shared(data, provenance),
            len,
            fcs,
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

    #[inline(always)]
    fn transmit_new(
        &mut self,
        now: Instant,
        agreed: &Agreed,
        buf: &mut [u8],
    ) -> Result<Option<Transmit>, BufferTooSmall> {
        debug_assert_eq!(
            self.queued_total,
            self.queues.iter().map(Ring::len).sum::<usize>()
        );
        if self.queued_total == 0 {
            // Nothing to send on any VC.
            return Ok(None);
        }
        let vcs = usize::from(agreed.vcs);
        let mut replay_full = false;
        let mut v = self.rr.min(vcs.saturating_sub(1));
        for _ in 0..vcs {
            let this = v;
            v = if v + 1 == vcs { 0 } else { v + 1 };
            let v = this;
            let Some(plen) = self.queues.get(v).and_then(Ring::front_len) else {
                continue;
            };
            if self.queue_blocked[v] || self.withdrawn[v] > 0 {
                // Its front is reported lost, not sent (LINK-6-5 for a withdrawn one).
                continue;
            }
            let len = frame_len(self.eth_len, plen);
            //= docs/spec/wire.md#24-frame-size-and-padding
            //# WIRE-2.4-8 A transmitter MUST NOT send a frame longer than the MFS in force on its
            //# link: its own configured MFS until the link is UP, the MFS agreed at bring-up once
            //# it is.
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-19 [...] a frame too long, when its VC's turn comes to send it
            //# (LINK-3-17). Other VCs are not held back.
            if len > usize::from(agreed.mfs) {
                self.counters.oversize_for_peer = self.counters.oversize_for_peer.wrapping_add(1);
                self.queue_blocked[v] = true;
                self.events
                    .push_back(EvRec::Oversize(Vc::new(v as u8).unwrap_or_default()));
                continue;
            }
            //= docs/spec/link.md#3-link-level-retry-transmit-side
            //# LINK-3-17 The TX SHOULD take new DATA frames from the VCs in round-robin order,
            //# skipping a VC without a frame or without credit; when the frame whose turn it is
            //# does not fit in the replay buffer, it SHOULD send no new frame on any VC until it
            //# fits, so that a long frame is not overtaken for ever by short ones.
            if replay_full || !self.replay_has_room(agreed, len) {
                // The replay buffer bounds every VC alike; no VC can go.
                replay_full = true;
                continue;
            }
            //= docs/spec/link.md#5-credit-based-flow-control
            //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at
            //# most `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the
            //# cost to `consumed[v]`. A VC without credit MUST NOT stop the other VCs.
            let cost = cost_of(len, agreed.tx_credit_overhead, agreed.tx_credit_size);
            let in_use = diff20(self.consumed[v], self.freed_seen[v]);
            if cost > agreed.tx_credits[v].saturating_sub(in_use) {
                //= docs/spec/link.md#7-counters
                //# LINK-7-4 An end MUST count a credit stall of a VC in credit_stalls when it
                //# begins, and add its length to credit_stall_ns when it ends. A stall begins when
                //# the frame at the head of the VC's queue cannot be sent for want of credit and
                //# ends when a frame of the VC is sent, when its queue empties by withdrawal, or
                //# when the link leaves UP. (1.3: 1.2 defined the stall without a key word, so the
                //# counting it implied bound nobody.)
                if self.stalled_since[v].is_none() {
                    self.stalled_since[v] = Some(now);
                    self.counters.credit_stalls[v] = self.counters.credit_stalls[v].wrapping_add(1);
                }
                continue;
            }
            if buf.len() < len && !self.share_out {
                return Err(BufferTooSmall { needed: len });
            }
            if let Some(since) = self.stalled_since[v].take() {
                self.counters.credit_stall_ns[v] = self.counters.credit_stall_ns[v]
                    .wrapping_add(now.since(since).as_nanos() as u64);
            }
            let t = self.send_new(now, v, len, cost, buf)?;
            self.consumed[v] = add20(self.consumed[v], cost);
            self.rr = if v + 1 == vcs { 0 } else { v + 1 };
            return Ok(Some(t));
        }
        Ok(None)
    }

    // Inlined: its result then stays in registers (read back from memory, its fields written
    // one by one, it stalled the caller's load of it).
    #[inline(always)]
    fn send_new(
        &mut self,
        now: Instant,
        v: usize,
        len: usize,
        credits: u32,
        buf: &mut [u8],
    ) -> Result<Transmit, BufferTooSmall> {
        let vc = Vc::new(v as u8).unwrap_or_default();
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by
        //# one (modulo 2^20) for every new frame; control frames carry none.
        let seq = self.next_seq;
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-16 The TX SHOULD set ACK_REQ on the new DATA frame that brings its replay buffer
        //# to half of `min(llr_window, replay_max_frames)` frames or half of `replay_max_bytes`
        //# bytes, so that the buffer drains before it stops the TX.
        let max_frames = self.agreed.map_or(self.cfg.replay_max_frames, |a| {
            a.window.min(self.cfg.replay_max_frames)
        });
        let half_frames = (max_frames as usize).div_ceil(2);
        let half_bytes = self.cfg.replay_max_bytes as usize / 2;
        let crosses = |before: usize, after: usize, mark: usize| before < mark && after >= mark;
        let ack_req = crosses(self.replay.len(), self.replay.len() + 1, half_frames)
            || crosses(self.replay.bytes(), self.replay.bytes() + len, half_bytes);
        let eth = self.eth();
        let header = DataHeader {
            vc,
            flags: DataFlags {
                replay: false,
                ack_req,
            },
            seq,
        };
        // The queued payload sits in a buffer laid out for its frame: the headers, padding and
        // FCS are written around it and the buffer moves into the replay buffer, uncopied (the
        // caller has found room for it there).
        let Some(mut rec) = self.queues.get_mut(v).and_then(Ring::take_front) else {
            return Err(BufferTooSmall { needed: len });
        };
        self.queued_total -= 1;
        let payload_len = rec.len();
        if rec.at() != self.eth_len + LINK_HEADER_LEN || rec.data().len() != len {
            // Every queued payload is laid out for this link's frames (`submit`,
            // `submit_outgoing`); one that is not is not sent.
            if let Some(q) = self.queues.get_mut(v) {
                q.restore_front(rec);
                self.queued_total += 1;
            }
            return Err(BufferTooSmall { needed: len });
        }
        let fcs_now = !(self.defer_fcs && self.share_out);
        let framed = if fcs_now {
            emit_data_in_place(&eth, header, rec.data_mut(), payload_len)
        } else {
            emit_data_in_place_without_fcs(&eth, header, rec.data_mut(), payload_len)
        };
        if framed.is_err() {
            if let Some(q) = self.queues.get_mut(v) {
                q.restore_front(rec);
                self.queued_total += 1;
            }
            return Err(BufferTooSmall { needed: len });
        }
        //= docs/spec/link.md#3-link-level-retry-transmit-side
        //# LINK-3-2 The TX MUST keep a copy of every DATA frame it sends in a replay buffer until
        //# an ACK or NACK acknowledges it.
        let meta = ReplayMeta {
            seq,
            vc,
            payload_at: (self.eth_len + LINK_HEADER_LEN) as u16,
            payload_len: payload_len as u16,
            credits,
            sent: now,
            provenance: rec.meta,
        };
        if let Err(rec) = self.replay.push_from(rec, 0, len, meta) {
            if let Some(q) = self.queues.get_mut(v) {
                q.restore_front(rec);
                self.queued_total += 1;
            }
            return Err(BufferTooSmall { needed: len });
        }
        if self.oldest_sent.is_none() {
            // The buffer held no frame not flushed: this one is the oldest.
            self.oldest_sent = Some(now);
        }
        let last = self.replay.len() - 1;
        if self.share_out {
            self.shared_out = Some((last, fcs_now));
        } else if let (Some(out), Some((_, stored))) = (buf.get_mut(..len), self.replay.get(last)) {
            out.copy_from_slice(stored);
        }
        self.next_seq = seq.next();
        self.stompable = true;
        if self.replay_deadline.is_none() {
            self.replay_deadline = Some(now.saturating_add_nanos(self.ns.replay_timer));
        }
        self.counters.tx_frames[v] = self.counters.tx_frames[v].wrapping_add(1);
        self.counters.tx_bytes[v] = self.counters.tx_bytes[v].wrapping_add(len as u64);
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
            //= docs/spec/link.md#2-bring-up
            //# LINK-2-11 An end MUST discard, and count as received while not UP, every frame
            //# that passes the checks of wire.md §7 up to the kind while its physical link is
            //# down, and every ACK, NACK, CF or CC frame while it is not UP.
            self.counters.rx_not_up = self.counters.rx_not_up.wrapping_add(1);
            false
        } else {
            // Only an UP peer sends these.
            self.peer_up = true;
            true
        }
    }

    /// Counts a frame discarded by the checks of wire.md §7 before the link looks at it; a
    /// damaged one makes an RX in SEND_ACKS due to NACK (LINK-4-3).
    fn count_bad_frame(&mut self, kind: ErrorKind, action: Action, field: Field) {
        //= docs/spec/link.md#4-link-level-retry-receive-side
        //# LINK-4-13 A frame discarded before link-layer acceptance (size, FCS, stomped FCS,
        //# EtherType, version, kind, control body) MUST NOT consume a sequence number or a
        //# credit. Only a damaged frame (size or FCS) draws a NACK, and only from an RX in
        //# SEND_ACKS: an RX that is OFF, in INIT or already in SEND_NACK or NACK_SENT sends none
        //# for it.
        match action {
            Action::DiscardDamaged => {
                if kind == ErrorKind::BadFcs {
                    self.counters.rx_fcs_errors = self.counters.rx_fcs_errors.wrapping_add(1);
                } else {
                    self.counters.rx_damaged = self.counters.rx_damaged.wrapping_add(1);
                }
                if self.agreed.is_some() && self.rx_state == RxState::SendAcks {
                    self.rx_state = RxState::SendNack;
                    // The damaged frame's number is unknown: no gap seen yet (LINK-4-8).
                    self.nack_ahead = 0;
                }
            }
            Action::DiscardStomped => {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-10 A frame with a stomped FCS (WIRE-2.5-5) MUST be discarded and
                //# counted as stomped, in every state; it MUST NOT draw a NACK, consume a
                //# sequence number or a credit, or change the receive state.
                self.counters.rx_stomped = self.counters.rx_stomped.wrapping_add(1);
            }
            Action::DiscardForeign => {
                self.counters.rx_foreign = self.counters.rx_foreign.wrapping_add(1)
            }
            _ => match field {
                Field::Version => {
                    self.counters.rx_bad_version = self.counters.rx_bad_version.wrapping_add(1)
                }
                Field::Kind => {
                    self.counters.rx_unknown_kind = self.counters.rx_unknown_kind.wrapping_add(1)
                }
                _ => {
                    self.counters.rx_malformed_control =
                        self.counters.rx_malformed_control.wrapping_add(1)
                }
            },
        }
    }

    /// An ACK or a NACK was sent: it settles the ACK that was due.
    //= docs/spec/link.md#4-link-level-retry-receive-side
    //# LINK-4-18 An ACK, a CF and a CC are each either due or not: the triggers that come before
    //# the wire takes it (`ack_spacing`, `ack_timer`, ACK_REQ, a duplicate; freed credits, the two
    //# CF intervals, a CC received; `cc_interval`) MUST make one frame, not one per trigger. A NACK
    //# carries the last good sequence number too, so sending it MUST settle an ACK that was due
    //# (the bytes and the timer of LINK-4-2 and LINK-4-14 start again from it).
    fn acked_now(&mut self) {
        self.unacked_bytes = 0;
        self.ack_deadline = None;
        self.ack_due = false;
    }

    /// Link-layer acceptance of a DATA frame: the sequence number, then the VC and credits.
    fn on_data(
        &mut self,
        now: Instant,
        header: DataHeader,
        payload: &[u8],
        len: usize,
        deliver: Option<Deliver<'_>>,
    ) {
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-10 DATA frames received while not UP MUST be discarded and counted.
        let Some(agreed) = self.agreed else {
            self.counters.rx_not_up = self.counters.rx_not_up.wrapping_add(1);
            return;
        };
        self.peer_up = true;
        let v = header.vc.index();
        let seq = header.seq;
        if seq == self.expected {
            if v >= usize::from(agreed.vcs) {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-11 A DATA frame with the expected sequence number on a VC at or above
                //# the agreed number of VCs MUST be accepted by the LLR (its sequence number
                //# consumed and acknowledged as in LINK-4-1) but not delivered: it MUST be
                //# discarded and counted as on a VC not agreed, charged no credit, and MUST NOT
                //# draw a NACK.
                self.counters.rx_vc_not_agreed = self.counters.rx_vc_not_agreed.wrapping_add(1);
                self.accept_seq(now, seq, len, header.flags.ack_req);
                return;
            }
            let cost = cost_of(
                len,
                u8::try_from(self.cfg.credit_overhead).unwrap_or(u8::MAX),
                self.cfg.credit_size,
            );
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
            if cost > free || self.events.len() >= self.events_max {
                self.counters.credit_overruns[v] = self.counters.credit_overruns[v].wrapping_add(1);
                return;
            }
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted:
            //# delivered to the upper layer once, the expected number advanced by one, and the
            //# frame's bytes added to the count of bytes not yet acknowledged. In NACK_SENT,
            //# accepting it returns the RX to SEND_ACKS.
            match deliver {
                // Nothing waits before it (so the receive buffer is empty too): straight to
                // the upper layer.
                Some(d)
                    if self.events.is_empty()
                        && self.rx.is_empty()
                        && self.rx.fits(payload.len()) =>
                {
                    d(
                        header.vc,
                        seq,
                        payload,
                        Release {
                            vc: header.vc,
                            credits: cost,
                            epoch: self.epoch,
                        },
                    );
                }
                _ => {
                    if !self.rx.push_copy(payload, meta) {
                        self.counters.credit_overruns[v] =
                            self.counters.credit_overruns[v].wrapping_add(1);
                        return;
                    }
                    self.events.push_back(EvRec::Delivered);
                }
            }
            self.received[v] = add20(self.received[v], cost);
            self.held[v] = self.held[v].saturating_add(cost);
            if self.held[v] > self.cfg.rx_credits[v] && self.overrun.is_none() {
                self.overrun = Some(BufferOverrun {
                    at: now,
                    vc: header.vc,
                    held: self.held[v],
                    granted: self.cfg.rx_credits[v],
                });
            }
            self.counters.rx_occupied_max_credits =
                self.counters.rx_occupied_max_credits.max(self.held_total());
            self.counters.rx_frames[v] = self.counters.rx_frames[v].wrapping_add(1);
            self.counters.rx_bytes[v] = self.counters.rx_bytes[v].wrapping_add(len as u64);
            self.accept_seq(now, seq, len, header.flags.ack_req);
            return;
        }
        let behind = self.expected.sub(1).distance_from(seq);
        if behind < agreed.window {
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-5 A DATA frame whose sequence number is within `llr_window` behind the
            //# expected one is a duplicate: it MUST be discarded and counted.
            self.counters.duplicates = self.counters.duplicates.wrapping_add(1);
            //= docs/spec/link.md#4-link-level-retry-receive-side
            //# LINK-4-16 The RX MUST make an ACK due on the first duplicate (LINK-4-5) since it
            //# last accepted a frame, sent a NACK or came UP, and again each time the duplicates
            //# received after the one that last made an ACK due reach ack_spacing bytes (counted as LINK-1-1
            //# says), in NACK_SENT too, so that a TX whose ACKs were lost learns of them.
            //# (1.3: 1.2 asked an ACK for every duplicate, which made a go-back-N replay of *n*
            //# frames the RX already had cost *n* ACK frames ahead of DATA; one per ack_spacing is
            //# the rate of LINK-4-2.)
            if self.dup_run {
                self.dup_bytes = self.dup_bytes.saturating_add(len as u32);
                if self.dup_bytes >= self.cfg.ack_spacing {
                    self.dup_bytes = 0;
                    self.ack_due = true;
                }
            } else {
                self.dup_run = true;
                self.dup_bytes = 0;
                self.ack_due = true;
            }
            return;
        }
        // A gap: the frame is ahead of the expected one by `ahead`.
        let ahead = seq.distance_from(self.expected);
        self.counters.discarded_after_nack = self.counters.discarded_after_nack.wrapping_add(1);
        match self.rx_state {
            RxState::SendAcks => {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-3 A damaged frame (wire.md §7, the rows with NACK) or a DATA frame whose
                //# sequence number is ahead of the expected one (a gap) MUST make an RX in
                //# SEND_ACKS send one NACK carrying the last good sequence number and enter
                //# NACK_SENT. The frame MUST be discarded.
                self.rx_state = RxState::SendNack;
                self.nack_ahead = ahead;
            }
            RxState::NackSent => {
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected
                //# one and MUST NOT send another NACK except as LINK-4-8 says; it processes
                //# control frames as in every other state.
                //= docs/spec/link.md#4-link-level-retry-receive-side
                //# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence
                //# number is not beyond that of the previous such frame received since the RX left
                //# SEND_ACKS (the gap frame that drew the NACK included) shows that a new replay
                //# has begun and has lost the expected frame again: the RX MUST then send one more
                //# NACK. The REPLAY flag plays no part in it. (1.3: 1.2 said "since the last NACK",
                //# which left out the gap frame that drew it; Table LINK-T5 remembered it.)
                if self.nack_ahead > 0 && ahead <= self.nack_ahead {
                    self.rx_state = RxState::SendNack;
                }
                self.nack_ahead = ahead;
            }
            RxState::SendNack => self.nack_ahead = self.nack_ahead.max(ahead),
            RxState::Off => {}
        }
    }

    /// The sequence number side of accepting the expected DATA frame (LINK-4-1, LINK-4-2).
    fn accept_seq(&mut self, now: Instant, seq: Seq, len: usize, ack_req: bool) {
        self.last_good = seq;
        self.expected = seq.next();
        //= docs/spec/link.md#4-link-level-retry-receive-side
        //# LINK-4-9 When the expected frame is accepted while a NACK is due but not yet sent
        //# (SEND_NACK), the NACK MUST be cancelled: the RX returns to SEND_ACKS.
        self.rx_state = RxState::SendAcks;
        self.dup_run = false;
        self.unacked_bytes = self.unacked_bytes.saturating_add(len as u32);
        //= docs/spec/link.md#4-link-level-retry-receive-side
        //# LINK-4-14 The RX MUST send an ACK when an accepted frame has waited `ack_timer` for
        //# one.
        if self.ack_deadline.is_none() {
            self.ack_deadline = Some(now.saturating_add_nanos(self.ns.ack_timer));
        }
        //= docs/spec/link.md#4-link-level-retry-receive-side
        //# LINK-4-15 The RX MUST send an ACK as soon as it has accepted a DATA frame with the
        //# ACK_REQ flag.
        if self.unacked_bytes >= self.cfg.ack_spacing || ack_req {
            self.ack_due = true;
        }
    }

    // ----- internals: CBFC -----------------------------------------------------------------

    fn on_cf(&mut self, c: &CreditRepr) {
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the
        //# mask when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v];
        //# otherwise the entry is stale or impossible and MUST be ignored and counted. An entry
        //# equal to freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither
        //# taken nor counted; an entry for a VC not agreed is counted. A lost CF is therefore
        //# repaired by the next one.
        let vcs = self.agreed.map_or(0, |a| usize::from(a.vcs));
        for (v, entry) in c.counters.iter().enumerate() {
            let Some(value) = *entry else { continue };
            if v >= vcs {
                self.counters.stale_cf_entries = self.counters.stale_cf_entries.wrapping_add(1);
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
                self.counters.stale_cf_entries = self.counters.stale_cf_entries.wrapping_add(1);
            }
        }
    }

    fn on_cc(&mut self, c: &CreditRepr) {
        //= docs/spec/wire.md#43-cf-credit-flow-kind-0x3
        //# WIRE-4.3-2 A CF or CC frame whose VC mask is zero carries no information; a receiver MUST
        //# accept and ignore it.
        // Ignored whole: it recovers nothing and draws no CF (LINK-5-13 follows only a CC that
        // carries an entry).
        if c.counters.iter().all(Option::is_none) {
            return;
        }
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose consumed[v] is ahead of
        //# received[v] by less than 2^19, add the difference to both received[v] and freed[v]:
        //# those credits were paid for frames it will never hold. Because the TX sends CC only when
        //# nothing it sent is unacknowledged, the difference is credits leaked by a fault, never
        //# frames in flight: a counter corrupted in either end, or credits a faulty implementation
        //# lost; the protocol itself leaks none, and a lost CF is repaired by the next one. A CC
        //# entry behind received[v], or for a VC not agreed, is ignored and counted.
        let vcs = self.agreed.map_or(0, |a| usize::from(a.vcs));
        for (v, entry) in c.counters.iter().enumerate() {
            let Some(value) = *entry else { continue };
            if v >= vcs {
                self.counters.stale_cc_entries = self.counters.stale_cc_entries.wrapping_add(1);
                continue;
            }
            let d = diff20(value, self.received[v]);
            if d == 0 {
                continue;
            }
            if d < SEQ_HALF {
                self.received[v] = add20(self.received[v], d);
                self.freed[v] = add20(self.freed[v], d);
                self.counters.credits_recovered[v] =
                    self.counters.credits_recovered[v].wrapping_add(u64::from(d));
            } else {
                self.counters.stale_cc_entries = self.counters.stale_cc_entries.wrapping_add(1);
            }
        }
        //= docs/spec/link.md#5-credit-based-flow-control
        //# LINK-5-13 After a CC that carries at least one entry the RX MUST send a CF at once,
        //# without waiting for cf_min_interval. A CC whose VC mask is zero is ignored whole
        //# (wire.md WIRE-4.3-2) and draws no CF. (1.3: 1.2 did not say which CC draws the CF.)
        self.cf_forced = true;
    }

    fn cf_due(&self, now: Instant) -> bool {
        self.cf_forced
            || (self.freed_since_cf >= self.cfg.cf_min_credits && now >= self.cf_min_deadline())
            || now >= self.last_cf.saturating_add_nanos(self.ns.cf_max_interval)
    }

    /// When `cf_min_interval` lets a CF for freed credits go: it runs from the last CF sent, and
    /// before the first CF since UP nothing holds one back (LINK-5-5, Table LINK-T2).
    fn cf_min_deadline(&self) -> Instant {
        if self.cf_sent_since_up {
            self.last_cf.saturating_add_nanos(self.ns.cf_min_interval)
        } else {
            self.last_cf
        }
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
    #[inline]
    fn settle(&mut self, now: Instant) -> Instant {
        //= docs/spec/link.md#1-model
        //# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time
        let now = now.within_horizon();
        if now > self.now {
            self.now = now;
        }
        if let Some(pop) = self.pending_pop.take() {
            self.settle_pop(pop);
        }
        now
    }

    /// The removal [`Link::settle`] completes.
    #[inline(never)]
    fn settle_pop(&mut self, pop: Pop) {
        match pop {
            Pop::Rx => {
                self.rx.pop_front();
            }
            Pop::Replay => {
                self.replay.pop_front();
                self.flushed = self.flushed.saturating_sub(1);
                self.note_oldest();
            }
            Pop::Queue(vc) => {
                if let Some(q) = self.queues.get_mut(vc.index())
                    && q.pop_front().is_some()
                {
                    self.queued_total -= 1;
                }
                if let Some(b) = self.queue_blocked.get_mut(vc.index()) {
                    *b = false;
                }
                if self.agreed.is_some_and(|a| vc.value() >= a.vcs) {
                    self.reject_not_agreed(vc.index());
                }
            }
            Pop::Withdrawn(vc) => {
                let v = vc.index();
                if let Some(q) = self.queues.get_mut(v) {
                    let len = q.front().map_or(0, |(_, p)| p.len());
                    if q.pop_front().is_some() {
                        self.queued_total -= 1;
                        if let (Some(w), Some(b)) =
                            (self.withdrawn.get_mut(v), self.withdrawn_bytes.get_mut(v))
                        {
                            *w = w.saturating_sub(1);
                            *b = b.saturating_sub(len);
                        }
                    }
                }
                if self.agreed.is_some_and(|a| vc.value() >= a.vcs) {
                    self.reject_not_agreed(v);
                }
            }
        }
    }
}

/// Credits a frame of `len` bytes costs (LINK-5-1).
fn cost_of(len: usize, overhead: u8, credit_size: u16) -> u32 {
    //= docs/spec/link.md#5-credit-based-flow-control
    //# LINK-5-1 A DATA frame of `len` bytes (destination MAC through FCS) costs
    //# `ceil((len + credit_overhead) / credit_size)` credits: the TX uses the credit size and
    //# the credit overhead the peer announced, the RX its own.
    let total = len + usize::from(overhead);
    let cs = usize::from(credit_size.max(1));
    // Credit sizes are mostly powers of two: a shift instead of a division.
    let credits = if cs.is_power_of_two() {
        (total >> cs.trailing_zeros()) + usize::from(total & (cs - 1) != 0)
    } else {
        total.div_ceil(cs)
    };
    u32::try_from(credits).unwrap_or(u32::MAX)
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

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use ethlink_protocol::{DataRepr, GpuId, PathId, Txns};

    use super::*;

    const BUF: usize = 9216;

    fn cfg(mac: u8, seed: u64) -> Config {
        Config {
            mac: MacAddr([2, 0, 0, 0, 0, mac]),
            nonce_seed: seed,
            // 32 KiB per VC, the grant these tests count with.
            rx_credits: [512, 512, 512, 512, 0, 0, 0, 0],
            ..Config::default()
        }
    }

    fn t(ns: u64) -> Instant {
        Instant::from_nanos(ns)
    }

    /// A valid payload of `len` bytes (network header and opaque bytes).
    fn payload(len: usize, tag: u8) -> Vec<u8> {
        let mut p = vec![tag; len.max(NETWORK_HEADER_LEN)];
        let body = (p.len() - NETWORK_HEADER_LEN) as u16;
        let hdr = DataRepr {
            dst: GpuId::new(1).unwrap(),
            src: GpuId::new(0).unwrap(),
            path: PathId(0),
            txns: Txns::Wire {
                count: 1,
                bytes: &[],
                base: 0,
            },
        };
        let _ = hdr;
        p[0..2].copy_from_slice(&1u16.to_be_bytes());
        p[2..4].copy_from_slice(&0u16.to_be_bytes());
        p[4] = 0;
        p[5] = 1;
        p[6..8].copy_from_slice(&body.to_be_bytes());
        p
    }

    /// Every frame `from` has to send now.
    fn drain_tx(from: &mut Link, now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; BUF];
        while let Ok(Some(tx)) = from.poll_transmit(now, &mut buf) {
            out.push(buf[..tx.len].to_vec());
            assert!(out.len() < 10_000, "poll_transmit never ran dry");
        }
        out
    }

    /// Moves frames both ways until both ends are quiet; returns what B delivered.
    fn shuttle(a: &mut Link, b: &mut Link, now: Instant) -> Vec<Vec<u8>> {
        let mut delivered = Vec::new();
        for _ in 0..1000 {
            let ab = drain_tx(a, now);
            let ba = drain_tx(b, now);
            if ab.is_empty() && ba.is_empty() {
                break;
            }
            for f in &ab {
                b.handle_frame(now, f);
            }
            for f in &ba {
                a.handle_frame(now, f);
            }
            delivered.extend(events(b));
            let _ = events(a);
        }
        delivered
    }

    /// Polls every event, releasing delivered frames at once; returns delivered payloads.
    fn events(l: &mut Link) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut releases = Vec::new();
        while let Some(e) = l.poll_event() {
            if let Event::Delivered {
                payload, release, ..
            } = e
            {
                out.push(payload.to_vec());
                releases.push(release);
            }
        }
        for r in releases {
            l.release(r).unwrap();
        }
        out
    }

    fn up_pair(ca: Config, cb: Config) -> (Link, Link) {
        let mut a = Link::new(ca).unwrap();
        let mut b = Link::new(cb).unwrap();
        a.physical_up(t(0));
        b.physical_up(t(0));
        shuttle(&mut a, &mut b, t(0));
        assert!(a.is_up() && b.is_up());
        (a, b)
    }

    fn vc(v: u8) -> Vc {
        Vc::new(v).unwrap()
    }

    /// Sum of every counter that records a discarded frame, and the stale ACKs.
    fn discards(c: &Counters) -> u64 {
        c.discarded() + c.stale_acks
    }

    fn emit(link: LinkFrame<'_>) -> Vec<u8> {
        let repr = FrameRepr {
            eth: EthernetRepr {
                dst: MacAddr::LINK_LOCAL,
                src: MacAddr([2, 0, 0, 0, 0, 9]),
                vlan: None,
            },
            link,
        };
        let mut buf = vec![0u8; repr.buffer_len()];
        repr.emit(&mut buf).unwrap();
        buf
    }

    fn data_frame(v: u8, seq: u32, payload: &[u8], replay: bool) -> Vec<u8> {
        emit(LinkFrame::Data {
            header: DataHeader {
                vc: vc(v),
                flags: DataFlags {
                    replay,
                    ack_req: false,
                },
                seq: Seq::new(seq),
            },
            payload,
        })
    }

    //= type=test
    //# LINK-2-1 On entering INIT an end MUST draw a new nonce (LINK-2-9) and send its first INIT at
    //# once, then one every init_interval while it stays in INIT and physically up; each INIT
    //# carries the nonce and the end's configured parameters (never the agreed ones).
    //# LINK-2-2 An end that receives a valid INIT MUST answer it with an INIT_ECHO carrying the
    //# INIT's nonce as echo nonce and its own configured parameters, in any state but OFF, unless
    //# LINK-2-12 An end MUST NOT answer an INIT, nor come UP on an INIT_ECHO, whose grants cannot
    //# carry one frame of the MFS that would be agreed on some VC that would be agreed: grant[v] <
    //# ceil((mfs + credit_overhead) / credit_size) with the sender's credit size and overhead. It
    //# MUST count the frame as refused, stay in its state and report the reason (the VC and the
    //# numbers) to the upper layer.
    //# LINK-2-4 The parameters in use while UP MUST be agreed as follows: the number of VCs and the
    //# MFS are the smaller of the two announced values; the LLR window of each direction is the
    //# smaller of the two windows; the TX of each end uses the credits granted, the credit size and
    //# the credit overhead announced by the peer (its RX's buffer and pricing), and its RX uses its
    //# own.
    //# LINK-2-5 On entering UP an end MUST reset its TX sequence number and its RX expected
    //# sequence number to 0, its RX last good sequence number to 0xFFFFF (WIRE-4.2-1), and every
    //# credit counter of both sides to 0.
    #[test]
    fn bring_up_agrees_on_the_smaller_parameters() {
        let mut ca = cfg(1, 7);
        ca.mfs = 1500;
        ca.llr_window = 1000;
        ca.replay_max_frames = 100;
        let mut cb = cfg(2, 8).with_uniform_credits(2, 300);
        cb.credit_size = 128;
        let mut a = Link::new(ca).unwrap();
        let mut b = Link::new(cb).unwrap();
        assert_eq!(a.tx_state(), TxState::Off);
        a.physical_up(t(0));
        b.physical_up(t(0));
        assert_eq!(a.tx_state(), TxState::Init);
        // INIT repeats every init_interval while not UP, each with the same nonce.
        let first = drain_tx(&mut a, t(0));
        assert_eq!(first.len(), 1);
        assert!(drain_tx(&mut a, t(999)).is_empty());
        let again = drain_tx(&mut a, t(1000));
        assert_eq!(again.len(), 1);
        let nonce_a = a.nonce();
        match FrameRepr::parse_bytes(&again[0], 9216).unwrap().link {
            LinkFrame::Init(i) => {
                assert_eq!(i.nonce, nonce_a);
                assert_eq!(i.mfs, 1500);
            }
            other => panic!("expected INIT, got {other:?}"),
        }
        // B answers A's INIT with an echo of A's nonce.
        b.handle_frame(t(1000), &again[0]);
        let from_b = drain_tx(&mut b, t(1000));
        let echo = from_b
            .iter()
            .find_map(|f| match FrameRepr::parse_bytes(f, 9216).unwrap().link {
                LinkFrame::InitEcho { echo_nonce, init } => Some((echo_nonce, init)),
                _ => None,
            })
            .expect("an INIT_ECHO");
        assert_eq!(echo.0, nonce_a);
        assert_eq!(echo.1.credit_size, 128);
        for f in &from_b {
            a.handle_frame(t(1000), f);
        }
        shuttle(&mut a, &mut b, t(1000));
        let ag = *a.agreed().unwrap();
        assert_eq!(ag.vcs, 2);
        assert_eq!(ag.mfs, 1500);
        assert_eq!(ag.window, 1000);
        assert_eq!(ag.tx_credit_size, 128);
        assert_eq!(ag.tx_credits[..2], [300, 300]);
        let bg = *b.agreed().unwrap();
        assert_eq!(
            (bg.vcs, bg.mfs, bg.window, bg.tx_credit_size),
            (2, 1500, 1000, 64)
        );
        assert_eq!(a.next_seq(), Seq::new(0));
        assert_eq!(b.expected_seq(), Seq::new(0));
        assert_eq!(a.tx_counters(vc(0)), (0, 0));
        assert_eq!(b.rx_counters(vc(1)), (0, 0));
        assert_eq!(a.tx_state(), TxState::Advance);
        assert_eq!(b.rx_state(), RxState::SendAcks);
        // The first ACK before any DATA carries 0xFFFFF (WIRE-4.2-1).
        b.ack_due = true;
        let ack = drain_tx(&mut b, t(1000));
        assert_eq!(
            FrameRepr::parse_bytes(&ack[0], 9216).unwrap().link,
            LinkFrame::Ack(Seq::new(0xFFFFF))
        );
        // A re-initialisation picks a new nonce.
        a.physical_down(t(2000));
        a.physical_up(t(2000));
        assert_ne!(a.nonce(), nonce_a);
    }

    //= type=test
    //# LINK-2-3 An end MUST enter UP only when it receives an INIT_ECHO whose echo nonce is its
    //# current nonce, and MUST take the peer's nonce and parameters from that INIT_ECHO (LINK-2-17
    //# says what happens to the others). (The echo is the peer's freshest word: it was sent after
    //# our INIT reached the peer. Parameters remembered from an earlier INIT can belong to a peer
    //# incarnation that no longer exists, and an end waiting for an INIT can wait for ever on a
    //# peer that is already UP and sends none.)
    //# LINK-2-7 An end MUST NOT send DATA frames unless it is UP.
    #[test]
    fn up_needs_the_echo_of_our_nonce() {
        let mut a = Link::new(cfg(1, 1)).unwrap();
        let mut b = Link::new(cfg(2, 2)).unwrap();
        a.physical_up(t(0));
        b.physical_up(t(0));
        a.submit(vc(0), &payload(100, 1)).unwrap();
        let init_b = drain_tx(&mut b, t(0)).remove(0);
        // A wrong echo nonce is ignored and counted.
        let init = match FrameRepr::parse_bytes(&init_b, 9216).unwrap().link {
            LinkFrame::Init(i) => i,
            _ => unreachable!(),
        };
        let wrong = emit(LinkFrame::InitEcho {
            echo_nonce: a.nonce() ^ 1,
            init,
        });
        a.handle_frame(t(0), &wrong);
        assert_eq!(a.counters().init_echoes_ignored, 1);
        // The peer's INIT alone is not enough.
        a.handle_frame(t(0), &init_b);
        assert!(!a.is_up());
        // The echo of our nonce is: it carries the peer's nonce and parameters.
        let mut c = Link::new(cfg(3, 3)).unwrap();
        c.physical_up(t(0));
        let right = emit(LinkFrame::InitEcho {
            echo_nonce: c.nonce(),
            init,
        });
        // DATA before UP: A sends none, and C discards and counts one.
        let from_a = drain_tx(&mut a, t(0));
        assert!(
            from_a
                .iter()
                .all(|f| Frame::new_checked(&f[..], 9216).unwrap().kind() != FrameKind::Data)
        );
        c.handle_frame(t(0), &data_frame(0, 0, &payload(64, 1), false));
        assert_eq!(c.counters().rx_not_up, 1);
        assert!(c.poll_event().is_none());
        c.handle_frame(t(0), &right);
        assert!(c.is_up());
        assert_eq!(c.agreed().unwrap().tx_credit_size, init.credit_size);
    }

    //= type=test
    //# LINK-2-6 An end that is UP and receives an INIT whose nonce differs from the peer's nonce it
    //# went UP with MUST re-initialise (§6), unless LINK-2-12 refuses that INIT: the peer has
    //# restarted. It then answers that INIT with an INIT_ECHO carrying its own new nonce, and sends
    //# its own INIT.
    //# LINK-6-3 After FLUSH, on physical link down, and on LINK-2-6 the end MUST re-initialise:
    //# enter INIT (§2) with a new nonce (after physical down: when the physical link comes up
    //# again), reset its RX to OFF until UP, and report a link-down event to the upper layer; on UP
    //# it MUST report a link-up event.
    //# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its receive
    //# buffer, charged to their VC, until the upper layer drains them. Draining them returns no
    //# credit: the counters of LINK-5-4 were reset at UP (LINK-2-5); LINK-2-18 keeps the peer from
    //# being granted that buffer before it is empty.
    #[test]
    fn peer_restart_reinitialises_and_frees_the_buffer() {
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        for i in 0..3 {
            a.submit(vc(0), &payload(200, i)).unwrap();
        }
        let frames = drain_tx(&mut a, t(10));
        for f in &frames {
            b.handle_frame(t(10), f);
        }
        let mut held = Vec::new();
        while let Some(e) = b.poll_event() {
            if let Event::Delivered { release, .. } = e {
                held.push(release);
            }
        }
        assert_eq!(held.len(), 3);
        assert!(b.rx_occupied(vc(0)) > 0);
        // A restarts: B sees an INIT with a new nonce.
        let nonce_before = b.nonce();
        a.physical_down(t(20));
        a.physical_up(t(20));
        let init = drain_tx(&mut a, t(20));
        b.handle_frame(t(20), &init[0]);
        assert!(!b.is_up());
        assert_eq!(b.rx_state(), RxState::Off);
        assert_eq!(b.tx_state(), TxState::Init);
        assert_ne!(b.nonce(), nonce_before);
        assert!(matches!(
            b.poll_event(),
            Some(Event::LinkDown(DownReason::PeerRestart))
        ));
        // The claims from before the reset are accepted and change nothing.
        for r in held {
            b.release(r).unwrap();
        }
        shuttle(&mut a, &mut b, t(30));
        assert!(a.is_up() && b.is_up());
        assert_eq!(b.rx_occupied(vc(0)), 0);
        assert_eq!(b.rx_counters(vc(0)), (0, 0));
        assert_eq!(b.counters().link_ups, 2);
    }

    /// Moves frames both ways until both ends are quiet, keeping every claim B is handed (B's
    /// upper layer takes frames but drains none); returns B's claims and checks, after every
    /// exchange, that what B's buffer holds stays within what it grants.
    fn shuttle_holding(a: &mut Link, b: &mut Link, now: Instant, held: &mut Vec<Release>) {
        for _ in 0..1000 {
            let ab = drain_tx(a, now);
            let ba = drain_tx(b, now);
            if ab.is_empty() && ba.is_empty() {
                break;
            }
            for f in &ab {
                b.handle_frame(now, f);
            }
            for f in &ba {
                a.handle_frame(now, f);
            }
            while let Some(e) = b.poll_event() {
                if let Event::Delivered { release, .. } = e {
                    held.push(release);
                }
            }
            while a.poll_event().is_some() {}
            let holds: u32 = held.iter().map(Release::credits).sum();
            assert!(
                holds <= b.rx_grant(vc(0)),
                "B's buffer holds {holds} credits of frames it took but grants {}",
                b.rx_grant(vc(0))
            );
        }
    }

    //= type=test
    //# LINK-2-18 While its receive buffer holds a frame it delivered before it last left UP, an end
    //# MUST NOT send an INIT_ECHO and MUST NOT enter UP: an INIT_ECHO it receives then is ignored
    //# and counted as LINK-2-17 says. When its upper layer has drained the last of them, an end in
    //# INIT MUST draw a new nonce (LINK-2-9), answer the newest INIT it has received, if any, and
    //# send its INIT at once. (An end physically down draws its nonce when the physical link comes
    //# up, LINK-6-3.)
    //# LINK-6-4 Frames the RX has already delivered stay delivered, and they stay in its receive
    //# buffer, charged to their VC, until the upper layer drains them.
    #[test]
    fn a_buffer_still_holding_the_last_incarnations_frames_is_not_granted_again() {
        // The peer restarts while B's upper layer still holds most of B's buffer (a switch whose
        // egress is congested, a target that stopped taking requests): B grants it again only
        // once those frames have left.
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        let grant = b.rx_grant(vc(0));
        let mut held = Vec::new();
        let mut i = 0u8;
        while a.submit(vc(0), &payload(2000, i)).is_ok() && i < 40 {
            i += 1;
        }
        shuttle_holding(&mut a, &mut b, t(10), &mut held);
        let holds: u32 = held.iter().map(Release::credits).sum();
        assert!(holds * 10 > grant * 9, "B holds {holds} of {grant} credits");
        assert_eq!(b.rx_held(vc(0)), holds);
        a.physical_down(t(20));
        a.physical_up(t(20));
        for _ in 0..40 {
            let _ = a.submit(vc(0), &payload(2000, 0xEE));
        }
        shuttle_holding(&mut a, &mut b, t(30), &mut held);
        assert!(
            !a.is_up(),
            "A came UP while B's buffer was still full of the old frames"
        );
        assert_eq!(
            b.rx_held(vc(0)),
            holds,
            "the old frames are still B's to drain"
        );
        // Half drained is not drained: the echo, and the new nonce, wait for the last one.
        let nonce = b.nonce();
        let last = held.pop().unwrap();
        for r in held.drain(..) {
            b.release(r).unwrap();
        }
        shuttle_holding(&mut a, &mut b, t(40), &mut held);
        assert!(!a.is_up() && held.is_empty());
        assert_eq!(b.nonce(), nonce);
        b.release(last).unwrap();
        assert_eq!(b.rx_held(vc(0)), 0);
        shuttle_holding(&mut a, &mut b, t(50), &mut held);
        // B ignored A's echo while it held the old frames; drained, it draws a new nonce and
        // sends its echo and its INIT at once, and A sends DATA only after echoing that INIT.
        assert!(b.counters().init_echoes_ignored > 0);
        assert!(a.is_up() && b.is_up());
        assert_eq!(
            b.counters().rx_not_up,
            0,
            "no DATA reached B before it was UP"
        );
        assert!(!held.is_empty(), "A's queued frames flow once B has room");
        assert!(b.buffer_overrun().is_none());
    }

    /// An end that forgot the last incarnation's frames at the restart (as 1.2 read LINK-6-4)
    /// grants its buffer again on top of them; the check of every accepted frame names the VC,
    /// the credits and the time of the first overfill.
    #[test]
    fn a_buffer_granted_twice_is_reported_as_overrun() {
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        let grant = b.rx_grant(vc(0));
        let mut held = Vec::new();
        for i in 0..40u8 {
            let _ = a.submit(vc(0), &payload(2000, i));
        }
        shuttle_holding(&mut a, &mut b, t(10), &mut held);
        a.physical_down(t(20));
        a.physical_up(t(20));
        for _ in 0..40 {
            let _ = a.submit(vc(0), &payload(2000, 0xEE));
        }
        let mut more = Vec::new();
        for _ in 0..10 {
            let ab = drain_tx(&mut a, t(30));
            let ba = drain_tx(&mut b, t(30));
            for f in &ab {
                b.handle_frame(t(30), f);
                // The broken end: what it holds from before the restart is forgotten.
                b.held_stale = 0;
            }
            for f in &ba {
                a.handle_frame(t(30), f);
            }
            while let Some(e) = b.poll_event() {
                if let Event::Delivered { release, .. } = e {
                    more.push(release);
                }
            }
        }
        let o = b.buffer_overrun().expect("the buffer was overfilled");
        assert_eq!((o.vc, o.granted, o.at), (vc(0), grant, t(30)));
        assert!(o.held > grant && o.held <= b.rx_held(vc(0)));
    }

    //= type=test
    //# LINK-3-1 Every DATA frame MUST carry the next TX sequence number, which advances by one
    //# (modulo 2^20) for every new frame; control frames carry none.
    //# LINK-3-4 An ACK or NACK carrying *S* acknowledges every frame of the replay buffer up to
    //# and including *S*. The TX MUST accept it only if *S* lies between the sequence number
    //# before the oldest frame of the buffer and the newest frame sent, inclusive (modulo 2^20);
    //# otherwise it is stale or impossible and MUST be ignored and counted.
    #[test]
    fn ack_acknowledges_a_range_and_stale_ones_are_counted() {
        let (mut a, _b) = up_pair(cfg(1, 1), cfg(2, 2));
        for i in 0..5 {
            a.submit(vc(0), &payload(64, i)).unwrap();
        }
        let sent = drain_tx(&mut a, t(1));
        let seqs: Vec<u32> = sent
            .iter()
            .map(|f| {
                Frame::new_checked(&f[..], 9216)
                    .unwrap()
                    .link_header()
                    .seq()
                    .value()
            })
            .collect();
        assert_eq!(seqs, [0, 1, 2, 3, 4]);
        assert_eq!(a.replay_frames(), 5);
        // Beyond the newest sent: impossible.
        a.handle_frame(t(2), &emit(LinkFrame::Ack(Seq::new(5))));
        assert_eq!(a.counters().stale_acks, 1);
        assert_eq!(a.replay_frames(), 5);
        // Before the oldest, modulo 2^20: stale.
        a.handle_frame(t(2), &emit(LinkFrame::Ack(Seq::new(0xFFFFE))));
        assert_eq!(a.counters().stale_acks, 2);
        // The value before the oldest: accepted, acknowledges nothing.
        a.handle_frame(t(2), &emit(LinkFrame::Ack(Seq::new(0xFFFFF))));
        assert_eq!((a.counters().stale_acks, a.replay_frames()), (2, 5));
        a.handle_frame(t(2), &emit(LinkFrame::Ack(Seq::new(2))));
        assert_eq!(a.replay_frames(), 2);
        // 1 is now before the value before the oldest (2): stale.
        a.handle_frame(t(2), &emit(LinkFrame::Ack(Seq::new(1))));
        assert_eq!(a.counters().stale_acks, 3);
        a.handle_frame(t(2), &emit(LinkFrame::Nack(Seq::new(4))));
        assert_eq!(a.replay_frames(), 0);
        assert_eq!(a.tx_state(), TxState::Advance);
    }

    //= type=test
    //# LINK-3-2 The TX MUST keep a copy of every DATA frame it sends in a replay buffer until an
    //# ACK or NACK acknowledges it.
    //# LINK-3-5 On a NACK carrying *S* the TX MUST, after acknowledging up to *S*, retransmit
    //# every frame of the replay buffer in sequence order (go-back-N), with the REPLAY flag set,
    //# before any new frame.
    //# LINK-3-8 A retransmitted frame MUST be byte-for-byte the original but for the REPLAY flag
    //# and the FCS.
    //# LINK-5-3 Retransmissions (LINK-3-5, LINK-3-11) MUST NOT consume credits again: a sequence
    //# number is paid for once.
    #[test]
    fn nack_replays_the_buffer_byte_for_byte() {
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        for i in 0..4 {
            a.submit(vc(0), &payload(300, i)).unwrap();
        }
        let sent = drain_tx(&mut a, t(1));
        assert_eq!(sent.len(), 4);
        let consumed = a.tx_counters(vc(0)).0;
        a.submit(vc(0), &payload(300, 9)).unwrap();
        // Frame 1 is lost; 2 makes a gap, B NACKs with last good 0.
        b.handle_frame(t(2), &sent[0]);
        b.handle_frame(t(2), &sent[2]);
        assert_eq!(b.rx_state(), RxState::SendNack);
        let nack = drain_tx(&mut b, t(2));
        assert!(
            nack.iter()
                .any(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link
                    == LinkFrame::Nack(Seq::new(0)))
        );
        assert_eq!(b.rx_state(), RxState::NackSent);
        for f in &nack {
            a.handle_frame(t(3), f);
        }
        assert_eq!(a.tx_state(), TxState::Replay);
        assert_eq!(a.replay_frames(), 3);
        let replayed = drain_tx(&mut a, t(3));
        // Three replays of 1, 2, 3, then the new frame.
        assert_eq!(replayed.len(), 4);
        for (orig, re) in sent[1..].iter().zip(&replayed) {
            assert_eq!(orig.len(), re.len());
            let flag_at = ETH_HEADER_LEN + 1;
            for (i, (x, y)) in orig.iter().zip(re.iter()).enumerate() {
                if i == flag_at {
                    assert_eq!(*x | FLAG_REPLAY, *y);
                } else if i < orig.len() - 4 {
                    assert_eq!(x, y, "byte {i} differs");
                }
            }
            assert!(fcs::check(re));
        }
        let new = Frame::new_checked(&replayed[3][..], 9216).unwrap();
        assert_eq!(new.link_header().seq(), Seq::new(4));
        assert_eq!(new.link_header().flags() & FLAG_REPLAY, 0);
        // The replays cost nothing more; the new frame costs its own.
        let cost = (sent[0].len() as u32).div_ceil(64);
        assert_eq!(a.tx_counters(vc(0)).0, consumed + cost);
        for f in &replayed {
            b.handle_frame(t(4), f);
        }
        // Seq 0 from before, then 1, 2, 3 and 4.
        assert_eq!(events(&mut b).len(), 5);
        assert_eq!(b.rx_state(), RxState::SendAcks);
        assert_eq!(a.counters().frames_replayed, 3);
        assert_eq!(a.counters().replays_by_nack, 1);
    }

    /// What a payload's writer vouched for goes out with its frame, when first sent and when
    /// replayed, and not past a change to the payload; a short frame carried as a copy has none.
    #[test]
    fn provenance_goes_with_the_frame_and_not_past_a_change() {
        let (mut a, _b) = up_pair(cfg(1, 1), cfg(2, 2));
        let p = Provenance {
            at: 8,
            len: 1000,
            name: [5, 3],
        };
        let mut vouched = a.outgoing(&payload(1008, 1));
        assert!(
            !vouched.vouch(Provenance { at: 9, ..p }),
            "past the payload's end"
        );
        assert_eq!(vouched.provenance(), None);
        assert!(vouched.vouch(p));
        assert_eq!(vouched.provenance(), Some(p));
        a.submit_outgoing(vc(0), vouched).unwrap();
        let mut changed = a.outgoing(&payload(1008, 2));
        assert!(changed.vouch(p));
        changed.payload_mut()[100] ^= 1;
        assert_eq!(changed.provenance(), None);
        a.submit_outgoing(vc(0), changed).unwrap();
        // 20 bytes of payload make a frame of the minimum size, carried as a copy.
        let mut short = a.outgoing(&payload(20, 3));
        assert!(short.vouch(Provenance {
            at: 8,
            len: 12,
            name: [1, 2],
        }));
        a.submit_outgoing(vc(0), short).unwrap();
        let shared = |a: &mut Link, now| {
            let mut buf = vec![0u8; BUF];
            let mut out = Vec::new();
            while let Ok(Some((tx, f))) = a.poll_transmit_shared(now, &mut buf) {
                if tx.kind == FrameKind::Data {
                    let f = f.expect("a DATA frame is handed out by reference");
                    out.push((f.len(), f.provenance()));
                }
            }
            out
        };
        let first = shared(&mut a, t(1));
        assert_eq!(
            first.iter().map(|&(_, p)| p).collect::<Vec<_>>(),
            [Some(p), None, None]
        );
        assert_eq!(first[2].0, SharedFrame::INLINE_MAX);
        // No ACK comes back: the timer replays all three, the first still vouched for.
        let rt = crate::time::nanos(a.config().replay_timer);
        a.handle_timeout(t(1 + rt));
        assert_eq!(a.tx_state(), TxState::Replay);
        assert_eq!(shared(&mut a, t(1 + rt)), first);
    }

    //= type=test
    //# LINK-3-6 The replay timer MUST be started when a frame enters an empty replay buffer,
    //# restarted whenever an ACK or NACK acknowledges at least one frame and when a replay starts,
    //# and stopped when the buffer empties.
    //# LINK-3-7 The TX MUST count the replays it starts, by a NACK or by the replay timer, since
    //# the last acknowledgement progress: the count rises by one when a replay starts and returns
    //# to 0 when an ACK or NACK acknowledges at least one frame, and on entering UP.
    //# LINK-6-1 In FLUSH the TX MUST remove every frame from the replay buffer and report them to
    //# the upper layer, in sequence order, as frames of unknown fate: each may have been
    //# delivered once or not at all. It MUST NOT report them as delivered and MUST NOT
    //# retransmit them after re-initialisation.
    //# LINK-6-2 Frames submitted but not yet sent MUST stay queued across FLUSH and
    //# re-initialisation and be sent after the link is UP again, in order.
    #[test]
    fn replay_timer_then_flush_reports_unknown_fate() {
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        for i in 0..3 {
            a.submit(vc(0), &payload(100, i)).unwrap();
        }
        let sent = drain_tx(&mut a, t(100));
        assert_eq!(sent.len(), 3);
        a.submit(vc(0), &payload(100, 3)).unwrap();
        a.submit(vc(0), &payload(100, 4)).unwrap();
        let _ = drain_tx(&mut a, t(100));
        // No ACK ever comes back. The timer runs from the first send.
        let rt = crate::time::nanos(a.config().replay_timer);
        assert!(a.poll_timeout() <= Some(t(100 + rt)));
        let mut now = 100;
        for k in 1..=3u64 {
            now += rt;
            a.handle_timeout(t(now));
            assert_eq!(a.tx_state(), TxState::Replay);
            assert_eq!(a.replay_count(), k as u8);
            let re = drain_tx(&mut a, t(now));
            assert!(re.len() >= a.replay_frames());
        }
        assert_eq!(a.counters().replay_timeouts, 3);
        // An ACK of one frame restarts the count.
        a.handle_frame(t(now), &emit(LinkFrame::Ack(Seq::new(0))));
        assert_eq!(a.replay_count(), 0);
        for _ in 0..3 {
            now += rt;
            a.handle_timeout(t(now));
            let _ = drain_tx(&mut a, t(now));
        }
        // Queued but not sent when the FLUSH comes.
        a.submit(vc(1), &payload(100, 5)).unwrap();
        now += rt;
        a.handle_timeout(t(now));
        assert_eq!(a.tx_state(), TxState::Flush);
        assert_eq!(a.counters().flushes, 1);
        assert_eq!(a.replay_frames(), 0);
        // LinkDown, then the frames of unknown fate in sequence order, never as delivered.
        assert_eq!(a.poll_event(), Some(Event::LinkDown(DownReason::Flush)));
        let mut lost = Vec::new();
        while let Some(e) = a.poll_event() {
            match e {
                Event::Lost {
                    reason, payload, ..
                } => {
                    assert_eq!(reason, LostReason::UnknownFate);
                    lost.push(payload[8]);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(lost, [1, 2, 3, 4]);
        assert_eq!(a.tx_state(), TxState::Init);
        // Frame 0 reached B before; the queued one (5) goes after the new bring-up.
        b.handle_frame(t(now), &sent[0]);
        let _ = events(&mut b);
        let got = shuttle(&mut a, &mut b, t(now + 10));
        assert!(a.is_up() && b.is_up());
        let tags: Vec<u8> = got.iter().map(|p| p[8]).collect();
        assert_eq!(tags, [5], "flushed frames are not retransmitted");
    }

    //= type=test
    //# LINK-4-1 A DATA frame whose sequence number is the expected one MUST be accepted:
    //# delivered to the upper layer once, the expected number advanced by one, and the frame's
    //# bytes added to the count of bytes not yet acknowledged. In NACK_SENT, accepting it
    //# returns the RX to SEND_ACKS.
    //# LINK-4-2 The RX MUST send an ACK carrying the last accepted sequence number when the bytes
    //# accepted since its last ACK or NACK reach ack_spacing.
    #[test]
    fn acks_on_spacing_timer_and_request() {
        let (_a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        let p = payload(500, 1);
        // 500 B payload -> 532 B frames; spacing 2048 is reached by the fourth.
        for s in 0..3 {
            b.handle_frame(t(10), &data_frame(0, s, &p, false));
        }
        assert!(
            drain_tx(&mut b, t(10)).is_empty(),
            "no ACK before spacing or timer"
        );
        assert_eq!(b.expected_seq(), Seq::new(3));
        b.handle_frame(t(10), &data_frame(0, 3, &p, false));
        let ack = drain_tx(&mut b, t(10));
        assert_eq!(
            FrameRepr::parse_bytes(&ack[0], 9216).unwrap().link,
            LinkFrame::Ack(Seq::new(3))
        );
        // One frame waits ack_timer.
        b.handle_frame(t(20), &data_frame(0, 4, &p, false));
        assert!(drain_tx(&mut b, t(20)).is_empty());
        assert_eq!(b.poll_timeout(), Some(t(520)));
        b.handle_timeout(t(520));
        let ack = drain_tx(&mut b, t(520));
        assert_eq!(
            FrameRepr::parse_bytes(&ack[0], 9216).unwrap().link,
            LinkFrame::Ack(Seq::new(4))
        );
        // ACK_REQ: at once.
        let f = emit(LinkFrame::Data {
            header: DataHeader {
                vc: vc(0),
                flags: DataFlags {
                    replay: false,
                    ack_req: true,
                },
                seq: Seq::new(5),
            },
            payload: &p,
        });
        b.handle_frame(t(600), &f);
        let ack = drain_tx(&mut b, t(600));
        assert_eq!(
            FrameRepr::parse_bytes(&ack[0], 9216).unwrap().link,
            LinkFrame::Ack(Seq::new(5))
        );
        assert_eq!(events(&mut b).len(), 6);
    }

    //= type=test
    //# LINK-4-3 A damaged frame (wire.md §7, the rows with NACK) or a DATA frame whose sequence
    //# number is ahead of the expected one (a gap) MUST make an RX in SEND_ACKS send one NACK
    //# carrying the last good sequence number and enter NACK_SENT. The frame MUST be discarded.
    //# LINK-4-7 In NACK_SENT the RX MUST discard every DATA frame but the expected one and MUST
    //# NOT send another NACK except as LINK-4-8 says
    //# LINK-4-8 In NACK_SENT, a DATA frame ahead of the expected one whose sequence number is not
    //# beyond that of the previous such frame received since the RX left SEND_ACKS (the gap frame
    //# that drew the NACK included) shows that a new replay has begun and has lost the expected
    //# frame again: the RX MUST then send one more NACK. The REPLAY flag plays no part in it. (1.3:
    //# 1.2 said "since the last NACK", which left out the gap frame that drew it; Table LINK-T5
    //# remembered it.)
    //# LINK-4-5 A DATA frame whose sequence number is within llr_window behind the expected one is
    //# a duplicate: it MUST be discarded and counted.
    //# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment
    //# exactly one counter.
    #[test]
    fn nack_discard_renack_and_duplicates() {
        let (_a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        let p = payload(64, 1);
        let nacks = |b: &mut Link, now| {
            drain_tx(b, now)
                .iter()
                .filter(|f| {
                    matches!(
                        FrameRepr::parse_bytes(f, 9216).unwrap().link,
                        LinkFrame::Nack(_)
                    )
                })
                .count()
        };
        b.handle_frame(t(1), &data_frame(0, 0, &p, false));
        // A damaged frame: one NACK with last good 0.
        let mut bad = data_frame(0, 1, &p, false);
        bad[30] ^= 4;
        let before = discards(b.counters());
        b.handle_frame(t(1), &bad);
        assert_eq!(discards(b.counters()), before + 1);
        assert_eq!(b.rx_state(), RxState::SendNack);
        assert_eq!(nacks(&mut b, t(1)), 1);
        // Frames further and further ahead are discarded silently, each counted once.
        for s in [2, 3, 4] {
            let before = discards(b.counters());
            b.handle_frame(t(2), &data_frame(0, s, &p, false));
            assert_eq!(discards(b.counters()), before + 1);
        }
        b.handle_frame(t(2), &bad);
        assert_eq!(nacks(&mut b, t(2)), 0);
        assert_eq!(b.rx_state(), RxState::NackSent);
        // The numbers go back (a new replay lost seq 1 again): one more NACK, flag or not.
        b.handle_frame(t(3), &data_frame(0, 2, &p, false));
        assert_eq!(nacks(&mut b, t(3)), 1);
        // The rest of that replay does not draw another.
        b.handle_frame(t(3), &data_frame(0, 3, &p, true));
        assert_eq!(nacks(&mut b, t(3)), 0);
        b.handle_frame(t(4), &data_frame(0, 1, &p, true));
        assert_eq!(b.rx_state(), RxState::SendAcks);
        // A gap in SEND_ACKS NACKs too.
        b.handle_frame(t(5), &data_frame(0, 5, &p, false));
        assert_eq!(nacks(&mut b, t(5)), 1);
        b.handle_frame(t(5), &data_frame(0, 2, &p, false));
        assert_eq!(b.rx_state(), RxState::SendAcks);
        // A duplicate: discarded, counted, and ACKed with the last accepted.
        let dup_before = b.counters().duplicates;
        b.handle_frame(t(6), &data_frame(0, 0, &p, false));
        assert_eq!(b.counters().duplicates, dup_before + 1);
        let ack = drain_tx(&mut b, t(6));
        assert!(
            ack.iter()
                .any(|f| FrameRepr::parse_bytes(f, 9216).unwrap().link
                    == LinkFrame::Ack(Seq::new(2)))
        );
        assert_eq!(events(&mut b).len(), 3);
        // Foreign and malformed frames are counted once and never NACKed.
        let mut foreign = data_frame(0, 3, &p, false);
        foreign[12] = 0x08;
        foreign[13] = 0x00;
        let n = foreign.len();
        let sum = fcs::fcs_bytes(&foreign[..n - 4]);
        foreign[n - 4..].copy_from_slice(&sum);
        let before = discards(b.counters());
        b.handle_frame(t(7), &foreign);
        assert_eq!(discards(b.counters()), before + 1);
        assert_eq!(b.counters().rx_foreign, 1);
        assert_eq!(b.rx_state(), RxState::SendAcks);
    }

    //= type=test
    //# LINK-4-6 The RX MUST NOT accept a DATA frame whose cost (§5) exceeds the free buffer of
    //# its VC. It MUST discard it as if it had not arrived (no ACK, no NACK) and count a credit
    //# overrun; the TX's replay recovers it.
    //# LINK-5-1 A DATA frame of len bytes (destination MAC through FCS) costs ceil((len +
    //# credit_overhead) / credit_size) credits: the TX uses the credit size and the credit overhead
    //# the peer announced, the RX its own.
    #[test]
    fn receiver_refuses_a_frame_beyond_its_buffer() {
        // 6 credits of 64 B hold one frame of the MFS with its overhead (LINK-2-13).
        let mut cb = cfg(2, 2).with_uniform_credits(1, 6);
        cb.credit_overhead = 8;
        cb.mfs = 376;
        let mut ca = cfg(1, 1).with_uniform_credits(1, 6);
        ca.credit_overhead = 8;
        ca.mfs = 376;
        let (_a, mut b) = up_pair(ca, cb);
        // 200 B payload: frame 232 B, cost ceil(240 / 64) = 4 credits of 6.
        let p = payload(200, 1);
        b.handle_frame(t(1), &data_frame(0, 0, &p, false));
        assert_eq!(b.rx_occupied(vc(0)), 4);
        let mut held = Vec::new();
        while let Some(e) = b.poll_event() {
            if let Event::Delivered { release, .. } = e {
                held.push(release);
            }
        }
        let _ = drain_tx(&mut b, t(1));
        b.handle_frame(t(2), &data_frame(0, 1, &p, false));
        assert_eq!(b.counters().credit_overruns[0], 1);
        assert_eq!(b.expected_seq(), Seq::new(1));
        assert_eq!(b.rx_state(), RxState::SendAcks);
        assert!(drain_tx(&mut b, t(2)).is_empty(), "no ACK, no NACK");
        b.release(held.pop().unwrap()).unwrap();
        b.handle_frame(t(3), &data_frame(0, 1, &p, true));
        assert_eq!(b.expected_seq(), Seq::new(2));
    }

    //= type=test
    //# LINK-5-2 The TX MUST NOT send a new DATA frame on VC *v* unless its cost is at most
    //# `grant[v] - (consumed[v] - freed_seen[v])` (modulo 2^20). It then adds the cost to
    //# `consumed[v]`. A VC without credit MUST NOT stop the other VCs.
    //# LINK-5-4 On accepting a frame on VC *v* the RX MUST add its cost to `received[v]`; as the
    //# upper layer drains it, the RX MUST add its cost to `freed[v]`.
    //# LINK-5-5 The RX MUST send a CF carrying freed[v] when at least cf_min_credits credits,
    //# summed over the VCs, have been freed since its last CF (or since UP) and, if it has sent a
    //# CF since UP, cf_min_interval has passed since that CF. (1.3: the first CF after UP waits for
    //# no interval, as Table LINK-T2 starts cf_min_interval at a CF sent.)
    //# LINK-5-9 Control frames MUST NOT consume credits and MUST NOT be refused for want of
    //# credit.
    #[test]
    fn a_vc_without_credit_stops_alone_and_cf_returns_credit() {
        let small = |c: Config| Config {
            mfs: 1280,
            ..c.with_uniform_credits(2, 20)
        };
        let (mut a, mut b) = up_pair(small(cfg(1, 1)), small(cfg(2, 2)));
        // 500 B payload: 532 B frame, 9 credits. Two fit in 20.
        for i in 0..4 {
            a.submit(vc(0), &payload(500, i)).unwrap();
        }
        a.submit(vc(1), &payload(64, 10)).unwrap();
        let sent = drain_tx(&mut a, t(10));
        let vcs: Vec<u8> = sent
            .iter()
            .map(|f| {
                Frame::new_checked(&f[..], 9216)
                    .unwrap()
                    .link_header()
                    .vc()
                    .value()
            })
            .collect();
        assert_eq!(vcs, [0, 1, 0]);
        assert_eq!(a.tx_counters(vc(0)).0, 18);
        assert_eq!(a.counters().credit_stalls[0], 1);
        assert_eq!(a.counters().credit_stalls[1], 0);
        let mut held = Vec::new();
        for f in &sent {
            b.handle_frame(t(11), f);
        }
        while let Some(e) = b.poll_event() {
            if let Event::Delivered { release, .. } = e {
                held.push(release);
            }
        }
        assert_eq!(b.rx_counters(vc(0)), (18, 0));
        // Control frames still flow with no credit left: ACKs go out.
        b.ack_due = true;
        let ctl = drain_tx(&mut b, t(11));
        assert!(!ctl.is_empty());
        for f in &ctl {
            a.handle_frame(t(12), f);
        }
        assert_eq!(a.replay_frames(), 0);
        assert!(drain_tx(&mut a, t(12)).is_empty(), "VC 0 has no credit");
        // Draining one frame (9 credits >= cf_min_credits 8) sends a CF after cf_min_interval.
        b.release(held.remove(0)).unwrap();
        assert_eq!(b.rx_counters(vc(0)), (18, 9));
        let cf = drain_tx(&mut b, t(200));
        let repr = FrameRepr::parse_bytes(&cf[0], 9216).unwrap().link;
        let LinkFrame::CreditUpdate(c) = repr else {
            panic!("expected CF, got {repr:?}")
        };
        assert_eq!(c.counters[0], Some(9));
        a.handle_frame(t(201), &cf[0]);
        assert_eq!(a.tx_counters(vc(0)), (18, 9));
        assert_eq!(drain_tx(&mut a, t(201)).len(), 1);
        assert!(a.counters().credit_stall_ns[0] > 0);
        // With nothing freed a CF still goes every cf_max_interval.
        let _ = drain_tx(&mut b, t(300));
        let later = drain_tx(&mut b, t(200 + 2000));
        assert!(later.iter().any(|f| matches!(
            FrameRepr::parse_bytes(f, 9216).unwrap().link,
            LinkFrame::CreditUpdate(_)
        )));
    }

    //= type=test
    //# LINK-5-6 On a CF, the TX MUST set freed_seen[v] to the carried value for every VC in the
    //# mask when the value is ahead of freed_seen[v] by 1..2^19-1 and not ahead of consumed[v];
    //# otherwise the entry is stale or impossible and MUST be ignored and counted. An entry equal
    //# to freed_seen[v] (the periodic CF of LINK-5-10 when nothing changed) is neither taken nor
    //# counted; an entry for a VC not agreed is counted. A lost CF is therefore repaired by the
    //# next one.
    #[test]
    fn cf_entries_ahead_of_consumed_or_behind_are_ignored() {
        let (mut a, _b) = up_pair(cfg(1, 1), cfg(2, 2));
        for i in 0..3 {
            a.submit(vc(0), &payload(500, i)).unwrap();
        }
        let _ = drain_tx(&mut a, t(1));
        assert_eq!(a.tx_counters(vc(0)).0, 27);
        let cf = |v: u32| {
            let mut counters = [None; 8];
            counters[0] = Some(v);
            emit(LinkFrame::CreditUpdate(CreditRepr { counters }))
        };
        a.handle_frame(t(2), &cf(28));
        assert_eq!(a.counters().stale_cf_entries, 1);
        a.handle_frame(t(2), &cf(18));
        assert_eq!(a.tx_counters(vc(0)), (27, 18));
        // A lost CF (9) does not matter: 18 already covers it; 9 now is stale.
        a.handle_frame(t(2), &cf(9));
        assert_eq!(a.counters().stale_cf_entries, 2);
        a.handle_frame(t(2), &cf(27));
        assert_eq!(a.tx_counters(vc(0)), (27, 27));
        assert_eq!(a.tx_credits_available(vc(0)), 512);
    }

    //= type=test
    //# LINK-5-7 The TX MUST send a CC carrying consumed[v] when its replay buffer is empty and at
    //# least cc_interval has passed since UP or since its last CC. (A VC that has been without
    //# credit for cc_interval therefore gets a CC as soon as the replay buffer is empty.)
    //# LINK-5-8 On a CC the RX MUST, for every VC in the mask whose consumed[v] is ahead of
    //# received[v] by less than 2^19, add the difference to both received[v] and freed[v]: those
    //# credits were paid for frames it will never hold. Because the TX sends CC only when nothing
    //# it sent is unacknowledged, the difference is credits leaked by a fault, never frames in
    //# flight: a counter corrupted in either end, or credits a faulty implementation lost; the
    //# protocol itself leaks none, and a lost CF is repaired by the next one. A CC entry behind
    //# received[v], or for a VC not agreed, is ignored and counted.
    #[test]
    fn cc_recovers_leaked_credits() {
        let (mut a, mut b) = up_pair(cfg(1, 1), cfg(2, 2));
        a.inject_credit_leak(vc(1), 100);
        assert_eq!(a.tx_credits_available(vc(1)), 412);
        a.submit(vc(0), &payload(64, 1)).unwrap();
        let cc_at = 10_000;
        let f = drain_tx(&mut a, t(5_000));
        let kinds: Vec<FrameKind> = f
            .iter()
            .map(|x| Frame::new_checked(&x[..], 9216).unwrap().kind())
            .collect();
        assert_eq!(kinds, [FrameKind::CreditUpdate, FrameKind::Data]);
        // A frame is unacknowledged at the CC deadline: no CC (a CF may go).
        let kind = |x: &Vec<u8>| Frame::new_checked(&x[..], 9216).unwrap().kind();
        assert!(
            drain_tx(&mut a, t(cc_at))
                .iter()
                .all(|x| kind(x) != FrameKind::CreditResync)
        );
        for x in &f {
            b.handle_frame(t(cc_at), x);
        }
        let _ = events(&mut b);
        b.ack_due = true;
        for x in drain_tx(&mut b, t(cc_at)) {
            a.handle_frame(t(cc_at), &x);
        }
        // As soon as the buffer is empty, the overdue CC goes.
        let out = drain_tx(&mut a, t(cc_at + 1));
        let cc = out
            .iter()
            .find(|x| kind(x) == FrameKind::CreditResync)
            .expect("a CC");
        let LinkFrame::CreditResync(c) = FrameRepr::parse_bytes(cc, 9216).unwrap().link else {
            unreachable!()
        };
        assert_eq!(c.counters[1], Some(100));
        b.handle_frame(t(cc_at + 2), cc);
        assert_eq!(b.counters().credits_recovered[1], 100);
        assert_eq!(b.rx_counters(vc(1)), (100, 100));
        // A CF goes at once and returns the credits.
        let cf = drain_tx(&mut b, t(cc_at + 2));
        for x in &cf {
            a.handle_frame(t(cc_at + 3), x);
        }
        assert_eq!(a.tx_credits_available(vc(1)), 512);
        assert_eq!(a.counters().cc_sent, 1);
        // The next CC comes one interval later, while idle.
        let ccs = |v: Vec<Vec<u8>>| {
            v.iter()
                .filter(|x| kind(x) == FrameKind::CreditResync)
                .count()
        };
        assert_eq!(ccs(drain_tx(&mut a, t(cc_at + 100))), 0);
        assert_eq!(ccs(drain_tx(&mut a, t(2 * cc_at + 1))), 1);
    }

    //= type=test
    //# LINK-3-3 The TX MUST NOT send a new DATA frame when the replay buffer already holds
    //# `min(llr_window, replay_max_frames)` frames, or when adding the frame would make it hold
    //# more than `replay_max_bytes` bytes.
    #[test]
    fn replay_buffer_bounds_stop_the_tx() {
        let mut ca = cfg(1, 1);
        ca.replay_max_frames = 10;
        ca.replay_max_bytes = 9216;
        let mut cb = cfg(2, 2);
        cb.llr_window = 6;
        cb.replay_max_frames = 6;
        let (mut a, _b) = up_pair(ca.clone(), cb);
        for i in 0..12 {
            a.submit(vc(0), &payload(64, i)).unwrap();
        }
        assert_eq!(
            drain_tx(&mut a, t(1)).len(),
            6,
            "agreed window 6 < 10 frames"
        );
        let (mut a, _b) = up_pair(ca, cfg(2, 2));
        for i in 0..5 {
            a.submit(vc(0), &payload(3100, i)).unwrap();
        }
        assert_eq!(drain_tx(&mut a, t(1)).len(), 2, "3 x 3124 B > 9216 B");
        assert_eq!(a.replay_bytes(), 2 * 3124);
    }

    //= docs/spec/link.md#3-link-level-retry-transmit-side
    //= type=test
    //# LINK-3-19 An end MUST bound the transmit queue of each VC by `tx_queue_frames` frames and
    //# `tx_queue_bytes` bytes (Table LINK-T1) and MUST refuse a frame whose submission would exceed
    //# either, saying which, without changing what is queued.
    #[test]
    fn submit_refuses_with_a_reason_and_never_drops() {
        let mut c = cfg(1, 1);
        c.tx_queue_frames = 2;
        let mut a = Link::new(c).unwrap();
        assert_eq!(
            a.submit(vc(4), &payload(64, 0)),
            Err(SubmitError::NoSuchVc { vc: 4, vcs: 4 })
        );
        assert_eq!(
            a.submit(vc(0), &[0u8; 7]),
            Err(SubmitError::BadPayload { len: 7 })
        );
        let mut bad = payload(64, 0);
        bad[7] += 1;
        assert!(matches!(
            a.submit(vc(0), &bad),
            Err(SubmitError::BadPayload { .. })
        ));
        assert_eq!(
            a.submit(vc(0), &payload(9200, 0)),
            Err(SubmitError::TooLong {
                len: 9224,
                mfs: 9216
            })
        );
        a.submit(vc(0), &payload(64, 0)).unwrap();
        a.submit(vc(0), &payload(64, 1)).unwrap();
        assert!(matches!(
            a.submit(vc(0), &payload(64, 2)),
            Err(SubmitError::QueueFull {
                vc: 0,
                frames: 2,
                ..
            })
        ));
        assert_eq!(a.queued(vc(0)).0, 2);
        assert!(
            Link::new(Config {
                vcs: 9,
                ..Config::default()
            })
            .is_err()
        );
    }

    //= type=test
    //# LINK-2-8 An end that is UP MUST NOT send a DATA frame before it has sent an INIT_ECHO for
    //# the peer's current nonce since it last entered INIT, or received an ACK, NACK, CF, CC or
    //# DATA frame since it came UP. (An end comes UP on the peer's INIT_ECHO, possibly before the
    //# peer has the INIT_ECHO that brings it UP; the wire keeps order, so a DATA frame sent after
    //# that INIT_ECHO reaches an UP peer.)
    #[test]
    fn no_data_before_the_peer_can_take_it() {
        let mut a = Link::new(cfg(1, 1)).unwrap();
        let mut b = Link::new(cfg(2, 2)).unwrap();
        a.physical_up(t(0));
        b.physical_up(t(0));
        a.submit(vc(0), &payload(64, 1)).unwrap();
        let init_a = drain_tx(&mut a, t(0));
        b.handle_frame(t(0), &init_a[0]);
        // B answers with INIT_ECHO(a) and its INIT; A gets only the echo: UP, but quiet.
        let from_b = drain_tx(&mut b, t(0));
        let kind = |x: &Vec<u8>| Frame::new_checked(&x[..], 9216).unwrap().kind();
        let echo = from_b
            .iter()
            .find(|x| kind(x) == FrameKind::InitEcho)
            .unwrap();
        let init_b = from_b.iter().find(|x| kind(x) == FrameKind::Init).unwrap();
        a.handle_frame(t(1), echo);
        assert!(a.is_up());
        assert!(
            drain_tx(&mut a, t(1))
                .iter()
                .all(|x| kind(x) != FrameKind::Data)
        );
        // B's INIT arrives: A echoes it, and only then sends DATA behind the echo.
        a.handle_frame(t(2), init_b);
        let kinds: Vec<FrameKind> = drain_tx(&mut a, t(2)).iter().map(kind).collect();
        assert_eq!(kinds, [FrameKind::InitEcho, FrameKind::Data]);
        // Another end that came UP the same way learns from a CF that the peer is UP.
        let mut c = Link::new(cfg(3, 3)).unwrap();
        c.physical_up(t(0));
        c.submit(vc(0), &payload(64, 2)).unwrap();
        let init_c = drain_tx(&mut c, t(0));
        let mut d = Link::new(cfg(4, 4)).unwrap();
        d.physical_up(t(0));
        d.handle_frame(t(0), &init_c[0]);
        let echo = drain_tx(&mut d, t(0))
            .into_iter()
            .find(|x| kind(x) == FrameKind::InitEcho)
            .unwrap();
        c.handle_frame(t(1), &echo);
        assert!(c.is_up());
        assert!(
            drain_tx(&mut c, t(1))
                .iter()
                .all(|x| kind(x) != FrameKind::Data)
        );
        let mut counters = [None; 8];
        counters[0] = Some(0);
        c.handle_frame(
            t(2),
            &emit(LinkFrame::CreditUpdate(CreditRepr { counters })),
        );
        assert!(
            drain_tx(&mut c, t(2))
                .iter()
                .any(|x| kind(x) == FrameKind::Data)
        );
    }

    #[test]
    fn cost_is_the_rounded_up_quotient_for_every_credit_size() {
        for cs in 0..=2048u16 {
            for overhead in [0u8, 7, 255] {
                for len in (0..10_000usize).step_by(7).chain([63, 64, 65, 9216]) {
                    let total = len + usize::from(overhead);
                    let want = total.div_ceil(usize::from(cs.max(1))) as u32;
                    assert_eq!(cost_of(len, overhead, cs), want, "{len} {overhead} {cs}");
                }
            }
        }
    }
}
