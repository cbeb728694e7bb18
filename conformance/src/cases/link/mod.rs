//! Cases for a link end (classes.md, class Link End): bring-up, link-level retry, credit-based
//! flow control, and the receive pipeline up to link-layer acceptance (link.md, wire.md §1-§4
//! and §7). Every case drives port 0 of the device against a reference peer or raw frames.
//!
//! This module holds the catalogue's list of link-end cases, in catalogue order, and the helpers
//! the files of several areas use; each case's function is in the file of its area:
//!
//! - `LE-INIT-*` in `init.rs`: link.md §2 bring-up, §2.1 nonces and restarts, §6 re-initialisation
//! - `LE-LLR-*` in `llr.rs`: link.md §3 and §3.1 link-level retry, transmit side; §4 receive side
//! - `LE-CBFC-*` in `cbfc.rs`: link.md §5 credit-based flow control
//! - `LE-RX-*` in `rx.rs`: wire.md §7 receive pipeline, with the fields of §1-§5 it checks
//! - `LE-CNT-*` in `counters.rs`: link.md §7 counters
//! - `LE-TX-*` in `tx.rs`: wire.md §1-§4 the frames an end sends; classes.md §3
//! - `LE-WD-*` in `withdraw.rs`: link.md §6 frames withdrawn before they are sent
//! - `VEC-*` in `vectors.rs`: wire.md §7 Table WIRE-T1 with link.md §4 and §7, one case per golden
//!   vector

mod cbfc;
mod counters;
mod init;
mod llr;
mod rx;
mod tx;
pub mod vectors;
mod withdraw;

use crate::case::{Case, Level, Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::Ctx;
use crate::device::{LinkParams, Output, Request, Role};

/// A MUST-level link-end case.
const fn le(
    id: &'static str,
    title: &'static str,
    reqs: &'static [&'static str],
    run: fn(&mut Ctx<'_>) -> Result<(), Stop>,
) -> Case {
    Case {
        id,
        title,
        reqs,
        level: Level::Must,
        role: Role::LinkEnd,
        needs: &[],
        run,
    }
}

/// The link-end cases.
pub fn cases() -> Vec<Case> {
    vec![
        le(
            "LE-INIT-1",
            "comes UP with a conforming peer after sending INIT",
            &["LINK-2-1", "LINK-2-3"],
            init::init_comes_up,
        ),
        le(
            "LE-LLR-1",
            "a DATA frame with a bad FCS draws one NACK with the last good sequence number, \
             and the replay is delivered once and in order",
            &["LINK-4-3", "WIRE-2.5-3", "LINK-4-1"],
            llr::bad_fcs_draws_nack,
        ),
        le(
            "LE-INIT-2",
            "INIT goes at once and every init_interval, with one non-zero nonce, the configured \
             parameters, the role and the declared capabilities",
            &[
                "LINK-2-1",
                "LINK-2-9",
                "LINK-2-7",
                "CLS-2-1",
                "CLS-2-2",
                "WIRE-4.5-2",
                "WIRE-4.5-6",
                "WIRE-4.5-7",
            ],
            init::init_periodic,
        ),
        le(
            "LE-INIT-3",
            "every valid INIT is answered by an INIT_ECHO carrying its nonce and the device's own \
             nonce and configured parameters; of two INITs at once only the newer; an INIT \
             alone brings nothing UP",
            &["LINK-2-2", "LINK-2-3", "CLS-2-1", "LINK-7-3"],
            init::init_echo_answers,
        ),
        le(
            "LE-INIT-4",
            "an INIT_ECHO for another nonce, and every INIT_ECHO while UP, is ignored and counted; \
             the echo of the device's own nonce brings it UP; an INIT of the same peer nonce \
             while UP is answered and restarts nothing",
            &["LINK-2-3", "LINK-2-17", "LINK-7-3", "LINK-2-2", "LINK-2-6"],
            init::foreign_echo_ignored,
        ),
        le(
            "LE-INIT-5",
            "no DATA before UP, and none after UP until the LINK-2-8 gate opens; a frame \
             submitted before UP then goes with sequence number 0 and no REPLAY flag",
            &["LINK-2-7", "LINK-2-8", "LINK-3-1", "WIRE-3-5", "LINK-2-5"],
            init::no_data_before_up,
        ),
        le(
            "LE-INIT-6",
            "an INIT with a new nonce while UP re-initialises: link down, replay buffer of \
             unknown fate, INIT_ECHO then INIT with a new nonce and the configured parameters, \
             queued frames sent after UP from sequence number 0, flushed ones never",
            &[
                "LINK-2-6",
                "LINK-2-9",
                "LINK-2-1",
                "LINK-6-1",
                "LINK-6-2",
                "LINK-6-3",
                "LINK-2-5",
                "LINK-3-15",
            ],
            init::peer_restart,
        ),
        le(
            "LE-INIT-7",
            "an INIT or INIT_ECHO whose grant on some VC is below one frame of the agreed MFS \
             (credit size and overhead of the sender) is refused and counted; one credit more \
             is accepted; an UP end refuses such an INIT and stays UP",
            &["LINK-2-12", "WIRE-4.5-9", "LINK-2-14", "LINK-7-3"],
            init::init_refused,
        ),
        le(
            "LE-INIT-8",
            "frame size is judged against the configured MFS before UP and the agreed MFS after",
            &[
                "LINK-2-16",
                "WIRE-2.4-6",
                "WIRE-2.4-2",
                "LINK-4-13",
                "LINK-4-3",
                "WIRE-4.2-1",
                "LINK-2-4",
            ],
            init::mfs_before_up,
        ),
        le(
            "LE-INIT-9",
            "an end left in INIT goes on sending INIT every init_interval, and reports and counts \
             the timeout exactly once",
            &["LINK-2-14", "LINK-2-1"],
            init::init_forever,
        ),
        le(
            "LE-LLR-2",
            "a gap draws exactly one NACK with the last good sequence number; NACK_SENT \
             discards later frames; the expected frame resumes delivery in order",
            &["LINK-4-3", "LINK-4-7", "LINK-4-1", "LINK-7-3"],
            llr::gap_nack_once,
        ),
        le(
            "LE-LLR-3",
            "in NACK_SENT a frame not beyond the previous one ahead (a new replay lost the \
             frame again) draws one more NACK, whatever its REPLAY flag",
            &["LINK-4-8", "LINK-4-7", "WIRE-3-10"],
            llr::second_nack,
        ),
        le(
            "LE-LLR-4",
            "a bad FCS and a runt draw a NACK only in SEND_ACKS, take no sequence number and are \
             counted in rx_fcs_errors and rx_damaged",
            &[
                "LINK-4-3",
                "LINK-4-13",
                "WIRE-2.5-6",
                "WIRE-2.4-2",
                "WIRE-4.2-1",
                "WIRE-7-2",
                "WIRE-2.5-3",
            ],
            llr::damaged_nack,
        ),
        le(
            "LE-LLR-5",
            "a duplicate is discarded, counted and answered by an ACK of the last accepted \
             frame, in SEND_ACKS and in NACK_SENT, and delivered once only",
            &["LINK-4-5", "LINK-4-16", "LINK-4-1"],
            llr::duplicate_acked,
        ),
        le(
            "LE-LLR-6",
            "sequence numbers compare modulo 2^20 across the wrap: after UP 0xFFFFF and 0x80000 \
             (llr_window behind 0) are duplicates, 0x7FFFF is a gap (NACK 0xFFFFF)",
            &[
                "WIRE-3-4",
                "LINK-4-5",
                "LINK-4-16",
                "WIRE-4.2-1",
                "LINK-4-3",
            ],
            llr::wrap_boundaries,
        ),
        le(
            "LE-LLR-7",
            "an ACK goes when the bytes accepted since the last ACK or NACK, counted destination \
             MAC through FCS, reach ack_spacing",
            &["LINK-4-2", "LINK-1-1"],
            llr::ack_spacing,
        ),
        le(
            "LE-LLR-8",
            "an ACK goes ack_timer after the first frame waiting for one (within one tick of the \
             device's clock), not restarted by the frames after it",
            &["LINK-4-14", "LINK-1-5"],
            llr::ack_timer,
        ),
        le(
            "LE-LLR-9",
            "a frame with ACK_REQ is acknowledged at once",
            &["LINK-4-15", "WIRE-3-6"],
            llr::ack_req,
        ),
        le(
            "LE-LLR-10",
            "a NACK makes the TX replay from the frame after the last good one, every frame \
             with the REPLAY flag and byte-identical otherwise, before any new frame",
            &[
                "LINK-3-5",
                "LINK-3-8",
                "WIRE-3-5",
                "LINK-3-1",
                "LINK-3-2",
                "LINK-3-15",
                "WIRE-3-1",
            ],
            llr::nack_replay,
        ),
        le(
            "LE-LLR-11",
            "the replay timer runs from the last acknowledgement progress and replays the whole \
             buffer when it expires",
            &["LINK-3-11", "LINK-3-6", "LINK-3-5", "LINK-3-4"],
            llr::replay_timer,
        ),
        le(
            "LE-LLR-12",
            "replay_count_max replays without progress end in FLUSH: link down, frames of \
             unknown fate in order, INIT with a new nonce, queued frames sent after UP",
            &[
                "LINK-3-13",
                "LINK-6-1",
                "LINK-6-2",
                "LINK-6-3",
                "LINK-3-3",
                "LINK-2-9",
                "LINK-3-7",
                "LINK-3-11",
            ],
            llr::flush,
        ),
        le(
            "LE-LLR-13",
            "the TX sends no new frame while the replay buffer holds replay_max_frames frames or \
             the next would exceed replay_max_bytes",
            &["LINK-3-3", "LINK-3-4"],
            llr::replay_bounds,
        ),
        le(
            "LE-LLR-14",
            "an ACK beyond the newest frame sent is ignored and counted stale",
            &["LINK-3-4", "LINK-3-5"],
            llr::stale_ack,
        ),
        le(
            "LE-LLR-15",
            "a NACK that acknowledges the whole replay buffer starts no replay; with the buffer \
             empty only the number before the next to send is an acceptable ACK",
            &["LINK-3-14", "LINK-3-4"],
            llr::nack_empties,
        ),
        le(
            "LE-LLR-16",
            "a stomped frame is counted, draws no NACK, takes no sequence number, before and \
             after UP",
            &["LINK-4-10", "WIRE-2.5-5", "WIRE-7-2"],
            llr::stomped,
        ),
        le(
            "LE-LLR-17",
            "a DATA frame of the device lost on the wire is replayed after the peer's NACK and \
             the peer receives every frame once, in order",
            &["LINK-3-5", "LINK-3-2", "LINK-3-1"],
            llr::lost_frame_replayed,
        ),
        le(
            "LE-CBFC-1",
            "the TX sends no DATA beyond the peer's grant, pricing each frame with the peer's \
             credit size and overhead; each CF releases exactly the credits it returns",
            &["LINK-5-1", "LINK-5-2", "WIRE-4.5-5", "LINK-5-6", "LINK-2-4"],
            cbfc::grant_and_cost,
        ),
        le(
            "LE-CBFC-2",
            "a VC without credit does not stop the others",
            &["LINK-5-2"],
            cbfc::per_vc,
        ),
        le(
            "LE-CBFC-3",
            "a CF carrying freed[v] for every agreed VC goes when cf_min_credits are freed, not \
             while the upper layer holds the frames",
            &["LINK-5-5", "LINK-5-4", "LINK-5-1", "LINK-5-11"],
            cbfc::cf_on_drain,
        ),
        le(
            "LE-CBFC-4",
            "a CF goes every cf_max_interval while UP, unchanged or not",
            &["LINK-5-10", "LINK-5-11"],
            cbfc::cf_periodic,
        ),
        le(
            "LE-CBFC-5",
            "no CC while the replay buffer holds a frame; a CC carrying consumed[v] as soon as it \
             is empty and cc_interval has passed, then every cc_interval",
            &["LINK-5-7", "LINK-5-12", "LINK-5-11"],
            cbfc::cc_when_empty,
        ),
        le(
            "LE-CBFC-6",
            "a CC recovers the credits it shows leaked and a CF follows at once; an entry for a \
             VC not agreed or behind received is counted stale",
            &["LINK-5-8", "LINK-5-13"],
            cbfc::cc_recovers,
        ),
        le(
            "LE-CBFC-7",
            "a lost CF is repaired by the next; CF entries ahead of consumed, behind freed_seen, \
             exactly 2^19 ahead or for a VC not agreed are ignored and counted; ACKs go while no \
             credit is left",
            &["LINK-5-6", "LINK-5-2", "LINK-5-9"],
            cbfc::cf_stale_and_repair,
        ),
        le(
            "LE-CBFC-8",
            "a frame beyond the free buffer of its VC (a faulty peer) is discarded as if it \
             had not arrived and counted as a credit overrun; control frames are still taken",
            &["LINK-4-6", "LINK-5-4", "LINK-5-9"],
            cbfc::overrun,
        ),
        le(
            "LE-CBFC-9",
            "retransmissions consume no credit: the CC after a replay carries the credits of \
             the first transmissions only",
            &["LINK-5-3", "LINK-5-7"],
            cbfc::replay_no_recharge,
        ),
        le(
            "LE-RX-1",
            "a frame with a foreign EtherType (or a second tag) is counted in rx_foreign, draws \
             no NACK and takes no sequence number",
            &["WIRE-2.1-2", "WIRE-2.1-3", "WIRE-7-2", "WIRE-7-1"],
            rx::foreign,
        ),
        le(
            "LE-RX-2",
            "a frame of version 2 is counted in rx_bad_version, draws no NACK and takes no \
             sequence number",
            &["WIRE-3-2", "WIRE-3-8", "WIRE-7-2"],
            rx::bad_version,
        ),
        le(
            "LE-RX-3",
            "frames of kinds 0x7 and 0xF are counted in rx_unknown_kind and draw no NACK",
            &["WIRE-3-3", "WIRE-3-9", "WIRE-7-2", "WIRE-1.2-3"],
            rx::unknown_kind,
        ),
        le(
            "LE-RX-4",
            "control frames with a short or long body or INIT fields out of range are counted \
             in rx_malformed_control, draw no NACK and bring nothing UP; non-zero padding is \
             ignored",
            &[
                "WIRE-4-1",
                "WIRE-4-2",
                "WIRE-4.5-4",
                "WIRE-2.4-3",
                "WIRE-2.4-7",
            ],
            rx::malformed_control,
        ),
        le(
            "LE-RX-5",
            "tagged frames (INIT, DATA) are accepted; a DATA frame's VC comes from the link \
             header, not the PCP",
            &["WIRE-2.2-1", "WIRE-2.2-2", "WIRE-4.5-8"],
            rx::tagged,
        ),
        le(
            "LE-RX-6",
            "DATA on a VC not agreed takes its sequence number, is acknowledged, not delivered, \
             counted in rx_vc_not_agreed, and draws no NACK",
            &["WIRE-7-4", "LINK-4-11"],
            rx::vc_not_agreed,
        ),
        le(
            "LE-RX-7",
            "before UP, DATA, ACK, NACK, CF and CC are counted in rx_not_up and a damaged frame \
             draws no NACK; none takes a sequence number",
            &["WIRE-7-5", "LINK-2-10", "LINK-2-11", "LINK-4-13"],
            rx::not_up,
        ),
        le(
            "LE-RX-8",
            "DATA with a malformed network header or bytes beyond the padding is accepted on \
             its link header: sequence number consumed, acknowledged, no NACK, handed up and \
             its credits returned",
            &[
                "LINK-4-12",
                "WIRE-7-3",
                "WIRE-2.4-5",
                "WIRE-5-6",
                "LINK-4-17",
            ],
            rx::malformed_body,
        ),
        le(
            "LE-RX-9",
            "reserved flag and sequence bits of a DATA frame and reserved CF bytes are ignored; \
             a CF with an empty mask is taken; any destination address is accepted",
            &["WIRE-1.2-2", "WIRE-4.3-3", "WIRE-4.3-2", "WIRE-2.3-2"],
            rx::reserved_ignored,
        ),
        le(
            "LE-CNT-1",
            "every frame handed to the end increments exactly one receive counter, the one of \
             Tables LINK-T3 and WIRE-T1",
            &["LINK-7-1", "LINK-7-3"],
            counters::one_counter_each,
        ),
        le(
            "LE-CNT-2",
            "tx_frames and tx_bytes count new DATA frames by their length, retransmissions \
             apart in frames_replayed",
            &["LINK-1-1", "LINK-7-1"],
            counters::tx_counters,
        ),
        le(
            "LE-INIT-10",
            "the agreed VCs, MFS and LLR window are the smaller of the two: DATA on a VC the \
             peer lacks is not agreed, frames too long for the peer or on its missing VCs are \
             reported lost while one of exactly its MFS goes, the window bounds both directions",
            &[
                "LINK-2-4",
                "LINK-3-3",
                "LINK-4-5",
                "LINK-4-11",
                "LINK-4-3",
                "WIRE-2.4-8",
                "LINK-2-19",
            ],
            init::agreement,
        ),
        le(
            "LE-INIT-11",
            "a configuration whose grant cannot hold one frame of its own MFS is refused, or \
             never announced",
            &["LINK-2-13"],
            init::own_grant_checked,
        ),
        le(
            "LE-INIT-17",
            "while UP, a frame on the first VC not agreed is reported lost at once, a frame of \
             exactly the agreed MFS goes, frames 4 B longer on two VCs are reported lost in \
             their turn and counted, and the frames behind them go",
            &["LINK-2-19", "WIRE-2.4-8"],
            init::lost_while_up,
        ),
        le(
            "LE-INIT-12",
            "physical down: link down, replay buffer of unknown fate, nothing sent and every \
             frame discarded as not UP while down; physical up: INIT at once with a new nonce",
            &[
                "LINK-6-3",
                "LINK-6-1",
                "LINK-2-11",
                "LINK-2-1",
                "LINK-2-9",
                "LINK-6-2",
            ],
            init::physical_down,
        ),
        le(
            "LE-INIT-13",
            "a peer announcing the reserved role 3, every capability and reserved bit, and \
             out-of-range grants for VCs it does not have is answered and brought UP",
            &[
                "CLS-2-3",
                "WIRE-4.5-3",
                "WIRE-1.2-2",
                "LINK-2-2",
                "LINK-2-3",
            ],
            init::any_role_accepted,
        ),
        le(
            "LE-LLR-18",
            "the replay count returns to 0 on acknowledgement progress: FLUSH comes only after \
             replay_count_max + 1 replays without progress",
            &["LINK-3-7", "LINK-3-13", "LINK-3-6"],
            llr::count_resets,
        ),
        le(
            "LE-LLR-19",
            "frames due together go in the order ACK, CF, retransmitted DATA, new DATA",
            &["LINK-3-15"],
            llr::transmit_order,
        ),
        Case {
            level: Level::Should,
            ..le(
                "LE-LLR-20",
                "ACK_REQ is set on the new frame that brings the replay buffer to half of \
                 replay_max_frames",
                &["LINK-3-16"],
                llr::ack_req_at_half,
            )
        },
        Case {
            level: Level::Should,
            ..le(
                "LE-LLR-21",
                "new frames are taken from the VCs in round-robin order",
                &["LINK-3-17"],
                llr::round_robin,
            )
        },
        le(
            "LE-CBFC-10",
            "a CF for cf_min_credits waits cf_min_interval after the previous CF",
            &["LINK-5-5"],
            cbfc::cf_min_interval,
        ),
        Case {
            level: Level::Should,
            ..le(
                "LE-INIT-14",
                "frames go to 01:80:C2:00:00:0E until the peer's address is learned from its \
                 INIT, then to it; after physical down to 01:80:C2:00:00:0E again",
                &["WIRE-2.3-2", "LINK-2-15"],
                init::peer_address,
            )
        },
        le(
            "LE-LLR-22",
            "frames of the peer duplicated and reordered on the wire are delivered once each, \
             in order, the duplicates counted",
            &["LINK-4-1", "LINK-4-5", "LINK-4-3"],
            llr::peer_dup_and_reorder,
        ),
        le(
            "LE-LLR-23",
            "with the peer's ACKs withheld the replay timer replays until an ACK gets through; \
             the peer gets every frame once, and no FLUSH",
            &["LINK-3-11", "LINK-3-2", "LINK-3-7"],
            llr::acks_withheld,
        ),
        le(
            "LE-CBFC-11",
            "CFs of the peer lost on the wire: the next CF repairs them and every frame goes, \
             in order",
            &["LINK-5-6", "LINK-5-2", "LINK-5-10"],
            cbfc::lost_cfs_repaired,
        ),
        le(
            "LE-LLR-24",
            "a second NACK that comes before the replay it would restart has sent a frame \
             starts no replay and does not count (no FLUSH with replay_count_max 1)",
            &["LINK-3-9", "LINK-3-7", "LINK-3-13"],
            llr::nack_while_replay_due,
        ),
        le(
            "LE-LLR-25",
            "an ACK that comes while a replay is due removes the frames it acknowledges: the \
             replay starts at the oldest frame left",
            &["LINK-3-10", "LINK-3-4"],
            llr::ack_while_replay_due,
        ),
        le(
            "LE-LLR-26",
            "a NACK due but not yet sent is cancelled by the expected frame",
            &["LINK-4-9", "LINK-4-1"],
            llr::nack_cancelled,
        ),
        le(
            "LE-CNT-3",
            "a credit stall is counted when it begins and its length when a frame of the VC is \
             sent",
            &["LINK-7-4"],
            counters::credit_stall,
        ),
        le(
            "LE-CNT-4",
            "the counters of what the device sends (inits_sent, init_echoes_sent, tx_frames, \
             frames_replayed, acks_sent, nacks_sent, cf_sent, cc_sent, link_ups) equal the \
             frames of each kind on the wire",
            &["LINK-7-6"],
            counters::sent_counters,
        ),
        le(
            "LE-CNT-5",
            "the high-water marks of Table LINK-T3: the receive buffer's credits (three frames \
             held), the replay buffer's frames and bytes (five frames unacknowledged), each kept \
             at its highest once the buffers empty",
            &["LINK-7-6"],
            counters::high_water_marks,
        ),
        le(
            "LE-TX-1",
            "every frame the device sends has a good FCS, EtherType 0x88B5, version 1, a unicast \
             source, zero reserved fields, zero padding to exactly 64 B, the size of its kind, \
             fields in range, no tag and no stomp",
            &[
                "WIRE-1.1-1",
                "WIRE-1.2-1",
                "WIRE-2.1-1",
                "WIRE-2.3-1",
                "WIRE-2.4-1",
                "WIRE-2.4-4",
                "WIRE-2.5-1",
                "WIRE-2.5-2",
                "WIRE-3-1",
                "WIRE-3-7",
                "WIRE-4-1",
                "WIRE-4.3-1",
                "WIRE-4.5-1",
                "WIRE-4.5-7",
                "CLS-3-2",
                "CLS-3-3",
            ],
            tx::tx_format,
        ),
        le(
            "LE-RX-10",
            "the receive pipeline checks size, FCS, EtherType, version and kind in that order and \
             counts a frame at the first check it fails",
            &["WIRE-7-1", "WIRE-2.5-3"],
            rx::pipeline_order,
        ),
        le(
            "LE-WD-1",
            "withdrawn frames come back as lost (withdrawn) after the outputs already pending, in \
             submission order on each VC, and are never sent; frames in the replay buffer are not \
             withdrawn",
            &["LINK-6-5", "LINK-6-6"],
            withdraw::withdraw_unsent,
        ),
        le(
            "LE-WD-2",
            "two withdrawals at one instant before UP each take back only what was queued since \
             the other: every frame reported withdrawn once, in order, and none sent; a frame \
             submitted afterwards goes as usual, and frames_withdrawn counts two",
            &["LINK-6-5", "LINK-6-6", "LINK-7-6"],
            withdraw::withdraw_twice,
        ),
        le(
            "LE-INIT-15",
            "a peer that restarts while the device's upper layer holds frames of the last \
             incarnation gets no INIT_ECHO, and its echo brings nothing UP, until they are \
             drained; then one INIT_ECHO for its newest INIT; draining them returns no credit, \
             and the new incarnation's grant is whole",
            &["LINK-2-18", "LINK-6-4", "LINK-2-5", "LINK-2-6", "LINK-2-17"],
            init::restart_with_a_held_buffer,
        ),
        le(
            "LE-LLR-27",
            "a peer that acknowledges one frame per replay keeps the replay count at 0, yet the \
             device sends no copy of a frame llr_max_age after its first transmission: it \
             FLUSHes, reports the rest of unknown fate in order and counts flushes_aged",
            &["LINK-3-18", "LINK-6-1", "LINK-3-7", "LINK-6-7"],
            llr::aged_out,
        ),
        le(
            "LE-LLR-29",
            "triggers that come together make one frame: a frame with ACK_REQ and a duplicate \
             draw one ACK; a NACK due with an ACK goes alone and settles it",
            &["LINK-4-18", "LINK-4-15", "LINK-4-16"],
            llr::one_frame_per_due,
        ),
        le(
            "LE-LLR-30",
            "a run of duplicates draws an ACK at the first and then each time the duplicates \
             after the last one that drew an ACK reach ack_spacing bytes, exactly",
            &["LINK-4-16", "LINK-4-5"],
            llr::duplicates_acked_by_spacing,
        ),
        le(
            "LE-INIT-16",
            "an INIT_ECHO with a foreign nonce and grants LINK-2-12 would refuse is counted in \
             init_echoes_ignored, not init_refused",
            &["LINK-2-17", "LINK-2-12"],
            init::echo_ignored_before_refused,
        ),
        le(
            "LE-LLR-28",
            "in NACK_SENT a gap frame not beyond the one that drew the NACK draws one more NACK; \
             a frame beyond it draws none",
            &["LINK-4-8", "LINK-4-7"],
            llr::nack_again_for_the_same_gap,
        ),
        le(
            "LE-CBFC-12",
            "the first CF after UP goes as soon as cf_min_credits are freed; the next waits \
             cf_min_interval from it",
            &["LINK-5-5"],
            cbfc::first_cf_after_up,
        ),
        le(
            "LE-CBFC-13",
            "a CC whose VC mask is zero is taken and ignored: no CF; a CC with an entry draws a \
             CF at once",
            &["WIRE-4.3-2", "LINK-5-13"],
            cbfc::empty_cc_draws_no_cf,
        ),
        le(
            "LE-CBFC-14",
            "one CF carrying an entry for every agreed VC returns credits on each VC it \
             advances, VC 0 unchanged below the others: the stalled frame of each of those VCs \
             goes, and none on VC 0",
            &["LINK-5-6", "LINK-5-2"],
            cbfc::cf_every_vc,
        ),
        le(
            "LE-CBFC-15",
            "credits past 2^16, sending: 300 frames of 9,000 B on VC 1 at 290 credits each \
             (credit size 32, overhead 255) reach the peer once and in order, none beyond the \
             grant, as consumed[1] passes 2^16; the CC then carries all of it",
            &["LINK-5-2", "LINK-5-6", "LINK-5-7"],
            cbfc::credits_past_2_16_tx,
        ),
        le(
            "LE-CBFC-16",
            "credits past 2^16, receiving: 300 frames of 9,000 B from the peer on VC 1 are \
             delivered once and in order with no overrun as freed[1] passes 2^16; the last CF \
             carries all of it",
            &["LINK-5-4", "LINK-5-5"],
            cbfc::credits_past_2_16_rx,
        ),
        le(
            "LE-CBFC-17",
            "a CC recovers leaked credits on every agreed VC: one credit, more than 2^16 and \
             2^19 - 1 are recovered, an entry 2^19 ahead or for the first VC not agreed is \
             counted stale, and each such CC draws a CF at once",
            &["LINK-5-8", "LINK-5-13"],
            cbfc::cc_recovers_every_vc,
        ),
    ]
}

/// Parameters that keep the device from sending anything the case does not ask for: ACKs only
/// on duplicates and ACK_REQ, CF and CC and replays only after a millisecond.
fn quiet() -> LinkParams {
    LinkParams {
        ack_timer_ns: Some(1_000_000),
        ack_spacing: Some(1 << 20),
        replay_timer_ns: Some(1_000_000),
        cf_min_credits: Some(1_000_000),
        cf_max_interval_ns: Some(1_000_000),
        cc_interval_ns: Some(1_000_000),
        ..LinkParams::default()
    }
}

fn submit(ctx: &mut Ctx<'_>, vc: u8, payload: &[u8]) -> Result<(), Stop> {
    ctx.request(&Request::Submit {
        port: 0,
        vc,
        payload: hex::encode(payload),
    })?;
    Ok(())
}

fn hold(ctx: &mut Ctx<'_>, vc: u8, on: bool) -> Result<(), Stop> {
    ctx.request(&Request::Hold {
        port: 0,
        vc,
        hold: on,
    })?;
    Ok(())
}

/// Injects `frame`, runs 50 ns and returns what the device sent.
fn send(ctx: &mut Ctx<'_>, frame: &[u8]) -> Result<Vec<Sent>, Stop> {
    ctx.inject(0, frame)?;
    wait(ctx, 50)
}

/// Runs `ns`, and on until the device's transmitter has put on the wire what it had to send
/// ([`Ctx::settle`]), and returns what the device sent.
fn wait(ctx: &mut Ctx<'_>, ns: u64) -> Result<Vec<Sent>, Stop> {
    ctx.run_for(ns)?;
    ctx.settle()?;
    Ok(take_sent(ctx))
}

fn no_nack(sent: &[Sent], req: &'static str, why: &str) -> Result<(), Stop> {
    let n = nacks(sent);
    check(n.is_empty(), req, format!("no NACK ({why})"), || {
        format!("NACKs carrying {n:?}")
    })
}

fn no_data(sent: &[Sent], req: &'static str, why: &str) -> Result<(), Stop> {
    let d = data_of(sent);
    check(d.is_empty(), req, format!("no DATA frame ({why})"), || {
        format!("DATA (seq, flags, tag) {d:?}")
    })
}

fn one_nack(sent: &[Sent], seq: u32, req: &'static str) -> Result<(), Stop> {
    check_eq(req, "NACKs sent", nacks(sent), vec![seq])
}

/// `frame` with flag bits `flags` added to its link header (untagged) and a good FCS.
fn flagged(mut frame: Vec<u8>, flags: u8) -> Vec<u8> {
    frame[15] |= flags;
    refcs(&mut frame);
    frame
}

/// `frame` with its last byte damaged.
fn bad_fcs(mut frame: Vec<u8>) -> Vec<u8> {
    let n = frame.len();
    frame[n - 1] ^= 0x5A;
    frame
}

fn stomped_frame(mut frame: Vec<u8>) -> Vec<u8> {
    stomp(&mut frame);
    frame
}

/// Accepts `frame` (counted in rx_frames of `vc`), failing with `req` otherwise.
fn accepted(ctx: &mut Ctx<'_>, frame: &[u8], vc: u8, req: &'static str) -> Result<Vec<Sent>, Stop> {
    counted_as(ctx, frame, &format!("rx_frames.vc{vc}"), req)
}

fn delivered_tags(ctx: &mut Ctx<'_>) -> Vec<u32> {
    delivered(&ctx.take_outputs())
        .into_iter()
        .map(|(_, t)| t)
        .collect()
}

fn counter_delta(
    ctx: &mut Ctx<'_>,
    before: &crate::device::Counters,
    name: &str,
) -> Result<u64, Stop> {
    Ok(ctx
        .counter(name)?
        .wrapping_sub(before.get(name).copied().unwrap_or(0)))
}

fn small_peer(ctx: &Ctx<'_>, credits: [u32; 8], overhead: u8) -> ethlink_protocol::InitRepr {
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.mfs = 320;
    peer.credit_size = 64;
    peer.credit_overhead = overhead;
    let vcs = usize::from(peer.vcs);
    peer.credits = credits;
    for c in peer.credits.iter_mut().skip(vcs) {
        *c = 0;
    }
    peer
}

fn is_kind(bytes: &[u8], kind: u8) -> bool {
    bytes.len() > 20 && bytes[14] & 0x0F == kind
}

/// The payloads reported lost in `outs` as (index in `outs`, VC, reason, tag).
fn lost_at(outs: &[Output]) -> Vec<(usize, u8, String, u32)> {
    outs.iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Output::Lost {
                vc,
                reason,
                payload,
                ..
            } => {
                let p = hex::decode(payload).ok()?;
                Some((i, *vc, reason.clone(), tag_of(&p).unwrap_or(u32::MAX)))
            }
            _ => None,
        })
        .collect()
}
