//! Endpoint cases that need the requests `poison` and `deregister` or the endpoint settings of a
//! setup: poisoned memory (EP-2-6, EP-6-17), the region table (EP-2-10..EP-2-12) and the bounds a
//! target keeps on the reads it serves and the writes it reassembles (EP-6-9, EP-6-12..EP-6-14).
//! A device that refuses one of these requests or settings makes the case Unsupported.

use crate::case::{Case, Stop, check, check_eq};
use crate::cases::common::setup;
use crate::cases::endpoint::case;
use crate::cases::endpoint_common::{
    DUT, G, NA, Seen, atomic, check_resp, ep_up, ep_up_with, expect_mem, le, load, mem_read,
    mem_write, one_response, op, pattern, rdma_read, rdma_write, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{EndpointParams, LinkParams, Request, Setup, Space};

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "EPT-POIS-1",
            "a LOAD that would read a poisoned byte is answered POISONED with no data, after the \
             range and key checks; poison covers 64-byte granules: the granules beside it load, a \
             STORE of part of the granule leaves it poisoned, a STORE of all of it clears it",
            &["EP-2-6", "EP-2-7", "EP-2-13"],
            &[],
            poison_load,
        ),
        case(
            "EPT-POIS-2",
            "an atomic on a poisoned byte is answered POISONED with no data and changes nothing; \
             once its poison granule is written whole it returns the value written",
            &["EP-2-6", "EP-2-13"],
            &["atomics"],
            poison_atomic,
        ),
        case(
            "EPT-POIS-3",
            "an RDMA_READ over a poisoned byte sends the segments before it, then one \
             RDMA_READ_RESP POISONED with no data at the segment's offset, and nothing more",
            &["EP-2-6", "EP-6-17", "EP-6-8"],
            &["rdma"],
            poison_rdma_read,
        ),
        case(
            "EPT-MEM-2",
            "a region deregistered is refused OUT_OF_RANGE and keeps its bytes; registered again \
             with a new key the old key is refused; remote traffic leaves the table as it was",
            &["EP-2-10", "EP-2-12", "EP-2-3"],
            &[],
            deregister,
        ),
        case(
            "EPT-MEM-4",
            "a region deregistered while a write into it is being reassembled refuses the rest of \
             the write: one RDMA_COMPLETION with the status, the segments before it stay written, \
             nothing after it is written, and a later segment is dropped unanswered",
            &["EP-6-20", "EP-2-12", "TXN-2-8", "EP-13-3"],
            &["rdma"],
            deregister_during_write,
        ),
        case(
            "EPT-MEM-3",
            "with max_regions 4 the fifth registration of a space is refused and changes nothing; \
             after a deregistration it is taken",
            &["EP-2-11", "EP-2-10"],
            &[],
            table_full,
        ),
        case(
            "EPT-RDMA-7",
            "with max_read_jobs 2, a third RDMA_READ arriving while two are served is answered \
             RDMA_READ_RESP BUSY with no data; the two others are served whole",
            &["EP-6-9"],
            &["rdma"],
            read_jobs,
        ),
        case(
            "EPT-RDMA-8",
            "with max_reassemblies 1, a segment of a second write while one is reassembled is \
             answered RDMA_COMPLETION BUSY and writes nothing; once the first completes the \
             second is taken",
            &["EP-6-14"],
            &["rdma"],
            reassemblies,
        ),
        case(
            "EPT-RDMA-9",
            "with max_reassembly_blocks 64, a write that would take the blocks reserved past 64 \
             is answered BUSY and writes nothing; a write of more than 64 blocks alone is \
             answered UNSUPPORTED",
            &["EP-6-12", "EP-6-13"],
            &["rdma"],
            reassembly_blocks,
        ),
        case(
            "EPT-RDMA-10",
            "with op_timeout 20 us, a write without progress is forgotten within 30 us of its last \
             segment (reassembly_expired 1): its second segment then starts a new write that is \
             not completed, and the segment first written keeps its bytes",
            &["EP-6-15", "EP-6-5"],
            &["rdma"],
            write_expiry,
        ),
    ]
}

/// [`ep_up_with`] with the endpoint settings `e`.
fn ep_up_params(ctx: &mut Ctx<'_>, e: EndpointParams) -> Result<(), Stop> {
    ep_up_with(
        ctx,
        1,
        Setup {
            gpu: Some(DUT),
            endpoint: Some(Box::new(e)),
            ..setup(LinkParams::default())
        },
    )
}

fn poison(ctx: &mut Ctx<'_>, addr: u64, len: u64) -> Result<(), Stop> {
    ctx.request(&Request::Poison {
        space: Space::Global,
        addr,
        len,
    })?;
    Ok(())
}

/// Whether the device refused a request made with [`Ctx::try_request`].
fn refused(r: Result<Result<crate::device::Reply, String>, Stop>) -> Result<bool, Stop> {
    Ok(r?.is_err())
}

fn poison_load(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn poison_atomic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn poison_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn deregister_during_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn deregister(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn table_full(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn read_jobs(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            max_read_jobs: Some(2),
            ..EndpointParams::default()
        },
    )?;
    let a = G.0;
    let total = 0x4000u32;
    let d = pattern(0x8000, 0x71);
    mem_write(ctx, Space::Global, a, &d)?;
    send(
        ctx,
        0,
        1,
        &[
            rdma_read(0x2601, 0, G.2, a, total),
            rdma_read(0x2602, 0, G.2, a + 0x4000, total),
            rdma_read(0x2603, 0, G.2, a, total),
        ],
    )?;
    let mut seen = Seen::default();
    let sum = |s: &Seen, tag: u16| -> u32 {
        s.with_tag(tag, true)
            .iter()
            .map(|t| u32::from(t.dlen))
            .sum()
    };
    seen.run(ctx, 1, 200_000, |s| {
        sum(s, 0x2601) >= total && sum(s, 0x2602) >= total && !s.with_tag(0x2603, true).is_empty()
    })?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x2603, "an RDMA_READ beyond max_read_jobs")?;
    check(
        t.opcode == op::RDMA_READ_RESP && t.fs == st::BUSY && t.dlen == 0,
        "EP-6-9",
        "RDMA_READ_RESP BUSY with no data for a third read while two are served",
        || t.show(),
    )?;
    for (tag, off) in [(0x2601u16, 0usize), (0x2602, 0x4000)] {
        let segs = seen.with_tag(tag, true);
        let mut got = vec![0u8; total as usize];
        for t in &segs {
            check(
                t.fs == st::OK,
                "EP-6-9",
                "the reads within the bound served OK",
                || t.show(),
            )?;
            let o = t.word(0) as usize;
            got[o..o + t.data.len()].copy_from_slice(&t.data);
        }
        check(
            got[..] == d[off..off + total as usize] && sum(&seen, tag) == total,
            "EP-6-8",
            format!("read {tag:#06x} served whole with the bytes of memory"),
            || format!("{} segments", segs.len()),
        )?;
    }
    check_eq(
        "EP-6-9",
        "read_jobs_refused",
        ctx.counter("read_jobs_refused")?,
        1,
    )
}

/// Runs until a response with each of `tags` came; returns what was seen.
fn responses(ctx: &mut Ctx<'_>, tags: &[u16]) -> Result<Seen, Stop> {
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| {
        tags.iter().all(|t| !s.with_tag(*t, true).is_empty())
    })?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    Ok(seen)
}

fn completion_of(seen: &Seen, tag: u16, status: u8, req: &'static str) -> Result<(), Stop> {
    let t = one_response(seen, tag, "an RDMA write segment")?;
    check(
        t.opcode == op::RDMA_COMPLETION && t.fs == status && t.dlen == 0,
        req,
        format!("RDMA_COMPLETION with status {status:#04x} for the write tagged {tag:#06x}"),
        || t.show(),
    )
}

fn reassemblies(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            max_reassemblies: Some(1),
            ..EndpointParams::default()
        },
    )?;
    let a = G.0 + 0x1000;
    let b = G.0 + 0x3000;
    let da = pattern(512, 0x13);
    let db = pattern(512, 0x31);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2701, 0, G.2, a, 0, 512, &da[..256])],
    )?;
    ctx.run_for(2_000)?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2702, 0, G.2, b, 0, 512, &db[..256])],
    )?;
    let seen = responses(ctx, &[0x2702])?;
    completion_of(&seen, 0x2702, st::BUSY, "EP-6-14")?;
    check(
        seen.with_tag(0x2701, true).is_empty(),
        "EP-6-5",
        "no completion of a write half received",
        || format!("{:?}", seen.with_tag(0x2701, true)),
    )?;
    expect_mem(
        ctx,
        "EP-6-14",
        Space::Global,
        b,
        &[0; 256],
        "a segment answered BUSY writes nothing",
    )?;
    check_eq(
        "EP-6-14",
        "reassembly_refused",
        ctx.counter("reassembly_refused")?,
        1,
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2701, 0, G.2, a, 256, 512, &da[256..])],
    )?;
    let seen = responses(ctx, &[0x2701])?;
    completion_of(&seen, 0x2701, st::OK, "EP-6-5")?;
    expect_mem(ctx, "EP-6-5", Space::Global, a, &da, "the first write")?;
    send(
        ctx,
        0,
        1,
        &[
            rdma_write(0x2703, 0, G.2, b, 0, 512, &db[..256]),
            rdma_write(0x2703, 0, G.2, b, 256, 512, &db[256..]),
        ],
    )?;
    let seen = responses(ctx, &[0x2703])?;
    completion_of(&seen, 0x2703, st::OK, "EP-6-14")?;
    expect_mem(
        ctx,
        "EP-6-14",
        Space::Global,
        b,
        &db,
        "a write taken once the record was free",
    )
}

fn reassembly_blocks(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            max_reassembly_blocks: Some(64),
            ..EndpointParams::default()
        },
    )?;
    let a = G.0 + 0x1000;
    let b = G.0 + 0x8000;
    let c = G.0 + 0xC000;
    // A: 48 blocks reserved by its first segment.
    let ta = 48 * 256u32;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2801, 0, G.2, a, 0, ta, &[0x11; 256])],
    )?;
    ctx.run_for(2_000)?;
    // B: 32 blocks would take the reservation to 80.
    let tb = 32 * 256u32;
    // C: 65 blocks alone exceed the bound.
    let tc = 65 * 256u32;
    send(
        ctx,
        0,
        1,
        &[
            rdma_write(0x2802, 0, G.2, b, 256, tb, &[0x22; 256]),
            rdma_write(0x2803, 0, G.2, c, 0, tc, &[0x33; 256]),
        ],
    )?;
    let seen = responses(ctx, &[0x2802, 0x2803])?;
    completion_of(&seen, 0x2802, st::BUSY, "EP-6-12")?;
    completion_of(&seen, 0x2803, st::UNSUPPORTED, "EP-6-13")?;
    expect_mem(
        ctx,
        "EP-6-12",
        Space::Global,
        b + 256,
        &[0; 256],
        "a segment answered BUSY writes nothing",
    )?;
    expect_mem(
        ctx,
        "EP-6-13",
        Space::Global,
        c,
        &[0; 256],
        "a write answered UNSUPPORTED writes nothing",
    )?;
    // B with 16 blocks fits beside A (48 + 16 = 64).
    let tb = 16 * 256u32;
    let db = pattern(tb as usize, 0x2B);
    send(
        ctx,
        0,
        1,
        &[
            rdma_write(0x2804, 0, G.2, b, 0, tb, &db[..2048]),
            rdma_write(0x2804, 0, G.2, b, 2048, tb, &db[2048..]),
        ],
    )?;
    let seen = responses(ctx, &[0x2804])?;
    completion_of(&seen, 0x2804, st::OK, "EP-6-12")?;
    expect_mem(
        ctx,
        "EP-6-12",
        Space::Global,
        b,
        &db,
        "a write within the bound",
    )?;
    let mem = mem_read(ctx, Space::Global, a, 256)?;
    check(
        mem == [0x11; 256],
        "EP-6-5",
        "the first segment of the write still open written",
        || crate::device::to_hex(&mem),
    )
}

fn write_expiry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            op_timeout_ns: Some(20_000),
            // EP-1-3: frame_lifetime <= op_timeout, tag_quarantine >= frame_lifetime + op_timeout.
            frame_lifetime_ns: Some(20_000),
            tag_quarantine_ns: Some(40_000),
            ..EndpointParams::default()
        },
    )?;
    let a = G.0 + 0x4000;
    let d = pattern(512, 0x5C);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2901, 0, G.2, a, 0, 512, &d[..256])],
    )?;
    // The segment reaches the device within a few microseconds; it must be forgotten 20 us later.
    let start = ctx.now();
    let mut at = None;
    while ctx.now() < start + 40_000 {
        ctx.run_for(1_000)?;
        if ctx.counter("reassembly_expired")? >= 1 {
            at = Some(ctx.now() - start);
            break;
        }
    }
    check(
        at.is_some_and(|t| t <= 30_000),
        "EP-6-15",
        "reassembly_expired 1 within 30 us of sending a segment, with op_timeout 20 us",
        || match at {
            Some(t) => format!("reassembly_expired after {t} ns"),
            None => "reassembly_expired 0 after 40 us".into(),
        },
    )?;
    check_eq(
        "EP-6-15",
        "reassembly_expired",
        ctx.counter("reassembly_expired")?,
        1,
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x2901, 0, G.2, a, 256, 512, &d[256..])],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 15_000, |_| false)?;
    check(
        seen.with_tag(0x2901, true).is_empty(),
        "EP-6-15",
        "no RDMA_COMPLETION for a write forgotten after op_timeout",
        || {
            seen.txns
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    expect_mem(
        ctx,
        "EP-6-5",
        Space::Global,
        a,
        &d,
        "each segment written when it arrived",
    )
}
