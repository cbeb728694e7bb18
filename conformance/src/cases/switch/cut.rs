//! Cases for the cut-through profile of switch.md §6 (`SWT-CUT-*`): a switch that declares
//! `cut_through` is given each frame's header when its first bit arrives (docs/conformance.md §3.3
//! `header`) and the frame whole at its end, with a port-to-port latency below the serialisation
//! time of the frames the cases send, so that a switch that cuts through begins its copies before
//! their input has ended.
//!
//! One judge reads every case's wires: for each copy of a DATA frame the switch begins on the
//! egress port, the arrivals of that frame on the input port (their first and last bit, their
//! FCS, their length against the one the header declares, and whether their sequence number was
//! the one the input link expected) say whether it may be sent whole, must end stomped, or may not
//! have been begun at all. A switch that never begins a frame before its end passes every case
//! here: the profile says what a copy begun early must do, not that one must be.

use super::{data, delivered, gpu_of, need_ports, one_per_port, sw_setup, tag, up_ports};
use crate::case::{Stop, check, check_eq};
use crate::cases::common::{Kind, kind_of, refcs};
use crate::ctx::{Ctx, Dir, Fault};
use crate::device::LinkParams;
use ethlink_protocol::{ETH_HEADER_LEN, LINK_HEADER_LEN, NETWORK_HEADER_LEN, fcs, frame_len};

/// The port frames come in by, and the one they leave by.
const IN: u16 = 0;
const OUT: u16 = 1;
/// The port-to-port latency the cases ask for: below the serialisation time of their frames.
const LATENCY_NS: u64 = 60;
/// RDMA data bytes of each frame: some 4 KB frames, 81 ns each at 400 Gb/s.
const LEN: usize = 4000;

/// A DATA frame that arrived at the input port.
#[derive(Debug, Clone, Copy)]
struct Arrival {
    first: u64,
    end: u64,
    seq: u32,
    tag: u32,
    /// Its FCS was good.
    fcs_good: bool,
    /// It is as long as its network header declares.
    length_ok: bool,
    /// It was an EthLink frame with the sequence number the input link expected (whatever its
    /// FCS).
    seq_ok: bool,
}

impl Arrival {
    /// The input link accepts it: the expected sequence number with a good FCS.
    fn accepted(&self) -> bool {
        self.seq_ok && self.fcs_good
    }
}

/// A DATA frame the switch began on the egress port.
#[derive(Debug, Clone, Copy)]
struct Copy {
    time: u64,
    seq: u32,
    tag: u32,
    stomped: bool,
}

/// Link and network fields of a DATA frame as it is on the wire, whatever its FCS: its sequence
/// number, tag and whether its length is the one its network header declares.
fn fields(bytes: &[u8]) -> Option<(u32, u32, bool)> {
    if bytes.get(12..14)? != ethlink_protocol::ETHERTYPE.to_be_bytes() {
        return None;
    }
    fields_any_ethertype(bytes)
}

/// As [`fields`], whatever the frame's EtherType: a frame of another EtherType shaped as a DATA
/// frame, which no EthLink link accepts (wire.md §7).
fn fields_any_ethertype(bytes: &[u8]) -> Option<(u32, u32, bool)> {
    let eth = ETH_HEADER_LEN;
    let vk = *bytes.get(eth)?;
    if vk & 0x0F != 0 {
        return None;
    }
    let seq = u32::from_be_bytes(bytes.get(eth + 2..eth + 6)?.try_into().ok()?);
    let nh = eth + LINK_HEADER_LEN;
    let t = tag(bytes.get(nh..)?)?;
    let plen = usize::from(u16::from_be_bytes(
        bytes.get(nh + 6..nh + 8)?.try_into().ok()?,
    ));
    let declared = frame_len(eth, NETWORK_HEADER_LEN + plen);
    Some((seq, t, bytes.len() == declared))
}

/// The DATA frames that arrived at [`IN`] since `from` in the log, with the go-back-N decision
/// of the input link on each (the first one is the expected one).
fn arrivals(ctx: &Ctx<'_>, from: usize) -> Vec<Arrival> {
    let mut expected: Option<u32> = None;
    let mut out = Vec::new();
    for l in ctx.log()[from..]
        .iter()
        .filter(|l| !l.from_dut && l.port == IN)
    {
        let Some((seq, tag, length_ok)) = fields_any_ethertype(&l.bytes) else {
            continue;
        };
        let fcs_good = fcs::check(&l.bytes);
        // A frame of another EtherType is never accepted, whatever its sequence number.
        let ours = fields(&l.bytes).is_some();
        let seq_ok = ours && expected.is_none_or(|e| e == seq);
        if seq_ok && fcs_good {
            expected = Some(seq.wrapping_add(1));
        }
        let first = l.first_ns.unwrap_or_else(|| {
            l.time_ns
                .saturating_sub(ctx.wire.serialise_ns(l.bytes.len()))
        });
        out.push(Arrival {
            first,
            end: l.time_ns,
            seq,
            tag,
            fcs_good,
            length_ok,
            seq_ok,
        });
    }
    out
}

/// The DATA frames the switch began on [`OUT`] since `from` in the log.
fn copies(ctx: &Ctx<'_>, from: usize) -> Vec<Copy> {
    ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == OUT)
        .filter_map(|l| {
            let (seq, tag, _) = fields(&l.bytes)?;
            Some(Copy {
                time: l.time_ns,
                seq,
                tag,
                stomped: fcs::is_stomped(&l.bytes),
            })
        })
        .collect()
}

/// What the judge saw, for the cases' own checks.
struct Seen {
    /// Copies begun before the end of the arrival they were forwarded from.
    cut: usize,
    stomped: usize,
    /// Frames with a copy ended with a good FCS (a replay on the egress link is the same
    /// frame).
    good: std::collections::BTreeSet<u32>,
}

/// Judges every copy begun on [`OUT`] since `from` against the arrivals on [`IN`] (SW-6-1,
/// SW-6-2, SW-6-8 to SW-6-11), the wire of [`OUT`] (SW-6-12), the sequence numbers of stomped
/// copies (LINK-3-12) and the counters of [`OUT`] (SW-8-5). `max_res` is the `max_residence` in
/// force.
fn judge(ctx: &mut Ctx<'_>, from: usize, max_res: u64) -> Result<Seen, Stop> {
    let ins = arrivals(ctx, from);
    let outs = copies(ctx, from);
    let mut seen = Seen {
        cut: 0,
        stomped: 0,
        good: std::collections::BTreeSet::new(),
    };
    for c in &outs {
        let of: Vec<&Arrival> = ins.iter().filter(|a| a.tag == c.tag).collect();
        let begun: Vec<&&Arrival> = of
            .iter()
            .filter(|a| a.first + LATENCY_NS <= c.time)
            .collect();
        check(
            !begun.is_empty(),
            "SW-6-1",
            format!(
                "the copy of frame {} begun on port {OUT} at {} ns began at least {LATENCY_NS} ns \
                 (the latency) after the first bit of an arrival of that frame",
                c.tag, c.time
            ),
            || {
                let firsts: Vec<u64> = of.iter().map(|a| a.first).collect();
                format!("its arrivals began at {firsts:?} ns")
            },
        )?;
        // The arrival it was cut from, if it was: the latest begun before it and still arriving.
        let cut_from = begun.iter().rev().find(|a| a.end > c.time).copied();
        if cut_from.is_some() {
            seen.cut += 1;
        }
        if c.stomped {
            seen.stomped += 1;
            if let Some(a) = cut_from {
                check(
                    a.seq_ok,
                    "SW-6-8",
                    format!(
                        "no frame is begun before its end unless its input link would accept it \
                         on its link header (frame {}, sequence number {})",
                        a.tag, a.seq
                    ),
                    || {
                        format!(
                            "a copy begun at {} ns, while that frame, a duplicate or beyond a gap \
                             (arriving {}..{} ns), was still arriving",
                            c.time, a.first, a.end
                        )
                    },
                )?;
            }
            continue;
        }
        seen.good.insert(c.tag);
        // A copy ended with a good FCS needs an arrival it may have been forwarded from: one the
        // input link accepted, of the length its header declares, that either had ended when the
        // copy began or ended within `max_residence` of its first bit.
        let fine = begun.iter().any(|a| {
            a.accepted() && a.length_ok && (a.end <= c.time || a.end - a.first <= max_res)
        });
        if fine {
            continue;
        }
        let Some(a) = cut_from.or_else(|| begun.last().copied()) else {
            continue;
        };
        let (req, what) = if !a.fcs_good {
            ("SW-6-2", "its FCS turned out bad")
        } else if !a.seq_ok {
            ("SW-6-11", "its input link did not accept it")
        } else if !a.length_ok {
            (
                "SW-6-9",
                "its end showed it of another length than its network header declares",
            )
        } else {
            (
                "SW-6-10",
                "its last byte arrived more than max_residence after its first",
            )
        };
        return Err(Stop::fail(
            req,
            format!(
                "the copy of frame {} begun at {} ns ends with a stomped FCS: {what} \
                 (arrival {}..{} ns)",
                c.tag, c.time, a.first, a.end
            ),
            "it ended with a good FCS",
        ));
    }
    // The egress wire carries one frame at a time: a replay waits for the frame in flight.
    let wire: Vec<(u64, usize)> = ctx.log()[from..]
        .iter()
        .filter(|l| l.from_dut && l.port == OUT)
        .map(|l| (l.time_ns, l.bytes.len()))
        .collect();
    for w in wire.windows(2) {
        let (t0, len0) = w[0];
        let free = t0 + ctx.wire.serialise_ns(len0);
        check(
            w[1].0 >= free,
            "SW-6-12",
            format!(
                "port {OUT} begins no frame while it is sending another (the frame of {len0} B \
                 begun at {t0} ns holds the wire until {free} ns at {} Gb/s)",
                ctx.wire.rate_gbps
            ),
            || format!("the next frame began at {} ns", w[1].0),
        )?;
    }
    // The next new frame takes the stomped one's sequence number.
    for (i, c) in outs.iter().enumerate().filter(|(_, c)| c.stomped) {
        check(
            outs[i + 1..].iter().any(|d| !d.stomped && d.seq == c.seq),
            "LINK-3-12",
            format!(
                "the sequence number {} of the copy stomped at {} ns is carried again by a later \
                 frame on port {OUT}",
                c.seq, c.time
            ),
            || "no later frame carries it".to_string(),
        )?;
    }
    check_eq(
        "SW-8-5",
        &format!("port{OUT}.tx_stomped.vc0 (the stomped copies on the wire)"),
        super::ctr(ctx, OUT, "tx_stomped", 0)?,
        seen.stomped as u64,
    )?;
    check_eq(
        "SW-8-5",
        &format!("port{OUT}.tx_frames.vc0 (the frames with a copy ended with a good FCS)"),
        super::ctr(ctx, OUT, "tx_frames", 0)?,
        seen.good.len() as u64,
    )?;
    //= docs/spec/switch.md#8-counters
    //= type=test
    //# SW-8-2 A switch MUST increment each counter of Table SW-T3 exactly when the table says, and
    //# at no other time.
    check_eq(
        "SW-8-2",
        &format!(
            "port{OUT}.tx_cut.vc0 (the copies begun before their frame's last byte had arrived, \
             Table SW-T3)"
        ),
        super::ctr(ctx, OUT, "tx_cut", 0)?,
        seen.cut as u64,
    )?;
    Ok(seen)
}

/// Resets the switch with the latency of these cases (and `max_res`), brings ports [`IN`] and
/// [`OUT`] up and gives it every frame's header ahead from now on. Returns where the log stands.
fn start(ctx: &mut Ctx<'_>, max_res: Option<u64>) -> Result<usize, Stop> {
    need_ports(ctx, 2)?;
    let n = ctx.desc.ports;
    let mut s = sw_setup(one_per_port(n), LinkParams::default(), max_res);
    s.latency_ns = Some(LATENCY_NS);
    up_ports(ctx, &s, &[IN, OUT], |_, c| c)?;
    ctx.cut_headers = true;
    Ok(ctx.log().len())
}

/// Sends frames `tags` from [`IN`] to [`OUT`].
fn send(ctx: &mut Ctx<'_>, tags: std::ops::Range<u32>) -> Result<(), Stop> {
    for k in tags {
        ctx.peer_submit(IN, 0, &data(gpu_of(OUT), gpu_of(IN), 0, k, LEN))?;
    }
    Ok(())
}

/// Checks that the peer of [`OUT`] received `want`, once each and in order.
fn received(ctx: &mut Ctx<'_>, req: &'static str, want: &[u32]) -> Result<(), Stop> {
    let got: Vec<u32> = delivered(ctx, OUT)?.iter().map(|x| x.1).collect();
    check(
        got == want,
        req,
        format!("port {OUT} received the frames {want:?}, once each and in order"),
        || format!("it received {got:?}"),
    )
}

/// The default `max_residence`, as the cases that do not set it judge SW-6-10.
const DEFAULT_MAX_RES_NS: u64 = 40_000;

/// SWT-CUT-1: damaged frames on the input, frames lost on the egress wire.
pub(super) fn stomps_damaged(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    // The first copy of every third frame arrives with a bad FCS; the peer of the egress port
    // loses the first good copy of every fifth, so that the switch replays on the egress link
    // while it cuts frames through.
    let mut damaged = std::collections::BTreeSet::new();
    ctx.set_hook(
        IN,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut
                && let Some((_, t, _)) = fields(bytes)
                && t % 3 == 1
                && damaged.insert(t)
            {
                let n = bytes.len();
                bytes[n / 2] ^= 0x5A;
            }
            Fault::Pass
        }),
    )?;
    let mut lost = std::collections::BTreeSet::new();
    ctx.set_hook(
        OUT,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::FromDut
                && fcs::check(bytes)
                && let Some((_, t, _)) = fields(bytes)
                && t % 5 == 2
                && lost.insert(t)
            {
                return Fault::Drop;
            }
            Fault::Pass
        }),
    )?;
    send(ctx, 0..30)?;
    ctx.run_for(100_000)?;
    let seen = judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    let bad_in = arrivals(ctx, from).iter().filter(|a| !a.fcs_good).count();
    if bad_in != 10 {
        return Err(Stop::Harness(format!(
            "the hook damaged {bad_in} frames, not 10"
        )));
    }
    received(ctx, "SW-6-2", &(0..30).collect::<Vec<_>>())?;
    let _ = seen.cut;
    Ok(())
}

/// SWT-CUT-2: frames beyond a gap, then duplicates, reach the switch on their headers.
pub(super) fn no_cut_unless_accepted(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    // Frame 5's first copy is lost on the input wire: the frames behind it arrive beyond a gap
    // until the peer replays from 5.
    let mut gone = false;
    let replay_ns = ctx.params.replay_timer_ns.unwrap_or(5_000);
    let window = (ctx.now() + 20_000, ctx.now() + 20_000 + replay_ns * 3 / 2);
    ctx.set_hook(
        IN,
        Box::new(move |dir, at, bytes| {
            match dir {
                Dir::ToDut => {
                    if !gone && fields(bytes).is_some_and(|(_, t, _)| t == 5) {
                        gone = true;
                        return Fault::Drop;
                    }
                }
                // Then the switch's ACKs are lost for a while: the peer's replay timer runs out
                // and it sends again frames the switch has accepted.
                Dir::FromDut => {
                    if (window.0..window.1).contains(&at)
                        && matches!(kind_of(bytes), Some(Kind::Ack(_)))
                    {
                        return Fault::Drop;
                    }
                }
            }
            Fault::Pass
        }),
    )?;
    send(ctx, 0..12)?;
    ctx.run_for(window.0 - ctx.now())?;
    send(ctx, 12..20)?;
    ctx.run_for(window.1 - ctx.now() + 40_000)?;
    let ins = arrivals(ctx, from);
    let refused = ins.iter().filter(|a| !a.seq_ok).count();
    let duplicates = ins.iter().filter(|a| !a.seq_ok && a.tag >= 12).count();
    if refused == 0 || duplicates == 0 {
        return Err(Stop::Harness(format!(
            "the switch saw {refused} frames its link could not accept, {duplicates} of them \
             duplicates: the case needs both kinds"
        )));
    }
    judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    received(ctx, "SW-6-11", &(0..20).collect::<Vec<_>>())
}

/// Makes the wire into [`IN`] apply `change` to the first copy of frame 3, then mend its FCS:
/// the peer's replay of it arrives unchanged.
fn change_first_copy_of_3(
    ctx: &mut Ctx<'_>,
    mut change: impl FnMut(&mut [u8]) + Send + 'static,
) -> Result<(), Stop> {
    let mut done = false;
    ctx.set_hook(
        IN,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && !done && fields(bytes).is_some_and(|(_, t, _)| t == 3) {
                done = true;
                change(bytes);
                refcs(bytes);
            }
            Fault::Pass
        }),
    )
}

/// SWT-CUT-5: a frame whose sequence number differs from the one expected only in its high bits
/// (16 to 19 of the 20), whole and with a good FCS: a switch that reads the sequence number
/// short takes it for the expected frame and forwards it, then forwards the replay too.
pub(super) fn no_cut_on_a_high_bit_gap(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    // Frame 3's first copy carries sequence number 3 + 0x10000: beyond a gap of 2^16 frames.
    change_first_copy_of_3(ctx, |bytes| bytes[ETH_HEADER_LEN + 3] ^= 0x01)?;
    send(ctx, 0..8)?;
    ctx.run_for(30_000)?;
    judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    received(ctx, "SW-6-11", &(0..8).collect::<Vec<_>>())
}

/// SWT-CUT-6: frames queued behind a stalled egress: once it drains, the frames whose end had
/// arrived are forwarded whole and are not counted cut through, the ones still arriving may be.
pub(super) fn cut_counted_when_begun_early(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    ctx.peer_hold(OUT, true)?;
    send(ctx, 0..40)?;
    ctx.run_for(20_000)?;
    ctx.peer_hold(OUT, false)?;
    ctx.run_for(40_000)?;
    judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    received(ctx, "SW-4-4", &(0..40).collect::<Vec<_>>())
}

/// SWT-CUT-7: a frame whose EtherType is not EthLink's, its link header otherwise that of the
/// expected DATA frame: its input link does not accept it (wire.md §7), so the switch may not
/// begin it on its header, and the peer's replay is forwarded once.
pub(super) fn no_cut_of_a_foreign_frame(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    change_first_copy_of_3(ctx, |bytes| bytes[12..14].copy_from_slice(&[0x88, 0xB6]))?;
    send(ctx, 0..8)?;
    ctx.run_for(40_000)?;
    judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    received(ctx, "SW-6-11", &(0..8).collect::<Vec<_>>())
}

/// SWT-CUT-3: frames whose end shows another length than their header declares.
pub(super) fn stomps_wrong_length(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, None)?;
    // Frame 3 ends 8 bytes longer than its header says, frame 7 8 bytes shorter; both with a
    // good FCS, so that the input link accepts them and the switch discards them as malformed.
    ctx.set_hook(
        IN,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut
                && let Some((_, t, _)) = fields(bytes)
            {
                let n = bytes.len();
                if t == 3 {
                    bytes.splice(n - 4..n - 4, [0u8; 8]);
                    refcs(bytes);
                } else if t == 7 {
                    bytes.drain(n - 12..n - 4);
                    refcs(bytes);
                }
            }
            Fault::Pass
        }),
    )?;
    send(ctx, 0..12)?;
    ctx.run_for(60_000)?;
    judge(ctx, from, DEFAULT_MAX_RES_NS)?;
    let want: Vec<u32> = (0..12).filter(|t| *t != 3 && *t != 7).collect();
    received(ctx, "SW-6-9", &want)?;
    check_eq(
        "SW-7-1",
        &format!("port{IN}.discard_malformed.vc0"),
        super::ctr(ctx, IN, "discard_malformed", 0)?,
        2,
    )
}

/// `max_residence` of SWT-CUT-4, and how much later than at line rate its stalled frame ends.
const STALL_MAX_RES_NS: u64 = 2_000;
const STALL_NS: u64 = 3_000;

/// SWT-CUT-4: a frame whose last byte arrives more than `max_residence` after its first.
pub(super) fn stomps_stalled(ctx: &mut Ctx<'_>) -> Result<(), Stop> {
    let from = start(ctx, Some(STALL_MAX_RES_NS))?;
    ctx.set_hook(
        IN,
        Box::new(move |dir, _, bytes| {
            if dir == Dir::ToDut && fields(bytes).is_some_and(|(_, t, _)| t == 2) {
                return Fault::Stall(STALL_NS);
            }
            Fault::Pass
        }),
    )?;
    // Frame 2 travels alone, so that nothing is behind it on the wire while it stalls.
    send(ctx, 0..2)?;
    ctx.run_for(10_000)?;
    send(ctx, 2..3)?;
    ctx.run_for(10_000)?;
    send(ctx, 3..6)?;
    ctx.run_for(30_000)?;
    judge(ctx, from, STALL_MAX_RES_NS)?;
    received(ctx, "SW-6-10", &(0..6).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::RefSwitch;

    /// The reference switch does cut frames through in these cases, and stomps in each: the
    /// cases exercise what they judge.
    #[test]
    fn the_reference_cuts_through_and_stomps_in_every_case() {
        type Run = fn(&mut Ctx<'_>) -> Result<(), Stop>;
        let runs: [(&str, Run, u64, bool); 4] = [
            ("stomps_damaged", stomps_damaged, DEFAULT_MAX_RES_NS, true),
            (
                "no_cut_unless_accepted",
                no_cut_unless_accepted,
                DEFAULT_MAX_RES_NS,
                false,
            ),
            (
                "stomps_wrong_length",
                stomps_wrong_length,
                DEFAULT_MAX_RES_NS,
                true,
            ),
            ("stomps_stalled", stomps_stalled, STALL_MAX_RES_NS, true),
        ];
        for (name, run, max_res, stomps) in runs {
            let mut dut = RefSwitch::default();
            let desc = crate::device::Device::hello(&mut dut).expect("hello");
            let mut ctx = Ctx::new(&mut dut, desc);
            let r = run(&mut ctx);
            assert!(r.is_ok(), "{name}: {:?}", r.err());
            let seen = judge(&mut ctx, 0, max_res).expect("judged");
            assert!(seen.cut > 0, "{name}: no frame was cut through");
            assert_eq!(seen.stomped > 0, stomps, "{name}: {} stomped", seen.stomped);
        }
    }
}
