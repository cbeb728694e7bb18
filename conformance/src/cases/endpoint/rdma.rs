//! The RDMA engine (endpoint.md §6), as target and as requester: segments, read chunks, malformed
//! segments, writes that expire, and the bounds a target keeps on the reads it serves and the
//! writes it reassembles (EP-6-9, EP-6-12..EP-6-14; a device that refuses the endpoint settings
//! of such a case makes it Unsupported). The `EPT-RDMA-*` cases.

use super::{answer, check_request, ep_up_params};
use crate::case::{Stop, check, check_eq};
use crate::cases::endpoint::common::{
    DUT, G, REM, REM2, Seen, Txn, check_resp, completion, ep_up, expect_mem, load, mem_read,
    mem_write, one_response, op, pattern, post, rdma_read, rdma_write, read_resp, send, send_from,
    st, store,
};
use crate::ctx::Ctx;
use crate::device::{EndpointParams, Space};

pub(super) fn target_rdma_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let addr = G.0 + 0x1000;
    let total = 1000u32;
    let data = pattern(total as usize, 7);
    let tag = 0x0401;
    let mut seen = Seen::default();
    // Segments at offsets 768, 256, 0, then a duplicate of 256 carrying other bytes (ignored: its
    // blocks have all arrived), then 512, which completes the write.
    let other = pattern(256, 0x55);
    for (off, dup) in [
        (768u32, false),
        (256, false),
        (0, false),
        (256, true),
        (512, false),
    ] {
        let end = (off + 256).min(total) as usize;
        let bytes = if dup {
            &other[..]
        } else {
            &data[off as usize..end]
        };
        send(
            ctx,
            0,
            1,
            &[rdma_write(tag, 0, G.2, addr, off, total, bytes)],
        )?;
        seen.run(ctx, 1, 5_000, |_| false)?;
        if off != 512 {
            check(
                seen.with_tag(tag, true).is_empty(),
                "TXN-2-4",
                "no RDMA_COMPLETION before every byte is written",
                || {
                    format!(
                        "after the segment at offset {off}: {:?}",
                        seen.txns.iter().map(|t| t.show()).collect::<Vec<_>>()
                    )
                },
            )?;
        }
    }
    seen.run(ctx, 1, 20_000, |s| !s.with_tag(tag, true).is_empty())?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, tag, "the RDMA write")?;
    check_resp(t, op::RDMA_COMPLETION, st::OK, &[], "TXN-2-4")?;
    check_eq("TXN-2-4", "RDMA_COMPLETION total length", t.word(0), total)?;
    let mut want = data.clone();
    want.extend([0u8; 24]);
    expect_mem(
        ctx,
        "EP-6-5",
        Space::Global,
        addr,
        &want,
        "the 1000 bytes written once, the duplicate ignored, nothing after",
    )
}

pub(super) fn target_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let addr = G.0 + 0x2000;
    let total = 20_000u32;
    let data = pattern(total as usize, 9);
    mem_write(ctx, Space::Global, addr, &data)?;
    let tag = 0x0501;
    send(ctx, 0, 1, &[rdma_read(tag, 0, G.2, addr, total)])?;
    let mut seen = Seen::default();
    let covered = |s: &Seen| {
        s.with_tag(tag, true)
            .iter()
            .map(|t| u64::from(t.dlen))
            .sum::<u64>()
            >= u64::from(total)
    };
    seen.run(ctx, 1, 100_000, covered)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let segs = seen.with_tag(tag, true);
    let mut got = vec![None; total as usize];
    let mut last = None;
    for t in &segs {
        check(
            t.opcode == op::RDMA_READ_RESP && t.fs == st::OK,
            "EP-6-8",
            "RDMA_READ_RESP OK segments",
            || t.show(),
        )?;
        check(t.vc == 3, "EP-8-6", "RDMA_READ_RESP on VC 3", || t.show())?;
        check(
            t.hlen == 4 && t.dst == REM && t.src == DUT,
            "WIRE-6.1-2",
            "hlen 4, to the requester, from the device",
            || t.show(),
        )?;
        let off = t.word(0);
        check_eq("EP-6-8", "segment total length", t.word(4), total)?;
        let end = off as u64 + u64::from(t.dlen);
        check(
            off % 256 == 0 && end <= u64::from(total) && t.dlen > 0,
            "EP-6-8",
            "offset a multiple of 256, inside the read",
            || t.show(),
        )?;
        check(
            t.dlen % 256 == 0 || end == u64::from(total),
            "EP-6-8",
            "length a multiple of 256 unless it ends the read",
            || t.show(),
        )?;
        if let Some(prev) = last {
            check(
                off > prev,
                "EP-6-8",
                "segments at increasing offsets",
                || t.show(),
            )?;
        }
        last = Some(off);
        for (i, b) in t.data.iter().enumerate() {
            let slot = &mut got[off as usize + i];
            check(
                slot.is_none(),
                "EP-6-8",
                "each byte of the read sent once",
                || format!("byte {} twice", off as usize + i),
            )?;
            *slot = Some(*b);
        }
    }
    let got: Option<Vec<u8>> = got.into_iter().collect();
    check(
        got.as_deref() == Some(&data[..]),
        "EP-6-8",
        "the segments cover the read exactly with the bytes of memory",
        || {
            format!(
                "{} segments: {:?}",
                segs.len(),
                segs.iter().map(|t| (t.word(0), t.dlen)).collect::<Vec<_>>()
            )
        },
    )
}

pub(super) fn requester_rdma_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let len = 20_000usize;
    let local = 0x10_0000u64;
    let data = pattern(len, 0x5C);
    mem_write(ctx, Space::Global, local, &data)?;
    let (key, raddr) = (0x0D0D_0001u32, 0x90_0000u64);
    let id = post(ctx, true, local, key, raddr, len as u64)?;
    let mut seen = Seen::default();
    let covered = |s: &Seen| s.write_bytes() >= len;
    seen.run(ctx, ports, 200_000, covered)?;
    seen.run(ctx, ports, 5_000, |_| false)?;
    let segs = seen.requests(op::RDMA_WRITE);
    check(!segs.is_empty(), "EP-6-2", "RDMA_WRITE segments", || {
        "none".into()
    })?;
    let tag = segs[0].tag;
    let seg = segs.iter().map(|t| u32::from(t.dlen)).max().unwrap_or(0);
    check(
        seg % 256 == 0 && (256..=8192).contains(&seg),
        "EP-6-2",
        "a segment size that is a multiple of 256 in 256..8192",
        || format!("largest segment {seg}"),
    )?;
    let mut covered = vec![false; len];
    for t in &segs {
        check_request(t, op::RDMA_WRITE, 1)?;
        check(
            t.tag == tag,
            "EP-6-2",
            format!("every segment with tag {tag:#06x}"),
            || t.show(),
        )?;
        check(
            t.word(0) == key && t.dword(4) == raddr && t.word(16) == len as u32 && t.hlen == 7,
            "WIRE-6.7-2",
            "key, address and total length of the write in every segment",
            || t.show(),
        )?;
        let off = t.word(12) as usize;
        check(
            off.is_multiple_of(seg as usize) && off < len,
            "EP-6-2",
            format!("offset a multiple of the segment size {seg}"),
            || t.show(),
        )?;
        let want = (seg as usize).min(len - off);
        check(
            usize::from(t.dlen) == want,
            "EP-6-2",
            format!("length min({seg}, {len} - {off}) = {want}"),
            || t.show(),
        )?;
        check(
            t.data == data[off..off + want],
            "EP-6-2",
            "the local bytes at the segment's offset",
            || t.show(),
        )?;
        for c in &mut covered[off..off + want] {
            check(!*c, "EP-6-2", "each byte in one segment", || t.show())?;
            *c = true;
        }
    }
    check(
        covered.iter().all(|c| *c),
        "EP-6-2",
        "the segments cover the write",
        || format!("{} segments", segs.len()),
    )?;
    let last_port = segs.last().map(|t| t.port).unwrap_or(0);
    check(
        seen.done.is_empty(),
        "TXN-3-1",
        "no completion before the RDMA_COMPLETION",
        || format!("{:?}", seen.done),
    )?;
    answer(ctx, last_port, 2, &[completion(st::OK, tag, len as u32)])?;
    seen.run(ctx, ports, 20_000, |s| !s.done.is_empty())?;
    seen.run(ctx, ports, 5_000, |_| false)?;
    let d = seen.done_id(id);
    check(
        d.len() == 1 && seen.done.len() == 1,
        "EP-6-16",
        format!("one completion with id {id}"),
        || format!("{:?}", seen.done),
    )?;
    check(
        d[0].status == "OK" && d[0].data.is_none(),
        "EP-6-11",
        "OK, as the RDMA_COMPLETION said",
        || format!("{:?}", d[0]),
    )
}

pub(super) fn requester_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let len = 150_000usize;
    let local = 0x20_0000u64;
    let remote = pattern(len, 0xA7);
    let (key, raddr) = (0x0E0E_0001u32, 0xA0_0000u64);
    let id = post(ctx, false, local, key, raddr, len as u64)?;
    let mut seen = Seen::default();
    let mut answered = 0usize;
    let mut chunks: Vec<(u64, u32, u16)> = Vec::new();
    let mut rounds = 0;
    while answered < seen.requests(op::RDMA_READ).len()
        || chunks.iter().map(|c| c.1 as usize).sum::<usize>() < len
    {
        rounds += 1;
        if rounds > 2000 {
            return Err(Stop::fail(
                "EP-6-7",
                format!("chunks covering {len} bytes"),
                format!("chunks {chunks:?}"),
            ));
        }
        let have = answered;
        seen.run(ctx, ports, 50_000, |s| {
            s.requests(op::RDMA_READ).len() > have
        })?;
        let reqs: Vec<crate::cases::endpoint::common::Txn> =
            seen.requests(op::RDMA_READ).into_iter().cloned().collect();
        if reqs.len() == have {
            return Err(Stop::fail(
                "EP-6-7",
                format!("chunks covering {len} bytes"),
                format!("no further RDMA_READ after chunks {chunks:?}"),
            ));
        }
        for t in &reqs[have..] {
            check_request(t, op::RDMA_READ, 1)?;
            check(
                t.word(0) == key && t.hlen == 6,
                "WIRE-6.1-1",
                format!("key {key:#x}, hlen 6"),
                || t.show(),
            )?;
            let addr = t.dword(4);
            let total = t.word(12);
            check(
                addr >= raddr && addr - raddr + u64::from(total) <= len as u64 && total > 0,
                "EP-6-7",
                "a chunk inside the read",
                || t.show(),
            )?;
            check(
                chunks.iter().all(|c| c.2 != t.tag),
                "EP-6-7",
                "each outstanding chunk with its own tag",
                || t.show(),
            )?;
            chunks.push((addr - raddr, total, t.tag));
            // Answer in 1024-byte segments, last first.
            let off0 = (addr - raddr) as usize;
            let mut segs = Vec::new();
            let mut o = 0usize;
            while o < total as usize {
                let n = 1024.min(total as usize - o);
                segs.push(read_resp(
                    st::OK,
                    t.tag,
                    o as u32,
                    total,
                    &remote[off0 + o..off0 + o + n],
                ));
                o += n;
            }
            // Before the last one (offset 0), the segment at 1024 again with other bytes: its
            // blocks are placed already, so it changes nothing.
            if total > 1024 {
                let n = 1024.min(total as usize - 1024);
                let dup = read_resp(st::OK, t.tag, 1024, total, &vec![0xD5; n]);
                segs.insert(1, dup);
            }
            for s in segs.into_iter().rev() {
                answer(ctx, t.port, 3, &[s])?;
            }
        }
        answered = reqs.len();
        // The chunks asked for so far.
        if chunks.iter().map(|c| c.1 as usize).sum::<usize>() >= len {
            break;
        }
    }
    chunks.sort_unstable();
    let c0 = chunks[0].1;
    let mut at = 0u64;
    for (i, (off, n, _)) in chunks.iter().enumerate() {
        check(
            *off == at,
            "EP-6-7",
            "chunks that cover the read once, in order of offset",
            || format!("{chunks:?}"),
        )?;
        check(
            *n == c0 || i + 1 == chunks.len(),
            "EP-6-7",
            format!("chunks of {c0} bytes, the last shorter"),
            || format!("{chunks:?}"),
        )?;
        at += u64::from(*n);
    }
    check_eq("EP-6-7", "bytes asked for", at, len as u64)?;
    seen.run(ctx, ports, 100_000, |s| !s.done.is_empty())?;
    seen.run(ctx, ports, 5_000, |_| false)?;
    let d = seen.done_id(id);
    check(
        d.len() == 1 && seen.done.len() == 1,
        "EP-6-16",
        format!("one completion with id {id}"),
        || format!("{:?}", seen.done),
    )?;
    check(
        d[0].status == "OK",
        "EP-6-10",
        "the read completes OK",
        || format!("{:?}", d[0]),
    )?;
    expect_mem(
        ctx,
        "TXN-2-5",
        Space::Global,
        local,
        &remote,
        "every byte of the read at its offset",
    )?;
    expect_mem(
        ctx,
        "TXN-2-5",
        Space::Global,
        local + len as u64,
        &[0; 16],
        "nothing past the read",
    )
}

pub(super) fn target_rdma_malformed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x3000;
    let guard = pattern(1024, 0x71);
    mem_write(ctx, Space::Global, a, &guard)?;
    let d = pattern(512, 0x72);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x1001, 0, G.2, a, 100, 1024, &d[..256])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x1002, 0, G.2, a, 0, 1024, &d[..100])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x1003, 0, G.2, a, 768, 1000, &d[..256])],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 3)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for (tag, req) in [
        (0x1001, "EP-6-3"),
        (0x1002, "EP-6-3"),
        (0x1003, "WIRE-6.7-1"),
    ] {
        let t = one_response(&seen, tag, "a malformed RDMA_WRITE segment")?;
        check_resp(t, op::RDMA_COMPLETION, st::MALFORMED, &[], req)?;
    }
    expect_mem(
        ctx,
        "TXN-3-4",
        Space::Global,
        a,
        &guard,
        "malformed segments write nothing",
    )
}

pub(super) fn target_write_expiry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x4000;
    let d = pattern(512, 0x3C);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x1501, 0, G.2, a, 0, 512, &d[..256])],
    )?;
    let mut expired = false;
    for _ in 0..100 {
        ctx.run_for(10_000)?;
        if ctx.counter("reassembly_expired")? == 1 {
            expired = true;
            break;
        }
    }
    if !expired {
        return Err(Stop::Inconclusive(
            "no reassembly_expired within 1 ms (the device's op_timeout may be longer)".into(),
        ));
    }
    // The write was forgotten: its second segment starts a record that nothing completes.
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x1501, 0, G.2, a, 256, 512, &d[256..])],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |_| false)?;
    check(
        seen.with_tag(0x1501, true).is_empty(),
        "EP-6-15",
        "no RDMA_COMPLETION for a write forgotten after op_timeout without progress",
        || {
            format!(
                "{:?}",
                seen.txns.iter().map(|t| t.show()).collect::<Vec<_>>()
            )
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

pub(super) fn read_jobs(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn reassemblies(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn reassembly_blocks(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

pub(super) fn write_expiry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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
    )?;
    // A write that makes progress is kept: three segments 15 us apart, 30 us in all, each
    // within op_timeout (20 us) of the one before. (First the write the second segment above
    // started is left to expire.)
    let mut seen = Seen::default();
    seen.run(ctx, 1, 25_000, |_| false)?;
    let b = G.0 + 0x6000;
    let e = pattern(768, 0x5D);
    let before = ctx.counter("reassembly_expired")?;
    for (k, off) in [0u32, 256, 512].into_iter().enumerate() {
        if k > 0 {
            seen.run(ctx, 1, 15_000, |_| false)?;
        }
        let seg = &e[off as usize..off as usize + 256];
        send(ctx, 0, 1, &[rdma_write(0x2902, 0, G.2, b, off, 768, seg)])?;
    }
    seen.run(ctx, 1, 10_000, |s| !s.with_tag(0x2902, true).is_empty())?;
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-15 A target MUST forget a write that made no progress for `op_timeout`.
    let r = seen.with_tag(0x2902, true);
    check(
        r.len() == 1 && r[0].opcode == op::RDMA_COMPLETION && r[0].fs == st::OK,
        "EP-6-5",
        "one RDMA_COMPLETION OK for a write of three segments 15 us apart (30 us in all, \
         op_timeout 20 us): progress keeps it",
        || format!("{:?}", r.iter().map(|t| t.show()).collect::<Vec<_>>()),
    )?;
    check_eq(
        "EP-6-15",
        "reassembly_expired added by the write that made progress",
        ctx.counter("reassembly_expired")? - before,
        0,
    )
}

/// Waits up to 20 us for the response to `tag`, failing on `req` when none comes.
fn response_to(
    ctx: &mut Ctx<'_>,
    seen: &mut Seen,
    tag: u16,
    req: &'static str,
) -> Result<(), Stop> {
    let ok = seen.run(ctx, 1, 20_000, |s| !s.with_tag(tag, true).is_empty())?;
    check(ok, req, format!("a response to tag {tag:#06x}"), || {
        "none within 20 us".into()
    })
}

/// Eight bytes written by RDMA, as a target, then read at an offset inside them, partly
/// overwritten by a STORE, and overwritten whole with their neighbours: every read gives the
/// bytes last written, whatever the device keeps inside (a description, a copy).
pub(super) fn small_rdma_write_read_back(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x100;
    let d: Vec<u8> = vec![0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88];
    let mut seen = Seen::default();
    send(ctx, 0, 1, &[rdma_write(0x3001, 0, G.2, a, 0, 8, &d)])?;
    response_to(ctx, &mut seen, 0x3001, "TXN-2-4")?;
    send(ctx, 0, 0, &[load(0x3002, 0, G.2, a + 1, 4)])?;
    response_to(ctx, &mut seen, 0x3002, "TXN-2-1")?;
    let t = one_response(&seen, 0x3002, "a LOAD")?;
    check_resp(t, 0x81, st::OK, &d[1..5], "TXN-2-4")?;
    let m = mem_read(ctx, Space::Global, a + 3, 1)?;
    check_eq(
        "TXN-2-4",
        "the byte at +3, read directly",
        m,
        d[3..4].to_vec(),
    )?;
    // A STORE over the last four.
    let e = vec![0xE1, 0xE2, 0xE3, 0xE4];
    send(ctx, 0, 0, &[store(0x3003, 0, G.2, a + 4, &e)])?;
    response_to(ctx, &mut seen, 0x3003, "TXN-2-2")?;
    send(ctx, 0, 0, &[load(0x3004, 0, G.2, a, 8)])?;
    response_to(ctx, &mut seen, 0x3004, "TXN-2-1")?;
    let want = [&d[..4], &e[..]].concat();
    check_resp(
        one_response(&seen, 0x3004, "a LOAD")?,
        0x81,
        st::OK,
        &want,
        "TXN-2-2",
    )?;
    // Two such writes 16 bytes apart, then one STORE of 32 bytes over both.
    let b = G.0 + 0x400;
    send(ctx, 0, 1, &[rdma_write(0x3005, 0, G.2, b, 0, 8, &d)])?;
    response_to(ctx, &mut seen, 0x3005, "TXN-2-4")?;
    send(ctx, 0, 1, &[rdma_write(0x3006, 0, G.2, b + 16, 0, 8, &d)])?;
    response_to(ctx, &mut seen, 0x3006, "TXN-2-4")?;
    let f = vec![0xEE; 32];
    send(ctx, 0, 0, &[store(0x3007, 0, G.2, b, &f)])?;
    response_to(ctx, &mut seen, 0x3007, "TXN-2-2")?;
    send(ctx, 0, 0, &[load(0x3008, 0, G.2, b, 32)])?;
    response_to(ctx, &mut seen, 0x3008, "TXN-2-1")?;
    check_resp(
        one_response(&seen, 0x3008, "a LOAD")?,
        0x81,
        st::OK,
        &f,
        "TXN-2-2",
    )
}

/// As a requester with `write_chunk` set to 8192 bytes, a write of 20,000 bytes goes as three
/// chunks (EP-6-2), every segment carrying the local bytes of its offset.
pub(super) fn write_in_chunks_carries_its_bytes(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            write_chunk: Some(8192),
            ..EndpointParams::default()
        },
    )?;
    let len = 20_000usize;
    let local = 0x10_0000u64;
    let data = pattern(len, 0x5C);
    mem_write(ctx, Space::Global, local, &data)?;
    let raddr = 0x90_0000u64;
    post(ctx, true, local, 0x0D0D_0001, raddr, len as u64)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 400_000, |s| s.write_bytes() >= len)?;
    let mut chunks: Vec<u64> = Vec::new();
    for t in seen.requests(op::RDMA_WRITE) {
        let base = t.dword(4);
        let off = u64::from(t.word(12));
        let at = (base + off)
            .checked_sub(raddr)
            .map_or(usize::MAX, |x| x as usize);
        let end = at.saturating_add(usize::from(t.dlen));
        check(
            end <= len && t.data == data[at..end],
            "EP-6-2",
            format!("the segment at byte {at} of the write carries the local bytes there"),
            || t.show(),
        )?;
        if !chunks.contains(&base) {
            chunks.push(base);
        }
    }
    let covered: usize = seen
        .requests(op::RDMA_WRITE)
        .iter()
        .map(|t| usize::from(t.dlen))
        .sum();
    check(
        covered >= len,
        "EP-6-2",
        "segments covering the 20,000 bytes",
        || format!("{covered} bytes in segments"),
    )?;
    let bases: Vec<u64> = chunks.iter().map(|c| c.wrapping_sub(raddr)).collect();
    check_eq(
        "EP-6-2",
        "the chunks' remote offsets: write_chunk (8192) bytes each but the last",
        bases,
        vec![0, 8192, 16384],
    )
}

/// Bytes `[at, at + n)` of the fabric's workload data pattern of `seed` (endpoint/src/pattern.rs):
/// pseudo-random data as a fabric run writes it, the same in every run.
fn workload_bytes(seed: u64, at: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0u8; n];
    ethlink_endpoint::pattern::Pattern::new(seed, at).fill(&mut v);
    v
}

/// As a target, an RDMA write of workload data (the pseudo-random bytes a fabric run writes) read
/// back at every 8-byte offset of its first block and across block and segment boundaries, by
/// LOADs and by the local read; then a second write continuing the same data right after it.
pub(super) fn workload_data_read_back(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x2000;
    let seed = 0x5EED_0013_u64;
    let total = 1024u32;
    let data = workload_bytes(seed, 0, total as usize);
    let mut seen = Seen::default();
    for off in (0..total).step_by(256) {
        let seg = &data[off as usize..(off + 256) as usize];
        send(ctx, 0, 1, &[rdma_write(0x3101, 0, G.2, a, off, total, seg)])?;
    }
    response_to(ctx, &mut seen, 0x3101, "TXN-2-4")?;
    check_resp(
        one_response(&seen, 0x3101, "the RDMA write")?,
        op::RDMA_COMPLETION,
        st::OK,
        &[],
        "TXN-2-4",
    )?;
    // LOADs of 64 bytes at every 8-byte offset of the first block, of 256 bytes across the
    // segment boundary at 256, and of 13 bytes at odd offsets.
    let mut reads: Vec<(u64, u16)> = (0..8).map(|i| (8 * i, 64)).collect();
    reads.extend([(200, 256), (744, 256), (1, 13), (509, 13), (1011, 13)]);
    for (i, (off, len)) in reads.iter().enumerate() {
        let tag = 0x3110 + i as u16;
        send(ctx, 0, 0, &[load(tag, 0, G.2, a + off, *len)])?;
        response_to(ctx, &mut seen, tag, "TXN-2-1")?;
        let want = &data[*off as usize..*off as usize + usize::from(*len)];
        //= docs/spec/transaction.md#2-operations
        //= type=test
        //# TXN-2-4 An RDMA write MUST write exactly its bytes at `address .. address + length` of the
        //# target space.
        check_resp(
            one_response(&seen, tag, "a LOAD")?,
            0x81,
            st::OK,
            want,
            "TXN-2-4",
        )?;
    }
    for (off, len) in [(8u64, 100u64), (24, 1000), (0, 1024)] {
        let m = mem_read(ctx, Space::Global, a + off, len)?;
        check(
            m == data[off as usize..(off + len) as usize],
            "TXN-2-4",
            format!("the local read of {len} bytes at +{off} gives the bytes written"),
            || format!("{m:02x?}"),
        )?;
    }
    // A second write right after the first, its bytes continuing the same data, then a LOAD
    // across the seam of the two.
    let more = workload_bytes(seed, u64::from(total), 512);
    for off in [0u32, 256] {
        send(
            ctx,
            0,
            1,
            &[rdma_write(
                0x3102,
                0,
                G.2,
                a + u64::from(total),
                off,
                512,
                &more[off as usize..off as usize + 256],
            )],
        )?;
    }
    response_to(ctx, &mut seen, 0x3102, "TXN-2-4")?;
    send(ctx, 0, 0, &[load(0x3120, 0, G.2, a + 1000, 64)])?;
    response_to(ctx, &mut seen, 0x3120, "TXN-2-1")?;
    let want = [&data[1000..], &more[..40]].concat();
    check_resp(
        one_response(&seen, 0x3120, "a LOAD")?,
        0x81,
        st::OK,
        &want,
        "TXN-2-4",
    )?;
    // Other data written over a range, then the range written again with bytes continuing the
    // data on its left: a LOAD inside it reads the last bytes written.
    let c = G.0 + 0x3000;
    let left = workload_bytes(seed + 1, 0, 512);
    let other = workload_bytes(seed + 2, 0, 256);
    for (tag, at, bytes) in [
        (0x3103, c, &left[..256]),
        (0x3104, c + 256, &other[..]),
        (0x3105, c + 256, &left[256..]),
    ] {
        send(ctx, 0, 1, &[rdma_write(tag, 0, G.2, at, 0, 256, bytes)])?;
        response_to(ctx, &mut seen, tag, "TXN-2-4")?;
    }
    send(ctx, 0, 0, &[load(0x3121, 0, G.2, c + 300, 8)])?;
    response_to(ctx, &mut seen, 0x3121, "TXN-2-1")?;
    check_resp(
        one_response(&seen, 0x3121, "a LOAD")?,
        0x81,
        st::OK,
        &left[300..308],
        "TXN-2-4",
    )?;
    // Sixteen bytes of the data, then sixteen that repeat its third word twice: almost the
    // data's continuation, not quite. A LOAD reads them as written.
    let d = G.0 + 0x3800;
    let head = workload_bytes(seed + 3, 0, 16);
    let word = workload_bytes(seed + 3, 16, 8);
    let twice = [&word[..], &word[..]].concat();
    for (tag, at, bytes) in [(0x3106, d, &head[..]), (0x3107, d + 16, &twice[..])] {
        send(ctx, 0, 1, &[rdma_write(tag, 0, G.2, at, 0, 16, bytes)])?;
        response_to(ctx, &mut seen, tag, "TXN-2-4")?;
    }
    send(ctx, 0, 0, &[load(0x3122, 0, G.2, d, 32)])?;
    response_to(ctx, &mut seen, 0x3122, "TXN-2-1")?;
    check_resp(
        one_response(&seen, 0x3122, "a LOAD")?,
        0x81,
        st::OK,
        &[&head[..], &twice[..]].concat(),
        "TXN-2-4",
    )
}

/// As a target, two requesting GPUs use the same tags at once: RDMA writes whose segments
/// interleave, and RDMA reads. Each is reassembled and answered on its own (EP-6-5 keys a write
/// by source GPU and tag), and every response goes to the GPU that asked (WIRE-6.1-2).
pub(super) fn two_requesters_one_tag(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let total = 1024u32;
    let gpus = [(REM, G.0 + 0x3000, 0x41u8), (REM2, G.0 + 0x3800, 0x42)];
    let datas: Vec<Vec<u8>> = gpus
        .iter()
        .map(|(_, _, s)| pattern(total as usize, *s))
        .collect();
    let tag = 0x3201;
    // Segments alternate between the two writes, the second GPU's in the other order.
    for k in 0..4u32 {
        for (g, (src, addr, _)) in gpus.iter().enumerate() {
            let off = if g == 0 { 256 * k } else { 256 * (3 - k) };
            let seg = &datas[g][off as usize..(off + 256) as usize];
            send_from(
                ctx,
                *src,
                0,
                1,
                &[rdma_write(tag, 0, G.2, *addr, off, total, seg)],
            )?;
        }
    }
    let mut seen = Seen::default();
    let from = |s: &Seen, dst: u16, opcode: u8| -> usize {
        s.txns
            .iter()
            .filter(|t| t.tag == tag && t.dst == dst && t.opcode == opcode)
            .count()
    };
    seen.run(ctx, 1, 30_000, |s| {
        gpus.iter()
            .all(|(src, _, _)| from(s, *src, op::RDMA_COMPLETION) >= 1)
    })?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-5 A target MUST reassemble a write by (source GPU, tag)
    for (g, (src, addr, _)) in gpus.iter().enumerate() {
        let c: Vec<&Txn> = seen
            .txns
            .iter()
            .filter(|t| t.tag == tag && t.dst == *src)
            .collect();
        check(
            c.len() == 1
                && c[0].opcode == op::RDMA_COMPLETION
                && c[0].fs == st::OK
                && c[0].word(0) == total,
            "EP-6-5",
            format!(
                "one RDMA_COMPLETION OK of {total} bytes to GPU {src}, whose write shares tag \
                 {tag:#06x} with GPU {}'s",
                gpus[1 - g].0
            ),
            || {
                format!(
                    "to GPU {src}: {:?}",
                    c.iter().map(|t| t.show()).collect::<Vec<_>>()
                )
            },
        )?;
        expect_mem(
            ctx,
            "EP-6-5",
            Space::Global,
            *addr,
            &datas[g],
            &format!("GPU {src}'s write, its segments interleaved with the other's"),
        )?;
    }
    // Two RDMA reads with one tag, of the two ranges, from the two GPUs.
    let rtag = 0x3202;
    for (src, addr, _) in &gpus {
        send_from(ctx, *src, 0, 1, &[rdma_read(rtag, 0, G.2, *addr, total)])?;
    }
    let covered = |s: &Seen, dst: u16| -> usize {
        s.txns
            .iter()
            .filter(|t| t.tag == rtag && t.dst == dst && t.opcode == op::RDMA_READ_RESP)
            .map(|t| t.data.len())
            .sum()
    };
    seen.run(ctx, 1, 50_000, |s| {
        gpus.iter()
            .all(|(src, _, _)| covered(s, *src) >= total as usize)
    })?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for (g, (src, _, _)) in gpus.iter().enumerate() {
        let mut got = vec![None; total as usize];
        let segs: Vec<&Txn> = seen
            .txns
            .iter()
            .filter(|t| t.tag == rtag && t.dst == *src)
            .collect();
        for t in &segs {
            let off = t.word(0) as usize;
            for (i, b) in t.data.iter().enumerate() {
                if let Some(x) = got.get_mut(off + i) {
                    *x = Some(*b);
                }
            }
        }
        //= docs/spec/wire.md#61-common-prefix
        //= type=test
        //# WIRE-6.1-2 The tag is chosen by the requester; a responder MUST copy the tag of a
        //# request, and the request's source GPU into the destination of the response, unchanged.
        let want: Vec<Option<u8>> = datas[g].iter().map(|b| Some(*b)).collect();
        check(
            segs.iter()
                .all(|t| t.opcode == op::RDMA_READ_RESP && t.fs == st::OK)
                && got == want,
            "EP-6-8",
            format!(
                "RDMA_READ_RESP segments to GPU {src} covering its {total} bytes, though GPU {} \
                 asked with the same tag at once",
                gpus[1 - g].0
            ),
            || {
                format!(
                    "{} segments to GPU {src}: {:?}",
                    segs.len(),
                    segs.iter().map(|t| t.show()).collect::<Vec<_>>()
                )
            },
        )?;
    }
    Ok(())
}

/// As a requester, an RDMA read longer than its window goes on asking for chunks as the ones
/// outstanding are answered, while a write posted after it is answered BUSY and sent again:
/// neither waits for the other, and both complete OK (EP-6-7, EP-9-5, EP-6-16).
pub(super) fn read_window_beside_busy_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    // 2 MiB and a block: twice a window of 16 chunks of 64 KiB (the defaults of Table EP-T1).
    // The line protocol cannot set `read_chunk` or `read_window`; a device whose window holds
    // the whole read is noted, and the case then checks less.
    let len = (2 << 20) + 4096;
    let local = 0x40_0000u64;
    let remote = pattern(len, 0xB3);
    let (key, raddr) = (0x0E0E_0003u32, 0xC0_0000u64);
    let read = post(ctx, false, local, key, raddr, len as u64)?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 20_000, |_| false)?;
    let first: Vec<Txn> = seen.requests(op::RDMA_READ).into_iter().cloned().collect();
    let asked: u64 = first.iter().map(|t| u64::from(t.word(12))).sum();
    if asked >= len as u64 {
        ctx.note(format!(
            "the device asked for all {len} bytes at once: its window was never full"
        ));
    }
    // A write posted behind the read; its first attempt is answered BUSY.
    let wlocal = 0x80_0000u64;
    let wlen = 4096usize;
    let wdata = pattern(wlen, 0xB4);
    mem_write(ctx, Space::Global, wlocal, &wdata)?;
    let write = post(ctx, true, wlocal, key, raddr + 0x40_0000, wlen as u64)?;
    let ok = seen.run(ctx, 1, 20_000, |s| !s.requests(op::RDMA_WRITE).is_empty())?;
    check(
        ok,
        "EP-6-7",
        "the write's first segment while the read waits for its window",
        || "none within 20 us".into(),
    )?;
    let busy_tag = seen.requests(op::RDMA_WRITE)[0].tag;
    answer(ctx, 0, 2, &[completion(st::BUSY, busy_tag, wlen as u32)])?;
    // Answer every chunk asked for, and the write's next attempt, until both complete.
    let mut answered_reads = 0usize;
    let mut answered_writes: Vec<u16> = vec![busy_tag];
    let mut covered = 0u64;
    for _ in 0..600 {
        let reads: Vec<Txn> = seen.requests(op::RDMA_READ).into_iter().cloned().collect();
        for t in &reads[answered_reads..] {
            let off = t.dword(4).wrapping_sub(raddr) as usize;
            let total = t.word(12) as usize;
            if off + total > len {
                return Err(Stop::fail(
                    "EP-6-7",
                    format!("a chunk inside the read of {len} bytes"),
                    t.show(),
                ));
            }
            let mut o = 0;
            while o < total {
                let n = 8192.min(total - o);
                answer(
                    ctx,
                    t.port,
                    3,
                    &[read_resp(
                        st::OK,
                        t.tag,
                        o as u32,
                        total as u32,
                        &remote[off + o..off + o + n],
                    )],
                )?;
                o += n;
            }
            covered += total as u64;
            // Let the chunk's segments leave the harness's queue before the next.
            let drain = ctx.ser_ns(total + 64 * total.div_ceil(8192)) + 100;
            seen.run(ctx, 1, drain, |_| false)?;
        }
        answered_reads = reads.len();
        let writes: Vec<Txn> = seen.requests(op::RDMA_WRITE).into_iter().cloned().collect();
        for t in &writes {
            let bytes: usize = writes
                .iter()
                .filter(|w| w.tag == t.tag)
                .map(|w| usize::from(w.dlen))
                .sum();
            if !answered_writes.contains(&t.tag) && bytes >= wlen {
                answered_writes.push(t.tag);
                answer(ctx, t.port, 2, &[completion(st::OK, t.tag, wlen as u32)])?;
            }
        }
        let (r, w) = (seen.done_id(read).len(), seen.done_id(write).len());
        if r > 0 && w > 0 {
            break;
        }
        seen.run(ctx, 1, 5_000, |_| false)?;
    }
    seen.run(ctx, 1, 5_000, |_| false)?;
    //= docs/spec/endpoint.md#6-rdma-engine
    //= type=test
    //# EP-6-7 An RDMA read of length L MUST be asked for in chunks of `read_chunk` bytes (the last
    //# shorter), one RDMA_READ with its own tag per chunk; at most `read_window` chunks of one
    //# read and `rdma_tags` chunks of all reads are outstanding at once, and further chunks wait.
    check(
        covered == len as u64,
        "EP-6-7",
        format!(
            "chunks asked for as earlier ones are answered, covering the read's {len} bytes, \
             though a write posted after it was answered BUSY meanwhile"
        ),
        || {
            format!(
                "{covered} bytes asked for ({asked} before the write); completions {:?}",
                seen.done
            )
        },
    )?;
    for (id, what) in [
        (read, "the read"),
        (write, "the write, sent again after BUSY"),
    ] {
        let d = seen.done_id(id);
        check(
            d.len() == 1 && d[0].status == "OK",
            "EP-6-16",
            format!("one completion OK of {what} (id {id})"),
            || format!("{:?}", seen.done),
        )?;
    }
    expect_mem(
        ctx,
        "EP-6-10",
        Space::Global,
        local + len as u64 - 64,
        &remote[len - 64..],
        "the read's last bytes in place",
    )
}

/// As a requester with 8 RDMA tags, 24 RDMA reads posted one after another, each answered at
/// once: every tag is free again when its read completes (EP-5-7), so all 24 complete OK.
pub(super) fn rdma_tags_freed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_params(
        ctx,
        EndpointParams {
            rdma_tags: Some(8),
            ..EndpointParams::default()
        },
    )?;
    let (key, raddr) = (0x0E0E_0005u32, 0xE0_0000u64);
    let n = 24u64;
    let mut seen = Seen::default();
    for i in 0..n {
        let id = post(
            ctx,
            false,
            0x30_0000 + 0x100 * i,
            key,
            raddr + 0x100 * i,
            256,
        )?;
        let before = seen.requests(op::RDMA_READ).len();
        let asked = seen.run(ctx, 1, 20_000, |s| s.requests(op::RDMA_READ).len() > before)?;
        //= docs/spec/endpoint.md#5-load-store-unit
        //= type=test
        //# EP-5-7 A tag MUST be free for reuse at once when its operation completes with the answer to
        //# its only attempt.
        check(
            asked,
            "EP-5-7",
            format!(
                "read {} of {n} asked for within 20 us: with 8 RDMA tags, the tags of the {i} \
                 reads completed before it are free again",
                i + 1
            ),
            || format!("{i} reads completed OK before it"),
        )?;
        let t = seen.requests(op::RDMA_READ)[before].clone();
        let data = pattern(256, i as u8);
        answer(ctx, t.port, 3, &[read_resp(st::OK, t.tag, 0, 256, &data)])?;
        seen.run(ctx, 1, 20_000, |s| !s.done_id(id).is_empty())?;
        let d = seen.done_id(id);
        check(
            d.len() == 1 && d[0].status == "OK",
            "EP-6-10",
            format!("read {} completes OK once its one segment is placed", i + 1),
            || format!("{:?}", seen.done),
        )?;
    }
    Ok(())
}
