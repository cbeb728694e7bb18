//! Cut-through (switch.md §6): a frame forwarded on its header, before its end has arrived, and
//! the verdict of its end applied to the copy its egress port has begun.
//!
//! At the header the switch takes the decision its input link will take at the end (the sequence
//! number is the expected one, the VC is agreed and has the credits the header's length
//! declares) and routes the frame; the frame then waits in its queue as any other, without the
//! claim on its input buffer that only the input link's acceptance gives. At the end the input
//! link accepts it or not: an accepted frame still waiting becomes an ordinary one, an accepted
//! frame already handed on gives its credits back at once, and a frame not accepted leaves its
//! queue, or, already handed on, is ended with a stomped FCS.

use ethlink_link::{Instant, Release, SharedFrame};
use ethlink_protocol::fcs::FcsStatus;
use ethlink_protocol::{
    ETH_HEADER_LEN, FrameKind, GpuId, LINK_HEADER_LEN, NETWORK_HEADER_LEN, PathId, Seq, TPID_8021Q,
    VLAN_TAG_LEN, Vc, WIRE_OVERHEAD, frame_len,
};

use super::{Switch, recycle_queued};
use crate::config::Mode;
use crate::counters::bump;
use crate::routes::path_hash;
use crate::voq::{Payload, Queued};

/// What the wire makes of a frame whose header has arrived, as the switch will find it when its
/// end arrives: the status of its FCS and the instant its last bit arrives, `None` when it never
/// does (its wire is cut first).
///
/// A MAC learns these only at the frame's end. A simulated wire knows them when the frame's first
/// bit arrives; the switch uses them only for its egress copy of the frame
/// ([`Switch::handle_header`]), whose end they decide. They must be true: a copy begun on an
/// end said good is sent whole, even if the end then delivered is refused by the input link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameEnd {
    /// The FCS as the input port's MAC will judge it.
    pub fcs: FcsStatus,
    /// When the frame's last bit arrives, if it does.
    pub at: Option<Instant>,
}

/// Where a frame forwarded on its header stands, until its input link has judged its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Waiting in its queue.
    Queued,
    /// Handed to its egress link.
    Handed,
    /// Discarded from its queue before its end (its egress port went down, or its link could not
    /// carry it): once accepted, it is received as any frame.
    Dropped,
}

/// A frame of an input port forwarded on its header whose end has not been judged yet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Pending {
    /// Its egress port and VC.
    pub(super) e: u16,
    pub(super) v: u8,
    /// Tells its copy in the egress link apart from the other frames there.
    pub(super) serial: u32,
    /// Its end will be accepted whole, undamaged and of the length its header declares.
    pub(super) good: bool,
    pub(super) stage: Stage,
}

/// What the header of a frame gives the switch.
struct Head {
    /// The path's hash and destination.
    h: u64,
    dst: GpuId,
    vc: Vc,
    /// The payload (network header and transactions) as the header declares it: offset and
    /// length in the frame.
    at: usize,
    len: usize,
    good: bool,
    /// The frame's header bytes, Ethernet header to network header.
    hdr: usize,
}

/// A big-endian `u16` at `at`.
fn be16(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*bytes.get(at)?, *bytes.get(at + 1)?]))
}

impl Switch {
    /// The header of a DATA frame has arrived on port `p` (its first bytes, Ethernet header to
    /// network header, at least): a switch in cut-through mode may forward the frame before its
    /// end (switch.md §6). `bytes` are the frame's, `end` what its end will be; the switch reads
    /// the header only, and applies `end` to the copy it sends. The frame itself still arrives
    /// whole, later, through [`Switch::handle_frame`] or its variants, which judge it.
    ///
    /// A frame the switch does not forward on its header (store-and-forward mode, not the
    /// expected sequence number, no credit for it, no route, ...) is forwarded as usual once it
    /// has arrived whole.
    pub fn handle_header(&mut self, now: Instant, p: usize, bytes: &[u8], end: FrameEnd) {
        self.take_time(now);
        self.settle_stale(p);
        let Some(h) = self.cut_header(p, bytes, end) else {
            return;
        };
        let payload = self.laid_copy(bytes, &h);
        self.begin_cut(p, h, payload);
    }

    /// A copy of the payload the header `h` declares, laid out for an egress link: a frame
    /// shorter than its header says ends with what it has, zeros after (the copy is stomped).
    fn laid_copy(&mut self, bytes: &[u8], h: &Head) -> Payload {
        let buf = self.pool.pop().unwrap_or_default();
        let mut out = self.layout.outgoing_room(buf, h.len);
        let have = bytes.get(h.at..).unwrap_or(&[]);
        let n = have.len().min(h.len);
        if let (Some(d), Some(s)) = (out.payload_mut().get_mut(..n), have.get(..n)) {
            d.copy_from_slice(s);
        }
        if let Some(rest) = out.payload_mut().get_mut(n..) {
            rest.fill(0);
        }
        Payload::Laid(out)
    }

    /// As [`Switch::handle_header`] for a frame held by reference: the switch keeps a reference
    /// to it instead of a copy of its payload.
    pub fn handle_header_by_ref(
        &mut self,
        now: Instant,
        p: usize,
        frame: &SharedFrame,
        end: FrameEnd,
    ) {
        let bytes = frame.as_bytes();
        self.take_time(now);
        self.settle_stale(p);
        let Some(h) = self.cut_header(p, bytes, end) else {
            return;
        };
        if h.at + h.len <= bytes.len() {
            let payload = Payload::Held {
                frame: frame.clone(),
                at: h.at,
                len: h.len,
            };
            self.begin_cut(p, h, payload);
        } else {
            let payload = self.laid_copy(bytes, &h);
            self.begin_cut(p, h, payload);
        }
    }

    /// A frame of port `p` forwarded on its header whose end never came (its wire was cut, or a
    /// second header came first): it was not accepted.
    pub(super) fn settle_stale(&mut self, p: usize) {
        if self.pending.get(p).is_some_and(Option::is_some) {
            let _ = self.settle_cut(p, None);
        }
    }

    /// The decision a cut-through switch takes at a frame's header, from the header alone and
    /// its input link's state, and the frame's route.
    fn cut_header(&self, p: usize, bytes: &[u8], end: FrameEnd) -> Option<Head> {
        if self.cfg.mode != Mode::CutThrough {
            return None;
        }
        let x = self.ports.get(p)?;
        if !x.up {
            return None;
        }
        let agreed = x.link.agreed()?;
        let tagged = be16(bytes, ETH_HEADER_LEN - 2)? == TPID_8021Q;
        let eth = ETH_HEADER_LEN + if tagged { VLAN_TAG_LEN } else { 0 };
        if be16(bytes, eth - 2)? != ethlink_protocol::ETHERTYPE {
            return None;
        }
        let vk = *bytes.get(eth)?;
        if vk >> 4 != 1 || FrameKind::from_u8(vk & 0x0F) != Some(FrameKind::Data) {
            return None;
        }
        //= docs/spec/switch.md#6-latency-and-cut-through
        //# SW-6-8 A cut-through switch MUST NOT begin to forward a frame before its end unless
        //# its input link would accept the frame on its link header: the link is UP, the
        //# sequence number is the expected one, the VC is agreed and its free buffer holds the
        //# cost of the length the network header declares.
        let vc = Vc::new(*bytes.get(eth + 1)? >> 5)?;
        if vc.value() >= agreed.vcs {
            return None;
        }
        let seq = u32::from_be_bytes([
            *bytes.get(eth + 2)?,
            *bytes.get(eth + 3)?,
            *bytes.get(eth + 4)?,
            *bytes.get(eth + 5)?,
        ]);
        if Seq::new(seq) != x.link.expected_seq() {
            // A duplicate or a gap: the input link will not accept it.
            return None;
        }
        let nh = eth + LINK_HEADER_LEN;
        let dst = GpuId::new(be16(bytes, nh)?)?;
        let src = GpuId::new(be16(bytes, nh + 2)?)?;
        let path = PathId(*bytes.get(nh + 4)?);
        let count = *bytes.get(nh + 5)?;
        let plen = usize::from(be16(bytes, nh + 6)?);
        if count == 0 || plen < 8 {
            // Malformed (WIRE-5-3, WIRE-5-7): discarded once accepted (SW-7-1).
            return None;
        }
        let len = NETWORK_HEADER_LEN + plen;
        let declared = frame_len(eth, len);
        if declared > usize::from(agreed.mfs) {
            return None;
        }
        let cfg = x.link.config();
        let cs = usize::from(cfg.credit_size.max(1));
        let cost = (declared + usize::from(cfg.credit_overhead)).div_ceil(cs);
        let free = x.link.rx_grant(vc).saturating_sub(x.link.rx_occupied(vc));
        if u32::try_from(cost).unwrap_or(u32::MAX) > free {
            return None;
        }
        // Routable now (the pins of §2.4 choose among the ports at the queueing).
        self.route(src, dst, path, vc)?;
        let h = path_hash(src, dst, path, vc);
        let hdr = nh + NETWORK_HEADER_LEN;
        // The verdict of the end, applied to the copy sent (SW-6-2, SW-6-9, SW-6-10).
        let first = self.first_bit(hdr);
        let in_time = end
            .at
            .is_some_and(|t| t.as_nanos().saturating_sub(first.as_nanos()) <= self.max_res_ns);
        let good = end.fcs == FcsStatus::Good && bytes.len() == declared && in_time;
        Some(Head {
            h,
            dst,
            vc,
            at: nh,
            len,
            good,
            hdr,
        })
    }

    /// When the first bit of a frame arrived whose first `hdr` bytes have arrived now, at `rate`
    /// (preamble and gap included, as [`Switch::handle_frame`] counts a whole frame's).
    fn first_bit(&self, hdr: usize) -> Instant {
        let ser = ((hdr + WIRE_OVERHEAD) as f64 * self.ser_ps_per_byte / 1000.0) as u64;
        Instant::from_nanos(self.now.as_nanos().saturating_sub(ser))
    }

    /// Queues a frame forwarded on its header toward its egress port, not yet accepted.
    fn begin_cut(&mut self, i: usize, h: Head, payload: Payload) {
        let v = h.vc.index();
        let Some(e) = self.pinned(h.h, h.dst).map(usize::from) else {
            return;
        };
        self.serial = self.serial.wrapping_add(1).max(1);
        let serial = self.serial;
        //= docs/spec/switch.md#6-latency-and-cut-through
        //# SW-6-1 A frame MUST NOT begin to leave its egress port before latency has passed since
        //# it began to arrive (cut-through: since its first bit, which is its last bit's arrival
        //# less its serialisation time at rate) or since it arrived whole (store-and-forward).
        //# (1.3: 1.2 said "handed to its egress port's link", an instant inside the switch; the
        //# first bit on the egress wire is what a port observes, and never comes earlier.)
        let lat = u64::try_from(self.cfg.latency.as_nanos()).unwrap_or(u64::MAX);
        let first = self.first_bit(h.hdr);
        let ready = Instant::from_nanos(first.as_nanos().saturating_add(lat)).max(self.now);
        // Its residence will begin when its last bit arrives; a frame whose end never comes is
        // settled before it could age.
        let arrived = self.now;
        let head = self.voq.push_back(
            e,
            v,
            i,
            Queued {
                payload,
                release: None,
                ready,
                arrived,
            },
        );
        if let Some(slot) = self.pending.get_mut(i) {
            *slot = Some(Pending {
                e: u16::try_from(e).unwrap_or(u16::MAX),
                v: u8::try_from(v).unwrap_or(0),
                serial,
                good: h.good,
                stage: Stage::Queued,
            });
        }
        self.arm(e, arrived);
        if let Some(w) = self.ports.get_mut(e).and_then(|x| x.waiting.get_mut(v)) {
            *w += 1;
        }
        if ready > self.now {
            if head {
                self.wake(e, ready);
            }
        } else {
            self.mark(e);
        }
        self.refresh();
    }

    /// The end of the frame port `i` forwarded on its header has been judged by its input link:
    /// `got` is what the link delivered. Returns what is left to receive as any frame.
    pub(super) fn settle_cut(
        &mut self,
        i: usize,
        got: Option<(Vc, Payload, Release)>,
    ) -> Option<(Vc, Payload, Release)> {
        let Some(pd) = self.pending.get_mut(i).and_then(Option::take) else {
            return got;
        };
        let (e, v) = (usize::from(pd.e), usize::from(pd.v));
        let accepted = got.is_some() && pd.good;
        match pd.stage {
            Stage::Queued => {
                // It still waits, last of its queue.
                if accepted && let Some(q) = self.voq.back_mut(e, v, i) {
                    let (vc, payload, release) = got?;
                    // The frame's residence begins now (SW-4-6).
                    q.release = Some(release);
                    q.arrived = self.now;
                    let len = payload.len();
                    recycle_queued(&mut self.pool, payload);
                    self.count_rx(i, vc.index(), len);
                    self.hold(i, vc.index(), len);
                    self.arm(e, self.now);
                    return None;
                }
                //= docs/spec/switch.md#6-latency-and-cut-through
                //# SW-6-11 A switch MUST NOT send a copy of a frame its input link did not accept
                //# other than ended by a stomped FCS, and MUST NOT count such a frame as received
                //# or forwarded. (New in 1.3.)
                if let Some(f) = self.voq.pop_back(e, v, i) {
                    recycle_queued(&mut self.pool, f.payload);
                    if let Some(w) = self.ports.get_mut(e).and_then(|x| x.waiting.get_mut(v)) {
                        *w = w.saturating_sub(1);
                    }
                    self.mark(e);
                }
                got
            }
            Stage::Handed => {
                if accepted {
                    let (vc, payload, release) = got?;
                    let len = payload.len();
                    recycle_queued(&mut self.pool, payload);
                    self.count_rx(i, vc.index(), len);
                    if let Some(c) = self.counters.ports.get_mut(e) {
                        bump(&mut c.tx_frames, v, 1);
                        bump(&mut c.tx_bytes, v, len as u64);
                    }
                    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
                    //# SW-4-1 A switch MUST keep a received frame's credits until the frame has
                    //# been handed to its egress port's link, and only then return them
                    //# (LINK-5-4).
                    if let Some(x) = self.ports.get_mut(i) {
                        let _ = x.link.release(release);
                    }
                    self.mark(i);
                    // A copy not begun yet: its residence begins now (SW-4-6).
                    let now = self.now;
                    if let Some(f) = self
                        .ports
                        .get_mut(e)
                        .and_then(|x| x.in_link.get_mut(v))
                        .and_then(|q| q.iter_mut().find(|f| f.serial == pd.serial))
                    {
                        f.arrived = now;
                    }
                    return None;
                }
                // Not accepted, or accepted but not as its header said: the copy is stomped
                // when it begins, if it has not yet.
                if let Some(f) = self
                    .ports
                    .get_mut(e)
                    .and_then(|x| x.in_link.get_mut(v))
                    .and_then(|q| q.iter_mut().find(|f| f.serial == pd.serial))
                {
                    f.stomp = true;
                }
                got
            }
            Stage::Dropped => got,
        }
    }

    /// A frame of `len` payload bytes received on input `i`, VC `v` (Table SW-T3).
    pub(super) fn count_rx(&mut self, i: usize, v: usize, len: usize) {
        if let Some(c) = self.counters.ports.get_mut(i) {
            bump(&mut c.rx_frames, v, 1);
            bump(&mut c.rx_bytes, v, len as u64);
        }
    }

    /// A frame of `len` payload bytes received on input `i`, VC `v`, is held (SW-4-5).
    pub(super) fn hold(&mut self, i: usize, v: usize, len: usize) {
        //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
        //# SW-4-5 A switch MUST keep, for every input port and VC, the payload bytes of the
        //# received frames it holds (`held_bytes`) and the highest value that count has reached
        //# since reset (`held_max_bytes`).
        if let Some(c) = self.counters.ports.get_mut(i)
            && let Some(h) = c.held_bytes.get_mut(v)
        {
            *h += len as u64;
            if let Some(m) = c.held_max_bytes.get_mut(v) {
                *m = (*m).max(*h);
            }
        }
    }

    /// The frame of input `i` forwarded on its header left its queue before its end was judged:
    /// handed to its egress link (`handed`) or discarded.
    pub(super) fn cut_left(&mut self, i: usize, handed: bool) -> Option<Pending> {
        let pd = self.pending.get_mut(i).and_then(Option::as_mut)?;
        pd.stage = if handed {
            Stage::Handed
        } else {
            Stage::Dropped
        };
        Some(*pd)
    }
}
