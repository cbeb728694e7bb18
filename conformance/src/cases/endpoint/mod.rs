//! Cases for an endpoint (classes.md, class Endpoint): the device as a target (every request
//! answered with the right opcode, tag, VC, status and data; protection in the order of EP-2-7;
//! unknown, malformed and misdelivered traffic), the device as a requester (completions, statuses,
//! tags, ordered streams, RDMA segmentation and read chunks, the fence, deadlines and BUSY), and
//! what an endpoint without a capability does (transaction.md, endpoint.md, wire.md §5-§7,
//! classes.md §3). The harness plays the remote GPU through reference link ends on the device's
//! ports, writing every request and response byte itself.
//!
//! This module holds the catalogue's list of endpoint cases, in catalogue order (but for the
//! vector and litmus cases, which [`vectors`] and [`litmus`] list), and the helpers the files of
//! several areas use; each case's function is in the file of its area:
//!
//! - `EPT-OPS-*` in `operations.rs`: transaction.md §2 operations, as a target performs them
//!   (endpoint.md §8)
//! - `EPT-PROT-*`, `EPT-MEM-*`, `EPT-POIS-*` in `memory.rs`: endpoint.md §2 memory model, §2.1
//!   region table
//! - `EPT-VC-*`, `EPT-MFS-*`, `EPT-PATH-*` in `paths.rs`: endpoint.md §3 ports and virtual
//!   channels, §4 paths and load balancing
//! - `EPT-REQ-*` in `requester.rs`: endpoint.md §5 load-store unit; transaction.md §3 statuses
//! - `EPT-RDMA-*` in `rdma.rs`: endpoint.md §6 RDMA engine
//! - `EPT-PACK-*` in `packing.rs`: endpoint.md §7 packing
//! - `EPT-BACK-*`, `EPT-HELD-*` in `target.rs`: endpoint.md §8 target: responses held back
//! - `EPT-DL-*`, `EPT-TAG-*` in `deadlines.rs`: endpoint.md §9 ports going down, deadlines and
//!   BUSY; transaction.md §5
//! - `EPT-RX-*` in `rx.rs`: endpoint.md §8 and §10 traffic discarded; wire.md §5-§7
//! - `EPT-CAP-*`, `EPT-ID-*` in `capabilities.rs`: endpoint.md §11 capabilities, §12 reset and
//!   identity
//! - `EPT-ORD-*` in `ordering.rs`: transaction.md §4 ordering
//! - `EPT-VEC-*` in `vectors.rs`: wire.md Table WIRE-T1 stages 7 and 8, one case per golden vector
//! - `EPT-LIT-*` in `litmus.rs`: transaction.md §4 the memory model, by litmus tests
//!
//! What the cases of every area share to speak to the device is in [`common`].
//!
//! The harness holds back a VC, or every VC, of a port by keeping the payloads its peer receives
//! (their credits unreturned); the cases that need a setting of endpoint.md Table EP-T1 are
//! Unsupported on a device that refuses it.

mod capabilities;
pub mod common;
mod deadlines;
pub mod litmus;
mod memory;
mod operations;
mod ordering;
mod packing;
mod paths;
mod rdma;
mod requester;
mod rx;
mod target;
pub mod vectors;

use crate::case::{Case, Level, Stop, check};
use crate::cases::common::setup;
use crate::cases::endpoint::common::{
    DUT, G, REM, Seen, check_resp, ep_up_with, load, one_response, send, st,
};
use crate::ctx::Ctx;
use crate::device::{EndpointParams, LinkParams, Request, Role, Setup};

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
            operations::target_load_store,
        ),
        case(
            "EPT-OPS-2",
            "as a target, the three atomics at 4 and 8 bytes return the exact old value and leave \
             the exact new one",
            &["TXN-2-3", "EP-2-8", "TXN-3-3", "EP-8-6"],
            &["atomics"],
            operations::target_atomics,
        ),
        case(
            "EPT-ORD-1",
            "as a target, a FENCE is answered FENCE_RESP OK on VC 2 only once the requests before \
             it are performed",
            &["TXN-4-6", "EP-8-6", "EP-8-2"],
            &[],
            ordering::target_fence,
        ),
        case(
            "EPT-RDMA-1",
            "as a target, an RDMA write whose segments arrive out of order is written exactly and \
             answered by one RDMA_COMPLETION OK on VC 2",
            &["TXN-2-4", "EP-6-5", "EP-8-6", "TXN-2-8"],
            &["rdma"],
            rdma::target_rdma_write,
        ),
        case(
            "EPT-RDMA-2",
            "as a target, an RDMA_READ is answered by RDMA_READ_RESP segments on VC 3 that cover \
             the read exactly, aligned, with the bytes of memory",
            &["EP-6-8", "EP-8-6", "TXN-2-8", "TXN-2-1"],
            &["rdma"],
            rdma::target_rdma_read,
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
            memory::target_protection,
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
            memory::target_atomic_protection,
        ),
        case(
            "EPT-PROT-3",
            "as a target, a refused RDMA write is answered once at its first segment and writes \
             nothing; a refused RDMA_READ gets one RDMA_READ_RESP with the status and no data",
            &["EP-6-4", "EP-6-8", "TXN-3-4", "TXN-2-8", "EP-8-6"],
            &["rdma"],
            memory::target_rdma_protection,
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
            rx::target_unknown_malformed,
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
            rx::target_discards,
        ),
        case(
            "EPT-RX-4",
            "as a target, a request on a response VC (2 or 3) or above VC 3 is discarded \
             unanswered and counted in wrong_vc_txns, as is a response on VC 0, while the same \
             request on VC 0 is served",
            &["EP-3-7", "EP-3-1", "EP-13-12"],
            &[],
            rx::target_wrong_vc,
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
            requester::requester_completions,
        ),
        case(
            "EPT-REQ-2",
            "as a requester, every target status is carried to the completion, an unknown one \
             with its raw value, and no data comes with a refusal",
            &["TXN-3-2", "WIRE-6.9-2", "TXN-3-3", "TXN-3-1"],
            &[],
            requester::requester_statuses,
        ),
        case(
            "EPT-REQ-3",
            "as a requester, a response with the wrong opcode, an unknown tag, from another GPU \
             than the target, of another length than asked, or after its operation completed is \
             discarded and counted, never reported",
            &["EP-5-4", "EP-9-4", "TXN-3-1"],
            &[],
            requester::requester_discards,
        ),
        case(
            "EPT-ORD-2",
            "as a requester, a fence completes only after every operation issued before it",
            &["TXN-4-5", "EP-5-6", "TXN-3-1"],
            &[],
            ordering::requester_fence,
        ),
        case(
            "EPT-ORD-3",
            "as a requester, the requests of an ordered stream leave on one port and path id, \
             on VC 0, in issue order",
            &["EP-4-1", "TXN-4-1", "EP-3-4"],
            &[],
            ordering::requester_stream,
        ),
        case(
            "EPT-RDMA-3",
            "as a requester, an RDMA write goes out as RDMA_WRITE segments on VC 1 with one tag, \
             aligned offsets, min(segment, rest) lengths, covering the write once, and completes \
             on its RDMA_COMPLETION",
            &["EP-6-2", "EP-6-11", "EP-6-16", "EP-3-1", "TXN-3-1"],
            &[],
            rdma::requester_rdma_write,
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
            rdma::requester_rdma_read,
        ),
        case(
            "EPT-DL-1",
            "as a requester, an atomic that is never answered is not sent again and completes \
             TIMEOUT; a load never answered is retried and completes TIMEOUT",
            &[
                "TXN-3-7", "TXN-5-4", "EP-9-3", "TXN-3-3", "TXN-3-1", "EP-9-2", "EP-5-8", "EP-13-4",
            ],
            &[],
            deadlines::requester_timeout,
        ),
        case(
            "EPT-DL-2",
            "as a requester, an operation answered BUSY is sent again after a back-off that \
             doubles, counts its retries, and completes with the final answer",
            &["EP-9-5", "TXN-3-8", "EP-10-1", "EP-13-5"],
            &[],
            deadlines::requester_busy,
        ),
        case(
            "EPT-RDMA-5",
            "as a target, RDMA_WRITE segments that break the alignment of EP-6-3 or run past \
             their total length are answered RDMA_COMPLETION MALFORMED and write nothing",
            &["EP-6-3", "WIRE-6.7-1", "WIRE-6.1-6", "TXN-3-4"],
            &["rdma"],
            rdma::target_rdma_malformed,
        ),
        case(
            "EPT-RX-3",
            "as a requester, a response with an undefined opcode is counted in unknown_responses, \
             one that breaks its encoding in bad_responses, and neither completes anything",
            &["EP-10-2", "WIRE-6.1-7", "WIRE-6.1-9", "WIRE-6.9-4"],
            &[],
            rx::requester_bad_responses,
        ),
        case(
            "EPT-REQ-4",
            "an operation or descriptor with a bad parameter is refused at issue and sends nothing",
            &["EP-5-3", "EP-6-1"],
            &[],
            requester::requester_refused_at_issue,
        ),
        case(
            "EPT-MEM-1",
            "a registration that overlaps a region, has length 0 or runs past the end of its \
             space is refused, and the table is unchanged",
            &["EP-2-2", "EP-2-3"],
            &[],
            memory::register_refusals,
        ),
        case(
            "EPT-PATH-1",
            "a response leaves by the port its request came in on",
            &["EP-4-4", "EP-3-4"],
            &[],
            paths::response_on_request_port,
        ),
        case(
            "EPT-ID-1",
            "every frame of port 0 has source MAC 02:00:gg:gg:00:00, and a reset sets every \
             counter to zero",
            &["EP-12-4", "EP-12-1"],
            &[],
            capabilities::identity_and_reset,
        ),
        case(
            "EPT-ID-2",
            "after the harness's reset (no quiet time) a port answers an INIT that arrives at the \
             very nanosecond its physical link comes up",
            &["LINK-2-2", "EP-13-14"],
            &[],
            capabilities::init_at_physical_up,
        ),
        case(
            "EPT-DL-3",
            "as a requester, an operation answered BUSY at every attempt completes BUSY once its \
             retries are spent, each retry counted",
            &["EP-9-8", "EP-9-5", "TXN-3-8", "EP-10-1"],
            &[],
            deadlines::requester_busy_to_the_end,
        ),
        case(
            "EPT-DL-4",
            "as a requester, an operation issued while no port is usable completes NO_PATH",
            &["TXN-3-6", "TXN-3-1", "TXN-3-3", "EP-13-6"],
            &[],
            deadlines::requester_no_path,
        ),
        case(
            "EPT-DL-5",
            "as a requester, an atomic whose request frame the link reports of unknown fate \
             completes FATE_UNKNOWN and is not sent again",
            &["TXN-3-5", "TXN-3-1"],
            &[],
            deadlines::requester_fate_unknown,
        ),
        case(
            "EPT-OPS-3",
            "as a target with SHARED, requests with the SHARED flag address shared memory, \
             protected by its own regions",
            &[
                "TXN-2-6", "TXN-2-1", "TXN-2-2", "EP-2-1", "EP-2-3", "EP-2-4",
            ],
            &["shared"],
            operations::target_shared,
        ),
        case(
            "EPT-OPS-4",
            "as a target, two requesting GPUs send LOADs, STOREs, FETCH_ADDs and FENCEs with \
             the same tags at once: each request is answered once, to the GPU that sent it, \
             with its own data",
            &["WIRE-6.1-2", "TXN-2-1", "TXN-2-2", "TXN-2-3"],
            &[],
            operations::two_requesters_same_tags,
        ),
        case(
            "EPT-OPS-5",
            "as a target, an 8-byte FETCH_ADD carries out of bit 31 and wraps at 2^64, and an \
             8-byte COMPARE_SWAP compares all 64 bits: a value that differs in the high or the \
             low word only does not swap",
            &["TXN-2-3"],
            &["atomics"],
            operations::wide_atomics,
        ),
        case(
            "EPT-OPS-6",
            "as a target with RDMA and SHARED, an RDMA write and read with the SHARED flag \
             address shared memory and leave global memory alone; without the flag the shared \
             region's key is refused",
            &["TXN-2-4", "TXN-2-5", "TXN-2-6", "EP-2-3"],
            &["rdma", "shared"],
            operations::rdma_into_shared,
        ),
        case(
            "EPT-RDMA-6",
            "as a target, an RDMA write without progress for op_timeout is forgotten and counted",
            &["EP-6-15", "EP-6-5", "EP-10-1"],
            &["rdma"],
            rdma::target_write_expiry,
        ),
        case(
            "EPT-PATH-2",
            "as a requester, a port whose link is down takes no part in path choice: every \
             request leaves by the usable port",
            &["EP-3-2", "EP-4-2", "TXN-3-1"],
            &[],
            paths::requester_usable_ports_only,
        ),
        case(
            "EPT-DL-6",
            "as a requester, a load whose frame the link reports of unknown fate is sent again \
             after the loss, counted as a retry, and completes with the answer to the retry",
            &["TXN-5-3", "EP-9-6", "TXN-5-7", "EP-10-1", "TXN-3-1"],
            &[],
            deadlines::requester_unknown_fate_retry,
        ),
        case(
            "EPT-PACK-1",
            "a transaction waiting to share its frame leaves within the longest pack_delay \
             (100 us), and packed frames keep the order of their path",
            &["EP-7-2", "EP-7-3", "WIRE-5-5"],
            &["packing"],
            packing::packing_bounds,
        ),
        case(
            "EPT-DL-7",
            "as a target, a response whose frame the link reports of unknown fate is not sent \
             again, and is counted in responses_lost",
            &["TXN-5-8", "EP-10-1"],
            &[],
            deadlines::target_unknown_fate_response,
        ),
        case(
            "EPT-PATH-3",
            "as a target, responses still queued at a port that goes down are sent on another \
             usable port, each once, and counted in moved",
            &["TXN-5-5", "EP-9-1", "EP-4-4", "TXN-2-8", "EP-10-1"],
            &[],
            paths::target_response_moved,
        ),
        case(
            "EPT-REQ-5",
            "as a requester, issue is refused once every tag is held, sending nothing of the \
             refused operation, and the tag of an operation answered at its first attempt is free \
             at once",
            &["EP-5-2", "EP-5-1", "EP-5-7", "TXN-3-1"],
            &[],
            requester::requester_tags_exhausted,
        ),
        case(
            "EPT-REQ-6",
            "as a requester, fences outstanding behind an unanswered load are bounded: the fence \
             past the bound (65536 at most) is refused and nothing of it recorded; each fence \
             taken completes once, OK, when the load is answered, and a fence is taken again",
            &["EP-5-9", "TXN-4-5"],
            &[],
            requester::requester_fences_bounded,
        ),
        case(
            "EPT-CAP-1",
            "an endpoint without RDMA answers the first RDMA_WRITE segment RDMA_COMPLETION \
             UNSUPPORTED, the others not at all, an RDMA_READ with one RDMA_READ_RESP \
             UNSUPPORTED on VC 3, and writes nothing",
            &["EP-11-2", "TXN-2-8"],
            &[],
            capabilities::cap_no_rdma,
        ),
        case(
            "EPT-CAP-2",
            "an endpoint without ATOMICS answers every atomic UNSUPPORTED, aligned or not, and \
             changes nothing",
            &["EP-11-3"],
            &[],
            capabilities::cap_no_atomics,
        ),
        case(
            "EPT-CAP-3",
            "an endpoint without SHARED answers UNSUPPORTED every request with the SHARED flag",
            &["EP-11-4", "EP-11-2", "EP-11-3"],
            &[],
            capabilities::cap_no_shared,
        ),
        case(
            "EPT-CAP-4",
            "an endpoint without PACKING sends one transaction per DATA frame",
            &["CLS-3-1", "EP-11-5"],
            &[],
            capabilities::cap_no_packing,
        ),
        case(
            "EPT-CAP-5",
            "every port announces the role endpoint and exactly the declared capabilities in its \
             INIT and INIT_ECHO",
            &["EP-11-1", "CLS-2-1", "CLS-2-2", "CLS-3-2", "CLS-3-3"],
            &[],
            capabilities::cap_announced,
        ),
        case(
            "EPT-POIS-1",
            "a LOAD that would read a poisoned byte is answered POISONED with no data, after the \
             range and key checks; poison covers 64-byte granules: the granules beside it load, a \
             STORE of part of the granule leaves it poisoned, a STORE of all of it clears it",
            &["EP-2-6", "EP-2-7", "EP-2-13"],
            &[],
            memory::poison_load,
        ),
        case(
            "EPT-POIS-2",
            "an atomic on a poisoned byte is answered POISONED with no data and changes nothing; \
             once its poison granule is written whole it returns the value written",
            &["EP-2-6", "EP-2-13"],
            &["atomics"],
            memory::poison_atomic,
        ),
        case(
            "EPT-POIS-3",
            "an RDMA_READ over a poisoned byte sends the segments before it, then one \
             RDMA_READ_RESP POISONED with no data at the segment's offset, and nothing more",
            &["EP-2-6", "EP-6-17", "EP-6-8"],
            &["rdma"],
            memory::poison_rdma_read,
        ),
        case(
            "EPT-POIS-4",
            "as a target, an RDMA write clears the poison of the granules it covers whole, and \
             the granule its short last segment covers in part stays poisoned",
            &["EP-2-6", "TXN-2-4"],
            &["rdma"],
            memory::poison_cleared_by_rdma,
        ),
        case(
            "EPT-MEM-2",
            "a region deregistered is refused OUT_OF_RANGE and keeps its bytes; registered again \
             with a new key the old key is refused; remote traffic leaves the table as it was",
            &["EP-2-10", "EP-2-12", "EP-2-3"],
            &[],
            memory::deregister,
        ),
        case(
            "EPT-MEM-4",
            "a region deregistered while a write into it is being reassembled refuses the rest of \
             the write: one RDMA_COMPLETION with the status, the segments before it stay written, \
             nothing after it is written, and a later segment is dropped unanswered",
            &["EP-6-20", "EP-2-12", "TXN-2-8", "EP-13-3"],
            &["rdma"],
            memory::deregister_during_write,
        ),
        case(
            "EPT-MEM-3",
            "with max_regions 4 the fifth registration of a space is refused and changes nothing; \
             after a deregistration it is taken",
            &["EP-2-11", "EP-2-10"],
            &[],
            memory::table_full,
        ),
        case(
            "EPT-RDMA-7",
            "with max_read_jobs 2, a third RDMA_READ arriving while two are served is answered \
             RDMA_READ_RESP BUSY with no data; the two others are served whole",
            &["EP-6-9"],
            &["rdma"],
            rdma::read_jobs,
        ),
        case(
            "EPT-RDMA-8",
            "with max_reassemblies 1, a segment of a second write while one is reassembled is \
             answered RDMA_COMPLETION BUSY and writes nothing; once the first completes the \
             second is taken",
            &["EP-6-14"],
            &["rdma"],
            rdma::reassemblies,
        ),
        case(
            "EPT-RDMA-9",
            "with max_reassembly_blocks 64, a write that would take the blocks reserved past 64 \
             is answered BUSY and writes nothing; a write of more than 64 blocks alone is \
             answered UNSUPPORTED",
            &["EP-6-12", "EP-6-13"],
            &["rdma"],
            rdma::reassembly_blocks,
        ),
        case(
            "EPT-RDMA-10",
            "with op_timeout 20 us, a write without progress is forgotten within 30 us of its last \
             segment (reassembly_expired 1): its second segment then starts a new write that is \
             not completed, and the segment first written keeps its bytes; a write whose \
             segments come 15 us apart is kept and completed",
            &["EP-6-15", "EP-6-5"],
            &["rdma"],
            rdma::write_expiry,
        ),
        case(
            "EPT-RDMA-11",
            "as a target, eight bytes written by RDMA read back at an offset inside them, after a \
             STORE over half of them, and after one STORE over two such writes: every read gives \
             the bytes last written",
            &["TXN-2-4", "TXN-2-2", "TXN-2-1"],
            &["rdma"],
            rdma::small_rdma_write_read_back,
        ),
        case(
            "EPT-RDMA-12",
            "as a requester with write_chunk 8192, a write of 20,000 bytes goes as chunks of \
             8192 bytes but the last, every segment carrying the local bytes of its offset",
            &["EP-6-2"],
            &["rdma"],
            rdma::write_in_chunks_carries_its_bytes,
        ),
        case(
            "EPT-RDMA-13",
            "as a target, an RDMA write of workload data (the pseudo-random bytes of a fabric \
             run) reads back exactly by LOADs at every 8-byte offset of a block, across block \
             and segment boundaries and at odd offsets, by the local read, across the seam of a \
             second write that continues the same data, and inside a range written over with \
             bytes that continue the data on its left",
            &["TXN-2-4", "TXN-2-1"],
            &["rdma"],
            rdma::workload_data_read_back,
        ),
        case(
            "EPT-RDMA-14",
            "as a target, two requesting GPUs use one tag at once: their RDMA writes, segments \
             interleaved, are reassembled apart and each completed once to its own GPU; their \
             RDMA reads are each answered to the GPU that asked with its own bytes",
            &["EP-6-5", "WIRE-6.1-2", "EP-6-8"],
            &["rdma"],
            rdma::two_requesters_one_tag,
        ),
        case(
            "EPT-RDMA-15",
            "as a requester, an RDMA read of 2 MiB goes on asking for chunks as its window frees \
             while a write posted after it is answered BUSY and sent again; both complete OK",
            &["EP-6-7", "EP-6-16", "EP-9-5", "EP-6-10"],
            &["rdma"],
            rdma::read_window_beside_busy_write,
        ),
        case(
            "EPT-RDMA-16",
            "as a requester with 8 RDMA tags, 24 RDMA reads posted one after another and each \
             answered at once all complete OK: a tag is free again when its read completes",
            &["EP-5-7", "EP-6-10", "EP-6-16"],
            &["rdma"],
            rdma::rdma_tags_freed,
        ),
        case(
            "EPT-VC-1",
            "as a target whose responses wait for credits on VC 2, the device's own requests on \
             VC 0 and the responses it receives still pass, and every waiting response is sent \
             once when credits return",
            &["EP-3-6", "EP-8-8", "EP-3-1", "TXN-2-8", "TXN-2-1"],
            &[],
            paths::vcs_do_not_block,
        ),
        case(
            "EPT-BACK-1",
            "a target whose response backlog is full stops taking request frames (a later STORE \
             is not performed, its credits stay with the device) until the backlog drains; then \
             every request is answered once and in order",
            &[
                "EP-8-4", "EP-8-8", "EP-3-3", "EP-10-1", "TXN-2-8", "TXN-2-1", "TXN-2-2",
            ],
            &[],
            target::response_backlog,
        ),
        case(
            "EPT-PACK-2",
            "as a target with PACKING, responses packed as full as they go leave room for an \
             802.1Q tag: no frame is longer than the agreed MFS less 4 bytes when untagged",
            &["EP-7-1"],
            &["packing"],
            packing::packed_frames_leave_tag_room,
        ),
        case(
            "EPT-BACK-2",
            "a target whose backlog stays full past hold_max performs no request of a frame it \
             held that long: a STORE behind the backlog is neither performed nor answered, it \
             is counted in held_expired and its credits come back; a STORE sent afterwards is \
             served",
            &["EP-8-9", "EP-8-4", "TXN-5-7"],
            &[],
            target::held_past_hold_max,
        ),
        case(
            "EPT-MFS-1",
            "the MFS a device announces holds its largest RDMA_WRITE segment with a tag (segment + \
             64 bytes); with an MFS too small for its segment it refuses the setting or cuts \
             smaller segments",
            &["EP-3-5", "EP-6-2"],
            &["rdma"],
            paths::mfs_holds_a_segment,
        ),
        case(
            "EPT-PATH-7",
            "as a requester with two ports, a port whose peer announces an MFS one byte short of \
             a tagged frame of one segment comes UP but takes no request: loads and RDMA write \
             segments all leave by the other port; at exactly a tagged segment it is usable",
            &["EP-3-2", "EP-4-2"],
            &["rdma"],
            paths::small_mfs_port_unused,
        ),
        case(
            "EPT-PATH-4",
            "as a requester with the hash policy, each request leaves by the usable port \
             h mod n of Figure EP-F3 (key: the stream id of an ordered stream, else the tag)",
            &["EP-4-5", "EP-4-2", "EP-3-4"],
            &[],
            paths::hash_policy,
        ),
        case(
            "EPT-PATH-5",
            "the requests of an ordered stream still queued at a port that goes down are sent on \
             the other port, once, in issue order and before the stream's later requests; moving \
             them is no retry",
            &[
                "EP-4-3", "TXN-5-2", "TXN-5-6", "EP-9-1", "EP-4-1", "EP-10-1", "TXN-3-1",
            ],
            &[],
            paths::stream_moved_on_down,
        ),
        case(
            "EPT-PATH-6",
            "as a requester, a load-store operation whose GPU names a port leaves by that port, \
             whatever the policy would choose, on each of two ports in turn",
            &["EP-4-6", "TXN-3-1"],
            &[],
            paths::requester_pinned_port,
        ),
        case(
            "EPT-HELD-1",
            "as a target, responses that find no usable port for longer than op_timeout are \
             discarded and counted in responses_expired, never sent when a port comes up later",
            &["EP-8-5", "EP-10-1"],
            &[],
            target::held_response_expires,
        ),
        case(
            "EPT-ORD-4",
            "as a target, an operation is performed when it is answered OK: a LOAD sent on one \
             port after the STORE_RESP of a STORE sent on the other came back sees the stored \
             bytes, and a FENCE with it is answered",
            &["TXN-4-11", "TXN-4-6", "TXN-2-1", "TXN-2-2", "TXN-2-8"],
            &[],
            ordering::one_intake_order,
        ),
        case(
            "EPT-ORD-5",
            "as a requester, a Fence issued while an RDMA write and an RDMA read are outstanding \
             completes after both, once the read's last segment is placed",
            &["TXN-4-5", "EP-6-10", "EP-6-16"],
            &["rdma"],
            ordering::requester_fence_after_rdma,
        ),
        case(
            "EPT-ORD-6",
            "as a target, an RDMA read that arrived before a FENCE is read whole before the \
             FENCE is answered: STOREs sent once it is answered are not in the read, even while \
             its segments wait for credits",
            &["TXN-4-6", "EP-6-8"],
            &["rdma"],
            ordering::target_fence_after_rdma_read,
        ),
        case(
            "EPT-TAG-1",
            "a request lost with a port after its operation completed and its tag passed to a \
             new operation on another port neither completes, retries nor moves the new operation",
            &["EP-9-7", "EP-5-7", "EP-4-5", "TXN-3-1"],
            &[],
            deadlines::lost_request_of_a_reused_tag,
        ),
        case(
            "EPT-DL-8",
            "with op_timeout set to an odd number of nanoseconds, an atomic never answered \
             completes TIMEOUT, and a load never answered is sent again, no earlier than \
             op_timeout after issue",
            &["EP-1-1", "EP-9-3", "TXN-5-4"],
            &[],
            deadlines::deadline_in_full,
        ),
        case(
            "EPT-DL-9",
            "as a requester with op_timeout 20 us, an RDMA read never answered is asked again as \
             many times as a LOAD never answered is sent (one retry budget), then ends TIMEOUT \
             once",
            &["TXN-3-7", "TXN-5-4", "EP-9-3"],
            &["rdma"],
            deadlines::unanswered_read_times_out,
        ),
        case(
            "EPT-DL-10",
            "as a requester with two ports, a load of an ordered stream never answered is sent \
             again after its deadline on the other port",
            &["EP-9-2", "EP-9-3", "TXN-5-6"],
            &[],
            deadlines::stream_retry_avoids_its_port,
        ),
        case(
            "EPT-DL-11",
            "as a requester, an RDMA read answered BUSY is asked again and not completed, then \
             completes OK with the bytes of the next answer",
            &["EP-9-5", "TXN-3-1", "TXN-2-5"],
            &["rdma"],
            deadlines::busy_read_asked_again,
        ),
    ]
}

/// The harness answers `t` (a request the device sent) on the port it came by, on VC 2 (VC 3
/// for read data).
fn answer(ctx: &mut Ctx<'_>, t_port: u16, vc: u8, txns: &[Vec<u8>]) -> Result<(), Stop> {
    send(ctx, t_port, vc, txns)
}

fn check_request(t: &crate::cases::endpoint::common::Txn, opcode: u8, vc: u8) -> Result<(), Stop> {
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

/// Whether the device refused a request made with [`Ctx::try_request`].
fn refused(r: Result<Result<crate::device::Reply, String>, Stop>) -> Result<bool, Stop> {
    Ok(r?.is_err())
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

/// Setup of the endpoint as GPU [`DUT`] with `link` and the endpoint settings `e`.
fn setup_ep(link: LinkParams, e: Option<EndpointParams>) -> Setup {
    Setup {
        gpu: Some(DUT),
        endpoint: e.map(Box::new),
        ..setup(link)
    }
}

/// Link parameters with 160 credits of 64 bytes per VC (10 KiB): a few frames of responses
/// exhaust them.
fn few_credits() -> LinkParams {
    LinkParams {
        rx_credits: Some(160),
        ..LinkParams::default()
    }
}

/// The harness, as the remote GPU, sends `n` LOADs of 256 bytes of `base + 256 * k` with tags
/// `tag0 + k`, ten in a frame, on `port`.
fn send_loads(ctx: &mut Ctx<'_>, port: u16, tag0: u16, base: u64, n: u16) -> Result<(), Stop> {
    let mut k = 0u16;
    while k < n {
        let txns: Vec<Vec<u8>> = (k..n.min(k + 10))
            .map(|j| load(tag0 + j, 0, G.2, base + 256 * u64::from(j), 256))
            .collect();
        send(ctx, port, 0, &txns)?;
        k += 10;
    }
    Ok(())
}

/// Checks the one response to each of the LOADs of [`send_loads`]: OK, the bytes of `data`.
fn check_loads(seen: &Seen, tag0: u16, n: u16, data: &[u8], what: &str) -> Result<(), Stop> {
    for k in 0..n {
        let t = one_response(seen, tag0 + k, what)?;
        let at = 256 * usize::from(k);
        check_resp(t, 0x81, st::OK, &data[at..at + 256], "TXN-2-1")?;
    }
    Ok(())
}

/// Takes the port down at the device and at its peer now.
fn port_down(ctx: &mut Ctx<'_>, port: u16) -> Result<(), Stop> {
    ctx.request(&Request::PhysicalDown { port })?;
    let now = ctx.now();
    ctx.peer(port)?
        .link
        .physical_down(ethlink_link::Instant::from_nanos(now));
    Ok(())
}

/// The hash of endpoint.md Figure EP-F3.
pub fn hash(dst: u16, key: u64) -> u64 {
    let x = (u64::from(dst) << 48) ^ key;
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The endpoint settings that choose the hash policy.
fn hash_params() -> EndpointParams {
    EndpointParams {
        policy: Some("hash".into()),
        ..EndpointParams::default()
    }
}

/// Settings with `op_timeout` as given, and `frame_lifetime` and `tag_quarantine` stated with it
/// so that the relations of EP-1-3 hold: frame_lifetime 20 us (at most `op_timeout`),
/// tag_quarantine frame_lifetime + op_timeout.
fn short_deadline(op_timeout: u64) -> EndpointParams {
    let frame_lifetime = op_timeout.min(20_000);
    EndpointParams {
        op_timeout_ns: Some(op_timeout),
        frame_lifetime_ns: Some(frame_lifetime),
        tag_quarantine_ns: Some((frame_lifetime * 2).max(frame_lifetime + op_timeout)),
        ..EndpointParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::hash;

    /// The hash against the vectors of endpoint.md Table EP-T4, read from the spec itself.
    #[test]
    fn hash_vectors_of_the_spec() {
        let spec = include_str!("../../../../docs/spec/endpoint.md");
        let table = spec
            .split("Table EP-T4")
            .nth(1)
            .expect("Table EP-T4 in endpoint.md");
        let num = |s: &str| {
            let s = s.trim();
            match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).expect("hex"),
                None => s.parse::<u64>().expect("number"),
            }
        };
        let mut rows = 0;
        for line in table.lines().skip_while(|l| !l.starts_with('|')) {
            if !line.starts_with('|') {
                break;
            }
            let cells: Vec<&str> = line.trim_matches('|').split('|').collect();
            if cells.len() != 5 || cells[0].contains("dst") || cells[0].contains("---") {
                continue;
            }
            let (dst, key, h, n, index) = (
                num(cells[0]),
                num(cells[1]),
                num(cells[2]),
                num(cells[3]),
                num(cells[4]),
            );
            let got = hash(u16::try_from(dst).expect("dst"), key);
            assert_eq!(got, h, "dst {dst} key {key:#x}");
            assert_eq!(got % n, index);
            rows += 1;
        }
        assert!(rows >= 5, "{rows} vectors");
    }
}
