//! Wall-clock cost of the endpoint: load-store operations per second and RDMA goodput through two
//! GPUs back to back.
//!
//! Both groups drive a [`BackToBack`] pair (GPU 0 and GPU 1, default configuration: 4 stacks x
//! 2 ports, spray policy, 1024 load-store tags, 400 Gb/s and 5 m of cable per port) with a
//! read-write-atomic region over the first 4 GiB of global memory on both GPUs. The pair lives
//! across iterations; simulated time runs on. What is measured is the wall time of the whole
//! simulation: both endpoints, every link end, the wires and the fault injector.
//!
//! Groups:
//! - `load_store`: one iteration issues [`LS_BATCH`] operations from GPU 0 to GPU 1, alternately
//!   a 64 B store and a 64 B load, each at its own address, then runs the pair until both GPUs
//!   are idle and counts the completions. Every tag is kept busy: when issue is refused with
//!   `TagsExhausted` the simulation steps until a tag is free and the issue is tried again.
//!   `unordered` issues every operation unordered; `ordered` spreads them over
//!   [`STREAMS`] ordered streams. Each runs on a loss-free wire and on one where a DATA frame
//!   arrives damaged with probability 1e-3 (so the links replay). Throughput: operations.
//! - `rdma_engine`: one iteration posts RDMA writes from GPU 0 to GPU 1 (64 x 4 KiB or 8 x 1 MiB)
//!   or RDMA reads by GPU 0 of GPU 1's memory (8 x 1 MiB), all at once, and runs the pair until
//!   every descriptor has completed. Loss-free wire. Throughput: bytes moved.
//!
//! Before timing, each case runs once with checks: every operation completed exactly once with
//! OK, the stored and written bytes arrived, the loaded and read bytes are the ones at the
//! source, and the lossy runs did lose and replay frames.
//!
//! Run: `cargo bench -p ethlink-endpoint --bench endpoint`.

use std::collections::{HashMap, VecDeque};
use std::hint::black_box;
use std::time::Duration as StdDuration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use ethlink_endpoint::harness::BackToBack;
use ethlink_endpoint::{
    Bytes, Completion, CompletionData, CompletionStatus, Config, IssueError, LsOp, LsRequest, OpId,
    Ordering, Perms, RdmaDesc, RdmaDir, Region, Remote,
};
use ethlink_link::harness::{Faults, Wire};
use ethlink_protocol::{GpuId, Space};

/// Key of the region of global memory at 0 .. 4 GiB on both GPUs.
const KEY: u32 = 0x1234_5678;
/// Length of that region.
const GLOBAL_LEN: u64 = 1 << 32;
/// Load-store operations per iteration: four times the default tag space, so that issue runs
/// into the tag limit and waits for completions.
const LS_BATCH: u64 = 4096;
/// Bytes of every load and store.
const LS_LEN: usize = 64;
/// Where the stores of GPU 0 land on GPU 1.
const STORE_BASE: u64 = 0x0100_0000;
/// Where the loads of GPU 0 read on GPU 1 (filled with a pattern at set-up).
const LOAD_BASE: u64 = 0x0200_0000;
/// Ordered streams of the `ordered` cases.
const STREAMS: u32 = 16;
/// Probability that a DATA frame is damaged in the lossy cases.
const LOSS: f64 = 1e-3;
/// Source of RDMA writes on GPU 0 and destination of RDMA reads.
const LOCAL_BASE: u64 = 0x1000_0000;
/// Destination of RDMA writes on GPU 1 and source of RDMA reads.
const REMOTE_BASE: u64 = 0x2000_0000;
/// Simulated time an iteration may take at most, ns.
const SIM_LIMIT_NS: u64 = 1_000_000_000;

fn gpu(v: u16) -> GpuId {
    GpuId::new(v).expect("gpu id")
}

/// GPUs 0 and 1 with the default configuration, the global region on both, over a wire with
/// `loss`; every port brought up.
fn pair(loss: f64) -> BackToBack {
    let cfg = |id| Config {
        gpu: gpu(id),
        ..Config::default()
    };
    let wire = Wire {
        faults: Faults {
            loss,
            ..Faults::default()
        },
        ..Wire::default()
    };
    let mut b = BackToBack::new(cfg(0), cfg(1), wire, 7).expect("back to back");
    for e in 0..2 {
        b.gpu_mut(e)
            .memory_mut()
            .register(Region {
                space: Space::Global,
                base: 0,
                len: GLOBAL_LEN,
                key: KEY,
                perms: Perms::ALL,
            })
            .expect("global region");
    }
    b.run_until(20_000);
    for e in 0..2 {
        for p in 0..b.gpu(e).port_count() {
            assert!(b.gpu(e).is_usable(p), "GPU {e} port {p} did not come up");
        }
    }
    b
}

fn remote(addr: u64) -> Remote {
    Remote {
        gpu: gpu(1),
        space: Space::Global,
        key: KEY,
        addr,
    }
}

/// A deterministic pattern for `len` bytes named by `seed`.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn read_mem(b: &BackToBack, e: usize, addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    b.gpu(e)
        .memory()
        .read(Space::Global, addr, &mut v)
        .expect("inside the space");
    v
}

/// DATA frames the links of both GPUs replayed so far.
fn replays(b: &BackToBack) -> u64 {
    (0..2)
        .flat_map(|e| (0..b.gpu(e).port_count()).map(move |p| (e, p)))
        .map(|(e, p)| b.gpu(e).link(p).map_or(0, |l| l.counters().frames_replayed))
        .sum()
}

/// Checks that `c` holds exactly the ids `ids`, once each, all OK.
fn check_completions(c: &[Completion], mut ids: Vec<OpId>) {
    let mut got: Vec<OpId> = c.iter().map(|c| c.id).collect();
    got.sort();
    ids.sort();
    assert_eq!(got, ids, "completions do not match the operations issued");
    for c in c {
        assert_eq!(c.status, CompletionStatus::Ok, "{c:?}");
    }
}

/// The load-store workload on one pair.
struct LoadStore {
    b: BackToBack,
    ordered: bool,
    /// The 64 B stored by every store.
    data: Bytes,
}

impl LoadStore {
    fn new(loss: f64, ordered: bool) -> Self {
        let mut b = pair(loss);
        let src = pattern(1, LS_BATCH as usize / 2 * LS_LEN);
        b.gpu_mut(1)
            .memory_mut()
            .write(Space::Global, LOAD_BASE, &src)
            .expect("load source");
        LoadStore {
            b,
            ordered,
            data: Bytes::new(&pattern(2, LS_LEN)).expect("64 B"),
        }
    }

    fn request(&self, i: u64) -> LsRequest {
        let slot = i / 2 * LS_LEN as u64;
        let (op, addr) = if i.is_multiple_of(2) {
            (LsOp::Store { data: self.data }, STORE_BASE + slot)
        } else {
            (LsOp::Load { len: LS_LEN as u16 }, LOAD_BASE + slot)
        };
        let ordering = if self.ordered {
            Ordering::Stream((i % u64::from(STREAMS)) as u32)
        } else {
            Ordering::Unordered
        };
        LsRequest {
            op,
            remote: remote(addr),
            ordering,
        }
    }

    /// Runs the simulation until a load-store tag of GPU 0 may be free. Steps on their own, with
    /// no command in between: a command marks the GPU's ports for polling, so a step right after
    /// one happens at the same instant.
    fn wait_for_tag(&mut self) {
        let g = self.b.gpu(0);
        if g.ls_outstanding() < u32::from(g.config().lsu_tags) {
            // Some tags rest after a retry: let time pass.
            let t = self.b.now_ns() + 1_000;
            self.b.run_until(t);
            return;
        }
        let done = self.b.completions(0).len();
        while self.b.completions(0).len() == done {
            assert!(self.b.step(u64::MAX), "stalled with every tag held");
        }
    }

    /// Issues [`LS_BATCH`] operations, runs until idle and returns the completions of GPU 0.
    /// With `ids`, records the id of every operation issued, in issue order.
    fn run(&mut self, mut ids: Option<&mut Vec<OpId>>) -> Vec<Completion> {
        for i in 0..LS_BATCH {
            let req = self.request(i);
            loop {
                let now = self.b.now();
                match self.b.gpu_mut(0).issue(now, req) {
                    Ok(tag) => {
                        if let Some(ids) = ids.as_deref_mut() {
                            ids.push(OpId::Ls(tag));
                        }
                        break;
                    }
                    Err(IssueError::TagsExhausted { .. }) => self.wait_for_tag(),
                    Err(e) => panic!("issue refused: {e}"),
                }
            }
        }
        let limit = self.b.now_ns() + SIM_LIMIT_NS;
        assert!(
            self.b.run_until_idle(limit),
            "load-store batch did not finish"
        );
        self.b.take_completions(0)
    }

    /// One iteration with checks. Returns the DATA frames replayed during it.
    fn check_once(&mut self) -> u64 {
        let replays_before = replays(&self.b);
        let stored_len = LS_BATCH as usize / 2 * LS_LEN;
        self.b
            .gpu_mut(1)
            .memory_mut()
            .fill(Space::Global, STORE_BASE, stored_len as u64, 0)
            .expect("inside the space");
        let mut ids = Vec::new();
        let c = self.run(Some(&mut ids));
        assert_eq!(c.len() as u64, LS_BATCH);
        // A tag is reused only once its operation has completed, so the completions of one tag
        // come in the order its operations were issued: that tells which operation each is.
        let mut issued: HashMap<OpId, VecDeque<u64>> = HashMap::new();
        for (i, id) in ids.iter().enumerate() {
            issued.entry(*id).or_default().push_back(i as u64);
        }
        let src = pattern(1, stored_len);
        for c in &c {
            assert_eq!(c.status, CompletionStatus::Ok, "{c:?}");
            let i = issued
                .get_mut(&c.id)
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(|| panic!("completion of no operation issued: {c:?}"));
            let slot = (i / 2) as usize * LS_LEN;
            match (i % 2, c.data) {
                (0, CompletionData::None) => {}
                (1, CompletionData::Load(bytes)) => assert_eq!(
                    bytes.as_slice(),
                    &src[slot..slot + LS_LEN],
                    "load {i} read the wrong bytes"
                ),
                (_, other) => panic!("operation {i} completed with {other:?}"),
            }
        }
        assert!(
            issued.values().all(VecDeque::is_empty),
            "an operation did not complete"
        );
        assert_eq!(
            read_mem(&self.b, 1, STORE_BASE, stored_len),
            self.data.as_slice().repeat(LS_BATCH as usize / 2),
            "stores did not land"
        );
        assert!(self.b.take_completions(1).is_empty());
        replays(&self.b) - replays_before
    }

    /// Checked iterations: one on a loss-free wire; on a lossy one, as many as it takes to see
    /// a frame replayed (a batch takes about a hundred frames, so most see no loss at all).
    fn check(&mut self, loss: f64) {
        let replayed = self.check_once();
        if loss == 0.0 {
            assert_eq!(replayed, 0, "the loss-free run replayed frames");
            return;
        }
        let mut replayed = replayed;
        for _ in 0..64 {
            if replayed > 0 {
                return;
            }
            replayed = self.check_once();
        }
        assert!(replayed > 0, "the lossy run replayed nothing");
    }
}

fn load_store(c: &mut Criterion) {
    let mut g = c.benchmark_group("load_store");
    g.throughput(Throughput::Elements(LS_BATCH));
    for (ordered, oname) in [(false, "unordered"), (true, "ordered")] {
        for (loss, lname) in [(0.0, "lossless"), (LOSS, "loss1e-3")] {
            let mut w = LoadStore::new(loss, ordered);
            w.check(loss);
            g.bench_function(format!("64B/{oname}/{lname}"), |b| {
                b.iter(|| black_box(w.run(None).len()))
            });
        }
    }
    g.finish();
}

/// The RDMA workload on one pair: `count` descriptors of `len` bytes in direction `dir`.
struct Rdma {
    b: BackToBack,
    dir: RdmaDir,
    count: u64,
    len: u64,
}

impl Rdma {
    fn new(dir: RdmaDir, count: u64, len: u64) -> Self {
        let mut b = pair(0.0);
        let total = (count * len) as usize;
        // The source: GPU 0's memory for writes, GPU 1's for reads.
        let (e, at) = match dir {
            RdmaDir::Write => (0, LOCAL_BASE),
            RdmaDir::Read => (1, REMOTE_BASE),
        };
        b.gpu_mut(e)
            .memory_mut()
            .write(Space::Global, at, &pattern(3, total))
            .expect("RDMA source");
        Rdma { b, dir, count, len }
    }

    /// Posts every descriptor, runs until idle and returns GPU 0's completions.
    fn run(&mut self, mut ids: Option<&mut Vec<OpId>>) -> Vec<Completion> {
        let now = self.b.now();
        for k in 0..self.count {
            let desc = RdmaDesc {
                dir: self.dir,
                local_space: Space::Global,
                local_addr: LOCAL_BASE + k * self.len,
                remote: remote(REMOTE_BASE + k * self.len),
                len: self.len,
            };
            let id = self.b.gpu_mut(0).post(now, desc).expect("post");
            if let Some(ids) = ids.as_deref_mut() {
                ids.push(OpId::Rdma(id));
            }
        }
        let limit = self.b.now_ns() + SIM_LIMIT_NS;
        assert!(self.b.run_until_idle(limit), "RDMA batch did not finish");
        self.b.take_completions(0)
    }

    fn check(&mut self) {
        let mut ids = Vec::new();
        let c = self.run(Some(&mut ids));
        check_completions(&c, ids);
        let total = (self.count * self.len) as usize;
        let (e, at) = match self.dir {
            RdmaDir::Write => (1, REMOTE_BASE),
            RdmaDir::Read => (0, LOCAL_BASE),
        };
        assert_eq!(
            read_mem(&self.b, e, at, total),
            pattern(3, total),
            "the bytes did not arrive"
        );
        // Clear the destination so that a stale copy cannot pass a later check.
        self.b
            .gpu_mut(e)
            .memory_mut()
            .fill(Space::Global, at, total as u64, 0)
            .expect("inside the space");
    }
}

fn rdma_engine(c: &mut Criterion) {
    let mut g = c.benchmark_group("rdma_engine");
    // An iteration moves megabytes: a few of them per sample are plenty.
    g.sampling_mode(SamplingMode::Flat);
    for (dir, count, len, name) in [
        (RdmaDir::Write, 64, 4 << 10, "write/4KiB"),
        (RdmaDir::Write, 8, 1 << 20, "write/1MiB"),
        (RdmaDir::Read, 8, 1 << 20, "read/1MiB"),
    ] {
        let mut w = Rdma::new(dir, count, len);
        w.check();
        g.throughput(Throughput::Bytes(count * len));
        g.bench_function(name, |b| b.iter(|| black_box(w.run(None).len())));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(StdDuration::from_secs(1))
        .measurement_time(StdDuration::from_secs(3));
    targets = load_store, rdma_engine
}
criterion_main!(benches);
