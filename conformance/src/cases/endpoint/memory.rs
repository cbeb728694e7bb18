//! The memory model and the region table (endpoint.md §2, §2.1): protection (`EPT-PROT-*`),
//! registration, deregistration and a full region table (EP-2-10..EP-2-12; `EPT-MEM-*`), and
//! poisoned memory (EP-2-6, EP-6-17; `EPT-POIS-*`). A device that refuses the requests `poison`
//! or `deregister`, or a setting a case needs, makes the case Unsupported.

use super::{ep_up_params, refused};
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    G, NA, RO, Seen, atomic, check_resp, ep_up, expect_mem, le, load, mem_read, mem_write,
    one_response, op, pattern, rdma_read, rdma_write, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{EndpointParams, Request, Space};

/// A request, its expected response opcode, status, the requirement giving it, and its data.
type Row = (u16, Vec<u8>, u8, u8, &'static str, Vec<u8>);

/// The status of a request whose key names no region and whose range lies in no region:
/// OUT_OF_RANGE or ACCESS_VIOLATION, as the target finds regions by range or by key (EP-2-7).
const RANGE_OR_KEY: u8 = 0xFF;

/// [`check_resp`], with [`RANGE_OR_KEY`] taking either status.
fn check_refusal(
    t: &crate::cases::endpoint::common::Txn,
    opcode: u8,
    status: u8,
    data: &[u8],
    req: &'static str,
) -> Result<(), Stop> {
    if status == RANGE_OR_KEY {
        //= docs/spec/endpoint.md#2-memory-model
        //= type=test
        //# EP-2-7 [...] A target that finds a request's region by its key (a table indexed by the
        //# key) MAY make the check of EP-2-4's key first: when the key names no region, or names
        //# another region than one holding the whole range, the request MAY be refused with
        //# ACCESS_VIOLATION where EP-2-3 would give OUT_OF_RANGE, or the other way round.
        let s = if t.fs == st::ACCESS_VIOLATION {
            st::ACCESS_VIOLATION
        } else {
            st::OUT_OF_RANGE
        };
        return check_resp(t, opcode, s, data, req);
    }
    check_resp(t, opcode, status, data, req)
}

pub(super) fn target_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let end = G.0 + G.1;
    let guard_g = pattern(16, 0x11);
    let guard_k = pattern(8, 0x22);
    let guard_r = pattern(8, 0x33);
    mem_write(ctx, Space::Global, end - 16, &guard_g)?;
    mem_write(ctx, Space::Global, G.0 + 0x600, &guard_k)?;
    mem_write(ctx, Space::Global, RO.0 + 0x10, &guard_r)?;
    let bad = G.2 ^ 0x0100_0000;
    let reqs: Vec<Row> = vec![
        (
            0x0601,
            load(0x0601, 0, G.2, 0x3_0000, 8),
            0x81,
            st::OUT_OF_RANGE,
            "EP-2-3",
            vec![],
        ),
        (
            0x0602,
            load(0x0602, 0, G.2, end - 4, 8),
            0x81,
            st::OUT_OF_RANGE,
            "EP-2-3",
            vec![],
        ),
        (
            0x0603,
            store(0x0603, 0, G.2, end - 4, &[0xFF; 8]),
            0x82,
            st::OUT_OF_RANGE,
            "EP-2-3",
            vec![],
        ),
        (
            0x0604,
            store(0x0604, 0, bad, G.0 + 0x600, &[0xFF; 8]),
            0x82,
            st::ACCESS_VIOLATION,
            "EP-2-4",
            vec![],
        ),
        (
            0x0605,
            load(0x0605, 0, bad, 0x3_0000, 8),
            0x81,
            RANGE_OR_KEY,
            "EP-2-7",
            vec![],
        ),
        (
            0x0606,
            store(0x0606, 0, RO.2, RO.0 + 0x10, &[0xFF; 8]),
            0x82,
            st::ACCESS_VIOLATION,
            "EP-2-4",
            vec![],
        ),
        (
            0x0607,
            load(0x0607, 0, bad, G.0 + 0x600, 8),
            0x81,
            st::ACCESS_VIOLATION,
            "EP-2-4",
            vec![],
        ),
        (
            0x0608,
            store(0x0608, 0, RO.2, RO.0 + RO.1 - 4, &[0xFF; 8]),
            0x82,
            st::OUT_OF_RANGE,
            "EP-2-7",
            vec![],
        ),
        (
            0x0609,
            load(0x0609, 0, RO.2, RO.0 + 0x10, 8),
            0x81,
            st::OK,
            "EP-2-4",
            guard_r.clone(),
        ),
        (
            0x060A,
            store(0x060A, 0, NA.2, NA.0, &[0x5A; 4]),
            0x82,
            st::OK,
            "EP-2-4",
            vec![],
        ),
    ];
    let n = reqs.len();
    send(
        ctx,
        0,
        0,
        &reqs.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= n)?;
    for (tag, _, opcode, status, req, data) in &reqs {
        let t = one_response(&seen, *tag, "a protected access")?;
        check_refusal(t, *opcode, *status, data, req)?;
    }
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        end - 16,
        &guard_g,
        "refused accesses change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        G.0 + 0x600,
        &guard_k,
        "refused accesses change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        RO.0 + 0x10,
        &guard_r,
        "refused accesses change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        RO.0 + RO.1 - 4,
        &[0; 4],
        "refused accesses change no byte",
    )?;
    expect_mem(
        ctx,
        "TXN-2-2",
        Space::Global,
        NA.0,
        &[0x5A; 4],
        "the store to a write region",
    )
}

pub(super) fn target_atomic_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let end = G.0 + G.1;
    let a = G.0 + 0x700;
    let guard = pattern(16, 0x44);
    mem_write(ctx, Space::Global, a, &guard)?;
    mem_write(ctx, Space::Global, end - 8, &guard[..8])?;
    mem_write(ctx, Space::Global, NA.0 + 0x10, &guard[..8])?;
    mem_write(ctx, Space::Global, RO.0 + 0x20, &guard[..8])?;
    let bad = G.2 ^ 0x0000_0100;
    let reqs: Vec<(u16, Vec<u8>, u8, u8, &'static str)> = vec![
        (
            0x0701,
            atomic(op::FADD, 0x0701, G.2, 0x3_0000, &le(1, 8)),
            0x83,
            st::OUT_OF_RANGE,
            "EP-2-3",
        ),
        (
            0x0702,
            atomic(op::FADD, 0x0702, bad, 0x3_0001, &le(1, 8)),
            0x83,
            RANGE_OR_KEY,
            "EP-2-7",
        ),
        (
            0x0703,
            atomic(op::FADD, 0x0703, bad, a + 1, &le(1, 8)),
            0x83,
            st::ACCESS_VIOLATION,
            "EP-2-7",
        ),
        (
            0x0704,
            atomic(op::FADD, 0x0704, G.2, a + 1, &le(1, 8)),
            0x83,
            st::MISALIGNED,
            "EP-2-5",
        ),
        (
            0x0705,
            atomic(op::SWAP, 0x0705, NA.2, NA.0 + 0x10, &le(1, 4)),
            0x84,
            st::ACCESS_VIOLATION,
            "EP-2-4",
        ),
        (
            0x0706,
            atomic(
                op::CAS,
                0x0706,
                RO.2,
                RO.0 + 0x20,
                &[le(0, 4), le(1, 4)].concat(),
            ),
            0x85,
            st::ACCESS_VIOLATION,
            "EP-2-4",
        ),
        (
            0x0707,
            atomic(op::SWAP, 0x0707, G.2, a + 0x0A, &le(1, 4)),
            0x84,
            st::MISALIGNED,
            "EP-2-5",
        ),
        (
            0x0708,
            atomic(op::FADD, 0x0708, G.2, end - 2, &le(1, 4)),
            0x83,
            st::OUT_OF_RANGE,
            "EP-2-7",
        ),
        (
            0x0709,
            atomic(
                op::CAS,
                0x0709,
                RO.2,
                RO.0 + 0x21,
                &[le(0, 8), le(1, 8)].concat(),
            ),
            0x85,
            st::ACCESS_VIOLATION,
            "EP-2-7",
        ),
    ];
    let n = reqs.len();
    send(
        ctx,
        0,
        0,
        &reqs.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= n)?;
    for (tag, _, opcode, status, req) in &reqs {
        let t = one_response(&seen, *tag, "a refused atomic")?;
        check_refusal(t, *opcode, *status, &[], req)?;
    }
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        a,
        &guard,
        "refused atomics change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        end - 8,
        &guard[..8],
        "refused atomics change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        NA.0 + 0x10,
        &guard[..8],
        "refused atomics change no byte",
    )?;
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        RO.0 + 0x20,
        &guard[..8],
        "refused atomics change no byte",
    )
}

pub(super) fn target_rdma_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let end = G.0 + G.1;
    let guard = pattern(512, 0x66);
    mem_write(ctx, Space::Global, RO.0 + 0x100, &guard)?;
    mem_write(ctx, Space::Global, end - 256, &guard[..256])?;
    let d = pattern(512, 0x77);
    // A write to a read-only region, its first segment second.
    send(
        ctx,
        0,
        1,
        &[rdma_write(
            0x0801,
            0,
            RO.2,
            RO.0 + 0x100,
            256,
            512,
            &d[256..],
        )],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0801, 0, RO.2, RO.0 + 0x100, 0, 512, &d[..256])],
    )?;
    // A write that runs past the end of its region, its first segment only inside.
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0802, 0, G.2, end - 256, 0, 512, &d[..256])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0802, 0, G.2, end - 256, 256, 512, &d[256..])],
    )?;
    // Reads with a wrong key and past the end.
    send(
        ctx,
        0,
        1,
        &[
            rdma_read(0x0803, 0, G.2 ^ 1, G.0, 1024),
            rdma_read(0x0804, 0, G.2, end - 256, 512),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 4)?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x0801, "an RDMA write to a read-only region")?;
    check_resp(t, op::RDMA_COMPLETION, st::ACCESS_VIOLATION, &[], "EP-6-4")?;
    let t = one_response(&seen, 0x0802, "an RDMA write past its region")?;
    check_resp(t, op::RDMA_COMPLETION, st::OUT_OF_RANGE, &[], "EP-6-4")?;
    let t = one_response(&seen, 0x0803, "an RDMA_READ with a wrong key")?;
    check_resp(t, op::RDMA_READ_RESP, st::ACCESS_VIOLATION, &[], "EP-6-8")?;
    let t = one_response(&seen, 0x0804, "an RDMA_READ past its region")?;
    check_resp(t, op::RDMA_READ_RESP, st::OUT_OF_RANGE, &[], "EP-6-8")?;
    expect_mem(
        ctx,
        "TXN-3-4",
        Space::Global,
        RO.0 + 0x100,
        &guard,
        "a refused RDMA write writes none of its bytes",
    )?;
    expect_mem(
        ctx,
        "TXN-3-4",
        Space::Global,
        end - 256,
        &guard[..256],
        "a refused RDMA write writes none of its bytes",
    )
}

pub(super) fn register_refusals(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let reg = |base: u64, len: u64, key: u32| Request::Register {
        space: Space::Global,
        base,
        len,
        key,
        perms: "rw".into(),
    };
    for (what, req) in [
        (
            "a region overlapping the start of another",
            reg(G.0 - 0x10, 0x20, 0x99),
        ),
        ("a region inside another", reg(G.0 + 0x100, 0x10, 0x99)),
        ("a region of length 0", reg(0x8_0000, 0, 0x99)),
        (
            "a region past the end of the space",
            reg(u64::MAX - 0xF, 0x20, 0x99),
        ),
    ] {
        let r = ctx.try_request(&req);
        check(refused(r)?, "EP-2-2", format!("{what} refused"), || {
            "registered".into()
        })?;
    }
    // The table is unchanged: G still answers with its own key, and the bytes below it are not
    // reachable with the key of the refused registration.
    send(
        ctx,
        0,
        0,
        &[
            load(0x1101, 0, G.2, G.0 + 0x100, 4),
            load(0x1102, 0, 0x99, G.0 - 0x10, 4),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 2)?;
    let t = one_response(&seen, 0x1101, "a load of the region")?;
    check_resp(t, 0x81, st::OK, &[0; 4], "EP-2-2")?;
    let t = one_response(&seen, 0x1102, "a load of the refused region")?;
    check_resp(t, 0x81, st::OUT_OF_RANGE, &[], "EP-2-3")
}

fn poison(ctx: &mut Ctx<'_>, addr: u64, len: u64) -> Result<(), Stop> {
    ctx.request(&Request::Poison {
        space: Space::Global,
        addr,
        len,
    })?;
    Ok(())
}

pub(super) fn poison_load(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    // Three poison granules of 64 bytes from a; two bytes of the middle one poisoned.
    let a = G.0 + 0x800;
    let d = pattern(192, 0x41);
    mem_write(ctx, Space::Global, a, &d)?;
    poison(ctx, a + 70, 2)?;
    let bad = G.2 ^ 0x10;
    send(
        ctx,
        0,
        0,
        &[
            load(0x2101, 0, G.2, a + 64, 8),
            load(0x2102, 0, G.2, a + 127, 1),
            load(0x2103, 0, G.2, a + 56, 8),
            load(0x2104, 0, G.2, a + 128, 8),
            load(0x2105, 0, bad, a + 64, 8),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 5)?;
    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-6 [...] Poison covers whole naturally aligned blocks of 64 bytes (poison granules):
    //# poisoning a byte poisons its granule. A write clears the poison of every granule it covers
    //# whole; a write that covers part of a poisoned granule writes its bytes and leaves the
    //# granule poisoned.
    let t = one_response(&seen, 0x2101, "a LOAD over the poisoned bytes")?;
    check_resp(t, 0x81, st::POISONED, &[], "EP-2-6")?;
    let t = one_response(&seen, 0x2102, "a LOAD of the last byte of their granule")?;
    check_resp(t, 0x81, st::POISONED, &[], "EP-2-6")?;
    let t = one_response(&seen, 0x2103, "a LOAD of the granule before")?;
    check_resp(t, 0x81, st::OK, &d[56..64], "EP-2-6")?;
    let t = one_response(&seen, 0x2104, "a LOAD of the granule after")?;
    check_resp(t, 0x81, st::OK, &d[128..136], "EP-2-6")?;
    let t = one_response(
        &seen,
        0x2105,
        "a LOAD with a wrong key over a poisoned byte",
    )?;
    check_resp(t, 0x81, st::ACCESS_VIOLATION, &[], "EP-2-7")?;
    // A STORE of one of the poisoned bytes is performed, and the granule stays poisoned.
    send(ctx, 0, 0, &[store(0x2106, 0, G.2, a + 70, &[0xE6])])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| !s.txns.is_empty())?;
    let t = one_response(&seen, 0x2106, "a STORE of a poisoned byte")?;
    check_resp(t, 0x82, st::OK, &[], "EP-2-6")?;
    let mut want = d.clone();
    want[70] = 0xE6;
    expect_mem(
        ctx,
        "EP-2-6",
        Space::Global,
        a,
        &want,
        "the STORE wrote its byte; poisoned bytes keep their values",
    )?;
    // Then a STORE of the whole granule clears it.
    let e = pattern(64, 0x66);
    send(
        ctx,
        0,
        0,
        &[
            load(0x2107, 0, G.2, a + 64, 8),
            store(0x2108, 0, G.2, a + 64, &e),
            load(0x2109, 0, G.2, a + 64, 64),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 3)?;
    let t = one_response(&seen, 0x2107, "a LOAD of the granule written in part")?;
    check_resp(t, 0x81, st::POISONED, &[], "EP-2-6")?;
    let t = one_response(&seen, 0x2108, "a STORE of the whole granule")?;
    check_resp(t, 0x82, st::OK, &[], "EP-2-6")?;
    let t = one_response(&seen, 0x2109, "a LOAD of the granule written whole")?;
    check_resp(t, 0x81, st::OK, &e, "EP-2-6")?;
    want[64..128].copy_from_slice(&e);
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        a,
        &want,
        "the granule holds the STORE's bytes",
    )
}

pub(super) fn poison_atomic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x900;
    let old = 0x1122_3344_5566_7788u64;
    mem_write(ctx, Space::Global, a, &le(old, 8))?;
    mem_write(ctx, Space::Global, a + 8, &le(7, 4))?;
    poison(ctx, a + 3, 1)?;
    poison(ctx, a + 8, 4)?;
    send(
        ctx,
        0,
        0,
        &[
            atomic(op::FADD, 0x2201, G.2, a, &le(1, 8)),
            atomic(op::SWAP, 0x2202, G.2, a + 8, &le(9, 4)),
            atomic(op::CAS, 0x2203, G.2, a, &[le(old, 8), le(5, 8)].concat()),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 3)?;
    for (tag, opc, what) in [
        (0x2201, 0x83, "ATOMIC_FADD over a poisoned byte"),
        (0x2202, 0x84, "ATOMIC_SWAP of poisoned bytes"),
        (0x2203, 0x85, "ATOMIC_CAS over a poisoned byte"),
    ] {
        let t = one_response(&seen, tag, what)?;
        check_resp(t, opc, st::POISONED, &[], "EP-2-6")?;
    }
    expect_mem(
        ctx,
        "EP-2-13",
        Space::Global,
        a,
        &[le(old, 8), le(7, 4)].concat(),
        "refused atomics change nothing",
    )?;
    // A STORE over the whole poison granule clears the poison: the atomic then returns what
    // it wrote.
    let mut granule = le(40, 8);
    granule.resize(64, 0);
    send(ctx, 0, 0, &[store(0x2204, 0, G.2, a, &granule)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| !s.txns.is_empty())?;
    let t = one_response(&seen, 0x2204, "a STORE over poisoned bytes")?;
    check_resp(t, 0x82, st::OK, &[], "EP-2-6")?;
    send(ctx, 0, 0, &[atomic(op::FADD, 0x2205, G.2, a, &le(2, 8))])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| !s.txns.is_empty())?;
    let t = one_response(&seen, 0x2205, "ATOMIC_FADD after the poison was written")?;
    check_resp(t, 0x83, st::OK, &le(40, 8), "EP-2-6")?;
    expect_mem(ctx, "EP-2-8", Space::Global, a, &le(42, 8), "40 + 2")
}

pub(super) fn poison_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x2000;
    let total = 0x8000u32;
    let d = pattern(total as usize, 0x5A);
    mem_write(ctx, Space::Global, a, &d)?;
    // The poisoned byte is past the first 256 bytes, so that the first segment (whatever the
    // device's segment size, at least 256) is clean only if the segment is short; the case reads
    // the segment size from what the device sends.
    let bad_at = 0x5000u32;
    poison(ctx, a + u64::from(bad_at), 1)?;
    let tag = 0x2301;
    send(ctx, 0, 1, &[rdma_read(tag, 0, G.2, a, total)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 100_000, |s| {
        s.with_tag(tag, true).iter().any(|t| t.fs != st::OK)
    })?;
    seen.run(ctx, 1, 20_000, |_| false)?;
    let segs = seen.with_tag(tag, true);
    let Some(last) = segs.last() else {
        return Err(Stop::fail(
            "EP-6-8",
            "RDMA_READ_RESP segments for an RDMA_READ of 0x8000 bytes",
            "no response",
        ));
    };
    for t in &segs[..segs.len() - 1] {
        check(
            t.opcode == op::RDMA_READ_RESP && t.fs == st::OK,
            "EP-6-17",
            "OK segments before the poisoned one",
            || t.show(),
        )?;
        let off = t.word(0) as usize;
        check(
            off + t.data.len() <= bad_at as usize,
            "EP-6-17",
            "no OK segment holds the poisoned byte",
            || format!("{}; poisoned byte at offset {bad_at:#x}", t.show()),
        )?;
        check(
            d.get(off..off + t.data.len()) == Some(&t.data[..]),
            "EP-6-8",
            "each OK segment before the poisoned byte carries the bytes of memory",
            || t.show(),
        )?;
    }
    check(
        last.opcode == op::RDMA_READ_RESP && last.fs == st::POISONED && last.dlen == 0,
        "EP-6-17",
        "the segment over the poisoned byte answered RDMA_READ_RESP POISONED with no data, and \
         no segment after it",
        || segs.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
    )?;
    let off = last.word(0);
    let sent: u32 = segs.iter().map(|t| u32::from(t.dlen)).sum();
    check_eq(
        "EP-6-17",
        "offset of the POISONED segment (the bytes sent before it)",
        off,
        sent,
    )?;
    check(
        off <= bad_at && bad_at - off < 8192,
        "EP-6-17",
        "the POISONED segment is the one that holds the poisoned byte",
        || format!("offset {off:#x}, poisoned byte at {bad_at:#x}"),
    )?;
    check_eq(
        "EP-6-8",
        "total of the POISONED segment",
        last.word(4),
        total,
    )
}

pub(super) fn deregister_during_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    // A write of three 256-byte segments into NA; the first two arrive, then the region goes.
    let before = mem_read(ctx, Space::Global, NA.0, 768)?;
    let d = pattern(768, 0x6A);
    let tag = 0x2501;
    let segment = |k: usize| {
        rdma_write(
            tag,
            0,
            NA.2,
            NA.0,
            256 * k as u32,
            768,
            &d[256 * k..256 * (k + 1)],
        )
    };
    send(ctx, 0, 1, &[segment(0), segment(1)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 20_000, |_| false)?;
    check(
        seen.with_tag(tag, true).is_empty(),
        "EP-6-5",
        "no completion before the write's last segment",
        || "answered".into(),
    )?;
    ctx.request(&Request::Deregister {
        space: Space::Global,
        base: NA.0,
    })?;
    send(ctx, 0, 1, &[segment(2)])?;
    send(ctx, 0, 1, &[segment(2)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| !s.txns.is_empty())?;
    seen.run(ctx, 1, 20_000, |_| false)?;
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-20 A target MUST check each later segment of a write it is reassembling against the
    //# region table as it is then (EP-2-3, EP-2-4, EP-2-12). When the region has been removed or
    //# changed, the target MUST write nothing of that segment, answer the write once with the
    //# status the check gives, and drop its later segments as those of a write refused (EP-6-4).
    let t = one_response(&seen, tag, "the write whose region was removed")?;
    check_resp(t, op::RDMA_COMPLETION, st::OUT_OF_RANGE, &[], "EP-6-20")?;
    let mut want = d[..512].to_vec();
    want.extend_from_slice(&before[512..]);
    expect_mem(
        ctx,
        "EP-6-20",
        Space::Global,
        NA.0,
        &want,
        "the two segments before the removal written, the third not",
    )
}

pub(super) fn deregister(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let d = pattern(32, 0x61);
    mem_write(ctx, Space::Global, NA.0 + 0x40, &d)?;
    ctx.request(&Request::Deregister {
        space: Space::Global,
        base: NA.0,
    })?;
    let again = ctx.try_request(&Request::Deregister {
        space: Space::Global,
        base: NA.0,
    });
    check(
        refused(again)?,
        "EP-2-10",
        "a second deregistration of the same region refused (not found)",
        || "taken".into(),
    )?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x2401, 0, NA.2, NA.0 + 0x40, 8),
            store(0x2402, 0, NA.2, NA.0 + 0x40, &[0xFF; 8]),
            load(0x2403, 0, G.2, G.0 + 0x40, 4),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 3)?;
    let t = one_response(&seen, 0x2401, "a LOAD of a deregistered region")?;
    check_resp(t, 0x81, st::OUT_OF_RANGE, &[], "EP-2-12")?;
    let t = one_response(&seen, 0x2402, "a STORE to a deregistered region")?;
    check_resp(t, 0x82, st::OUT_OF_RANGE, &[], "EP-2-12")?;
    let t = one_response(&seen, 0x2403, "a LOAD of a region still registered")?;
    check_resp(t, 0x81, st::OK, &[0; 4], "EP-2-12")?;
    expect_mem(
        ctx,
        "EP-2-12",
        Space::Global,
        NA.0 + 0x40,
        &d,
        "a deregistered region keeps its bytes",
    )?;
    // Registered again with another key: the bytes are there, the old key is refused.
    let key = NA.2 ^ 0x0F0F;
    ctx.request(&Request::Register {
        space: Space::Global,
        base: NA.0,
        len: NA.1,
        key,
        perms: "r".into(),
    })?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x2404, 0, NA.2, NA.0 + 0x40, 8),
            load(0x2405, 0, key, NA.0 + 0x40, 8),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 2)?;
    let t = one_response(&seen, 0x2404, "a LOAD with the key of the removed region")?;
    check_resp(t, 0x81, st::ACCESS_VIOLATION, &[], "EP-2-12")?;
    let t = one_response(&seen, 0x2405, "a LOAD with the new key")?;
    check_resp(t, 0x81, st::OK, &d[..8], "EP-2-12")?;
    // No request from the network changed the table: G is still there and the new region too.
    for (base, what) in [(G.0, "G"), (NA.0, "the region registered again")] {
        let r = ctx.try_request(&Request::Register {
            space: Space::Global,
            base,
            len: 0x10,
            key: 0x77,
            perms: "r".into(),
        });
        check(
            refused(r)?,
            "EP-2-10",
            format!("a registration overlapping {what} refused after remote traffic"),
            || "registered".into(),
        )?;
    }
    Ok(())
}

pub(super) fn table_full(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            max_regions: Some(4),
            ..EndpointParams::default()
        },
    )?;
    // ep_up registered three regions of global memory; a fourth fills the table.
    let reg = |base: u64, key: u32| Request::Register {
        space: Space::Global,
        base,
        len: 0x100,
        key,
        perms: "rw".into(),
    };
    ctx.request(&reg(0x8_0000, 0x4444))?;
    let r = ctx.try_request(&reg(0x9_0000, 0x5555));
    check(
        refused(r)?,
        "EP-2-11",
        "a fifth registration refused with max_regions 4",
        || "registered".into(),
    )?;
    mem_write(ctx, Space::Global, 0x9_0000, &[0xAB; 4])?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x2501, 0, 0x5555, 0x9_0000, 4),
            load(0x2502, 0, 0x4444, 0x8_0000, 4),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 2)?;
    let t = one_response(
        &seen,
        0x2501,
        "a LOAD of the region refused for a full table",
    )?;
    check_resp(t, 0x81, st::OUT_OF_RANGE, &[], "EP-2-11")?;
    let t = one_response(&seen, 0x2502, "a LOAD of the fourth region")?;
    check_resp(t, 0x81, st::OK, &[0; 4], "EP-2-11")?;
    ctx.request(&Request::Deregister {
        space: Space::Global,
        base: 0x8_0000,
    })?;
    ctx.request(&reg(0x9_0000, 0x5555))?;
    send(ctx, 0, 0, &[load(0x2503, 0, 0x5555, 0x9_0000, 4)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| !s.txns.is_empty())?;
    let t = one_response(
        &seen,
        0x2503,
        "a LOAD of the region taken after a deregistration",
    )?;
    check_resp(t, 0x81, st::OK, &[0xAB; 4], "EP-2-11")
}

/// As a target, RDMA data clears poison as any write does: granules a write covers whole are
/// cleared, and the granule its short last segment covers in part stays poisoned.
pub(super) fn poison_cleared_by_rdma(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let b = G.0 + 0x2000;
    // Granules b+0, b+128 and b+256 poisoned; the write covers [b, b+300): the first two whole,
    // the third (b+256..b+320) in part.
    mem_write(ctx, Space::Global, b, &pattern(384, 0x51))?;
    for at in [b + 10, b + 130, b + 300] {
        poison(ctx, at, 1)?;
    }
    let total = 300u32;
    let data = pattern(total as usize, 0x52);
    send(
        ctx,
        0,
        1,
        &[
            rdma_write(0x2301, 0, G.2, b, 256, total, &data[256..]),
            rdma_write(0x2301, 0, G.2, b, 0, total, &data[..256]),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| !s.with_tag(0x2301, true).is_empty())?;
    let t = one_response(&seen, 0x2301, "the RDMA write over poisoned granules")?;
    check_resp(t, op::RDMA_COMPLETION, st::OK, &[], "TXN-2-4")?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x2302, 0, G.2, b, 64),
            load(0x2303, 0, G.2, b + 128, 64),
            load(0x2304, 0, G.2, b + 256, 8),
            load(0x2305, 0, G.2, b + 312, 8),
        ],
    )?;
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 5)?;
    //= docs/spec/endpoint.md#2-memory-model
    //= type=test
    //# EP-2-6 [...] A write clears the poison of every granule it covers whole; a write that
    //# covers part of a poisoned granule writes its bytes and leaves the granule poisoned.
    for (tag, what, status, want) in [
        (
            0x2302,
            "the first granule, covered whole by the segment at offset 0",
            st::OK,
            &data[..64],
        ),
        (
            0x2303,
            "the third granule, covered whole",
            st::OK,
            &data[128..192],
        ),
        (
            0x2304,
            "the granule the 44-byte last segment covers in part",
            st::POISONED,
            &[][..],
        ),
        (
            0x2305,
            "the bytes of that granule past the write",
            st::POISONED,
            &[][..],
        ),
    ] {
        let t = one_response(&seen, tag, what)?;
        check_resp(t, 0x81, status, want, "EP-2-6")?;
    }
    Ok(())
}
