//! The target: requests received and served against memory and its regions, RDMA writes
//! reassembled, reads answered segment by segment, and the response backlog (endpoint.md §2,
//! §8).

use super::*;

/// The data of a request as received: its bytes, and the data pattern they are when their
/// sender vouched for it ([`Provenance`]).
#[derive(Debug, Clone, Copy)]
struct Received<'a> {
    bytes: &'a [u8],
    pattern: Option<Pattern>,
}

impl Endpoint {
    // ----- receive ---------------------------------------------------------------------------

    /// Whether the response backlog has reached `response_backlog` bytes (EP-8-4). The backlog
    /// is every response byte the target holds or owes and has not put on a wire: in its own
    /// queues, packers and held responses, the FENCE_RESP of every FENCE waiting for earlier
    /// reads, and in the transmit queues of its links on VCs 2 and 3, which carry responses
    /// only. A response waiting in a link's queue still delays the requests
    /// behind it, which is what `T_hold` of Figure EP-F1 bounds.
    pub(super) fn backlog_full(&self) -> bool {
        let queued: usize = self
            .ports
            .iter()
            .map(|p| {
                [VC_RESP, VC_READ]
                    .iter()
                    .map(|&v| p.link.get().queued(vc(v)).1)
                    .sum::<usize>()
            })
            .sum();
        self.backlog.saturating_add(queued) >= self.cfg.response_backlog as usize
    }

    /// Takes held request frames again while the backlog allows (EP-8-4).
    pub(super) fn drain_inbound(&mut self) {
        for i in 0..self.ports.len() {
            if self.ports.get(i).is_none_or(|p| p.inbound.is_empty()) {
                // Nothing held on this port: the backlog need not be summed.
                continue;
            }
            while !self.backlog_full() {
                let Some(p) = self.ports.get_mut(i) else {
                    break;
                };
                let Some((buf, release, at, v)) = p.inbound.pop_front() else {
                    break;
                };
                let _ = p.link.get_mut().release(release);
                //= docs/spec/endpoint.md#8-target
                //# EP-8-9 A target MUST NOT perform any request of a frame it has held (EP-8-4)
                //# for `hold_max` or longer since its link delivered it: it MUST discard such a
                //# frame whole, without answering, count it in `held_expired` and return its
                //# credits.
                if self.now.since(at) >= self.cfg.hold_max {
                    self.counters.held_expired = self.counters.held_expired.wrapping_add(1);
                } else {
                    self.on_payload(i, v, &buf, None);
                }
                self.pool.push(buf);
            }
        }
    }

    /// A DATA payload delivered by port `i`'s link on VC `v`, with what its sender vouched for
    /// if the payload is the frame's own (handed by reference, [`Endpoint::handle_frame_by_ref`]).
    pub(super) fn on_payload(
        &mut self,
        i: usize,
        v: usize,
        payload: &[u8],
        provenance: Option<Provenance>,
    ) {
        let repr = match DataRepr::parse(payload) {
            Ok(r) => r,
            Err(_) => {
                self.counters.malformed_frames = self.counters.malformed_frames.wrapping_add(1);
                return;
            }
        };
        //= docs/spec/endpoint.md#8-target
        //# EP-8-1 A target MUST discard, and count, a DATA frame whose destination GPU is not its
        //# own.
        if repr.dst != self.cfg.gpu {
            self.counters.misdelivered = self.counters.misdelivered.wrapping_add(1);
            return;
        }
        let src = repr.src;
        // The reference performs every request at once, in the order its ports' links deliver
        // them: stronger than the model asks (transaction.md §4, implementation freedom).
        //= docs/spec/endpoint.md#8-target
        //# EP-8-2 A target MUST keep, among the requests of one source that arrive on one port and
        //# VC, the order TXN-4-1 gives them (a frame's requests in the frame's order, frames in the
        //# order the link delivers them), and across the VCs of a port the order of TXN-4-6
        //= docs/spec/transaction.md#4-ordering
        //# TXN-4-1 (path order) Of two load, store or atomic requests a and b of one source on one
        //# path, a issued before b, b MUST be ordered after a (a ob b) when both write (a store or
        //# an atomic), or when they access a common granule.
        //= docs/spec/transaction.md#4-ordering
        //# TXN-4-2 A Load issued after a Store on the same path to an overlapping address MUST
        //# return the Store's bytes for the overlap (unless another requester wrote them in
        //# between).
        //= docs/spec/endpoint.md#3-ports-and-virtual-channels
        //# EP-3-7 A receiver MUST take a request only on VC 0 or 1 and a response only on VC 2
        //# or 3: a transaction of either class on a VC of the other, or on a VC above 3, MUST be
        //# discarded unanswered and counted in `wrong_vc_txns`, and the frame's other
        //# transactions taken as usual.
        let request_vc = v == VC_LS || v == VC_RDMA;
        let response_vc = v == VC_RESP || v == VC_READ;
        for item in repr.txns.iter() {
            match item {
                Ok(txn)
                    if !(if txn.is_request() {
                        request_vc
                    } else {
                        response_vc
                    }) =>
                {
                    self.counters.wrong_vc_txns = self.counters.wrong_vc_txns.wrapping_add(1);
                }
                Ok(txn) if txn.is_request() => {
                    // The data pattern a write's data is, by its sender's word.
                    let described = match (&txn, provenance) {
                        (TxnRepr::RdmaWrite { data, .. }, Some(p)) => {
                            p.of(payload, data).map(Pattern::named)
                        }
                        _ => None,
                    };
                    self.serve(i, src, &txn, described)
                }
                Ok(txn) => self.on_response(src, &txn),
                Err(e) => match e.action {
                    //= docs/spec/endpoint.md#8-target
                    //# EP-8-3 A target MUST answer an unknown request UNSUPPORTED (WIRE-6.1-5)
                    //# and a request with bad fields MALFORMED (WIRE-6.1-6), and go on with the
                    //# next transaction.
                    ethlink_protocol::Action::Respond { .. } if !request_vc => {
                        self.counters.wrong_vc_txns = self.counters.wrong_vc_txns.wrapping_add(1);
                    }
                    ethlink_protocol::Action::Respond {
                        opcode,
                        tag,
                        status,
                    } => {
                        self.counters.requests_refused =
                            self.counters.requests_refused.wrapping_add(1);
                        if status == Status::Misaligned {
                            // A misaligned atomic is a well-formed request (EP-2-5).
                            self.counters.requests_served =
                                self.counters.requests_served.wrapping_add(1);
                        }
                        let status = if status == Status::Misaligned {
                            self.misaligned(payload, e.offset)
                        } else {
                            status
                        };
                        let r = refusal(opcode, tag, status);
                        //= docs/spec/endpoint.md#8-target
                        //# EP-8-6 A target MUST send every response to a request on VC 2, except
                        //# the RDMA_READ_RESP that answers an RDMA_READ, which goes on VC 3,
                        //# whatever VC the request came on and whatever its status.
                        let v = if Opcode::from_u8(opcode) == Opcode::RdmaReadResp {
                            VC_READ
                        } else {
                            VC_RESP
                        };
                        self.respond(i, src, v, &r, true);
                    }
                    ethlink_protocol::Action::DiscardRest => {
                        self.counters.malformed_txns = self.counters.malformed_txns.wrapping_add(1);
                        break;
                    }
                    //= docs/spec/endpoint.md#10-counters
                    //# EP-10-2 [...] a response with a defined opcode that breaks its encoding
                    //# rules MUST be discarded and counted in `bad_responses`.
                    _ => self.counters.bad_responses = self.counters.bad_responses.wrapping_add(1),
                },
            }
        }
    }

    /// The status of an atomic the decoder found misaligned (WIRE-6.5-2): the memory checks that
    /// EP-2-7 orders before alignment come first. `at` is the payload offset of its address.
    fn misaligned(&self, payload: &[u8], at: usize) -> Status {
        //= docs/spec/endpoint.md#2-memory-model
        //# EP-2-7 The checks MUST be made in the order EP-2-3, EP-2-4, EP-2-5, EP-2-6; the first
        //# that fails gives the status.
        let start = at.saturating_sub(12);
        let field = |a: usize, n: usize| payload.get(start + a..start + a + n);
        let (Some(flags), Some(dlen), Some(key), Some(addr)) =
            (field(1, 1), field(6, 2), field(8, 4), field(12, 8))
        else {
            return Status::Misaligned;
        };
        let space = if flags.first().is_some_and(|f| f & 1 != 0) {
            Space::Shared
        } else {
            Space::Global
        };
        if !self.cfg.caps.contains(Capabilities::ATOMICS) || self.no_shared(space) {
            return Status::Unsupported;
        }
        let dlen = u16::from_be_bytes([dlen[0], dlen[1]]);
        let cas = payload.get(start) == Some(&Opcode::AtomicCompareSwap.to_u8());
        let width = if cas { dlen / 2 } else { dlen };
        let key = u32::from_be_bytes([key[0], key[1], key[2], key[3]]);
        let mut a = [0u8; 8];
        a.copy_from_slice(addr);
        let addr = u64::from_be_bytes(a);
        match self
            .mem
            .check(space, key, addr, u64::from(width), Access::Atomic)
        {
            Err(s) => s,
            Ok(()) => Status::Misaligned,
        }
    }

    /// Performs one request as the target and answers it.
    //= docs/spec/transaction.md#2-operations
    //# TXN-2-8 A target MUST answer every request it receives with exactly one response (an RDMA
    //# write: one completion per write; an RDMA read: segments that cover the read, or one error
    //# segment)
    //= docs/spec/wire.md#61-common-prefix
    //# WIRE-6.1-2 The tag is chosen by the requester; a responder MUST copy the tag of a request,
    //# and the request's source GPU into the destination of the response, unchanged.
    //
    // The memory model holds by construction here: the target's memory is one array (one copy,
    // one order of writes per granule) and every request is performed whole, at once, in the
    // order its port delivers it.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-8 Each granule an access covers MUST be read or written as one indivisible event: a
    //# read returns for each granule the bytes of one write (or the initial zeros).
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-9 (coherence) The writes to one granule MUST be seen by every observer in co: for
    //# each granule, the union of rf, co, fr and ob restricted to that granule MUST be acyclic.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-12 (one copy) A write MUST become visible to every observer at once: once any read
    //# has returned its bytes, no read ordered after that read by ob, rf, co and fr, of any
    //# source, returns an older value of the granule.
    fn serve(&mut self, i: usize, src: GpuId, txn: &TxnRepr<'_>, described: Option<Pattern>) {
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-12 (§10) `bytes_received` MUST count the payload of every DATA frame the port's
        //# link delivers, whatever then becomes of it (served, held, discarded as malformed or
        //# misdelivered). `requests_served` MUST count each request the target answers after
        //# reading it whole: performed, or refused by EP-2-7's checks, EP-6-3's alignment, a
        //# capability (§11), room or MISALIGNED; it does not count a request its decoding refuses
        //# (MALFORMED for its encoding, wire.md §6, or UNSUPPORTED for an unknown opcode), nor one
        //# discarded unanswered (EP-3-7, EP-8-9, a frame discarded whole). Each RDMA_WRITE segment
        //# is one request.
        self.counters.requests_served = self.counters.requests_served.wrapping_add(1);
        if let Some(refused) = self.unsupported(txn) {
            let Some(r) = refused else { return };
            self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
            let v = if matches!(r, TxnRepr::RdmaReadResp { .. }) {
                VC_READ
            } else {
                VC_RESP
            };
            self.respond(i, src, v, &r, true);
            return;
        }
        let resp = match *txn {
            TxnRepr::Load { tag, target, len } => {
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-1 A Load MUST return exactly the bytes the target's memory held at the
                //# addressed range when the load was performed, in memory order (WIRE-1.1-2), and
                //# MUST NOT change memory.
                let mut data = [0u8; 256];
                let buf = data.get_mut(..usize::from(len)).unwrap_or(&mut []);
                match self.mem.load(target.space, target.key, target.addr, buf) {
                    Ok(()) => {
                        let r = TxnRepr::LoadResp {
                            tag,
                            status: Status::Ok,
                            data: &*buf,
                        };
                        self.respond(i, src, VC_RESP, &r, true);
                        return;
                    }
                    Err(s) => refusal(Opcode::Load.to_u8(), tag, s),
                }
            }
            TxnRepr::Store { tag, target, data } => {
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-2 A Store MUST write exactly its bytes at the addressed range and nothing
                //# else.
                match self.mem.store(target.space, target.key, target.addr, data) {
                    Ok(()) => TxnRepr::StoreResp {
                        tag,
                        status: Status::Ok,
                    },
                    Err(s) => refusal(Opcode::Store.to_u8(), tag, s),
                }
            }
            TxnRepr::Atomic {
                tag,
                target,
                width,
                op,
            } => match self
                //= docs/spec/transaction.md#2-operations
                //# TXN-2-3 An atomic MUST be performed as one indivisible read-modify-write of a 4
                //# or 8 byte little-endian value (endpoint.md EP-2-8) and MUST return the value
                //# held before it.
                .mem
                .atomic(target.space, target.key, target.addr, width, op)
            {
                Ok(old) => TxnRepr::AtomicResp {
                    tag,
                    kind: match op {
                        AtomicOp::FetchAdd { .. } => AtomicKind::FetchAdd,
                        AtomicOp::Swap { .. } => AtomicKind::Swap,
                        AtomicOp::CompareSwap { .. } => AtomicKind::CompareSwap,
                    },
                    status: Status::Ok,
                    old: Some(old),
                },
                Err(s) => refusal(op.opcode().to_u8(), tag, s),
            },
            TxnRepr::Fence { tag } => {
                // Every request before the FENCE has been performed at once but RDMA reads,
                // whose segments are read as they are built: the FENCE waits for the source's
                // read jobs, those of every port (stronger than TXN-4-6 asks).
                //= docs/spec/transaction.md#4-ordering
                //# TXN-4-6 [...] an RDMA read that arrived before the FENCE MUST have been read whole
                //# before the FENCE is answered, but its segments MAY be read after later requests.
                //# A target MUST answer a FENCE only after every request of its source that arrived
                //# before it on its port has been performed.
                let bound = self.next_job;
                if self.read_jobs.iter().any(|j| j.src == src) {
                    //= docs/spec/endpoint.md#8-target
                    //# EP-8-4 [...] The backlog counts every response the target owes and has not
                    //# put on a wire, the FENCE_RESP of a FENCE that waits for earlier reads
                    //# included.
                    self.backlog = self.backlog.saturating_add(FENCE_RESP_LEN);
                    self.fence_waits.push((src, i, tag, bound));
                    return;
                }
                TxnRepr::FenceResp {
                    tag,
                    status: Status::Ok,
                }
            }
            TxnRepr::RdmaWrite {
                tag,
                target,
                offset,
                total,
                data,
            } => match self.write_segment(
                src,
                tag,
                target,
                (offset, total),
                Received {
                    bytes: data,
                    pattern: described,
                },
            ) {
                Some(status) => TxnRepr::RdmaCompletion { tag, status, total },
                None => return,
            },
            TxnRepr::RdmaRead { tag, target, total } => {
                match self.start_read_job(i, src, tag, target, total) {
                    Some(status) => TxnRepr::RdmaReadResp {
                        tag,
                        status,
                        offset: 0,
                        total,
                        data: &[],
                    },
                    None => return,
                }
            }
            TxnRepr::Unknown { opcode, tag, .. } => refusal(opcode, tag, Status::Unsupported),
            _ => return,
        };
        let v = if matches!(resp, TxnRepr::RdmaReadResp { .. }) {
            VC_READ
        } else {
            VC_RESP
        };
        if !matches!(
            resp,
            TxnRepr::StoreResp {
                status: Status::Ok,
                ..
            } | TxnRepr::AtomicResp {
                status: Status::Ok,
                ..
            } | TxnRepr::FenceResp { .. }
                | TxnRepr::RdmaCompletion {
                    status: Status::Ok,
                    ..
                }
        ) {
            self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
        }
        self.respond(i, src, v, &resp, true);
    }

    /// The answer to a request this endpoint's capabilities leave out (EP-11-2..EP-11-4):
    /// `None` when it has them, `Some(None)` when the request is discarded unanswered.
    fn unsupported(&self, txn: &TxnRepr<'_>) -> Option<Option<TxnRepr<'static>>> {
        let caps = self.cfg.caps;
        let un = |op: Opcode, tag| Some(Some(refusal(op.to_u8(), tag, Status::Unsupported)));
        match *txn {
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-2 An endpoint without RDMA MUST answer the RDMA_WRITE segment at offset 0
            //# with RDMA_COMPLETION UNSUPPORTED, discard its other segments unanswered, and
            //# answer an RDMA_READ with one RDMA_READ_RESP UNSUPPORTED without data.
            TxnRepr::RdmaWrite { tag, offset, .. } if !caps.contains(Capabilities::RDMA) => {
                if offset == 0 {
                    un(Opcode::RdmaWrite, tag)
                } else {
                    Some(None)
                }
            }
            TxnRepr::RdmaRead { tag, total, .. } if !caps.contains(Capabilities::RDMA) => {
                Some(Some(TxnRepr::RdmaReadResp {
                    tag,
                    status: Status::Unsupported,
                    offset: 0,
                    total,
                    data: &[],
                }))
            }
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-3 An endpoint without ATOMICS MUST answer every atomic UNSUPPORTED.
            TxnRepr::Atomic { tag, op, .. } if !caps.contains(Capabilities::ATOMICS) => {
                un(op.opcode(), tag)
            }
            //= docs/spec/endpoint.md#11-capabilities
            //# EP-11-4 An endpoint without SHARED MUST answer UNSUPPORTED every request that
            //# carries the SHARED flag
            TxnRepr::Load { tag, target, .. } if self.no_shared(target.space) => {
                un(Opcode::Load, tag)
            }
            TxnRepr::Store { tag, target, .. } if self.no_shared(target.space) => {
                un(Opcode::Store, tag)
            }
            TxnRepr::Atomic {
                tag, target, op, ..
            } if self.no_shared(target.space) => un(op.opcode(), tag),
            TxnRepr::RdmaRead { tag, target, total } if self.no_shared(target.space) => {
                Some(Some(TxnRepr::RdmaReadResp {
                    tag,
                    status: Status::Unsupported,
                    offset: 0,
                    total,
                    data: &[],
                }))
            }
            // An RDMA write to the shared space is refused at its first segment like any other
            // refused write (EP-6-4), so that it is answered once.
            _ => None,
        }
    }

    fn no_shared(&self, space: Space) -> bool {
        space == Space::Shared && !self.cfg.caps.contains(Capabilities::SHARED)
    }

    /// One RDMA_WRITE segment at the target, `offset` into a write of `total` bytes; the
    /// completion status when one is due.
    fn write_segment(
        &mut self,
        src: GpuId,
        tag: u16,
        target: MemTarget,
        (offset, total): (u32, u32),
        data: Received<'_>,
    ) -> Option<Status> {
        let dlen = u32::try_from(data.bytes.len()).unwrap_or(u32::MAX);
        let end = offset.saturating_add(dlen);
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-3 A target MUST reject, with RDMA_COMPLETION MALFORMED, a segment whose offset is
        //# not a multiple of 256, or whose length is not a multiple of 256 and does not end the
        //# write.
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-3 (§6) The segment size of an RDMA write is the requester's `segment` (Table
        //# EP-T1); a target MUST accept any segment size that keeps EP-6-3's alignment, and sends
        //# the segments of
        if !offset.is_multiple_of(BLOCK) || (!dlen.is_multiple_of(BLOCK) && end != total) {
            return Some(Status::Malformed);
        }
        let key = (src.value(), tag);
        let now = self.now;
        if !self.reasm.contains_key(&key) {
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-4 A target MUST check the whole range of a write (EP-2-3, EP-2-4: address,
            //# total length, key, write permission) when it receives the first segment of the write
            //# (whichever arrives first), and on refusal write none of it and answer one
            //# RDMA_COMPLETION with the status.
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-4 An operation refused by the target (any status but OK and BUSY) MUST NOT
            //# have changed the target's memory (endpoint.md EP-2-13), and an RDMA write refused
            //# MUST NOT have written any of its bytes.
            let blocks = u64::from(total.div_ceil(BLOCK));
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-13 A target MUST answer RDMA_COMPLETION UNSUPPORTED, at the write's first
            //# segment as EP-6-4 says, a write longer than `write_chunk`, or whose blocks alone
            //# exceed `max_reassembly_blocks`.
            let check = if self.no_shared(target.space)
                || total > self.cfg.write_chunk
                || blocks > u64::from(self.cfg.max_reassembly_blocks)
            {
                Err(Status::Unsupported)
            } else {
                self.mem.check(
                    target.space,
                    target.key,
                    target.addr,
                    u64::from(total),
                    Access::Write,
                )
            };
            if let Err(s) = check {
                // Remembered, room permitting, so that the write is answered once.
                if self.reasm.len() < self.cfg.max_reassemblies as usize {
                    self.reasm.insert(
                        key,
                        Reasm {
                            refused: true,
                            total,
                            blocks: Blocks::new(0),
                            last: now,
                            reserved: 0,
                        },
                    );
                    self.timers.push(Reverse((
                        now.saturating_add(self.cfg.op_timeout),
                        Key::Reasm(key.0, key.1),
                    )));
                }
                return Some(s);
            }
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-14 A target MUST bound the writes it reassembles at once
            //# (`max_reassemblies`) and answer RDMA_COMPLETION BUSY, writing nothing, every
            //# segment of a write it has no record for when starting one would exceed that
            //# bound.
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-12 A target MUST reserve `ceil(total / 256)` blocks for each write it starts
            //# reassembling, keep the blocks reserved at once within `max_reassembly_blocks`, and
            //# answer RDMA_COMPLETION BUSY, writing nothing, every segment of a write it has no
            //# record for when starting one would exceed that bound.
            if self.reasm.len() >= self.cfg.max_reassemblies as usize
                || self.reasm_blocks.saturating_add(blocks)
                    > u64::from(self.cfg.max_reassembly_blocks)
            {
                self.counters.reassembly_refused = self.counters.reassembly_refused.wrapping_add(1);
                return Some(Status::Busy);
            }
            self.reasm_blocks += blocks;
            self.reasm.insert(
                key,
                Reasm {
                    refused: false,
                    total,
                    blocks: Blocks::new(total),
                    last: now,
                    reserved: blocks,
                },
            );
            self.counters.reassembly(1);
            self.timers.push(Reverse((
                now.saturating_add(self.cfg.op_timeout),
                Key::Reasm(key.0, key.1),
            )));
        }
        let r = self.reasm.get_mut(&key)?;
        if r.refused {
            r.last = now;
            self.counters.duplicate_segments = self.counters.duplicate_segments.wrapping_add(1);
            return None;
        }
        if r.total != total {
            return Some(Status::Malformed);
        }
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-20 A target MUST check each later segment of a write it is reassembling against
        //# the region table as it is then (EP-2-3, EP-2-4, EP-2-12). When the region has been
        //# removed or changed, the target MUST write nothing of that segment, answer the write
        //# once with the status the check gives, and drop its later segments as those of a write
        //# refused (EP-6-4).
        let seg_addr = target.addr.saturating_add(u64::from(offset));
        if let Err(s) = self.mem.check(
            target.space,
            target.key,
            seg_addr,
            u64::from(dlen),
            Access::Write,
        ) {
            let (reserved, beyond) = (r.reserved, r.blocks.beyond());
            r.refused = true;
            r.reserved = 0;
            r.blocks = Blocks::new(0);
            self.reasm_blocks = self.reasm_blocks.saturating_sub(reserved);
            self.counters.reorder(-beyond);
            self.counters.reassembly(-1);
            return Some(s);
        }
        r.last = now;
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-5 A target MUST reassemble a write by (source GPU, tag): it writes each segment's
        //# bytes at `address + offset` when the segment arrives, keeps a record of the 256-byte
        //# blocks received, ignores a segment whose blocks it has all received, and sends
        //# RDMA_COMPLETION OK, on the port the completing segment arrived on, when every block is
        //# received.
        let delta = match r.blocks.mark(offset, dlen) {
            Marked::Outside => return Some(Status::Malformed),
            Marked::Duplicate => {
                self.counters.duplicate_segments = self.counters.duplicate_segments.wrapping_add(1);
                return None;
            }
            Marked::New(delta) => delta,
        };
        // Kept as a description when the bytes are the data pattern at their place in the
        // write, or the pattern their sender vouched for.
        let addr = target.addr.saturating_add(u64::from(offset));
        let _ = match data.pattern {
            Some(p) => self
                .mem
                .write_pattern(target.space, addr, u64::from(dlen), p),
            None => self
                .mem
                .write_received(target.space, addr, data.bytes, target.addr),
        };
        //= docs/spec/transaction.md#2-operations
        //# TXN-2-4 An RDMA write MUST write exactly its bytes at `address .. address + length` of
        //# the target space. Its segments MAY arrive in any order and on any path; the target MUST
        //# report it complete (RDMA_COMPLETION) only after every byte of it has been written, and
        //# MUST report it once per write it sees complete.
        let complete = r.blocks.complete();
        let reserved = r.reserved;
        self.counters.reorder(delta);
        if complete {
            self.reasm_blocks = self.reasm_blocks.saturating_sub(reserved);
            self.reasm.remove(&key);
            self.counters.reassembly(-1);
            return Some(Status::Ok);
        }
        None
    }

    fn start_read_job(
        &mut self,
        i: usize,
        src: GpuId,
        tag: u16,
        target: MemTarget,
        total: u32,
    ) -> Option<Status> {
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-8 A target MUST check the whole range of an RDMA_READ (EP-2-3, EP-2-4) when it
        //# receives it; on refusal it answers one RDMA_READ_RESP with the status and no data.
        if let Err(s) = self.mem.check(
            target.space,
            target.key,
            target.addr,
            u64::from(total),
            Access::Read,
        ) {
            return Some(s);
        }
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-9 A target MUST bound the reads it serves at once (`max_read_jobs`) and answer an
        //# RDMA_READ beyond the bound with BUSY.
        if self.read_jobs.len() >= self.cfg.max_read_jobs as usize {
            self.counters.read_jobs_refused = self.counters.read_jobs_refused.wrapping_add(1);
            return Some(Status::Busy);
        }
        let id = self.next_job;
        self.next_job += 1;
        self.read_jobs.push_back(ReadJob {
            id,
            src,
            tag,
            port: i,
            target,
            total,
            next: 0,
            last: self.now,
        });
        self.timers.push(Reverse((
            self.now.saturating_add(self.cfg.op_timeout),
            Key::ReadJob(id),
        )));
        None
    }

    /// Sends a response to `dst`, on port `i` if usable, else on another (EP-4-4), else holds it.
    //= docs/spec/endpoint.md#8-target
    //# EP-8-8 A target MUST NOT drop a response for want of room.
    // Responses are queued or held without a bound on their number; the backlog stops the
    // intake of requests instead (EP-8-4).
    pub(super) fn respond(
        &mut self,
        i: usize,
        dst: GpuId,
        v: usize,
        txn: &TxnRepr<'_>,
        pack: bool,
    ) {
        let mut buf = self.pool.pop().unwrap_or_default();
        buf.clear();
        buf.resize(txn.buffer_len(), 0);
        let n = txn.emit(&mut buf).unwrap_or(0);
        buf.truncate(n);
        let bytes = &buf[..];
        //= docs/spec/endpoint.md#4-paths-and-load-balancing
        //# EP-4-4 A response MUST be sent on the port its request arrived on, unless that port is
        //# no longer usable (TXN-5-5).
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-13 (§9, TXN-5-5) A response whose port stops being usable before it is sent MUST
        //# be sent on a usable port to its requester chosen by §4 with the response's tag
        let port = if self.is_port_usable(i) {
            Some(i)
        } else {
            self.choose(dst, u64::from(txn.tag()), Some(i))
        };
        match port {
            Some(p) => self.enqueue(p, v, dst, bytes, None, pack && v == VC_RESP, n),
            None => {
                let txn = bytes.to_vec();
                if self.held.is_empty() {
                    self.timers.push(Reverse((
                        self.now.saturating_add(self.cfg.op_timeout),
                        Key::Held,
                    )));
                }
                self.backlog += n;
                self.held.push_back(Held {
                    dst,
                    vc: v,
                    txn,
                    since: self.now,
                });
            }
        }
        self.pool.push(buf);
    }

    /// The target's reads: segments while the ports have room.
    pub(super) fn fill_reads(&mut self) {
        // Nothing can move while no port has room for read data.
        if self.read_jobs.is_empty() || !self.usable.iter().any(|&p| self.room(p, VC_READ)) {
            return;
        }
        let mut idle = 0;
        while idle < self.read_jobs.len() {
            let Some(mut job) = self.read_jobs.pop_front() else {
                break;
            };
            if !self.is_port_usable(job.port) {
                match self.choose(job.src, u64::from(job.tag), Some(job.port)) {
                    Some(p) => job.port = p,
                    None => {
                        idle += 1;
                        self.read_jobs.push_back(job);
                        continue;
                    }
                }
            }
            if !self.room(job.port, VC_READ) {
                idle += 1;
                self.read_jobs.push_back(job);
                continue;
            }
            idle = 0;
            let seg = self.cfg.segment;
            let len = seg.min(job.total - job.next);
            let mut data = core::mem::take(&mut self.seg);
            let Some(buf) = data.get_mut(..len as usize) else {
                self.seg = data;
                continue;
            };
            let addr = job.target.addr.saturating_add(u64::from(job.next));
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-17 A target MUST answer an RDMA_READ_RESP segment that would read a poisoned
            //# byte with the status POISONED and no data instead, and send no further segment of
            //# that read.
            let status = self.mem.load(job.target.space, job.target.key, addr, buf);
            let txn = match status {
                Ok(()) => TxnRepr::RdmaReadResp {
                    tag: job.tag,
                    status: Status::Ok,
                    offset: job.next,
                    total: job.total,
                    data: buf,
                },
                Err(s) => TxnRepr::RdmaReadResp {
                    tag: job.tag,
                    status: s,
                    offset: job.next,
                    total: job.total,
                    data: &[],
                },
            };
            let mut out = self.pool.pop().unwrap_or_default();
            out.clear();
            out.resize(txn.buffer_len(), 0);
            let w = txn.emit(&mut out).unwrap_or(0);
            out.truncate(w);
            self.seg = data;
            let bytes = out.len();
            self.enqueue(job.port, VC_READ, job.src, &out, None, false, bytes);
            self.pool.push(out);
            job.next += len;
            job.last = self.now;
            if status.is_ok() && job.next < job.total {
                self.read_jobs.push_back(job);
            } else {
                if status.is_err() {
                    self.counters.requests_refused = self.counters.requests_refused.wrapping_add(1);
                }
                self.release_fences();
            }
        }
    }
}
