//! The operations as a target performs them (transaction.md §2; endpoint.md §8): LOAD and STORE,
//! the atomics, and shared memory. The `EPT-OPS-*` cases.

use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    G, REM, REM2, SH, Seen, Txn, atomic, check_resp, check_resp_to, ep_up, expect_mem, fence, le,
    load, mem_write, one_response, op, pattern, rdma_read, rdma_write, send, send_from, st, store,
};
use crate::ctx::Ctx;
use crate::device::Space;

pub(super) fn target_load_store(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let pre = pattern(64, 0x40);
    mem_write(ctx, Space::Global, G.0 + 0x100, &pre)?;
    let new = pattern(13, 0x99);
    // One frame: load, store into the middle, load again (same path: the second load sees the
    // store), then a load of bytes never written.
    send(
        ctx,
        0,
        0,
        &[
            load(0x0101, 0, G.2, G.0 + 0x100, 64),
            store(0x0102, 0, G.2, G.0 + 0x111, &new),
            load(0x0103, 0, G.2, G.0 + 0x100, 64),
            load(0x0104, 0, G.2, G.0 + 0x8000, 256),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 4)?;
    let mut after = pre.clone();
    after[0x11..0x11 + 13].copy_from_slice(&new);
    let t = one_response(&seen, 0x0101, "the first LOAD")?;
    check_resp(t, 0x81, st::OK, &pre, "TXN-2-1")?;
    let t = one_response(&seen, 0x0102, "the STORE")?;
    check_resp(t, 0x82, st::OK, &[], "TXN-2-2")?;
    let t = one_response(&seen, 0x0103, "the LOAD after the STORE")?;
    check(
        t.data == after,
        "TXN-4-2",
        "the second LOAD returns the STORE's bytes",
        || t.show(),
    )?;
    check_resp(t, 0x81, st::OK, &after, "TXN-2-1")?;
    let t = one_response(&seen, 0x0104, "the LOAD of bytes never written")?;
    check(t.data == vec![0; 256], "EP-2-1", "256 zero bytes", || {
        t.show()
    })?;
    check_resp(t, 0x81, st::OK, &[0; 256], "TXN-2-1")?;
    // The responses of one frame come in its order (EP-8-2) on VC 2.
    let order: Vec<u16> = seen.txns.iter().map(|t| t.tag).collect();
    check_eq(
        "EP-8-2",
        "response tags in order",
        order,
        vec![0x0101, 0x0102, 0x0103, 0x0104],
    )?;
    // The store wrote its bytes and nothing else.
    let mut around = vec![0u8; 16];
    around.extend(&after);
    around.extend([0u8; 16]);
    expect_mem(
        ctx,
        "TXN-2-2",
        Space::Global,
        G.0 + 0xF0,
        &around,
        "the 13 bytes stored, nothing else",
    )
}

pub(super) fn target_atomics(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x200;
    // a+0: u32 0xFFFFFFFE, a+4: guard 0xEEEEEEEE, a+8: u64, a+0x10: u32 + guard, a+0x18: u64,
    // a+0x20: u32 + guard, a+0x28: u64.
    let init: [(u64, u64, usize); 6] = [
        (0, 0xFFFF_FFFE, 4),
        (0x08, 0x0123_4567_89AB_CDEF, 8),
        (0x10, 0xDEAD_BEEF, 4),
        (0x18, 0x1122_3344_5566_7788, 8),
        (0x20, 7, 4),
        (0x28, 0xAAAA, 8),
    ];
    let mut mem = vec![0xEEu8; 0x30];
    for (off, v, w) in init {
        mem[off as usize..off as usize + w].copy_from_slice(&le(v, w));
    }
    mem_write(ctx, Space::Global, a, &mem)?;
    let add8 = 0x1111_1111_1111_1111u64;
    send(
        ctx,
        0,
        0,
        &[
            atomic(op::FADD, 0x0201, G.2, a, &le(3, 4)),
            atomic(op::FADD, 0x0202, G.2, a + 0x08, &le(add8, 8)),
            atomic(op::SWAP, 0x0203, G.2, a + 0x10, &le(0x0102_0304, 4)),
            atomic(
                op::SWAP,
                0x0204,
                G.2,
                a + 0x18,
                &le(0x8877_6655_4433_2211, 8),
            ),
            atomic(
                op::CAS,
                0x0205,
                G.2,
                a + 0x20,
                &[le(7, 4), le(9, 4)].concat(),
            ),
            atomic(
                op::CAS,
                0x0206,
                G.2,
                a + 0x28,
                &[le(0xBBBB, 8), le(1, 8)].concat(),
            ),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 6)?;
    for (i, (_, old, w)) in init.iter().enumerate() {
        let tag = 0x0201 + i as u16;
        let opcode = [0x83, 0x83, 0x84, 0x84, 0x85, 0x85][i];
        let t = one_response(&seen, tag, "an atomic")?;
        check(
            t.data == le(*old, *w),
            "TXN-2-3",
            format!("the old value {old:#x} ({w} bytes, little-endian)"),
            || t.show(),
        )?;
        check_resp(t, opcode, st::OK, &le(*old, *w), "TXN-2-3")?;
    }
    let mut want = mem.clone();
    let put =
        |m: &mut Vec<u8>, off: usize, v: u64, w: usize| m[off..off + w].copy_from_slice(&le(v, w));
    put(&mut want, 0, 1, 4); // 0xFFFFFFFE + 3 wraps to 1; the guard keeps no carry
    put(
        &mut want,
        0x08,
        0x0123_4567_89AB_CDEFu64.wrapping_add(add8),
        8,
    );
    put(&mut want, 0x10, 0x0102_0304, 4);
    put(&mut want, 0x18, 0x8877_6655_4433_2211, 8);
    put(&mut want, 0x20, 9, 4);
    // a+0x28: compare failed, unchanged.
    expect_mem(
        ctx,
        "EP-2-8",
        Space::Global,
        a,
        &want,
        "each atomic performed once, modulo its width",
    )
}

pub(super) fn target_shared(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let d = pattern(32, 0x5E);
    mem_write(ctx, Space::Global, SH.0 + 0x20, &[0xEE; 32])?;
    send(
        ctx,
        0,
        0,
        &[
            store(0x1401, 1, SH.2, SH.0 + 0x20, &d),
            load(0x1402, 1, SH.2, SH.0 + 0x20, 32),
            load(0x1403, 1, SH.2 ^ 1, SH.0 + 0x20, 32),
            load(0x1404, 0, SH.2, SH.0 + 0x20, 32),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 4)?;
    let t = one_response(&seen, 0x1401, "a STORE to shared memory")?;
    check_resp(t, 0x82, st::OK, &[], "TXN-2-2")?;
    let t = one_response(&seen, 0x1402, "a LOAD of shared memory")?;
    check_resp(t, 0x81, st::OK, &d, "TXN-2-1")?;
    let t = one_response(&seen, 0x1403, "a LOAD of shared memory with the wrong key")?;
    check_resp(t, 0x81, st::ACCESS_VIOLATION, &[], "EP-2-4")?;
    // Without the flag the same address is global memory, where no region covers it.
    let t = one_response(&seen, 0x1404, "a LOAD of the same address in global memory")?;
    check_resp(t, 0x81, st::OUT_OF_RANGE, &[], "EP-2-3")?;
    expect_mem(
        ctx,
        "TXN-2-2",
        Space::Shared,
        SH.0 + 0x20,
        &d,
        "the store in shared memory",
    )?;
    expect_mem(
        ctx,
        "TXN-2-2",
        Space::Global,
        SH.0 + 0x20,
        &[0xEE; 32],
        "global memory untouched",
    )
}

/// As a target, two requesting GPUs send LOADs, STOREs, FETCH_ADDs and FENCEs with the same tags
/// at once: every request is answered once, to the GPU that sent it, with its own data.
pub(super) fn two_requesters_same_tags(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let atomics = ctx.has_cap("atomics");
    let a = G.0 + 0x600;
    let pre = pattern(64, 0x61);
    mem_write(ctx, Space::Global, a, &pre)?;
    let counter = a + 0x100;
    mem_write(ctx, Space::Global, counter, &le(0xFFFF_FFF0, 8))?;
    let gpus = [(REM, 0u64, 0x71u8, 5u64), (REM2, 0x20, 0x72, 0x30)];
    // Each GPU: a LOAD of its half, a STORE into its other quarter, a FETCH_ADD of the shared
    // counter, a FENCE: one frame each, the two GPUs' frames alternating.
    let tags = [0x3301u16, 0x3302, 0x3303, 0x3304];
    for (src, off, seed, add) in gpus {
        let mut txns = vec![
            load(tags[0], 0, G.2, a + off, 16),
            store(tags[1], 0, G.2, a + 0x40 + off, &pattern(16, seed)),
        ];
        if atomics {
            txns.push(atomic(op::FADD, tags[2], G.2, counter, &le(add, 8)));
        }
        txns.push(fence(tags[3]));
        send_from(ctx, src, 0, 0, &txns)?;
    }
    let want = if atomics { 4 } else { 3 };
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 2 * want)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let mut olds = Vec::new();
    for (src, off, _, _) in gpus {
        let to = |tag: u16| -> Vec<&Txn> {
            seen.txns
                .iter()
                .filter(|t| t.tag == tag && t.dst == src)
                .collect()
        };
        let mut expect: Vec<(u16, u8, &str)> = vec![
            (tags[0], 0x81, "LOAD"),
            (tags[1], 0x82, "STORE"),
            (tags[3], 0x86, "FENCE"),
        ];
        if atomics {
            expect.push((tags[2], 0x83, "FETCH_ADD"));
        }
        //= docs/spec/wire.md#61-common-prefix
        //= type=test
        //# WIRE-6.1-2 The tag is chosen by the requester; a responder MUST copy the tag of a
        //# request, and the request's source GPU into the destination of the response, unchanged.
        for (tag, opcode, what) in expect {
            let r = to(tag);
            check(
                r.len() == 1 && r[0].opcode == opcode && r[0].fs == st::OK,
                "WIRE-6.1-2",
                format!(
                    "one {what} response OK with tag {tag:#06x} to GPU {src}, the other GPU \
                     using the same tag at once"
                ),
                || format!("{:?}", r.iter().map(|t| t.show()).collect::<Vec<_>>()),
            )?;
        }
        check_resp_to(
            to(tags[0])[0],
            src,
            0x81,
            st::OK,
            &pre[off as usize..off as usize + 16],
            "TXN-2-1",
        )?;
        if atomics {
            olds.push(u64::from_le_bytes(
                to(tags[2])[0]
                    .data
                    .get(..8)
                    .and_then(|d| d.try_into().ok())
                    .unwrap_or([0; 8]),
            ));
        }
    }
    for (_, off, seed, _) in gpus {
        expect_mem(
            ctx,
            "TXN-2-2",
            Space::Global,
            a + 0x40 + off,
            &pattern(16, seed),
            "each GPU's STORE, same tag as the other's",
        )?;
    }
    if atomics {
        // The two FETCH_ADDs in some order: one read the start, the other the start plus the
        // first's operand, and the counter holds both.
        let start = 0xFFFF_FFF0u64;
        let (a0, a1) = (gpus[0].3, gpus[1].3);
        let ok = (olds[0] == start && olds[1] == start + a0)
            || (olds[1] == start && olds[0] == start + a1);
        check(
            ok,
            "TXN-2-3",
            format!("the two FETCH_ADDs read {start:#x} and {start:#x} plus the other's operand"),
            || format!("old values {olds:#x?}"),
        )?;
        expect_mem(
            ctx,
            "TXN-2-3",
            Space::Global,
            counter,
            &le(start + a0 + a1, 8),
            "the counter holds both additions",
        )?;
    }
    Ok(())
}

/// As a target, atomics on values whose arithmetic crosses a 32-bit boundary: an 8-byte
/// FETCH_ADD carries from the low word into the high one and wraps at 2^64, and an 8-byte
/// COMPARE_SWAP compares all 64 bits.
pub(super) fn wide_atomics(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x700;
    let rows: [(u64, u8, Vec<u8>, u64, u64); 5] = [
        // FETCH_ADD with a carry out of bit 31.
        (
            0,
            op::FADD,
            le(1, 8),
            0x0000_0001_FFFF_FFFF,
            0x0000_0002_0000_0000,
        ),
        // FETCH_ADD that wraps at 2^64.
        (
            8,
            op::FADD,
            le(0x8000_0000_0000_0001, 8),
            0x8000_0000_FFFF_FFFF,
            0x0000_0001_0000_0000,
        ),
        // COMPARE_SWAP whose compare value differs from memory in the high word only: fails.
        (
            16,
            op::CAS,
            [le(0x0000_0007_1234_5678, 8), le(1, 8)].concat(),
            0x0000_0008_1234_5678,
            0x0000_0008_1234_5678,
        ),
        // ... and in the low word only: fails.
        (
            24,
            op::CAS,
            [le(0x0000_0008_1234_5679, 8), le(1, 8)].concat(),
            0x0000_0008_1234_5678,
            0x0000_0008_1234_5678,
        ),
        // Equal in all 64 bits: swaps.
        (
            32,
            op::CAS,
            [le(0xFFFF_FFFF_0000_0000, 8), le(0x0000_0000_FFFF_FFFF, 8)].concat(),
            0xFFFF_FFFF_0000_0000,
            0x0000_0000_FFFF_FFFF,
        ),
    ];
    for (off, old, _) in rows.iter().map(|r| (r.0, r.3, ())) {
        mem_write(ctx, Space::Global, a + off, &le(old, 8))?;
    }
    let txns: Vec<Vec<u8>> = rows
        .iter()
        .enumerate()
        .map(|(i, (off, opc, data, _, _))| atomic(*opc, 0x3401 + i as u16, G.2, a + off, data))
        .collect();
    send(ctx, 0, 0, &txns)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= rows.len())?;
    //= docs/spec/transaction.md#2-operations
    //= type=test
    //# TXN-2-3 An atomic MUST be performed as one indivisible read-modify-write of a 4 or 8 byte
    for (i, (off, opc, _, old, new)) in rows.iter().enumerate() {
        let tag = 0x3401 + i as u16;
        let t = one_response(&seen, tag, "an 8-byte atomic")?;
        check_resp(t, opc | 0x80, st::OK, &le(*old, 8), "TXN-2-3")?;
        expect_mem(
            ctx,
            "TXN-2-3",
            Space::Global,
            a + off,
            &le(*new, 8),
            &format!("{new:#018x} after the 8-byte atomic at +{off} on {old:#018x}"),
        )?;
    }
    Ok(())
}

/// As a target with RDMA and SHARED, RDMA writes and reads with the SHARED flag address shared
/// memory through its own regions, and leave global memory at the same address alone.
pub(super) fn rdma_into_shared(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = SH.0 + 0x200;
    let total = 512u32;
    let data = pattern(total as usize, 0x91);
    mem_write(ctx, Space::Global, a, &[0x5A; 512])?;
    send(
        ctx,
        0,
        1,
        &[
            rdma_write(0x3501, 1, SH.2, a, 256, total, &data[256..]),
            rdma_write(0x3501, 1, SH.2, a, 0, total, &data[..256]),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| !s.with_tag(0x3501, true).is_empty())?;
    //= docs/spec/transaction.md#2-operations
    //= type=test
    //# TXN-2-6 An RDMA operation's local side (where a write's data comes from, where a read's
    //# data goes to) MAY be either local memory space, global or shared; its remote side MAY be
    //# either space of the target (the SHARED flag, wire.md §6.2).
    let t = one_response(&seen, 0x3501, "an RDMA write with the SHARED flag")?;
    check_resp(t, op::RDMA_COMPLETION, st::OK, &[], "TXN-2-4")?;
    expect_mem(
        ctx,
        "TXN-2-4",
        Space::Shared,
        a,
        &data,
        "the RDMA write's bytes in shared memory",
    )?;
    expect_mem(
        ctx,
        "TXN-2-4",
        Space::Global,
        a,
        &[0x5A; 512],
        "global memory at the same address unchanged",
    )?;
    // The same range read back by RDMA with the flag, and a read without it under the shared
    // region's key (global memory has no such region there) refused.
    send(
        ctx,
        0,
        1,
        &[
            rdma_read(0x3502, 1, SH.2, a, total),
            rdma_read(0x3503, 0, SH.2, a, total),
        ],
    )?;
    seen.run(ctx, 1, 30_000, |s| {
        s.with_tag(0x3502, true)
            .iter()
            .map(|t| t.data.len())
            .sum::<usize>()
            >= total as usize
            && !s.with_tag(0x3503, true).is_empty()
    })?;
    let mut got = vec![0u8; total as usize];
    for t in seen.with_tag(0x3502, true) {
        let off = t.word(0) as usize;
        if let Some(dst) = got.get_mut(off..off + t.data.len()) {
            dst.copy_from_slice(&t.data);
        }
    }
    check(
        got == data,
        "TXN-2-5",
        "an RDMA read with the SHARED flag returns the shared bytes",
        || format!("{got:02x?}"),
    )?;
    let r = seen.with_tag(0x3503, true);
    check(
        r.len() == 1 && r[0].fs != st::OK && r[0].data.is_empty(),
        "EP-2-3",
        "an RDMA read without the flag, under the shared region's key, refused with no data \
         (no global region holds the range)",
        || format!("{:?}", r.iter().map(|t| t.show()).collect::<Vec<_>>()),
    )
}
