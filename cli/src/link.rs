//! `ethlink link`: an LLR and CBFC experiment on one simulated link.
//!
//! The experiment is the harness of `ethlink-link` ([`ethlink_link::harness`]): two link ends
//! joined by a wire with a line rate, a propagation delay and a seeded fault injector. End A
//! offers a stream of DATA frames (end B too with `--bidirectional`); the receiving upper layer
//! drains its buffer at a chosen fraction of the line rate. The same scenario is run a second
//! time with every fault removed (no loss, drop, bit errors, duplicates, control loss or
//! outages; everything else equal) so that the goodput of the faulty link can be compared with
//! the goodput of the same link without faults.
//!
//! Every number comes from the simulation: one seed gives one output, byte for byte.

use std::fmt::Write as _;

use clap::Args;
use ethlink_link::harness::{Faults, MIN_FRAME, Pair, Report, Scenario, ScenarioError, Wire};
use ethlink_link::{Config, ConfigError, Duration};
use ethlink_protocol::fcs::FCS_LEN;
use ethlink_protocol::{ETH_HEADER_LEN, LINK_HEADER_LEN, MAX_FRAME_LEN, WIRE_OVERHEAD};
use serde::Serialize;

/// Default of `--max-events`: a few tens of seconds of a release build at most.
pub const DEFAULT_MAX_EVENTS: u64 = 50_000_000;

/// Most VCs a link has.
const MAX_VCS: u8 = 8;
/// Bytes of a harness DATA frame that are not payload (Ethernet header, link header, FCS): the
/// payload the goodput counts is the network header and the transactions.
const NON_PAYLOAD: usize = ETH_HEADER_LEN + LINK_HEADER_LEN + FCS_LEN;

fn defaults() -> Config {
    Config::default()
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Arguments of `link`.
#[derive(Debug, Clone, Args)]
pub struct LinkArgs {
    /// Line rate of both directions, Gb/s (0.001..=100000).
    #[arg(long, value_name = "GBPS", default_value_t = Wire::default().rate_gbps,
          value_parser = parse_f64, allow_hyphen_values = true)]
    pub rate_gbps: f64,
    /// Cable length, metres; the propagation delay is 5 ns per metre.
    #[arg(long, value_name = "M", default_value_t = 5.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub cable_m: f64,
    /// One-way propagation delay, ns (0..=1e9); overrides --cable-m.
    #[arg(long, value_name = "NS", value_parser = parse_f64, allow_hyphen_values = true)]
    pub propagation_ns: Option<f64>,
    /// Length of each DATA frame on the wire, destination MAC through FCS, bytes (64..=9216).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 4096,
        allow_negative_numbers = true
    )]
    pub frame_size: usize,
    /// DATA frames end A offers (and end B too with --bidirectional), at most 100000000.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        allow_negative_numbers = true
    )]
    pub frames: u64,
    /// VCs the traffic uses, round-robin (1..=8). The link has 4 VCs, or this many if more.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub vcs: u8,
    /// Probability that a DATA frame arrives damaged, failing its FCS (0..=1).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub loss: f64,
    /// Probability that a DATA frame vanishes without trace (0..=1; --loss + --drop <= 1).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub drop: f64,
    /// Consecutive DATA frames each --loss or --drop event takes (0 and 1 mean one).
    #[arg(
        long,
        value_name = "FRAMES",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub burst: u32,
    /// Bit error rate on every frame of both directions (0..=1).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub ber: f64,
    /// Probability that a frame (of any kind) arrives twice (0..=1).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub duplicate: f64,
    /// Probability that a control frame (ACK, NACK, CF, CC, INIT, INIT_ECHO) vanishes (0..=1).
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub control_loss: f64,
    /// An outage of the physical link: it goes down START ns into the run for DURATION ns and
    /// frames in flight are lost. Repeat for several outages; they must not overlap.
    #[arg(long = "link-down-ns", value_name = "START:DURATION", value_parser = parse_outage)]
    pub link_down_ns: Vec<Outage>,
    /// Rate at which each receiver drains its buffer, percent of the line rate (0..=100; 0
    /// never drains).
    #[arg(long, value_name = "PERCENT", default_value_t = 100.0, value_parser = parse_f64,
          allow_hyphen_values = true)]
    pub drain: f64,
    /// Most frames in the replay buffer (1..=--window) [default: 115, or --window if smaller].
    #[arg(long, value_name = "FRAMES", allow_negative_numbers = true)]
    pub replay_max_frames: Option<u32>,
    /// Most bytes in the replay buffer (9216..=2^30).
    #[arg(long, value_name = "BYTES", default_value_t = defaults().replay_max_bytes,
          allow_negative_numbers = true)]
    pub replay_max_bytes: u32,
    /// Bytes accepted between cumulative ACKs (64..=2^20).
    #[arg(long, value_name = "BYTES", default_value_t = defaults().ack_spacing,
          allow_negative_numbers = true)]
    pub ack_spacing: u32,
    /// Longest an accepted frame waits for its ACK, ns (at least 1).
    #[arg(long, value_name = "NS", default_value_t = ns(defaults().ack_timer),
          allow_negative_numbers = true)]
    pub ack_timer_ns: u64,
    /// Time without ACK progress before the whole replay buffer is replayed, ns (at least 1).
    #[arg(long, value_name = "NS", default_value_t = ns(defaults().replay_timer),
          allow_negative_numbers = true)]
    pub replay_timer_ns: u64,
    /// Replays without progress before FLUSH (1..=255).
    #[arg(long, value_name = "N", default_value_t = defaults().replay_count_max,
          allow_negative_numbers = true)]
    pub replay_count_max: u8,
    /// LLR window: most unacknowledged sequenced frames (1..=2^19).
    #[arg(long, value_name = "FRAMES", default_value_t = defaults().llr_window,
          allow_negative_numbers = true)]
    pub window: u32,
    /// Bytes per credit: a power of two in 32..=2048.
    #[arg(long, value_name = "BYTES", default_value_t = defaults().credit_size,
          allow_negative_numbers = true)]
    pub credit_size: u16,
    /// Credits each receiver grants on every VC of the link (1..2^19); one frame must fit.
    #[arg(long, value_name = "N", default_value_t = defaults().rx_credits[0],
          allow_negative_numbers = true)]
    pub credits: u32,
    /// Freed credits that trigger a CF (at least 1).
    #[arg(long, value_name = "N", default_value_t = defaults().cf_min_credits,
          allow_negative_numbers = true)]
    pub cf_min_credits: u32,
    /// Period of CC frames while the replay buffer is empty, ns (at least 1).
    #[arg(long, value_name = "NS", default_value_t = ns(defaults().cc_interval),
          allow_negative_numbers = true)]
    pub cc_interval_ns: u64,
    /// Frames the source keeps queued in the link per VC (at least 1).
    #[arg(
        long,
        value_name = "FRAMES",
        default_value_t = 4,
        allow_negative_numbers = true
    )]
    pub source_window: u32,
    /// End B offers the same stream to end A.
    #[arg(long)]
    pub bidirectional: bool,
    /// Seed of the fault injector.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 1,
        allow_negative_numbers = true
    )]
    pub seed: u64,
    /// Simulated time after which the run stops, ns.
    #[arg(long, value_name = "NS", default_value_t = Scenario::default().time_limit_ns,
          allow_negative_numbers = true)]
    pub time_limit_ns: u64,
    /// Most events the simulation processes (each run: with faults, and without); a run that
    /// reaches it stops there and reports it (`event_budget_hit`), so that every run ends in a
    /// time that grows with this number, whatever the other options (at least 1000).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_EVENTS,
          allow_negative_numbers = true)]
    pub max_events: u64,
    /// Print one JSON object (docs/cli-json.md) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One outage of the physical link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outage {
    /// When the link goes down, ns from the start of the run.
    pub start_ns: u64,
    /// How long it stays down, ns.
    pub duration_ns: u64,
}

fn parse_f64(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("{s:?} is not a finite number")),
    }
}

fn parse_outage(s: &str) -> Result<Outage, String> {
    let (start, duration) = s
        .split_once(':')
        .ok_or_else(|| format!("{s:?} is not START:DURATION (two whole numbers of ns)"))?;
    let whole = |part: &str, what: &str| {
        part.trim()
            .parse::<u64>()
            .map_err(|_| format!("{what} {part:?} in {s:?} is not a whole number of ns"))
    };
    let outage = Outage {
        start_ns: whole(start, "START")?,
        duration_ns: whole(duration, "DURATION")?,
    };
    if outage.duration_ns == 0 {
        return Err(format!("DURATION in {s:?} must be at least 1 ns"));
    }
    if outage.start_ns.checked_add(outage.duration_ns).is_none() {
        return Err(format!("START + DURATION in {s:?} overflows"));
    }
    Ok(outage)
}

/// The parameters of a run, as resolved from the arguments and the defaults.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parameters {
    /// Line rate, Gb/s.
    pub rate_gbps: f64,
    /// One-way propagation delay, ns.
    pub propagation_ns: f64,
    /// DATA frame length on the wire, destination MAC through FCS.
    pub frame_size: usize,
    /// Frames offered per direction.
    pub frames: u64,
    /// VCs the traffic uses.
    pub vcs: u8,
    /// VCs configured on the link.
    pub link_vcs: u8,
    /// Probability of a damaged DATA frame.
    pub loss: f64,
    /// Probability of a vanished DATA frame.
    pub drop: f64,
    /// Frames per loss or drop event.
    pub burst: u32,
    /// Bit error rate.
    pub ber: f64,
    /// Probability of a duplicated frame.
    pub duplicate: f64,
    /// Probability of a vanished control frame.
    pub control_loss: f64,
    /// Outages of the physical link, in time order.
    pub link_down_ns: Vec<Outage>,
    /// Receiver drain rate, percent of the line rate.
    pub drain_percent: f64,
    /// Most frames in the replay buffer.
    pub replay_max_frames: u32,
    /// Most bytes in the replay buffer.
    pub replay_max_bytes: u32,
    /// Bytes between cumulative ACKs.
    pub ack_spacing: u32,
    /// ACK timer, ns.
    pub ack_timer_ns: u64,
    /// Replay timer, ns.
    pub replay_timer_ns: u64,
    /// Replays without progress before FLUSH.
    pub replay_count_max: u8,
    /// LLR window, frames.
    pub window: u32,
    /// Bytes per credit.
    pub credit_size: u16,
    /// Credits granted per VC.
    pub credits: u32,
    /// Freed credits that trigger a CF.
    pub cf_min_credits: u32,
    /// CC period, ns.
    pub cc_interval_ns: u64,
    /// Frames the source keeps queued per VC.
    pub source_window: u32,
    /// Both ends offer traffic.
    pub bidirectional: bool,
    /// Seed of the fault injector.
    pub seed: u64,
    /// Simulated time limit, ns.
    pub time_limit_ns: u64,
    /// Most events each run may process.
    pub max_events: u64,
}

/// Latency from submission to delivery, ns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest.
    pub max: f64,
}

/// Frames the fault injector hit, both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Injected {
    /// Frames damaged (bad FCS): `--loss` and `--ber`.
    pub damaged: u64,
    /// Frames that vanished: `--drop` and `--control-loss`.
    pub dropped: u64,
    /// Frames delivered twice.
    pub duplicated: u64,
    /// Frames in flight when an outage began.
    pub outage: u64,
}

/// What one run of `ethlink link` measured. Fields are in output order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkReport {
    /// The parameters used.
    pub parameters: Parameters,
    /// DATA frames offered, both directions.
    pub offered: u64,
    /// Distinct frames delivered.
    pub delivered: u64,
    /// Every VC delivered its frames in submission order.
    pub in_order: bool,
    /// Extra copies delivered.
    pub duplicates: u64,
    /// Offered frames never delivered.
    pub lost: u64,
    /// Frames the link reported of unknown fate (FLUSH or link down).
    pub unknown_fate: u64,
    /// Delivered frames whose bytes differ from those sent.
    pub corrupted: u64,
    /// Payload bytes (network header and transactions) delivered.
    pub delivered_payload_bytes: u64,
    /// Goodput, Gb/s: payload bits delivered over the time from the first DATA frame sent to
    /// the last delivered.
    pub goodput_gbps: f64,
    /// Goodput of the same scenario without faults, Gb/s.
    pub loss_free_goodput_gbps: f64,
    /// `goodput_gbps / loss_free_goodput_gbps`; `None` when the run without faults delivered
    /// nothing.
    pub goodput_ratio: Option<f64>,
    /// Line rate, Gb/s.
    pub line_rate_gbps: f64,
    /// Most goodput the line rate allows with this frame size: the line rate times payload
    /// bytes over frame bytes plus preamble, SFD and inter-frame gap, per direction.
    pub ideal_goodput_gbps: f64,
    /// Latency from submission to delivery.
    pub latency_ns: Latency,
    /// DATA frames retransmitted, both ends.
    pub replays: u64,
    /// NACKs sent by the receivers.
    pub nacks: u64,
    /// Replays started by the replay timer.
    pub replay_timeouts: u64,
    /// FLUSH entries.
    pub flushes: u64,
    /// Times a VC with frames waiting ran out of credit.
    pub credit_stalls: u64,
    /// Frames discarded with a bad FCS at the receivers.
    pub fcs_errors: u64,
    /// Duplicate DATA frames the receivers discarded.
    pub duplicates_discarded: u64,
    /// Times an end entered UP: 2 for a run without re-initialisation, 2 more for each
    /// re-initialisation of the link (after FLUSH or an outage).
    pub link_ups: u64,
    /// Largest replay buffer seen at either end, bytes.
    pub max_replay_bytes: u64,
    /// Largest receive-buffer occupancy seen at either end, bytes.
    pub max_rx_buffer_bytes: u64,
    /// Receive buffer each end advertises over all VCs of the link, bytes.
    pub rx_buffer_capacity_bytes: u64,
    /// Time from the first DATA frame sent to the last delivered, ns.
    pub data_time_ns: u64,
    /// Simulated time at the end of the run, ns.
    pub simulated_time_ns: u64,
    /// The time limit stopped the run before the traffic completed.
    pub timed_out: bool,
    /// The run without faults was stopped by the time limit too.
    pub loss_free_timed_out: bool,
    /// `--max-events` stopped the run before the traffic completed or the time limit came.
    pub event_budget_hit: bool,
    /// `--max-events` stopped the run without faults.
    pub loss_free_event_budget_hit: bool,
    /// Times a replay buffer or a receive buffer went beyond its bound. Always 0 on a
    /// conformant link.
    pub bound_violations: u64,
    /// Frames the fault injector hit.
    pub injected: Injected,
}

/// Rounds to 3 decimals, so that the output does not depend on the last bits of a float.
fn round3(x: f64) -> f64 {
    let r = (x * 1000.0).round() / 1000.0;
    // No "-0.0" in the output.
    if r == 0.0 { 0.0 } else { r }
}

/// The command-line option behind a field of [`Config`] or [`Scenario`].
fn option_of(field: &str) -> &'static str {
    match field {
        "rate_gbps" => "--rate-gbps",
        "propagation_ns" => "--propagation-ns",
        "frame_size" => "--frame-size",
        "frames" => "--frames",
        "vcs" => "--vcs",
        "loss" => "--loss",
        "drop" => "--drop",
        "burst" => "--burst",
        "ber" => "--ber",
        "duplicate" => "--duplicate",
        "control_loss" => "--control-loss",
        "outage" => "--link-down-ns",
        "drain" => "--drain",
        "replay_max_frames" => "--replay-max-frames",
        "replay_max_bytes" => "--replay-max-bytes",
        "ack_spacing" => "--ack-spacing",
        "ack_timer" => "--ack-timer-ns",
        "replay_timer" => "--replay-timer-ns",
        "replay_count_max" => "--replay-count-max",
        "llr_window" => "--window",
        "window" => "--source-window",
        "credit_size" => "--credit-size",
        "rx_credits" => "--credits",
        "cf_min_credits" => "--cf-min-credits",
        "cc_interval" => "--cc-interval-ns",
        _ => "",
    }
}

/// A configuration error as the command line names it.
fn config_message(e: &ConfigError, args: &LinkArgs) -> String {
    let option = option_of(e.field);
    let rule = e
        .rule
        .replace("llr_window", &format!("--window ({})", args.window))
        .replace("mfs", &format!("the MFS ({MAX_FRAME_LEN})"));
    if option.is_empty() {
        // A parameter the command line does not set: a fault of this program.
        format!("link parameter {e}")
    } else {
        format!("{option} {}: {rule}", e.value)
    }
}

/// A scenario error as the command line names it.
fn scenario_message(e: &ScenarioError, args: &LinkArgs) -> String {
    match e.field {
        "propagation_ns" if args.propagation_ns.is_none() => format!(
            "--cable-m {}: the propagation delay (5 ns per metre) must be 0..=1e9 ns",
            args.cable_m
        ),
        "drain" => format!(
            "--drain {}: must be a percentage of the line rate in 0..=100",
            args.drain
        ),
        "vcs" => format!("--vcs {}: must be 1..={MAX_VCS}", args.vcs),
        "frame_size" => format!(
            "--frame-size {}: must be {MIN_FRAME}..={MAX_FRAME_LEN} bytes",
            args.frame_size
        ),
        "loss" if args.loss + args.drop > 1.0 && (0.0..=1.0).contains(&args.loss) => format!(
            "--loss {} + --drop {} must not exceed 1",
            args.loss, args.drop
        ),
        field => match (option_of(field), value_of(field, args)) {
            ("", _) => format!("scenario {e}"),
            (option, Some(value)) if !e.reason.starts_with(&value) => {
                format!("{option} {value}: {}", e.reason)
            }
            (option, _) => format!("{option}: {}", e.reason),
        },
    }
}

/// The value given for a field the scenario checks, as the command line spells it.
fn value_of(field: &str, args: &LinkArgs) -> Option<String> {
    Some(match field {
        "rate_gbps" => args.rate_gbps.to_string(),
        "propagation_ns" => args.propagation_ns?.to_string(),
        "frames" => args.frames.to_string(),
        "loss" => args.loss.to_string(),
        "drop" => args.drop.to_string(),
        "burst" => args.burst.to_string(),
        "ber" => args.ber.to_string(),
        "duplicate" => args.duplicate.to_string(),
        "control_loss" => args.control_loss.to_string(),
        "window" => args.source_window.to_string(),
        _ => return None,
    })
}

/// Builds the scenario the arguments describe, checked; the error names the option at fault.
pub fn scenario(args: &LinkArgs) -> Result<(Scenario, Parameters), String> {
    let d = defaults();
    if args.max_events < 1000 {
        return Err(format!(
            "--max-events {}: must be at least 1000",
            args.max_events
        ));
    }
    if args.cable_m < 0.0 {
        return Err(format!("--cable-m {}: must not be negative", args.cable_m));
    }
    let propagation_ns = args
        .propagation_ns
        .unwrap_or_else(|| Wire::cable_ns(args.cable_m));
    let link_vcs = d.vcs.max(args.vcs);
    let replay_max_frames = args
        .replay_max_frames
        .unwrap_or_else(|| d.replay_max_frames.min(args.window.max(1)));
    let mut outages = args.link_down_ns.clone();
    outages.sort_by_key(|o| (o.start_ns, o.duration_ns));
    for pair in outages.windows(2) {
        if let [a, b] = pair
            && b.start_ns < a.start_ns + a.duration_ns
        {
            return Err(format!(
                "--link-down-ns {}:{} and {}:{} overlap",
                a.start_ns, a.duration_ns, b.start_ns, b.duration_ns
            ));
        }
    }
    let configure = |base: Config| {
        Config {
            replay_max_frames,
            replay_max_bytes: args.replay_max_bytes,
            ack_spacing: args.ack_spacing,
            ack_timer: Duration::from_nanos(args.ack_timer_ns),
            replay_timer: Duration::from_nanos(args.replay_timer_ns),
            replay_count_max: args.replay_count_max,
            llr_window: args.window,
            credit_size: args.credit_size,
            cf_min_credits: args.cf_min_credits,
            cc_interval: Duration::from_nanos(args.cc_interval_ns),
            ..base
        }
        .with_uniform_credits(link_vcs, args.credits)
    };
    let base = Scenario::default();
    let mut s = Scenario {
        a: configure(base.a.clone()),
        b: configure(base.b.clone()),
        ..base
    };
    s.a.validate().map_err(|e| config_message(&e, args))?;
    s.b.validate().map_err(|e| config_message(&e, args))?;
    s.wire = Wire {
        rate_gbps: args.rate_gbps,
        propagation_ns,
        faults: Faults {
            loss: args.loss,
            drop: args.drop,
            burst: args.burst,
            ber: args.ber,
            duplicate: args.duplicate,
            control_loss: args.control_loss,
        },
    };
    s.traffic.frames = args.frames;
    s.traffic.frame_size = args.frame_size;
    s.traffic.vcs = args.vcs;
    s.traffic.bidirectional = args.bidirectional;
    s.traffic.window = args.source_window;
    s.drain = args.drain / 100.0;
    s.outages = outages
        .iter()
        .map(|o| (o.start_ns, o.duration_ns))
        .collect();
    s.seed = args.seed;
    s.time_limit_ns = args.time_limit_ns;
    s.validate().map_err(|e| scenario_message(&e, args))?;
    // A frame that costs more credits than a VC grants could never be sent.
    let cost = args
        .frame_size
        .div_ceil(usize::from(args.credit_size.max(1)));
    if cost > args.credits as usize {
        return Err(format!(
            "--credits {}: a frame of {} bytes costs {cost} credits of {} bytes; grant at least \
             that many",
            args.credits, args.frame_size, args.credit_size
        ));
    }
    let parameters = Parameters {
        rate_gbps: args.rate_gbps,
        propagation_ns: round3(propagation_ns),
        frame_size: args.frame_size,
        frames: args.frames,
        vcs: args.vcs,
        link_vcs,
        loss: args.loss,
        drop: args.drop,
        burst: args.burst,
        ber: args.ber,
        duplicate: args.duplicate,
        control_loss: args.control_loss,
        link_down_ns: outages,
        drain_percent: args.drain,
        replay_max_frames,
        replay_max_bytes: args.replay_max_bytes,
        ack_spacing: args.ack_spacing,
        ack_timer_ns: args.ack_timer_ns,
        replay_timer_ns: args.replay_timer_ns,
        replay_count_max: args.replay_count_max,
        window: args.window,
        credit_size: args.credit_size,
        credits: args.credits,
        cf_min_credits: args.cf_min_credits,
        cc_interval_ns: args.cc_interval_ns,
        source_window: args.source_window,
        bidirectional: args.bidirectional,
        seed: args.seed,
        time_limit_ns: args.time_limit_ns,
        max_events: args.max_events,
    };
    Ok((s, parameters))
}

/// A run's report, and whether the event budget stopped it.
type Outcome = (Report, bool);

/// Runs `scenario` to its end, its time limit or `max_events` events, whichever comes first.
fn simulate(scenario: Scenario, max_events: u64) -> Result<Outcome, String> {
    let cannot = |e: ScenarioError| format!("the scenario cannot run: {e}");
    let mut pair = Pair::new(scenario.clone()).map_err(cannot)?;
    // Advance in slices of simulated time, each sized so that it takes a fraction of the budget.
    let mut slice = 1_000u64;
    let mut at = 0u64;
    let limit = scenario.time_limit_ns;
    while !pair.done() && at < limit && pair.steps() < max_events {
        let before = pair.steps();
        at = at.saturating_add(slice).min(limit);
        pair.run_until(at, true);
        if pair.steps() - before < max_events / 64 {
            slice = slice.saturating_mul(2);
        } else {
            slice = (slice / 2).max(1);
        }
    }
    if pair.steps() < max_events {
        return Ok((pair.run(), false));
    }
    // The budget ran out: the same run, deterministic, stopped at the same instant.
    let stopped = Scenario {
        time_limit_ns: pair.now_ns(),
        ..scenario
    };
    let mut again = Pair::new(stopped).map_err(cannot)?;
    Ok((again.run(), true))
}

/// Settings under which the traffic cannot complete, whatever the time limit: one line each,
/// for standard error before the run starts (the run still goes on, to its time limit or
/// `--max-events`).
pub fn hopeless(args: &LinkArgs) -> Vec<String> {
    let mut v = Vec::new();
    if args.frames == 0 {
        return v;
    }
    if args.control_loss >= 1.0 {
        v.push(
            "--control-loss 1: every control frame vanishes, so the link never comes up and \
             no frame is delivered"
                .to_owned(),
        );
    }
    if args.ber >= 1.0 {
        v.push("--ber 1: every frame is damaged, so no frame is delivered".to_owned());
    }
    if args.loss + args.drop >= 1.0 {
        v.push("--loss + --drop = 1: every DATA frame is lost, so none is delivered".to_owned());
    }
    if args.drain <= 0.0 {
        let buffer = u64::from(args.credits) * u64::from(args.credit_size);
        let fit = buffer / (args.frame_size.max(1) as u64);
        if fit < args.frames {
            v.push(format!(
                "--drain 0: the receivers never drain, so at most {fit} of the {} frames fit \
                 in their buffers and the rest are never delivered",
                args.frames
            ));
        }
    }
    v
}

/// Runs the experiment the arguments describe, and the same scenario without faults.
pub fn run(args: &LinkArgs) -> Result<LinkReport, String> {
    let (lossy, parameters) = scenario(args)?;
    let mut clean = lossy.clone();
    clean.wire.faults = Faults::default();
    clean.outages.clear();
    let max = args.max_events;
    let (report, loss_free) = if clean == lossy {
        let r = simulate(lossy, max)?;
        (r.clone(), r)
    } else {
        // The two runs are independent: run them side by side.
        std::thread::scope(|scope| {
            let other = scope.spawn(move || simulate(clean, max));
            let r = simulate(lossy, max);
            let l = other
                .join()
                .unwrap_or_else(|_| Err("the run without faults failed".to_owned()));
            Ok::<_, String>((r?, l?))
        })?
    };
    Ok(summarise(parameters, &report, &loss_free))
}

fn summarise(parameters: Parameters, outcome: &Outcome, loss_free: &Outcome) -> LinkReport {
    let (r, budget_hit) = (&outcome.0, outcome.1);
    let (loss_free, loss_free_budget_hit) = (&loss_free.0, loss_free.1);
    let sum = |f: fn(&ethlink_link::Counters) -> u64| r.counters.iter().map(f).sum::<u64>();
    let goodput = round3(r.goodput_gbps);
    let clean = round3(loss_free.goodput_gbps);
    let [mean, p50, p99, max] = r.latency_ns.map(round3);
    let frame = parameters.frame_size as f64;
    let ideal = parameters.rate_gbps * (frame - NON_PAYLOAD as f64)
        / (frame + WIRE_OVERHEAD as f64)
        * if parameters.bidirectional { 2.0 } else { 1.0 };
    LinkReport {
        offered: r.offered,
        delivered: r.delivered,
        in_order: r.in_order,
        duplicates: r.duplicates,
        lost: r.lost,
        unknown_fate: r.unknown_fate,
        corrupted: r.corrupted,
        delivered_payload_bytes: r.delivered_payload_bytes,
        goodput_gbps: goodput,
        loss_free_goodput_gbps: clean,
        goodput_ratio: (loss_free.goodput_gbps > 0.0)
            .then(|| round3(r.goodput_gbps / loss_free.goodput_gbps)),
        line_rate_gbps: parameters.rate_gbps,
        ideal_goodput_gbps: round3(ideal),
        latency_ns: Latency {
            mean,
            p50,
            p99,
            max,
        },
        replays: sum(|c| c.frames_replayed),
        nacks: sum(|c| c.nacks_sent),
        replay_timeouts: sum(|c| c.replay_timeouts),
        flushes: sum(|c| c.flushes),
        credit_stalls: sum(ethlink_link::Counters::credit_stalls_total),
        fcs_errors: sum(|c| c.rx_fcs_errors),
        duplicates_discarded: sum(|c| c.duplicates),
        link_ups: sum(|c| c.link_ups),
        max_replay_bytes: r.max_replay_bytes,
        max_rx_buffer_bytes: r.max_rx_buffer_bytes,
        rx_buffer_capacity_bytes: r.rx_buffer_capacity_bytes,
        data_time_ns: r.data_time_ns,
        // A run the time limit stopped lasted until the limit, even when nothing happened after
        // its last event (an outage reaching past the limit).
        simulated_time_ns: if r.timed_out && !budget_hit {
            r.end_ns.max(parameters.time_limit_ns)
        } else {
            r.end_ns
        },
        timed_out: r.timed_out && !budget_hit,
        loss_free_timed_out: loss_free.timed_out && !loss_free_budget_hit,
        event_budget_hit: budget_hit,
        loss_free_event_budget_hit: loss_free_budget_hit,
        bound_violations: r.bound_violations,
        injected: Injected {
            damaged: r.injected[0],
            dropped: r.injected[1],
            duplicated: r.injected[2],
            outage: r.injected[3],
        },
        parameters,
    }
}

/// The report as a readable table.
pub fn render_text(r: &LinkReport) -> String {
    let p = &r.parameters;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "EthLink link experiment: {} frame(s) of {} B on {} of {} VC(s){}, {} Gb/s, {} ns \
         propagation, seed {}",
        p.frames,
        p.frame_size,
        p.vcs,
        p.link_vcs,
        if p.bidirectional {
            ", both directions"
        } else {
            ""
        },
        p.rate_gbps,
        p.propagation_ns,
        p.seed
    );
    let outages = if p.link_down_ns.is_empty() {
        "none".to_owned()
    } else {
        p.link_down_ns
            .iter()
            .map(|o| format!("{}:{}", o.start_ns, o.duration_ns))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "Faults: loss {} (burst {}), drop {}, ber {}, duplicate {}, control loss {}, outages \
         (start:duration ns) {outages}; receivers drain at {}% of the line rate",
        p.loss, p.burst, p.drop, p.ber, p.duplicate, p.control_loss, p.drain_percent
    );
    let _ = writeln!(
        out,
        "LLR: replay buffer {} frames / {} B, window {}, ACK every {} B or {} ns, replay timer \
         {} ns, FLUSH after {} replays. CBFC: {} credits of {} B per VC, CF after {} credits, \
         CC every {} ns.",
        p.replay_max_frames,
        p.replay_max_bytes,
        p.window,
        p.ack_spacing,
        p.ack_timer_ns,
        p.replay_timer_ns,
        p.replay_count_max,
        p.credits,
        p.credit_size,
        p.cf_min_credits,
        p.cc_interval_ns
    );
    out.push('\n');
    let ratio = r
        .goodput_ratio
        .map_or_else(|| "-".to_owned(), |x| format!("{x:.3}"));
    let rows: Vec<(&str, String)> = vec![
        ("frames offered", r.offered.to_string()),
        ("frames delivered", r.delivered.to_string()),
        ("delivered in order", yes(r.in_order)),
        ("duplicates delivered", r.duplicates.to_string()),
        ("frames lost", r.lost.to_string()),
        ("frames of unknown fate", r.unknown_fate.to_string()),
        ("corrupted deliveries", r.corrupted.to_string()),
        ("goodput (Gb/s)", format!("{:.3}", r.goodput_gbps)),
        (
            "goodput without faults (Gb/s)",
            format!("{:.3}", r.loss_free_goodput_gbps),
        ),
        ("goodput ratio", ratio),
        ("line rate (Gb/s)", format!("{}", r.line_rate_gbps)),
        (
            "ideal goodput (Gb/s)",
            format!("{:.3}", r.ideal_goodput_gbps),
        ),
        (
            "latency mean / p50 / p99 / max (ns)",
            format!(
                "{:.3} / {:.3} / {:.3} / {:.3}",
                r.latency_ns.mean, r.latency_ns.p50, r.latency_ns.p99, r.latency_ns.max
            ),
        ),
        ("frames replayed", r.replays.to_string()),
        ("NACKs sent", r.nacks.to_string()),
        ("replay timeouts", r.replay_timeouts.to_string()),
        ("flushes", r.flushes.to_string()),
        ("link-ups (both ends)", r.link_ups.to_string()),
        ("credit stalls", r.credit_stalls.to_string()),
        ("FCS errors", r.fcs_errors.to_string()),
        ("duplicates discarded", r.duplicates_discarded.to_string()),
        ("max replay buffer (B)", r.max_replay_bytes.to_string()),
        (
            "max receive buffer (B)",
            format!(
                "{} of {}",
                r.max_rx_buffer_bytes, r.rx_buffer_capacity_bytes
            ),
        ),
        (
            "injected damaged / dropped / duplicated / outage",
            format!(
                "{} / {} / {} / {}",
                r.injected.damaged, r.injected.dropped, r.injected.duplicated, r.injected.outage
            ),
        ),
        ("simulated time (ns)", r.simulated_time_ns.to_string()),
        (
            "timed out",
            if r.timed_out {
                "yes (the time limit stopped the run)".to_owned()
            } else if r.event_budget_hit {
                format!(
                    "yes (--max-events {} stopped the run at {} ns)",
                    r.parameters.max_events, r.simulated_time_ns
                )
            } else {
                "no".to_owned()
            },
        ),
        ("bound violations", r.bound_violations.to_string()),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in rows {
        let _ = writeln!(out, "{key:<width$}  {value}");
    }
    out
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outages_parse() {
        assert_eq!(
            parse_outage("10:5"),
            Ok(Outage {
                start_ns: 10,
                duration_ns: 5
            })
        );
        for bad in [
            "10",
            "a:5",
            "10:",
            ":5",
            "10:0",
            "-1:5",
            "18446744073709551615:1",
        ] {
            assert!(parse_outage(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_checked_field_has_an_option() {
        for field in [
            "rate_gbps",
            "propagation_ns",
            "frame_size",
            "frames",
            "vcs",
            "loss",
            "drop",
            "burst",
            "ber",
            "duplicate",
            "control_loss",
            "outage",
            "drain",
            "replay_max_frames",
            "replay_max_bytes",
            "ack_spacing",
            "ack_timer",
            "replay_timer",
            "replay_count_max",
            "llr_window",
            "window",
            "credit_size",
            "rx_credits",
            "cf_min_credits",
            "cc_interval",
        ] {
            assert!(option_of(field).starts_with("--"), "{field}");
        }
    }

    #[test]
    fn rounding_is_stable() {
        assert_eq!(round3(394.952_999_9), 394.953);
        assert_eq!(round3(-0.000_1), 0.0);
        assert!(round3(-0.000_1).is_sign_positive());
    }
}
