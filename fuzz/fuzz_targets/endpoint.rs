//! Drives one GPU endpoint whose port 0 is cabled to a bare link end the fuzzer controls: any
//! DATA payload the peer submits (requests, responses, garbage), operations the GPU issues and
//! posts, time, fences and port bounces. The endpoint must never panic, must complete every
//! operation it accepted at most once, and must keep its outstanding work within its tag and
//! queue bounds.

#![no_main]

use std::collections::BTreeSet;

use ethlink_endpoint::{
    Bytes, Config, Endpoint, LsOp, LsRequest, OpId, Ordering, Perms, Policy, RdmaDesc, RdmaDir,
    Region, Remote,
};
use ethlink_link::{Duration, Event, Instant, Link};
use ethlink_protocol::{AtomicOp, GpuId, Space, Vc, Width};
use libfuzzer_sys::fuzz_target;

fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(rest.len());
    let (h, t) = rest.split_at(n);
    *rest = t;
    h
}

fn byte(rest: &mut &[u8]) -> u8 {
    take(rest, 1).first().copied().unwrap_or(0)
}

fn u64_of(rest: &mut &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let s = take(rest, 8);
    b[..s.len()].copy_from_slice(s);
    u64::from_le_bytes(b)
}

struct World {
    ep: Endpoint,
    peer: Link,
    now: u64,
    buf: Vec<u8>,
}

impl World {
    fn exchange(&mut self, rounds: usize) {
        for _ in 0..rounds {
            let now = Instant::from_nanos(self.now);
            self.ep.handle_timeout(now);
            if self.peer.poll_timeout().is_some_and(|t| t <= now) {
                self.peer.handle_timeout(now);
            }
            let mut moved = false;
            while let Ok(Some(t)) = self.ep.poll_transmit(now, 0, &mut self.buf) {
                self.peer.handle_frame(now, &self.buf[..t.len]);
                moved = true;
            }
            while let Ok(Some(t)) = self.peer.poll_transmit(now, &mut self.buf) {
                self.ep.handle_frame(now, 0, &self.buf[..t.len]);
                moved = true;
            }
            // The peer drains whatever it receives.
            while let Some(ev) = self.peer.poll_event() {
                if let Event::Delivered { release, .. } = ev {
                    let _ = self.peer.release(release);
                }
            }
            self.now += if moved { 10 } else { 200 };
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let cfg = Config {
        gpu: GpuId::new(1).expect("id"),
        stacks: 1,
        ports: 2,
        policy: Policy::ALL[usize::from(data.first().copied().unwrap_or(0) % 4)],
        lsu_tags: 64,
        rdma_tags: 16,
        rdma_queue: 8,
        max_reassemblies: 4,
        max_read_jobs: 2,
        op_timeout: Duration::from_micros(5),
        frame_lifetime: Duration::from_micros(5),
        tag_quarantine: Duration::from_micros(10),
        ..Config::default()
    };
    let mut peer_cfg = cfg.port_link(0, 0);
    peer_cfg.mac.0[5] ^= 0x80;
    peer_cfg.nonce_seed ^= 0x5555;
    let Ok(mut ep) = Endpoint::new(cfg) else { return };
    let Ok(mut peer) = Link::new(peer_cfg) else { return };
    for space in [Space::Global, Space::Shared] {
        let _ = ep.memory_mut().register(Region {
            space,
            base: 0,
            len: 1 << 20,
            key: 7,
            perms: Perms::ALL,
        });
    }
    ep.port_up(Instant::ZERO, 0);
    peer.physical_up(Instant::ZERO);
    let mut w = World {
        ep,
        peer,
        now: 0,
        buf: vec![0u8; 9216],
    };
    w.exchange(40);
    let mut done: BTreeSet<OpId> = BTreeSet::new();
    let mut open: BTreeSet<OpId> = BTreeSet::new();
    let mut rest = data.get(1..).unwrap_or(&[]);
    let mut steps = 0;
    while !rest.is_empty() && steps < 200 {
        steps += 1;
        let op = byte(&mut rest);
        let now = Instant::from_nanos(w.now);
        match op % 8 {
            0 | 1 => {
                // A DATA payload from the peer, its length field made consistent half the time.
                let len = usize::from(byte(&mut rest)) * 4 + 8;
                let mut p = take(&mut rest, len).to_vec();
                if op % 8 == 0 && p.len() >= 8 {
                    let n = u16::try_from(p.len() - 8).unwrap_or(0);
                    p[6..8].copy_from_slice(&n.to_be_bytes());
                    p[0..2].copy_from_slice(&1u16.to_be_bytes());
                }
                let vc = Vc::new(byte(&mut rest) % 4).expect("vc");
                let _ = w.peer.submit(vc, &p);
            }
            2 => {
                let kind = byte(&mut rest);
                let addr = u64_of(&mut rest) % (1 << 21);
                let remote = Remote {
                    gpu: GpuId::new(u16::from(byte(&mut rest) % 3)).expect("id"),
                    space: if kind & 0x10 != 0 { Space::Shared } else { Space::Global },
                    key: u32::from(byte(&mut rest)),
                    addr,
                };
                let op = match kind % 4 {
                    0 => LsOp::Load {
                        len: u16::from(byte(&mut rest)) + 1,
                    },
                    1 => LsOp::Store {
                        data: Bytes::new(take(&mut rest, 16)).unwrap_or(Bytes::new(&[1]).expect("1")),
                    },
                    2 => LsOp::Atomic {
                        width: Width::W8,
                        op: AtomicOp::FetchAdd { addend: 1 },
                    },
                    _ => LsOp::Atomic {
                        width: Width::W4,
                        op: AtomicOp::CompareSwap {
                            compare: 0,
                            value: 5,
                        },
                    },
                };
                let ordering = if kind & 0x20 != 0 {
                    Ordering::Stream(u32::from(kind >> 6))
                } else {
                    Ordering::Unordered
                };
                if let Ok(tag) = w.ep.issue(now, LsRequest { op, remote, ordering }) {
                    assert!(open.insert(OpId::Ls(tag)), "tag {tag} handed out twice");
                }
            }
            3 => {
                let dir = if byte(&mut rest) & 1 == 0 {
                    RdmaDir::Write
                } else {
                    RdmaDir::Read
                };
                let desc = RdmaDesc {
                    dir,
                    local_space: Space::Global,
                    local_addr: u64_of(&mut rest) % (1 << 20),
                    remote: Remote {
                        gpu: GpuId::new(0).expect("id"),
                        space: Space::Global,
                        key: 7,
                        addr: u64_of(&mut rest) % (1 << 20),
                    },
                    len: u64::from(byte(&mut rest)) * 257 + 1,
                };
                if let Ok(id) = w.ep.post(now, desc) {
                    assert!(open.insert(OpId::Rdma(id)));
                }
            }
            4 => {
                if let Ok(id) = w.ep.fence(now) {
                    assert!(open.insert(OpId::Fence(id)));
                }
            }
            5 => {
                if byte(&mut rest) & 1 == 0 {
                    w.ep.port_down(now, 0);
                    w.peer.physical_down(now);
                } else {
                    w.ep.port_up(now, 0);
                    w.peer.physical_up(now);
                }
            }
            _ => {
                let n = usize::from(byte(&mut rest) % 16) + 1;
                w.exchange(n);
            }
        }
        w.exchange(2);
        while let Some(c) = w.ep.poll_completion() {
            assert!(open.remove(&c.id), "completion of an unknown or finished op: {c:?}");
            if let OpId::Rdma(_) | OpId::Fence(_) = c.id {
                assert!(done.insert(c.id), "completed twice: {c:?}");
            }
        }
        assert!(w.ep.ls_outstanding() <= 64);
        assert!(w.ep.rdma_outstanding() <= 8);
    }
    // Time runs on: every accepted operation ends.
    w.ep.port_up(Instant::from_nanos(w.now), 0);
    w.peer.physical_up(Instant::from_nanos(w.now));
    for _ in 0..400 {
        w.exchange(1);
        w.now += 1000;
        while let Some(c) = w.ep.poll_completion() {
            assert!(open.remove(&c.id), "completion of an unknown or finished op: {c:?}");
        }
        if open.is_empty() {
            break;
        }
    }
    assert!(open.is_empty(), "operations never completed: {open:?}");
});
