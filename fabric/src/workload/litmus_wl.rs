//! A litmus test as a fabric workload: its agents run their programs iteration after iteration,
//! each iteration on locations of its own, starting at times drawn within a jitter window, and
//! the final value of every location is read back by a LOAD once every agent has finished.
//!
//! A weakening of the target ([`Weakening::TargetSwapsPath`], [`Weakening::TargetIgnoresFences`])
//! is a change of the agents' programs: the later of two requests the target should order is
//! issued first, and the earlier one once it has completed.

use ethlink_endpoint::{Bytes, Completion, CompletionData, LsOp, LsRequest, Ordering, Remote};
use ethlink_protocol::{AtomicOp, AtomicValue, GpuId, Space, Width};
use rand_core::Rng;
use rand_pcg::Pcg64Mcg;

use super::Host;
use crate::build::key_of;
use crate::litmus::{Histogram, Litmus, MAX_AGENTS, MAX_OPS, Op, Outcome, Via, Weakening};
use crate::track::Effect;

/// Bytes between two locations: each is 8 bytes, naturally aligned, alone in its 64 bytes.
const STRIDE: u64 = 64;
/// Token of a final LOAD: the agent number no agent has.
const FINAL: u64 = 0xFFFF;
const PS_PER_NS: u64 = 1000;

/// Where an agent stands in the current iteration.
#[derive(Debug, Clone, Default)]
struct Progress {
    /// The next operation to issue.
    next: usize,
    /// Operations issued and not completed.
    outstanding: u32,
    /// Its registers.
    regs: Vec<u64>,
    /// It has begun this iteration.
    started: bool,
    /// A Fence it issued has not completed: what comes after waits.
    fenced: bool,
}

/// The state of a litmus workload.
#[derive(Debug)]
pub(crate) struct LitmusState {
    pub(crate) test: Litmus,
    iterations: u32,
    jitter_ps: u64,
    rng: Pcg64Mcg,
    iter: u32,
    agents: Vec<Progress>,
    /// Each agent's program as the runner issues it: each operation with its place in the
    /// test's program (which names its token and its register), and the `wait`s a weakening
    /// of the target adds (placed at `usize::MAX`).
    programs: Vec<Vec<(usize, Op)>>,
    /// Final LOADs outstanding, and the values read.
    finals_out: u32,
    mem: Vec<u64>,
    pub(crate) histogram: Histogram,
    /// Operations that ended with an error status, by kind of failure (not counted as states).
    pub(crate) failed_runs: u64,
    failed: bool,
    pub(crate) done: bool,
    weaken: Option<Weakening>,
    /// Where the agents' staging bytes begin in their own memory.
    local_base: u64,
}

impl LitmusState {
    pub(crate) fn new(
        test: Litmus,
        iterations: u32,
        jitter_ns: u64,
        rng: Pcg64Mcg,
        weaken: Option<Weakening>,
        local_base: u64,
    ) -> Self {
        let n = test.agents.len();
        let locs = test.locations.len();
        let programs = test
            .agents
            .iter()
            .map(|a| program(&test, &a.ops, weaken))
            .collect();
        LitmusState {
            test,
            iterations,
            jitter_ps: jitter_ns.saturating_mul(PS_PER_NS),
            rng,
            iter: 0,
            agents: vec![Progress::default(); n],
            programs,
            finals_out: 0,
            mem: vec![0; locs],
            histogram: Histogram::default(),
            failed_runs: 0,
            failed: false,
            done: false,
            weaken,
            local_base,
        }
    }

    /// The address of location `loc` in the current iteration.
    fn addr(&self, loc: usize) -> u64 {
        (u64::from(self.iter) * self.test.locations.len() as u64 + loc as u64) * STRIDE
    }

    /// The address, in agent `a`'s own memory, of the staging bytes of its operation `k` in the
    /// current iteration (an RDMA write's source, an RDMA read's destination).
    fn local(&self, a: usize, k: usize) -> u64 {
        self.local_base
            + ((u64::from(self.iter) * MAX_AGENTS as u64 + a as u64) * MAX_OPS as u64 + k as u64)
                * STRIDE
    }

    fn token(&self, agent: u64, k: u64) -> u64 {
        u64::from(self.iter) << 32 | agent << 16 | k
    }

    pub(crate) fn start(&mut self, cx: &mut dyn Host) {
        self.begin_iteration(cx);
    }

    /// Starts an iteration: each agent is woken at its own time within the jitter window.
    fn begin_iteration(&mut self, cx: &mut dyn Host) {
        if self.iter >= self.iterations {
            self.done = true;
            return;
        }
        self.failed = false;
        for (a, p) in self.agents.iter_mut().enumerate() {
            *p = Progress {
                regs: vec![0; self.test.agents.get(a).map_or(0, |x| x.regs.len())],
                ..Progress::default()
            };
        }
        let now = cx.now_ps();
        for a in 0..self.agents.len() {
            let delay = if self.jitter_ps > 0 {
                self.rng.next_u64() % self.jitter_ps
            } else {
                0
            };
            cx.wake(now + delay, self.token(a as u64, 0));
        }
    }

    pub(crate) fn on_wake(&mut self, cx: &mut dyn Host, token: u64) {
        if token >> 32 != u64::from(self.iter) {
            return;
        }
        let a = ((token >> 16) & 0xFFFF) as usize;
        if let Some(p) = self.agents.get_mut(a) {
            p.started = true;
        }
        self.advance(cx, a);
    }

    /// Issues agent `a`'s operations up to the next `wait` or `fence` that must wait for
    /// completions, or to the end of its program.
    fn advance(&mut self, cx: &mut dyn Host, a: usize) {
        loop {
            let Some(p) = self.agents.get(a) else { return };
            if !p.started || p.fenced {
                return;
            }
            let Some((k, op)) = self.programs.get(a).and_then(|x| x.get(p.next)).copied() else {
                break;
            };
            match op {
                Op::Wait => {
                    if p.outstanding > 0 {
                        return;
                    }
                    if let Some(p) = self.agents.get_mut(a) {
                        p.next += 1;
                    }
                }
                Op::Fence => {
                    // The endpoint's Fence operation, which completes only after everything
                    // issued before it (TXN-4-5); what comes after waits for its completion.
                    let (gpu, token) = match self.test.agents.get(a) {
                        Some(x) => (x.gpu, self.token(a as u64, k as u64)),
                        None => return,
                    };
                    if cx.fence(gpu, token).is_err() {
                        return;
                    }
                    if let Some(p) = self.agents.get_mut(a) {
                        p.next += 1;
                        p.outstanding += 1;
                        p.fenced = true;
                    }
                    return;
                }
                _ => {
                    if !self.issue(cx, a, k, op) {
                        // Refused (no tag): try again once something completes.
                        return;
                    }
                    if let Some(p) = self.agents.get_mut(a) {
                        p.next += 1;
                        p.outstanding += 1;
                    }
                }
            }
        }
        self.maybe_finish(cx);
    }

    /// Issues operation `k` of agent `a`; false when the endpoint had no room for it.
    fn issue(&mut self, cx: &mut dyn Host, a: usize, k: usize, op: Op) -> bool {
        let Some(agent) = self.test.agents.get(a) else {
            return false;
        };
        let gpu = agent.gpu;
        let (loc, lsop, via, writes) = match op {
            Op::Store { loc, value, via } => {
                let Some(data) = Bytes::new(&value.to_le_bytes()) else {
                    return false;
                };
                (loc, LsOp::Store { data }, via, true)
            }
            Op::Load { loc, via, .. } => (loc, LsOp::Load { len: 8 }, via, false),
            Op::FetchAdd {
                loc, value, via, ..
            } => (
                loc,
                LsOp::Atomic {
                    width: Width::W8,
                    op: AtomicOp::FetchAdd { addend: value },
                },
                via,
                true,
            ),
            Op::Swap {
                loc, value, via, ..
            } => (
                loc,
                LsOp::Atomic {
                    width: Width::W8,
                    op: AtomicOp::Swap { value },
                },
                via,
                true,
            ),
            Op::RdmaWrite { loc, value } => return self.post(cx, a, k, gpu, loc, Some(value)),
            Op::RdmaRead { loc, .. } => return self.post(cx, a, k, gpu, loc, None),
            // A FENCE request (TXN-4-6): only its target GPU counts, and it holds nothing
            // back but a `wait`.
            Op::RFence { loc, via } => (loc, LsOp::Fence, via, false),
            Op::Fence | Op::Wait => return false,
        };
        let Some(l) = self.test.locations.get(loc) else {
            return false;
        };
        let dst = l.gpu;
        let addr = self.addr(loc);
        let ordering = match via {
            Via::Stream(_) if self.weaken == Some(Weakening::StreamsUnpinned) => {
                Ordering::Unordered
            }
            Via::Port(_) if self.weaken == Some(Weakening::PortsIgnored) => Ordering::Unordered,
            Via::Stream(s) => Ordering::Stream(s),
            Via::Port(p) => Ordering::Port(p),
            Via::Unordered => Ordering::Unordered,
        };
        let req = LsRequest {
            op: lsop,
            remote: Remote {
                gpu: GpuId::new(dst).unwrap_or_default(),
                space: Space::Global,
                key: key_of(dst),
                addr,
            },
            ordering,
        };
        let effect = if writes {
            Effect::Writes {
                gpu: dst,
                addr,
                len: 8,
            }
        } else {
            Effect::None
        };
        let bytes = if matches!(lsop, LsOp::Fence) { 0 } else { 8 };
        cx.issue(gpu, req, self.token(a as u64, k as u64), bytes, effect)
            .is_ok()
    }

    /// Posts operation `k` of agent `a` (on `gpu`), an RDMA write of `value` or a read.
    fn post(
        &mut self,
        cx: &mut dyn Host,
        a: usize,
        k: usize,
        gpu: u16,
        loc: usize,
        value: Option<u64>,
    ) -> bool {
        let Some(l) = self.test.locations.get(loc) else {
            return false;
        };
        let (dst, addr, local) = (l.gpu, self.addr(loc), self.local(a, k));
        cx.post_rdma8(gpu, local, dst, addr, value, self.token(a as u64, k as u64))
            .is_ok()
    }

    pub(crate) fn on_completion(&mut self, cx: &mut dyn Host, token: u64, c: &Completion) {
        if token >> 32 != u64::from(self.iter) {
            return;
        }
        let a = (token >> 16) & 0xFFFF;
        let k = (token & 0xFFFF) as usize;
        if !c.status.is_ok() {
            self.failed = true;
        }
        let value = match c.data {
            CompletionData::Load(b) => {
                let s = b.as_slice();
                let mut v = [0u8; 8];
                if let Some(src) = s.get(..8) {
                    v.copy_from_slice(src);
                }
                Some(u64::from_le_bytes(v))
            }
            CompletionData::Atomic(AtomicValue::U64(v)) => Some(v),
            CompletionData::Atomic(AtomicValue::U32(v)) => Some(u64::from(v)),
            _ => None,
        };
        if a == FINAL {
            if let (Some(m), Some(v)) = (self.mem.get_mut(k), value) {
                *m = v;
            }
            self.finals_out = self.finals_out.saturating_sub(1);
            if self.finals_out == 0 {
                self.end_iteration(cx);
            }
            return;
        }
        let a = a as usize;
        let op = self.test.agents.get(a).and_then(|x| x.ops.get(k)).copied();
        let reg = match op {
            Some(
                Op::Load { reg, .. }
                | Op::FetchAdd { reg, .. }
                | Op::Swap { reg, .. }
                | Op::RdmaRead { reg, .. },
            ) => Some(reg),
            _ => None,
        };
        // An RDMA read's bytes are in the agent's own memory.
        let value = match (op, self.test.agents.get(a)) {
            (Some(Op::RdmaRead { .. }), Some(agent)) if c.status.is_ok() => {
                cx.read_local8(agent.gpu, self.local(a, k))
            }
            _ => value,
        };
        if let Some(p) = self.agents.get_mut(a) {
            p.outstanding = p.outstanding.saturating_sub(1);
            if op == Some(Op::Fence) {
                p.fenced = false;
            }
            if let (Some(r), Some(v)) = (reg, value)
                && let Some(x) = p.regs.get_mut(r)
            {
                *x = v;
            }
        }
        self.advance(cx, a);
    }

    /// Once every agent has issued and completed its whole program, reads every location back.
    fn maybe_finish(&mut self, cx: &mut dyn Host) {
        if self.finals_out > 0 {
            return;
        }
        let all = self.agents.iter().enumerate().all(|(a, p)| {
            p.started && p.outstanding == 0 && p.next >= self.programs.get(a).map_or(0, Vec::len)
        });
        if !all {
            return;
        }
        for loc in 0..self.test.locations.len() {
            let Some(l) = self.test.locations.get(loc) else {
                continue;
            };
            // Read by the lowest GPU of the test that is not the location's own.
            let reader = self
                .test
                .agents
                .iter()
                .map(|x| x.gpu)
                .chain(self.test.locations.iter().map(|x| x.gpu))
                .filter(|&g| g != l.gpu)
                .min()
                .unwrap_or(if l.gpu == 0 { 1 } else { 0 });
            let addr = self.addr(loc);
            let req = LsRequest {
                op: LsOp::Load { len: 8 },
                remote: Remote {
                    gpu: GpuId::new(l.gpu).unwrap_or_default(),
                    space: Space::Global,
                    key: key_of(l.gpu),
                    addr,
                },
                ordering: Ordering::Unordered,
            };
            if cx
                .issue(reader, req, self.token(FINAL, loc as u64), 8, Effect::None)
                .is_ok()
            {
                self.finals_out += 1;
            }
        }
        if self.finals_out == 0 {
            self.end_iteration(cx);
        }
    }

    /// Counts the iteration's final state and starts the next.
    fn end_iteration(&mut self, cx: &mut dyn Host) {
        // The locations' bytes are the test's, not a pattern the data check knows.
        for loc in 0..self.test.locations.len() {
            if let Some(l) = self.test.locations.get(loc) {
                cx.reference_unsure(l.gpu, self.addr(loc), 8);
            }
        }
        if self.failed {
            self.failed_runs += 1;
        } else {
            self.histogram.add(Outcome {
                regs: self.agents.iter().map(|p| p.regs.clone()).collect(),
                mem: self.mem.clone(),
            });
        }
        self.mem.iter_mut().for_each(|m| *m = 0);
        self.iter += 1;
        self.begin_iteration(cx);
    }
}

/// Agent program `ops` as the runner issues it, each operation with its place in `ops`: as
/// written, or with the pairs a weakened target would perform in the other order swapped.
fn program(test: &Litmus, ops: &[Op], weaken: Option<Weakening>) -> Vec<(usize, Op)> {
    let mut out: Vec<(usize, Op)> = Vec::with_capacity(ops.len() + 4);
    let mut k = 0;
    while let Some(&op) = ops.get(k) {
        if let Some((j, later)) =
            swapped_with(test, ops, k, weaken).and_then(|j| Some((j, *ops.get(j)?)))
        {
            // The later request first; the earlier one (and what stood between them) once it
            // has completed.
            out.push((j, later));
            out.push((usize::MAX, Op::Wait));
            out.extend(
                ops.get(k..j)
                    .unwrap_or(&[])
                    .iter()
                    .enumerate()
                    .map(|(i, &o)| (k + i, o)),
            );
            k = j + 1;
        } else {
            out.push((k, op));
            k += 1;
        }
    }
    out
}

/// The location and path of an access that has one (a stream or a port: TXN-4-1), and whether
/// it writes.
fn pinned(test: &Litmus, op: Op) -> Option<(usize, Via, u16, bool)> {
    let (loc, via, writes) = match op {
        Op::Store { loc, via, .. } => (loc, via, true),
        Op::Load { loc, via, .. } => (loc, via, false),
        Op::FetchAdd { loc, via, .. } | Op::Swap { loc, via, .. } => (loc, via, true),
        _ => return None,
    };
    if via == Via::Unordered {
        return None;
    }
    Some((loc, via, test.locations.get(loc)?.gpu, writes))
}

/// The later operation a weakened target performs before operation `k` of `ops`, if any.
fn swapped_with(test: &Litmus, ops: &[Op], k: usize, weaken: Option<Weakening>) -> Option<usize> {
    let (loc, via, gpu, writes) = pinned(test, *ops.get(k)?)?;
    match weaken? {
        Weakening::TargetSwapsPath => {
            let (l2, v2, g2, w2) = pinned(test, *ops.get(k + 1)?)?;
            (v2 == via && g2 == gpu && (writes && w2 || l2 == loc)).then_some(k + 1)
        }
        Weakening::TargetIgnoresFences => {
            // One or more FENCE requests on the path, then a request on it.
            let fences = ops
                .get(k + 1..)?
                .iter()
                .take_while(|o| match **o {
                    Op::RFence { loc: f, via: fv } => {
                        fv == via && test.locations.get(f).is_some_and(|l| l.gpu == gpu)
                    }
                    _ => false,
                })
                .count();
            let j = k + 1 + fences;
            let (_, v2, g2, _) = pinned(test, *ops.get(j)?)?;
            (fences > 0 && v2 == via && g2 == gpu).then_some(j)
        }
        Weakening::StreamsUnpinned | Weakening::PortsIgnored => None,
    }
}
