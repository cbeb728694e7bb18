//! The load-store unit: loads, stores and atomics issued with a tag, ordered streams, fences,
//! BUSY retries with back-off, deadlines and completions (endpoint.md §5, §9; transaction.md).

use super::*;

impl Endpoint {
    // ----- commands --------------------------------------------------------------------------

    /// Issues a load-store operation and returns its tag.
    pub fn issue(&mut self, now: Instant, req: LsRequest) -> Result<u16, IssueError> {
        self.take_time(now);
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-3 An operation's parameters MUST be checked at issue: length 1..256 for loads and
        //# stores, operand size 4 or 8, a destination GPU id other than 0xFFFF, an address range
        //# that does not wrap. A bad operation MUST be refused at issue with an error naming the
        //# parameter.
        let len = match req.op {
            LsOp::Load { len } => {
                if !(1..=256).contains(&len) {
                    return Err(invalid("len", len.into(), "a load reads 1..=256 bytes"));
                }
                u64::from(len)
            }
            LsOp::Store { data } => data.as_slice().len() as u64,
            LsOp::Atomic { width, op } => {
                let max = if width.bytes() == 4 {
                    u64::from(u32::MAX)
                } else {
                    u64::MAX
                };
                let (a, b) = match op {
                    AtomicOp::FetchAdd { addend } => (addend, 0),
                    AtomicOp::Swap { value } => (value, 0),
                    AtomicOp::CompareSwap { compare, value } => (compare, value),
                };
                if a > max || b > max {
                    return Err(invalid(
                        "operand",
                        a.max(b),
                        "an operand does not fit the operand size",
                    ));
                }
                width.bytes() as u64
            }
            // A FENCE addresses no bytes.
            LsOp::Fence => 0,
        };
        if req.remote.gpu.value() == GpuId::RESERVED {
            return Err(invalid(
                "gpu",
                GpuId::RESERVED.into(),
                "GPU id 0xFFFF is reserved",
            ));
        }
        if req.remote.addr.checked_add(len).is_none() {
            return Err(invalid(
                "addr",
                req.remote.addr,
                "the address range wraps past 2^64",
            ));
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-10 While `lsu_tags + rdma_queue + max_fences` completions wait to be taken by the
        //# GPU, an endpoint MUST refuse every new operation (issue, post, fence) with an error
        //# that says so, and record nothing of it.
        if self.completions_full() {
            return Err(IssueError::TagsExhausted {
                outstanding: self.lsu_tags.held,
            });
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-2 When every tag is held, issue MUST be refused with an error that says so, and
        //# nothing of the operation MUST have been sent or recorded: the issuer waits for
        //# completions and tries again.
        let Some((tag, era)) = self.lsu_tags.alloc(self.now) else {
            return Err(IssueError::TagsExhausted {
                outstanding: self.lsu_tags.held,
            });
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.outstanding.insert(seq);
        if let Ordering::Stream(s) = req.ordering {
            self.streams.entry(s).or_insert((None, 0)).1 += 1;
        }
        let deadline = self.now.saturating_add(self.cfg.op_timeout);
        if let Some(slot) = self.lsu.get_mut(usize::from(tag)) {
            *slot = Some(Box::new(LsSlot {
                era,
                req,
                kind: OpKind::of(&req.op),
                issued: self.now,
                deadline,
                seq,
                port: None,
                waiting: false,
                sent: false,
                retries: 0,
                tainted: false,
                episode: 0,
                retry_at: None,
                delayed: false,
            }));
        }
        self.ls_deadlines.push_back((deadline, tag, era));
        self.send_ls(tag, None);
        self.fill();
        Ok(tag)
    }

    /// Issues a fence and returns its id; its completion comes once every operation issued
    /// before it is complete (EP-5-6). A fence beyond `max_fences` outstanding, or while the
    /// completions not yet taken fill their bound, is refused and nothing is recorded.
    pub fn fence(&mut self, now: Instant) -> Result<u64, FenceError> {
        self.take_time(now);
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-9 While `max_fences` fences are outstanding, a fence MUST be refused with an error
        //# that says so, and nothing of it recorded: the GPU takes completions and tries again.
        if self.fences.len() >= self.cfg.max_fences as usize {
            return Err(FenceError::TooMany {
                outstanding: u32::try_from(self.fences.len()).unwrap_or(u32::MAX),
            });
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-10 While `lsu_tags + rdma_queue + max_fences` completions wait to be taken by the
        //# GPU, an endpoint MUST refuse every new operation (issue, post, fence)
        if self.completions_full() {
            return Err(FenceError::CompletionsWaiting {
                waiting: u32::try_from(self.completions.len()).unwrap_or(u32::MAX),
            });
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.fences.push_back((seq, seq, self.now));
        self.check_fences();
        Ok(seq)
    }

    /// A response arrived for this GPU as a requester.
    pub(super) fn on_response(&mut self, src: GpuId, txn: &TxnRepr<'_>) {
        //= docs/spec/endpoint.md#10-counters
        //# EP-10-2 A response with an opcode wire.md does not define MUST be discarded and counted
        //# in `unknown_responses`; a response with a defined opcode that breaks its encoding
        //# rules MUST be discarded and counted in `bad_responses`.
        if matches!(txn, TxnRepr::Unknown { .. }) {
            self.counters.unknown_responses = self.counters.unknown_responses.wrapping_add(1);
            return;
        }
        let tag = txn.tag();
        if tag >= self.cfg.lsu_tags {
            self.on_rdma_response(src, tag, txn);
            return;
        }
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
            //# EP-9-4 A response that arrives for an operation already completed MUST be
            //# discarded and counted, never reported.
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-4 A response MUST complete the operation holding its tag only if it comes from
        //# that operation's target GPU, its opcode answers the operation's request and its length
        //# is the one the request asks for (a LOAD_RESP of the load's length, an atomic response
        //# of the operand size); any other response, and any response whose tag no operation
        //# holds, MUST be discarded and counted.
        if slot.req.remote.gpu != src {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        }
        let done = match (*txn, slot.req.op) {
            (TxnRepr::LoadResp { status, data, .. }, LsOp::Load { len }) => {
                if status.is_ok() {
                    if data.len() != usize::from(len) {
                        None
                    } else {
                        Bytes::new(data).map(|b| (CompletionStatus::Ok, CompletionData::Load(b)))
                    }
                } else {
                    Some((CompletionStatus::from_wire(status), CompletionData::None))
                }
            }
            (TxnRepr::StoreResp { status, .. }, LsOp::Store { .. })
            | (TxnRepr::FenceResp { status, .. }, LsOp::Fence) => {
                Some((CompletionStatus::from_wire(status), CompletionData::None))
            }
            (
                TxnRepr::AtomicResp {
                    kind, status, old, ..
                },
                LsOp::Atomic { width, op },
            ) => {
                let kind_ok = matches!(
                    (kind, op),
                    (AtomicKind::FetchAdd, AtomicOp::FetchAdd { .. })
                        | (AtomicKind::Swap, AtomicOp::Swap { .. })
                        | (AtomicKind::CompareSwap, AtomicOp::CompareSwap { .. })
                );
                match (kind_ok, status.is_ok(), old) {
                    (false, _, _) => None,
                    (true, true, Some(v)) if v.width() == width => {
                        Some((CompletionStatus::Ok, CompletionData::Atomic(v)))
                    }
                    (true, true, _) => None,
                    (true, false, _) => {
                        Some((CompletionStatus::from_wire(status), CompletionData::None))
                    }
                }
            }
            _ => None,
        };
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //# EP-9-8 An operation answered BUSY with no retry left MUST complete with BUSY.
        match done {
            Some((CompletionStatus::Remote(Status::Busy), _))
                if slot.retries < self.cfg.max_retries && slot.retry_at.is_none() =>
            {
                self.busy_retry_ls(tag);
            }
            Some((status, data)) => self.complete_ls(tag, status, data),
            None => {
                self.counters.responses_discarded =
                    self.counters.responses_discarded.wrapping_add(1)
            }
        }
    }

    /// Load-store operation `tag` was answered BUSY and has a retry left: it goes again after
    /// the back-off (EP-9-5).
    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-8 An operation answered BUSY was not performed, whatever its kind (atomics
    //# included): its requester MAY send it again
    fn busy_retry_ls(&mut self, tag: u16) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again (whole, an
        //# RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its n-th retry, and the
        //# retry counts against `max_retries`.
        slot.retries += 1;
        slot.tainted = true;
        let n = slot.retries;
        let era = slot.era;
        let at = now.saturating_add(self.backoff(n));
        if let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) {
            slot.retry_at = Some(at);
        }
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
        self.timers.push(Reverse((at, Key::LsRetry(tag, era))));
    }

    // ----- completion ------------------------------------------------------------------------

    //= docs/spec/wire.md#69-responses
    //# WIRE-6.9-2 A requester that receives an unknown status MUST complete the operation with an
    //# error that reports the raw status value.
    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-2 A completion with a target status MUST carry the status the target sent; an
    //# unknown value MUST be reported with its raw value (WIRE-6.9-2).
    pub(super) fn complete_ls(&mut self, tag: u16, status: CompletionStatus, data: CompletionData) {
        let Some(slot) = self.lsu.get_mut(usize::from(tag)).and_then(Option::take) else {
            return;
        };
        if slot.delayed
            && let Ordering::Stream(s) = slot.req.ordering
        {
            self.stream_undelay(s);
        }
        // A request without its final response may still be answered late: its tag rests.
        let unanswered = matches!(
            status,
            CompletionStatus::Timeout | CompletionStatus::FateUnknown
        );
        self.lsu_tags.release(
            tag,
            slot.tainted || (unanswered && slot.sent),
            self.now,
            self.cfg.tag_quarantine,
        );
        self.trim_ls_deadlines();
        if let Ordering::Stream(s) = slot.req.ordering
            && let Some(e) = self.streams.get_mut(&s)
        {
            e.1 = e.1.saturating_sub(1);
            if e.1 == 0 {
                self.streams.remove(&s);
            }
        }
        if status.is_ok() {
            match slot.req.op {
                LsOp::Load { len } => {
                    self.counters.ls_bytes_read =
                        self.counters.ls_bytes_read.wrapping_add(u64::from(len))
                }
                LsOp::Store { data } => {
                    self.counters.ls_bytes_written = self
                        .counters
                        .ls_bytes_written
                        .wrapping_add(data.as_slice().len() as u64);
                }
                LsOp::Atomic { .. } | LsOp::Fence => {}
            }
        }
        self.finish(
            slot.seq,
            Completion {
                id: OpId::Ls(tag),
                kind: slot.kind,
                status,
                //= docs/spec/transaction.md#3-statuses
                //# TXN-3-3 A completion that is not OK MUST carry no data.
                data: if status.is_ok() {
                    data
                } else {
                    CompletionData::None
                },
                issued: slot.issued,
                completed: self.now,
                retries: slot.retries,
                gpu: slot.req.remote.gpu,
            },
        );
    }

    //= docs/spec/transaction.md#3-statuses
    //# TXN-3-1 Every operation a requester accepts MUST end with exactly one completion carrying
    //# one status of the table. An operation MUST NOT end silently, MUST NOT be completed twice,
    //# and MUST NOT be completed OK unless the target answered OK for all of it.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-7 Completions MAY be reported in any order; an operation's completion carries its tag
    //# (load-store) or its descriptor id (RDMA) to match it.
    pub(super) fn finish(&mut self, seq: u64, c: Completion) {
        self.counters.count(c.kind, c.status);
        self.outstanding.remove(&seq);
        self.completions.push_back(c);
        self.check_fences();
    }

    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-3 Nothing is promised between operations on different paths: they MAY be performed
    //# in either order. A requester that needs an order across paths MUST wait for the first
    //# operation's completion, or use a fence.
    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-5 A Fence operation MUST complete only after every operation the requester issued before it,
    //# on every path, is complete.
    fn check_fences(&mut self) {
        while let Some(&(id, seq, issued)) = self.fences.front() {
            //= docs/spec/endpoint.md#5-load-store-unit
            //# EP-5-6 A fence MUST complete once every operation issued before it (load-store and
            //# RDMA) is complete (TXN-4-5). It sends no request and holds no tag.
            if self.outstanding.first().is_some_and(|&o| o < seq) {
                break;
            }
            self.fences.pop_front();
            self.counters.count(OpKind::Fence, CompletionStatus::Ok);
            self.completions.push_back(Completion {
                id: OpId::Fence(id),
                kind: OpKind::Fence,
                status: CompletionStatus::Ok,
                data: CompletionData::None,
                issued,
                completed: self.now,
                retries: 0,
                gpu: self.cfg.gpu,
            });
        }
    }

    /// The deadline of load-store operation `tag` (holder `era`) fell.
    pub(super) fn ls_deadline(&mut self, tag: u16, era: u32) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.era != era {
            return;
        }
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-8 (§9) A request waiting behind an earlier request of its ordered stream that is
        //# held for frame_lifetime (EP-9-6) is waiting to be sent: its deadline MUST NOT run while
        //# it waits, and it MUST get a new deadline op_timeout after it is sent.
        if slot.deadline > now || slot.retry_at.is_some() {
            // A later deadline of this operation is queued, or it is held back and gets a new
            // deadline when it is sent again.
            return;
        }
        //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
        //# TXN-5-4 When the deadline passes a repeatable operation MUST be retried whole
        //# on a usable path, if it has retries left; otherwise it MUST complete with
        //# TIMEOUT (or NO_PATH, TXN-3-6).
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //# EP-13-6 (§9, TXN-3-6) An operation none of whose requests was ever sent MUST complete
        //# NO_PATH when its deadline passes; one that was sent at least once and has no usable
        //# port
        if !slot.sent {
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-6 A requester MUST complete with NO_PATH an operation none of whose
            //# requests could be sent before its deadline because no usable path to the
            //# target existed.
            self.complete_ls(tag, CompletionStatus::NoPath, CompletionData::None);
            return;
        }
        if !slot.kind.repeatable() || slot.retries >= self.cfg.max_retries {
            //= docs/spec/transaction.md#3-statuses
            //# TXN-3-7 A requester MUST complete with TIMEOUT an operation that has no
            //# final response when its deadline passes and has no retry left, or that is
            //# not repeatable.
            self.complete_ls(tag, CompletionStatus::Timeout, CompletionData::None);
            return;
        }
        slot.retries += 1;
        slot.tainted = true;
        slot.deadline = now.saturating_add(self.cfg.op_timeout);
        let d = slot.deadline;
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.ls_deadlines.push_back((d, tag, era));
        // Another port: the path may have lost frames beyond the first hop. An ordered stream
        // is pinned anew with it (TXN-5-6).
        let avoid = slot.port;
        if !slot.waiting {
            self.send_ls(tag, avoid);
        }
    }

    /// Drops the deadlines of completed operations from the front of the queue.
    pub(super) fn trim_ls_deadlines(&mut self) {
        while let Some(&(_, tag, era)) = self.ls_deadlines.front() {
            let live = self
                .lsu
                .get(usize::from(tag))
                .and_then(Option::as_ref)
                .is_some_and(|s| s.era == era);
            if live {
                break;
            }
            self.ls_deadlines.pop_front();
        }
    }

    pub(super) fn release_fences(&mut self) {
        let mut i = 0;
        while i < self.fence_waits.len() {
            let Some(&(src, port, tag, bound)) = self.fence_waits.get(i) else {
                break;
            };
            let pending = self.read_jobs.iter().any(|j| j.src == src && j.id < bound);
            if pending {
                i += 1;
                continue;
            }
            self.fence_waits.swap_remove(i);
            // Owed no longer: queued now (EP-8-4).
            self.backlog = self.backlog.saturating_sub(FENCE_RESP_LEN);
            let r = TxnRepr::FenceResp {
                tag,
                status: Status::Ok,
            };
            self.respond(port, src, VC_RESP, &r, true);
        }
    }

    /// Sends load-store operation `tag`, unless requests of its ordered stream are held back
    /// for a retry: then it queues behind them (TXN-5-6).
    pub(super) fn send_ls(&mut self, tag: u16, avoid: Option<usize>) {
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            return;
        };
        if let Ordering::Stream(s) = slot.req.ordering
            && self.stream_delayed.get(&s).is_some_and(|&n| n > 0)
        {
            let at = self.ls_delayed.back().map_or(self.now, |e| e.0);
            self.delay_ls(tag, at, avoid);
            return;
        }
        self.send_ls_now(tag, avoid);
    }

    /// Holds load-store operation `tag` back until `at` at least, in the queue of delayed
    /// retries, which keeps the order they must go in.
    pub(super) fn delay_ls(&mut self, tag: u16, at: Instant, avoid: Option<usize>) {
        let at = at
            .max(self.now)
            .max(self.ls_delayed.back().map_or(at, |e| e.0));
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.delayed {
            return;
        }
        slot.delayed = true;
        slot.waiting = false;
        slot.retry_at = Some(at);
        let era = slot.era;
        if let Ordering::Stream(s) = slot.req.ordering {
            *self.stream_delayed.entry(s).or_insert(0) += 1;
        }
        self.ls_delayed.push_back((at, tag, era, avoid));
    }

    /// A load-store operation held in the queue of delayed retries is sent now.
    pub(super) fn release_delayed(&mut self, tag: u16, era: u32, avoid: Option<usize>) {
        let now = self.now;
        let Some(Some(slot)) = self.lsu.get_mut(usize::from(tag)) else {
            return;
        };
        if slot.era != era || !slot.delayed {
            return;
        }
        slot.delayed = false;
        slot.retry_at = None;
        slot.deadline = now.saturating_add(self.cfg.op_timeout);
        let d = slot.deadline;
        let ordering = slot.req.ordering;
        self.ls_deadlines.push_back((d, tag, era));
        if let Ordering::Stream(s) = ordering {
            self.stream_undelay(s);
        }
        self.send_ls_now(tag, avoid);
    }

    fn stream_undelay(&mut self, s: u32) {
        if let Some(n) = self.stream_delayed.get_mut(&s) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.stream_delayed.remove(&s);
            }
        }
    }

    /// The wait before retry number `n` (1 for the first) of an operation answered BUSY:
    /// `busy_backoff * 2^(n-1)` (EP-9-5).
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //# EP-13-5 (§9) The `n` of EP-9-5's back-off `busy_backoff * 2^(n-1)` MUST be the number of
    //# retries of the operation so far, this one included, whatever their causes: retries of every
    //# cause share one budget and one count.
    pub(super) fn backoff(&self, n: u8) -> Duration {
        let k = u32::from(n.saturating_sub(1)).min(31);
        self.cfg.busy_backoff.saturating_mul(1u32 << k)
    }

    /// Routes and sends (or parks) load-store operation `tag`.
    fn send_ls_now(&mut self, tag: u16, avoid: Option<usize>) {
        let Some(Some(slot)) = self.lsu.get(usize::from(tag)) else {
            return;
        };
        let (req, era, old) = (slot.req, slot.era, slot.port);
        let port = match req.ordering {
            Ordering::Stream(s) => {
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //# TXN-5-6 A request of an ordered stream that is sent again (TXN-5-2, TXN-5-3,
                //# TXN-5-4) MUST be sent on the stream's current path before every request of the
                //# stream issued after it is sent again; a stream whose request passed its
                //# deadline is pinned anew to another usable port
                //= docs/spec/endpoint.md#4-paths-and-load-balancing
                //# EP-4-1 All requests of an ordered stream that are outstanding at once MUST use
                //# one path: the stream is pinned to a port when it has no outstanding operation
                //# and a request is issued, and stays pinned until it has none again, its port
                //# stops being usable, or one of its requests passes its deadline (TXN-5-6).
                let pinned = self.streams.get(&s).and_then(|e| e.0);
                match pinned.filter(|&p| self.is_port_usable(p) && Some(p) != avoid) {
                    Some(p) => Some(p),
                    None => {
                        //= docs/spec/endpoint.md#4-paths-and-load-balancing
                        //# EP-4-3 When a port stops being usable, every stream pinned to it MUST
                        //# be pinned anew, and the requests it still holds MUST be moved as §9
                        //# says.
                        let p = self.choose(req.remote.gpu, u64::from(s), avoid.or(old));
                        if let Some(e) = self.streams.get_mut(&s) {
                            e.0 = p;
                        }
                        p
                    }
                }
            }
            //= docs/spec/endpoint.md#4-paths-and-load-balancing
            //# EP-4-6 An endpoint MAY let its GPU name the port of a load-store operation (a
            //# test or a program that places its own paths); such an operation MUST go on that
            //# port while it is usable and is not the port a retry must avoid (EP-9-2), and
            //# otherwise on a port chosen as for an unordered operation.
            Ordering::Port(p) => match usize::from(p) {
                p if self.is_port_usable(p) && Some(p) != avoid => Some(p),
                _ => self.choose(req.remote.gpu, u64::from(tag), avoid),
            },
            Ordering::Unordered => self.choose(req.remote.gpu, u64::from(tag), avoid),
        };
        let Some(slot) = self.lsu.get_mut(usize::from(tag)).and_then(Option::as_mut) else {
            return;
        };
        let Some(port) = port else {
            if !slot.waiting {
                slot.waiting = true;
                self.waiting.push_back((tag, era));
            }
            return;
        };
        slot.waiting = false;
        slot.port = Some(port);
        slot.sent = true;
        let target = target_of(&req);
        let txn = match req.op {
            LsOp::Load { len } => TxnRepr::Load { tag, target, len },
            LsOp::Store { ref data } => TxnRepr::Store {
                tag,
                target,
                data: data.as_slice(),
            },
            LsOp::Atomic { width, op } => TxnRepr::Atomic {
                tag,
                target,
                width,
                op,
            },
            LsOp::Fence => TxnRepr::Fence { tag },
        };
        let mut buf = [0u8; 300];
        let n = txn.emit(&mut buf).unwrap_or(0);
        if let Some(bytes) = buf.get(..n) {
            self.enqueue(
                port,
                VC_LS,
                req.remote.gpu,
                bytes,
                Some((tag, era)),
                true,
                0,
            );
        }
    }
}
