//! Cases for a link end (classes.md, class Link End): bring-up, link-level retry, credit-based
//! flow control, and the receive pipeline up to link-layer acceptance (link.md, wire.md §1-§4
//! and §7). Every case drives port 0 of the device against a reference peer or raw frames.

use ethlink_protocol::{Capabilities, LinkFrame, Seq};

use crate::case::{Case, Level, Stop, check, check_eq};
use crate::cases::common::*;
use crate::ctx::{Ctx, Dir, Fault};
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
            init_comes_up,
        ),
        le(
            "LE-LLR-1",
            "a DATA frame with a bad FCS draws one NACK with the last good sequence number, \
             and the replay is delivered once and in order",
            &["LINK-4-3", "WIRE-2.5-3", "LINK-4-1"],
            bad_fcs_draws_nack,
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
            init_periodic,
        ),
        le(
            "LE-INIT-3",
            "every valid INIT is answered by an INIT_ECHO carrying its nonce and the device's own \
             nonce and configured parameters; of two INITs at once only the newer; an INIT \
             alone brings nothing UP",
            &["LINK-2-2", "LINK-2-3", "CLS-2-1", "LINK-7-3"],
            init_echo_answers,
        ),
        le(
            "LE-INIT-4",
            "an INIT_ECHO for another nonce, and every INIT_ECHO while UP, is ignored and counted; \
             the echo of the device's own nonce brings it UP; an INIT of the same peer nonce \
             while UP is answered and restarts nothing",
            &["LINK-2-3", "LINK-2-17", "LINK-7-3", "LINK-2-2", "LINK-2-6"],
            foreign_echo_ignored,
        ),
        le(
            "LE-INIT-5",
            "no DATA before UP, and none after UP until the LINK-2-8 gate opens; a frame \
             submitted before UP then goes with sequence number 0 and no REPLAY flag",
            &["LINK-2-7", "LINK-2-8", "LINK-3-1", "WIRE-3-5", "LINK-2-5"],
            no_data_before_up,
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
            peer_restart,
        ),
        le(
            "LE-INIT-7",
            "an INIT or INIT_ECHO whose grant on some VC is below one frame of the agreed MFS \
             (credit size and overhead of the sender) is refused and counted; one credit more \
             is accepted; an UP end refuses such an INIT and stays UP",
            &["LINK-2-12", "WIRE-4.5-9", "LINK-2-14", "LINK-7-3"],
            init_refused,
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
            mfs_before_up,
        ),
        le(
            "LE-INIT-9",
            "an end left in INIT goes on sending INIT every init_interval, and reports and counts \
             the timeout exactly once",
            &["LINK-2-14", "LINK-2-1"],
            init_forever,
        ),
        le(
            "LE-LLR-2",
            "a gap draws exactly one NACK with the last good sequence number; NACK_SENT \
             discards later frames; the expected frame resumes delivery in order",
            &["LINK-4-3", "LINK-4-7", "LINK-4-1", "LINK-7-3"],
            gap_nack_once,
        ),
        le(
            "LE-LLR-3",
            "in NACK_SENT a frame not beyond the previous one ahead (a new replay lost the \
             frame again) draws one more NACK, whatever its REPLAY flag",
            &["LINK-4-8", "LINK-4-7", "WIRE-3-10"],
            second_nack,
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
            damaged_nack,
        ),
        le(
            "LE-LLR-5",
            "a duplicate is discarded, counted and answered by an ACK of the last accepted \
             frame, in SEND_ACKS and in NACK_SENT, and delivered once only",
            &["LINK-4-5", "LINK-4-16", "LINK-4-1"],
            duplicate_acked,
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
            wrap_boundaries,
        ),
        le(
            "LE-LLR-7",
            "an ACK goes when the bytes accepted since the last ACK or NACK, counted destination \
             MAC through FCS, reach ack_spacing",
            &["LINK-4-2", "LINK-1-1"],
            ack_spacing,
        ),
        le(
            "LE-LLR-8",
            "an ACK goes ack_timer after the first frame waiting for one (within one tick of the \
             device's clock), not restarted by the frames after it",
            &["LINK-4-14", "LINK-1-5"],
            ack_timer,
        ),
        le(
            "LE-LLR-9",
            "a frame with ACK_REQ is acknowledged at once",
            &["LINK-4-15", "WIRE-3-6"],
            ack_req,
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
            nack_replay,
        ),
        le(
            "LE-LLR-11",
            "the replay timer runs from the last acknowledgement progress and replays the whole \
             buffer when it expires",
            &["LINK-3-11", "LINK-3-6", "LINK-3-5", "LINK-3-4"],
            replay_timer,
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
            flush,
        ),
        le(
            "LE-LLR-13",
            "the TX sends no new frame while the replay buffer holds replay_max_frames frames or \
             the next would exceed replay_max_bytes",
            &["LINK-3-3", "LINK-3-4"],
            replay_bounds,
        ),
        le(
            "LE-LLR-14",
            "an ACK beyond the newest frame sent is ignored and counted stale",
            &["LINK-3-4", "LINK-3-5"],
            stale_ack,
        ),
        le(
            "LE-LLR-15",
            "a NACK that acknowledges the whole replay buffer starts no replay; with the buffer \
             empty only the number before the next to send is an acceptable ACK",
            &["LINK-3-14", "LINK-3-4"],
            nack_empties,
        ),
        le(
            "LE-LLR-16",
            "a stomped frame is counted, draws no NACK, takes no sequence number, before and \
             after UP",
            &["LINK-4-10", "WIRE-2.5-5", "WIRE-7-2"],
            stomped,
        ),
        le(
            "LE-LLR-17",
            "a DATA frame of the device lost on the wire is replayed after the peer's NACK and \
             the peer receives every frame once, in order",
            &["LINK-3-5", "LINK-3-2", "LINK-3-1"],
            lost_frame_replayed,
        ),
        le(
            "LE-CBFC-1",
            "the TX sends no DATA beyond the peer's grant, pricing each frame with the peer's \
             credit size and overhead; each CF releases exactly the credits it returns",
            &["LINK-5-1", "LINK-5-2", "WIRE-4.5-5", "LINK-5-6", "LINK-2-4"],
            grant_and_cost,
        ),
        le(
            "LE-CBFC-2",
            "a VC without credit does not stop the others",
            &["LINK-5-2"],
            per_vc,
        ),
        le(
            "LE-CBFC-3",
            "a CF carrying freed[v] for every agreed VC goes when cf_min_credits are freed, not \
             while the upper layer holds the frames",
            &["LINK-5-5", "LINK-5-4", "LINK-5-1", "LINK-5-11"],
            cf_on_drain,
        ),
        le(
            "LE-CBFC-4",
            "a CF goes every cf_max_interval while UP, unchanged or not",
            &["LINK-5-10", "LINK-5-11"],
            cf_periodic,
        ),
        le(
            "LE-CBFC-5",
            "no CC while the replay buffer holds a frame; a CC carrying consumed[v] as soon as it \
             is empty and cc_interval has passed, then every cc_interval",
            &["LINK-5-7", "LINK-5-12", "LINK-5-11"],
            cc_when_empty,
        ),
        le(
            "LE-CBFC-6",
            "a CC recovers the credits it shows leaked and a CF follows at once; an entry for a \
             VC not agreed or behind received is counted stale",
            &["LINK-5-8", "LINK-5-13"],
            cc_recovers,
        ),
        le(
            "LE-CBFC-7",
            "a lost CF is repaired by the next; CF entries ahead of consumed, behind freed_seen \
             or for a VC not agreed are ignored and counted; ACKs go while no credit is left",
            &["LINK-5-6", "LINK-5-2", "LINK-5-9"],
            cf_stale_and_repair,
        ),
        le(
            "LE-CBFC-8",
            "a frame beyond the free buffer of its VC (a faulty peer) is discarded as if it \
             had not arrived and counted as a credit overrun; control frames are still taken",
            &["LINK-4-6", "LINK-5-4", "LINK-5-9"],
            overrun,
        ),
        le(
            "LE-CBFC-9",
            "retransmissions consume no credit: the CC after a replay carries the credits of \
             the first transmissions only",
            &["LINK-5-3", "LINK-5-7"],
            replay_no_recharge,
        ),
        le(
            "LE-RX-1",
            "a frame with a foreign EtherType (or a second tag) is counted in rx_foreign, draws \
             no NACK and takes no sequence number",
            &["WIRE-2.1-2", "WIRE-2.1-3", "WIRE-7-2", "WIRE-7-1"],
            foreign,
        ),
        le(
            "LE-RX-2",
            "a frame of version 2 is counted in rx_bad_version, draws no NACK and takes no \
             sequence number",
            &["WIRE-3-2", "WIRE-3-8", "WIRE-7-2"],
            bad_version,
        ),
        le(
            "LE-RX-3",
            "frames of kinds 0x7 and 0xF are counted in rx_unknown_kind and draw no NACK",
            &["WIRE-3-3", "WIRE-3-9", "WIRE-7-2", "WIRE-1.2-3"],
            unknown_kind,
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
            malformed_control,
        ),
        le(
            "LE-RX-5",
            "tagged frames (INIT, DATA) are accepted; a DATA frame's VC comes from the link \
             header, not the PCP",
            &["WIRE-2.2-1", "WIRE-2.2-2", "WIRE-4.5-8"],
            tagged,
        ),
        le(
            "LE-RX-6",
            "DATA on a VC not agreed takes its sequence number, is acknowledged, not delivered, \
             counted in rx_vc_not_agreed, and draws no NACK",
            &["WIRE-7-4", "LINK-4-11"],
            vc_not_agreed,
        ),
        le(
            "LE-RX-7",
            "before UP, DATA, ACK, NACK, CF and CC are counted in rx_not_up and a damaged frame \
             draws no NACK; none takes a sequence number",
            &["WIRE-7-5", "LINK-2-10", "LINK-2-11", "LINK-4-13"],
            not_up,
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
            malformed_body,
        ),
        le(
            "LE-RX-9",
            "reserved flag and sequence bits of a DATA frame and reserved CF bytes are ignored; \
             a CF with an empty mask is taken; any destination address is accepted",
            &["WIRE-1.2-2", "WIRE-4.3-3", "WIRE-4.3-2", "WIRE-2.3-2"],
            reserved_ignored,
        ),
        le(
            "LE-CNT-1",
            "every frame handed to the end increments exactly one receive counter, the one of \
             Tables LINK-T3 and WIRE-T1",
            &["LINK-7-1", "LINK-7-3"],
            one_counter_each,
        ),
        le(
            "LE-CNT-2",
            "tx_frames and tx_bytes count new DATA frames by their length, retransmissions \
             apart in frames_replayed",
            &["LINK-1-1", "LINK-7-1"],
            tx_counters,
        ),
        le(
            "LE-INIT-10",
            "the agreed VCs, MFS and LLR window are the smaller of the two: DATA on a VC the \
             peer lacks is not agreed, frames too long for the peer or on its missing VCs are \
             reported lost, the window bounds both directions",
            &[
                "LINK-2-4",
                "LINK-3-3",
                "LINK-4-5",
                "LINK-4-11",
                "LINK-4-3",
                "WIRE-2.4-8",
                "LINK-2-19",
            ],
            agreement,
        ),
        le(
            "LE-INIT-11",
            "a configuration whose grant cannot hold one frame of its own MFS is refused, or \
             never announced",
            &["LINK-2-13"],
            own_grant_checked,
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
            physical_down,
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
            any_role_accepted,
        ),
        le(
            "LE-LLR-18",
            "the replay count returns to 0 on acknowledgement progress: FLUSH comes only after \
             replay_count_max + 1 replays without progress",
            &["LINK-3-7", "LINK-3-13", "LINK-3-6"],
            count_resets,
        ),
        le(
            "LE-LLR-19",
            "frames due together go in the order ACK, CF, retransmitted DATA, new DATA",
            &["LINK-3-15"],
            transmit_order,
        ),
        Case {
            level: Level::Should,
            ..le(
                "LE-LLR-20",
                "ACK_REQ is set on the new frame that brings the replay buffer to half of \
                 replay_max_frames",
                &["LINK-3-16"],
                ack_req_at_half,
            )
        },
        Case {
            level: Level::Should,
            ..le(
                "LE-LLR-21",
                "new frames are taken from the VCs in round-robin order",
                &["LINK-3-17"],
                round_robin,
            )
        },
        le(
            "LE-CBFC-10",
            "a CF for cf_min_credits waits cf_min_interval after the previous CF",
            &["LINK-5-5"],
            cf_min_interval,
        ),
        Case {
            level: Level::Should,
            ..le(
                "LE-INIT-14",
                "frames go to 01:80:C2:00:00:0E until the peer's address is learned from its \
                 INIT, then to it; after physical down to 01:80:C2:00:00:0E again",
                &["WIRE-2.3-2", "LINK-2-15"],
                peer_address,
            )
        },
        le(
            "LE-LLR-22",
            "frames of the peer duplicated and reordered on the wire are delivered once each, \
             in order, the duplicates counted",
            &["LINK-4-1", "LINK-4-5", "LINK-4-3"],
            peer_dup_and_reorder,
        ),
        le(
            "LE-LLR-23",
            "with the peer's ACKs withheld the replay timer replays until an ACK gets through; \
             the peer gets every frame once, and no FLUSH",
            &["LINK-3-11", "LINK-3-2", "LINK-3-7"],
            acks_withheld,
        ),
        le(
            "LE-CBFC-11",
            "CFs of the peer lost on the wire: the next CF repairs them and every frame goes, \
             in order",
            &["LINK-5-6", "LINK-5-2", "LINK-5-10"],
            lost_cfs_repaired,
        ),
        le(
            "LE-LLR-24",
            "a second NACK that comes before the replay it would restart has sent a frame \
             starts no replay and does not count (no FLUSH with replay_count_max 1)",
            &["LINK-3-9", "LINK-3-7", "LINK-3-13"],
            nack_while_replay_due,
        ),
        le(
            "LE-LLR-25",
            "an ACK that comes while a replay is due removes the frames it acknowledges: the \
             replay starts at the oldest frame left",
            &["LINK-3-10", "LINK-3-4"],
            ack_while_replay_due,
        ),
        le(
            "LE-LLR-26",
            "a NACK due but not yet sent is cancelled by the expected frame",
            &["LINK-4-9", "LINK-4-1"],
            nack_cancelled,
        ),
        le(
            "LE-CNT-3",
            "a credit stall is counted when it begins and its length when a frame of the VC is \
             sent",
            &["LINK-7-4"],
            credit_stall,
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
            tx_format,
        ),
        le(
            "LE-RX-10",
            "the receive pipeline checks size, FCS, EtherType, version and kind in that order and \
             counts a frame at the first check it fails",
            &["WIRE-7-1", "WIRE-2.5-3"],
            pipeline_order,
        ),
        le(
            "LE-WD-1",
            "withdrawn frames come back as lost (withdrawn) after the outputs already pending, in \
             submission order on each VC, and are never sent; frames in the replay buffer are not \
             withdrawn",
            &["LINK-6-5", "LINK-6-6"],
            withdraw_unsent,
        ),
        le(
            "LE-INIT-15",
            "a peer that restarts while the device's upper layer holds frames of the last \
             incarnation gets no INIT_ECHO, and its echo brings nothing UP, until they are \
             drained; then one INIT_ECHO for its newest INIT; draining them returns no credit, \
             and the new incarnation's grant is whole",
            &["LINK-2-18", "LINK-6-4", "LINK-2-5", "LINK-2-6", "LINK-2-17"],
            restart_with_a_held_buffer,
        ),
        le(
            "LE-LLR-27",
            "a peer that acknowledges one frame per replay keeps the replay count at 0, yet the \
             device sends no copy of a frame llr_max_age after its first transmission: it \
             FLUSHes, reports the rest of unknown fate in order and counts flushes_aged",
            &["LINK-3-18", "LINK-6-1", "LINK-3-7", "LINK-6-7"],
            aged_out,
        ),
        le(
            "LE-LLR-29",
            "triggers that come together make one frame: a frame with ACK_REQ and a duplicate \
             draw one ACK; a NACK due with an ACK goes alone and settles it",
            &["LINK-4-18", "LINK-4-15", "LINK-4-16"],
            one_frame_per_due,
        ),
        le(
            "LE-INIT-16",
            "an INIT_ECHO with a foreign nonce and grants LINK-2-12 would refuse is counted in \
             init_echoes_ignored, not init_refused",
            &["LINK-2-17", "LINK-2-12"],
            echo_ignored_before_refused,
        ),
        le(
            "LE-LLR-28",
            "in NACK_SENT a gap frame not beyond the one that drew the NACK draws one more NACK; \
             a frame beyond it draws none",
            &["LINK-4-8", "LINK-4-7"],
            nack_again_for_the_same_gap,
        ),
        le(
            "LE-CBFC-12",
            "the first CF after UP goes as soon as cf_min_credits are freed; the next waits \
             cf_min_interval from it",
            &["LINK-5-5"],
            first_cf_after_up,
        ),
        le(
            "LE-CBFC-13",
            "a CC whose VC mask is zero is taken and ignored: no CF; a CC with an entry draws a \
             CF at once",
            &["WIRE-4.3-2", "LINK-5-13"],
            empty_cc_draws_no_cf,
        ),
    ]
}

fn init_comes_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    let sent = sent_since(ctx, 0);
    check(
        sent.first() == Some(&Kind::Init) || sent.contains(&Kind::Init),
        "LINK-2-1",
        "INIT frames after the physical link came up",
        || format!("frames sent: {sent:?}"),
    )?;
    let up = ctx
        .take_outputs()
        .iter()
        .any(|o| matches!(o, Output::LinkUp { port: 0 }));
    check(up, "LINK-2-3", "a link-up event", || "none".into())
}

fn bad_fcs_draws_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    ctx.take_outputs();
    // Damage the third DATA frame the peer sends, once.
    let mut data_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && bytes.len() > 20 && bytes[14] & 0x0F == 0 {
                data_seen += 1;
                if data_seen == 3 {
                    let n = bytes.len();
                    bytes[n - 1] ^= 0xFF;
                }
            }
            Fault::Pass
        }),
    )?;
    let from = ctx.log().len();
    for i in 0..6 {
        ctx.peer_submit(0, 0, &payload(256, i))?;
    }
    ctx.run_for(20_000)?;
    let nacks: Vec<u32> = sent_since(ctx, from)
        .into_iter()
        .filter_map(|k| match k {
            Kind::Nack(s) => Some(s),
            _ => None,
        })
        .collect();
    check(
        nacks == vec![before(2)],
        "LINK-4-3",
        "exactly one NACK carrying 1, the last sequence number received in order",
        || format!("NACKs carrying {nacks:?}"),
    )?;
    let tags: Vec<u32> = ctx
        .take_outputs()
        .iter()
        .filter_map(|o| match o {
            Output::Delivered { payload, .. } => hex::decode(payload).ok().and_then(|p| tag_of(&p)),
            _ => None,
        })
        .collect();
    check(
        tags == (0..6).collect::<Vec<_>>(),
        "LINK-4-1",
        "payloads 0..5 delivered once each, in order",
        || format!("delivered {tags:?}"),
    )
}

// ----- helpers ----------------------------------------------------------------------------------

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

fn caps_of(ctx: &Ctx<'_>) -> Capabilities {
    ctx.desc
        .caps
        .iter()
        .filter_map(|n| Capabilities::from_name(n))
        .fold(Capabilities::NONE, Capabilities::union)
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

// ----- bring-up ---------------------------------------------------------------------------------

fn init_periodic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        vcs: Some(2),
        credit_size: Some(128),
        rx_credits: Some(100),
        credit_overhead: Some(8),
        mfs: Some(4096),
        llr_window: Some(1000),
        init_interval_ns: Some(1000),
        ..LinkParams::default()
    };
    ctx.reset(&setup(link))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let t0 = ctx.now();
    let sent = wait(ctx, 5_500)?;
    let others: Vec<&Frm> = sent
        .iter()
        .map(|s| &s.frame)
        .filter(|f| !matches!(f, Frm::Init(_)))
        .collect();
    check(
        others.is_empty(),
        "LINK-2-7",
        "only INIT frames before UP",
        || format!("also {others:?}"),
    )?;
    let inits: Vec<(u64, &Sent)> = sent.iter().map(|s| (s.time, s)).collect();
    check(
        inits.first().is_some_and(|(t, _)| *t <= t0 + 100),
        "LINK-2-1",
        "the first INIT at once on physical up",
        || {
            format!(
                "INIT times {:?}",
                inits.iter().map(|i| i.0).collect::<Vec<_>>()
            )
        },
    )?;
    let times: Vec<u64> = inits.iter().map(|i| i.0).collect();
    check(
        times.len() >= 5
            && times
                .windows(2)
                .all(|w| (1000..=1100).contains(&(w[1] - w[0]))),
        "LINK-2-1",
        "an INIT every init_interval (1000 ns) for 5.5 us",
        || format!("INIT times {times:?}"),
    )?;
    let caps = caps_of(ctx);
    let mut nonce = None;
    for (_, s) in &inits {
        let Frm::Init(i) = s.frame else { continue };
        check(i.nonce != 0, "LINK-2-9", "a non-zero nonce", || {
            "nonce 0".into()
        })?;
        check(
            nonce.is_none_or(|n| n == i.nonce),
            "LINK-2-1",
            "one nonce for the whole initialisation",
            || format!("nonces {nonce:x?} and {:#x}", i.nonce),
        )?;
        nonce = Some(i.nonce);
        let seen = (
            i.vcs,
            i.credit_size,
            i.credit_overhead,
            i.mfs,
            i.window,
            i.credits,
        );
        let want = (
            2u8,
            128u16,
            8u8,
            4096u16,
            1000u32,
            [100, 100, 0, 0, 0, 0, 0, 0],
        );
        check_eq(
            "LINK-2-1",
            "INIT (vcs, credit size, overhead, mfs, window, grants)",
            seen,
            want,
        )?;
        check_eq("CLS-2-1", "role", i.role, ethlink_protocol::Role::LinkEnd)?;
        check_eq("CLS-2-2", "capability bits", i.caps, caps)?;
        let b = &s.bytes;
        check_eq(
            "WIRE-4.5-2",
            "echo nonce of an INIT",
            &b[24..28],
            &[0u8; 4][..],
        )?;
        let field = u16::from_be_bytes([b[34], b[35]]);
        check_eq(
            "WIRE-4.5-6",
            "reserved capability bits 13..6",
            field & 0x3FC0,
            0,
        )?;
    }
    let n = ctx.counter("inits_sent")?;
    check_eq("LINK-2-1", "inits_sent", n, times.len() as u64)
}

fn init_echo_answers(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    for nonce in [0x1111_0001u32, 0x2222_0002] {
        let peer = raw_init(ctx, nonce);
        let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-2")?;
        let echoes: Vec<(u32, ethlink_protocol::InitRepr)> = sent
            .iter()
            .filter_map(|s| match s.frame {
                Frm::InitEcho(e, i) => Some((e, i)),
                _ => None,
            })
            .collect();
        check_eq("LINK-2-2", "INIT_ECHO frames", echoes.len(), 1)?;
        let (e, i) = echoes[0];
        check_eq("LINK-2-2", "echo nonce", e, nonce)?;
        check_eq("LINK-2-2", "nonce of the INIT_ECHO", i.nonce, dut.nonce)?;
        check_eq(
            "LINK-2-2",
            "parameters of the INIT_ECHO (as the INIT)",
            (
                i.vcs,
                i.credit_size,
                i.credit_overhead,
                i.mfs,
                i.window,
                i.credits,
                i.caps,
            ),
            (
                dut.vcs,
                dut.credit_size,
                dut.credit_overhead,
                dut.mfs,
                dut.window,
                dut.credits,
                dut.caps,
            ),
        )?;
        check_eq("CLS-2-1", "role in INIT_ECHO", i.role, dut.role)?;
    }
    // Two INITs at the same instant: only the newer is answered.
    ctx.inject(0, &init(raw_init(ctx, 0x3333_0003)))?;
    ctx.inject(0, &init(raw_init(ctx, 0x4444_0004)))?;
    let sent = wait(ctx, 50)?;
    let echoes: Vec<u32> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::InitEcho(e, _) => Some(e),
            _ => None,
        })
        .collect();
    check_eq(
        "LINK-2-2",
        "echo nonces after two INITs at once",
        echoes,
        vec![0x4444_0004],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-3",
        "no link event: no INIT_ECHO of the device's nonce yet",
        || format!("{ev:?}"),
    )
}

fn foreign_echo_ignored(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    let peer = raw_init(ctx, RAW_NONCE);
    send(ctx, &init(peer))?;
    let wrong = dut.nonce ^ 0x0101_0101;
    counted_as(
        ctx,
        &init_echo(wrong, peer),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    let sent = wait(ctx, 1_100)?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-3",
        "not UP on an echo of another nonce",
        || format!("{ev:?}"),
    )?;
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-1", "INIT goes on while in INIT", "no INIT"))?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_received",
        "LINK-2-3",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-17",
        "an INIT_ECHO while UP changes nothing",
        || format!("{ev:?}"),
    )?;
    // While UP, an INIT of the peer's current nonce is answered and restarts nothing.
    let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-2")?;
    let echoes: Vec<u32> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::InitEcho(e, i) if i.nonce == nonce => Some(e),
            _ => None,
        })
        .collect();
    check_eq(
        "LINK-2-2",
        "INIT_ECHOes while UP (echo nonces)",
        echoes,
        vec![peer.nonce],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-6",
        "no re-initialisation for the same nonce",
        || format!("{ev:?}"),
    )
}

fn no_data_before_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let p = payload(100, 0xA0);
    submit(ctx, 0, &p)?;
    let sent = wait(ctx, 3_000)?;
    no_data(&sent, "LINK-2-7", "the device is not UP")?;
    let peer = raw_init(ctx, RAW_NONCE);
    // UP on the echo, but the device has echoed no INIT of the peer: the gate stays closed.
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .unwrap_or(dut.nonce);
    ctx.inject(0, &init_echo(nonce, peer))?;
    let sent = wait(ctx, 1_000)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    no_data(
        &sent,
        "LINK-2-8",
        "UP, but no INIT_ECHO sent and nothing received since UP",
    )?;
    let entries: Vec<(u8, u32)> = (0..ctx.params.vcs.unwrap_or(4)).map(|v| (v, 0)).collect();
    let sent = send(ctx, &cf(&entries))?;
    let d: Vec<&Sent> = sent.iter().filter(|s| s.frame.is_data()).collect();
    check_eq("LINK-2-8", "DATA frames once a CF arrived", d.len(), 1)?;
    match &d[0].frame {
        Frm::Data {
            vc,
            flags,
            seq,
            payload,
        } => {
            check_eq("LINK-2-5", "sequence number of the first DATA", *seq, 0)?;
            check_eq("WIRE-3-5", "flags of a first transmission", *flags & 1, 0)?;
            check_eq("LINK-3-1", "VC", *vc, 0)?;
            check_eq("LINK-3-1", "payload", payload, &p)
        }
        _ => Ok(()),
    }
}

fn peer_restart(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 1;
    peer.mfs = 1024;
    peer.credits = [512, 0, 0, 0, 0, 0, 0, 0];
    let raw = raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(100, 1))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-1", "DATA sent", data_of(&sent), vec![(0, 0, 1)])?;
    let mut peer2 = peer;
    peer2.nonce = 0xBEEF_0002;
    let sent = send(ctx, &init(peer2))?;
    submit(ctx, 0, &payload(100, 2))?;
    let sent2 = wait(ctx, 100)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-2-6",
        "link events",
        link_events(&outs),
        vec!["down:peer_restart".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![("unknown_fate".to_owned(), 1)],
    )?;
    no_data(&sent2, "LINK-2-7", "the device is in INIT again")?;
    let kinds: Vec<&Frm> = sent.iter().map(|s| &s.frame).collect();
    let (echo, own) = match (kinds.first(), kinds.get(1)) {
        (Some(Frm::InitEcho(e, i)), Some(Frm::Init(o))) => ((*e, i.nonce), *o),
        _ => {
            return Err(Stop::fail(
                "LINK-2-6",
                "an INIT_ECHO then an INIT",
                format!("{kinds:?}"),
            ));
        }
    };
    check_eq("LINK-2-6", "echo nonce", echo.0, peer2.nonce)?;
    check(
        echo.1 != raw.dut_nonce && echo.1 != 0 && own.nonce == echo.1,
        "LINK-2-9",
        "a new non-zero nonce, in the INIT_ECHO and the INIT",
        || {
            format!(
                "old {:#x}, echo carries {:#x}, INIT {:#x}",
                raw.dut_nonce, echo.1, own.nonce
            )
        },
    )?;
    check_eq(
        "LINK-2-1",
        "INIT after re-initialisation carries the configured vcs and mfs",
        (own.vcs, own.mfs),
        (dut.vcs, dut.mfs),
    )?;
    ctx.inject(0, &init_echo(own.nonce, peer2))?;
    let sent = wait(ctx, 200)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-6-3", "link events", ev, vec!["up".to_owned()])?;
    check_eq(
        "LINK-6-1",
        "DATA after UP again (seq, flags, tag): the queued frame only, from 0",
        data_of(&sent),
        vec![(0, 0, 2)],
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-6-3",
        "(reinits, link_ups, frames_unknown_fate)",
        (get("reinits"), get("link_ups"), get("frames_unknown_fate")),
        (1, 2, 1),
    )?;
    // Counters and sequence numbers start again from 0: the RX expects 0, and the first CC
    // carries the 2 credits of the one frame sent since (not 4).
    accepted(ctx, &data_len(0, 0, 128, 7), 0, "LINK-2-5")?;
    send(ctx, &ack(0))?;
    let sent = wait(ctx, 1_100_000)?;
    let c: Vec<Option<u32>> = ccs(&sent).iter().take(1).map(|c| c.1[0]).collect();
    check_eq(
        "LINK-2-5",
        "VC 0 entry of the first CC after UP",
        c,
        vec![Some(2)],
    )
}

fn init_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, LinkParams::default())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 4;
    peer.credit_size = 64;
    peer.credit_overhead = 32;
    peer.mfs = 1024;
    // One frame of the agreed MFS costs ceil((1024 + 32) / 64) = 17 credits.
    peer.credits = [17, 17, 17, 16, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(peer), "init_refused", "LINK-2-12")?;
    check(
        !sent.iter().any(|s| matches!(s.frame, Frm::InitEcho(..))),
        "LINK-2-12",
        "no INIT_ECHO for an INIT whose VC 3 grants 16 of the 17 credits a frame needs",
        || "an INIT_ECHO".into(),
    )?;
    counted_as(
        ctx,
        &init_echo(dut.nonce, peer),
        "init_refused",
        "LINK-2-12",
    )?;
    let sent = wait(ctx, 1_100)?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-2-12",
        "not UP on a refused INIT_ECHO",
        || format!("{ev:?}"),
    )?;
    let nonce = sent
        .iter()
        .rev()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i.nonce),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-14", "INIT goes on after a refusal", "no INIT"))?;
    peer.credits = [17, 17, 17, 17, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(peer), "inits_received", "LINK-2-12")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == peer.nonce)),
        "LINK-2-2",
        "an INIT_ECHO for grants of exactly one frame",
        || "none".into(),
    )?;
    counted_as(
        ctx,
        &init_echo(nonce, peer),
        "init_echoes_received",
        "LINK-2-12",
    )?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-3", "link events", ev, vec!["up".to_owned()])?;
    // UP: an INIT with a new nonce and a short grant is refused, and restarts nothing.
    let mut restart = peer;
    restart.nonce ^= 0x00F0_0000;
    restart.credits = [16, 17, 17, 17, 0, 0, 0, 0];
    let sent = counted_as(ctx, &init(restart), "init_refused", "LINK-2-12")?;
    check(
        !sent
            .iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(..) | Frm::Init(_))),
        "LINK-2-12",
        "no INIT_ECHO and no INIT: the refused INIT leaves the device UP",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(ev.is_empty(), "LINK-2-12", "the device stays UP", || {
        format!("{ev:?}")
    })
}

fn mfs_before_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        mfs: Some(1024),
        ..quiet()
    };
    let dut = raw_start(ctx, link)?;
    let sent = counted_as(ctx, &data_len(0, 0, 1028, 1), "rx_damaged", "LINK-2-16")?;
    no_nack(&sent, "LINK-4-13", "the device is not UP")?;
    counted_as(ctx, &data_len(0, 0, 1024, 1), "rx_not_up", "LINK-2-16")?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.mfs = 512;
    raw_finish(ctx, dut, peer)?;
    let sent = counted_as(ctx, &data_len(0, 0, 516, 2), "rx_damaged", "LINK-2-16")?;
    one_nack(&sent, 0xFFFFF, "WIRE-4.2-1")?;
    accepted(ctx, &data_len(0, 0, 512, 3), 0, "LINK-2-16")?;
    check_eq("LINK-4-1", "delivered", delivered_tags(ctx), vec![3])
}

fn init_forever(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        init_interval_ns: Some(100_000),
        init_timeout_ns: Some(1_000_000),
        ..LinkParams::default()
    };
    ctx.reset(&setup(link))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 1_550_000)?;
    let times: Vec<u64> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Init(_)))
        .map(|s| s.time)
        .collect();
    check(
        times.len() >= 15
            && times
                .windows(2)
                .all(|w| (100_000..=100_100).contains(&(w[1] - w[0]))),
        "LINK-2-14",
        "an INIT every 100 us for 1.55 ms",
        || format!("INIT times {times:?}"),
    )?;
    // 1.55 ms in INIT with an init_timeout of 1 ms: reported and counted, once.
    let n = ctx.counter("init_timeouts")?;
    check(
        n == 1,
        "LINK-2-14",
        "init_timeouts exactly 1: the initialisation passed init_timeout (1 ms) once",
        || format!("init_timeouts {n}"),
    )
}

// ----- link-level retry: receive side ------------------------------------------------------------

fn gap_nack_once(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 3, 128, 3),
        "discarded_after_nack",
        "LINK-4-3",
    )?;
    one_nack(&sent, 1, "LINK-4-3")?;
    for s in [4, 5] {
        let sent = counted_as(
            ctx,
            &data_len(0, s, 128, s),
            "discarded_after_nack",
            "LINK-4-7",
        )?;
        no_nack(&sent, "LINK-4-7", "NACK_SENT, frames ahead of the last one")?;
    }
    for s in 2..6 {
        let sent = accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
        no_nack(&sent, "LINK-4-7", "the expected frame")?;
    }
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        (0..6).collect(),
    )?;
    check_eq("LINK-4-3", "nacks_sent", ctx.counter("nacks_sent")?, 1)
}

fn second_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = send(ctx, &data_len(0, 3, 128, 3))?;
    one_nack(&sent, 1, "LINK-4-3")?;
    let sent = send(ctx, &flagged(data_len(0, 4, 128, 4), 0x01))?;
    no_nack(&sent, "LINK-4-7", "4 is beyond 3")?;
    // A new replay lost 2 again: 3 is not beyond 4. Sent without the REPLAY flag on purpose.
    let sent = send(ctx, &data_len(0, 3, 128, 3))?;
    one_nack(&sent, 1, "LINK-4-8")?;
    let sent = send(ctx, &flagged(data_len(0, 4, 128, 4), 0x01))?;
    no_nack(&sent, "LINK-4-8", "4 is beyond 3")?;
    accepted(ctx, &flagged(data_len(0, 2, 128, 2), 0x01), 0, "WIRE-3-10")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

fn damaged_nack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 0, 128, 0)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    one_nack(&sent, 0xFFFFF, "WIRE-4.2-1")?;
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    refcs(&mut runt);
    let sent = counted_as(ctx, &runt, "rx_damaged", "WIRE-2.4-2")?;
    no_nack(&sent, "LINK-4-13", "NACK_SENT")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    let sent = counted_as(ctx, &runt, "rx_damaged", "WIRE-2.4-2")?;
    one_nack(&sent, 0, "LINK-4-3")?;
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 1, 128, 1)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    no_nack(&sent, "LINK-4-13", "NACK_SENT")?;
    accepted(ctx, &data_len(0, 1, 128, 1), 0, "WIRE-7-2")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

fn duplicate_acked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for s in 0..3 {
        let sent = accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
        check(
            acks(&sent).is_empty(),
            "LINK-4-2",
            "no ACK before spacing or timer",
            || format!("ACKs {:?}", acks(&sent)),
        )?;
    }
    let sent = counted_as(ctx, &data_len(0, 1, 128, 1), "duplicates", "LINK-4-5")?;
    check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), vec![2])?;
    no_nack(&sent, "LINK-4-5", "a duplicate")?;
    let sent = send(ctx, &data_len(0, 4, 128, 4))?;
    one_nack(&sent, 2, "LINK-4-3")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 0), "duplicates", "LINK-4-5")?;
    check_eq(
        "LINK-4-16",
        "ACKs after a duplicate in NACK_SENT",
        acks(&sent),
        vec![2],
    )?;
    no_nack(&sent, "LINK-4-7", "a duplicate in NACK_SENT")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

fn wrap_boundaries(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    // The first duplicate since UP draws an ACK of 0xFFFFF; the second, 128 B later, none
    // (LINK-4-16: one per ack_spacing of duplicates).
    for (s, want) in [(0xFFFFF, vec![0xFFFFF]), (0x80000, vec![])] {
        let sent = counted_as(ctx, &data_len(0, s, 128, 9), "duplicates", "WIRE-3-4")?;
        check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), want)?;
        no_nack(&sent, "WIRE-3-4", "a duplicate behind 0 across the wrap")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 0x7FFFF, 128, 9),
        "discarded_after_nack",
        "WIRE-3-4",
    )?;
    one_nack(&sent, 0xFFFFF, "WIRE-3-4")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    check_eq("LINK-4-1", "delivered tags", delivered_tags(ctx), vec![0])
}

fn ack_spacing(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            ack_spacing: Some(1024),
            ..quiet()
        },
    )?;
    let mut all = Vec::new();
    for s in 0..8 {
        // 256 bytes with the FCS: four of them make exactly 1024.
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    check_eq(
        "LINK-4-2",
        "ACKs (every 1024 bytes)",
        acks(&all),
        vec![3, 7],
    )?;
    // 768 bytes, then a gap: the NACK restarts the count, so the next ACK waits for 1024
    // bytes after it (frame 14), not for 256 more (frame 11).
    let mut all = Vec::new();
    for s in 8..11 {
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    let sent = send(ctx, &data_len(0, 12, 256, 12))?;
    one_nack(&sent, 10, "LINK-4-3")?;
    for s in 11..16 {
        all.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-4-1")?);
    }
    check_eq(
        "LINK-4-2",
        "ACKs after 768 bytes, a NACK and 1280 bytes",
        acks(&all),
        vec![14],
    )
}

fn ack_timer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            ack_timer_ns: Some(2_000),
            ..quiet()
        },
    )?;
    // The timer acts at the first tick of the device's clock at or after its expiry.
    //= docs/spec/link.md#12-timers
    //= type=test
    //# LINK-1-5 An end whose timers run on a clock coarser than 1 ns MUST act on each expiry at
    //# the first tick of that clock at or after it, never before it, and that clock's tick MUST
    //# NOT exceed 256 ns.
    let late = ctx.late_ns();
    let t0 = ctx.now();
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 3_000)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t0, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(0) && (2_000..=2_100 + late).contains(&a[0].0),
        "LINK-4-14",
        "one ACK 0, 2000 ns after the frame",
        || format!("ACKs (ns after the frame, frame) {a:?}"),
    )?;
    let t1 = ctx.now();
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    ctx.run_for(500)?;
    ctx.inject(0, &data_len(0, 2, 128, 2))?;
    let sent = wait(ctx, 3_000)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t1, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(2) && (2_000..=2_100 + late).contains(&a[0].0),
        "LINK-4-14",
        "one ACK 2, 2000 ns after the first of the two frames",
        || format!("ACKs (ns after the first frame, frame) {a:?}"),
    )
}

fn ack_req(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let t0 = ctx.now();
    ctx.inject(0, &flagged(data_len(0, 1, 128, 1), 0x02))?;
    let sent = wait(ctx, 100)?;
    let a: Vec<(u64, Frm)> = sent
        .iter()
        .filter(|s| matches!(s.frame, Frm::Ack(_)))
        .map(|s| (s.time - t0, s.frame.clone()))
        .collect();
    check(
        a.len() == 1 && a[0].1 == Frm::Ack(1),
        "LINK-4-15",
        "an ACK 1 at once after the frame with ACK_REQ",
        || format!("ACKs (ns after, frame) {a:?}"),
    )
}

// ----- link-level retry: transmit side -----------------------------------------------------------

fn nack_replay(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 10..15 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let first = wait(ctx, 100)?;
    check_eq(
        "LINK-3-1",
        "DATA (seq, flags, tag)",
        data_of(&first),
        (0..5).map(|s| (s, 0, 10 + s)).collect(),
    )?;
    for s in &first {
        check_eq("WIRE-3-1", "version", s.bytes[14] >> 4, 1)?;
    }
    ctx.inject(0, &nack(1))?;
    submit(ctx, 0, &payload(200, 15))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-5",
        "DATA after NACK 1 (seq, flags, tag)",
        data_of(&sent),
        vec![(2, 1, 12), (3, 1, 13), (4, 1, 14), (5, 0, 15)],
    )?;
    let originals: Vec<&Sent> = first.iter().filter(|s| s.frame.is_data()).collect();
    for (i, r) in sent
        .iter()
        .filter(|s| s.frame.is_data())
        .take(3)
        .enumerate()
    {
        let o = &originals[i + 2].bytes;
        let mut a = r.bytes.clone();
        let n = a.len();
        check(
            ethlink_protocol::fcs::check(&a),
            "LINK-3-8",
            "a good FCS on the retransmission",
            || "a bad one".into(),
        )?;
        a[15] &= !0x01;
        check(
            n == o.len() && a[..n - 4] == o[..n - 4],
            "LINK-3-8",
            "the retransmission byte for byte the original but the REPLAY flag and the FCS",
            || {
                format!(
                    "original {}\nreplay   {}",
                    hex::encode(o),
                    hex::encode(&r.bytes)
                )
            },
        )?;
    }
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-5",
        "(frames_replayed, replays_by_nack)",
        (get("frames_replayed"), get("replays_by_nack")),
        (3, 1),
    )
}

fn replay_timer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(3_000),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let t0 = ctx.now();
    let sent = wait(ctx, 2_000)?;
    check_eq(
        "LINK-3-1",
        "DATA",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let t_ack = ctx.now();
    let sent = send(ctx, &ack(0))?;
    no_data(&sent, "LINK-3-4", "ACK 0 starts no replay")?;
    let sent = wait(ctx, 2_900u64.saturating_sub(ctx.now() - t_ack))?;
    no_data(
        &sent,
        "LINK-3-6",
        "the timer restarted by the ACK of frame 0 has not expired",
    )?;
    // The timer acts up to a tick late, and the second copy leaves once the first has.
    let late = ctx.late_ns();
    let sent = wait(ctx, 300 + late)?;
    let copy = data_len(0, 0, 200, 0).len();
    let slack = late + ctx.ser_ns(copy);
    let replays: Vec<(u64, u32, u8)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, flags, .. } => Some((s.time - t_ack, seq, flags)),
            _ => None,
        })
        .collect();
    check(
        replays.len() == 2
            && replays
                .iter()
                .zip([1u32, 2])
                .all(|(r, s)| r.1 == s && r.2 & 1 == 1)
            && replays
                .iter()
                .all(|r| (3_000..=3_100 + slack).contains(&r.0)),
        "LINK-3-11",
        "frames 1 and 2 replayed, REPLAY set, 3000 ns after the ACK of frame 0",
        || format!("(ns after the ACK, seq, flags) {replays:?} (sent {t0} + ...)"),
    )?;
    check_eq(
        "LINK-3-11",
        "replay_timeouts",
        ctx.counter("replay_timeouts")?,
        1,
    )?;
    send(ctx, &ack(2))?;
    let sent = wait(ctx, 10_000)?;
    no_data(
        &sent,
        "LINK-3-6",
        "the buffer is empty: the timer is stopped",
    )?;
    // A replay started by a NACK restarts the timer: the next expiry is 3000 ns after it.
    submit(ctx, 0, &payload(200, 3))?;
    let sent = wait(ctx, 2_000)?;
    check_eq("LINK-3-1", "DATA", data_of(&sent), vec![(3, 0, 3)])?;
    let t_nack = ctx.now();
    let sent = send(ctx, &nack(2))?;
    check_eq(
        "LINK-3-5",
        "replay after NACK 2",
        data_of(&sent),
        vec![(3, 1, 3)],
    )?;
    let sent = wait(ctx, 2_800u64.saturating_sub(ctx.now() - t_nack))?;
    no_data(
        &sent,
        "LINK-3-6",
        "the timer restarted by the replay has not expired",
    )?;
    let sent = wait(ctx, 300 + late)?;
    let r: Vec<(u64, u32)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, .. } => Some((s.time - t_nack, seq)),
            _ => None,
        })
        .collect();
    check(
        r.len() == 1 && r[0].1 == 3 && (3_000..=3_100 + late).contains(&r[0].0),
        "LINK-3-6",
        "frame 3 replayed 3000 ns after the NACK that started the last replay",
        || format!("(ns after the NACK, seq) {r:?}"),
    )
}

fn flush(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            replay_max_frames: Some(2),
            ..quiet()
        },
    )?;
    for t in 1..4 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA with a replay buffer of 2 frames",
        data_of(&sent),
        vec![(0, 0, 1), (1, 0, 2)],
    )?;
    let sent = wait(ctx, 4_050)?;
    check_eq(
        "LINK-3-11",
        "two replays of frames 0 and 1",
        data_of(&sent),
        vec![(0, 1, 1), (1, 1, 2), (0, 1, 1), (1, 1, 2)],
    )?;
    let sent = wait(ctx, 2_000)?;
    no_data(
        &sent,
        "LINK-3-13",
        "a third replay would exceed replay_count_max 2",
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-3",
        "link events",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost, in order",
        lost(&outs),
        vec![
            ("unknown_fate".to_owned(), 1),
            ("unknown_fate".to_owned(), 2),
        ],
    )?;
    let new = sent
        .iter()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-6-3", "INIT at once after FLUSH", "none"))?;
    check(
        new.nonce != raw.dut_nonce && new.nonce != 0,
        "LINK-2-9",
        "a new non-zero nonce after FLUSH",
        || format!("{:#x} again", new.nonce),
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-13",
        "(flushes, frames_unknown_fate, replay_timeouts)",
        (
            get("flushes"),
            get("frames_unknown_fate"),
            get("replay_timeouts"),
        ),
        (1, 2, 3),
    )?;
    // Out of UP the RX is OFF: DATA and ACK are not taken.
    counted_as(ctx, &data_len(0, 0, 128, 9), "rx_not_up", "LINK-6-3")?;
    counted_as(ctx, &ack(1), "rx_not_up", "LINK-6-3")?;
    let mut peer = raw_init(ctx, 0xC0DE_0002);
    peer.nonce = 0xC0DE_0002;
    let up = raw_finish(ctx, new, peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    check_eq(
        "LINK-6-2",
        "DATA after UP again: the queued frame, from 0, never the flushed ones",
        data_of(&sent),
        vec![(0, 0, 3)],
    )
}

fn replay_bounds(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_max_frames: Some(3),
            ..quiet()
        },
    )?;
    for t in 0..5 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA with replay_max_frames 3",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let sent = send(ctx, &ack(0))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 0",
        data_of(&sent),
        vec![(3, 0, 3)],
    )?;
    let sent = send(ctx, &ack(3))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 3",
        data_of(&sent),
        vec![(4, 0, 4)],
    )?;
    // Bytes: frames of 300 B in a buffer of 1024 B.
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(1024),
            replay_max_bytes: Some(1024),
            ..quiet()
        },
    )?;
    for t in 0..4 {
        submit(ctx, 0, &payload(276, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA of 300 B with replay_max_bytes 1024",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1), (2, 0, 2)],
    )?;
    let sent = send(ctx, &ack(0))?;
    check_eq(
        "LINK-3-3",
        "DATA after ACK 0",
        data_of(&sent),
        vec![(3, 0, 3)],
    )
}

fn stale_ack(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    let before = ctx.counters()?;
    let sent = counted_as(ctx, &ack(5), "acks_received", "LINK-3-4")?;
    no_data(&sent, "LINK-3-4", "a stale ACK changes nothing")?;
    check_eq(
        "LINK-3-4",
        "stale_acks",
        counter_delta(ctx, &before, "stale_acks")?,
        1,
    )?;
    let sent = send(ctx, &nack(0xFFFFF))?;
    check_eq(
        "LINK-3-5",
        "replay after NACK 0xFFFFF: all three frames (the stale ACK removed none)",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1), (2, 1, 2)],
    )
}

fn nack_empties(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    let sent = send(ctx, &nack(2))?;
    no_data(&sent, "LINK-3-14", "a NACK that acknowledges every frame")?;
    // With the buffer empty only 2, the number before the next one to send, is acceptable.
    let before = ctx.counters()?;
    send(ctx, &ack(1))?;
    send(ctx, &ack(2))?;
    check_eq(
        "LINK-3-4",
        "stale_acks after ACK 1 and ACK 2 with an empty buffer",
        counter_delta(ctx, &before, "stale_acks")?,
        1,
    )?;
    check_eq(
        "LINK-3-14",
        "replays_by_nack",
        ctx.counter("replays_by_nack")?,
        0,
    )?;
    submit(ctx, 0, &payload(200, 3))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-1", "next DATA", data_of(&sent), vec![(3, 0, 3)])
}

fn stomped(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let sent = counted_as(
        ctx,
        &stomped_frame(data_len(0, 0, 128, 0)),
        "rx_stomped",
        "LINK-4-10",
    )?;
    no_nack(&sent, "LINK-4-10", "a stomped frame before UP")?;
    let peer = raw_init(ctx, RAW_NONCE);
    raw_finish(ctx, dut, peer)?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let sent = counted_as(
        ctx,
        &stomped_frame(data_len(0, 1, 128, 1)),
        "rx_stomped",
        "LINK-4-10",
    )?;
    no_nack(&sent, "LINK-4-10", "a stomped frame in SEND_ACKS")?;
    let sent = accepted(ctx, &data_len(0, 1, 128, 1), 0, "LINK-4-10")?;
    no_nack(&sent, "LINK-4-10", "the frame after a stomped one")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

fn lost_frame_replayed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    let mut data_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::FromDut && bytes.len() > 20 && bytes[14] & 0x0F == 0 {
                data_seen += 1;
                if data_seen == 2 {
                    return Fault::Drop;
                }
            }
            Fault::Pass
        }),
    )?;
    for t in 0..6 {
        submit(ctx, 0, &payload(256, t))?;
    }
    ctx.run_for(20_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-3-5",
        "payloads the peer received",
        got,
        (0..6).collect(),
    )
}

// ----- credit-based flow control ------------------------------------------------------------------

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

fn grant_and_cost(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    // Frames of 252 B cost ceil((252 + 36) / 64) = 5 credits; 20 credits carry 4 of them.
    let peer = small_peer(ctx, [20, 512, 512, 512, 512, 512, 512, 512], 36);
    raw_finish(ctx, dut, peer)?;
    for t in 0..6 {
        submit(ctx, 0, &payload(228, t))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-5-2",
        "DATA within a grant of 20 credits at 5 credits a frame",
        data_of(&sent),
        (0..4).map(|s| (s, 0, s)).collect(),
    )?;
    send(ctx, &ack(3))?;
    let sent = send(ctx, &cf(&[(0, 5)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 5",
        data_of(&sent),
        vec![(4, 0, 4)],
    )?;
    let sent = send(ctx, &cf(&[(0, 9)]))?;
    no_data(&sent, "LINK-5-2", "CF 9 leaves 4 credits, a frame costs 5")?;
    let sent = send(ctx, &cf(&[(0, 10)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 10",
        data_of(&sent),
        vec![(5, 0, 5)],
    )
}

fn per_vc(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    // Frames of 252 B cost 4 credits; VC 0 grants 5 (one frame of 320 B), VC 1 512.
    let peer = small_peer(ctx, [5, 512, 512, 512, 0, 0, 0, 0], 0);
    raw_finish(ctx, dut, peer)?;
    for t in 0..3 {
        submit(ctx, 0, &payload(228, t))?;
        submit(ctx, 1, &payload(228, 10 + t))?;
    }
    let sent = wait(ctx, 200)?;
    let by_vc: Vec<(u8, u32)> = sent
        .iter()
        .filter_map(|s| match &s.frame {
            Frm::Data { vc, payload, .. } => Some((*vc, tag_of(payload).unwrap_or(u32::MAX))),
            _ => None,
        })
        .collect();
    let vc0: Vec<u32> = by_vc.iter().filter(|f| f.0 == 0).map(|f| f.1).collect();
    let vc1: Vec<u32> = by_vc.iter().filter(|f| f.0 == 1).map(|f| f.1).collect();
    check_eq("LINK-5-2", "tags sent on VC 0 (5 credits)", vc0, vec![0])?;
    check_eq("LINK-5-2", "tags sent on VC 1", vc1, vec![10, 11, 12])
}

fn cf_on_drain(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        vcs: Some(2),
        credit_overhead: Some(20),
        cf_min_credits: Some(8),
        cf_min_interval_ns: Some(100),
        ..quiet()
    };
    raw_up(ctx, link)?;
    hold(ctx, 0, true)?;
    // 256 B + 20 B of overhead: 5 credits of 64 B.
    let mut sent = Vec::new();
    for s in 0..2 {
        sent.extend(accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-5-4")?);
    }
    sent.extend(wait(ctx, 500)?);
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no CF while the frames are held",
        || format!("CFs {:?}", cfs(&sent)),
    )?;
    hold(ctx, 0, false)?;
    let sent = wait(ctx, 200)?;
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(10), Some(0), None, None, None, None, None, None];
    check_eq("LINK-5-5", "CFs once 10 credits are freed", c, vec![want])?;
    let sent = accepted(ctx, &data_len(1, 2, 256, 2), 1, "LINK-5-4")?;
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no CF for 5 freed credits (< 8)",
        || format!("CFs {:?}", cfs(&sent)),
    )?;
    let sent = accepted(ctx, &data_len(1, 3, 256, 3), 1, "LINK-5-4")?;
    let sent = [sent, wait(ctx, 200)?].concat();
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(10), Some(10), None, None, None, None, None, None];
    check_eq(
        "LINK-5-5",
        "CFs once 10 more credits are freed",
        c,
        vec![want],
    )
}

fn cf_periodic(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_max_interval_ns: Some(3_000),
            cf_min_interval_ns: Some(100),
            ..quiet()
        },
    )?;
    let t_up = ctx.now() - 50;
    // Each CF restarts the interval, so the i-th may be i ticks of the device's clock late.
    let late = ctx.late_ns();
    let sent = wait(ctx, 10_000)?;
    let c = cfs(&sent);
    let times: Vec<u64> = c.iter().map(|c| c.0 - t_up).collect();
    check(
        times.len() == 3
            && times.iter().enumerate().all(|(i, t)| {
                let i = i as u64 + 1;
                (3_000 * i..=3_000 * i + 100 + i * late).contains(t)
            }),
        "LINK-5-10",
        "a CF 3, 6 and 9 us after UP",
        || format!("CFs at (ns after UP) {times:?}"),
    )?;
    let vcs = usize::from(ctx.params.vcs.unwrap_or(4));
    let want: [Option<u32>; 8] = std::array::from_fn(|v| (v < vcs).then_some(0));
    for (_, e) in c {
        check_eq("LINK-5-11", "CF entries", e, want)?;
    }
    Ok(())
}

fn cc_when_empty(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cc_interval_ns: Some(4_000),
            ..quiet()
        },
    )?;
    submit(ctx, 0, &payload(228, 0))?;
    let sent = wait(ctx, 8_000)?;
    check_eq("LINK-3-1", "DATA", data_of(&sent), vec![(0, 0, 0)])?;
    let c = ccs(&sent);
    check(
        c.is_empty(),
        "LINK-5-12",
        "no CC while the replay buffer holds a frame",
        || format!("CCs {c:?}"),
    )?;
    let t = ctx.now();
    let sent = [send(ctx, &ack(0))?, wait(ctx, 4_100)?].concat();
    let c: Vec<(u64, [Option<u32>; 8])> = ccs(&sent).into_iter().map(|(x, e)| (x - t, e)).collect();
    let vcs = usize::from(ctx.params.vcs.unwrap_or(4));
    // 252 B at 64 B a credit: 4 credits.
    let want: [Option<u32>; 8] =
        std::array::from_fn(|v| (v < vcs).then_some(if v == 0 { 4 } else { 0 }));
    check(
        c.len() == 2
            && c[0].0 <= 50
            && (4_000..=4_100).contains(&(c[1].0 - c[0].0))
            && c.iter().all(|x| x.1 == want),
        "LINK-5-7",
        format!("a CC {want:?} at once when the buffer empties, another cc_interval later"),
        || format!("CCs (ns after the ACK, entries) {c:?}"),
    )
}

fn cc_recovers(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            ..quiet()
        },
    )?;
    let before = ctx.counters()?;
    let sent = counted_as(
        ctx,
        &cc(&[(0, 7), (1, 0), (5, 3)]),
        "cc_received",
        "LINK-5-8",
    )?;
    check_eq(
        "LINK-5-8",
        "credits_recovered.vc0",
        counter_delta(ctx, &before, "credits_recovered.vc0")?,
        7,
    )?;
    check_eq(
        "LINK-5-8",
        "stale_cc_entries (the entry of VC 5)",
        counter_delta(ctx, &before, "stale_cc_entries")?,
        1,
    )?;
    let c: Vec<[Option<u32>; 8]> = cfs(&sent).into_iter().map(|c| c.1).collect();
    let want = [Some(7), Some(0), None, None, None, None, None, None];
    check_eq("LINK-5-13", "CFs at once after the CC", c, vec![want])?;
    // received[1] is 2 after a frame of 128 B; a CC carrying 1 is behind it.
    accepted(ctx, &data_len(1, 0, 128, 0), 1, "LINK-5-4")?;
    let before = ctx.counters()?;
    counted_as(ctx, &cc(&[(1, 1)]), "cc_received", "LINK-5-8")?;
    check_eq(
        "LINK-5-8",
        "(stale_cc_entries, credits_recovered.vc1) after a CC entry behind received",
        (
            counter_delta(ctx, &before, "stale_cc_entries")?,
            counter_delta(ctx, &before, "credits_recovered.vc1")?,
        ),
        (1, 0),
    )
}

fn cf_stale_and_repair(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = small_peer(ctx, [10, 512, 512, 512, 512, 512, 512, 512], 0);
    raw_finish(ctx, dut, peer)?;
    for t in 0..6 {
        submit(ctx, 0, &payload(228, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-5-2",
        "DATA within 10 credits",
        data_of(&sent),
        vec![(0, 0, 0), (1, 0, 1)],
    )?;
    // No credit left for a frame: ACKs still go (a duplicate draws one).
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 0), "duplicates", "LINK-4-5")?;
    check_eq(
        "LINK-5-9",
        "ACKs while the VC has no credit",
        acks(&sent),
        vec![0],
    )?;
    send(ctx, &ack(1))?;
    // The CF carrying 4 was lost; the next carries 8.
    let sent = send(ctx, &cf(&[(0, 8)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 8",
        data_of(&sent),
        vec![(2, 0, 2), (3, 0, 3)],
    )?;
    let before = ctx.counters()?;
    let sent = send(ctx, &cf(&[(0, 20)]))?;
    no_data(
        &sent,
        "LINK-5-6",
        "CF 20 is ahead of the 16 credits consumed",
    )?;
    let sent = send(ctx, &cf(&[(0, 3)]))?;
    no_data(&sent, "LINK-5-6", "CF 3 is behind the 8 already seen")?;
    check_eq(
        "LINK-5-6",
        "stale_cf_entries",
        counter_delta(ctx, &before, "stale_cf_entries")?,
        2,
    )?;
    // An entry equal to the one seen is neither taken nor counted; one for VC 5 (not agreed)
    // is counted.
    send(ctx, &cf(&[(0, 8)]))?;
    send(ctx, &cf(&[(5, 1)]))?;
    check_eq(
        "LINK-5-6",
        "stale_cf_entries after an unchanged entry and one for VC 5",
        counter_delta(ctx, &before, "stale_cf_entries")?,
        3,
    )?;
    let sent = send(ctx, &cf(&[(0, 16)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 16",
        data_of(&sent),
        vec![(4, 0, 4), (5, 0, 5)],
    )
}

fn overrun(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(320),
            rx_credits: Some(10),
            ..quiet()
        },
    )?;
    hold(ctx, 0, true)?;
    for s in 0..2 {
        accepted(ctx, &data_len(0, s, 256, s), 0, "LINK-5-4")?;
    }
    let sent = counted_as(
        ctx,
        &data_len(0, 2, 256, 2),
        "credit_overruns.vc0",
        "LINK-4-6",
    )?;
    let l = llr(&sent);
    check(
        l.is_empty(),
        "LINK-4-6",
        "no ACK, no NACK for an overrun",
        || format!("{l:?}"),
    )?;
    // The buffer of VC 0 is full: control frames are still taken.
    let vcs: Vec<(u8, u32)> = (0..ctx.params.vcs.unwrap_or(4)).map(|v| (v, 0)).collect();
    counted_as(ctx, &cf(&vcs), "cf_received", "LINK-5-9")?;
    counted_as(ctx, &ack(0xFFFFF), "acks_received", "LINK-5-9")?;
    hold(ctx, 0, false)?;
    wait(ctx, 100)?;
    let sent = accepted(ctx, &data_len(0, 2, 256, 2), 0, "LINK-4-6")?;
    no_nack(
        &sent,
        "LINK-4-6",
        "the overrun frame took no sequence number",
    )?;
    check_eq(
        "LINK-4-6",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1, 2],
    )
}

fn replay_no_recharge(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cc_interval_ns: Some(4_000),
            ..quiet()
        },
    )?;
    let t_up = ctx.now();
    for t in 0..2 {
        submit(ctx, 0, &payload(228, t))?;
    }
    wait(ctx, 100)?;
    let sent = send(ctx, &nack(0xFFFFF))?;
    check_eq(
        "LINK-3-5",
        "replay",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1)],
    )?;
    send(ctx, &ack(1))?;
    let sent = wait(ctx, (t_up + 4_200).saturating_sub(ctx.now()))?;
    let c: Vec<Option<u32>> = ccs(&sent).iter().map(|c| c.1[0]).collect();
    check_eq(
        "LINK-5-3",
        "VC 0 entry of the CC (2 frames of 4 credits)",
        c,
        vec![Some(8)],
    )
}

// ----- receive pipeline -----------------------------------------------------------------------------

fn foreign(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let mut f = data_len(0, 0, 128, 0);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    refcs(&mut f);
    let sent = counted_as(ctx, &f, "rx_foreign", "WIRE-2.1-2")?;
    no_nack(&sent, "WIRE-2.1-3", "a foreign frame")?;
    // An S-tag (0x88A8) in front of the EtherType: foreign too.
    let g = data_len(0, 0, 128, 0);
    let mut q = g[..12].to_vec();
    q.extend_from_slice(&[0x88, 0xA8, 0x00, 0x07]);
    q.extend_from_slice(&g[12..g.len() - 4]);
    q.extend_from_slice(&[0; 4]);
    refcs(&mut q);
    let sent = counted_as(ctx, &q, "rx_foreign", "WIRE-2.1-2")?;
    no_nack(&sent, "WIRE-2.1-3", "a frame behind a 0x88A8 tag")?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-2.1-3")?;
    Ok(())
}

fn bad_version(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for v in [0u8, 2, 0xF] {
        let mut f = data_len(0, 0, 128, 0);
        f[14] = (v << 4) | (f[14] & 0x0F);
        refcs(&mut f);
        let sent = counted_as(ctx, &f, "rx_bad_version", "WIRE-3-2")?;
        no_nack(&sent, "WIRE-3-8", "a frame of another version")?;
    }
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    Ok(())
}

fn unknown_kind(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for k in [0x7u8, 0xF] {
        for base in [ack(0xFFFFF), data_len(0, 0, 128, 0)] {
            let mut f = base;
            f[14] = 0x10 | k;
            refcs(&mut f);
            let sent = counted_as(ctx, &f, "rx_unknown_kind", "WIRE-3-3")?;
            no_nack(&sent, "WIRE-3-9", "a frame of an unknown kind")?;
        }
    }
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "WIRE-7-2")?;
    Ok(())
}

fn malformed_control(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = raw_init(ctx, RAW_NONCE);
    // An INIT_ECHO of the device's nonce with a credit size of 100 (not a power of two).
    let mut e = init_echo(dut.nonce, peer);
    e[30..32].copy_from_slice(&100u16.to_be_bytes());
    refcs(&mut e);
    let sent = counted_as(ctx, &e, "rx_malformed_control", "WIRE-4.5-4")?;
    no_nack(&sent, "WIRE-4-2", "a malformed control frame")?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "WIRE-4.5-4",
        "not UP on a malformed INIT_ECHO",
        || format!("{ev:?}"),
    )?;
    // An INIT with 9 VCs, and one cut short.
    let mut i = init(peer);
    i[28] = 9;
    refcs(&mut i);
    let sent = counted_as(ctx, &i, "rx_malformed_control", "WIRE-4.5-4")?;
    check(
        !sent.iter().any(|s| matches!(s.frame, Frm::InitEcho(..))),
        "WIRE-4.5-4",
        "no INIT_ECHO for an INIT with 9 VCs",
        || "an INIT_ECHO".into(),
    )?;
    let mut short = init(peer);
    short.truncate(64);
    refcs(&mut short);
    counted_as(ctx, &short, "rx_malformed_control", "WIRE-4-2")?;
    // An untagged INIT of 80 bytes: 4 bytes beyond its body, which needs no padding.
    let mut long = init(peer);
    let n = long.len();
    long.truncate(n - 4);
    long.extend_from_slice(&[0; 8]);
    refcs(&mut long);
    counted_as(ctx, &long, "rx_malformed_control", "WIRE-2.4-3")?;
    raw_finish(ctx, dut, peer)?;
    // An ACK and a CF with more bytes than their padding.
    for base in [ack(0xFFFFF), cf(&[(0, 0)])] {
        let mut f = base[..60].to_vec();
        f.extend_from_slice(&[0xAA; 8]);
        refcs(&mut f);
        let sent = counted_as(ctx, &f, "rx_malformed_control", "WIRE-4-2")?;
        no_nack(&sent, "WIRE-4-2", "a control frame too long")?;
    }
    // Non-zero padding is no error: the ACK is taken.
    let mut f = ack(0xFFFFF);
    f[30..60].fill(0x55);
    refcs(&mut f);
    counted_as(ctx, &f, "acks_received", "WIRE-2.4-7")?;
    Ok(())
}

fn tagged(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    let tagged_init = emit_with(
        ethlink_protocol::EthernetRepr {
            vlan: Some(tag(0)),
            ..raw_eth()
        },
        LinkFrame::Init(raw.peer),
    );
    let sent = counted_as(ctx, &tagged_init, "inits_received", "WIRE-2.2-1")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == raw.peer.nonce)),
        "WIRE-2.2-1",
        "an INIT_ECHO for a tagged INIT",
        || "none".into(),
    )?;
    let p = payload(100, 7);
    let f = emit_with(
        ethlink_protocol::EthernetRepr {
            vlan: Some(tag(5)),
            ..raw_eth()
        },
        LinkFrame::Data {
            header: ethlink_protocol::DataHeader {
                vc: ethlink_protocol::Vc::new(1).unwrap_or_default(),
                flags: ethlink_protocol::DataFlags::default(),
                seq: Seq::new(0),
            },
            payload: &p,
        },
    );
    accepted(ctx, &f, 1, "WIRE-2.2-2")?;
    accepted(ctx, &data_len(0, 1, 128, 8), 0, "WIRE-2.2-1")?;
    let d = delivered(&ctx.take_outputs());
    check_eq("WIRE-2.2-2", "delivered (vc, tag)", d, vec![(1, 7), (0, 8)])
}

fn vc_not_agreed(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            ..quiet()
        },
    )?;
    let sent = counted_as(ctx, &data_len(5, 0, 128, 0), "rx_vc_not_agreed", "WIRE-7-4")?;
    no_nack(&sent, "WIRE-7-4", "DATA on a VC not agreed")?;
    let sent = counted_as(ctx, &data_len(0, 0, 128, 1), "duplicates", "LINK-4-11")?;
    check_eq(
        "LINK-4-11",
        "ACKs (sequence number 0 was consumed)",
        acks(&sent),
        vec![0],
    )?;
    accepted(ctx, &data_len(0, 1, 128, 2), 0, "LINK-4-11")?;
    check_eq("LINK-4-11", "delivered tags", delivered_tags(ctx), vec![2])
}

fn not_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let frames = [
        data_len(0, 0, 128, 0),
        ack(0xFFFFF),
        nack(0xFFFFF),
        cf(&[(0, 0)]),
        cc(&[(0, 0)]),
    ];
    for f in &frames {
        let sent = counted_as(ctx, f, "rx_not_up", "LINK-2-11")?;
        no_nack(&sent, "WIRE-7-5", "not UP")?;
    }
    let sent = counted_as(
        ctx,
        &bad_fcs(data_len(0, 0, 128, 0)),
        "rx_fcs_errors",
        "WIRE-2.5-6",
    )?;
    no_nack(&sent, "LINK-4-13", "a damaged frame while in INIT")?;
    let peer = raw_init(ctx, RAW_NONCE);
    raw_finish(ctx, dut, peer)?;
    accepted(ctx, &data_len(0, 0, 128, 5), 0, "WIRE-7-5")?;
    check_eq("LINK-2-10", "delivered tags", delivered_tags(ctx), vec![5])
}

fn malformed_body(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(1),
            cf_min_interval_ns: Some(100),
            ..quiet()
        },
    )?;
    let before = ctx.counters()?;
    ctx.inject(0, &data(0, 0, false, &[1, 2, 3, 4]))?;
    let mut sent = wait(ctx, 50)?;
    // 8 bytes after a well-formed payload: more than the padding.
    let p = payload(40, 1);
    let mut f = data(0, 1, false, &p);
    let n = f.len();
    f.truncate(n - 4);
    f.extend_from_slice(&[0xEE; 8]);
    f.extend_from_slice(&[0; 4]);
    refcs(&mut f);
    ctx.inject(0, &f)?;
    sent.extend(wait(ctx, 50)?);
    no_nack(
        &sent,
        "LINK-4-12",
        "malformed bodies are accepted on the link header",
    )?;
    let dup = counter_delta(ctx, &before, "duplicates")?;
    let ahead = counter_delta(ctx, &before, "discarded_after_nack")?;
    check_eq(
        "LINK-4-12",
        "(duplicates, discarded_after_nack)",
        (dup, ahead),
        (0, 0),
    )?;
    let sent = accepted(ctx, &flagged(data_len(0, 2, 128, 2), 0x02), 0, "WIRE-7-3")?;
    check_eq(
        "WIRE-7-3",
        "ACKs (frames 0 and 1 consumed)",
        acks(&sent),
        vec![2],
    )?;
    no_nack(&sent, "WIRE-7-3", "the frame after two malformed bodies")?;
    // Each frame is handed up and its credits come back: 1 + 2 + 2 credits of 64 B.
    let handed = delivered(&ctx.take_outputs()).len();
    check_eq("LINK-4-17", "frames handed to the upper layer", handed, 3)?;
    let sent = [sent, wait(ctx, 500)?].concat();
    let last = cfs(&sent).last().map(|c| c.1[0]);
    check_eq(
        "LINK-4-17",
        "VC 0 entry of the last CF (the malformed frames' credits released)",
        last,
        Some(Some(5)),
    )
}

fn reserved_ignored(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let mut f = data_len(0, 0, 128, 3);
    f[15] |= 0x1C;
    f[16] |= 0xA0;
    refcs(&mut f);
    let sent = accepted(ctx, &f, 0, "WIRE-1.2-2")?;
    no_nack(&sent, "WIRE-1.2-2", "reserved bits set")?;
    let mut c = cf(&[(0, 0)]);
    c[21] = 0x77;
    c[20 + 8] = 0xF0;
    c[20 + 4 + 4 * 7] = 0x12;
    refcs(&mut c);
    counted_as(ctx, &c, "cf_received", "WIRE-1.2-2")?;
    // A CF with an empty mask is taken and carries nothing.
    let sent = counted_as(ctx, &cf(&[]), "cf_received", "WIRE-4.3-2")?;
    no_data(&sent, "WIRE-4.3-2", "nothing was submitted")?;
    // Any destination address is accepted.
    let mut f = data_len(0, 1, 128, 4);
    f[0..6].fill(0xFF);
    refcs(&mut f);
    accepted(ctx, &f, 0, "WIRE-2.3-2")?;
    let mut f = data_len(0, 2, 128, 5);
    f[0..6].copy_from_slice(&[0x02, 0x99, 0x99, 0x99, 0x99, 0x99]);
    refcs(&mut f);
    accepted(ctx, &f, 0, "WIRE-2.3-2")?;
    check_eq(
        "WIRE-1.2-2",
        "delivered tags",
        delivered_tags(ctx),
        vec![3, 4, 5],
    )
}

// ----- counters -----------------------------------------------------------------------------------

fn one_counter_each(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    refcs(&mut runt);
    let mut foreign = data_len(0, 0, 128, 0);
    foreign[12] = 0x08;
    refcs(&mut foreign);
    let mut version = ack(0xFFFFF);
    version[14] = 0x21;
    refcs(&mut version);
    let mut kind = ack(0xFFFFF);
    kind[14] = 0x18;
    refcs(&mut kind);
    let mut long_cf = cf(&[(0, 0)])[..60].to_vec();
    long_cf.extend_from_slice(&[1; 8]);
    refcs(&mut long_cf);
    let mut other = raw.peer;
    other.nonce ^= 0x10;
    let vcs: Vec<(u8, u32)> = (0..raw.dut_init.vcs).map(|v| (v, 0)).collect();
    let steps: Vec<(Vec<u8>, &str)> = vec![
        (ack(0xFFFFF), "acks_received"),
        (nack(0xFFFFF), "nacks_received"),
        (cf(&vcs), "cf_received"),
        (cc(&vcs), "cc_received"),
        (init(raw.peer), "inits_received"),
        (
            init_echo(raw.dut_nonce ^ 0x10, other),
            "init_echoes_ignored",
        ),
        (data_len(0, 0, 128, 0), "rx_frames.vc0"),
        (data_len(0, 0, 128, 0), "duplicates"),
        (runt.clone(), "rx_damaged"),
        (data_len(0, 1, 128, 1), "rx_frames.vc0"),
        (bad_fcs(data_len(0, 2, 128, 2)), "rx_fcs_errors"),
        (data_len(0, 3, 128, 3), "discarded_after_nack"),
        (stomped_frame(data_len(0, 2, 128, 2)), "rx_stomped"),
        (foreign, "rx_foreign"),
        (version, "rx_bad_version"),
        (kind, "rx_unknown_kind"),
        (long_cf, "rx_malformed_control"),
        (data_len(0, 2, 128, 2), "rx_frames.vc0"),
    ];
    for (f, name) in steps {
        counted_as(ctx, &f, name, "LINK-7-3")?;
    }
    Ok(())
}

fn tx_counters(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 1, &payload(228, t))?;
    }
    wait(ctx, 100)?;
    send(ctx, &nack(0))?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-1-1",
        "(tx_frames.vc1, tx_bytes.vc1, frames_replayed)",
        (
            get("tx_frames.vc1"),
            get("tx_bytes.vc1"),
            get("frames_replayed"),
        ),
        (3, 3 * 252, 2),
    )
}

// ----- more bring-up ------------------------------------------------------------------------------

fn agreement(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 2;
    peer.window = 16;
    peer.mfs = 512;
    peer.credits = [512, 512, 0, 0, 0, 0, 0, 0];
    // Queued before UP: one frame on VC 3, which the peer lacks, one too long for its MFS.
    submit(ctx, 3, &payload(100, 30))?;
    submit(ctx, 0, &payload(600, 31))?;
    let up = raw_finish(ctx, dut, peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    // Neither goes out: the one not agreed (LINK-2-4), the one longer than the agreed MFS of
    // 512 B (WIRE-2.4-8, which every frame the device sends is checked against too).
    no_data(
        &sent,
        "LINK-2-4",
        "a frame on VC 3 and a frame of 624 B above the agreed 512",
    )?;
    let mut l = lost(&up.outs);
    l.extend(lost(&ctx.take_outputs()));
    l.sort();
    check_eq(
        "LINK-2-4",
        "frames reported lost",
        l,
        vec![
            ("exceeds_peer_mfs".to_owned(), 31),
            ("vc_not_agreed".to_owned(), 30),
        ],
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-2-19",
        "(not_agreed_vc, oversize_for_peer)",
        (get("not_agreed_vc"), get("oversize_for_peer")),
        (1, 1),
    )?;
    for t in 0..20 {
        submit(ctx, 0, &payload(100, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-3",
        "DATA sent with an agreed window of 16",
        data_of(&sent),
        (0..16).map(|s| (s, 0, s)).collect(),
    )?;
    for s in 0..3 {
        accepted(ctx, &data_len(0, s, 128, s), 0, "LINK-4-1")?;
    }
    let sent = counted_as(ctx, &data_len(2, 3, 128, 3), "rx_vc_not_agreed", "LINK-2-4")?;
    no_nack(&sent, "LINK-4-11", "VC 2 is not agreed")?;
    // Expected 4: 16 behind is 0xFFFF4, a duplicate; 0xFFFF3 is a gap.
    let sent = counted_as(ctx, &data_len(0, 0xFFFF4, 128, 9), "duplicates", "LINK-2-4")?;
    check_eq("LINK-4-16", "ACKs after a duplicate", acks(&sent), vec![3])?;
    let sent = counted_as(
        ctx,
        &data_len(0, 0xFFFF3, 128, 9),
        "discarded_after_nack",
        "LINK-2-4",
    )?;
    one_nack(&sent, 3, "LINK-4-3")
}

fn own_grant_checked(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let link = LinkParams {
        credit_size: Some(64),
        rx_credits: Some(4),
        mfs: Some(9216),
        ..LinkParams::default()
    };
    if ctx.try_reset(&setup(link))?.is_err() {
        // Refused: what LINK-2-13 asks.
        return Ok(());
    }
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    for s in &sent {
        if let Frm::Init(i) = s.frame {
            let need = (u32::from(i.mfs) + u32::from(i.credit_overhead))
                .div_ceil(u32::from(i.credit_size));
            let short: Vec<u32> = i.credits[..usize::from(i.vcs)]
                .iter()
                .copied()
                .filter(|g| *g < need)
                .collect();
            check(
                short.is_empty(),
                "LINK-2-13",
                format!("grants of at least {need} credits"),
                || {
                    format!(
                        "the device took 4 credits of 64 B with an MFS of 9216 and announces {short:?}"
                    )
                },
            )?;
        }
    }
    Ok(())
}

fn restart_with_a_held_buffer(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 1;
    peer.mfs = 1024;
    peer.credits = [512, 0, 0, 0, 0, 0, 0, 0];
    raw_finish(ctx, dut, peer)?;
    hold(ctx, 0, true)?;
    for i in 0..3 {
        accepted(ctx, &data_len(0, i, 128, i), 0, "LINK-4-1")?;
    }
    let _ = ctx.take_outputs();
    // The peer restarts: twice, so that the echo due is for the newer nonce.
    let mut peer2 = peer;
    peer2.nonce = 0xBEEF_0002;
    let mut sent = send(ctx, &init(peer2))?;
    peer2.nonce = 0xBEEF_0003;
    sent.extend(send(ctx, &init(peer2))?);
    sent.extend(wait(ctx, 5_000)?);
    let echoes = |sent: &[Sent]| -> Vec<u32> {
        sent.iter()
            .filter_map(|s| match s.frame {
                Frm::InitEcho(e, _) => Some(e),
                _ => None,
            })
            .collect()
    };
    let own = sent.iter().find_map(|s| match s.frame {
        Frm::Init(i) => Some(i),
        _ => None,
    });
    let Some(own) = own else {
        return Err(Stop::fail(
            "LINK-2-6",
            "an INIT with a new nonce after the peer's restart",
            format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
        ));
    };
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs sent while the buffer holds the last incarnation's frames",
        echoes(&sent),
        vec![],
    )?;
    // An echo of the device's own INIT does not bring it UP either: it is ignored and counted.
    let before = ctx.counters()?;
    ctx.inject(0, &init_echo(own.nonce, peer2))?;
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-2-18",
        "link events on an INIT_ECHO while the buffer holds the last incarnation's frames",
        link_events(&ctx.take_outputs()),
        vec!["down:peer_restart".to_owned()],
    )?;
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs ignored (init_echoes_ignored)",
        counter_delta(ctx, &before, "init_echoes_ignored")?,
        1,
    )?;
    check_eq("LINK-2-18", "INIT_ECHOs sent then", echoes(&sent), vec![])?;
    // The peer, not UP without an echo, sends nothing but INIT; the device's upper layer drains.
    hold(ctx, 0, false)?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-2-18",
        "INIT_ECHOs once drained (echo nonce): one, for the newest INIT",
        echoes(&sent),
        vec![peer2.nonce],
    )?;
    // Drained, it draws a new nonce: the echo carries it and an INIT with it follows at once.
    let renewed = sent.iter().find_map(|s| match s.frame {
        Frm::Init(i) => Some(i.nonce),
        _ => None,
    });
    let echoed_own = sent.iter().find_map(|s| match s.frame {
        Frm::InitEcho(_, i) => Some(i.nonce),
        _ => None,
    });
    check(
        renewed.is_some_and(|n| n != own.nonce && n != 0) && echoed_own == renewed,
        "LINK-2-18",
        "once drained, a new nonce in the INIT_ECHO and in an INIT sent at once",
        || {
            format!(
                "old nonce {:#x}, INIT_ECHO carries {echoed_own:x?}, INIT {renewed:x?}",
                own.nonce
            )
        },
    )?;
    ctx.inject(0, &init_echo(renewed.unwrap_or_default(), peer2))?;
    wait(ctx, 200)?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("LINK-2-5", "link events", ev, vec!["up".to_owned()])?;
    // The new incarnation's grant is whole, and no more: with the device holding every frame,
    // frames of 1,000 B fill it to the last whole frame and the next one overruns it.
    hold(ctx, 0, true)?;
    let cost = (1000 + u32::from(dut.credit_overhead)).div_ceil(u32::from(dut.credit_size).max(1));
    let fit = dut.credits[0] / cost.max(1);
    for i in 0..fit {
        accepted(ctx, &data_len(0, i, 1000, 10 + i), 0, "LINK-6-4")?;
    }
    counted_as(
        ctx,
        &data_len(0, fit, 1000, 10 + fit),
        "credit_overruns.vc0",
        "LINK-6-4",
    )?;
    Ok(())
}

fn physical_down(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let raw = raw_up(ctx, quiet())?;
    submit(ctx, 0, &payload(100, 1))?;
    wait(ctx, 100)?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    let sent = wait(ctx, 3_000)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-3",
        "link events",
        link_events(&outs),
        vec!["down:physical".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![("unknown_fate".to_owned(), 1)],
    )?;
    check(
        sent.is_empty(),
        "LINK-2-1",
        "nothing sent while physically down",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    let sent = counted_as(ctx, &init(raw.peer), "rx_not_up", "LINK-2-11")?;
    check(
        sent.is_empty(),
        "LINK-2-11",
        "no answer while physically down",
        || format!("{:?}", sent.iter().map(|s| &s.frame).collect::<Vec<_>>()),
    )?;
    counted_as(ctx, &data_len(0, 0, 128, 0), "rx_not_up", "LINK-2-11")?;
    submit(ctx, 0, &payload(100, 2))?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    let new = sent
        .iter()
        .find_map(|s| match s.frame {
            Frm::Init(i) => Some(i),
            _ => None,
        })
        .ok_or_else(|| Stop::fail("LINK-2-1", "INIT at once on physical up", "none"))?;
    check(
        new.nonce != raw.dut_nonce && new.nonce != 0,
        "LINK-2-9",
        "a new non-zero nonce",
        || format!("{:#x}, as before", new.nonce),
    )?;
    let up = raw_finish(ctx, new, raw.peer)?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    check_eq(
        "LINK-6-2",
        "DATA after UP again",
        data_of(&sent),
        vec![(0, 0, 2)],
    )
}

fn any_role_accepted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut peer = raw_init(ctx, RAW_NONCE);
    peer.vcs = 2;
    peer.credits = [512, 512, 0, 0, 0, 0, 0, 0];
    let mut i = init(peer);
    i[34..36].copy_from_slice(&0xFFFFu16.to_be_bytes());
    // Grants of VCs 6 and 7, above the 2 announced, are reserved: not range-checked.
    i[64..72].fill(0xFF);
    refcs(&mut i);
    let sent = counted_as(ctx, &i, "inits_received", "CLS-2-3")?;
    check(
        sent.iter()
            .any(|s| matches!(s.frame, Frm::InitEcho(e, _) if e == peer.nonce)),
        "CLS-2-3",
        "an INIT_ECHO for an INIT of role 3 with every capability bit",
        || "none".into(),
    )?;
    let mut e = init_echo(dut.nonce, peer);
    e[34..36].copy_from_slice(&0xFFFFu16.to_be_bytes());
    e[64..72].fill(0xFF);
    refcs(&mut e);
    counted_as(ctx, &e, "init_echoes_received", "CLS-2-3")?;
    let ev = link_events(&ctx.take_outputs());
    check_eq("CLS-2-3", "link events", ev, vec!["up".to_owned()])
}

// ----- more link-level retry ------------------------------------------------------------------------

fn count_resets(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let t0 = ctx.now();
    let sent = wait(ctx, 4_500)?;
    check_eq(
        "LINK-3-11",
        "frames and two replays",
        data_of(&sent).len(),
        9,
    )?;
    send(ctx, &ack(0))?;
    let sent = wait(ctx, (t0 + 9_000).saturating_sub(ctx.now()))?;
    check_eq(
        "LINK-3-7",
        "two more replays of frames 1 and 2 after the ACK of frame 0",
        data_of(&sent),
        vec![(1, 1, 1), (2, 1, 2), (1, 1, 1), (2, 1, 2)],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-3-7",
        "no FLUSH: the count restarted at the ACK",
        || format!("{ev:?}"),
    )?;
    wait(ctx, 2_000)?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-3-13",
        "link events after a third replay without progress",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost",
        lost(&outs),
        vec![
            ("unknown_fate".to_owned(), 1),
            ("unknown_fate".to_owned(), 2),
        ],
    )
}

fn transmit_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    for t in 0..2 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    ctx.inject(0, &cc(&[(0, 2)]))?;
    ctx.inject(0, &nack(0xFFFFF))?;
    submit(ctx, 0, &payload(200, 2))?;
    let sent = wait(ctx, 50)?;
    let kinds: Vec<String> = sent
        .iter()
        .map(|s| match &s.frame {
            Frm::Data { seq, flags, .. } if flags & 1 == 1 => format!("DATA {seq} R"),
            Frm::Data { seq, .. } => format!("DATA {seq}"),
            Frm::Ack(n) => format!("ACK {n}"),
            Frm::Nack(n) => format!("NACK {n}"),
            Frm::Cf(_) => "CF".into(),
            Frm::Cc(_) => "CC".into(),
            other => format!("{other:?}"),
        })
        .collect();
    check_eq(
        "LINK-3-15",
        "frames due together",
        kinds,
        ["ACK 0", "CF", "DATA 0 R", "DATA 1 R", "DATA 2"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
    )
}

fn ack_req_at_half(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_max_frames: Some(4),
            ..quiet()
        },
    )?;
    for t in 0..4 {
        submit(ctx, 0, &payload(100, t))?;
    }
    let sent = wait(ctx, 100)?;
    let flags: Vec<(u32, u8)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, flags, .. } => Some((seq, flags)),
            _ => None,
        })
        .collect();
    check(
        flags.contains(&(1, 0x02)),
        "LINK-3-16",
        "ACK_REQ on frame 1, which brings the buffer to 2 of 4",
        || format!("(seq, flags) {flags:?}"),
    )
}

fn round_robin(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..3 {
        submit(ctx, 0, &payload(100, t))?;
    }
    for t in 0..3 {
        submit(ctx, 1, &payload(100, 10 + t))?;
    }
    let sent = wait(ctx, 100)?;
    let vcs: Vec<u8> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { vc, .. } => Some(vc),
            _ => None,
        })
        .collect();
    check(
        vcs.len() == 6 && vcs.windows(2).all(|w| w[0] != w[1]),
        "LINK-3-17",
        "VCs 0 and 1 alternating",
        || format!("VCs {vcs:?}"),
    )
}

// ----- more credit-based flow control ---------------------------------------------------------------

fn cf_min_interval(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(4),
            cf_min_interval_ns: Some(1_000),
            ..quiet()
        },
    )?;
    wait(ctx, 2_000)?;
    let sent = accepted(ctx, &data_len(0, 0, 256, 0), 0, "LINK-5-4")?;
    let c = cfs(&sent);
    check(
        c.len() == 1 && c[0].1[0] == Some(4),
        "LINK-5-5",
        "a CF carrying 4 once 4 credits are freed",
        || format!("CFs {c:?}"),
    )?;
    let t1 = c[0].0;
    accepted(ctx, &data_len(0, 1, 256, 1), 0, "LINK-5-4")?;
    let late = ctx.late_ns();
    let sent = wait(ctx, 1_200 + late)?;
    let c: Vec<(u64, Option<u32>)> = cfs(&sent).iter().map(|c| (c.0 - t1, c.1[0])).collect();
    check(
        c.len() == 1 && c[0].1 == Some(8) && (1_000..=1_100 + late).contains(&c[0].0),
        "LINK-5-5",
        "the next CF, carrying 8, cf_min_interval (1000 ns) after the first",
        || format!("CFs (ns after the first, VC 0) {c:?}"),
    )
}

fn credit_stall(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let peer = small_peer(ctx, [5, 512, 512, 512, 0, 0, 0, 0], 0);
    raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(228, 0))?;
    submit(ctx, 0, &payload(228, 1))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-5-2",
        "DATA within 5 credits",
        data_of(&sent),
        vec![(0, 0, 0)],
    )?;
    check_eq(
        "LINK-7-4",
        "credit_stalls.vc0",
        ctx.counter("credit_stalls.vc0")?,
        1,
    )?;
    let t_first = sent.first().map_or(0, |s| s.time);
    send(ctx, &ack(0))?;
    wait(ctx, 900)?;
    let sent = send(ctx, &cf(&[(0, 4)]))?;
    check_eq(
        "LINK-5-6",
        "DATA after CF 4",
        data_of(&sent),
        vec![(1, 0, 1)],
    )?;
    let t_second = sent
        .iter()
        .find(|s| s.frame.is_data())
        .map_or(0, |s| s.time);
    let ns = ctx.counter("credit_stall_ns.vc0")?;
    let want = t_second - t_first;
    check(
        ns + 100 >= want && ns <= want + 100,
        "LINK-7-4",
        format!("credit_stall_ns.vc0 of {want} ns (from the first frame to the stalled one)"),
        || format!("{ns}"),
    )?;
    check_eq(
        "LINK-7-4",
        "credit_stalls.vc0",
        ctx.counter("credit_stalls.vc0")?,
        1,
    )
}

// ----- transmit format and pipeline order --------------------------------------------------------------

/// Checks the format of one frame the device sent (untagged: the reference declares no TAGGED).
fn tx_frame_ok(b: &[u8], tagged_ok: bool) -> Result<(), Stop> {
    let n = b.len();
    let show = || hex::encode(b);
    check(n >= 64, "WIRE-2.4-1", "at least 64 bytes", show)?;
    check(
        ethlink_protocol::fcs::check(b),
        "WIRE-2.5-1",
        "a good FCS",
        show,
    )?;
    let tagged = b[12..14] == [0x81, 0x00];
    check(
        !tagged || tagged_ok,
        "CLS-3-2",
        "no 802.1Q tag without TAGGED",
        show,
    )?;
    if tagged {
        return Ok(());
    }
    check(
        b[12..14] == [0x88, 0xB5],
        "WIRE-2.1-1",
        "EtherType 0x88B5",
        show,
    )?;
    check(
        b[6] & 1 == 0,
        "WIRE-2.3-1",
        "a unicast source address",
        show,
    )?;
    check(b[14] >> 4 == 1, "WIRE-3-1", "version 1", show)?;
    let f = decode(b);
    check(
        f != Frm::Bad,
        "WIRE-4.5-1",
        "a frame that parses, fields in range",
        show,
    )?;
    let zero = |r: std::ops::Range<usize>| b[r].iter().all(|x| *x == 0);
    match &f {
        Frm::Data { payload, .. } => {
            check(
                b[15] & 0x1C == 0,
                "WIRE-1.2-1",
                "reserved flag bits zero",
                show,
            )?;
            check(
                b[16] == 0 && b[17] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved sequence bits zero",
                show,
            )?;
            let end = 20 + payload.len();
            check(
                n == (end + 4).max(64),
                "WIRE-2.4-4",
                "no byte after the body but padding",
                show,
            )?;
            check(zero(end..n - 4), "WIRE-2.4-1", "zero padding", show)?;
        }
        Frm::Ack(_) | Frm::Nack(_) => {
            check(
                b[15] == 0,
                "WIRE-3-7",
                "VC and flags zero in a control frame",
                show,
            )?;
            check(
                b[16] == 0 && b[17] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved sequence bits zero",
                show,
            )?;
            check(
                n == 64 && zero(20..60),
                "WIRE-4-1",
                "64 bytes, zero padding",
                show,
            )?;
        }
        Frm::Cf(e) | Frm::Cc(e) => {
            check(
                b[15] == 0 && zero(16..20),
                "WIRE-3-7",
                "no sequence number, VC or flags",
                show,
            )?;
            check(
                n == 64 && zero(56..60) && zero(21..24),
                "WIRE-4-1",
                "64 bytes, zero padding and reserved bytes",
                show,
            )?;
            for (v, entry) in e.iter().enumerate() {
                let at = 24 + 4 * v;
                match entry {
                    None => check(
                        zero(at..at + 4),
                        "WIRE-4.3-1",
                        "entries outside the mask zero",
                        show,
                    )?,
                    Some(_) => check(
                        b[at] == 0 && b[at + 1] & 0xF0 == 0,
                        "WIRE-1.2-1",
                        "reserved entry bits zero",
                        show,
                    )?,
                }
            }
        }
        Frm::Init(i) | Frm::InitEcho(_, i) => {
            check(
                b[15] == 0 && zero(16..20),
                "WIRE-3-7",
                "no sequence number, VC or flags",
                show,
            )?;
            check(n == 76, "WIRE-4-1", "76 bytes", show)?;
            check(
                b[34] >> 6 != 3,
                "WIRE-4.5-7",
                "not the reserved role 3",
                show,
            )?;
            check(
                b[36] == 0 && b[37] & 0xF0 == 0,
                "WIRE-1.2-1",
                "reserved window bits zero",
                show,
            )?;
            for v in 0..8 {
                let at = 40 + 4 * v;
                let ok = if v < usize::from(i.vcs) {
                    b[at] == 0 && b[at + 1] & 0xF0 == 0
                } else {
                    zero(at..at + 4)
                };
                check(
                    ok,
                    "WIRE-1.2-1",
                    "reserved grant bits and entries zero",
                    show,
                )?;
            }
        }
        Frm::Bad => {}
    }
    Ok(())
}

fn tx_format(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            vcs: Some(2),
            cc_interval_ns: Some(2_000),
            ..quiet()
        },
    )?;
    send(ctx, &flagged(data_len(0, 0, 128, 0), 0x02))?;
    send(ctx, &data_len(0, 2, 128, 2))?;
    submit(ctx, 1, &payload(17, 1))?;
    submit(ctx, 0, &payload(300, 2))?;
    wait(ctx, 100)?;
    send(ctx, &nack(0xFFFFF))?;
    send(ctx, &cc(&[(0, 2)]))?;
    send(ctx, &ack(1))?;
    wait(ctx, 3_000)?;
    let tagged_ok = ctx.has_cap("tagged");
    let frames: Vec<Vec<u8>> = ctx
        .log()
        .iter()
        .filter(|l| l.from_dut)
        .map(|l| l.bytes.clone())
        .collect();
    let mut kinds = std::collections::BTreeSet::new();
    for b in &frames {
        tx_frame_ok(b, tagged_ok)?;
        kinds.insert(b.get(14).map_or(0xFF, |k| k & 0x0F));
    }
    if kinds.len() != 7 {
        return Err(Stop::Inconclusive(format!(
            "the exchange made the device send the kinds {kinds:?} only"
        )));
    }
    Ok(())
}

fn pipeline_order(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            mfs: Some(1024),
            ..quiet()
        },
    )?;
    let foreign = |mut f: Vec<u8>| {
        f[12] = 0x08;
        f[13] = 0x00;
        refcs(&mut f);
        f
    };
    let version = |mut f: Vec<u8>| {
        f[14] = 0x20 | (f[14] & 0x0F);
        refcs(&mut f);
        f
    };
    let kind9 = |mut f: Vec<u8>| {
        f[14] = (f[14] & 0xF0) | 0x09;
        refcs(&mut f);
        f
    };
    let mut runt = data_len(0, 0, 128, 0);
    runt.truncate(60);
    let runt = bad_fcs(runt);
    let steps: Vec<(Vec<u8>, &str)> = vec![
        (runt, "rx_damaged"),
        (bad_fcs(data_len(0, 0, 1028, 0)), "rx_damaged"),
        (bad_fcs(foreign(data_len(0, 0, 128, 0))), "rx_fcs_errors"),
        (stomped_frame(foreign(data_len(0, 0, 128, 0))), "rx_stomped"),
        (foreign(version(data_len(0, 0, 128, 0))), "rx_foreign"),
        (version(kind9(ack(0xFFFFF))), "rx_bad_version"),
        (kind9(data_len(0, 0, 128, 0)), "rx_unknown_kind"),
    ];
    for (f, name) in steps {
        counted_as(ctx, &f, name, "WIRE-7-1")?;
    }
    Ok(())
}

fn dst_of(sent: &[Sent]) -> Vec<[u8; 6]> {
    sent.iter()
        .map(|s| {
            let mut d = [0u8; 6];
            d.copy_from_slice(&s.bytes[..6]);
            d
        })
        .collect()
}

fn peer_address(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    const LOCAL: [u8; 6] = [0x01, 0x80, 0xC2, 0x00, 0x00, 0x0E];
    let peer_addr = peer_mac(0).0;
    let dut = raw_start(ctx, quiet())?;
    let d = dst_of(
        &ctx.log()
            .iter()
            .filter(|l| l.from_dut)
            .map(|l| Sent {
                time: l.time_ns,
                frame: Frm::Bad,
                bytes: l.bytes.clone(),
            })
            .collect::<Vec<_>>(),
    );
    check(
        d.iter().all(|a| *a == LOCAL),
        "WIRE-2.3-2",
        "INIT to 01:80:C2:00:00:0E",
        || format!("{d:x?}"),
    )?;
    let peer = raw_init(ctx, RAW_NONCE);
    let up = raw_finish(ctx, dut, peer)?;
    submit(ctx, 0, &payload(100, 0))?;
    let sent = [up.after_up, wait(ctx, 100)?].concat();
    let d = dst_of(&sent);
    check(
        !d.is_empty() && d.iter().all(|a| *a == peer_addr),
        "LINK-2-15",
        "frames to the address of the peer's INIT",
        || format!("{d:x?}"),
    )?;
    ctx.request(&Request::PhysicalDown { port: 0 })?;
    wait(ctx, 100)?;
    ctx.request(&Request::PhysicalUp { port: 0 })?;
    let sent = wait(ctx, 100)?;
    let d = dst_of(&sent);
    check(
        !d.is_empty() && d.iter().all(|a| *a == LOCAL),
        "LINK-2-15",
        "after physical down the address is forgotten: INIT to 01:80:C2:00:00:0E",
        || format!("{d:x?}"),
    )
}

// ----- faults on the wire of an attached peer ---------------------------------------------------

fn is_kind(bytes: &[u8], kind: u8) -> bool {
    bytes.len() > 20 && bytes[14] & 0x0F == kind
}

fn peer_dup_and_reorder(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(ctx, LinkParams::default())?;
    ctx.take_outputs();
    let mut n = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && is_kind(bytes, 0) && bytes[15] & 1 == 0 {
                n += 1;
                match n {
                    3 => return Fault::Duplicate,
                    5 => return Fault::Delay(300),
                    _ => {}
                }
            }
            Fault::Pass
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..8 {
        ctx.peer_submit(0, 0, &payload(256, t))?;
    }
    ctx.run_for(30_000)?;
    check_eq(
        "LINK-4-1",
        "tags delivered",
        delivered_tags(ctx),
        (0..8).collect(),
    )?;
    let dups = counter_delta(ctx, &before, "duplicates")?;
    let nacks = counter_delta(ctx, &before, "nacks_sent")?;
    check(
        dups >= 1 && nacks >= 1,
        "LINK-4-5",
        "at least one duplicate counted and one NACK for the reordered frame",
        || format!("duplicates {dups}, nacks_sent {nacks}"),
    )
}

fn acks_withheld(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(
        ctx,
        LinkParams {
            replay_timer_ns: Some(3_000),
            ..LinkParams::default()
        },
    )?;
    let until = ctx.now() + 5_000;
    ctx.set_hook(
        0,
        Box::new(move |dir, t, bytes| {
            if dir == Dir::ToDut && t < until && (is_kind(bytes, 1) || is_kind(bytes, 2)) {
                Fault::Drop
            } else {
                Fault::Pass
            }
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..4 {
        submit(ctx, 0, &payload(256, t))?;
    }
    ctx.run_for(30_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-3-2",
        "payloads the peer received",
        got,
        (0..4).collect(),
    )?;
    let replayed = counter_delta(ctx, &before, "frames_replayed")?;
    let timeouts = counter_delta(ctx, &before, "replay_timeouts")?;
    let flushes = counter_delta(ctx, &before, "flushes")?;
    check(
        replayed >= 4 && timeouts >= 1 && flushes == 0,
        "LINK-3-11",
        "the whole buffer replayed by the timer at least once, no FLUSH",
        || format!("frames_replayed {replayed}, replay_timeouts {timeouts}, flushes {flushes}"),
    )
}

fn lost_cfs_repaired(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    up_with_peer(
        ctx,
        LinkParams {
            mfs: Some(320),
            rx_credits: Some(10),
            ..LinkParams::default()
        },
    )?;
    let mut cf_seen = 0u32;
    ctx.set_hook(
        0,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && is_kind(bytes, 3) {
                cf_seen += 1;
                if cf_seen <= 2 {
                    return Fault::Drop;
                }
            }
            Fault::Pass
        }),
    )?;
    let before = ctx.counters()?;
    for t in 0..10 {
        submit(ctx, 0, &payload(228, t))?;
    }
    ctx.run_for(60_000)?;
    let got: Vec<u32> = ctx
        .peer_delivered(0)?
        .iter()
        .filter_map(|(_, p)| tag_of(p))
        .collect();
    check_eq(
        "LINK-5-6",
        "payloads the peer received",
        got,
        (0..10).collect(),
    )?;
    let stalls = counter_delta(ctx, &before, "credit_stalls.vc0")?;
    check(
        stalls >= 1,
        "LINK-5-2",
        "the VC stalled for want of credit",
        || format!("credit_stalls.vc0 {stalls}"),
    )
}

// ----- several frames at the same instant ---------------------------------------------------------
//
// Frames handed to the device at one instant, before time advances, arrive before the device's
// wire can take anything it decides: they model arrivals while a replay or a NACK waits for the
// wire.

fn nack_while_replay_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_count_max: Some(1),
            ..quiet()
        },
    )?;
    for t in 0..3 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &nack(0xFFFFF))?;
    ctx.inject(0, &nack(0xFFFFF))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-9",
        "DATA after two NACKs at once: one replay",
        data_of(&sent),
        vec![(0, 1, 0), (1, 1, 1), (2, 1, 2)],
    )?;
    let ev = link_events(&ctx.take_outputs());
    check(
        ev.is_empty(),
        "LINK-3-9",
        "no FLUSH: the second NACK did not count",
        || format!("{ev:?}"),
    )?;
    check_eq(
        "LINK-3-9",
        "replays_by_nack",
        ctx.counter("replays_by_nack")?,
        1,
    )
}

fn ack_while_replay_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    for t in 0..4 {
        submit(ctx, 0, &payload(200, t))?;
    }
    wait(ctx, 100)?;
    ctx.inject(0, &nack(0xFFFFF))?;
    ctx.inject(0, &ack(1))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-3-10",
        "DATA after NACK 0xFFFFF then ACK 1 at once",
        data_of(&sent),
        vec![(2, 1, 2), (3, 1, 3)],
    )
}

fn nack_cancelled(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 100)?;
    no_nack(
        &sent,
        "LINK-4-9",
        "the expected frame came before the NACK could go",
    )?;
    let sent = accepted(ctx, &data_len(0, 1, 128, 1), 0, "LINK-4-1")?;
    no_nack(&sent, "LINK-4-9", "SEND_ACKS again")?;
    check_eq(
        "LINK-4-1",
        "delivered tags",
        delivered_tags(ctx),
        vec![0, 1],
    )
}

// ----- withdrawal of unsent frames ---------------------------------------------------------------

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

fn withdraw_unsent(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            replay_max_frames: Some(2),
            ..quiet()
        },
    )?;
    // A second VC when the device has one.
    let vc1 = if ctx.params.vcs.unwrap_or(1) >= 2 {
        1
    } else {
        0
    };
    for t in 1..4 {
        submit(ctx, 0, &payload(100, t))?;
    }
    let sent = wait(ctx, 200)?;
    check_eq(
        "LINK-3-3",
        "DATA with a replay buffer of 2 frames",
        data_of(&sent),
        vec![(0, 0, 1), (1, 0, 2)],
    )?;
    submit(ctx, vc1, &payload(100, 11))?;
    submit(ctx, vc1, &payload(100, 12))?;
    let sent = wait(ctx, 200)?;
    no_data(&sent, "LINK-3-3", "the replay buffer is full")?;
    ctx.take_outputs();
    // A DATA frame of the peer makes a delivery pending inside the device; the withdrawal comes
    // at the same instant, before any time passes.
    ctx.inject(0, &data_len(0, 0, 128, 99))?;
    ctx.request(&Request::Withdraw { port: 0 })?;
    ctx.run_for(500)?;
    let outs = ctx.take_outputs();
    let got = lost_at(&outs);
    let mut want: Vec<(u8, u32)> = vec![(0, 3), (vc1, 11), (vc1, 12)];
    let mut seen: Vec<(u8, u32)> = got.iter().map(|(_, v, _, t)| (*v, *t)).collect();
    // Only the order within a VC is specified.
    let per_vc = |l: &[(u8, u32)], v: u8| -> Vec<u32> {
        l.iter().filter(|(x, _)| *x == v).map(|(_, t)| *t).collect()
    };
    for v in [0, vc1] {
        check_eq(
            "LINK-6-6",
            &format!("tags reported withdrawn on VC {v}, in order"),
            per_vc(&seen, v),
            per_vc(&want, v),
        )?;
    }
    want.sort_unstable();
    seen.sort_unstable();
    check_eq(
        "LINK-6-5",
        "(VC, tag) of the frames withdrawn: those not sent, not the two in the replay buffer",
        seen,
        want,
    )?;
    if let Some((_, _, r, t)) = got.iter().find(|(_, _, r, _)| r != "withdrawn") {
        return Err(Stop::fail(
            "LINK-6-6",
            "reason withdrawn for every frame taken back",
            format!("frame {t} reported {r}"),
        ));
    }
    let first_lost = got.first().map_or(usize::MAX, |g| g.0);
    let delivered_at = outs
        .iter()
        .position(|o| matches!(o, Output::Delivered { .. }));
    check(
        delivered_at.is_some_and(|d| d < first_lost),
        "LINK-6-6",
        "the delivery of the peer's frame 99, pending when the withdrawal came, reported before \
         the first withdrawn frame",
        || format!("outputs: {outs:?}"),
    )?;
    // The peer acknowledges the two frames sent; the device sends a new frame, and never one
    // withdrawn.
    submit(ctx, 0, &payload(100, 4))?;
    ctx.inject(0, &ack(1))?;
    let sent = wait(ctx, 5_000)?;
    check_eq(
        "LINK-6-5",
        "DATA after the withdrawal and the ACK of 1: only the new frame 4, with sequence number 2",
        data_of(&sent),
        vec![(2, 0, 4)],
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-6-5",
        "payloads reported lost after the ACK",
        lost(&outs),
        Vec::new(),
    )
}

// ----- 1.3: frame age, NACK memory, first CF, empty CC ----------------------------------------

fn aged_out(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    // Three rounds of ACK and replay come before the frames age out, the fourth replay after it,
    // whatever the line rate and clock tick: a round is the 2.1 us the peer waits, a tick late
    // and a burst of eight frames on the wire, and the age ends 1 us into the fourth round.
    let late = ctx.late_ns();
    let burst = 8 * ctx.ser_ns(data_len(0, 0, 200, 0).len());
    let round = 2_100 + 2 * (late + 1) + burst;
    let max_age = burst + 3 * round + 1_000;
    raw_up(
        ctx,
        LinkParams {
            replay_timer_ns: Some(2_000),
            replay_count_max: Some(2),
            llr_max_age_ns: Some(max_age),
            ..quiet()
        },
    )?;
    let start = ctx.now();
    for t in 0..8 {
        submit(ctx, 0, &payload(200, t))?;
    }
    let sent = wait(ctx, 100)?;
    check_eq("LINK-3-2", "eight new DATA frames", data_of(&sent).len(), 8)?;
    // Each replay the peer acknowledges the oldest frame: progress, so the count stays at 0
    // (LINK-3-7) and replay_count_max 2 never ends the link.
    for k in 0..3u32 {
        ctx.inject(0, &ack(k))?;
        let sent = wait(ctx, 2_100 + late)?;
        let d = data_of(&sent);
        check(
            d.first().map(|x| x.0) == Some(k + 1) && d.iter().all(|x| x.1 != 0),
            "LINK-3-7",
            format!("a replay from frame {} after the ACK of frame {k}", k + 1),
            || format!("DATA (seq, flags, tag) {d:?}"),
        )?;
    }
    ctx.inject(0, &ack(3))?;
    let sent = wait(ctx, 2_100 + late)?;
    let late: Vec<(u64, u32)> = sent
        .iter()
        .filter_map(|s| match s.frame {
            Frm::Data { seq, .. } => Some((s.time.saturating_sub(start), seq)),
            _ => None,
        })
        .collect();
    check(
        late.is_empty(),
        "LINK-3-18",
        format!(
            "no copy of frames 4..7 after llr_max_age ({max_age} ns) from their first \
             transmission"
        ),
        || format!("(ns after the first transmission, seq) {late:?}"),
    )?;
    let outs = ctx.take_outputs();
    check_eq(
        "LINK-3-18",
        "link events",
        link_events(&outs),
        vec!["down:flush".to_owned()],
    )?;
    let down_at = outs
        .iter()
        .position(|o| matches!(o, Output::LinkDown { .. }))
        .unwrap_or(usize::MAX);
    let lost_at: Vec<usize> = lost_at(&outs).iter().map(|l| l.0).collect();
    check(
        lost_at.iter().all(|&i| i > down_at),
        "LINK-6-7",
        "the link-down event before the frames of unknown fate",
        || format!("link-down at output {down_at}, lost frames at {lost_at:?}"),
    )?;
    check_eq(
        "LINK-6-1",
        "frames reported lost, in order",
        lost(&outs),
        (4..8).map(|t| ("unknown_fate".to_owned(), t)).collect(),
    )?;
    let c = ctx.counters()?;
    let get = |n: &str| c.get(n).copied().unwrap_or(0);
    check_eq(
        "LINK-3-18",
        "(flushes, flushes_aged, frames_unknown_fate)",
        (
            get("flushes"),
            get("flushes_aged"),
            get("frames_unknown_fate"),
        ),
        (1, 1, 4),
    )?;
    // The frames acknowledged waited in the replay buffer, never longer than llr_max_age.
    let max_age = ctx.params.llr_max_age_ns.unwrap_or(25_000);
    let age = get("replay_age_max_ns");
    check(
        (1..=max_age).contains(&age),
        "LINK-3-18",
        format!(
            "replay_age_max_ns (Table LINK-T3) between 1 and llr_max_age ({max_age} ns): frames \
             0 to 3 waited for their ACK"
        ),
        || format!("it reads {age}"),
    )
}

fn nack_again_for_the_same_gap(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    // Frame 1 with 0 missing: the gap draws the NACK.
    let sent = send(ctx, &data_len(0, 1, 128, 1))?;
    one_nack(&sent, before(0), "LINK-4-3")?;
    // A new replay that lost frame 0 again brings frame 1 first: not beyond the frame that drew
    // the NACK, so one more NACK.
    let sent = send(ctx, &data_len(0, 1, 128, 1))?;
    one_nack(&sent, before(0), "LINK-4-8")?;
    // Frame 2 of the same replay is beyond it: nothing.
    let sent = send(ctx, &data_len(0, 2, 128, 2))?;
    no_nack(&sent, "LINK-4-7", "frame 2 is beyond frame 1")?;
    let sent = accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    no_nack(&sent, "LINK-4-7", "the expected frame")
}

fn first_cf_after_up(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(
        ctx,
        LinkParams {
            cf_min_credits: Some(2),
            cf_min_interval_ns: Some(5_000),
            ..quiet()
        },
    )?;
    // 128 B: 2 credits of 64 B, drained by the upper layer at once.
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 200)?;
    let first = cfs(&sent);
    check(
        first.len() == 1,
        "LINK-5-5",
        "one CF at once: no CF had been sent since UP, so no cf_min_interval holds it",
        || format!("CFs (time, entries) {first:?}"),
    )?;
    let at = first.first().map_or(0, |c| c.0);
    ctx.inject(0, &data_len(0, 1, 128, 1))?;
    let sent = wait(ctx, 200)?;
    check(
        cfs(&sent).is_empty(),
        "LINK-5-5",
        "no second CF within cf_min_interval (5000 ns) of the first",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )?;
    let sent = wait(ctx, 5_000)?;
    let second = cfs(&sent);
    check(
        second.len() == 1 && second[0].0 >= at + 5_000,
        "LINK-5-5",
        format!(
            "one CF at or after {} (the first CF + cf_min_interval)",
            at + 5_000
        ),
        || format!("CFs (time, entries) {second:?}"),
    )
}

fn empty_cc_draws_no_cf(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    let sent = counted_as(ctx, &cc(&[]), "cc_received", "WIRE-4.3-2")?;
    check(
        cfs(&sent).is_empty(),
        "WIRE-4.3-2",
        "no CF for a CC that carries no entry",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )?;
    let sent = counted_as(ctx, &cc(&[(0, 0)]), "cc_received", "LINK-5-13")?;
    check(
        cfs(&sent).len() == 1,
        "LINK-5-13",
        "one CF at once after a CC with an entry",
        || format!("CFs (time, entries) {:?}", cfs(&sent)),
    )
}

fn one_frame_per_due(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    raw_up(ctx, quiet())?;
    accepted(ctx, &data_len(0, 0, 128, 0), 0, "LINK-4-1")?;
    // ACK_REQ on frame 1 and a duplicate of frame 0, handed over together: one ACK of 1.
    ctx.inject(0, &flagged(data_len(0, 1, 128, 1), 0x02))?;
    ctx.inject(0, &data_len(0, 0, 128, 0))?;
    let sent = wait(ctx, 100)?;
    check_eq(
        "LINK-4-18",
        "ACKs for ACK_REQ and a duplicate",
        acks(&sent),
        vec![1],
    )?;
    // ACK_REQ on frame 2 and a gap (frame 4) together: the NACK carries 2 and settles the ACK.
    ctx.inject(0, &flagged(data_len(0, 2, 128, 2), 0x02))?;
    ctx.inject(0, &data_len(0, 4, 128, 4))?;
    let sent = wait(ctx, 100)?;
    check_eq("LINK-4-18", "NACKs", nacks(&sent), vec![2])?;
    check_eq(
        "LINK-4-18",
        "ACKs beside the NACK",
        acks(&sent),
        Vec::<u32>::new(),
    )
}

fn echo_ignored_before_refused(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let dut = raw_start(ctx, quiet())?;
    let mut bad = raw_init(ctx, RAW_NONCE);
    // Grants of 1 credit cannot carry a frame of the MFS (LINK-2-12).
    bad.credits = [1, 1, 1, 1, 0, 0, 0, 0];
    let sent = counted_as(
        ctx,
        &init_echo(dut.nonce ^ 0x5A5A_5A5A, bad),
        "init_echoes_ignored",
        "LINK-2-17",
    )?;
    no_data(&sent, "LINK-2-17", "still in INIT")?;
    counted_as(ctx, &init_echo(dut.nonce, bad), "init_refused", "LINK-2-12").map(|_| ())
}
