//! Counters of an endpoint (endpoint.md §10).

use alloc::vec;
use alloc::vec::Vec;

use crate::ops::{CompletionStatus, OpKind};

/// Load of one port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PortCounters {
    /// DATA frames handed to the link.
    pub frames_sent: u64,
    /// Bytes of those frames' payloads (network header and transactions).
    pub bytes_sent: u64,
    /// Transactions in those frames.
    pub txns_sent: u64,
    /// DATA frames received from the link.
    pub frames_received: u64,
    /// Bytes of their payloads.
    pub bytes_received: u64,
    /// Times the port's link went down.
    pub downs: u64,
}

/// Every counter of Table EP-T2 (EP-10-1). Plain data: compare, clone and read freely. Every
/// counter is 64 bits wide and wraps modulo 2^64; `reassembly_now`, `reassembly_max`,
/// `reorder_bytes_now` and `reorder_bytes_max` are gauges.
//= docs/spec/endpoint.md#10-counters
//# EP-10-1 An endpoint MUST keep every counter of Table EP-T2 and count in it exactly what its
//# row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counters {
    /// Operations completed, by kind ([`OpKind::index`]) and status class
    /// ([`CompletionStatus::class`]).
    pub completed: [[u64; CompletionStatus::CLASSES]; OpKind::ALL.len()],
    /// Bytes loads returned OK.
    pub ls_bytes_read: u64,
    /// Bytes stores wrote OK.
    pub ls_bytes_written: u64,
    /// Bytes of RDMA writes completed OK.
    pub rdma_bytes_written: u64,
    /// Bytes of RDMA reads completed OK.
    pub rdma_bytes_read: u64,
    /// Per port, in (stack, port) order.
    pub ports: Vec<PortCounters>,
    /// Requests sent again after their frame had unknown fate, their deadline passed or the
    /// target answered BUSY.
    pub retries: u64,
    /// Of `retries`, those after a BUSY answer (EP-9-5).
    pub busy_retries: u64,
    /// Requests and responses moved to another port without a retry (never sent).
    pub moved: u64,
    /// Responses discarded: no operation held their tag, the opcode did not match, or the
    /// operation had completed (EP-5-4, EP-9-4).
    pub responses_discarded: u64,
    /// Frames whose destination was another GPU (EP-8-1).
    pub misdelivered: u64,
    /// Frames whose network header was malformed (WIRE-5-3).
    pub malformed_frames: u64,
    /// Transactions whose structure could not be read, each ending its frame (WIRE-6.1-3,
    /// WIRE-6.1-4).
    pub malformed_txns: u64,
    /// Responses with an opcode wire.md does not define (WIRE-6.1-7).
    pub unknown_responses: u64,
    /// Responses with a defined opcode whose fields break wire.md, and RDMA_READ_RESP segments
    /// that break EP-6-10's alignment or run past their chunk (WIRE-6.1-7).
    pub bad_responses: u64,
    /// Requests performed as a target.
    pub requests_served: u64,
    /// Responses the target sent with a status other than OK.
    pub requests_refused: u64,
    /// Frames that carried more than one transaction.
    pub packed_frames: u64,
    /// Transactions that shared a frame with others.
    pub packed_txns: u64,
    /// First segments of RDMA writes answered BUSY for want of a reassembly record or of
    /// reassembly blocks (EP-6-14, EP-6-12).
    pub reassembly_refused: u64,
    /// Reassemblies forgotten after `op_timeout` without progress (EP-6-15).
    pub reassembly_expired: u64,
    /// RDMA segments whose blocks had all been received already, or of a write refused at its
    /// first segment.
    pub duplicate_segments: u64,
    /// RDMA reads answered BUSY (EP-6-9).
    pub read_jobs_refused: u64,
    /// Responses discarded after waiting `op_timeout` for a usable port (EP-8-5), and reads
    /// the target stopped serving after `op_timeout` without a usable port.
    pub responses_expired: u64,
    /// Responses in frames a link reported of unknown fate, not sent again (TXN-5-5).
    pub responses_lost: u64,
    /// Times the target stopped taking requests for its response backlog (EP-8-4).
    pub backlog_stalls: u64,
    /// Request frames discarded unperformed because the target had held them for `hold_max`
    /// (EP-8-9).
    pub held_expired: u64,
    /// Transactions discarded for arriving on a VC of the other class: a request on a response
    /// VC, a response on a request VC, or either on a VC above 3 (EP-3-7).
    pub wrong_vc_txns: u64,
    /// RDMA writes and reads in reassembly now (target writes and requester read chunks).
    pub reassembly_now: u64,
    /// Highest `reassembly_now`.
    pub reassembly_max: u64,
    /// Bytes received beyond the in-order point of their reassembly now (the reorder buffer).
    pub reorder_bytes_now: u64,
    /// Highest `reorder_bytes_now`.
    pub reorder_bytes_max: u64,
}

impl Counters {
    /// Every counter zero, for `ports` ports: the counters after a reset (EP-12-1).
    pub fn new(ports: usize) -> Self {
        Counters {
            completed: [[0; CompletionStatus::CLASSES]; OpKind::ALL.len()],
            ls_bytes_read: 0,
            ls_bytes_written: 0,
            rdma_bytes_written: 0,
            rdma_bytes_read: 0,
            ports: vec![PortCounters::default(); ports],
            retries: 0,
            busy_retries: 0,
            moved: 0,
            responses_discarded: 0,
            misdelivered: 0,
            malformed_frames: 0,
            malformed_txns: 0,
            unknown_responses: 0,
            bad_responses: 0,
            requests_served: 0,
            requests_refused: 0,
            packed_frames: 0,
            packed_txns: 0,
            reassembly_refused: 0,
            reassembly_expired: 0,
            duplicate_segments: 0,
            read_jobs_refused: 0,
            responses_expired: 0,
            responses_lost: 0,
            backlog_stalls: 0,
            held_expired: 0,
            wrong_vc_txns: 0,
            reassembly_now: 0,
            reassembly_max: 0,
            reorder_bytes_now: 0,
            reorder_bytes_max: 0,
        }
    }

    /// Operations of `kind` completed with status class `class`.
    pub fn completed_with(&self, kind: OpKind, class: usize) -> u64 {
        self.completed
            .get(kind.index())
            .and_then(|r| r.get(class))
            .copied()
            .unwrap_or(0)
    }

    /// Operations of `kind` completed, whatever their status.
    pub fn completed_total(&self, kind: OpKind) -> u64 {
        self.completed
            .get(kind.index())
            .map_or(0, |r| r.iter().sum())
    }

    /// Per-stack sums of the port counters, for `ports_per_stack` ports per stack.
    pub fn stacks(&self, ports_per_stack: usize) -> Vec<PortCounters> {
        self.ports
            .chunks(ports_per_stack.max(1))
            .map(|c| {
                c.iter().fold(PortCounters::default(), |a, p| PortCounters {
                    frames_sent: a.frames_sent.wrapping_add(p.frames_sent),
                    bytes_sent: a.bytes_sent.wrapping_add(p.bytes_sent),
                    txns_sent: a.txns_sent.wrapping_add(p.txns_sent),
                    frames_received: a.frames_received.wrapping_add(p.frames_received),
                    bytes_received: a.bytes_received.wrapping_add(p.bytes_received),
                    downs: a.downs.wrapping_add(p.downs),
                })
            })
            .collect()
    }

    /// Calls `f` with the name of every counter as endpoint.md Table EP-T2 names it, the port of a
    /// per-port counter (in (stack, port) order), the kind and status class of a `completed`
    /// counter ([`OpKind::name`], [`CompletionStatus::class_name`]), and its value: the form a
    /// register map or a report reads.
    pub fn for_each(
        &self,
        mut f: impl FnMut(&'static str, Option<usize>, Option<(&'static str, &'static str)>, u64),
    ) {
        for kind in OpKind::ALL {
            for class in 0..CompletionStatus::CLASSES {
                let v = self.completed_with(kind, class);
                f(
                    "completed",
                    None,
                    Some((kind.name(), CompletionStatus::class_name(class))),
                    v,
                );
            }
        }
        f("ls_bytes_read", None, None, self.ls_bytes_read);
        f("ls_bytes_written", None, None, self.ls_bytes_written);
        f("rdma_bytes_written", None, None, self.rdma_bytes_written);
        f("rdma_bytes_read", None, None, self.rdma_bytes_read);
        for (i, p) in self.ports.iter().enumerate() {
            f("frames_sent", Some(i), None, p.frames_sent);
            f("bytes_sent", Some(i), None, p.bytes_sent);
            f("txns_sent", Some(i), None, p.txns_sent);
            f("frames_received", Some(i), None, p.frames_received);
            f("bytes_received", Some(i), None, p.bytes_received);
            f("downs", Some(i), None, p.downs);
        }
        f("retries", None, None, self.retries);
        f("busy_retries", None, None, self.busy_retries);
        f("moved", None, None, self.moved);
        f("responses_discarded", None, None, self.responses_discarded);
        f("misdelivered", None, None, self.misdelivered);
        f("malformed_frames", None, None, self.malformed_frames);
        f("malformed_txns", None, None, self.malformed_txns);
        f("unknown_responses", None, None, self.unknown_responses);
        f("bad_responses", None, None, self.bad_responses);
        f("requests_served", None, None, self.requests_served);
        f("requests_refused", None, None, self.requests_refused);
        f("packed_frames", None, None, self.packed_frames);
        f("packed_txns", None, None, self.packed_txns);
        f("reassembly_refused", None, None, self.reassembly_refused);
        f("reassembly_expired", None, None, self.reassembly_expired);
        f("duplicate_segments", None, None, self.duplicate_segments);
        f("read_jobs_refused", None, None, self.read_jobs_refused);
        f("responses_expired", None, None, self.responses_expired);
        f("responses_lost", None, None, self.responses_lost);
        f("backlog_stalls", None, None, self.backlog_stalls);
        f("held_expired", None, None, self.held_expired);
        f("wrong_vc_txns", None, None, self.wrong_vc_txns);
        f("reassembly_now", None, None, self.reassembly_now);
        f("reassembly_max", None, None, self.reassembly_max);
        f("reorder_bytes_now", None, None, self.reorder_bytes_now);
        f("reorder_bytes_max", None, None, self.reorder_bytes_max);
    }

    pub(crate) fn count(&mut self, kind: OpKind, status: CompletionStatus) {
        if let Some(c) = self
            .completed
            .get_mut(kind.index())
            .and_then(|r| r.get_mut(status.class()))
        {
            *c = c.wrapping_add(1);
        }
    }

    pub(crate) fn reassembly(&mut self, delta: i64) {
        self.reassembly_now = self.reassembly_now.saturating_add_signed(delta);
        self.reassembly_max = self.reassembly_max.max(self.reassembly_now);
    }

    pub(crate) fn reorder(&mut self, delta: i64) {
        self.reorder_bytes_now = self.reorder_bytes_now.saturating_add_signed(delta);
        self.reorder_bytes_max = self.reorder_bytes_max.max(self.reorder_bytes_now);
    }
}
