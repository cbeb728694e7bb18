//! Two GPUs back to back through the link fault injector: load-store, RDMA, ports going down.

mod common;

use common::*;
use ethlink_endpoint::{CompletionData, CompletionStatus, OpId, Ordering, Policy};
use ethlink_link::harness::Faults;

#[test]
fn store_then_load_on_one_stream() {
    let mut b = pair(Policy::Spray, Faults::default(), 1);
    let now = b.now();
    let s = b
        .gpu_mut(0)
        .issue(now, store(1, 0x1000, b"hello, gpu", Ordering::Stream(7)))
        .unwrap();
    let l = b
        .gpu_mut(0)
        .issue(now, load(1, 0x1000, 10, Ordering::Stream(7)))
        .unwrap();
    assert!(b.run_until_idle(1_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 2, "{c:?}");
    let st = c.iter().find(|c| c.id == OpId::Ls(s)).unwrap();
    assert_eq!(st.status, CompletionStatus::Ok);
    let ld = c.iter().find(|c| c.id == OpId::Ls(l)).unwrap();
    match ld.data {
        CompletionData::Load(bytes) => assert_eq!(bytes.as_slice(), b"hello, gpu"),
        other => panic!("{other:?}"),
    }
    assert_eq!(read_mem(&b, 1, 0x1000, 10), b"hello, gpu");
}

#[test]
fn rdma_write_and_read() {
    let mut b = pair(Policy::Spray, Faults::default(), 2);
    let data = pattern(5, 1 << 20);
    b.gpu_mut(0)
        .memory_mut()
        .write(ethlink_protocol::Space::Global, 0x10_0000, &data)
        .unwrap();
    let now = b.now();
    let w = b
        .gpu_mut(0)
        .post(now, write_desc(1, 0x10_0000, 0x20_0000, 1 << 20))
        .unwrap();
    assert!(b.run_until_idle(10_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, OpId::Rdma(w));
    assert_eq!(c[0].status, CompletionStatus::Ok);
    assert_eq!(read_mem(&b, 1, 0x20_0000, 1 << 20), data);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-2 An RDMA write of length L MUST be sent as RDMA_WRITE segments with one tag, each
    //# covering `offset .. offset + dlen` of the write with `offset` a multiple of `segment`
    let segs: u64 = b.gpu(0).counters().ports.iter().map(|p| p.txns_sent).sum();
    assert_eq!(segs, (1 << 20) / 8192, "1 MiB in 8 KiB segments");
    let now = b.now();
    let r = b
        .gpu_mut(0)
        .post(now, read_desc(1, 0x40_0000, 0x20_0000, 1 << 20))
        .unwrap();
    assert!(b.run_until_idle(20_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-11 The requester MUST complete an RDMA write when its RDMA_COMPLETION arrives with
    //# the status it carries
    assert_eq!(c[0].id, OpId::Rdma(r));
    assert_eq!(c[0].status, CompletionStatus::Ok);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-10 The requester MUST place each RDMA_READ_RESP segment's bytes in local memory at
    //# the descriptor's local address plus the chunk's offset plus the segment's offset
    assert_eq!(read_mem(&b, 0, 0x40_0000, 1 << 20), data);
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-7 An RDMA read of length L MUST be asked for in chunks of `read_chunk` bytes (the
    //# last shorter), one RDMA_READ with its own tag per chunk
    let reqs: u64 = b.gpu(0).counters().ports.iter().map(|p| p.txns_sent).sum();
    assert_eq!(reqs - segs, (1 << 20) / 65536, "16 chunks of 64 KiB");
}

use ethlink_endpoint::harness::PortFault;
use ethlink_endpoint::{
    Completion, Config, IssueError, LsOp, LsRequest, PostError, RdmaDesc, RdmaDir,
};
use ethlink_link::Duration;
use ethlink_protocol::{AtomicOp, Space, Width};

fn fetch_add(to: u16, addr: u64, addend: u64, ordering: Ordering) -> LsRequest {
    LsRequest {
        op: LsOp::Atomic {
            width: Width::W8,
            op: AtomicOp::FetchAdd { addend },
        },
        remote: remote(to, addr),
        ordering,
    }
}

fn fast(id: u16, policy: Policy) -> Config {
    Config {
        op_timeout: Duration::from_micros(20),
        frame_lifetime: Duration::from_micros(20),
        tag_quarantine: Duration::from_micros(40),
        ..config(id, policy)
    }
}

fn by_id(c: &[Completion]) -> std::collections::BTreeMap<OpId, Completion> {
    c.iter().map(|c| (c.id, *c)).collect()
}

#[test]
fn a_flush_in_the_middle_of_rdma_ends_every_operation_once() {
    let mut b = pair_with(
        fast(0, Policy::Spray),
        fast(1, Policy::Spray),
        Faults::default(),
        3,
    );
    const LEN: u64 = 256 * 1024;
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    let now = b.now();
    for k in 0..24u64 {
        let data = pattern(100 + k, LEN as usize);
        b.gpu_mut(0)
            .memory_mut()
            .write(Space::Global, k * LEN, &data)
            .unwrap();
        // Remote source of the reads.
        b.gpu_mut(1)
            .memory_mut()
            .write(Space::Global, 0x4000_0000 + k * LEN, &data)
            .unwrap();
    }
    for k in 0..24u64 {
        let w = b
            .gpu_mut(0)
            .post(now, write_desc(1, k * LEN, 0x1000_0000 + k * LEN, LEN))
            .unwrap();
        writes.push((w, k));
    }
    for k in 0..8u64 {
        let r = b
            .gpu_mut(0)
            .post(
                now,
                read_desc(1, 0x2000_0000 + k * LEN, 0x4000_0000 + k * LEN, LEN),
            )
            .unwrap();
        reads.push((r, k));
    }
    // Ports 0 and 3 go dark while segments are in flight: the links replay, give up and FLUSH.
    let t = b.now_ns() + 2_000;
    b.set_faults(vec![
        PortFault {
            port: 0,
            start_ns: t,
            duration_ns: 80_000,
            blackout: true,
        },
        PortFault {
            port: 3,
            start_ns: t + 500,
            duration_ns: 80_000,
            blackout: true,
        },
    ]);
    assert!(b.run_until_idle(10_000_000), "every operation completes");
    let flushes: u64 = [0usize, 3]
        .iter()
        .map(|&p| b.gpu(0).link(p).unwrap().counters().flushes)
        .sum();
    assert!(flushes > 0, "the blackout made a link FLUSH");
    let c = b.take_completions(0);
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-1 Every operation a requester accepts MUST end with exactly one completion carrying
    //# one status of the table. An operation MUST NOT end silently, MUST NOT be completed twice,
    assert_unique(&c);
    assert_eq!(c.len(), writes.len() + reads.len(), "none lost");
    let m = by_id(&c);
    let mut ok = 0;
    for (w, k) in &writes {
        let done = m[&OpId::Rdma(*w)];
        let got = read_mem(&b, 1, 0x1000_0000 + k * LEN, LEN as usize);
        let want = pattern(100 + k, LEN as usize);
        if done.status == CompletionStatus::Ok {
            ok += 1;
            assert_eq!(
                got, want,
                "write {k} completed OK, so all of it is at the target"
            );
        } else {
            //= docs/spec/transaction.md#3-statuses
            //= type=test
            //# TXN-3-5 A requester MUST complete with FATE_UNKNOWN, and MUST NOT retransmit, an
            //# operation that is not repeatable (a store, an RDMA write, an atomic) whose request
            //# was in a frame its link reported of unknown fate (LINK-6-1).
            assert!(
                matches!(
                    done.status,
                    CompletionStatus::FateUnknown | CompletionStatus::Timeout
                ),
                "{done:?}"
            );
            assert_eq!(done.retries, 0, "write {k} was sent again: {done:?}");
            // Each byte written once or not at all: the write's own byte, or the initial zero.
            for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
                assert!(g == w || g == 0, "write {k} byte {i}: {g:#x}");
            }
        }
    }
    assert!(ok < writes.len(), "the blackout cost some write its answer");
    let writes_ok = ok;
    for (r, k) in &reads {
        let done = m[&OpId::Rdma(*r)];
        if done.status == CompletionStatus::Ok {
            ok += 1;
            assert_eq!(
                read_mem(&b, 0, 0x2000_0000 + k * LEN, LEN as usize),
                pattern(100 + k, LEN as usize)
            );
        } else {
            assert_eq!(done.status, CompletionStatus::Timeout, "{done:?}");
        }
    }
    //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
    //= type=test
    //# EP-9-1 When a port's link goes down, the endpoint MUST take the port out of path choice,
    //# take back every frame still queued for the port (its own queue and the link's, LINK-6-5),
    //# and handle every transaction of those frames and of the frames the link reports of unknown
    //# fate, in their order, by TXN-5-2, TXN-5-3, TXN-3-5, TXN-5-5 and TXN-5-8.
    let counters = b.gpu(0).counters();
    //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
    //= type=test
    //# EP-9-2 A request to be sent again MUST go to a usable port other than the one it was
    //# lost on, chosen by §4
    assert!(counters.moved > 0, "queued segments moved to other ports");
    // With six ports left and three retries each, every read gets through.
    assert_eq!(ok, writes_ok + reads.len(), "{counters:?}");
}

#[test]
fn spraying_spreads_rdma_over_every_port() {
    // The bound stated: with spray, max over mean of the bytes sent per port stays within 1.05
    // for 64 writes of 64 KiB over 8 ports; hashing one write puts it all on one port.
    let mut b = pair(Policy::Spray, Faults::default(), 4);
    let now = b.now();
    for k in 0..64u64 {
        b.gpu_mut(0)
            .post(now, write_desc(1, k << 16, k << 16, 1 << 16))
            .unwrap();
    }
    assert!(b.run_until_idle(10_000_000));
    let bytes: Vec<u64> = b
        .gpu(0)
        .counters()
        .ports
        .iter()
        .map(|p| p.bytes_sent)
        .collect();
    let max = *bytes.iter().max().unwrap() as f64;
    let mean = bytes.iter().sum::<u64>() as f64 / bytes.len() as f64;
    //= docs/spec/endpoint.md#4-paths-and-load-balancing
    //= type=test
    //# EP-4-2 The port of a new pin, of an unordered load-store operation, of an RDMA write (all
    //# its segments) or of an RDMA read chunk MUST be chosen among the usable ports, in (stack,
    //# port) order, by the run's policy; the choice shows in the path id of the request's frames
    //# (EP-3-4): - *hash*: the port at index h mod n, n usable ports, h the 64-bit hash of §4.1 of
    //# the destination GPU and the stream id (ordered streams), the tag (unordered operations); -
    //# *round-robin*: the next port after the last one chosen, in a cycle over the usable ports; -
    //# *least-loaded*: the port with the fewest bytes waiting (the endpoint's queues and the link's
    //# transmit queue), the first in order on a tie; - *spray*: as round-robin for load-store
    //# operations and RDMA reads, and for an RDMA write each segment on the next port in the cycle.
    assert!(
        max / mean <= 1.05,
        "spray imbalance {} ({bytes:?})",
        max / mean
    );

    let mut h = pair(Policy::Hash, Faults::default(), 4);
    let now = h.now();
    h.gpu_mut(0)
        .post(now, write_desc(1, 0, 0, 1 << 20))
        .unwrap();
    assert!(h.run_until_idle(10_000_000));
    let bytes: Vec<u64> = h
        .gpu(0)
        .counters()
        .ports
        .iter()
        .map(|p| p.bytes_sent)
        .collect();
    let busy = bytes.iter().filter(|&&x| x > 100_000).count();
    assert_eq!(busy, 1, "hash keeps one write on one port: {bytes:?}");
}

#[test]
fn round_robin_and_least_loaded_use_every_port() {
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-9 (§4) One round-robin cycle MUST be shared by every choice of port an endpoint makes
    //# (pins of streams, unordered load-store operations, RDMA writes and read chunks, and, for
    //# spray, RDMA write segments): the next choice of any kind takes the next usable port after
    //# the last choice of any kind.
    for policy in [Policy::RoundRobin, Policy::LeastLoaded] {
        let mut b = pair(policy, Faults::default(), 5);
        let now = b.now();
        for k in 0..800u64 {
            b.gpu_mut(0)
                .issue(now, store(1, k * 64, &[k as u8; 64], Ordering::Unordered))
                .unwrap();
        }
        assert!(b.run_until_idle(1_000_000));
        let txns: Vec<u64> = b
            .gpu(0)
            .counters()
            .ports
            .iter()
            .map(|p| p.txns_sent)
            .collect();
        assert!(txns.iter().all(|&t| t >= 50), "{policy}: {txns:?}");
        if policy == Policy::RoundRobin {
            let (lo, hi) = (txns.iter().min().unwrap(), txns.iter().max().unwrap());
            assert!(hi - lo <= 1, "round-robin deals ports in turn: {txns:?}");
        }
    }
}

#[test]
fn issue_is_refused_when_the_tags_are_gone_and_nothing_is_sent() {
    let cfg = |id| Config {
        lsu_tags: 16,
        rdma_queue: 2,
        ..config(id, Policy::Spray)
    };
    let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 6);
    let now = b.now();
    for k in 0..16u64 {
        b.gpu_mut(0)
            .issue(now, load(1, k * 8, 8, Ordering::Unordered))
            .unwrap();
    }
    let sent = |b: &ethlink_endpoint::harness::BackToBack| {
        b.gpu(0)
            .counters()
            .ports
            .iter()
            .map(|p| p.txns_sent)
            .sum::<u64>()
    };
    b.run_until(b.now_ns() + 10);
    let before = (sent(&b), b.gpu(0).ls_outstanding());
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-2 When every tag is held, issue MUST be refused with an error that says so, and
    //# nothing of the operation MUST have been sent or recorded
    let err = b
        .gpu_mut(0)
        .issue(now, load(1, 0, 8, Ordering::Unordered))
        .unwrap_err();
    assert_eq!(err, IssueError::TagsExhausted { outstanding: 16 });
    assert!(err.to_string().contains("every load-store tag is held"));
    b.run_until(b.now_ns() + 10);
    assert_eq!((sent(&b), b.gpu(0).ls_outstanding()), before);
    assert!(b.run_until_idle(1_000_000));
    assert_eq!(
        b.take_completions(0).len(),
        16,
        "an accepted operation is never dropped"
    );
    let now = b.now();
    assert!(
        b.gpu_mut(0)
            .issue(now, load(1, 0, 8, Ordering::Unordered))
            .is_ok()
    );

    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-3 An operation's parameters MUST be checked at issue: length 1..256 for loads and
    //# stores, operand size 4 or 8, a destination GPU id other than 0xFFFF, an address range
    //# that does not wrap.
    let bad = [
        load(1, 0, 0, Ordering::Unordered),
        load(1, 0, 257, Ordering::Unordered),
        load(1, u64::MAX - 3, 8, Ordering::Unordered),
        LsRequest {
            op: LsOp::Atomic {
                width: Width::W4,
                op: AtomicOp::Swap { value: 1 << 40 },
            },
            remote: remote(1, 0),
            ordering: Ordering::Unordered,
        },
        LsRequest {
            remote: ethlink_endpoint::Remote {
                gpu: ethlink_protocol::GpuId::new(0xFFFE).unwrap(),
                ..remote(1, 0)
            },
            ..load(1, 0, 8, Ordering::Unordered)
        },
    ];
    for (i, r) in bad.into_iter().enumerate() {
        let e = b.gpu_mut(0).issue(now, r);
        if i == 4 {
            assert!(e.is_ok(), "0xFFFE is a valid id");
        } else {
            assert!(matches!(e, Err(IssueError::Invalid { .. })), "{i}: {e:?}");
        }
    }

    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-1 A descriptor MUST be refused at post, with an error naming the field, if its
    //# length is 0 or above 2^32-1, if its local range is not inside the local space, if its
    //# destination GPU id is 0xFFFF, or if `rdma_queue` descriptors are outstanding.
    let field = |e: Result<u64, PostError>| match e {
        Err(PostError::Invalid { field, .. }) => field,
        other => panic!("{other:?}"),
    };
    assert_eq!(field(b.gpu_mut(0).post(now, write_desc(1, 0, 0, 0))), "len");
    assert_eq!(
        field(b.gpu_mut(0).post(now, write_desc(1, 0, 0, 1 << 32))),
        "len"
    );
    assert_eq!(
        field(b.gpu_mut(0).post(now, write_desc(1, (1 << 40) - 8, 0, 16))),
        "local_addr"
    );
    let far = RdmaDesc {
        remote: ethlink_endpoint::Remote {
            gpu: ethlink_protocol::GpuId::new(3).unwrap(),
            ..remote(1, 0)
        },
        ..write_desc(1, 0, 0, 8)
    };
    assert!(b.gpu_mut(0).post(now, far).is_ok());
    assert!(b.gpu_mut(0).post(now, write_desc(1, 0, 0, 8)).is_ok());
    assert_eq!(
        b.gpu_mut(0).post(now, write_desc(1, 0, 0, 8)),
        Err(PostError::QueueFull { outstanding: 2 })
    );
    // A largest descriptor is accepted (2^32-1 bytes).
    assert!(b.run_until_idle(10_000_000));
    let big = RdmaDesc {
        dir: RdmaDir::Write,
        ..write_desc(1, 0, 0, (1 << 32) - 1)
    };
    let now = b.now();
    assert!(b.gpu_mut(0).post(now, big).is_ok());
}

fn lone_store_latency(pack_delay_ns: u64) -> (u64, u64) {
    let cfg = |id| Config {
        pack_delay: Duration::from_nanos(pack_delay_ns),
        ..config(id, Policy::Hash)
    };
    let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 7);
    let now = b.now();
    b.gpu_mut(0)
        .issue(now, store(1, 0, &[1; 64], Ordering::Stream(1)))
        .unwrap();
    assert!(b.run_until_idle(1_000_000));
    let c = b.take_completions(0);
    let lone = c[0].completed.as_nanos() - c[0].issued.as_nanos();
    // Then 40 stores at once on one stream.
    let now = b.now();
    for k in 0..40u64 {
        b.gpu_mut(0)
            .issue(now, store(1, k * 64, &[2; 64], Ordering::Stream(1)))
            .unwrap();
    }
    assert!(b.run_until_idle(1_000_000));
    let frames: u64 = b
        .gpu(0)
        .counters()
        .ports
        .iter()
        .map(|p| p.frames_sent)
        .sum();
    (lone, frames)
}

#[test]
fn small_operations_are_packed_within_the_delay_bound() {
    let (l0, f0) = lone_store_latency(0);
    let (l200, f200) = lone_store_latency(200);
    //= docs/spec/endpoint.md#7-packing
    //= type=test
    //# EP-7-2 A transaction MUST NOT wait more than `pack_delay` for others to share its
    //# frame: a frame being packed MUST be queued for its port when it is full or when its
    //# first transaction has waited `pack_delay`, whichever comes first.
    // The request waits at most 200 ns at GPU 0 and the response at most 200 ns at GPU 1.
    assert!(
        l200 <= l0 + 400 + 2,
        "added delay {} > 2 x 200 ns",
        l200 - l0
    );
    assert!(
        l200 >= l0 + 380,
        "the lone store waited for company: {l0} vs {l200}"
    );
    //= docs/spec/endpoint.md#7-packing
    //= type=test
    //# EP-7-1 The endpoint MAY put several transactions with the same destination, path and VC into
    //# one frame (WIRE-5-5), up to the MFS agreed on the port and 255 transactions, if it has the
    //# PACKING capability (§11).
    assert!(f0 >= 41, "no packing without a delay: {f0} frames");
    assert!(
        f200 <= 3,
        "41 stores in at most 3 frames with packing: {f200}"
    );
}

#[test]
fn a_cut_port_moves_ordered_streams_and_keeps_their_order() {
    let mut b = pair_with(
        fast(0, Policy::Hash),
        fast(1, Policy::Hash),
        Faults::default(),
        8,
    );
    // Atomics with addends that are powers of two: the final value says which were performed.
    let mut adds = Vec::new();
    let mut loads = Vec::new();
    let mut all = Vec::new();
    let t0 = b.now_ns();
    b.set_faults(
        (0..4)
            .map(|p| PortFault {
                port: p * 2,
                start_ns: t0 + 3_000 + p as u64 * 700,
                duration_ns: 30_000,
                blackout: p % 2 == 1,
            })
            .collect(),
    );
    // The stores of each (stream, round), by tag while outstanding, and how each ended.
    let mut stores = Vec::new();
    let mut store_status = std::collections::BTreeMap::new();
    let mut load_seen = Vec::new();
    for round in 0..40u64 {
        let now = b.now();
        for s in 0..8u32 {
            let addr = 0x10_0000 * u64::from(s + 1);
            let val = [(round as u8) ^ (s as u8); 32];
            let st = b
                .gpu_mut(0)
                .issue(now, store(1, addr, &val, Ordering::Stream(s)))
                .unwrap();
            stores.push((st, (s, round)));
            let l = b
                .gpu_mut(0)
                .issue(now, load(1, addr, 32, Ordering::Stream(s)))
                .unwrap();
            loads.push((l, (s, round)));
        }
        if round < 48 {
            let k = adds.len() as u64;
            let t = b
                .gpu_mut(0)
                .issue(now, fetch_add(1, 0x8000, 1 << k, Ordering::Unordered))
                .unwrap();
            adds.push((t, 1u64 << k));
        }
        // Take the completions of this round before the tags are reused.
        b.run_until(b.now_ns() + 1_000);
        let c = b.take_completions(0);
        for done in &c {
            if let Some(&(_, sr)) = stores.iter().find(|(t, _)| OpId::Ls(*t) == done.id) {
                store_status.insert(sr, done.status);
                stores.retain(|(t, _)| OpId::Ls(*t) != done.id);
            }
            if let Some(&(_, sr)) = loads.iter().find(|(t, _)| OpId::Ls(*t) == done.id) {
                //= docs/spec/endpoint.md#4-paths-and-load-balancing
                //= type=test
                //# EP-4-3 When a port stops being usable, every stream pinned to it MUST be pinned
                //# anew, and the requests it still holds MUST be moved as §9 says.
                //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
                //= type=test
                //# TXN-5-6 A request of an ordered stream that is sent again (TXN-5-2, TXN-5-3,
                //# TXN-5-4) MUST be sent on the stream's current path before every request of the
                //# stream issued after it is sent again
                //= docs/spec/transaction.md#4-ordering
                //= type=test
                //# TXN-4-2 A Load issued after a Store on the same path to an overlapping
                //# address MUST return the Store's bytes for the overlap
                if done.status == CompletionStatus::Ok {
                    match done.data {
                        CompletionData::Load(d) => load_seen.push((sr, d.as_slice().to_vec())),
                        other => panic!("{other:?}"),
                    }
                }
                loads.retain(|(t, _)| OpId::Ls(*t) != done.id);
            }
        }
        all.extend(c);
    }
    assert!(b.run_until_idle(10_000_000));
    all.extend(b.take_completions(0));
    // A load returns its own round's store when that store completed OK (path order, TXN-4-1),
    // and otherwise the store of that round or of an earlier one: a store of unknown fate was
    // performed once or not at all, and is never sent again (TXN-3-5).
    for ((s, round), got) in &load_seen {
        let val = |r: u64| vec![(r as u8) ^ (*s as u8); 32];
        if store_status.get(&(*s, *round)) == Some(&CompletionStatus::Ok) {
            assert_eq!(got, &val(*round), "stream {s} round {round}");
        } else {
            assert!(
                (0..=*round).any(|r| got == &val(r)),
                "stream {s} round {round}: {got:?}"
            );
        }
    }
    let mut performed_at_least = 0u64;
    let mut maybe = 0u64;
    for (t, a) in &adds {
        let done = all
            .iter()
            .rev()
            .find(|c| c.id == OpId::Ls(*t) && c.kind == ethlink_endpoint::OpKind::FetchAdd)
            .expect("every atomic completes");
        match done.status {
            CompletionStatus::Ok => performed_at_least |= a,
            //= docs/spec/transaction.md#3-statuses
            //= type=test
            //# TXN-3-5 A requester MUST complete with FATE_UNKNOWN, and MUST NOT retransmit, an
            //# operation that is not repeatable (a store, an RDMA write, an atomic) whose request
            //# was in a frame its link reported of unknown fate (LINK-6-1). (1.3: 1.2 retransmitted
            //# stores and RDMA writes; TXN-5-1 says why no longer.)
            CompletionStatus::FateUnknown | CompletionStatus::Timeout => maybe |= a,
            other => panic!("{other:?}"),
        }
    }
    let mut v = [0u8; 8];
    b.gpu(1)
        .memory()
        .read(Space::Global, 0x8000, &mut v)
        .unwrap();
    let v = u64::from_le_bytes(v);
    //= docs/spec/endpoint.md#9-ports-going-down-deadlines-and-busy
    //= type=test
    //# EP-9-7 A request lost with a port MUST be handled as a request of the operation that sent
    //# it, even when its tag has since passed to another operation: that operation MUST NOT be
    //# retried, moved or completed because of it.
    // Tags are reused every round while ports fail: each atomic was performed at most once and
    // only when it did not complete FATE_UNKNOWN or TIMEOUT, and every one completed.
    assert_eq!(
        v & performed_at_least,
        performed_at_least,
        "every OK atomic was performed once"
    );
    assert_eq!(
        v & !(performed_at_least | maybe),
        0,
        "nothing else was performed"
    );
    let c = b.gpu(0).counters();
    assert!(
        c.ports.iter().map(|p| p.downs).sum::<u64>() >= 4,
        "{:?}",
        c.ports
    );
    //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
    //= type=test
    //# TXN-5-1 An operation is **repeatable** when performing it again cannot change memory:
    //# loads, RDMA reads, Fences and FENCE requests. Stores, RDMA writes and atomics are not: only
    //# a repeatable operation is ever sent again after an attempt that may have been performed
    // Every load completed OK: loads are repeatable and were moved or retried. A store completed
    // OK or, lost with its link, FATE_UNKNOWN; it was never sent twice.
    let load = ethlink_endpoint::OpKind::Load;
    assert_eq!(
        c.completed_with(load, 0),
        c.completed_total(load),
        "{:?}",
        c.completed
    );
    let st = ethlink_endpoint::OpKind::Store;
    let fate = CompletionStatus::FateUnknown.class();
    let timeout = CompletionStatus::Timeout.class();
    assert_eq!(
        c.completed_with(st, 0) + c.completed_with(st, fate) + c.completed_with(st, timeout),
        c.completed_total(st),
        "{:?}",
        c.completed
    );
    assert!(
        c.completed_with(st, fate) > 0,
        "the cuts left stores of unknown fate"
    );
}

#[test]
fn without_a_path_operations_end_no_path_and_without_answers_timeout() {
    let mut b = pair_with(
        fast(0, Policy::Spray),
        fast(1, Policy::Spray),
        Faults::default(),
        9,
    );
    let n = b.gpu(0).port_count();
    let t0 = b.now_ns();
    // Every port cut for a long time: nothing can be sent.
    b.set_faults(
        (0..n)
            .map(|p| PortFault {
                port: p,
                start_ns: t0 + 10,
                duration_ns: 1_000_000,
                blackout: false,
            })
            .collect(),
    );
    b.run_until(t0 + 100);
    let now = b.now();
    let s = b
        .gpu_mut(0)
        .issue(now, store(1, 0, &[9; 8], Ordering::Unordered))
        .unwrap();
    let w = b.gpu_mut(0).post(now, write_desc(1, 0, 0, 4096)).unwrap();
    b.run_until(t0 + 200_000);
    let c = by_id(&b.take_completions(0));
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-6 A requester MUST complete with NO_PATH an operation none of whose requests could
    //# be sent before its deadline because no usable path to the target existed.
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-6 (§9, TXN-3-6) An operation none of whose requests was ever sent MUST complete
    //# NO_PATH when its deadline passes;
    assert_eq!(c[&OpId::Ls(s)].status, CompletionStatus::NoPath);
    assert_eq!(c[&OpId::Rdma(w)].status, CompletionStatus::NoPath);
    let waited = c[&OpId::Ls(s)].completed.as_nanos() - c[&OpId::Ls(s)].issued.as_nanos();
    assert!((20_000..=21_000).contains(&waited), "deadline {waited} ns");

    // Now every frame vanishes while the links stay physically up: requests go out and nothing
    // comes back.
    let mut b = pair_with(
        fast(0, Policy::Spray),
        fast(1, Policy::Spray),
        Faults::default(),
        10,
    );
    let t0 = b.now_ns();
    b.set_faults(
        (0..n)
            .map(|p| PortFault {
                port: p,
                start_ns: t0 + 1,
                duration_ns: 10_000_000,
                blackout: true,
            })
            .collect(),
    );
    let now = b.now();
    let l = b
        .gpu_mut(0)
        .issue(now, load(1, 0, 8, Ordering::Unordered))
        .unwrap();
    let a = b
        .gpu_mut(0)
        .issue(now, fetch_add(1, 64, 1, Ordering::Unordered))
        .unwrap();
    let r = b.gpu_mut(0).post(now, read_desc(1, 0, 0, 4096)).unwrap();
    assert!(b.run_until_idle(2_000_000));
    let c = by_id(&b.take_completions(0));
    //= docs/spec/transaction.md#3-statuses
    //= type=test
    //# TXN-3-7 A requester MUST complete with TIMEOUT an operation that has no final response when
    //# its deadline passes and has no retry left, or that is not repeatable.
    let load_done = c[&OpId::Ls(l)];
    assert_eq!(load_done.status, CompletionStatus::Timeout);
    //= docs/spec/transaction.md#5-operations-that-can-no-longer-complete
    //= type=test
    //# TXN-5-4 A requester MUST give every operation a deadline, op_timeout after it was issued and
    //# again after each retry and each sign of progress (an RDMA segment sent or a response
    //# received). When the deadline passes a repeatable operation MUST be retried whole on a usable
    //# path, if it has retries left; otherwise it MUST complete with TIMEOUT (or NO_PATH, TXN-3-6).
    //# While an operation waits to be sent again (a BUSY back-off, or a request of unknown fate
    //# waiting out TXN-5-7) its deadline does not run; it gets a new one when it is sent.
    assert_eq!(load_done.retries, 3, "max_retries retries before TIMEOUT");
    assert!(matches!(
        c[&OpId::Ls(a)].status,
        CompletionStatus::Timeout | CompletionStatus::FateUnknown
    ));
    assert_eq!(c[&OpId::Ls(a)].retries, 0, "an atomic is never sent twice");
    //= docs/spec/endpoint.md#9-ports-going-down-and-deadlines
    //= type=test
    //# EP-9-3 An operation's deadline MUST be checked by the endpoint's timer; an operation
    //# whose deadline passes MUST be retried or completed as TXN-5-4 says.
    assert_eq!(c[&OpId::Rdma(r)].status, CompletionStatus::Timeout);
    assert!(c[&OpId::Rdma(r)].retries >= 1);
}

#[test]
fn a_stream_keeps_one_port_and_responses_come_back_on_it() {
    let mut b = pair(Policy::RoundRobin, Faults::default(), 11);
    let before: Vec<u64> = b
        .gpu(0)
        .counters()
        .ports
        .iter()
        .map(|p| p.txns_sent)
        .collect();
    let now = b.now();
    for k in 0..100u64 {
        b.gpu_mut(0)
            .issue(now, store(1, k * 8, &[1; 8], Ordering::Stream(42)))
            .unwrap();
    }
    assert!(b.run_until_idle(1_000_000));
    let after: Vec<u64> = b
        .gpu(0)
        .counters()
        .ports
        .iter()
        .map(|p| p.txns_sent)
        .collect();
    let used: Vec<usize> = (0..after.len()).filter(|&i| after[i] > before[i]).collect();
    //= docs/spec/endpoint.md#4-paths-and-load-balancing
    //= type=test
    //# EP-4-1 All requests of an ordered stream that are outstanding at once MUST use one path
    assert_eq!(used.len(), 1, "{before:?} -> {after:?}");
    //= docs/spec/endpoint.md#4-paths-and-load-balancing
    //= type=test
    //# EP-4-4 A response MUST be sent on the port its request arrived on, unless that port is no
    //# longer usable (TXN-5-5).
    let answered: Vec<u64> = b
        .gpu(1)
        .counters()
        .ports
        .iter()
        .map(|p| p.txns_sent)
        .collect();
    assert_eq!(answered[used[0]], 100, "{answered:?}");
    assert_eq!(answered.iter().sum::<u64>(), 100);
    //= docs/spec/endpoint.md#10-counters
    //= type=test
    //# EP-10-1 An endpoint MUST keep every counter of Table EP-T2 and count in it exactly what its
    //# row says.
    let c = b.gpu(0).counters();
    assert_eq!(c.completed_with(ethlink_endpoint::OpKind::Store, 0), 100);
    assert_eq!(c.ls_bytes_written, 800);
    let stacks = c.stacks(2);
    assert_eq!(stacks.len(), 4);
    assert_eq!(
        stacks.iter().map(|s| s.txns_sent).sum::<u64>(),
        after.iter().sum::<u64>()
    );
    assert_eq!(b.gpu(1).counters().requests_served, 100);
}

#[test]
fn a_fence_completes_after_everything_before_it() {
    let mut b = pair(Policy::Spray, Faults::default(), 12);
    let now = b.now();
    let w = b
        .gpu_mut(0)
        .post(now, write_desc(1, 0, 0, 1 << 20))
        .unwrap();
    let s = b
        .gpu_mut(0)
        .issue(now, store(1, 1 << 21, &[5; 64], Ordering::Stream(1)))
        .unwrap();
    let f = b.gpu_mut(0).fence(now).unwrap();
    let after = b
        .gpu_mut(0)
        .issue(now, store(1, 1 << 22, &[6; 64], Ordering::Stream(2)))
        .unwrap();
    assert!(b.run_until_idle(10_000_000));
    let c = b.take_completions(0);
    let pos = |id| c.iter().position(|x| x.id == id).unwrap();
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-5 A Fence operation MUST complete only after every operation the requester issued before it,
    //# on every path, is complete. Operations issued after a fence MAY be performed before it
    //# completes.
    assert!(pos(OpId::Fence(f)) > pos(OpId::Rdma(w)));
    assert!(pos(OpId::Fence(f)) > pos(OpId::Ls(s)));
    assert!(
        pos(OpId::Ls(after)) < pos(OpId::Fence(f)),
        "later stores do not wait"
    );
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-6 A fence MUST complete once every operation issued before it (load-store and RDMA)
    //# is complete (TXN-4-5). It sends no request and holds no tag.
    assert_eq!(c[pos(OpId::Fence(f))].status, CompletionStatus::Ok);
    assert_eq!(b.gpu(1).counters().requests_served, 128 + 2);
}

#[test]
fn packing_keeps_the_order_of_a_path() {
    let cfg = |id| Config {
        pack_delay: Duration::from_nanos(500),
        ..config(id, Policy::Hash)
    };
    let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 13);
    let now = b.now();
    let mut tags = std::collections::BTreeSet::new();
    for k in 0..200u64 {
        let t = b
            .gpu_mut(0)
            .issue(now, store(1, 0x40, &k.to_le_bytes(), Ordering::Stream(3)))
            .unwrap();
        //= docs/spec/endpoint.md#5-load-store-unit
        //= type=test
        //# EP-5-1 Each load-store operation MUST get a tag in `0 .. lsu_tags` that no other
        //# outstanding operation of this GPU holds
        assert!(
            t < 1024 && tags.insert(t),
            "tag {t} reused while outstanding"
        );
    }
    assert!(b.run_until_idle(1_000_000));
    //= docs/spec/endpoint.md#7-packing
    //= type=test
    //# EP-7-3 Packing MUST keep the order of the transactions of one path.
    assert_eq!(read_mem(&b, 1, 0x40, 8), 199u64.to_le_bytes());
    assert!(b.gpu(0).counters().packed_frames > 0);
}

#[test]
fn rdma_traffic_does_not_hold_back_load_store() {
    let mut b = pair(Policy::Spray, Faults::default(), 14);
    let now = b.now();
    for k in 0..32u64 {
        b.gpu_mut(0)
            .post(now, write_desc(1, k << 20, k << 20, 1 << 20))
            .unwrap();
    }
    b.run_until(b.now_ns() + 2_000);
    let now = b.now();
    let l = b
        .gpu_mut(0)
        .issue(now, load(1, 0x7000_0000, 64, Ordering::Unordered))
        .unwrap();
    while !b.completions(0).iter().any(|c| c.id == OpId::Ls(l)) {
        assert!(b.step(u64::MAX), "the load completes");
    }
    let c = *b
        .completions(0)
        .iter()
        .find(|c| c.id == OpId::Ls(l))
        .unwrap();
    let lat = c.completed.as_nanos() - c.issued.as_nanos();
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-3 The endpoint MUST keep its own queue of frames per port and VC and submit a frame
    //# to the port's link only when the link accepts it; a frame refused by the link (queue
    //# full) MUST stay first in the endpoint's queue.
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-6 Queues of different VCs MUST NOT block each other: a frame that waits on one VC
    //# MUST NOT hold back the frames of another.
    // 32 MiB of writes take about 100 us on 8 x 400 Gb/s; the load overtakes them on its VC.
    assert!(lat < 5_000, "load latency {lat} ns behind 32 MiB of RDMA");
    assert!(
        b.gpu(0).rdma_outstanding() > 0,
        "the writes were still running"
    );
    assert!(b.run_until_idle(10_000_000));
}

#[test]
fn configuration_is_checked() {
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-1 Each port's link MUST have at least 4 VCs
    let mut c = config(0, Policy::Spray);
    c.link.vcs = 3;
    let e = ethlink_endpoint::Endpoint::new(c).unwrap_err();
    assert_eq!(e.field, "link.vcs");
    for (name, f) in [
        (
            "segment",
            (|c: &mut Config| c.segment = 1000) as fn(&mut Config),
        ),
        ("segment", |c| c.segment = 8960),
        ("read_chunk", |c| c.read_chunk = 10_000),
        ("stacks", |c| c.stacks = 17),
        ("lsu_tags", |c| c.lsu_tags = 0),
        ("tag_quarantine", |c| {
            c.tag_quarantine = Duration::from_nanos(10)
        }),
        ("op_timeout", |c| c.op_timeout = Duration::from_nanos(10)),
        ("frame_lifetime", |c| {
            c.frame_lifetime = Duration::from_nanos(999)
        }),
        ("op_timeout", |c| c.op_timeout = Duration::from_micros(150)),
        ("tag_quarantine", |c| {
            c.tag_quarantine = Duration::from_micros(399)
        }),
        ("tag_quarantine", |c| {
            c.op_timeout = Duration::from_micros(400);
            c.tag_quarantine = Duration::from_micros(599)
        }),
        ("busy_backoff", |c| {
            c.busy_backoff = Duration::from_nanos(99)
        }),
        ("max_reassembly_blocks", |c| c.max_reassembly_blocks = 31),
        ("segment", |c| c.link.mfs = 8192 + 63),
    ] {
        let mut c = config(0, Policy::Spray);
        f(&mut c);
        let e = ethlink_endpoint::Endpoint::new(c).unwrap_err();
        assert_eq!(e.field, name, "{e}");
    }
}

#[test]
fn a_response_without_a_port_is_dropped_after_the_deadline() {
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-13 (§9, TXN-5-5) A response whose port stops being usable before it is sent MUST be
    //# sent on a usable port to its requester chosen by §4 with the response's tag as the key, or
    //# discarded after `op_timeout` as EP-8-5 says.
    let one = |id| Config {
        stacks: 1,
        ports: 1,
        pack_delay: Duration::from_nanos(200),
        ..fast(id, Policy::Hash)
    };
    let mut b = pair_with(one(0), one(1), Faults::default(), 15);
    let now = b.now();
    let t0 = b.now_ns();
    let l = b
        .gpu_mut(0)
        .issue(now, load(1, 0x100, 64, Ordering::Unordered))
        .unwrap();
    // The request waits 200 ns to be packed and reaches GPU 1 after about 240 ns; its response
    // is being packed (another 200 ns) when the only port is cut for longer than op_timeout.
    b.set_faults(vec![PortFault {
        port: 0,
        start_ns: t0 + 300,
        duration_ns: 100_000,
        blackout: false,
    }]);
    b.run_until(t0 + 60_000);
    //= docs/spec/endpoint.md#8-target
    //= type=test
    //# EP-8-5 A response that waits for a usable port to its requester for longer than
    //# `op_timeout` MUST be discarded and counted; the requester's deadline ends the operation.
    assert_eq!(b.gpu(1).counters().responses_expired, 1);
    assert_eq!(b.gpu(1).counters().requests_served, 1);
    assert!(b.run_until_idle(1_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, OpId::Ls(l));
    assert_ne!(c[0].status, CompletionStatus::Ok, "{:?}", c[0]);
}

#[test]
fn a_read_window_keeps_a_big_read_within_the_targets_read_jobs() {
    let run = |window: u32| {
        let cfg = |id| Config {
            max_read_jobs: 8,
            read_window: window,
            ..config(id, Policy::Spray)
        };
        let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 16);
        let data = pattern(77, 4 << 20);
        b.gpu_mut(1)
            .memory_mut()
            .write(Space::Global, 0, &data)
            .unwrap();
        let now = b.now();
        b.gpu_mut(0).post(now, read_desc(1, 0, 0, 4 << 20)).unwrap();
        assert!(b.run_until_idle(10_000_000));
        let c = b.take_completions(0);
        (c[0].status, read_mem(&b, 0, 0, 4 << 20) == data)
    };
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-7 An RDMA read of length L MUST be asked for in chunks of `read_chunk` bytes (the
    //# last shorter), one RDMA_READ with its own tag per chunk; at most `read_window` chunks of
    //# one read and `rdma_tags` chunks of all reads are outstanding at once
    assert_eq!(run(4), (CompletionStatus::Ok, true));
    // A window wider than the target's read jobs: chunks beyond them are refused BUSY.
    assert_eq!(
        run(64).0,
        CompletionStatus::Remote(ethlink_protocol::Status::Busy)
    );
}

#[test]
fn a_port_whose_mfs_cannot_hold_a_segment_is_not_usable() {
    let a = config(0, Policy::Spray);
    let mut bcfg = config(1, Policy::Spray);
    bcfg.link.mfs = 4096;
    bcfg.link.replay_max_bytes = 58_768;
    bcfg.segment = 3840;
    bcfg.read_chunk = 3840 * 16;
    let b = pair_with(a, bcfg, Faults::default(), 17);
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-2 A port is **usable** while its link is UP with at least 4 VCs agreed and an
    //# agreed MFS that holds a tagged frame of one full segment (`segment` + 64 bytes).
    for i in 0..8 {
        assert!(b.gpu(0).link(i).unwrap().is_up());
        assert!(
            !b.gpu(0).is_usable(i),
            "8192 B segments do not fit 4096 B frames"
        );
        assert!(b.gpu(1).is_usable(i), "3840 B segments do");
    }
}

#[test]
fn timer_relations_are_checked() {
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-15 (§1) An endpoint MUST refuse, with an error that names the parameter, a
    //# configuration that breaks a relation of EP-1-3, never silently correct it; a conformance
    //# setup it cannot take is answered `refused` and the case is Unsupported
    //# (docs/conformance.md).
    //= docs/spec/endpoint.md#12-timers-and-their-relations
    //= type=test
    //# EP-1-3 An endpoint MUST refuse a configuration that breaks a relation of Table EP-T1:
    //# lsu_tags + rdma_tags <= 65536, read_chunk a multiple of segment, pack_delay < op_timeout,
    //# op_timeout >= frame_lifetime, tag_quarantine >= 2 * frame_lifetime and tag_quarantine >=
    //# frame_lifetime + op_timeout.
    //= docs/spec/endpoint.md#12-timers-and-their-relations
    //= type=test
    //# EP-1-2 `frame_lifetime` MUST be at least the longest time a DATA frame can spend between
    //# its first transmission and its delivery to the destination endpoint
    //= docs/spec/endpoint.md#12-timers-and-their-relations
    //= type=test
    //# EP-1-4 Endpoints that address one another MUST be configured with one `frame_lifetime`,
    //# and the `tag_quarantine` of every requester MUST be at least `frame_lifetime` plus the
    //# `op_timeout` of every target it addresses.
    let ok = |f: fn(&mut Config)| {
        let mut c = config(0, Policy::Spray);
        f(&mut c);
        ethlink_endpoint::Endpoint::new(c).map(|_| ())
    };
    assert!(ok(|_| {}).is_ok());
    // The edges are allowed.
    assert!(
        ok(|c| {
            c.frame_lifetime = Duration::from_micros(100);
            c.op_timeout = Duration::from_micros(100);
            c.tag_quarantine = Duration::from_micros(200);
        })
        .is_ok()
    );
    assert!(
        ok(|c| {
            c.op_timeout = Duration::from_micros(300);
            c.tag_quarantine = Duration::from_micros(500);
        })
        .is_ok()
    );
    assert_eq!(
        ok(|c| c.op_timeout = Duration::from_micros(301))
            .unwrap_err()
            .field,
        "tag_quarantine"
    );
    // The largest segment fits an MFS of segment + 64, not one byte less.
    assert!(ok(|c| c.link.mfs = 8192 + 64).is_ok());
}

/// A port whose agreed MFS cannot carry a tagged frame of one full segment is not usable; one
/// whose agreed MFS is exactly `segment` + 64 is.
#[test]
fn a_usable_port_carries_a_tagged_full_segment() {
    let small = |id| {
        let mut c = config(id, Policy::Spray);
        c.stacks = 1;
        c.ports = 1;
        c.segment = 4096;
        c.read_chunk = 4096;
        c.link.mfs = 4096 + 64;
        c
    };
    let mut big = small(0);
    big.segment = 8192;
    big.read_chunk = 8192;
    big.link.mfs = 9216;
    // Agreed MFS 4160: enough for GPU 1's 4096-byte segments, not for GPU 0's 8192.
    let b = pair_with(big, small(1), Faults::default(), 3);
    assert!(b.gpu(0).link(0).is_some_and(|l| l.is_up()));
    assert_eq!(
        b.gpu(0).link(0).and_then(|l| l.agreed()).map(|a| a.mfs),
        Some(4160)
    );
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-2 A port is **usable** while its link is UP with at least 4 VCs agreed and an
    //# agreed MFS that holds a tagged frame of one full segment (`segment` + 64 bytes).
    assert!(!b.gpu(0).is_usable(0));
    assert!(b.gpu(1).is_usable(0));
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-5 An endpoint's configured MFS MUST hold a frame of one full segment with an
    //# 802.1Q tag (`segment` + 64 bytes).
    let mut c = small(2);
    c.link.mfs = 4096 + 63;
    assert_eq!(
        ethlink_endpoint::Endpoint::new(c).unwrap_err().field,
        "segment"
    );
}

/// A reset forgets every operation, queue and counter, keeps the memory, and brings no port up
/// before `tag_quarantine` has passed.
#[test]
fn reset_clears_state_and_waits_before_ports_come_up() {
    let mut b = pair(Policy::Spray, Faults::default(), 4);
    let now = b.now();
    b.gpu_mut(0)
        .issue(now, store(1, 0x40, &[7; 8], Ordering::Unordered))
        .unwrap();
    b.gpu_mut(0)
        .post(now, write_desc(1, 0, 0x10_0000, 1 << 20))
        .unwrap();
    b.run_until(b.now_ns() + 2_000);
    assert!(b.gpu(0).outstanding() > 0);
    assert!(b.gpu(0).counters().ports[0].frames_sent > 0);
    let mut ep = ethlink_endpoint::Endpoint::new(config(0, Policy::Spray)).unwrap();
    ep.memory_mut()
        .register(ethlink_endpoint::Region::new(
            Space::Global,
            0,
            1 << 20,
            KEY,
            ethlink_endpoint::Perms::ALL,
        ))
        .unwrap();
    ep.memory_mut().write(Space::Global, 0x80, &[5; 4]).unwrap();
    let t0 = ethlink_link::Instant::from_nanos(1_000);
    ep.port_up(t0, 0);
    ep.issue(t0, store(1, 0x40, &[7; 8], Ordering::Unordered))
        .unwrap();
    let q = ep.config().tag_quarantine.as_nanos() as u64;
    let t1 = ethlink_link::Instant::from_nanos(5_000);
    ep.reset(t1).unwrap();
    //= docs/spec/endpoint.md#12-reset-and-identity
    //= type=test
    //# EP-12-1 A reset MUST end every operation outstanding, free every tag, empty every queue
    //# of the endpoint and of its ports' links, forget every reassembly, read job, held
    //# response and waiting fence, set every counter to zero and put every port's link in OFF.
    assert_eq!(ep.outstanding(), 0);
    assert_eq!(ep.ls_outstanding(), 0);
    assert!(ep.is_idle());
    assert!(!ep.link(0).unwrap().is_up());
    assert_eq!(ep.counters(), &ethlink_endpoint::Counters::new(8));
    assert_eq!(ep.memory().regions(Space::Global).count(), 1);
    let mut v = [0; 4];
    ep.memory().read(Space::Global, 0x80, &mut v).unwrap();
    assert_eq!(v, [5; 4], "a reset keeps the memory");
    //= docs/spec/endpoint.md#12-reset-and-identity
    //= type=test
    //# EP-12-2 After a reset an endpoint MUST NOT bring a port's link up (send INIT) before
    //# `tag_quarantine` has passed since the reset
    // Port 0's physical link stayed up through the reset; port 1 comes up during the quiet
    // time. Neither sends anything before it ends.
    ep.port_up(t1, 1);
    let mut buf = vec![0; 9216];
    let mut t = t1;
    while t.as_nanos() < 5_000 + q {
        ep.handle_timeout(t);
        for port in [0, 1] {
            assert!(
                ep.poll_transmit(t, port, &mut buf).unwrap().is_none(),
                "a frame on port {port} at {t} during the quiet time"
            );
        }
        t = ep
            .poll_timeout()
            .unwrap_or(ethlink_link::Instant::from_nanos(u64::MAX))
            .min(ethlink_link::Instant::from_nanos(5_000 + q));
    }
    ep.handle_timeout(t);
    for port in [0, 1] {
        assert!(
            ep.poll_transmit(t, port, &mut buf).unwrap().is_some(),
            "no INIT on port {port} after the quiet time"
        );
    }
    assert!(ep.poll_transmit(t, 2, &mut buf).unwrap().is_none());
}

/// A write's segments take their bytes from local memory when each is built, not when the write
/// is posted: bytes changed after the post but before their segment was built arrive changed.
//= type=test
//# EP-6-19 The data of a segment MUST be read from local memory when the segment is built.
#[test]
fn segments_read_local_memory_when_they_are_built() {
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-10 *Internal.* (§6, EP-6-19) An RDMA write segment MUST be built, and its bytes read
    //# from local memory, when it is put in the endpoint's queue of its port and VC, which happens
    //# while that queue holds fewer than port_queue bytes (EP-3-3).
    let mut b = pair(Policy::Spray, Faults::default(), 21);
    let len = 4usize << 20;
    let first = pattern(7, len);
    let global = ethlink_protocol::Space::Global;
    b.gpu_mut(0)
        .memory_mut()
        .write(global, 0x100_0000, &first)
        .unwrap();
    let now = b.now();
    b.gpu_mut(0)
        .post(now, write_desc(1, 0x100_0000, 0x800_0000, len as u64))
        .unwrap();
    // The write goes as four writes of `write_chunk` (1 MiB) at once, and the port queues hold
    // far less than 3 MiB: the last 256 KiB of the last chunk cannot have been built yet.
    let tail_at = len - (256 << 10);
    let tail = pattern(8, 256 << 10);
    b.gpu_mut(0)
        .memory_mut()
        .write(global, 0x100_0000 + tail_at as u64, &tail)
        .unwrap();
    assert!(b.run_until_idle(20_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, CompletionStatus::Ok);
    assert_eq!(read_mem(&b, 1, 0x800_0000, tail_at), first[..tail_at]);
    assert_eq!(
        read_mem(&b, 1, 0x800_0000 + tail_at as u64, 256 << 10),
        tail
    );
}

/// The data pattern crosses the network as bytes and stays a description at both ends: a
/// described source is written to the other GPU and read back, its segments sprayed over two
/// ports through damaged and duplicated frames, and each copy ends as one record, no literal
/// page, holding exactly the source's bytes.
#[test]
fn described_data_stays_described_across_rdma() {
    use ethlink_endpoint::pattern::Pattern;
    let faults = Faults {
        loss: 0.02,
        duplicate: 0.02,
        ..Faults::default()
    };
    let mut b = pair(Policy::Spray, faults, 9);
    // Within one `write_chunk`: a chunk that arrives before the one to its left, as bytes with
    // no word from their sender, cannot be told to continue the pattern.
    const LEN: u64 = (1 << 20) - 300;
    let p = Pattern::new(0x5EED, 0);
    b.gpu_mut(0)
        .memory_mut()
        .write_pattern(Space::Global, 0x10_0000, LEN, p)
        .unwrap();
    let mut want = vec![0u8; LEN as usize];
    p.fill(&mut want);
    let now = b.now();
    b.gpu_mut(0)
        .post(now, write_desc(1, 0x10_0000, 0x20_0000, LEN))
        .unwrap();
    assert!(b.run_until_idle(20_000_000));
    let now = b.now();
    b.gpu_mut(0)
        .post(now, read_desc(1, 0x40_0000, 0x20_0000, LEN))
        .unwrap();
    assert!(b.run_until_idle(40_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 2, "{c:?}");
    assert!(c.iter().all(|c| c.status == CompletionStatus::Ok), "{c:?}");
    let replays: u64 = (0..2)
        .flat_map(|g| {
            let ep = b.gpu(g);
            (0..ep.port_count())
                .filter_map(move |i| ep.link(i).map(|l| l.counters().frames_replayed))
        })
        .sum();
    assert!(replays > 0, "frames were damaged and replayed");
    for (g, at) in [(1usize, 0x20_0000u64), (0, 0x40_0000)] {
        let m = b.gpu(g).memory();
        assert_eq!(m.pages(Space::Global).count(), 0, "GPU {g}");
        let d: Vec<_> = m.described(Space::Global).filter(|r| r.0 == at).collect();
        assert_eq!(d, [(at, at + LEN, p)], "GPU {g}");
        assert_eq!(read_mem(&b, g, at, LEN as usize), want, "GPU {g}");
    }
}

/// With no retry left, a load whose request had unknown fate or passed its deadline ends
/// TIMEOUT, and a store FATE_UNKNOWN or TIMEOUT; neither is sent twice. With retries, the load
/// is sent again on another port.
#[test]
fn without_retries_left_a_lost_load_times_out_and_a_lost_store_is_not_sent_again() {
    for max_retries in [0u8, 3] {
        let cfg = |id| Config {
            max_retries,
            ..fast(id, Policy::Hash)
        };
        let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 31);
        let t0 = b.now_ns();
        // Port 0 of GPU 0 goes dark for long: its frames vanish and its link gives up.
        b.set_faults(vec![PortFault {
            port: 0,
            start_ns: t0 + 10,
            duration_ns: 1_000_000,
            blackout: true,
        }]);
        b.run_until(t0 + 20);
        let now = b.now();
        let l = b
            .gpu_mut(0)
            .issue(now, load(1, 0, 8, Ordering::Port(0)))
            .unwrap();
        let s = b
            .gpu_mut(0)
            .issue(now, store(1, 64, &[7; 8], Ordering::Port(0)))
            .unwrap();
        assert!(b.run_until_idle(5_000_000));
        let c = by_id(&b.take_completions(0));
        let (ld, st) = (c[&OpId::Ls(l)], c[&OpId::Ls(s)]);
        //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
        //= type=test
        //# EP-13-7 (§9, TXN-5-3) A repeatable operation whose request had unknown fate and that
        //# has no retry left MUST complete TIMEOUT; one that is not repeatable completes
        //# FATE_UNKNOWN whatever its retries (TXN-3-5).
        if max_retries == 0 {
            assert_eq!(ld.status, CompletionStatus::Timeout, "{ld:?}");
            assert_eq!(ld.retries, 0);
        } else {
            //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
            //= type=test
            //# EP-13-4 (§9) A request sent again MUST go: after unknown fate (EP-9-2) and after a
            //# passed deadline (TXN-5-4), on a usable port other than the one the attempt went on,
            //# chosen by §4 (an ordered stream is pinned anew there); after
            assert_eq!(ld.status, CompletionStatus::Ok, "{ld:?}");
            assert!(ld.retries >= 1, "{ld:?}");
        }
        assert!(
            matches!(
                st.status,
                CompletionStatus::FateUnknown | CompletionStatus::Timeout
            ),
            "{st:?}"
        );
        assert_eq!(
            st.retries, 0,
            "a store is never sent again after it may have been performed"
        );
    }
}

/// A load of an ordered stream issued while an earlier load of the stream is held for
/// `frame_lifetime` after a loss of unknown fate waits behind it without its deadline running:
/// sent when the held one is, it completes OK with no retry.
#[test]
fn a_request_held_behind_its_stream_keeps_no_deadline_while_it_waits() {
    let cfg = |id| Config {
        stacks: 1,
        ports: 2,
        pack_delay: Duration::ZERO,
        ..fast(id, Policy::Hash)
    };
    let mut b = pair_with(cfg(0), cfg(1), Faults::default(), 33);
    let t0 = b.now_ns();
    let sent = |b: &ethlink_endpoint::harness::BackToBack| -> Vec<u64> {
        (0..2)
            .map(|p| {
                b.gpu(0)
                    .link(p)
                    .map_or(0, |l| l.counters().tx_frames_total())
            })
            .collect()
    };
    let before = sent(&b);
    let now = b.now();
    let a = b
        .gpu_mut(0)
        .issue(now, load(1, 0, 8, Ordering::Stream(0)))
        .unwrap();
    // The stream's port is cut while the load's frame waits for its ACK: it is lost with its
    // link, of unknown fate.
    let mut t = t0;
    let port = loop {
        t += 10;
        b.run_until(t);
        let after = sent(&b);
        if let Some(p) = (0..2).find(|&p| after[p] > before[p]) {
            break p;
        }
        assert!(t < t0 + 2_000, "the load never went out");
    };
    b.set_faults(vec![PortFault {
        port,
        start_ns: t + 1,
        duration_ns: 1_000_000,
        blackout: false,
    }]);
    // Until the link reports the loss: the load is then held for `frame_lifetime` (EP-9-6).
    let mut t = t0 + 1;
    while b.gpu(0).counters().retries == 0 && t < t0 + 200_000 {
        t += 100;
        b.run_until(t);
    }
    assert!(b.gpu(0).counters().retries > 0, "the loss was reported");
    let now = b.now();
    let c2 = b
        .gpu_mut(0)
        .issue(now, load(1, 8, 8, Ordering::Stream(0)))
        .unwrap();
    assert!(b.run_until_idle(2_000_000));
    let c = by_id(&b.take_completions(0));
    let (first, second) = (c[&OpId::Ls(a)], c[&OpId::Ls(c2)]);
    assert_eq!(first.status, CompletionStatus::Ok, "{first:?}");
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-8 (§9) A request waiting behind an earlier request of its ordered stream that is held
    //# for `frame_lifetime` (EP-9-6) is waiting to be sent: its deadline MUST NOT run while it
    //# waits, and it MUST get a new deadline `op_timeout` after it is sent.
    assert_eq!(
        (second.status, second.retries),
        (CompletionStatus::Ok, 0),
        "{second:?}"
    );
    // It waited the hold out: it completed no earlier than `frame_lifetime` after its issue,
    // that is after its deadline would have passed.
    let waited = second.completed.as_nanos() - second.issued.as_nanos();
    assert!(waited >= 19_000, "waited {waited} ns");
}
