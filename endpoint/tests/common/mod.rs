//! Shared set-up of the endpoint tests: two GPUs back to back with registered memory.
#![allow(dead_code, unreachable_pub)]

use ethlink_endpoint::harness::BackToBack;
use ethlink_endpoint::{
    Bytes, Completion, Config, LsOp, LsRequest, Ordering, Perms, Policy, RdmaDesc, RdmaDir, Region,
    Remote,
};
use ethlink_link::harness::{Faults, Wire};
use ethlink_protocol::{GpuId, Space};

/// Key of the read-write-atomic region of global memory at 0 .. GLOBAL_LEN on both GPUs.
pub const KEY: u32 = 0x1234_5678;
/// Length of that region.
pub const GLOBAL_LEN: u64 = 1 << 32;
/// Key of the region of shared memory at 0 .. SHARED_LEN.
pub const SHARED_KEY: u32 = 0x5555;
/// Length of the shared region.
pub const SHARED_LEN: u64 = 1 << 20;
/// A read-only region of global memory: base, length, key.
pub const RO: (u64, u64, u32) = (1 << 39, 1 << 20, 0x0000_0A0A);

pub fn gpu(v: u16) -> GpuId {
    GpuId::new(v).expect("gpu id")
}

/// The default endpoint configuration for GPU `id` with `policy`.
pub fn config(id: u16, policy: Policy) -> Config {
    Config {
        gpu: gpu(id),
        policy,
        ..Config::default()
    }
}

/// Registers the standard regions on `ep`.
pub fn regions(b: &mut BackToBack) {
    for e in 0..2 {
        let m = b.gpu_mut(e).memory_mut();
        m.register(Region {
            space: Space::Global,
            base: 0,
            len: GLOBAL_LEN,
            key: KEY,
            perms: Perms::ALL,
        })
        .expect("global region");
        m.register(Region {
            space: Space::Shared,
            base: 0,
            len: SHARED_LEN,
            key: SHARED_KEY,
            perms: Perms::ALL,
        })
        .expect("shared region");
        m.register(Region {
            space: Space::Global,
            base: RO.0,
            len: RO.1,
            key: RO.2,
            perms: Perms::READ,
        })
        .expect("read-only region");
    }
}

/// A wire of 400 Gb/s, 5 m, with `faults`.
pub fn wire(faults: Faults) -> Wire {
    Wire {
        faults,
        ..Wire::default()
    }
}

/// Two GPUs (ids 0 and 1) with `policy`, the standard regions, over `faults`; ports brought up.
pub fn pair(policy: Policy, faults: Faults, seed: u64) -> BackToBack {
    pair_with(config(0, policy), config(1, policy), faults, seed)
}

/// As [`pair`] with given configurations.
pub fn pair_with(a: Config, b: Config, faults: Faults, seed: u64) -> BackToBack {
    let mut b2b = BackToBack::new(a, b, wire(faults), seed).expect("back to back");
    regions(&mut b2b);
    // Bring-up: every link UP.
    b2b.run_until(20_000);
    b2b
}

/// A remote target on `gpu` in global memory with the standard key.
pub fn remote(gpu_id: u16, addr: u64) -> Remote {
    Remote {
        gpu: gpu(gpu_id),
        space: Space::Global,
        key: KEY,
        addr,
    }
}

pub fn store(to: u16, addr: u64, data: &[u8], ordering: Ordering) -> LsRequest {
    LsRequest {
        op: LsOp::Store {
            data: Bytes::new(data).expect("1..=256 bytes"),
        },
        remote: remote(to, addr),
        ordering,
    }
}

pub fn load(to: u16, addr: u64, len: u16, ordering: Ordering) -> LsRequest {
    LsRequest {
        op: LsOp::Load { len },
        remote: remote(to, addr),
        ordering,
    }
}

pub fn write_desc(to: u16, local: u64, remote_addr: u64, len: u64) -> RdmaDesc {
    RdmaDesc {
        dir: RdmaDir::Write,
        local_space: Space::Global,
        local_addr: local,
        remote: remote(to, remote_addr),
        len,
    }
}

pub fn read_desc(from: u16, local: u64, remote_addr: u64, len: u64) -> RdmaDesc {
    RdmaDesc {
        dir: RdmaDir::Read,
        local_space: Space::Global,
        local_addr: local,
        remote: remote(from, remote_addr),
        len,
    }
}

/// A deterministic pattern for `len` bytes named by `seed`.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
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

/// Reads `len` bytes of GPU `e`'s global memory at `addr`.
pub fn read_mem(b: &BackToBack, e: usize, addr: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    b.gpu(e)
        .memory()
        .read(Space::Global, addr, &mut v)
        .expect("inside the space");
    v
}

/// Asserts that the completions have distinct ids (none completed twice).
pub fn assert_unique(c: &[Completion]) {
    let mut ids: Vec<_> = c.iter().map(|c| c.id).collect();
    ids.sort();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "an operation completed twice");
}
