//! Ports, VC queues and paths: the choice of a port by the run's policy, transactions packed
//! and queued per port and VC, frames handed to the links as they take them, and frames lost on
//! a port sent again on another (endpoint.md §3, §4, §7, §9).

use super::*;

impl Endpoint {
    /// Deals with the transactions of one frame port `from` lost (TXN-5-2, TXN-5-3, TXN-3-5,
    /// TXN-5-5).
    pub(super) fn reroute(&mut self, from: usize, l: &LostFrame) {
        let Ok(repr) = DataRepr::parse(&l.payload) else {
            return;
        };
        let dst = repr.dst;
        let mut metas = l.meta.as_deref().unwrap_or(&[]).iter();
        for txn in repr.txns.iter().flatten() {
            if txn.is_request() {
                let tag = txn.tag();
                let era = match (l.meta.is_some(), metas.next()) {
                    (true, Some(&(t, g))) if t == tag => Some(g),
                    (true, _) => None,
                    (false, _) => self.lsu_tags.era(tag).or_else(|| self.rdma_tags.era(tag)),
                };
                let Some(era) = era else { continue };
                self.reroute_request(from, &txn, tag, era, l.unknown_fate);
            } else if l.unknown_fate {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-8 A target MUST NOT send again a response whose frame had unknown fate
                self.counters.responses_lost = self.counters.responses_lost.wrapping_add(1);
            } else {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-5 A target MUST send again, on another usable port to the requester, a
                //# response that is known not to have been sent (queued at a port that went
                //# down, LINK-6-5).
                self.counters.moved = self.counters.moved.wrapping_add(1);
                let v = if matches!(txn, TxnRepr::RdmaReadResp { .. }) {
                    VC_READ
                } else {
                    VC_RESP
                };
                self.respond(from, dst, v, &txn, true);
            }
        }
    }

    fn reroute_request(&mut self, from: usize, txn: &TxnRepr<'_>, tag: u16, era: u32, fate: bool) {
        let episode = self.episode;
        if tag < self.cfg.lsu_tags {
            let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
                return;
            };
            //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
            //# EP-9-7 A request lost with a port MUST be handled as a request of the operation
            //# that sent it, even when its tag has since passed to another operation: that
            //# operation MUST NOT be retried, moved or completed because of it.
            if slot.era != era || slot.port != Some(from) {
                return;
            }
            if fate {
                slot.tainted = true;
                if !slot.kind.repeatable() {
                    //= docs/spec/transaction.md#3-statuses
                    //# TXN-3-5 A requester MUST complete with FATE_UNKNOWN, and MUST NOT
                    //# retransmit, an operation that is not repeatable (a store, an RDMA write, an
                    //# atomic) whose request was in a frame its link reported of unknown fate
                    //# (LINK-6-1).
                    self.complete_ls(tag, CompletionStatus::FateUnknown, CompletionData::None);
                    return;
                }
                if slot.episode != episode {
                    slot.episode = episode;
                    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
                    //# EP-13-7 (§9, TXN-5-3) A repeatable operation whose request had unknown fate
                    //# and that has no retry left MUST complete TIMEOUT; one
                    if slot.retries >= self.cfg.max_retries {
                        //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                        //# TXN-5-3 A request of a repeatable operation whose frame had unknown
                        //# fate MUST be sent again on another usable path, at most `max_retries`
                        //# times for the operation (endpoint.md §1.1), after which the operation
                        //# completes with TIMEOUT
                        self.complete_ls(tag, CompletionStatus::Timeout, CompletionData::None);
                        return;
                    }
                    slot.retries += 1;
                    self.counters.retries = self.counters.retries.wrapping_add(1);
                }
            } else {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-2 A request that is known not to have been sent (withdrawn from a port
                //# that went down, LINK-6-5, or never submitted) MUST be sent again on another
                //# usable path, whatever its operation.
                self.counters.moved = self.counters.moved.wrapping_add(1);
                self.send_ls(tag, Some(from));
                return;
            }
            //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
            //# EP-9-6 An endpoint MUST hold a request of unknown fate for `frame_lifetime` from the
            //# moment its link reports the loss before it sends it again (TXN-5-7), and then give its
            //# operation a new deadline `op_timeout` later.
            //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
            //# TXN-5-7 A request of unknown fate MUST NOT be sent again before frame_lifetime has
            //# passed since its link reported the attempt it replaces of unknown fate (LINK-6-1).
            //# (A retry after a passed deadline keeps this rule by itself, since op_timeout >=
            //# frame_lifetime, endpoint.md EP-1-3.)
            // The attempt went at the latest now: `frame_lifetime` from now is never too early.
            let at = self.now.saturating_add(self.cfg.frame_lifetime);
            self.delay_ls(tag, at, Some(from));
            return;
        }
        let Some(&Some((id, chunk))) = self
            .rdma_owner
            .get(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
        else {
            return;
        };
        if self.rdma_tags.era(tag) != Some(era) {
            return;
        }
        let max = self.cfg.max_retries;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        if fate && matches!(op.state, RdmaState::Write { .. }) {
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-5 A requester MUST complete with FATE_UNKNOWN, and MUST NOT
            //# retransmit, an operation that is not repeatable (a store, an RDMA write, an
            //# atomic) whose request was in a frame its link reported of unknown fate
            //# (LINK-6-1).
            self.complete_rdma(id, CompletionStatus::FateUnknown);
            return;
        }
        if fate {
            op.tainted = true;
            if op.episode != episode {
                op.episode = episode;
                if op.retries >= max {
                    self.complete_rdma(id, CompletionStatus::Timeout);
                    return;
                }
                op.retries += 1;
                self.counters.retries = self.counters.retries.wrapping_add(1);
            }
        } else {
            self.counters.moved = self.counters.moved.wrapping_add(1);
        }
        // EP-9-6: what had unknown fate goes again `frame_lifetime` from now at the earliest.
        let not_before = if fate {
            self.now.saturating_add(self.cfg.frame_lifetime)
        } else {
            Instant::ZERO
        };
        let timeout = self.cfg.op_timeout;
        match (&mut op.state, txn) {
            (RdmaState::Write { resend, port, .. }, TxnRepr::RdmaWrite { offset, .. }) => {
                if *port == Some(from) {
                    *port = None;
                }
                resend.push_back(u64::from(*offset));
                if fate {
                    let until = op.hold_until.map_or(not_before, |h| h.max(not_before));
                    op.hold_until = Some(until);
                    op.deadline = op.deadline.max(until.saturating_add(timeout));
                    self.active_writes.remove(id);
                    self.timers.push(Reverse((until, Key::RdmaResume(id))));
                } else if op.hold_until.is_none() && !self.active_writes.contains(id) {
                    self.active_writes.push_back(id);
                }
            }
            (RdmaState::Read { port, active, .. }, TxnRepr::RdmaRead { .. }) => {
                if *port == Some(from) {
                    *port = None;
                }
                if let Some(c) = active.get_mut(&chunk) {
                    c.tainted |= fate;
                    c.not_before = c.not_before.max(not_before);
                }
                if fate {
                    op.deadline = op.deadline.max(not_before.saturating_add(timeout));
                }
                self.send_read_chunk(id, chunk, Some(from));
            }
            _ => {}
        }
    }

    // ----- sending ---------------------------------------------------------------------------

    pub(super) fn is_port_usable(&self, i: usize) -> bool {
        self.ports.get(i).is_some_and(|p| p.usable)
    }

    /// Bytes waiting at port `i`: being packed, in the endpoint's queues and in the link's.
    pub(super) fn load(&self, i: usize) -> usize {
        self.ports.get(i).map_or(usize::MAX, |p| {
            p.packers.values().map(|pk| pk.buf.len()).sum::<usize>()
                + p.out_bytes.iter().sum::<usize>()
                + (0..4).map(|v| p.link.get().queued(vc(v)).1).sum::<usize>()
        })
    }

    /// Picks a usable port by the policy (EP-4-2), other than `avoid` if another is usable.
    pub(super) fn choose(&mut self, dst: GpuId, key: u64, avoid: Option<usize>) -> Option<usize> {
        //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
        //# EP-9-2 A request to be sent again MUST go to a usable port other than the one it was
        //# lost on, chosen by §4, and MUST count a retry when its frame had unknown fate.
        let avoid = avoid.filter(|_| self.usable.len() > 1);
        if let ([only], None) = (self.usable.as_slice(), avoid) {
            // One usable port: every policy picks it (a cycle of one for round robin).
            let only = *only;
            if matches!(
                self.cfg.policy,
                crate::Policy::RoundRobin | crate::Policy::Spray
            ) {
                self.rr_last = Some(only);
            }
            return Some(only);
        }
        let n = self.usable.len() - usize::from(avoid.is_some_and(|a| self.usable.contains(&a)));
        if n == 0 {
            return None;
        }
        let nth = |k: usize| {
            self.usable
                .iter()
                .copied()
                .filter(|&u| Some(u) != avoid)
                .nth(k)
        };
        //= docs/spec/endpoint.md#4-paths-and-load-balancing
        //# EP-4-2 The port of a new pin, of an unordered load-store operation, of an RDMA write
        //# (all its segments) or of an RDMA read chunk MUST be chosen among the usable ports, in
        //# (stack, port) order, by the run's policy; the choice shows in the path id of the
        //# request's frames (EP-3-4): - *hash*: the port at index h mod n, n usable ports, h the
        //# 64-bit hash of §4.1 of the destination GPU and the stream id (ordered streams), the tag
        //# (unordered operations); - *round-robin*: the next port after the last one chosen, in a
        //# cycle over the usable ports; - *least-loaded*: the port with the fewest bytes waiting
        //# (the endpoint's queues and the link's transmit queue), the first in order on a tie; -
        //# *spray*: as round-robin for load-store operations and RDMA reads, and for an RDMA write
        //# each segment on the next port in the cycle.
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-9 (§4) One round-robin cycle MUST be shared by every choice of port an endpoint
        //# makes (pins of streams, unordered load-store operations, RDMA writes and read chunks,
        //# and, for spray, RDMA write segments): the next choice of any kind takes the next usable
        //# port after the last choice of any kind.
        match self.cfg.policy {
            crate::Policy::Hash => nth((mix(dst, key) % n as u64) as usize),
            crate::Policy::RoundRobin | crate::Policy::Spray => {
                let last = self.rr_last;
                let next = self
                    .usable
                    .iter()
                    .copied()
                    .filter(|&u| Some(u) != avoid)
                    .find(|&u| last.is_none_or(|l| u > l))
                    .or_else(|| nth(0));
                self.rr_last = next;
                next
            }
            crate::Policy::LeastLoaded => self
                .usable
                .iter()
                .copied()
                .filter(|&u| Some(u) != avoid)
                .min_by_key(|&u| (self.load(u), u)),
        }
    }

    /// Largest payload (network header and transactions) a frame on port `i` can carry, with
    /// room for an 802.1Q tag whether or not the port tags (EP-7-1): a switch whose egress port
    /// tags then still carries the frame.
    fn max_payload(&self, i: usize) -> usize {
        let Some(p) = self.ports.get(i) else { return 0 };
        let link = p.link.get();
        let mfs = link.agreed().map_or(link.config().mfs, |a| a.mfs);
        let eth = ETH_HEADER_LEN + VLAN_TAG_LEN;
        // frame_len(eth, payload) = eth + link header + payload (+ pad) + FCS.
        let overhead = frame_len(eth, 64).saturating_sub(64);
        usize::from(mfs).saturating_sub(overhead)
    }

    /// Puts one transaction on its way to `dst` through port `i` on VC `v`: into a packer when
    /// `pack`, else alone in a frame.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn enqueue(
        &mut self,
        i: usize,
        v: usize,
        dst: GpuId,
        txn: &[u8],
        meta: Option<TagEra>,
        pack: bool,
        resp: usize,
    ) {
        let cap = self.max_payload(i);
        let now = self.now;
        self.backlog += resp;
        //= docs/spec/endpoint.md#11-capabilities
        //# EP-11-5 An endpoint without PACKING MUST send every DATA frame with one transaction.
        //= docs/spec/classes.md#3-capabilities
        //# CLS-3-1 A device that does not announce `PACKING` MUST NOT send a DATA frame that
        //# carries more than one transaction.
        let pack = pack && self.cfg.caps.contains(Capabilities::PACKING);
        if !pack {
            let Some(layout) = self.ports.get(i).map(|p| p.link.get().layout()) else {
                return;
            };
            let buf = self.pool.pop().unwrap_or_default();
            let mut payload = layout.outgoing_room(buf, NETWORK_HEADER_LEN + txn.len());
            if let Some(t) = payload.payload_mut().get_mut(NETWORK_HEADER_LEN..) {
                t.copy_from_slice(txn);
            }
            self.finish_header(payload.payload_mut(), dst, i, 1);
            self.push_out(
                i,
                v,
                OutFrame {
                    payload,
                    meta: meta.into_iter().collect(),
                    txns: 1,
                    resp_bytes: resp,
                },
            );
            self.pump(i);
            return;
        }
        let key = (u8::try_from(v).unwrap_or(0), dst.value());
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-1 The endpoint MAY put several transactions with the same destination, path and VC
        //# into one frame (WIRE-5-5), up to the MFS agreed on the port and 255 transactions, if it
        //# has the PACKING capability (§11). The frame it packs MUST leave room for an 802.1Q tag:
        //# it is at most the agreed MFS less 4 bytes when the port does not tag.
        let full = self
            .ports
            .get(i)
            .and_then(|p| p.packers.get(&key))
            .is_some_and(|pk| {
                pk.buf.len() + txn.len() > cap
                    || usize::from(pk.count) >= ethlink_protocol::MAX_TXNS_PER_FRAME
            });
        if full {
            self.flush_packer(i, key.0, key.1);
        }
        let delay = self.cfg.pack_delay;
        let Some(p) = self.ports.get_mut(i) else {
            return;
        };
        let pool = &mut self.pool;
        let pk = p.packers.entry(key).or_insert_with(|| {
            let mut buf = pool.pop().unwrap_or_default();
            buf.clear();
            buf.resize(NETWORK_HEADER_LEN, 0);
            Packer {
                buf,
                meta: Vec::new(),
                count: 0,
                since: now,
                resp_bytes: 0,
            }
        });
        let first = pk.count == 0;
        pk.buf.extend_from_slice(txn);
        pk.count += 1;
        pk.resp_bytes += resp;
        pk.meta.extend(meta);
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-2 A transaction MUST NOT wait more than `pack_delay` for others to share its
        //# frame: a frame being packed MUST be queued for its port when it is full or when its
        //# first transaction has waited `pack_delay`, whichever comes first.
        let room_left = cap.saturating_sub(pk.buf.len()) >= 24
            && usize::from(pk.count) < ethlink_protocol::MAX_TXNS_PER_FRAME;
        if delay.is_zero() || !room_left {
            self.flush_packer(i, key.0, key.1);
            self.pump(i);
        } else if first {
            let port = u16::try_from(i).unwrap_or(u16::MAX);
            self.timers.push(Reverse((
                now.saturating_add(delay),
                Key::Pack(port, key.0, key.1),
            )));
        }
    }

    /// As [`Endpoint::enqueue`] for a transaction sent alone in its frame, never packed and
    /// adding nothing to the backlog, whose data is read from local memory at `src` (space,
    /// address): emitted straight into the payload laid out for port `i`'s link, which takes it
    /// without a copy, with the data read straight into it (`txn`'s own data gives only its
    /// length).
    pub(super) fn enqueue_txn_from_memory(
        &mut self,
        i: usize,
        v: usize,
        dst: GpuId,
        txn: &TxnRepr<'_>,
        meta: Option<TagEra>,
        src: (Space, u64),
    ) {
        let Some(layout) = self.ports.get(i).map(|p| p.link.get().layout()) else {
            return;
        };
        let n = txn.buffer_len();
        let buf = self.pool.pop().unwrap_or_default();
        let mut payload = layout.outgoing_room(buf, NETWORK_HEADER_LEN + n);
        let range = txn.data_range();
        let at = NETWORK_HEADER_LEN.saturating_add(range.start);
        let body = payload.payload_mut().get_mut(NETWORK_HEADER_LEN..);
        let mut described = None;
        let written = body.map(|t| {
            if let Some(data) = t.get_mut(range) {
                match self.mem.read_described(src.0, src.1, data) {
                    Ok(p) => described = p.filter(|_| !data.is_empty()).map(|p| (p, data.len())),
                    // A range outside the space (never one a posted descriptor names) reads
                    // as zeros.
                    Err(_) => data.fill(0),
                }
            }
            txn.emit_data_in_place(t)
        });
        if written != Some(Ok(n)) {
            // A transaction that does not emit is sent as an empty one, as `enqueue` would.
            self.pool.push(payload.into_buffer());
            self.enqueue(i, v, dst, &[], meta, false, 0);
            return;
        }
        self.finish_header(payload.payload_mut(), dst, i, 1);
        // Data read whole from a described range is that pattern's bytes: the receiver of the
        // frame, handed it by reference, can take the pattern instead of reading them again.
        // Vouched for last, once every byte of the payload is written.
        if let Some((pattern, len)) = described
            && let (Ok(at), Ok(len)) = (u32::try_from(at), u32::try_from(len))
        {
            payload.vouch(Provenance {
                at,
                len,
                name: pattern.name(),
            });
        }
        self.push_out(
            i,
            v,
            OutFrame {
                payload,
                meta: meta.into_iter().collect(),
                txns: 1,
                resp_bytes: 0,
            },
        );
        self.pump(i);
    }

    pub(super) fn finish_header(&self, payload: &mut [u8], dst: GpuId, i: usize, count: u16) {
        let path = self.ports.get(i).map_or(PathId(0), |p| p.path);
        let len = u16::try_from(payload.len().saturating_sub(NETWORK_HEADER_LEN)).unwrap_or(0);
        if let Some(h) = payload.get_mut(..NETWORK_HEADER_LEN) {
            h[..2].copy_from_slice(&dst.value().to_be_bytes());
            //= docs/spec/endpoint.md#3-ports-and-virtual-channels
            //# EP-3-4 The stack and port a frame is sent on MUST be the ones its path id names.
            //= docs/spec/endpoint.md#12-reset-and-identity
            //# EP-12-3 An endpoint MUST put its configured GPU id in the source of every DATA
            //# frame it sends.
            h[2..4].copy_from_slice(&self.cfg.gpu.value().to_be_bytes());
            h[4] = path.0;
            h[5] = u8::try_from(count).unwrap_or(0);
            h[6..8].copy_from_slice(&len.to_be_bytes());
        }
    }

    pub(super) fn flush_packer(&mut self, i: usize, v: u8, dst: u16) {
        let Some(pk) = self
            .ports
            .get_mut(i)
            .and_then(|p| p.packers.remove(&(v, dst)))
        else {
            return;
        };
        if pk.count == 0 {
            self.pool.push(pk.buf);
            return;
        }
        let mut buf = pk.buf;
        self.finish_header(&mut buf, GpuId::new(dst).unwrap_or_default(), i, pk.count);
        let Some(layout) = self.ports.get(i).map(|p| p.link.get().layout()) else {
            return;
        };
        let spare = self.pool.pop().unwrap_or_default();
        let payload = layout.outgoing(spare, &buf);
        self.pool.push(buf);
        if pk.count > 1 {
            self.counters.packed_frames = self.counters.packed_frames.wrapping_add(1);
            self.counters.packed_txns = self.counters.packed_txns.wrapping_add(u64::from(pk.count));
        }
        //= docs/spec/endpoint.md#7-packing
        //# EP-7-3 Packing MUST keep the order of the transactions of one path.
        self.push_out(
            i,
            usize::from(v),
            OutFrame {
                payload,
                meta: pk.meta,
                txns: pk.count,
                resp_bytes: pk.resp_bytes,
            },
        );
    }

    fn push_out(&mut self, i: usize, v: usize, f: OutFrame) {
        let Some(p) = self.ports.get_mut(i) else {
            return;
        };
        p.link.stir();
        if let Some(b) = p.out_bytes.get_mut(v) {
            *b += f.payload.payload().len();
        }
        if let Some(q) = p.out.get_mut(v) {
            q.push_back(f);
        }
    }

    /// Moves frames from the endpoint's queues of port `i` into its link while it takes them
    /// (EP-3-3).
    pub(super) fn pump(&mut self, i: usize) {
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-3 The endpoint MUST keep its own queue of frames per port and VC and submit a
        //# frame to the port's link only when the link accepts it; a frame refused by the link
        //# (queue full) MUST stay first in the endpoint's queue.
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-6 Queues of different VCs MUST NOT block each other: a frame that waits on one VC
        //# MUST NOT hold back the frames of another.
        let keep = {
            let Some(p) = self.ports.get(i) else { return };
            if !p.usable {
                return;
            }
            let c = p.link.get().config();
            c.replay_max_frames as usize + c.tx_queue_frames as usize + 1
        };
        let mut refused: Vec<(usize, OutFrame)> = Vec::new();
        for v in 0..4 {
            loop {
                let Some(p) = self.ports.get_mut(i) else {
                    return;
                };
                let Some(OutFrame {
                    payload,
                    meta,
                    txns,
                    resp_bytes,
                }) = p.out.get_mut(v).and_then(VecDeque::pop_front)
                else {
                    break;
                };
                let len = payload.payload().len();
                match p.link.get_mut().submit_outgoing(vc(v), payload) {
                    Ok(()) => {}
                    Err((SubmitError::QueueFull { .. }, payload)) => {
                        // It stays first in the endpoint's queue.
                        if let Some(q) = p.out.get_mut(v) {
                            q.push_front(OutFrame {
                                payload,
                                meta,
                                txns,
                                resp_bytes,
                            });
                        }
                        break;
                    }
                    Err((_, payload)) => {
                        // Cannot be sent on this link (never the case on a usable port): move it.
                        if let Some(b) = p.out_bytes.get_mut(v) {
                            *b = b.saturating_sub(len);
                        }
                        refused.push((
                            v,
                            OutFrame {
                                payload,
                                meta,
                                txns,
                                resp_bytes,
                            },
                        ));
                        continue;
                    }
                }
                if let Some(b) = p.out_bytes.get_mut(v) {
                    *b = b.saturating_sub(len);
                }
                if let Some(m) = p.sent_meta.get_mut(v) {
                    m.push_back(meta);
                    while m.len() > keep {
                        m.pop_front();
                    }
                }
                // Buffers of frames the link is done with serve the next payloads.
                if self.pool.len() < POOL
                    && let Some(b) = p.link.get_mut().spare_buffer()
                {
                    self.pool.push(b);
                }
                if let Some(c) = self.counters.ports.get_mut(i) {
                    c.frames_sent = c.frames_sent.wrapping_add(1);
                    c.bytes_sent = c.bytes_sent.wrapping_add(len as u64);
                    c.txns_sent = c.txns_sent.wrapping_add(u64::from(txns));
                }
                self.backlog = self.backlog.saturating_sub(resp_bytes);
            }
        }
        for (v, f) in refused {
            self.backlog = self.backlog.saturating_sub(f.resp_bytes);
            let l = LostFrame {
                vc: v,
                payload: f.payload.payload().to_vec(),
                unknown_fate: false,
                meta: Some(f.meta),
            };
            self.pool.push(f.payload.into_buffer());
            self.reroute(i, &l);
            self.pool.push(l.payload);
        }
    }

    pub(super) fn room(&self, i: usize, v: usize) -> bool {
        self.ports.get(i).is_some_and(|p| {
            p.usable
                && p.out_bytes
                    .get(v)
                    .is_some_and(|&b| b < self.cfg.port_queue as usize)
        })
    }
}
