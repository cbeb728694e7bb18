//! Cases for an endpoint (classes.md, class Endpoint): the device as a target (every request
//! answered with the right opcode, tag, VC, status and data; protection in the order of EP-2-7;
//! unknown, malformed and misdelivered traffic), the device as a requester (completions, statuses,
//! tags, ordered streams, RDMA segmentation and read chunks, the fence, deadlines and BUSY), and
//! what an endpoint without a capability does (transaction.md, endpoint.md, wire.md §5-§7,
//! classes.md §3). The harness plays the remote GPU through reference link ends on the device's
//! ports, writing every request and response byte itself.

use crate::case::{Case, Level, Stop, check, check_eq};
use crate::cases::endpoint_common::{
    DUT, Done, G, NA, REM, RO, SH, Seen, atomic, check_resp, completion, ep_up, ep_up_with,
    expect_mem, fence, issue, le, load, logged_txns, mem_read, mem_write, one_response, op,
    parse_payload, pattern, raw, raw_dlen, rdma_read, rdma_write, read_resp, resp, send, st, store,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Request, Role, Space};

/// A request, its expected response opcode, status, the requirement giving it, and its data.
type Row = (u16, Vec<u8>, u8, u8, &'static str, Vec<u8>);

/// The status of a request whose key names no region and whose range lies in no region:
/// OUT_OF_RANGE or ACCESS_VIOLATION, as the target finds regions by range or by key (EP-2-7).
const RANGE_OR_KEY: u8 = 0xFF;

/// [`check_resp`], with [`RANGE_OR_KEY`] taking either status.
fn check_refusal(
    t: &crate::cases::endpoint_common::Txn,
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

/// A MUST-level endpoint case.
pub(crate) fn case(
    id: &'static str,
    title: &'static str,
    reqs: &'static [&'static str],
    needs: &'static [&'static str],
    run: fn(&mut Ctx<'_>) -> Result<(), Stop>,
) -> Case {
    Case {
        id,
        title,
        reqs,
        level: Level::Must,
        role: Role::Endpoint,
        needs,
        run,
    }
}

/// The endpoint cases.
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "EPT-OPS-1",
            "as a target, LOAD and STORE are answered LOAD_RESP and STORE_RESP with the request's tag, \
             on VC 2, OK, the bytes read exactly; a store writes its bytes and nothing else",
            &[
                "TXN-2-1",
                "TXN-2-2",
                "TXN-4-2",
                "EP-8-6",
                "WIRE-6.1-2",
                "EP-12-3",
                "EP-2-1",
                "EP-8-2",
            ],
            &[],
            target_load_store,
        ),
        case(
            "EPT-OPS-2",
            "as a target, the three atomics at 4 and 8 bytes return the exact old value and leave \
             the exact new one",
            &["TXN-2-3", "EP-2-8", "TXN-3-3", "EP-8-6"],
            &["atomics"],
            target_atomics,
        ),
        case(
            "EPT-ORD-1",
            "as a target, a FENCE is answered FENCE_RESP OK on VC 2 only once the requests before \
             it are performed",
            &["TXN-4-6", "EP-8-6", "EP-8-2"],
            &[],
            target_fence,
        ),
        case(
            "EPT-RDMA-1",
            "as a target, an RDMA write whose segments arrive out of order is written exactly and \
             answered by one RDMA_COMPLETION OK on VC 2",
            &["TXN-2-4", "EP-6-5", "EP-8-6", "TXN-2-8"],
            &["rdma"],
            target_rdma_write,
        ),
        case(
            "EPT-RDMA-2",
            "as a target, an RDMA_READ is answered by RDMA_READ_RESP segments on VC 3 that cover \
             the read exactly, aligned, with the bytes of memory",
            &["EP-6-8", "EP-8-6", "TXN-2-8", "TXN-2-1"],
            &["rdma"],
            target_rdma_read,
        ),
        case(
            "EPT-PROT-1",
            "as a target, loads and stores outside one region are refused OUT_OF_RANGE (before \
             the key), with a wrong key or without permission ACCESS_VIOLATION, without data, \
             and change no byte",
            &[
                "EP-2-3",
                "EP-2-4",
                "EP-2-7",
                "EP-2-13",
                "TXN-3-4",
                "WIRE-6.9-1",
            ],
            &[],
            target_protection,
        ),
        case(
            "EPT-PROT-2",
            "as a target, atomics are checked range, key and permission, then alignment \
             (MISALIGNED), and a refused atomic changes no byte",
            &[
                "EP-2-5",
                "EP-2-7",
                "EP-2-4",
                "EP-2-13",
                "TXN-3-4",
                "WIRE-6.9-1",
            ],
            &["atomics"],
            target_atomic_protection,
        ),
        case(
            "EPT-PROT-3",
            "as a target, a refused RDMA write is answered once at its first segment and writes \
             nothing; a refused RDMA_READ gets one RDMA_READ_RESP with the status and no data",
            &["EP-6-4", "EP-6-8", "TXN-3-4", "TXN-2-8", "EP-8-6"],
            &["rdma"],
            target_rdma_protection,
        ),
        case(
            "EPT-RX-1",
            "as a target, an unknown request is answered UNSUPPORTED and a malformed one MALFORMED, \
             on VC 2 whatever VC it came on, and the frame's next transactions are served",
            &[
                "EP-8-3",
                "WIRE-6.1-5",
                "WIRE-6.1-6",
                "WIRE-6.1-10",
                "EP-8-6",
            ],
            &[],
            target_unknown_malformed,
        ),
        case(
            "EPT-RX-2",
            "a frame for another GPU is discarded and counted in misdelivered; malformed network \
             headers are counted in malformed_frames; a structural error ends its frame, counted \
             in malformed_txns, after the transactions before it are served",
            &[
                "EP-8-1",
                "WIRE-5-3",
                "WIRE-5-7",
                "WIRE-6.1-3",
                "WIRE-6.1-4",
                "WIRE-6.1-11",
                "EP-10-1",
            ],
            &[],
            target_discards,
        ),
        case(
            "EPT-RX-4",
            "as a target, a request on a response VC (2 or 3) or above VC 3 is discarded \
             unanswered and counted in wrong_vc_txns, as is a response on VC 0, while the same \
             request on VC 0 is served",
            &["EP-3-7", "EP-3-1", "EP-13-12"],
            &[],
            target_wrong_vc,
        ),
        case(
            "EPT-REQ-1",
            "as a requester, loads, stores and atomics go out on VC 0 with unique tags and exact \
             fields, and complete OK with the data the target returned",
            &[
                "EP-5-1",
                "TXN-3-1",
                "TXN-3-3",
                "EP-3-1",
                "WIRE-6.1-1",
                "EP-12-3",
                "TXN-4-7",
            ],
            &[],
            requester_completions,
        ),
        case(
            "EPT-REQ-2",
            "as a requester, every target status is carried to the completion, an unknown one \
             with its raw value, and no data comes with a refusal",
            &["TXN-3-2", "WIRE-6.9-2", "TXN-3-3", "TXN-3-1"],
            &[],
            requester_statuses,
        ),
        case(
            "EPT-REQ-3",
            "as a requester, a response with the wrong opcode, an unknown tag, from another GPU \
             than the target, of another length than asked, or after its operation completed is \
             discarded and counted, never reported",
            &["EP-5-4", "EP-9-4", "TXN-3-1"],
            &[],
            requester_discards,
        ),
        case(
            "EPT-ORD-2",
            "as a requester, a fence completes only after every operation issued before it",
            &["TXN-4-5", "EP-5-6", "TXN-3-1"],
            &[],
            requester_fence,
        ),
        case(
            "EPT-ORD-3",
            "as a requester, the requests of an ordered stream leave on one port and path id, \
             on VC 0, in issue order",
            &["EP-4-1", "TXN-4-1", "EP-3-4"],
            &[],
            requester_stream,
        ),
        case(
            "EPT-RDMA-3",
            "as a requester, an RDMA write goes out as RDMA_WRITE segments on VC 1 with one tag, \
             aligned offsets, min(segment, rest) lengths, covering the write once, and completes \
             on its RDMA_COMPLETION",
            &["EP-6-2", "EP-6-11", "EP-6-16", "EP-3-1", "TXN-3-1"],
            &[],
            requester_rdma_write,
        ),
        case(
            "EPT-RDMA-4",
            "as a requester, an RDMA read is asked in chunks with their own tags covering the read, \
             segments answered out of order are placed at their offsets, a segment already \
             placed changes nothing, and it completes OK once",
            &[
                "EP-6-7", "EP-6-10", "TXN-2-5", "EP-6-16", "EP-3-1", "EP-6-18",
            ],
            &[],
            requester_rdma_read,
        ),
        case(
            "EPT-DL-1",
            "as a requester, an atomic that is never answered is not sent again and completes \
             TIMEOUT; a load never answered is retried and completes TIMEOUT",
            &[
                "TXN-3-7", "TXN-5-4", "EP-9-3", "TXN-3-3", "TXN-3-1", "EP-9-2", "EP-5-8", "EP-13-4",
            ],
            &[],
            requester_timeout,
        ),
        case(
            "EPT-DL-2",
            "as a requester, an operation answered BUSY is sent again after a back-off that \
             doubles, counts its retries, and completes with the final answer",
            &["EP-9-5", "TXN-3-8", "EP-10-1", "EP-13-5"],
            &[],
            requester_busy,
        ),
        case(
            "EPT-RDMA-5",
            "as a target, RDMA_WRITE segments that break the alignment of EP-6-3 or run past \
             their total length are answered RDMA_COMPLETION MALFORMED and write nothing",
            &["EP-6-3", "WIRE-6.7-1", "WIRE-6.1-6", "TXN-3-4"],
            &["rdma"],
            target_rdma_malformed,
        ),
        case(
            "EPT-RX-3",
            "as a requester, a response with an undefined opcode is counted in unknown_responses, \
             one that breaks its encoding in bad_responses, and neither completes anything",
            &["EP-10-2", "WIRE-6.1-7", "WIRE-6.1-9", "WIRE-6.9-4"],
            &[],
            requester_bad_responses,
        ),
        case(
            "EPT-REQ-4",
            "an operation or descriptor with a bad parameter is refused at issue and sends nothing",
            &["EP-5-3", "EP-6-1"],
            &[],
            requester_refused_at_issue,
        ),
        case(
            "EPT-MEM-1",
            "a registration that overlaps a region, has length 0 or runs past the end of its \
             space is refused, and the table is unchanged",
            &["EP-2-2", "EP-2-3"],
            &[],
            register_refusals,
        ),
        case(
            "EPT-PATH-1",
            "a response leaves by the port its request came in on",
            &["EP-4-4", "EP-3-4"],
            &[],
            response_on_request_port,
        ),
        case(
            "EPT-ID-1",
            "every frame of port 0 has source MAC 02:00:gg:gg:00:00, and a reset sets every \
             counter to zero",
            &["EP-12-4", "EP-12-1"],
            &[],
            identity_and_reset,
        ),
        case(
            "EPT-DL-3",
            "as a requester, an operation answered BUSY at every attempt completes BUSY once its \
             retries are spent, each retry counted",
            &["EP-9-8", "EP-9-5", "TXN-3-8", "EP-10-1"],
            &[],
            requester_busy_to_the_end,
        ),
        case(
            "EPT-DL-4",
            "as a requester, an operation issued while no port is usable completes NO_PATH",
            &["TXN-3-6", "TXN-3-1", "TXN-3-3", "EP-13-6"],
            &[],
            requester_no_path,
        ),
        case(
            "EPT-DL-5",
            "as a requester, an atomic whose request frame the link reports of unknown fate \
             completes FATE_UNKNOWN and is not sent again",
            &["TXN-3-5", "TXN-3-1"],
            &[],
            requester_fate_unknown,
        ),
        case(
            "EPT-OPS-3",
            "as a target with SHARED, requests with the SHARED flag address shared memory, \
             protected by its own regions",
            &[
                "TXN-2-6", "TXN-2-1", "TXN-2-2", "EP-2-1", "EP-2-3", "EP-2-4",
            ],
            &["shared"],
            target_shared,
        ),
        case(
            "EPT-RDMA-6",
            "as a target, an RDMA write without progress for op_timeout is forgotten and counted",
            &["EP-6-15", "EP-6-5", "EP-10-1"],
            &["rdma"],
            target_write_expiry,
        ),
        case(
            "EPT-PATH-2",
            "as a requester, a port whose link is down takes no part in path choice: every \
             request leaves by the usable port",
            &["EP-3-2", "EP-4-2", "TXN-3-1"],
            &[],
            requester_usable_ports_only,
        ),
        case(
            "EPT-DL-6",
            "as a requester, a load whose frame the link reports of unknown fate is sent again \
             after the loss, counted as a retry, and completes with the answer to the retry",
            &["TXN-5-3", "EP-9-6", "TXN-5-7", "EP-10-1", "TXN-3-1"],
            &[],
            requester_unknown_fate_retry,
        ),
        case(
            "EPT-PACK-1",
            "a transaction waiting to share its frame leaves within the longest pack_delay \
             (100 us), and packed frames keep the order of their path",
            &["EP-7-2", "EP-7-3", "WIRE-5-5"],
            &["packing"],
            packing_bounds,
        ),
        case(
            "EPT-DL-7",
            "as a target, a response whose frame the link reports of unknown fate is not sent \
             again, and is counted in responses_lost",
            &["TXN-5-8", "EP-10-1"],
            &[],
            target_unknown_fate_response,
        ),
        case(
            "EPT-PATH-3",
            "as a target, responses still queued at a port that goes down are sent on another \
             usable port, each once, and counted in moved",
            &["TXN-5-5", "EP-9-1", "EP-4-4", "TXN-2-8", "EP-10-1"],
            &[],
            target_response_moved,
        ),
        case(
            "EPT-REQ-5",
            "as a requester, issue is refused once every tag is held, sending nothing of the \
             refused operation, and the tag of an operation answered at its first attempt is free \
             at once",
            &["EP-5-2", "EP-5-1", "EP-5-7", "TXN-3-1"],
            &[],
            requester_tags_exhausted,
        ),
        case(
            "EPT-REQ-6",
            "as a requester, fences outstanding behind an unanswered load are bounded: the fence \
             past the bound (65536 at most) is refused and nothing of it recorded; each fence \
             taken completes once, OK, when the load is answered, and a fence is taken again",
            &["EP-5-9", "TXN-4-5"],
            &[],
            requester_fences_bounded,
        ),
        case(
            "EPT-CAP-1",
            "an endpoint without RDMA answers the first RDMA_WRITE segment RDMA_COMPLETION \
             UNSUPPORTED, the others not at all, an RDMA_READ with one RDMA_READ_RESP \
             UNSUPPORTED on VC 3, and writes nothing",
            &["EP-11-2", "TXN-2-8"],
            &[],
            cap_no_rdma,
        ),
        case(
            "EPT-CAP-2",
            "an endpoint without ATOMICS answers every atomic UNSUPPORTED, aligned or not, and \
             changes nothing",
            &["EP-11-3"],
            &[],
            cap_no_atomics,
        ),
        case(
            "EPT-CAP-3",
            "an endpoint without SHARED answers UNSUPPORTED every request with the SHARED flag",
            &["EP-11-4", "EP-11-2", "EP-11-3"],
            &[],
            cap_no_shared,
        ),
        case(
            "EPT-CAP-4",
            "an endpoint without PACKING sends one transaction per DATA frame",
            &["CLS-3-1", "EP-11-5"],
            &[],
            cap_no_packing,
        ),
        case(
            "EPT-CAP-5",
            "every port announces the role endpoint and exactly the declared capabilities in its \
             INIT and INIT_ECHO",
            &["EP-11-1", "CLS-2-1", "CLS-2-2", "CLS-3-2", "CLS-3-3"],
            &[],
            cap_announced,
        ),
    ]
}

// ----- the device as a target ------------------------------------------------------------------

fn target_load_store(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_atomics(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_fence(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x300;
    let d1 = pattern(200, 1);
    let d2 = pattern(100, 2);
    let seg = pattern(512, 3);
    let rdma = ctx.has_cap("rdma");
    if rdma {
        // An RDMA write's two segments first, on VC 1.
        send(
            ctx,
            0,
            1,
            &[rdma_write(0x0310, 0, G.2, G.0 + 0x800, 0, 512, &seg[..256])],
        )?;
        send(
            ctx,
            0,
            1,
            &[rdma_write(
                0x0310,
                0,
                G.2,
                G.0 + 0x800,
                256,
                512,
                &seg[256..],
            )],
        )?;
        // Let both reach the device before the FENCE is sent: the peer's link may send frames of
        // different VCs in any order, and only requests received before the FENCE are ordered.
        ctx.run_for(3_000)?;
    }
    send(
        ctx,
        0,
        0,
        &[
            store(0x0301, 0, G.2, a, &d1),
            store(0x0302, 0, G.2, a + 200, &d2),
            fence(0x0303),
        ],
    )?;
    let mut seen = Seen::default();
    let mut at_fence = None;
    let ok = ctx.run_until(50_000, |c| {
        seen.poll(c, 1);
        if at_fence.is_none() && seen.txns.iter().any(|t| t.tag == 0x0303) {
            at_fence = Some((
                mem_read(c, Space::Global, a, 300).unwrap_or_default(),
                mem_read(c, Space::Global, G.0 + 0x800, 512).unwrap_or_default(),
            ));
        }
        at_fence.is_some() && seen.txns.len() >= 3 + usize::from(rdma)
    })?;
    seen.check_parse()?;
    check(
        ok,
        "TXN-2-8",
        "the two STORE_RESPs and the FENCE_RESP within 50 us",
        || {
            format!(
                "{:?}",
                seen.txns.iter().map(|t| t.show()).collect::<Vec<_>>()
            )
        },
    )?;
    let t = one_response(&seen, 0x0303, "the FENCE")?;
    check_resp(t, 0x86, st::OK, &[], "TXN-4-6")?;
    let (ls, wr) = at_fence.unwrap_or_default();
    let want = [d1.clone(), d2.clone()].concat();
    check(
        ls == want,
        "TXN-4-6",
        "when the FENCE_RESP arrives, both stores before it are performed",
        || format!("memory then: {}", hex::encode(&ls)),
    )?;
    if rdma {
        check(
            wr == seg,
            "TXN-4-6",
            "when the FENCE_RESP arrives, the RDMA write received before it is performed",
            || format!("memory then: {}", hex::encode(&wr)),
        )?;
    }
    Ok(())
}

fn target_rdma_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_atomic_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_rdma_protection(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_unknown_malformed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0x900;
    let d = pattern(8, 0x21);
    let mut load_hlen5 = load(0x0A02, 0, G.2, a, 8);
    load_hlen5.truncate(20);
    load_hlen5[4] = 5;
    send(
        ctx,
        0,
        0,
        &[
            raw(0x3F, 0, 0x0A01, 2, &[], &[]),
            load_hlen5,
            load(0x0A03, 0, G.2, a, 0),
            raw_dlen(op::FENCE, 0, 0x0A04, 2, 4, &[], &[0; 4]),
            atomic(op::FADD, 0x0A05, G.2, a, &[0; 6]),
            store(0x0A06, 0, G.2, a, &d),
            load(0x0A07, 0, G.2, a, 8),
            load(0x0A08, 0, G.2, a, 257),
        ],
    )?;
    // Requests on the RDMA VC: an unknown one and a LOAD; both answered on VC 2.
    send(
        ctx,
        0,
        1,
        &[
            raw(0x7E, 0, 0x0A09, 3, &[0; 4], &[]),
            load(0x0A0A, 0, G.2, a, 4),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 10)?;
    let expect: [(u16, u8, u8, &'static str, Vec<u8>); 10] = [
        (0x0A01, 0xBF, st::UNSUPPORTED, "WIRE-6.1-5", vec![]),
        (0x0A02, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A03, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A04, 0x86, st::MALFORMED, "WIRE-6.1-10", vec![]),
        (0x0A05, 0x83, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A06, 0x82, st::OK, "EP-8-3", vec![]),
        (0x0A07, 0x81, st::OK, "EP-8-3", d.clone()),
        (0x0A08, 0x81, st::MALFORMED, "WIRE-6.1-6", vec![]),
        (0x0A09, 0xFE, st::UNSUPPORTED, "WIRE-6.1-5", vec![]),
        (0x0A0A, 0x81, st::OK, "EP-8-3", d[..4].to_vec()),
    ];
    for (tag, opcode, status, req, data) in &expect {
        let t = one_response(&seen, *tag, "an unknown or malformed request")?;
        check_resp(t, *opcode, *status, data, req)?;
    }
    Ok(())
}

/// Checks that nothing answered `tag` (`why` says why nothing should have).
fn no_answer(seen: &Seen, tag: u16, req: &'static str, why: &str) -> Result<(), Stop> {
    check(
        seen.with_tag(tag, true).is_empty(),
        req,
        format!("no answer to tag {tag:#06x}, {why}"),
        || {
            seen.with_tag(tag, true)
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )
}

fn target_wrong_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0xB80;
    let before = ctx.counter("wrong_vc_txns")?;
    let served = ctx.counter("requests_served")?;
    //= docs/spec/endpoint.md#3-ports-and-virtual-channels
    //= type=test
    //# EP-3-7 A receiver MUST take a request only on VC 0 or 1 and a response only on VC 2 or 3: a
    //# transaction of either class on a VC of the other, or on a VC above 3, MUST be discarded
    //# unanswered and counted in `wrong_vc_txns`, and the frame's other transactions taken as
    //# usual.
    // A STORE on VC 2, a STORE and a LOAD on VC 3, then a stray response on VC 0.
    send(ctx, 0, 2, &[store(0x0C01, 0, G.2, a, &[0xC1; 8])])?;
    send(
        ctx,
        0,
        3,
        &[
            store(0x0C02, 0, G.2, a, &[0xC2; 8]),
            load(0x0C03, 0, G.2, a, 8),
        ],
    )?;
    send(ctx, 0, 0, &[resp(0x82, st::OK, 0x0C04, &[])])?;
    // Then a LOAD on VC 0: the stores above changed nothing.
    send(ctx, 0, 0, &[load(0x0C05, 0, G.2, a, 8)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.iter().any(|t| t.tag == 0x0C05))?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for tag in [0x0C01, 0x0C02, 0x0C03] {
        no_answer(&seen, tag, "EP-3-7", "a request on a response VC")?;
    }
    let t = one_response(&seen, 0x0C05, "the LOAD on VC 0 after them")?;
    check_resp(t, 0x81, st::OK, &[0; 8], "EP-3-7")?;
    let after = ctx.counter("wrong_vc_txns")?;
    check_eq(
        "EP-3-7",
        "wrong_vc_txns up by 4 (three requests on response VCs, one response on VC 0)",
        after.wrapping_sub(before),
        4,
    )?;
    //= docs/spec/endpoint.md#13-what-the-text-fixes-for-an-implementer
    //= type=test
    //# EP-13-12 [...] `requests_served` MUST count each request the target answers after reading it
    //# whole
    check_eq(
        "EP-13-12",
        "requests_served up by 1 (the LOAD on VC 0; the requests discarded unanswered not)",
        ctx.counter("requests_served")?.wrapping_sub(served),
        1,
    )
}

fn target_discards(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let a = G.0 + 0xA00;
    let before_m = ctx.counter("misdelivered")?;
    let before_f = ctx.counter("malformed_frames")?;
    let before_t = ctx.counter("malformed_txns")?;
    // For GPU 77: not ours.
    let mut p = crate::cases::endpoint_common::data_payload(
        77,
        REM,
        &[store(0x0B01, 0, G.2, a, &[0xFF; 8])],
    );
    ctx.peer_submit(0, 0, &p)?;
    // Transaction count 0.
    p = crate::cases::endpoint_common::data_payload(DUT, REM, &[load(0x0B02, 0, G.2, a, 8)]);
    p[5] = 0;
    ctx.peer_submit(0, 0, &p)?;
    // Source 0xFFFF.
    p = crate::cases::endpoint_common::data_payload(DUT, REM, &[load(0x0B03, 0, G.2, a, 8)]);
    p[2] = 0xFF;
    p[3] = 0xFF;
    ctx.peer_submit(0, 0, &p)?;
    // Payload length 4, below the smallest transaction.
    let mut short = DUT.to_be_bytes().to_vec();
    short.extend(REM.to_be_bytes());
    short.extend([0, 1, 0, 4, 0, 0, 0, 0]);
    ctx.peer_submit(0, 0, &short)?;
    // Count 2, one transaction: the STORE is served, then the structural error ends the frame.
    p = crate::cases::endpoint_common::data_payload(
        DUT,
        REM,
        &[store(0x0B04, 0, G.2, a + 8, &[0x5A; 4])],
    );
    p[5] = 2;
    ctx.peer_submit(0, 0, &p)?;
    // Count 1 and 8 bytes after the transaction inside the payload length: the STORE is served,
    // the rest discarded.
    p = crate::cases::endpoint_common::data_payload(
        DUT,
        REM,
        &[store(0x0B06, 0, G.2, a + 12, &[0x6B; 4]), vec![0; 8]],
    );
    p[5] = 1;
    ctx.peer_submit(0, 0, &p)?;
    // Then a good LOAD.
    send(ctx, 0, 0, &[load(0x0B05, 0, G.2, a, 16)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.iter().any(|t| t.tag == 0x0B05))?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    for tag in [0x0B01, 0x0B02, 0x0B03] {
        let req = if tag == 0x0B01 { "EP-8-1" } else { "WIRE-5-3" };
        no_answer(&seen, tag, req, "whose frame is discarded")?;
    }
    let t = one_response(&seen, 0x0B04, "the STORE before the structural error")?;
    check_resp(t, 0x82, st::OK, &[], "WIRE-6.1-11")?;
    let t = one_response(&seen, 0x0B06, "the STORE before the bytes left over")?;
    check_resp(t, 0x82, st::OK, &[], "WIRE-6.1-4")?;
    let t = one_response(&seen, 0x0B05, "the LOAD after the discarded frames")?;
    let mut want = vec![0u8; 8];
    want.extend([0x5A; 4]);
    want.extend([0x6B; 4]);
    check_resp(t, 0x81, st::OK, &want, "EP-8-1")?;
    check_eq(
        "EP-8-1",
        "misdelivered",
        ctx.counter("misdelivered")? - before_m,
        1,
    )?;
    check_eq(
        "WIRE-5-3",
        "malformed_frames",
        ctx.counter("malformed_frames")? - before_f,
        3,
    )?;
    check_eq(
        "WIRE-6.1-3",
        "malformed_txns",
        ctx.counter("malformed_txns")? - before_t,
        2,
    )
}

// ----- the device as a requester ---------------------------------------------------------------

/// The harness answers `t` (a request the device sent) on the port it came by, on VC 2 (VC 3
/// for read data).
fn answer(ctx: &mut Ctx<'_>, t_port: u16, vc: u8, txns: &[Vec<u8>]) -> Result<(), Stop> {
    send(ctx, t_port, vc, txns)
}

fn check_request(t: &crate::cases::endpoint_common::Txn, opcode: u8, vc: u8) -> Result<(), Stop> {
    check(
        t.opcode == opcode,
        "TXN-3-1",
        format!("a request with opcode {opcode:#04x}"),
        || t.show(),
    )?;
    check(t.vc == vc, "EP-3-1", format!("on VC {vc}"), || t.show())?;
    check(
        t.dst == REM && t.src == DUT,
        "EP-12-3",
        format!("from GPU {DUT} to GPU {REM}"),
        || t.show(),
    )?;
    Ok(())
}

fn requester_completions(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let key = 0x0C0C_0001;
    let sd = pattern(5, 0x31);
    let ops = [
        (LsOp::Load { len: 8 }, 0x2000u64, op::LOAD),
        (
            LsOp::Store {
                data: hex::encode(&sd),
            },
            0x3001,
            op::STORE,
        ),
        (LsOp::FetchAdd { width: 8, value: 5 }, 0x4000, op::FADD),
        (
            LsOp::Swap {
                width: 4,
                value: 0xCAFE_BABE,
            },
            0x4008,
            op::SWAP,
        ),
        (
            LsOp::CompareSwap {
                width: 8,
                compare: 1,
                value: 2,
            },
            0x4010,
            op::CAS,
        ),
    ];
    let mut tags = Vec::new();
    for (o, addr, _) in &ops {
        tags.push(issue(ctx, Space::Global, key, *addr, o.clone(), None)?);
    }
    let mut uniq = tags.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check(
        uniq.len() == tags.len(),
        "EP-5-1",
        "a distinct tag for each outstanding operation",
        || format!("tags {tags:?}"),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= ops.len())?;
    let load_data = pattern(8, 0x90);
    let answers: [Vec<u8>; 5] = [
        load_data.clone(),
        vec![],
        le(0x1234, 8),
        le(0x0BAD_F00D, 4),
        le(1, 8),
    ];
    for (i, (o, addr, opcode)) in ops.iter().enumerate() {
        let tag = tags[i];
        let v = seen.with_tag(tag, false);
        check(
            v.len() == 1,
            "EP-5-1",
            format!("one request carrying tag {tag:#06x}"),
            || {
                seen.txns
                    .iter()
                    .map(|t| t.show())
                    .collect::<Vec<_>>()
                    .join("; ")
            },
        )?;
        let t = v[0];
        check_request(t, *opcode, 0)?;
        check(
            t.word(0) == key && t.dword(4) == *addr,
            "WIRE-6.1-1",
            format!("key {key:#x}, address {addr:#x}"),
            || t.show(),
        )?;
        let (hlen, data) = match o {
            LsOp::Load { .. } => (6, vec![]),
            LsOp::Store { .. } => (5, sd.clone()),
            LsOp::FetchAdd { value, .. } => (5, le(*value, 8)),
            LsOp::Swap { value, .. } => (5, le(*value, 4)),
            LsOp::CompareSwap { compare, value, .. } => {
                (5, [le(*compare, 8), le(*value, 8)].concat())
            }
        };
        check(
            t.hlen == hlen && t.data == data,
            "WIRE-6.1-1",
            format!("hlen {hlen}, data {}", hex::encode(&data)),
            || t.show(),
        )?;
        if matches!(o, LsOp::Load { .. }) {
            check_eq("WIRE-6.1-1", "LOAD length", t.half(12), 8)?;
        }
        answer(
            ctx,
            t.port,
            2,
            &[resp(*opcode | 0x80, st::OK, tag, &answers[i])],
        )?;
    }
    seen.run(ctx, ports, 50_000, |s| s.done.len() >= ops.len())?;
    seen.run(ctx, ports, 5_000, |_| false)?;
    for (i, tag) in tags.iter().enumerate() {
        let d = seen.done_tag(*tag);
        check(
            d.len() == 1,
            "TXN-3-1",
            format!("one completion for tag {tag:#06x}"),
            || format!("{d:?}"),
        )?;
        let want = if answers[i].is_empty() {
            None
        } else {
            Some(answers[i].clone())
        };
        check(
            d[0].status == "OK" && d[0].data == want,
            "TXN-3-3",
            format!("OK with data {:?}", want.as_ref().map(hex::encode)),
            || format!("{:?}", d[0]),
        )?;
    }
    Ok(())
}

fn requester_statuses(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let statuses: [(u8, &str); 7] = [
        (1, "ACCESS_VIOLATION"),
        (2, "OUT_OF_RANGE"),
        (3, "UNSUPPORTED"),
        (4, "POISONED"),
        (5, "MALFORMED"),
        (6, "MISALIGNED"),
        (0x42, "UNKNOWN(0x42)"),
    ];
    let mut tags = Vec::new();
    for i in 0..statuses.len() {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x100 * i as u64,
            LsOp::Load { len: 4 },
            None,
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= statuses.len())?;
    for (i, (s, _)) in statuses.iter().enumerate() {
        let v = seen.with_tag(tags[i], false);
        let t = v.first().ok_or_else(|| {
            Stop::fail(
                "TXN-3-1",
                format!("a LOAD with tag {:#06x}", tags[i]),
                "none",
            )
        })?;
        answer(ctx, t.port, 2, &[resp(0x81, *s, tags[i], &[])])?;
    }
    seen.run(ctx, ports, 50_000, |s| s.done.len() >= statuses.len())?;
    for (i, (s, name)) in statuses.iter().enumerate() {
        let d = seen.done_tag(tags[i]);
        check(
            d.len() == 1,
            "TXN-3-1",
            format!("one completion for tag {:#06x}", tags[i]),
            || format!("{d:?}"),
        )?;
        let req = if *s == 0x42 { "WIRE-6.9-2" } else { "TXN-3-2" };
        check(d[0].status == *name, req, format!("status {name}"), || {
            format!("status {}", d[0].status)
        })?;
        check(
            d[0].data.is_none(),
            "TXN-3-3",
            "no data with a refusal",
            || format!("{:?}", d[0]),
        )?;
    }
    Ok(())
}

fn requester_discards(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let tag = issue(ctx, Space::Global, 0x77, 0x500, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| !s.txns.is_empty())?;
    let port = seen
        .with_tag(tag, false)
        .first()
        .map(|t| t.port)
        .ok_or_else(|| Stop::fail("TXN-3-1", "the LOAD on the wire", "none"))?;
    let base = ctx.counter("responses_discarded")?;
    // A STORE_RESP with the load's tag: the wrong opcode.
    answer(ctx, port, 2, &[resp(0x82, st::OK, tag, &[])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response of the wrong opcode",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        1,
    )?;
    // A LOAD_RESP for a tag no operation holds.
    let other = tag ^ 0x4000;
    answer(ctx, port, 2, &[resp(0x81, st::OK, other, &[1, 2, 3, 4])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response whose tag no operation holds",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        2,
    )?;
    // A LOAD_RESP for the load's tag from another GPU than its target, then one of another
    // length than the load asked for.
    //= docs/spec/endpoint.md#5-load-store-unit
    //= type=test
    //# EP-5-4 A response MUST complete the operation holding its tag only if it comes from that
    //# operation's target GPU, its opcode answers the operation's request and its length is the
    //# one the request asks for
    let stranger = crate::cases::endpoint_common::data_payload(
        DUT,
        REM + 1,
        &[resp(0x81, st::OK, tag, &[1, 2, 3, 4])],
    );
    ctx.peer_submit(port, 2, &stranger)?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    answer(
        ctx,
        port,
        2,
        &[resp(0x81, st::OK, tag, &[1, 2, 3, 4, 5, 6, 7, 8])],
    )?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-5-4",
        "no completion from a response of another GPU or of another length",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-5-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        4,
    )?;
    // The right answer, then the same again.
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[9, 8, 7, 6])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[5, 5, 5, 5])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    let d: Vec<&Done> = seen.done.iter().collect();
    check(
        d.len() == 1
            && d[0].tag == Some(tag)
            && d[0].status == "OK"
            && d[0].data == Some(vec![9, 8, 7, 6]),
        "TXN-3-1",
        "one completion, OK with 09080706",
        || format!("{d:?}"),
    )?;
    check_eq(
        "EP-9-4",
        "responses_discarded",
        ctx.counter("responses_discarded")? - base,
        5,
    )
}

fn requester_fence(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let s = issue(
        ctx,
        Space::Global,
        0x77,
        0x600,
        LsOp::Store {
            data: "0102".into(),
        },
        None,
    )?;
    let l = issue(ctx, Space::Global, 0x77, 0x700, LsOp::Load { len: 2 }, None)?;
    let f = ctx
        .request(&Request::Fence)?
        .id
        .ok_or_else(|| Stop::Harness("fence answered without an id".into()))?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 20_000, |s| s.txns.len() >= 2)?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "TXN-4-5",
        "no completion while the store and the load are unanswered",
        || format!("{:?}", seen.done),
    )?;
    let port_of = |seen: &Seen, tag: u16| seen.with_tag(tag, false).first().map(|t| t.port);
    let (Some(ps), Some(pl)) = (port_of(&seen, s), port_of(&seen, l)) else {
        return Err(Stop::fail(
            "TXN-3-1",
            "the STORE and the LOAD on the wire",
            format!("{:?}", seen.txns),
        ));
    };
    answer(ctx, ps, 2, &[resp(0x82, st::OK, s, &[])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done_id(f).is_empty(),
        "TXN-4-5",
        "the fence not complete while the load is outstanding",
        || format!("{:?}", seen.done),
    )?;
    answer(ctx, pl, 2, &[resp(0x81, st::OK, l, &[7, 7])])?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    let order: Vec<String> = seen
        .done
        .iter()
        .map(|d| match (d.tag, d.id) {
            (Some(t), _) if t == s => "store".to_string(),
            (Some(t), _) if t == l => "load".to_string(),
            (_, Some(i)) if i == f => "fence".to_string(),
            _ => format!("{d:?}"),
        })
        .collect();
    check_eq(
        "TXN-4-5",
        "completions in order",
        order,
        vec!["store".into(), "load".into(), "fence".into()],
    )?;
    let d = seen.done_id(f);
    check(
        d[0].status == "OK" && d[0].data.is_none(),
        "EP-5-6",
        "the fence completes OK without data",
        || format!("{:?}", d[0]),
    )
}

fn requester_stream(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let mut tags = Vec::new();
    for i in 0..8u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x800 + 0x10 * i,
            LsOp::Store {
                data: format!("{i:02x}"),
            },
            Some(7),
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| s.txns.len() >= 8)?;
    let got: Vec<_> = seen.txns.iter().filter(|t| t.opcode == op::STORE).collect();
    check_eq("TXN-4-1", "STOREs seen", got.len(), 8)?;
    let port = got[0].port;
    let path = got[0].path;
    for t in &got {
        check(
            t.port == port && t.path == path && t.vc == 0,
            "EP-4-1",
            format!("every request of the stream on port {port}, path id {path:#04x}, VC 0"),
            || t.show(),
        )?;
    }
    if ctx.desc.ports <= 16 && port == 0 {
        check_eq("EP-3-4", "path id of port 0 (stack 0, port 0)", path, 0)?;
    }
    let order: Vec<u16> = got.iter().map(|t| t.tag).collect();
    check_eq("TXN-4-1", "tags in issue order", order, tags.clone())?;
    for (t, tag) in got.iter().zip(&tags) {
        answer(ctx, t.port, 2, &[resp(0x82, st::OK, *tag, &[])])?;
    }
    seen.run(ctx, ports, 20_000, |s| s.done.len() >= 8)?;
    check_eq("TXN-3-1", "completions", seen.done.len(), 8)
}

fn requester_rdma_write(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let len = 20_000usize;
    let local = 0x10_0000u64;
    let data = pattern(len, 0x5C);
    mem_write(ctx, Space::Global, local, &data)?;
    let (key, raddr) = (0x0D0D_0001u32, 0x90_0000u64);
    let id = ctx
        .request(&Request::Post {
            write: true,
            local_space: Space::Global,
            local_addr: local,
            dst: REM,
            space: Space::Global,
            key,
            addr: raddr,
            len: len as u64,
        })?
        .id
        .ok_or_else(|| Stop::Harness("post answered without an id".into()))?;
    let mut seen = Seen::default();
    let covered = |s: &Seen| {
        s.requests(op::RDMA_WRITE)
            .iter()
            .map(|t| usize::from(t.dlen))
            .sum::<usize>()
            >= len
    };
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

fn requester_rdma_read(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let len = 150_000usize;
    let local = 0x20_0000u64;
    let remote = pattern(len, 0xA7);
    let (key, raddr) = (0x0E0E_0001u32, 0xA0_0000u64);
    let id = ctx
        .request(&Request::Post {
            write: false,
            local_space: Space::Global,
            local_addr: local,
            dst: REM,
            space: Space::Global,
            key,
            addr: raddr,
            len: len as u64,
        })?
        .id
        .ok_or_else(|| Stop::Harness("post answered without an id".into()))?;
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
        let reqs: Vec<crate::cases::endpoint_common::Txn> =
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

/// `tag_quarantine` stated by EPT-DL-1: long enough that every tag resting after its TIMEOUTs
/// still rests when the case looks (the case lasts a few milliseconds at most).
const DL1_QUARANTINE_NS: u64 = 10_000_000;

fn requester_timeout(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up_with(
        ctx,
        2,
        crate::device::Setup {
            gpu: Some(DUT),
            endpoint: Some(Box::new(crate::device::EndpointParams {
                tag_quarantine_ns: Some(DL1_QUARANTINE_NS),
                ..Default::default()
            })),
            ..crate::cases::common::setup(crate::device::LinkParams::default())
        },
    )?;
    let ports = ctx.desc.ports.min(2);
    let a = issue(
        ctx,
        Space::Global,
        0x77,
        0x900,
        LsOp::FetchAdd { width: 8, value: 1 },
        None,
    )?;
    let l = issue(ctx, Space::Global, 0x77, 0xA00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, ports, 990_000_000, |s| s.done.len() >= 2)?;
    if !done {
        return Err(Stop::Inconclusive(format!(
            "no completion within 990 ms of simulated time (the device's op_timeout may be longer): {:?}",
            seen.done
        )));
    }
    seen.run(ctx, ports, 5_000, |_| false)?;
    let fadds = seen.requests(op::FADD);
    check(
        fadds.len() == 1,
        "TXN-5-4",
        "the atomic sent once: an atomic is not retried",
        || {
            fadds
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    let da = seen.done_tag(a);
    check(
        da.len() == 1 && da[0].status == "TIMEOUT" && da[0].data.is_none(),
        "TXN-3-7",
        "the atomic completes once, TIMEOUT, without data",
        || format!("{:?}", seen.done),
    )?;
    let loads = seen.requests(op::LOAD).len() as u64;
    let dl = seen.done_tag(l);
    check(
        dl.len() == 1 && dl[0].status == "TIMEOUT" && dl[0].data.is_none(),
        "TXN-3-7",
        "the load completes once, TIMEOUT, without data",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-10-1",
        "retries (the load's extra attempts)",
        ctx.counter("retries")?,
        loads - 1,
    )?;
    check(
        da[0].at_ns < dl[0].at_ns || loads == 1,
        "TXN-5-4",
        "the load, retried, ends after the atomic",
        || format!("{:?}", seen.done),
    )?;
    // Each attempt after a passed deadline leaves by another port than the one before it.
    if ports >= 2 {
        let by_port: Vec<u16> = seen.requests(op::LOAD).iter().map(|t| t.port).collect();
        check(
            by_port.windows(2).all(|w| w[0] != w[1]),
            "EP-9-2",
            "each retry on a usable port other than the one the attempt before it used",
            || format!("ports of the attempts: {by_port:?}"),
        )?;
    }
    // The tags of operations that ended without their answer rest `tag_quarantine`, stated in
    // the setup: a new operation issued within it gets another tag (or is refused while every
    // tag rests).
    let ended = dl.last().map_or(0, |d| d.at_ns).max(da[0].at_ns);
    if ctx.now().saturating_sub(ended) >= DL1_QUARANTINE_NS {
        return Err(Stop::Harness(format!(
            "the case ran {} ns past the TIMEOUTs, beyond the tag_quarantine it set",
            ctx.now().saturating_sub(ended)
        )));
    }
    match ctx.try_request(&Request::Issue {
        dst: REM,
        space: Space::Global,
        key: 0x77,
        addr: 0xF00,
        op: LsOp::Load { len: 4 },
        stream: None,
    })? {
        Ok(r) => check(
            r.tag.is_some_and(|t| t != a && t != l),
            "EP-5-8",
            format!("a tag other than {a:#06x} and {l:#06x}, which rest after TIMEOUT"),
            || format!("{:?}", r.tag),
        ),
        Err(_) => Ok(()),
    }
}

fn requester_busy(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let tag = issue(ctx, Space::Global, 0x77, 0xB00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let mut waits: Vec<(u64, u64)> = Vec::new();
    for attempt in 0..3 {
        let want = attempt + 1;
        let ok = seen.run(ctx, ports, 200_000, |s| {
            s.requests(op::LOAD).len() >= want || !s.done.is_empty()
        })?;
        if !seen.done.is_empty() {
            let d = &seen.done[0];
            if d.status == "BUSY" {
                return Err(Stop::Inconclusive(format!(
                    "the device gave up after {attempt} BUSY answers: its max_retries is below 2"
                )));
            }
            return Err(Stop::fail(
                "EP-9-5",
                "an operation answered BUSY with a retry left is sent again",
                format!("completed {d:?}"),
            ));
        }
        check(ok, "EP-9-5", "the load sent again after BUSY", || {
            format!("{} LOADs", seen.requests(op::LOAD).len())
        })?;
        let t = seen.requests(op::LOAD)[attempt].clone();
        check(
            t.word(0) == 0x77 && t.dword(4) == 0xB00 && t.half(12) == 4,
            "EP-9-5",
            "the same load sent again, whole",
            || t.show(),
        )?;
        let now = ctx.now();
        if let Some(w) = waits.last_mut() {
            w.1 = now - w.0;
        }
        if attempt < 2 {
            answer(ctx, t.port, 2, &[resp(0x81, st::BUSY, t.tag, &[])])?;
            waits.push((ctx.now(), 0));
        } else {
            answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[4, 3, 2, 1])])?;
        }
    }
    seen.run(ctx, ports, 20_000, |s| !s.done.is_empty())?;
    let d = seen.done.first().cloned();
    check(
        seen.done.len() == 1
            && d.as_ref()
                .is_some_and(|d| d.status == "OK" && d.data == Some(vec![4, 3, 2, 1])),
        "TXN-3-8",
        "one completion, OK with 04030201",
        || format!("{:?}", seen.done),
    )?;
    let _ = (tag, waits);
    // The waits at the device: from the arrival of each BUSY to the first transmission of the
    // retry it caused.
    let busy: Vec<u64> = logged_txns(ctx, false)
        .into_iter()
        .filter(|(_, _, t)| t.opcode == 0x81 && t.fs == st::BUSY)
        .map(|(at, _, _)| at)
        .collect();
    let sends: Vec<u64> = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.opcode == op::LOAD && t.dword(4) == 0xB00)
        .map(|(at, _, _)| at)
        .collect();
    if busy.len() != 2 || sends.len() != 3 {
        return Err(Stop::Harness(format!(
            "the log shows BUSY arrivals {busy:?} and LOAD transmissions {sends:?}"
        )));
    }
    let (d1, d2) = (sends[1] - busy[0], sends[2] - busy[1]);
    check(
        d2 >= d1 + 100,
        "EP-9-5",
        "the second wait longer than the first by busy_backoff (at least 100 ns)",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check(
        d1 >= d2 - d1,
        "EP-9-5",
        "the first wait at least busy_backoff (the difference of the two waits)",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check(
        d2 >= 2 * (d2 - d1),
        "EP-9-5",
        "a back-off that doubles: the second wait at least twice busy_backoff",
        || format!("waits {d1} ns and {d2} ns"),
    )?;
    check_eq("EP-10-1", "retries", ctx.counter("retries")?, 2)?;
    check_eq("EP-10-1", "busy_retries", ctx.counter("busy_retries")?, 2)?;
    check_eq(
        "EP-10-1",
        "completed.load.OK",
        ctx.counter("completed.load.OK")?,
        1,
    )
}

fn target_rdma_malformed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn requester_bad_responses(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    let tag = issue(ctx, Space::Global, 0x77, 0x500, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    seen.run(ctx, ports, 50_000, |s| !s.txns.is_empty())?;
    let port = seen
        .with_tag(tag, false)
        .first()
        .map(|t| t.port)
        .ok_or_else(|| Stop::fail("TXN-3-1", "the LOAD on the wire", "none"))?;
    let (u0, b0) = (
        ctx.counter("unknown_responses")?,
        ctx.counter("bad_responses")?,
    );
    // An undefined response opcode with the load's tag; a LOAD_RESP with hlen 3; a LOAD_RESP
    // OK without data; a LOAD_RESP refused with data.
    answer(
        ctx,
        port,
        2,
        &[
            resp(0xA0, st::OK, tag, &[]),
            raw(0x81, st::OK, tag, 3, &[0; 4], &[1, 2, 3, 4]),
            resp(0x81, st::OK, tag, &[]),
            resp(0x81, st::OUT_OF_RANGE, tag, &[1, 2, 3, 4]),
        ],
    )?;
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "EP-10-2",
        "no completion from unknown or bad responses",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "WIRE-6.1-7",
        "unknown_responses",
        ctx.counter("unknown_responses")? - u0,
        1,
    )?;
    check_eq(
        "WIRE-6.1-9",
        "bad_responses",
        ctx.counter("bad_responses")? - b0,
        3,
    )?;
    answer(ctx, port, 2, &[resp(0x81, st::OK, tag, &[1, 2, 3, 4])])?;
    seen.run(ctx, ports, 10_000, |s| !s.done.is_empty())?;
    check(
        seen.done.len() == 1
            && seen.done[0].status == "OK"
            && seen.done[0].data == Some(vec![1, 2, 3, 4]),
        "TXN-3-1",
        "the load completes OK on its good response",
        || format!("{:?}", seen.done),
    )
}

/// Whether the device refused a request made with [`Ctx::try_request`].
fn refused(r: Result<Result<crate::device::Reply, String>, Stop>) -> Result<bool, Stop> {
    Ok(r?.is_err())
}

fn requester_refused_at_issue(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let from = ctx.log().len();
    let bad_issues: [(&str, u16, u64, LsOp); 4] = [
        ("a load of length 0", REM, 0, LsOp::Load { len: 0 }),
        ("a load of 257 bytes", REM, 0, LsOp::Load { len: 257 }),
        (
            "an atomic of width 2",
            REM,
            0,
            LsOp::FetchAdd { width: 2, value: 1 },
        ),
        (
            "a load whose range wraps",
            REM,
            u64::MAX - 1,
            LsOp::Load { len: 8 },
        ),
    ];
    for (what, dst, addr, o) in bad_issues {
        let r = ctx.try_request(&Request::Issue {
            dst,
            space: Space::Global,
            key: 1,
            addr,
            op: o,
            stream: None,
        });
        check(
            refused(r)?,
            "EP-5-3",
            format!("{what} refused at issue"),
            || "accepted".into(),
        )?;
    }
    let r = ctx.try_request(&Request::Issue {
        dst: 0xFFFF,
        space: Space::Global,
        key: 1,
        addr: 0,
        op: LsOp::Load { len: 4 },
        stream: None,
    });
    check(
        refused(r)?,
        "EP-5-3",
        "a load to GPU 0xFFFF refused at issue",
        || "accepted".into(),
    )?;
    let post = |len: u64, dst: u16| Request::Post {
        write: true,
        local_space: Space::Global,
        local_addr: 0,
        dst,
        space: Space::Global,
        key: 1,
        addr: 0,
        len,
    };
    for (what, req) in [
        ("a descriptor of length 0", post(0, REM)),
        ("a descriptor of 2^32 bytes", post(1 << 32, REM)),
        ("a descriptor to GPU 0xFFFF", post(16, 0xFFFF)),
    ] {
        let r = ctx.try_request(&req);
        check(
            refused(r)?,
            "EP-6-1",
            format!("{what} refused at post"),
            || "accepted".into(),
        )?;
    }
    ctx.run_for(10_000)?;
    let data: Vec<_> = crate::cases::common::sent_since(ctx, from)
        .into_iter()
        .filter(|k| matches!(k, crate::cases::common::Kind::Data(_)))
        .collect();
    check(
        data.is_empty(),
        "EP-5-3",
        "nothing sent for refused operations",
        || format!("{data:?}"),
    )?;
    let done = ctx
        .take_outputs()
        .into_iter()
        .filter(|o| matches!(o, crate::device::Output::Completion { .. }))
        .count();
    check_eq("EP-5-3", "completions of refused operations", done, 0)
}

fn register_refusals(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn response_on_request_port(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    let d = pattern(4, 0x81);
    mem_write(ctx, Space::Global, G.0 + 0x40, &d)?;
    for (port, tag) in [(0u16, 0x1201u16), (1, 0x1202), (1, 0x1203), (0, 0x1204)] {
        send(ctx, port, 0, &[load(tag, 0, G.2, G.0 + 0x40, 4)])?;
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 30_000, |s| s.txns.len() >= 4)?;
    let mut paths = [None, None];
    for (port, tag) in [(0u16, 0x1201u16), (1, 0x1202), (1, 0x1203), (0, 0x1204)] {
        let t = one_response(&seen, tag, "a LOAD")?;
        check_resp(t, 0x81, st::OK, &d, "TXN-2-1")?;
        check(
            t.port == port,
            "EP-4-4",
            format!("the response to tag {tag:#06x} on port {port}"),
            || t.show(),
        )?;
        let p = &mut paths[usize::from(port)];
        check(
            p.is_none_or(|x| x == t.path),
            "EP-3-4",
            "one path id per port",
            || t.show(),
        )?;
        *p = Some(t.path);
    }
    check(
        paths[0] != paths[1],
        "EP-3-4",
        "ports 0 and 1 with different path ids",
        || format!("{paths:?}"),
    )
}

fn identity_and_reset(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    send(ctx, 0, 0, &[load(0x1301, 0, G.2, G.0, 4)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| !s.txns.is_empty())?;
    let want = [0x02, 0x00, (DUT >> 8) as u8, DUT as u8, 0, 0];
    for l in ctx.log().iter().filter(|l| l.from_dut && l.port == 0) {
        check(
            l.bytes.get(6..12) == Some(&want[..]),
            "EP-12-4",
            "source MAC 02:00:00:05:00:00 on port 0",
            || format!("frame at {} ns from {:02x?}", l.time_ns, l.bytes.get(6..12)),
        )?;
    }
    check(
        ctx.counter("requests_served")? == 1,
        "EP-10-1",
        "requests_served 1",
        || "other".into(),
    )?;
    ctx.reset(&crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(Default::default())
    })?;
    let nonzero: Vec<(String, u64)> = ctx
        .counters()?
        .into_iter()
        .filter(|(_, v)| *v != 0)
        .collect();
    check(
        nonzero.is_empty(),
        "EP-12-1",
        "every counter zero after a reset",
        || format!("{nonzero:?}"),
    )
}

fn requester_busy_to_the_end(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    issue(
        ctx,
        Space::Global,
        0x77,
        0xC00,
        LsOp::Store {
            data: "abcd".into(),
        },
        None,
    )?;
    let mut seen = Seen::default();
    let mut answered = 0;
    while seen.done.is_empty() {
        let want = answered + 1;
        let ok = seen.run(ctx, ports, 5_000_000, |s| {
            s.requests(op::STORE).len() >= want || !s.done.is_empty()
        })?;
        if !seen.done.is_empty() {
            break;
        }
        check(
            ok && answered < 17,
            "EP-9-8",
            "a BUSY completion once max_retries (at most 16) are spent",
            || format!("{answered} BUSY answers, no completion"),
        )?;
        let t = seen.requests(op::STORE)[answered].clone();
        answer(ctx, t.port, 2, &[resp(0x82, st::BUSY, t.tag, &[])])?;
        answered += 1;
    }
    seen.run(ctx, ports, 10_000, |_| false)?;
    check(
        seen.done.len() == 1 && seen.done[0].status == "BUSY" && seen.done[0].data.is_none(),
        "EP-9-8",
        "one completion, BUSY",
        || format!("{:?}", seen.done),
    )?;
    check_eq(
        "EP-9-5",
        "requests sent (each answered BUSY)",
        seen.requests(op::STORE).len(),
        answered,
    )?;
    check_eq(
        "EP-10-1",
        "busy_retries",
        ctx.counter("busy_retries")?,
        answered as u64 - 1,
    )?;
    check_eq(
        "EP-10-1",
        "completed.store.BUSY",
        ctx.counter("completed.store.BUSY")?,
        1,
    )
}

fn requester_no_path(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ctx.reset(&crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(Default::default())
    })?;
    // No port comes up.
    let tag = issue(ctx, Space::Global, 0x77, 0xD00, LsOp::Load { len: 4 }, None)?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, 0, 990_000_000, |s| !s.done.is_empty())?;
    if !done {
        return Err(Stop::Inconclusive(
            "no completion within 990 ms (the device's op_timeout may be longer)".into(),
        ));
    }
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "NO_PATH" && d[0].data.is_none(),
        "TXN-3-6",
        "one completion, NO_PATH, without data",
        || format!("{:?}", seen.done),
    )
}

fn requester_fate_unknown(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let ports = ctx.desc.ports.min(2);
    // Every DATA frame of the device vanishes: its links replay until they FLUSH.
    for p in 0..ports {
        ctx.set_hook(
            p,
            Box::new(|dir, _, b| {
                let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                    18
                } else {
                    14
                };
                if dir == crate::ctx::Dir::FromDut && b.get(l).is_some_and(|k| k & 0x0F == 0) {
                    crate::ctx::Fault::Drop
                } else {
                    crate::ctx::Fault::Pass
                }
            }),
        )?;
    }
    let from = ctx.log().len();
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0xE00,
        LsOp::Swap { width: 8, value: 3 },
        None,
    )?;
    let mut seen = Seen::default();
    let done = seen.run(ctx, ports, 500_000_000, |s| !s.done.is_empty())?;
    if !done {
        return Err(Stop::Inconclusive("no completion within 500 ms".into()));
    }
    // The SWAP frames the device sent, first transmissions and replays alike.
    let mut firsts = 0;
    for l in ctx.log()[from..].iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
            18
        } else {
            14
        };
        if b.get(at).is_some_and(|k| k & 0x0F == 0)
            && b.get(at + 1).is_some_and(|f| f & 0x01 == 0)
            && let Ok(t) = parse_payload(l.port, 0, &b[at + 6..b.len() - 4])
        {
            firsts += t.iter().filter(|t| t.opcode == op::SWAP).count();
        }
    }
    check_eq(
        "TXN-3-5",
        "first transmissions of the SWAP (never sent again after unknown fate)",
        firsts,
        1,
    )?;
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "FATE_UNKNOWN" && d[0].data.is_none(),
        "TXN-3-5",
        "one completion, FATE_UNKNOWN",
        || format!("{:?}", seen.done),
    )
}

fn requester_usable_ports_only(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    ep_up(ctx, 2)?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    ctx.run_for(2_000)?;
    let from = ctx.log().len();
    let mut tags = Vec::new();
    for i in 0..6u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x40 * i,
            LsOp::Load { len: 4 },
            None,
        )?);
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 50_000, |s| s.txns.len() >= 6)?;
    let data_on_0 = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == 0)
        .filter(|l| {
            matches!(
                crate::cases::common::kind_of(&l.bytes),
                Some(crate::cases::common::Kind::Data(_))
            )
        })
        .count();
    check_eq(
        "EP-3-2",
        "DATA frames on the port whose link is down",
        data_on_0,
        0,
    )?;
    for tag in &tags {
        let v = seen.with_tag(*tag, false);
        check(
            v.len() == 1 && v[0].port == 1,
            "EP-3-2",
            format!("the LOAD with tag {tag:#06x} on port 1"),
            || v.iter().map(|t| t.show()).collect::<Vec<_>>().join("; "),
        )?;
        answer(ctx, 1, 2, &[resp(0x81, st::OK, *tag, &[1, 1, 1, 1])])?;
    }
    seen.run(ctx, 2, 20_000, |s| s.done.len() >= 6)?;
    check(
        seen.done.iter().all(|d| d.status == "OK") && seen.done.len() == 6,
        "TXN-3-1",
        "six completions, OK",
        || format!("{:?}", seen.done),
    )
}

fn requester_unknown_fate_retry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    // The device's DATA frames vanish for the first 60 us: its link replays until it FLUSHes and
    // reports the load's frame of unknown fate.
    let until = ctx.now() + 60_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, at, b| {
            let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if dir == crate::ctx::Dir::FromDut
                && at < until
                && b.get(l).is_some_and(|k| k & 0x0F == 0)
            {
                crate::ctx::Fault::Drop
            } else {
                crate::ctx::Fault::Pass
            }
        }),
    )?;
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0x1200,
        LsOp::Load { len: 4 },
        None,
    )?;
    let mut seen = Seen::default();
    let got = seen.run(ctx, 1, 5_000_000, |s| {
        !s.requests(op::LOAD).is_empty() || !s.done.is_empty()
    })?;
    if !seen.done.is_empty() {
        return Err(Stop::fail(
            "TXN-5-3",
            "the load sent again after its frame had unknown fate",
            format!("completed {:?}", seen.done),
        ));
    }
    check(
        got,
        "TXN-5-3",
        "the load sent again after its frame had unknown fate",
        || "not within 5 ms".into(),
    )?;
    let sends: Vec<u64> = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.opcode == op::LOAD && t.dword(4) == 0x1200)
        .map(|(at, _, _)| at)
        .collect();
    check_eq("TXN-5-3", "first transmissions of the load", sends.len(), 2)?;
    let t = seen.requests(op::LOAD)[0].clone();
    check(
        sends[1] >= until,
        "TXN-5-7",
        "the load not sent again while its first copy could still arrive",
        || format!("sent at {} ns and {} ns", sends[0], sends[1]),
    )?;
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[6, 6, 6, 6])])?;
    seen.run(ctx, 1, 50_000, |s| !s.done.is_empty())?;
    let d = seen.done_tag(tag);
    check(
        d.len() == 1 && d[0].status == "OK" && d[0].data == Some(vec![6, 6, 6, 6]),
        "TXN-3-1",
        "one completion, OK with 06060606",
        || format!("{:?}", seen.done),
    )?;
    check_eq("EP-10-1", "retries", ctx.counter("retries")?, 1)
}

fn packing_bounds(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let t0 = ctx.now();
    let tag = issue(
        ctx,
        Space::Global,
        0x77,
        0x1300,
        LsOp::Load { len: 4 },
        None,
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 150_000, |s| !s.txns.is_empty())?;
    let first = logged_txns(ctx, true)
        .into_iter()
        .find(|(_, _, t)| t.opcode == op::LOAD && t.tag == tag)
        .map(|(at, _, _)| at);
    check(
        first.is_some_and(|at| at <= t0 + 100_000),
        "EP-7-2",
        "a lone LOAD leaves within 100 us, the longest pack_delay",
        || format!("issued at {t0} ns, sent at {first:?}"),
    )?;
    let mut tags = Vec::new();
    for i in 0..24u64 {
        tags.push(issue(
            ctx,
            Space::Global,
            0x77,
            0x1400 + 8 * i,
            LsOp::Store {
                data: "0102030405060708".into(),
            },
            Some(9),
        )?);
    }
    seen.run(ctx, 1, 200_000, |s| s.requests(op::STORE).len() >= 24)?;
    let order: Vec<u16> = seen.requests(op::STORE).iter().map(|t| t.tag).collect();
    check_eq("EP-7-3", "the stream's STOREs in issue order", order, tags)?;
    Ok(())
}

fn target_unknown_fate_response(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let until = ctx.now() + 60_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, at, b| {
            let l = if b.get(12..14) == Some(&[0x81, 0x00]) {
                18
            } else {
                14
            };
            if dir == crate::ctx::Dir::FromDut
                && at < until
                && b.get(l).is_some_and(|k| k & 0x0F == 0)
            {
                crate::ctx::Fault::Drop
            } else {
                crate::ctx::Fault::Pass
            }
        }),
    )?;
    let before = ctx.counter("responses_lost")?;
    send(ctx, 0, 0, &[load(0x1701, 0, G.2, G.0, 4)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 1_000_000, |_| false)?;
    let firsts = logged_txns(ctx, true)
        .into_iter()
        .filter(|(_, replay, t)| !replay && t.tag == 0x1701 && t.opcode >= 0x80)
        .count();
    check_eq("TXN-5-8", "first transmissions of the LOAD_RESP", firsts, 1)?;
    check(
        seen.with_tag(0x1701, true).is_empty(),
        "TXN-5-8",
        "the response of unknown fate never sent again",
        || {
            seen.txns
                .iter()
                .map(|t| t.show())
                .collect::<Vec<_>>()
                .join("; ")
        },
    )?;
    check_eq(
        "EP-10-1",
        "responses_lost",
        ctx.counter("responses_lost")? - before,
        1,
    )
}

fn target_response_moved(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    if ctx.desc.ports < 2 {
        return Err(Stop::Unsupported("the case needs two ports".into()));
    }
    let setup = crate::device::Setup {
        gpu: Some(DUT),
        ..crate::cases::common::setup(crate::device::LinkParams {
            rx_credits: Some(160),
            ..Default::default()
        })
    };
    crate::cases::endpoint_common::ep_up_with(ctx, 2, setup)?;
    let data = pattern(0x4000, 0x61);
    mem_write(ctx, Space::Global, G.0 + 0x8000, &data)?;
    // The peer of port 0 keeps what it receives and returns no credit: the device's responses
    // queue at port 0.
    ctx.peer_hold(0, true)?;
    let n = 40u16;
    for f in 0..4u16 {
        let txns: Vec<Vec<u8>> = (0..10u16)
            .map(|i| {
                let k = f * 10 + i;
                load(0x1800 + k, 0, G.2, G.0 + 0x8000 + 256 * u64::from(k), 256)
            })
            .collect();
        send(ctx, 0, 0, &txns)?;
    }
    let mut seen = Seen::default();
    seen.run(ctx, 2, 30_000, |_| false)?;
    let early = seen.txns.len();
    if early >= usize::from(n) {
        return Err(Stop::Inconclusive(
            "every response left before the credits ran out".into(),
        ));
    }
    let moved0 = ctx.counter("moved")?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    let now = ctx.now();
    ctx.peer(0)?
        .link
        .physical_down(ethlink_link::Instant::from_nanos(now));
    seen.run(ctx, 2, 100_000, |s| s.txns.len() >= usize::from(n))?;
    seen.run(ctx, 2, 10_000, |_| false)?;
    for k in 0..n {
        let t = one_response(
            &seen,
            0x1800 + k,
            "a LOAD whose response waited at a port that went down",
        )?;
        let at = 256 * usize::from(k);
        check_resp(t, 0x81, st::OK, &data[at..at + 256], "TXN-5-5")?;
    }
    let on1 = seen.txns.iter().filter(|t| t.port == 1).count();
    check_eq(
        "TXN-5-5",
        "responses moved to port 1",
        on1,
        usize::from(n) - early,
    )?;
    check_eq(
        "EP-10-1",
        "moved",
        ctx.counter("moved")? - moved0,
        on1 as u64,
    )
}

fn requester_fences_bounded(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    issue(ctx, Space::Global, 0x77, 0x700, LsOp::Load { len: 4 }, None)?;
    // Endpoint.md Table EP-T1: max_fences is at most 65536.
    let mut ids = Vec::new();
    let mut refused = false;
    for _ in 0..=65_536u32 {
        match ctx.try_request(&Request::Fence)? {
            Ok(r) => {
                ids.push(r.id.ok_or_else(|| Stop::Harness("fence answered without an id".into()))?)
            }
            Err(_) => {
                refused = true;
                break;
            }
        }
    }
    check(
        refused,
        "EP-5-9",
        "a fence refused once max_fences (at most 65536) fences are outstanding",
        || format!("{} fences taken behind one unanswered load", ids.len()),
    )?;
    let mut uniq = ids.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check_eq(
        "EP-5-9",
        "distinct ids among the fences taken",
        uniq.len(),
        ids.len(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 20_000, |s| !s.requests(op::LOAD).is_empty())?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    check(
        seen.done.is_empty(),
        "TXN-4-5",
        "no fence complete while the load is unanswered",
        || format!("{} completions", seen.done.len()),
    )?;
    let Some(t) = seen.requests(op::LOAD).first().cloned() else {
        return Err(Stop::fail("TXN-3-1", "the LOAD on the wire", "none"));
    };
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[0; 4])])?;
    let n = ids.len();
    seen.run(ctx, 1, 50_000, |s| s.done.len() > n)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let fences: Vec<u64> = seen.done.iter().filter_map(|d| d.id).collect();
    let mut done = fences.clone();
    done.sort_unstable();
    check(
        done == uniq && seen.done.iter().all(|d| d.id.is_none() || d.status == "OK"),
        "EP-5-9",
        "each fence taken completes once, OK, and no refused one",
        || format!("{} fence completions for {n} fences taken", fences.len()),
    )?;
    let again = ctx.try_request(&Request::Fence)?;
    check(
        again.is_ok(),
        "EP-5-9",
        "a fence taken once none is outstanding",
        || format!("{again:?}"),
    )
}

fn requester_tags_exhausted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 1)?;
    let mut tags = Vec::new();
    let mut refused_at = None;
    for i in 0..40_000u64 {
        let r = ctx.try_request(&Request::Issue {
            dst: REM,
            space: Space::Global,
            key: 0x77,
            addr: 0x10_0000 + 8 * i,
            op: LsOp::Load { len: 4 },
            stream: None,
        })?;
        match r {
            Ok(r) => tags.push(
                r.tag
                    .ok_or_else(|| Stop::Harness("issue without a tag".into()))?,
            ),
            Err(_) => {
                refused_at = Some(i);
                break;
            }
        }
    }
    let Some(refused_at) = refused_at else {
        return Err(Stop::fail(
            "EP-5-2",
            "issue refused once every tag (at most 32768) is held",
            "40000 operations accepted",
        ));
    };
    let mut uniq = tags.clone();
    uniq.sort_unstable();
    uniq.dedup();
    check_eq(
        "EP-5-1",
        "distinct tags among the outstanding operations",
        uniq.len(),
        tags.len(),
    )?;
    let mut seen = Seen::default();
    let n = tags.len();
    seen.run(ctx, 1, 150_000, |s| s.requests(op::LOAD).len() >= n)?;
    seen.run(ctx, 1, 5_000, |_| false)?;
    let refused_addr = 0x10_0000 + 8 * refused_at;
    let loads = seen.requests(op::LOAD);
    check(
        loads.iter().all(|t| t.dword(4) != refused_addr),
        "EP-5-2",
        "nothing sent for the refused operation",
        || format!("a LOAD of {refused_addr:#x} went out"),
    )?;
    check_eq(
        "EP-5-2",
        "LOADs sent (one per accepted operation)",
        loads.len(),
        n,
    )?;
    // Answer one; its tag is free at once, and the only free one.
    let t = loads[0].clone();
    answer(ctx, t.port, 2, &[resp(0x81, st::OK, t.tag, &[0; 4])])?;
    seen.run(ctx, 1, 20_000, |s| !s.done.is_empty())?;
    check(
        seen.done.len() == 1 && seen.done[0].tag == Some(t.tag),
        "TXN-3-1",
        "the answered load completes",
        || format!("{:?}", seen.done),
    )?;
    let r = ctx.try_request(&Request::Issue {
        dst: REM,
        space: Space::Global,
        key: 0x77,
        addr: 0x8,
        op: LsOp::Load { len: 4 },
        stream: None,
    })?;
    match r {
        Ok(r) => check_eq(
            "EP-5-7",
            "the tag of the next operation (the only one free)",
            r.tag,
            Some(t.tag),
        ),
        Err(why) => Err(Stop::fail(
            "EP-5-7",
            "the tag of an operation answered at its only attempt free at once",
            format!("issue refused: {why}"),
        )),
    }
}

// ----- capabilities ------------------------------------------------------------------------------

fn lacking(ctx: &Ctx<'_>, cap: &str) -> Result<(), Stop> {
    if ctx.has_cap(cap) {
        Err(Stop::Unsupported(format!(
            "the device declares {cap}: the case is for an endpoint without it"
        )))
    } else {
        Ok(())
    }
}

fn cap_no_rdma(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "rdma")?;
    ep_up(ctx, 1)?;
    let a = G.0 + 0xC00;
    let guard = pattern(512, 0x12);
    mem_write(ctx, Space::Global, a, &guard)?;
    let d = pattern(512, 0x13);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0C01, 0, G.2, a, 256, 512, &d[256..])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0C01, 0, G.2, a, 0, 512, &d[..256])],
    )?;
    send(ctx, 0, 1, &[rdma_read(0x0C02, 0, G.2, a, 512)])?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 2)?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x0C01, "an RDMA write at an endpoint without RDMA")?;
    check_resp(t, op::RDMA_COMPLETION, st::UNSUPPORTED, &[], "EP-11-2")?;
    let t = one_response(&seen, 0x0C02, "an RDMA_READ at an endpoint without RDMA")?;
    check_resp(t, op::RDMA_READ_RESP, st::UNSUPPORTED, &[], "EP-11-2")?;
    expect_mem(
        ctx,
        "EP-11-2",
        Space::Global,
        a,
        &guard,
        "an endpoint without RDMA writes nothing",
    )
}

fn cap_no_atomics(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "atomics")?;
    ep_up(ctx, 1)?;
    let a = G.0 + 0xD00;
    let guard = pattern(16, 0x14);
    mem_write(ctx, Space::Global, a, &guard)?;
    let reqs = [
        (0x0D01, atomic(op::FADD, 0x0D01, G.2, a, &le(1, 8)), 0x83),
        (
            0x0D02,
            atomic(op::SWAP, 0x0D02, G.2, a + 8, &le(1, 4)),
            0x84,
        ),
        (
            0x0D03,
            atomic(
                op::CAS,
                0x0D03,
                G.2,
                a,
                &[guard[..8].to_vec(), le(1, 8)].concat(),
            ),
            0x85,
        ),
        (
            0x0D04,
            atomic(op::FADD, 0x0D04, G.2, a + 1, &le(1, 4)),
            0x83,
        ),
    ];
    send(
        ctx,
        0,
        0,
        &reqs.iter().map(|r| r.1.clone()).collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= reqs.len())?;
    for (tag, _, opcode) in &reqs {
        let t = one_response(&seen, *tag, "an atomic at an endpoint without ATOMICS")?;
        check_resp(t, *opcode, st::UNSUPPORTED, &[], "EP-11-3")?;
    }
    expect_mem(
        ctx,
        "EP-11-3",
        Space::Global,
        a,
        &guard,
        "an endpoint without ATOMICS changes nothing",
    )
}

fn cap_no_shared(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "shared")?;
    ep_up(ctx, 1)?;
    send(
        ctx,
        0,
        0,
        &[
            load(0x0E01, 1, SH.2, SH.0, 4),
            store(0x0E02, 1, SH.2, SH.0, &[1, 2, 3, 4]),
        ],
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 2)?;
    let t = one_response(&seen, 0x0E01, "a LOAD of shared memory")?;
    check_resp(t, 0x81, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E02, "a STORE to shared memory")?;
    check_resp(t, 0x82, st::UNSUPPORTED, &[], "EP-11-4")?;
    // An atomic, an RDMA write of two segments and an RDMA_READ of shared memory: each
    // answered once, UNSUPPORTED (an endpoint without ATOMICS or RDMA answers the same).
    let ext = crate::cases::endpoint_common::mem_ext(SH.2, SH.0);
    send(ctx, 0, 0, &[raw(op::FADD, 1, 0x0E03, 5, &ext, &le(1, 8))])?;
    let d = pattern(512, 0x0E);
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0E04, 1, SH.2, SH.0, 0, 512, &d[..256])],
    )?;
    send(
        ctx,
        0,
        1,
        &[rdma_write(0x0E04, 1, SH.2, SH.0, 256, 512, &d[256..])],
    )?;
    send(ctx, 0, 1, &[rdma_read(0x0E05, 1, SH.2, SH.0, 512)])?;
    seen.run(ctx, 1, 30_000, |s| s.txns.len() >= 5)?;
    seen.run(ctx, 1, 10_000, |_| false)?;
    let t = one_response(&seen, 0x0E03, "an atomic on shared memory")?;
    check_resp(t, 0x83, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E04, "an RDMA write to shared memory")?;
    check_resp(t, op::RDMA_COMPLETION, st::UNSUPPORTED, &[], "EP-11-4")?;
    let t = one_response(&seen, 0x0E05, "an RDMA_READ of shared memory")?;
    check_resp(t, op::RDMA_READ_RESP, st::UNSUPPORTED, &[], "EP-11-4")
}

fn target_shared(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn target_write_expiry(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
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

fn cap_no_packing(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    lacking(ctx, "packing")?;
    ep_up(ctx, 1)?;
    let from = ctx.log().len();
    for i in 0..16u64 {
        issue(
            ctx,
            Space::Global,
            0x77,
            0x100 * i,
            LsOp::Load { len: 4 },
            Some(3),
        )?;
    }
    // And answers to requests of the harness, many in one frame.
    send(
        ctx,
        0,
        0,
        &(0..16u16)
            .map(|i| load(0x0F00 + i, 0, G.2, G.0 + 4 * u64::from(i), 4))
            .collect::<Vec<_>>(),
    )?;
    let mut seen = Seen::default();
    seen.run(ctx, 1, 50_000, |s| s.txns.len() >= 32)?;
    check_eq("EP-11-5", "transactions seen", seen.txns.len(), 32)?;
    let counts: Vec<u8> = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut)
        .filter_map(|l| match crate::cases::common::kind_of(&l.bytes) {
            Some(crate::cases::common::Kind::Data(_)) => {
                let b = &l.bytes;
                let at = if b.get(12..14) == Some(&[0x81, 0x00]) {
                    18
                } else {
                    14
                } + 6;
                b.get(at + 5).copied()
            }
            _ => None,
        })
        .collect();
    check(
        counts.iter().all(|c| *c == 1),
        "CLS-3-1",
        "one transaction in every DATA frame",
        || format!("transaction counts {counts:?}"),
    )?;
    let _ = parse_payload;
    Ok(())
}

fn cap_announced(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    ep_up(ctx, 2)?;
    let bits = ctx
        .desc
        .caps
        .iter()
        .filter_map(|n| ethlink_protocol::Capabilities::from_name(n))
        .fold(0u16, |b, c| b | c.bits());
    let mut seen_any = false;
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        let eth = if b.get(12..14) == Some(&[0x81, 0x00]) {
            18
        } else {
            14
        };
        let Some(kind) = b.get(eth).map(|k| k & 0x0F) else {
            continue;
        };
        if kind != 5 && kind != 6 {
            continue;
        }
        seen_any = true;
        let body = eth + 6;
        let field = b
            .get(body + 14..body + 16)
            .map(|f| u16::from_be_bytes([f[0], f[1]]))
            .unwrap_or(0);
        check(
            field >> 14 == 1,
            "CLS-2-1",
            "role 1 (endpoint) in every INIT and INIT_ECHO",
            || format!("port {} capability field {field:#06x}", l.port),
        )?;
        check(
            field & 0x3F == bits,
            "CLS-2-2",
            format!("capability bits {bits:#04x}, those declared"),
            || format!("port {} capability field {field:#06x}", l.port),
        )?;
    }
    check(seen_any, "EP-11-1", "INIT frames from the device", || {
        "none".into()
    })?;
    for l in ctx.log().iter().filter(|l| l.from_dut) {
        let b = &l.bytes;
        if !ctx.has_cap("tagged") {
            check(
                b.get(12..14) != Some(&[0x81, 0x00]),
                "CLS-3-2",
                "no 802.1Q tag without TAGGED",
                || format!("port {} frame at {} ns", l.port, l.time_ns),
            )?;
        }
        if !ctx.has_cap("cut_through") && b.len() > 4 {
            let fcs = ethlink_protocol::fcs::fcs_bytes(&b[..b.len() - 4]);
            check(
                b[b.len() - 4..] == fcs,
                "CLS-3-3",
                "a good FCS on every frame without CUT_THROUGH",
                || format!("port {} frame at {} ns", l.port, l.time_ns),
            )?;
        }
    }
    Ok(())
}
