//! The RDMA engine: posted descriptors, writes cut into segments and sent as ports have room,
//! reads asked for in chunks within their window, their completions, retries and deadlines
//! (endpoint.md §6).

use super::*;

impl Endpoint {
    /// Posts an RDMA descriptor and returns its id.
    pub fn post(&mut self, now: Instant, desc: RdmaDesc) -> Result<u64, PostError> {
        self.take_time(now);
        let bad = |field, value, rule| Err(PostError::Invalid { field, value, rule });
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-1 A descriptor MUST be refused at post, with an error naming the field, if its
        //# length is 0 or above 2^32-1, if its local range is not inside the local space, if its
        //# destination GPU id is 0xFFFF, or if `rdma_queue` descriptors are outstanding.
        if desc.len == 0 || desc.len > MAX_RDMA_LEN {
            return bad("len", desc.len, "an RDMA length is 1..=2^32-1 bytes");
        }
        //= docs/spec/transaction.md#2-operations
        //# TXN-2-6 An RDMA operation's local side (where a write's data comes from, where a read's
        //# data goes to) MAY be either local memory space, global or shared; its remote side MAY
        //# be either space of the target (the SHARED flag, wire.md §6.2).
        let size = self.mem.size(desc.local_space);
        if desc
            .local_addr
            .checked_add(desc.len)
            .is_none_or(|end| end > size)
        {
            return bad(
                "local_addr",
                desc.local_addr,
                "the local range runs past the end of the local space",
            );
        }
        if desc.remote.addr.checked_add(desc.len).is_none() {
            return bad(
                "remote.addr",
                desc.remote.addr,
                "the remote range wraps past 2^64",
            );
        }
        if desc.remote.gpu.value() == GpuId::RESERVED {
            return bad("gpu", GpuId::RESERVED.into(), "GPU id 0xFFFF is reserved");
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-10 While `lsu_tags + rdma_queue + max_fences` completions wait to be taken by the
        //# GPU, an endpoint MUST refuse every new operation (issue, post, fence)
        let posted = self.rdma_outstanding();
        if posted >= self.cfg.rdma_queue as usize || self.completions_full() {
            return Err(PostError::QueueFull {
                outstanding: u32::try_from(posted).unwrap_or(u32::MAX),
            });
        }
        let id = self.next_rdma;
        self.next_rdma += 1;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.outstanding.insert(seq);
        let chunk = u64::from(self.cfg.write_chunk);
        if desc.dir == RdmaDir::Write && desc.len > chunk {
            //= docs/spec/endpoint.md#6-rdma-engine
            //# EP-6-2 An RDMA write of length L MUST be sent as RDMA_WRITE segments with one tag,
            //# each covering offset .. offset + dlen of the write with offset a multiple of segment
            //# and dlen = min(segment, L - offset), together covering the write exactly once per
            //# attempt. An RDMA write longer than write_chunk MUST be sent as writes of write_chunk
            //# bytes (the last shorter), each at its own offset of the local and remote ranges,
            //# with a tag and a completion of its own, one after another (no segment of a chunk
            //# before every segment of the chunk before it has been sent once), and complete once
            //# every one of them has: OK when all were, otherwise with the first status of one that
            //# was not (the chunks not yet started are then not sent). (1.3: 1.2 sent a write of up
            //# to 4 GiB under one tag, so a target's reassembly record needed a block map of up to
            //# 2^24 bits, and a variable-size allocator for them.)
            self.write_parents.insert(
                id,
                WriteParent {
                    desc,
                    issued: self.now,
                    seq,
                    chunks: desc.len.div_ceil(chunk),
                    started: 0,
                    last: 0,
                    left: 0,
                    error: None,
                    retries: 0,
                },
            );
            self.start_next_chunk(id);
            self.fill();
            return Ok(id);
        }
        self.start_rdma(id, desc, seq, None);
        self.fill();
        Ok(id)
    }

    /// Starts the next chunk of write `pid` (EP-6-2), if it has one left and none has failed.
    fn start_next_chunk(&mut self, pid: u64) {
        let chunk = u64::from(self.cfg.write_chunk);
        let cid = self.next_rdma;
        let Some(p) = self.write_parents.get_mut(&pid) else {
            return;
        };
        if p.error.is_some() || p.started >= p.chunks {
            return;
        }
        let off = p.started * chunk;
        let part = RdmaDesc {
            local_addr: p.desc.local_addr + off,
            remote: crate::Remote {
                addr: p.desc.remote.addr + off,
                ..p.desc.remote
            },
            len: chunk.min(p.desc.len - off),
            ..p.desc
        };
        p.started += 1;
        p.left += 1;
        p.last = cid;
        let seq = p.seq;
        self.next_rdma += 1;
        self.start_rdma(cid, part, seq, Some(pid));
        self.rdma_chunks += 1;
    }

    /// Write chunk `id` has sent every segment: the next chunk of its write may start.
    fn chunk_sent(&mut self, id: u64) -> bool {
        let Some(op) = self.rdma.get(&id) else {
            return false;
        };
        let sent_all = matches!(
            &op.state,
            RdmaState::Write { next, resend, .. } if resend.is_empty() && *next >= op.desc.len
        );
        let Some(pid) = op.parent.filter(|_| sent_all && op.hold_until.is_none()) else {
            return false;
        };
        if self.write_parents.get(&pid).is_none_or(|p| p.last != id) {
            return false;
        }
        self.start_next_chunk(pid);
        true
    }

    /// Records RDMA operation `id` (a descriptor, or a chunk of descriptor `parent`) and puts it
    /// in the queue for tags.
    fn start_rdma(&mut self, id: u64, desc: RdmaDesc, seq: u64, parent: Option<u64>) {
        let deadline = self.now.saturating_add(self.cfg.op_timeout);
        let state = match desc.dir {
            RdmaDir::Write => {
                // A write needs its one tag before any segment goes (EP-6-2); without one it
                // waits in the queue of reads and writes for tags.
                RdmaState::Write {
                    has_tag: false,
                    tag: 0,
                    era: 0,
                    next: 0,
                    resend: VecDeque::new(),
                    port: None,
                }
            }
            RdmaDir::Read => RdmaState::Read {
                chunks: desc.len.div_ceil(u64::from(self.cfg.read_chunk)),
                next_chunk: 0,
                active: BTreeMap::new(),
                done_chunks: 0,
                error: None,
                port: None,
            },
        };
        self.rdma.insert(
            id,
            RdmaOp {
                desc,
                issued: self.now,
                deadline,
                seq,
                retries: 0,
                tainted: false,
                episode: 0,
                sent: false,
                hold_until: None,
                state,
                parent,
            },
        );
        self.timers.push(Reverse((deadline, Key::Rdma(id))));
        self.reads_waiting.push_back(id);
    }

    pub(super) fn on_rdma_response(&mut self, src: GpuId, tag: u16, txn: &TxnRepr<'_>) {
        let owner = self
            .rdma_owner
            .get(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
            .copied()
            .flatten();
        let Some((id, chunk)) = owner else {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        let Some(op) = self.rdma.get_mut(&id) else {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        };
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-4 A response MUST complete the operation holding its tag only if it comes from
        //# that operation's target GPU
        if op.desc.remote.gpu != src {
            self.counters.responses_discarded = self.counters.responses_discarded.wrapping_add(1);
            return;
        }
        match (&mut op.state, *txn) {
            (RdmaState::Write { .. }, TxnRepr::RdmaCompletion { status, total, .. }) => {
                //= docs/spec/endpoint.md#6-rdma-engine
                //# EP-6-11 The requester MUST complete an RDMA write when its RDMA_COMPLETION
                //# arrives with the status it carries, or as §9 says.
                if status.is_ok() && u64::from(total) != op.desc.len {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                }
                if status == Status::Busy && op.retries < self.cfg.max_retries {
                    self.busy_retry_write(id);
                    return;
                }
                self.complete_rdma(id, CompletionStatus::from_wire(status));
            }
            (
                RdmaState::Read {
                    active,
                    done_chunks,
                    error,
                    chunks,
                    ..
                },
                TxnRepr::RdmaReadResp {
                    status,
                    offset,
                    total,
                    data,
                    ..
                },
            ) => {
                let Some(c) = active.get_mut(&chunk) else {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                };
                if c.done {
                    self.counters.responses_discarded =
                        self.counters.responses_discarded.wrapping_add(1);
                    return;
                }
                op.deadline = self.now.saturating_add(self.cfg.op_timeout);
                if status == Status::Busy && op.retries < self.cfg.max_retries {
                    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
                    //# EP-9-5 An operation answered BUSY that has a retry left MUST be sent again
                    //# (whole, an RDMA read chunk by chunk) after `busy_backoff * 2^(n-1)` for its
                    //# n-th retry
                    op.retries += 1;
                    op.tainted = true;
                    c.tainted = true;
                    let k = u32::from(op.retries.saturating_sub(1)).min(31);
                    let wait = self.cfg.busy_backoff.saturating_mul(1u32 << k);
                    c.not_before = self.now.saturating_add(wait);
                    op.deadline = c.not_before.saturating_add(self.cfg.op_timeout);
                    self.counters.retries = self.counters.retries.wrapping_add(1);
                    self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
                    self.send_read_chunk(id, chunk, None);
                    return;
                }
                if !status.is_ok() {
                    c.done = true;
                    *done_chunks += 1;
                    error.get_or_insert(status);
                    self.counters.reorder(-c.blocks.beyond());
                } else {
                    let dlen = u32::try_from(data.len()).unwrap_or(u32::MAX);
                    let end = offset.saturating_add(dlen);
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-10 The requester MUST place each RDMA_READ_RESP segment's bytes in
                    //# local memory at the descriptor's local address plus the chunk's offset
                    //# plus the segment's offset
                    if total != c.len
                        || end > c.len
                        || !offset.is_multiple_of(BLOCK)
                        || (!dlen.is_multiple_of(BLOCK) && end != c.len)
                    {
                        self.counters.bad_responses = self.counters.bad_responses.wrapping_add(1);
                        return;
                    }
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-18 A requester MUST ignore an RDMA_READ_RESP segment whose blocks have
                    //# all been placed already: it changes no byte of local memory.
                    let delta = match c.blocks.mark(offset, dlen) {
                        Marked::Outside => return,
                        Marked::Duplicate => {
                            self.counters.duplicate_segments =
                                self.counters.duplicate_segments.wrapping_add(1);
                            return;
                        }
                        Marked::New(delta) => delta,
                    };
                    let addr = op
                        .desc
                        .local_addr
                        .saturating_add(chunk.saturating_mul(u64::from(self.cfg.read_chunk)))
                        .saturating_add(u64::from(offset));
                    //= docs/spec/transaction.md#2-operations
                    //# TXN-2-5 An RDMA read MUST place at the requester exactly the bytes of the
                    //# target range, each at its offset from the start of the read, whatever order
                    //# the segments arrive in
                    let _ = self.mem.write_received(
                        op.desc.local_space,
                        addr,
                        data,
                        op.desc.local_addr,
                    );
                    self.counters.reorder(delta);
                    if c.blocks.complete() {
                        c.done = true;
                        *done_chunks += 1;
                    } else {
                        return;
                    }
                }
                // A chunk ended: free its tag.
                let (t, tainted) = (c.tag, c.tainted || !status.is_ok());
                self.counters.reassembly(-1);
                let finished = *done_chunks == *chunks
                    || (error.is_some() && { active.values().all(|c| c.done) });
                let status = error.map_or(CompletionStatus::Ok, CompletionStatus::from_wire);
                self.free_rdma_tag(t, tainted);
                if finished {
                    self.complete_rdma(id, status);
                }
            }
            _ => {
                self.counters.responses_discarded =
                    self.counters.responses_discarded.wrapping_add(1)
            }
        }
    }

    /// RDMA write `id` was answered BUSY and has a retry left: its tag rests, and after the
    /// back-off it takes a new tag and is sent whole (EP-9-5). A new tag keeps the BUSY answers
    /// to its other segments from being taken for answers to the retry.
    fn busy_retry_write(&mut self, id: u64) {
        let now = self.now;
        let timeout = self.cfg.op_timeout;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        op.retries += 1;
        op.tainted = true;
        let n = op.retries;
        let old = match &mut op.state {
            RdmaState::Write {
                has_tag,
                tag,
                next,
                resend,
                port,
                ..
            } => {
                let old = has_tag.then_some(*tag);
                *has_tag = false;
                *next = 0;
                resend.clear();
                *port = None;
                old
            }
            RdmaState::Read { .. } => None,
        };
        let at = now.saturating_add(self.backoff(n));
        if let Some(op) = self.rdma.get_mut(&id) {
            op.hold_until = Some(at);
            op.deadline = at.saturating_add(timeout);
        }
        //= docs/spec/endpoint.md#5-load-store-unit
        //# EP-5-8 [...] A tag an operation abandons before it completes (an RDMA write sent
        //# again after BUSY under a new tag, EP-9-5) MUST rest `tag_quarantine` from the moment
        //# it is abandoned.
        if let Some(t) = old {
            self.free_rdma_tag(t, true);
        }
        //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
        //# EP-9-9 An endpoint MUST build no further segment of an RDMA write attempt once a
        //# segment of it is answered BUSY: the segments already queued for a link MAY still go
        //# out.
        self.active_writes.remove(id);
        self.reads_waiting.retain(|&w| w != id);
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.counters.busy_retries = self.counters.busy_retries.wrapping_add(1);
        self.timers.push(Reverse((at, Key::RdmaResume(id))));
    }

    fn free_rdma_tag(&mut self, tag: u16, tainted: bool) {
        if let Some(o) = self
            .rdma_owner
            .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
        {
            *o = None;
        }
        self.rdma_tags
            .release(tag, tainted, self.now, self.cfg.tag_quarantine);
    }

    pub(super) fn complete_rdma(&mut self, id: u64, status: CompletionStatus) {
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-16 A posted descriptor MUST end with exactly one completion carrying its id.
        // Removed here, so never completed twice.
        let Some(op) = self.rdma.remove(&id) else {
            return;
        };
        match &op.state {
            RdmaState::Write { tag, has_tag, .. } => {
                // A write that never got its tag holds none.
                if *has_tag {
                    // Segments may still be on their way after an error: the tag rests.
                    self.free_rdma_tag(*tag, op.tainted || !status.is_ok());
                }
                if status.is_ok() {
                    self.counters.rdma_bytes_written =
                        self.counters.rdma_bytes_written.wrapping_add(op.desc.len);
                }
            }
            RdmaState::Read { active, .. } => {
                for c in active.values().filter(|c| !c.done) {
                    self.counters.reassembly(-1);
                    self.counters.reorder(-c.blocks.beyond());
                    let t = c.tag;
                    if let Some(o) = self
                        .rdma_owner
                        .get_mut(usize::from(t.wrapping_sub(self.cfg.lsu_tags)))
                    {
                        *o = None;
                    }
                    self.rdma_tags.release(
                        t,
                        c.tainted || !status.is_ok(),
                        self.now,
                        self.cfg.tag_quarantine,
                    );
                }
                if status.is_ok() {
                    self.counters.rdma_bytes_read =
                        self.counters.rdma_bytes_read.wrapping_add(op.desc.len);
                }
            }
        }
        self.active_writes.remove(id);
        self.reads_waiting.retain(|&w| w != id);
        if let Some(pid) = op.parent {
            self.rdma_chunks = self.rdma_chunks.saturating_sub(1);
            let Some(p) = self.write_parents.get_mut(&pid) else {
                return;
            };
            p.left = p.left.saturating_sub(1);
            p.retries = p.retries.max(op.retries);
            if !status.is_ok() && p.error.is_none() {
                p.error = Some(status);
            }
            if p.last == id {
                // Complete before its successor started (a chunk that was never sent whole):
                // the next goes now.
                self.start_next_chunk(pid);
            }
            let Some(p) = self.write_parents.get(&pid) else {
                return;
            };
            if p.left > 0 || (p.error.is_none() && p.started < p.chunks) {
                return;
            }
            let Some(p) = self.write_parents.remove(&pid) else {
                return;
            };
            self.finish(
                p.seq,
                Completion {
                    id: OpId::Rdma(pid),
                    kind: OpKind::RdmaWrite,
                    status: p.error.unwrap_or(CompletionStatus::Ok),
                    data: CompletionData::None,
                    issued: p.issued,
                    completed: self.now,
                    retries: p.retries,
                    gpu: p.desc.remote.gpu,
                },
            );
            return;
        }
        let kind = match op.desc.dir {
            RdmaDir::Write => OpKind::RdmaWrite,
            RdmaDir::Read => OpKind::RdmaRead,
        };
        self.finish(
            op.seq,
            Completion {
                id: OpId::Rdma(id),
                kind,
                status,
                data: CompletionData::None,
                issued: op.issued,
                completed: self.now,
                retries: op.retries,
                gpu: op.desc.remote.gpu,
            },
        );
    }

    pub(super) fn rdma_deadline(&mut self, id: u64) {
        let now = self.now;
        let max = self.cfg.max_retries;
        let timeout = self.cfg.op_timeout;
        let Some(op) = self.rdma.get_mut(&id) else {
            return;
        };
        let started = match &op.state {
            RdmaState::Write { has_tag, .. } => *has_tag,
            // A read with no chunk in flight is waiting for tags, like a write without its tag.
            RdmaState::Read { active, .. } => active.values().any(|c| !c.done),
        };
        if !started {
            // Still waiting for a tag: the deadline runs from the start (TXN-5-4 counts from
            // issue into the network, and tags are the GPU's own backpressure).
            op.deadline = now.saturating_add(timeout);
            self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
            return;
        }
        if op.deadline > now {
            self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
            return;
        }
        if !op.sent {
            self.complete_rdma(id, CompletionStatus::NoPath);
            return;
        }
        //= docs/spec/transaction.md#3-statuses
        //# TXN-3-7 A requester MUST complete with TIMEOUT an operation that has no
        //# final response when its deadline passes and has no retry left, or that is
        //# not repeatable.
        if op.retries >= max || matches!(op.state, RdmaState::Write { .. }) {
            self.complete_rdma(id, CompletionStatus::Timeout);
            return;
        }
        //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
        //# EP-9-3 An operation's deadline MUST be checked by the endpoint's timer; an operation
        //# whose deadline passes MUST be retried or completed as TXN-5-4 says: an RDMA read
        //# retries its unfinished chunks; an RDMA write is not retried (TXN-5-1).
        op.retries += 1;
        op.tainted = true;
        op.deadline = now.saturating_add(timeout);
        self.counters.retries = self.counters.retries.wrapping_add(1);
        self.timers.push(Reverse((op.deadline, Key::Rdma(id))));
        match &mut op.state {
            // A write whose deadline passed has completed TIMEOUT above.
            RdmaState::Write { .. } => {}
            RdmaState::Read { active, port, .. } => {
                *port = None;
                let chunks: Vec<u64> = active
                    .iter_mut()
                    .filter(|(_, c)| !c.done)
                    .map(|(k, c)| {
                        c.tainted = true;
                        *k
                    })
                    .collect();
                for c in chunks {
                    self.send_read_chunk(id, c, None);
                }
            }
        }
    }

    pub(super) fn send_read_chunk(&mut self, id: u64, chunk: u64, avoid: Option<usize>) {
        let policy_port;
        let (target, len, tag, era, dst) = {
            let Some(op) = self.rdma.get(&id) else { return };
            let RdmaState::Read { active, port, .. } = &op.state else {
                return;
            };
            let Some(c) = active.get(&chunk) else { return };
            if c.not_before > self.now {
                // Held back (EP-9-5, EP-9-6): sent from the queue of unsent chunks when due.
                let t = c.not_before;
                if !self.chunks_unsent.contains(&(id, chunk)) {
                    self.chunks_unsent.push_back((id, chunk));
                    self.timers.push(Reverse((t, Key::Wake)));
                }
                return;
            }
            policy_port = *port;
            let off = chunk.saturating_mul(u64::from(self.cfg.read_chunk));
            (
                MemTarget {
                    space: op.desc.remote.space,
                    key: op.desc.remote.key,
                    addr: op.desc.remote.addr.saturating_add(off),
                },
                c.len,
                c.tag,
                c.era,
                op.desc.remote.gpu,
            )
        };
        let port = match policy_port.filter(|&p| self.is_port_usable(p) && Some(p) != avoid) {
            Some(p) if self.cfg.policy != crate::Policy::Spray => Some(p),
            _ => self.choose(dst, u64::from(tag), avoid),
        };
        let Some(port) = port else {
            // No usable port now: sent when one is.
            if !self.chunks_unsent.contains(&(id, chunk)) {
                self.chunks_unsent.push_back((id, chunk));
            }
            return;
        };
        if let Some(op) = self.rdma.get_mut(&id) {
            op.sent = true;
            if let RdmaState::Read { port: p, .. } = &mut op.state {
                *p = Some(port);
            }
        }
        let txn = TxnRepr::RdmaRead {
            tag,
            target,
            total: len,
        };
        let mut buf = [0u8; 32];
        let n = txn.emit(&mut buf).unwrap_or(0);
        if let Some(bytes) = buf.get(..n) {
            self.enqueue(port, VC_RDMA, dst, bytes, Some((tag, era)), false, 0);
        }
    }

    /// Issues RDMA read chunks and write tags while tags last, and write segments while ports
    /// have room.
    pub(super) fn fill_rdma(&mut self) {
        // A write chunk that sent its last segment starts the next, which needs a tag and a
        // turn: again, while that happens.
        while self.fill_rdma_once() {}
    }

    /// One round of [`Endpoint::fill_rdma`]; true when a write chunk started another.
    fn fill_rdma_once(&mut self) -> bool {
        let mut more = false;
        // Tags for waiting descriptors, in post order.
        let n = self.reads_waiting.len();
        for _ in 0..n {
            let Some(id) = self.reads_waiting.pop_front() else {
                break;
            };
            let mut keep = false;
            let mut window_full = false;
            let chunk_size = u64::from(self.cfg.read_chunk);
            let len = self.rdma.get(&id).map_or(0, |o| o.desc.len);
            let dir = self.rdma.get(&id).map(|o| o.desc.dir);
            match dir {
                Some(RdmaDir::Write) => match self.rdma_tags.alloc(self.now) {
                    Some((tag, era)) => {
                        if let Some(o) = self
                            .rdma_owner
                            .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
                        {
                            *o = Some((id, u64::MAX));
                        }
                        if let Some(RdmaState::Write {
                            has_tag,
                            tag: t,
                            era: g,
                            ..
                        }) = self.rdma.get_mut(&id).map(|o| &mut o.state)
                        {
                            *has_tag = true;
                            *t = tag;
                            *g = era;
                        }
                        self.active_writes.push_back(id);
                    }
                    None => keep = true,
                },
                Some(RdmaDir::Read) => loop {
                    let window = self.cfg.read_window as usize;
                    let next = match self.rdma.get(&id).map(|o| &o.state) {
                        Some(RdmaState::Read {
                            next_chunk,
                            chunks,
                            error: None,
                            active,
                            ..
                        }) if next_chunk < chunks => {
                            if active.values().filter(|c| !c.done).count() >= window {
                                // The window is full: the read waits for its own chunks.
                                window_full = true;
                                break;
                            }
                            *next_chunk
                        }
                        _ => break,
                    };
                    //= docs/spec/endpoint.md#6-rdma-engine
                    //# EP-6-7 An RDMA read of length L MUST be asked for in chunks of
                    //# `read_chunk` bytes (the last shorter), one RDMA_READ with its own tag per
                    //# chunk; at most `read_window` chunks of one read and `rdma_tags` chunks of
                    //# all reads are outstanding at once, and further chunks wait.
                    let Some((tag, era)) = self.rdma_tags.alloc(self.now) else {
                        keep = true;
                        break;
                    };
                    if let Some(o) = self
                        .rdma_owner
                        .get_mut(usize::from(tag.wrapping_sub(self.cfg.lsu_tags)))
                    {
                        *o = Some((id, next));
                    }
                    let clen = chunk_size.min(len.saturating_sub(next * chunk_size));
                    let clen32 = u32::try_from(clen).unwrap_or(u32::MAX);
                    if let Some(RdmaState::Read {
                        next_chunk, active, ..
                    }) = self.rdma.get_mut(&id).map(|o| &mut o.state)
                    {
                        *next_chunk += 1;
                        active.insert(
                            next,
                            ChunkState {
                                tag,
                                era,
                                tainted: false,
                                len: clen32,
                                blocks: Blocks::new(clen32),
                                done: false,
                                not_before: Instant::ZERO,
                            },
                        );
                    }
                    self.counters.reassembly(1);
                    self.send_read_chunk(id, next, None);
                },
                None => {}
            }
            if keep {
                self.reads_waiting.push_back(id);
                // Tags are gone: later descriptors wait behind this one.
                break;
            }
            if window_full {
                self.reads_waiting.push_back(id);
            }
        }
        // Write segments, one per write in turn, while ports have room.
        if !self.usable.iter().any(|&p| self.room(p, VC_RDMA)) {
            return false;
        }
        // A round in which no port has room only drops the writes that are done and brings the
        // others back to the order they had; under spray each of those others also takes the
        // next port of the cycle, and finds it full. With a policy whose choice changes nothing
        // (hash, least-loaded), or spray, that round is done at once, without trying each write.
        let (pure, spray) = (
            matches!(
                self.cfg.policy,
                crate::Policy::Hash | crate::Policy::LeastLoaded
            ),
            self.cfg.policy == crate::Policy::Spray,
        );
        let mut idle_rounds = 0;
        while idle_rounds < self.active_writes.len() {
            if (pure || spray)
                && idle_rounds == 0
                && !self.usable.iter().any(|&p| self.room(p, VC_RDMA))
            {
                // Writes found with a segment to send and unchanged since are not done: only a
                // queue that changed needs looking at.
                if !self.active_writes.clean {
                    let mut writes = core::mem::take(&mut self.active_writes);
                    writes.ids.retain(|&id| !self.write_done(id));
                    writes.clean = true;
                    self.active_writes = writes;
                }
                let waiting = self.active_writes.len();
                if spray {
                    for _ in 0..waiting {
                        self.choose(GpuId::default(), 0, None);
                    }
                }
                break;
            }
            let Some(id) = self.active_writes.pop_front() else {
                break;
            };
            match self.write_one_segment(id) {
                Segment::Sent => {
                    idle_rounds = 0;
                    // Its last segment may have gone.
                    let done = self.write_done(id);
                    self.active_writes.requeue(id, done);
                    if done && self.chunk_sent(id) {
                        more = true;
                    }
                }
                Segment::Blocked => {
                    idle_rounds += 1;
                    // Blocked with a segment to send: not done.
                    self.active_writes.requeue(id, false);
                }
                Segment::Done => {}
            }
        }
        // A whole round found every write blocked with a segment to send.
        if idle_rounds > 0 && idle_rounds >= self.active_writes.len() {
            self.active_writes.clean = true;
        }
        more
    }

    /// Whether write `id` has nothing to send for now and leaves the round robin: gone, held
    /// back, or every segment sent ([`Endpoint::write_one_segment`]'s `Done`).
    fn write_done(&self, id: u64) -> bool {
        let Some(op) = self.rdma.get(&id) else {
            return true;
        };
        if op.hold_until.is_some() {
            return true;
        }
        let RdmaState::Write { next, resend, .. } = &op.state else {
            return true;
        };
        resend.front().is_none() && *next >= op.desc.len
    }

    //= docs/spec/transaction.md#4-ordering
    //# TXN-4-4 An RDMA operation is performed segment by segment. Its segments MAY be performed in
    //# any order and interleaved with any other operation, on its own path as on others
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //# EP-13-10 *Internal.* (§6, EP-6-19) An RDMA write segment MUST be built, and its bytes read
    //# from local memory, when it is put in the endpoint's queue of its port and VC, which happens
    //# while that queue holds fewer than port_queue bytes (EP-3-3).
    fn write_one_segment(&mut self, id: u64) -> Segment {
        let seg = u64::from(self.cfg.segment);
        let spray = self.cfg.policy == crate::Policy::Spray;
        let Some(op) = self.rdma.get_mut(&id) else {
            return Segment::Done;
        };
        if op.hold_until.is_some() {
            // Held back: RdmaResume puts it back in turn.
            return Segment::Done;
        }
        let RdmaState::Write {
            tag,
            era,
            next,
            resend,
            port,
            ..
        } = &mut op.state
        else {
            return Segment::Done;
        };
        let offset = match resend.front() {
            Some(&o) => o,
            None if *next < op.desc.len => *next,
            None => return Segment::Done,
        };
        let (tag, era, desc, pinned) = (*tag, *era, op.desc, *port);
        let chosen = match pinned.filter(|&p| !spray && self.is_port_usable(p)) {
            Some(p) => Some(p),
            None => {
                // A policy whose choice changes nothing (hash, least-loaded) need not choose
                // when no port has room: the write waits either way.
                let pure = matches!(
                    self.cfg.policy,
                    crate::Policy::Hash | crate::Policy::LeastLoaded
                );
                if pure && !self.usable.iter().any(|&u| self.room(u, VC_RDMA)) {
                    return Segment::Blocked;
                }
                // Pick only among ports with room, so a full port does not stall the write.
                let p = self.choose(desc.remote.gpu, u64::from(tag), None);
                p.filter(|&p| self.room(p, VC_RDMA))
            }
        };
        let Some(p) = chosen.filter(|&p| self.room(p, VC_RDMA)) else {
            return Segment::Blocked;
        };
        let len = seg.min(desc.len - offset);
        let Some(op) = self.rdma.get_mut(&id) else {
            return Segment::Done;
        };
        op.sent = true;
        op.deadline = self.now.saturating_add(self.cfg.op_timeout);
        if let RdmaState::Write {
            next, resend, port, ..
        } = &mut op.state
        {
            if resend.front() == Some(&offset) {
                resend.pop_front();
            } else {
                *next = offset + len;
            }
            if !spray {
                *port = Some(p);
            }
        }
        //= docs/spec/wire.md#67-rdma_write-0x10-hlen-7-one-segment-of-a-remote-write
        //# WIRE-6.7-2 All segments of one write MUST carry the same tag, key, address, total
        //# length and SHARED flag.
        //= docs/spec/endpoint.md#6-rdma-engine
        //# EP-6-2 An RDMA write of length L MUST be sent as RDMA_WRITE segments with one tag, each
        //# covering `offset .. offset + dlen` of the write with `offset` a multiple of `segment`
        //# and `dlen` = min(`segment`, L - `offset`), together covering the write exactly once per
        //# attempt.
        //# EP-6-19 The data of a segment MUST be read from local memory when the segment is built.
        let n = usize::try_from(len).unwrap_or(0);
        let seg = core::mem::take(&mut self.seg);
        let Some(placeholder) = seg.get(..n) else {
            self.seg = seg;
            return Segment::Done;
        };
        // The transaction's data only gives its length: the bytes are read from memory straight
        // into the frame.
        let txn = TxnRepr::RdmaWrite {
            tag,
            target: MemTarget {
                space: desc.remote.space,
                key: desc.remote.key,
                addr: desc.remote.addr,
            },
            offset: u32::try_from(offset).unwrap_or(u32::MAX),
            total: u32::try_from(desc.len).unwrap_or(u32::MAX),
            data: placeholder,
        };
        let src = (desc.local_space, desc.local_addr.saturating_add(offset));
        self.enqueue_txn_from_memory(p, VC_RDMA, desc.remote.gpu, &txn, Some((tag, era)), src);
        self.seg = seg;
        Segment::Sent
    }
}

/// The writes that take turns for segments, in round-robin order.
///
/// It knows when no write in it is done: every one was last found with a segment to send, and
/// none has sent its last segment or joined since. A round in which no port has room then need
/// not look at each. Only sending a segment can finish a write that stays queued; holding,
/// ending or failing a write takes it out.
#[derive(Debug, Default)]
pub(super) struct WriteQueue {
    ids: VecDeque<u64>,
    /// No queued write is done ([`Endpoint::write_done`]).
    clean: bool,
}

impl WriteQueue {
    /// Queues write `id` at the back.
    pub(super) fn push_back(&mut self, id: u64) {
        self.ids.push_back(id);
        self.clean = false;
    }

    /// Takes the write whose turn it is.
    fn pop_front(&mut self) -> Option<u64> {
        self.ids.pop_front()
    }

    /// Puts write `id`, just taken, back at the end of the turns; `done`: it may have nothing
    /// left to send, so the queue is no longer known clean.
    fn requeue(&mut self, id: u64, done: bool) {
        self.ids.push_back(id);
        self.clean &= !done;
    }

    /// Takes write `id` out of the turns.
    pub(super) fn remove(&mut self, id: u64) {
        self.ids.retain(|&w| w != id);
    }

    pub(super) fn contains(&self, id: u64) -> bool {
        self.ids.contains(&id)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
}

/// What one attempt to send a write segment did.
enum Segment {
    Sent,
    Blocked,
    Done,
}
