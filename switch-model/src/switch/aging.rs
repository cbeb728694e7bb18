//! Frame lifetime (switch.md §4.1): each egress port's aging deadline, and the discard of the
//! frames that waited too long, in the queues or already in the egress link.

use alloc::collections::VecDeque;

use ethlink_link::Instant;

use super::{Switch, Timer, recycle};
use crate::counters::bump;

impl Switch {
    /// Makes sure egress port `e`'s aging runs no later than `arrived + max_residence + 1 ns`,
    /// the first instant a frame that arrived at `arrived` is aged.
    pub(super) fn arm(&mut self, e: usize, arrived: Instant) {
        let t = Instant::from_nanos(
            arrived
                .as_nanos()
                .saturating_add(self.max_res_ns)
                .saturating_add(1),
        );
        // Never later than the true earliest: the deadline only moves earlier here, and
        // `expire` sets it from the frames left.
        let k = self.key(Timer::Age, e);
        self.timers.lower(k, t);
    }

    //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
    //# SW-4-8 A switch MUST NOT discard as aged a frame whose residence is at most
    //# `max_residence`.
    pub(super) fn is_aged(&self, arrived: Instant) -> bool {
        self.now.as_nanos().saturating_sub(arrived.as_nanos()) > self.max_res_ns
    }

    /// Discards the aged frames toward egress port `e`, in its queues and in its link, and arms
    /// its aging for the oldest frame left (SW-4-6, SW-4-7).
    pub(super) fn expire(&mut self, e: usize) {
        //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
        //# SW-4-7 A frame whose residence exceeds `max_residence` MUST be discarded and counted in
        //# `discard_aged` of the port and VC it was received on
        let k = self.key(Timer::Age, e);
        self.timers.remove(k);
        let mut oldest: Option<Instant> = None;
        let mut inputs = core::mem::take(&mut self.inputs);
        for v in 0..self.vcs {
            self.voq.inputs(e, v, &mut inputs);
            for i in inputs.iter().copied().map(usize::from) {
                // Each queue is in arrival order: only its head can be the oldest.
                let mut taken = false;
                while let Some(head) = self.voq.front(e, v, i) {
                    if !self.is_aged(head.arrived) {
                        oldest = Some(oldest.map_or(head.arrived, |o| o.min(head.arrived)));
                        // A new head that is not ready yet wakes its egress port when it is.
                        if taken && head.ready > self.now {
                            let t = head.ready;
                            self.wake(e, t);
                        }
                        break;
                    }
                    taken = true;
                    let Some(f) = self.voq.pop_front(e, v, i) else {
                        break;
                    };
                    if let Some(w) = self.ports.get_mut(e).and_then(|x| x.waiting.get_mut(v)) {
                        *w = w.saturating_sub(1);
                    }
                    if let Some(c) = self.counters.ports.get_mut(i) {
                        bump(&mut c.discard_aged, v, 1);
                    }
                    self.leave(i, v, f.payload.len());
                    self.discard(i, f.payload, f.release);
                }
            }
        }
        self.inputs = inputs;
        //= docs/spec/switch.md#4-buffers-losslessness-and-lifetime
        //# SW-4-6 A switch MUST NOT begin to send a frame on its egress port when the frame's
        //# residence exceeds `max_residence`.
        let in_link_aged = self.ports.get(e).is_some_and(|x| {
            x.in_link
                .iter()
                .any(|q| q.front().is_some_and(|f| self.is_aged(f.arrived)))
        });
        if in_link_aged {
            self.take_back_aged(e);
        }
        if let Some(x) = self.ports.get(e) {
            for f in x.in_link.iter().filter_map(VecDeque::front) {
                oldest = Some(oldest.map_or(f.arrived, |o| o.min(f.arrived)));
            }
        }
        if let Some(t) = oldest {
            self.arm(e, t);
        }
    }

    /// Takes every unsent frame back from egress port `e`'s link, discards the aged ones and
    /// hands the others back in the same order.
    fn take_back_aged(&mut self, e: usize) {
        if let Some(x) = self.ports.get_mut(e) {
            x.aging = true;
            x.link.withdraw();
        }
        self.drain(e);
        let Some(x) = self.ports.get_mut(e) else {
            return;
        };
        x.aging = false;
        for (vc, payload, meta) in self.resubmit.drain(..) {
            let v = vc.index();
            let refused = if x.up {
                x.link.submit_outgoing(vc, payload).err().map(|(_, p)| p)
            } else {
                Some(payload)
            };
            match refused {
                None => {
                    if let Some(q) = x.in_link.get_mut(v) {
                        q.push_back(meta);
                    }
                }
                Some(payload) => {
                    if let Some(c) = self.counters.ports.get_mut(e) {
                        // The link went down meanwhile.
                        bump(&mut c.discard_port_down, v, 1);
                    }
                    recycle(&mut self.pool, payload);
                }
            }
        }
        self.touch(e);
        self.mark(e);
    }
}
