//! # ethlink-cli: the `ethlink` command
//!
//! The tool on top of the stack for people and scripts that look at EthLink frames: it decodes
//! frames (hex or pcap/pcapng captures, with their FCS or without it) into readable text or JSON,
//! encodes that JSON back into frames, compares EthLink's wire efficiency with RoCEv2, runs
//! experiments on a simulated link and writes the golden test vectors under
//! `conformance/vectors/`. Every wire rule it applies is the `ethlink-protocol` crate's, cited by
//! requirement id of `docs/spec/wire.md`. `ethlink link` runs an experiment on one
//! simulated link with the harness of the `ethlink-link` crate (`docs/spec/link.md`);
//! `ethlink run` runs a whole fabric of GPUs and switches with the `ethlink-fabric` crate
//! (`docs/scenarios.md`).
//!
//! The binary (`src/main.rs`) only parses arguments and calls [`run()`]; everything else is here
//! so that tests can call it directly.
//!
//! Exit status: 0 on success, 1 when a frame (or a transaction in it) is malformed or a capture
//! is truncated, 2 when the input itself cannot be used (bad hex, unreadable file, bad JSON, bad
//! arguments, output that cannot be written). `run` has its own: 0 pass, 1 data lost,
//! duplicated or corrupted, 3 any other failure of the verdict, 2 an unusable scenario.

pub mod capture;
pub mod conformance;
pub mod decode;
pub mod efficiency;
pub mod input;
pub mod link;
pub mod litmus;
pub mod metered;
pub mod plots;
pub mod run;
pub mod sweep;

/// The golden vectors and the JSON form of a frame (`decode --json`, `encode`), from the
/// conformance suite that owns them.
pub use ethlink_conformance::vectors::{self, encode, hexio, model};

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use ethlink_protocol::{MAX_FRAME_LEN, MIN_MFS};

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: a frame or transaction is malformed.
pub const EXIT_MALFORMED: u8 = 1;
/// Exit status: unusable input or arguments.
pub const EXIT_USAGE: u8 = 2;

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(
    name = "ethlink",
    version,
    about = "Simulate EthLink fabrics and links; decode, encode and measure EthLink frames",
    long_about = "Simulate EthLink fabrics and links; decode, encode and measure EthLink \
        frames.\n\n\
        EthLink carries GPU load/store and lightweight RDMA in Ethernet frames \
        (docs/spec/wire.md). This tool simulates whole fabrics of GPUs and switches (run), \
        decodes frames from hex or pcap/pcapng captures, encodes \
        the JSON it prints back into frames, compares EthLink's wire efficiency with RoCEv2, \
        runs link-level retry and flow-control experiments on a simulated link and writes the \
        golden test vectors.\n\n\
        Exit status: 0 on success, 1 when a frame or a transaction in it is malformed, 2 when \
        the input or the arguments cannot be used."
)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode frames from hex or a capture.
    #[command(
        about = "Decode EthLink frames from hex or a pcap/pcapng capture",
        long_about = "Decode EthLink frames from hex or a pcap/pcapng capture.\n\n\
            Prints the Ethernet header (MACs, optional 802.1Q tag), the link header (kind, VC, \
            flags, sequence number), the control body or the network header and every \
            transaction. Frames include their 4-byte FCS, which is checked, unless --no-fcs says \
            the FCS was already checked and stripped (as NICs and most captures hand frames \
            up): then sizes are judged as if the FCS were there, the FCS is not checked and \
            the output says so.\n\n\
            The frame comes from --hex, or from --pcap (every frame of the capture), or else \
            from hex text on standard input (the whole input is one frame, read up to 1 MiB; \
            a longer input is refused). A pcapng interface \
            with if_fcslen=0 holds frames without FCS and is decoded as such; one with \
            if_fcslen=4 holds frames with FCS; for a classic pcap or an interface without \
            if_fcslen, --no-fcs decides.\n\n\
            A transaction error stops the decode of that frame; the transactions before it \
            are still shown, and with --json the frame's object carries an \"error\" object.\n\n\
            A capture is read and printed frame by frame, in constant memory whatever its \
            size: --json writes the array element by element, --jsonl one compact object per \
            line. A capture cut short, or followed by bytes that are not a block, gives every \
            complete frame before the damage, then \"truncated at byte N\" on standard \
            error.\n\n\
            Exit status: 0 when every frame is well-formed; 1 when a frame or a transaction in \
            it is malformed, with one line per such frame on standard error naming the field, \
            its offset in the frame, the requirement of docs/spec/wire.md and what a receiver \
            must do, or when the capture is truncated; 2 when the input cannot be used (bad \
            hex, unreadable file, not a capture at all)."
    )]
    Decode(DecodeArgs),
    /// Encode decode's JSON back into a frame.
    #[command(
        about = "Encode the JSON printed by `decode --json` into frame hex",
        long_about = "Encode the JSON printed by `decode --json` into frame hex.\n\n\
            Reads one frame object, or an array of them, from --json FILE or standard input, \
            and prints each frame as hex on its own line, with its FCS computed and appended \
            (without it when the JSON says \"fcs_present\": false, as `decode --no-fcs --json` \
            prints). \
            Derived keys (length, txn_count, payload_length, dlen, frame_offset, ...) may be \
            left out; when present they must agree with the frame. `decode --json` followed by \
            `encode` gives back the identical frame for every well-formed frame. \
            docs/cli-json.md describes every key.\n\n\
            The JSON is read as it streams, one frame's object at a time: up to 4 GiB in all \
            and up to 1 MiB for one frame's object (the JSON `decode --json` prints of a frame \
            of the largest size is about 25 KiB); a longer input is refused, naming the limit. \
            The frames are printed once every one is encoded.\n\n\
            Bad JSON makes the exit status 2 with a message naming the key and what is wrong; \
            one rejected frame fails a whole array, unless --skip-invalid skips it (exit \
            status 1 then, with a count)."
    )]
    Encode(EncodeArgs),
    /// Compare wire efficiency with RoCEv2.
    #[command(
        about = "Compare the wire efficiency of EthLink and RoCEv2",
        long_about = "Compare the wire efficiency of EthLink and RoCEv2.\n\n\
            Efficiency is payload bytes / wire bytes, where wire bytes count each frame's \
            headers, padding to 64 bytes and FCS plus 20 bytes of preamble, SFD and \
            inter-frame gap. Rows are operations of 4, 8, 64, 128, 256 and 4096 bytes. Columns: \
            EthLink with one operation per frame (a STORE up to 256 bytes, an RDMA_WRITE for \
            4096), EthLink with as many operations packed into one frame as the MFS allows, \
            RoCEv2 RDMA WRITE with one operation per packet, and the request plus response of a \
            read of the same size on EthLink (LOAD or RDMA_READ) and RoCEv2 (RDMA READ). \
            EthLink sizes are measured by emitting real frames."
    )]
    Efficiency(EfficiencyArgs),
    /// Write the golden test vectors.
    #[command(
        about = "Write the golden test vectors (vectors.json and vectors.pcapng)",
        long_about = "Write the golden test vectors.\n\n\
            Writes exactly two files into the output directory: vectors.json (every vector with \
            its hex, the requirements it exercises, and either its decode or the error a \
            receiver must report) and vectors.pcapng (the same frames, with their FCS, in the \
            same order). The output is the same bytes on every run. The committed copies live \
            in conformance/vectors/; regenerate them with \
            `cargo run -p ethlink-cli -- vectors --out conformance/vectors`."
    )]
    Vectors(VectorsArgs),
    /// Run an LLR and CBFC experiment on one simulated link.
    #[command(
        about = "Run an LLR and CBFC experiment on one simulated link",
        long_about = "Run an LLR and CBFC experiment on one simulated link.\n\n\
            Two link ends (docs/spec/link.md) are joined by a simulated full-duplex wire with a \
            line rate, a propagation delay and a seeded fault injector. End A offers --frames \
            DATA frames of --frame-size bytes round-robin over --vcs VCs (end B too with \
            --bidirectional); each receiver drains its buffer at --drain percent of the line \
            rate. Faults: damaged frames (--loss, in bursts of --burst), vanished frames \
            (--drop), bit errors (--ber), duplicated frames (--duplicate), lost control frames \
            (--control-loss) and outages of the physical link (--link-down-ns). Link-level \
            retry and credit-based flow control recover what they can; frames the link gives up \
            on are reported of unknown fate.\n\n\
            The same scenario is run a second time without any fault (no loss, drop, bit \
            errors, duplicates, control loss or outages; everything else equal), and the \
            report compares the two goodputs: goodput_ratio = goodput / loss-free goodput. \
            Goodput counts payload bytes (network header and transactions) delivered once, \
            from the first DATA frame sent to the last delivered.\n\n\
            The output is a table, or with --json one JSON object (docs/cli-json.md). One seed \
            gives one output, byte for byte.\n\n\
            Every run ends: at its time limit, or after --max-events events (the report then \
            says event_budget_hit). Settings under which the traffic cannot complete (every \
            control frame or every frame lost, a receiver that never drains) are named on \
            standard error before the run starts.\n\n\
            Exit status: 0 when the run completed (even if frames were lost or the time limit \
            or the event budget stopped it); 2 when an option is out of range, with a message \
            naming it, or when the output cannot be written."
    )]
    Link(link::LinkArgs),
    /// Run a whole fabric simulation.
    #[command(
        about = "Run a fabric simulation: GPUs, switch planes, workloads, faults, a report",
        long_about = "Run a fabric simulation: GPUs, switch planes, workloads, faults, a report.\n\n\
            GPU endpoints (docs/spec/endpoint.md) and switches (docs/spec/switch.md) are joined \
            by simulated cables with a line rate, a propagation delay and seeded faults; \
            workloads (loads and stores, RDMA all-to-all, ring and halving-doubling \
            all-reduce, all-gather, reduce-scatter, send/recv, incast, permutation) run side \
            by side, and every GPU's memory is checked against a reference at the end. \
            Without --scenario the built-in default runs: 8 GPUs of 4 stacks x 2 ports at \
            400 Gb/s, a single tier of 8 switch planes, 64 B loads and stores beside an RDMA \
            all-to-all and a ring all-reduce, at a bit error rate of 1e-10. --scenario reads a \
            TOML file (JSON when the name ends in .json) in the schema of docs/scenarios.md; \
            examples/scenarios/ has examples, and --print-scenario prints the effective \
            scenario as TOML to start one from.\n\n\
            The output is a summary table (operations and their latency percentiles, \
            integrity, throughput and balance, collectives as nccl-tests prints them, link and \
            switch counters, the speed of the simulation), or with --json the scenario and the \
            full report as one JSON object. --out DIR also writes metrics.json (the same \
            JSON), timeseries.csv, capture.pcapng (the frames crossing the cable of \
            --capture-port, nanosecond timestamps, FCS included) and SVG plots: latency_cdf.svg, \
            port_utilisation.svg and busbw.svg, each under a temporary name until every file \
            is whole and the summary is printed (a run that fails leaves none of them). On a \
            terminal, a progress bar shows on standard \
            error once a run takes more than a second.\n\n\
            One seed gives one output, byte for byte, except the JSON's \"wall\" section and the \
            summary's speed line (wall-clock time, memory).\n\n\
            The verdict (the summary's \"result\" line, \"pass\" in the JSON) says whether \
            the fabric did its job: the data intact, every link up, the run not cut short by \
            its time limit, and no operation ending with an error status that the scenario \
            does not expect. By default an error is expected only from an operation \
            outstanding around an outage's start or end; a scenario states otherwise in its \
            [expect] table (errors = \"none\", \"explained\" or \"allowed\"). The \
            \"data\" line says on its own whether anything was lost, duplicated or \
            corrupted.\n\n\
            Exit status: 0 when the run passes; 1 when data was lost, duplicated or corrupted \
            (an operation lost, duplicated or unexpected, a byte corrupted or stray, a wrong \
            load, a switch buffer overrun); 3 when the data is intact but the run fails \
            otherwise (links that never came up, operations ending in error that the \
            scenario does not expect, the time limit reached); 2 when the scenario or an \
            option cannot be used, with one line naming the key and what is wrong with it."
    )]
    Run(run::RunArgs),
    /// Run a grid of scenarios on worker threads.
    #[command(
        about = "Run a grid of scenarios (values of keys, seeds) on worker threads, with a CSV summary",
        long_about = "Run a grid of scenarios (values of keys, seeds) on worker threads, with a \
            CSV summary.\n\n\
            Starts from --scenario (or the built-in default), and makes one run for every \
            combination of the values given with --set KEY=V1,V2,... (repeatable, each key \
            once; the first key varies slowest) and every seed of --seeds (or of --set \
            seed=...). --out DIR receives sweep.json (the base scenario and the grid), \
            <run>.toml (each run's scenario, with derived defaults written in), \
            <run>.json (each run's report, exactly what `ethlink run --scenario <run>.toml \
            --json` prints but for its \"wall\" section) and summary.csv (one line per run: the \
            swept values, the verdict and the headline figures), which is also printed. Runs \
            run --jobs at a time on worker threads; which worker runs one, and in what order \
            they finish, changes no file.\n\n\
            To spread the runs over many machines, --plan writes the grid and the scenario \
            files without running them; a batch engine runs `ethlink run --scenario \
            DIR/<run>.toml --json > DIR/<run>.json` for each (a Slurm job array, for one: \
            docs/scenarios.md), and --collect DIR writes the summary afterwards, refusing a \
            report whose scenario is not its run's (another run's, or another grid's).\n\n\
            A scenario file is read up to 1 MiB and sweep.json up to 64 MiB; a report is read \
            as it streams, keeping only the figures of the summary, up to 1 TiB.\n\n\
            Exit status: the worst of the runs': 0 when every run passes, 1 when a run lost, \
            duplicated or corrupted data, 3 when a run failed otherwise; 2 when an option or a \
            run's scenario cannot be used (every run is checked before any starts), naming \
            the run and the key."
    )]
    Sweep(sweep::SweepArgs),
    /// Run the conformance suite against the reference or an external device.
    #[command(
        about = "Run the conformance suite against the reference or an external device",
        long_about = "Run the conformance suite against the reference or an external device.\n\n\
            Each case of the catalogue checks requirements of docs/spec against the device \
            under test through the boundary of docs/conformance.md: frames on its ports, \
            time, the requests of its upper layer, its counters. Without --dut-cmd or \
            --dut-lib the suite runs against the reference of --role; with --dut-cmd, against \
            `sh -c COMMAND` speaking the line protocol (one JSON object per line on standard \
            input and output); with --dut-lib, against a shared library exporting the C ABI \
            of include/ethlink.h (docs/cosim.md), loaded into the process.\n\n\
            Prints a summary per requirement and per verdict, and every failure with the \
            requirement, what was expected, what was seen and the last frames. --junit, \
            --json and --pcap-dir write reports; they are identical whatever --jobs is, but \
            for the wall-time fields.\n\n\
            Exit status: 0 when no MUST case failed (and no SHOULD case with --strict); 1 when \
            one did; 2 for bad arguments or a device that cannot answer hello."
    )]
    Conformance(conformance::ConformanceArgs),
    /// Run litmus tests of the memory model on the fabric.
    #[command(
        about = "Run litmus tests of the memory model on the fabric, with litmus7-style histograms",
        long_about = "Run litmus tests of the memory model on the fabric, with litmus7-style \
            histograms.\n\n\
            Each test (a TOML file in the text form of ethlink_fabric::litmus; fabric/litmus/ \
            holds the catalogue) names agents on GPUs, their loads, stores and atomics on \
            8-byte locations over ordered streams or unordered, and the final states the model \
            forbids. It runs --iterations times, on fresh locations each time, every agent \
            starting within --jitter-ns, on the fabric of --scenario (its traffic left out). \
            Prints each test's states with their counts (`*>` marks a forbidden one), the \
            conditions and an Observation line, then a summary.\n\n\
            Exit status: 0 when no test reached a forbidden state, 1 when one did, 2 when a \
            file or an option cannot be used."
    )]
    Litmus(litmus::LitmusArgs),
}

/// Arguments of `decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// Hex of one whole frame, destination MAC through FCS (through the last byte before it with
    /// --no-fcs). Spaces, colons and 0x prefixes are ignored.
    #[arg(long, value_name = "HEX", conflicts_with = "pcap")]
    pub hex: Option<String>,
    /// A pcap or pcapng capture: decode every frame in it. Frames of a pcapng interface with
    /// if_fcslen=0 are decoded without FCS, with if_fcslen=4 with it; other frames as --no-fcs
    /// says.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// The frames come without their FCS (a MAC checked and stripped it): judge sizes as if the
    /// 4 FCS bytes were there and do not check the FCS. With --pcap, applies to a classic pcap
    /// and to pcapng interfaces without if_fcslen.
    #[arg(long)]
    pub no_fcs: bool,
    /// The link's maximum frame size in bytes (320..=9216); longer frames are rejected
    /// (WIRE-2.4-2).
    #[arg(long, value_name = "N", default_value_t = MAX_FRAME_LEN, value_parser = parse_mfs)]
    pub mfs: usize,
    /// Print JSON instead of text: one object per frame, or an array of objects for --pcap
    /// (written frame by frame as the capture is read).
    #[arg(long)]
    pub json: bool,
    /// Print JSON lines: one compact JSON object per frame, each on its own line, written as
    /// soon as the frame is decoded.
    #[arg(long, conflicts_with = "json")]
    pub jsonl: bool,
}

/// Arguments of `encode`.
#[derive(Debug, Args)]
pub struct EncodeArgs {
    /// Read the JSON from FILE instead of standard input.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// With an array of frames, encode every frame that can be and skip the others, each named
    /// on standard error with the reason, and a count at the end (exit status 1 when any was
    /// skipped). Without it one rejected frame fails the whole array.
    #[arg(long)]
    pub skip_invalid: bool,
}

/// Arguments of `efficiency`.
#[derive(Debug, Args)]
pub struct EfficiencyArgs {
    /// Print JSON (the parameters and a rows array) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The EthLink link's maximum frame size in bytes (320..=9216), which bounds packing and
    /// RDMA segment sizes.
    #[arg(long, value_name = "N", default_value_t = MAX_FRAME_LEN, value_parser = parse_mfs)]
    pub mfs: usize,
}

/// Arguments of `vectors`.
#[derive(Debug, Args)]
pub struct VectorsArgs {
    /// Directory to write vectors.json and vectors.pcapng into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

fn parse_mfs(s: &str) -> Result<usize, String> {
    let n: usize = s
        .parse()
        .map_err(|_| format!("{s:?} is not a whole number of bytes"))?;
    if (MIN_MFS..=MAX_FRAME_LEN).contains(&n) {
        Ok(n)
    } else {
        Err(format!(
            "{n} is outside {MIN_MFS}..={MAX_FRAME_LEN}, the range of a maximum frame size"
        ))
    }
}

/// Where a command reads and writes.
pub struct Io<'a> {
    /// Standard input.
    pub stdin: &'a mut dyn Read,
    /// Standard output.
    pub stdout: &'a mut dyn Write,
    /// Standard error.
    pub stderr: &'a mut dyn Write,
}

/// A failure that ends a command with a message on standard error.
#[derive(Debug)]
struct Fail {
    status: u8,
    message: String,
}

fn usage(message: impl Into<String>) -> Fail {
    Fail {
        status: EXIT_USAGE,
        message: message.into(),
    }
}

/// Runs a parsed command and returns its exit status.
pub fn run(cli: Cli, io: &mut Io<'_>) -> u8 {
    let result = match cli.command {
        Command::Decode(args) => run_decode(&args, io),
        Command::Encode(args) => run_encode(&args, io),
        Command::Efficiency(args) => run_efficiency(&args, io),
        Command::Vectors(args) => run_vectors(&args, io),
        Command::Link(args) => run_link(&args, io),
        Command::Run(args) => run::execute(&args, io).map_err(usage),
        Command::Sweep(args) => sweep::execute(&args, io).map_err(usage),
        Command::Conformance(args) => Ok(conformance::execute(&args, io)),
        Command::Litmus(args) => litmus::execute(&args, io).map_err(usage),
    };
    match result {
        Ok(status) => status,
        Err(fail) => {
            let _ = writeln!(io.stderr, "error: {}", fail.message);
            fail.status
        }
    }
}

fn write_out(io: &mut Io<'_>, text: &str) -> Result<(), Fail> {
    io.stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
        .map_err(|e| usage(format!("cannot write the output: {e}")))
}

fn to_json(value: &impl serde::Serialize) -> Result<String, Fail> {
    serde_json::to_string_pretty(value)
        .map(|mut s| {
            s.push('\n');
            s
        })
        .map_err(|e| usage(format!("cannot render JSON: {e}")))
}

/// Standard input as text, up to `limit` bytes.
fn read_stdin(io: &mut Io<'_>, limit: u64) -> Result<String, Fail> {
    input::read_limited(io.stdin, "standard input", limit).map_err(usage)
}

/// Decodes frames one at a time and writes each as soon as it is decoded: text (frames apart by
/// a blank line), JSON (one object, or for a capture an array written element by element) or
/// JSON lines (one compact object per line).
struct FrameOutput<'a> {
    args: &'a DecodeArgs,
    frames: u64,
    status: u8,
}

impl FrameOutput<'_> {
    fn frame(&mut self, io: &mut Io<'_>, captured: &capture::Captured) -> Result<(), Fail> {
        let json = match &captured.bytes {
            Ok(bytes) => {
                let decoded = if captured.has_fcs {
                    decode::decode_frame(bytes, self.args.mfs)
                } else {
                    decode::decode_frame_without_fcs(bytes, self.args.mfs)
                };
                if let Some(e) = &decoded.error {
                    self.status = EXIT_MALFORMED;
                    write_err(
                        io,
                        &format!("error: {}\n", decode::error_line(captured.index, e)),
                    )?;
                }
                decoded.json
            }
            Err(reason) => {
                self.status = EXIT_MALFORMED;
                write_err(io, &format!("error: frame {}: {reason}\n", captured.index))?;
                model::FrameJson {
                    capture_error: Some(reason.clone()),
                    ..model::FrameJson::default()
                }
            }
        };
        let capture = self.args.pcap.is_some();
        // Frames of a capture are numbered; a single frame needs no number.
        let json = model::FrameJson {
            frame: capture.then_some(captured.index),
            ..json
        };
        let first = self.frames == 0;
        self.frames += 1;
        let text = if self.args.jsonl {
            let mut line = serde_json::to_string(&json)
                .map_err(|e| usage(format!("cannot render JSON: {e}")))?;
            line.push('\n');
            line
        } else if self.args.json && capture {
            // An element of the array, as serde_json prints arrays: indented by two spaces.
            let object = to_json(&json)?;
            let mut out = String::from(if first { "[\n" } else { ",\n" });
            for (k, l) in object.trim_end().lines().enumerate() {
                if k > 0 {
                    out.push('\n');
                }
                out.push_str("  ");
                out.push_str(l);
            }
            out
        } else if self.args.json {
            to_json(&json)?
        } else {
            let mut out = String::new();
            if !first {
                out.push('\n');
            }
            out.push_str(&decode::render_text(&json));
            out
        };
        write_out(io, &text)
    }

    fn finish(&mut self, io: &mut Io<'_>) -> Result<(), Fail> {
        if self.args.json && !self.args.jsonl && self.args.pcap.is_some() {
            write_out(io, if self.frames == 0 { "[]\n" } else { "\n]\n" })?;
        }
        Ok(())
    }
}

fn write_err(io: &mut Io<'_>, text: &str) -> Result<(), Fail> {
    io.stderr
        .write_all(text.as_bytes())
        .map_err(|e| usage(format!("cannot write to standard error: {e}")))
}

fn run_decode(args: &DecodeArgs, io: &mut Io<'_>) -> Result<u8, Fail> {
    let has_fcs = !args.no_fcs;
    let mut out = FrameOutput {
        args,
        frames: 0,
        status: EXIT_OK,
    };
    match (&args.hex, &args.pcap) {
        (Some(hex), _) => {
            let bytes = hexio::parse_hex(hex).map_err(|e| usage(format!("--hex: {e}")))?;
            let captured = capture::Captured {
                index: 1,
                bytes: Ok(bytes),
                has_fcs,
            };
            out.frame(io, &captured)?;
        }
        (None, Some(path)) => {
            let file = std::fs::File::open(path)
                .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
            let input = std::io::BufReader::with_capacity(1 << 16, file);
            // A failure to write the output ends the reading at once.
            let mut failed: Option<Fail> = None;
            let end = capture::read_frames(input, has_fcs, |captured| {
                out.frame(io, &captured).map_err(|f| {
                    let e = capture::CaptureError(f.message.clone());
                    failed = Some(f);
                    e
                })
            });
            if let Some(f) = failed {
                return Err(f);
            }
            let end = end.map_err(|e| usage(format!("{}: {e}", path.display())))?;
            out.finish(io)?;
            if let capture::CaptureEnd::Truncated { at, reason } = end {
                write_err(
                    io,
                    &format!(
                        "error: {}: truncated at byte {at}: {reason}; the {} complete frames \
                         before it were decoded\n",
                        path.display(),
                        out.frames
                    ),
                )?;
                out.status = EXIT_MALFORMED;
            }
        }
        (None, None) => {
            let text = read_stdin(io, HEX_LIMIT)?;
            let bytes =
                hexio::parse_hex(&text).map_err(|e| usage(format!("standard input: {e}")))?;
            let captured = capture::Captured {
                index: 1,
                bytes: Ok(bytes),
                has_fcs,
            };
            out.frame(io, &captured)?;
        }
    }
    Ok(out.status)
}

/// Most JSON `encode` reads, in bytes: what `decode --json` prints of a capture of a hundred
/// thousand frames of the largest size (the most `run` captures by default) is about 2 GiB.
/// An array is read as it streams, one frame's object at a time; what stays in memory is the
/// frames encoded so far, as bytes, well under half the JSON they came from.
pub const ENCODE_LIMIT: u64 = 4 << 30;
/// Most one frame's JSON object may take, in bytes: `decode --json` prints at most about 25 KiB
/// for a frame of the largest size.
pub const FRAME_JSON_LIMIT: u64 = 1 << 20;
/// Most hex `decode` reads from standard input, in bytes: a frame of the largest size, 9216
/// bytes written as `0x12, `, is 54 KiB.
pub const HEX_LIMIT: u64 = 1 << 20;

/// An encode error of the frame at `index` of an array, its path prefixed with `[index]`.
fn in_array(index: usize, e: encode::EncodeError) -> encode::EncodeError {
    let path = if e.path.is_empty() {
        format!("[{index}]")
    } else if e.path.starts_with('[') {
        format!("[{index}]{}", e.path)
    } else {
        format!("[{index}].{}", e.path)
    };
    encode::EncodeError { path, ..e }
}

/// Encodes the text of one element of an array of frames, judged as a document of that one
/// object would be; an element that is not an object is named as such.
fn encode_element(text: &str) -> Result<Vec<u8>, encode::EncodeError> {
    if text.trim().is_empty() {
        return Err(encode::EncodeError {
            path: String::new(),
            message: "expected a frame object, found nothing before the comma or the `]`"
                .to_owned(),
        });
    }
    if !text.trim_start().starts_with('{') {
        let message = match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => format!("must be a JSON object of keys, not {v}"),
            Err(e) => e.to_string(),
        };
        return Err(encode::EncodeError {
            path: String::new(),
            message,
        });
    }
    let frames = encode::parse_json(text)?;
    match frames.as_slice() {
        [frame] => encode::encode_frame(frame),
        _ => Err(encode::EncodeError {
            path: String::new(),
            message: "must be one frame object".to_owned(),
        }),
    }
}

/// How `encode`'s input reads at the top.
enum Document {
    /// Not an array: the whole text, to be read as one frame object.
    One(String),
    /// An array, whose elements were handed on one at a time: how many.
    Array(usize),
}

/// Reads `encode`'s input from `input` (named `source` in messages). An array at the top is
/// read as it streams: the text of each element, under [`FRAME_JSON_LIMIT`] bytes, goes to
/// `each` with its index as soon as its last byte is read, so that only one frame's JSON is in
/// memory at a time. Anything else is read whole, up to [`FRAME_JSON_LIMIT`] bytes (it is one
/// frame). The elements are found by their commas outside strings, brackets and braces; each
/// element's text is then parsed on its own, which judges whether it is JSON.
fn read_frames_json(
    input: &mut dyn BufRead,
    source: &str,
    each: &mut dyn FnMut(usize, &str) -> Result<(), Fail>,
) -> Result<Document, Fail> {
    let cannot = |e: std::io::Error| usage(format!("cannot read {source}: {e}"));
    // Whitespace before the document.
    let mut read = 0u64;
    let first = loop {
        let buf = input.fill_buf().map_err(cannot)?;
        let Some(&b) = buf.first() else {
            break None;
        };
        if b.is_ascii_whitespace() {
            input.consume(1);
            read += 1;
            if read > ENCODE_LIMIT {
                return Err(usage(format!(
                    "{source} is longer than {ENCODE_LIMIT} bytes, the most encode reads"
                )));
            }
        } else {
            break Some(b);
        }
    };
    if first != Some(b'[') {
        return input::read_limited(input, source, FRAME_JSON_LIMIT)
            .map(Document::One)
            .map_err(usage);
    }
    input.consume(1);
    read += 1;
    let mut element: Vec<u8> = Vec::new();
    let (mut depth, mut in_string, mut escaped) = (0u32, false, false);
    let mut index = 0usize;
    loop {
        let buf = input.fill_buf().map_err(cannot)?;
        if buf.is_empty() {
            return Err(usage(format!(
                "{source}: the input ends inside the array, after {index} frames"
            )));
        }
        let mut used = 0;
        let mut end = false;
        for &b in buf {
            used += 1;
            if in_string {
                element.push(b);
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                }
            } else {
                match b {
                    b'"' => {
                        in_string = true;
                        element.push(b);
                    }
                    b'[' | b'{' => {
                        depth = depth.saturating_add(1);
                        element.push(b);
                    }
                    b']' if depth == 0 => {
                        end = true;
                        break;
                    }
                    b',' if depth == 0 => {
                        hand(source, index, &element, each)?;
                        element.clear();
                        index += 1;
                    }
                    b']' | b'}' => {
                        depth = depth.saturating_sub(1);
                        element.push(b);
                    }
                    _ => element.push(b),
                }
            }
            if element.len() as u64 > FRAME_JSON_LIMIT {
                return Err(usage(format!(
                    "{source}: the frame object [{index}] is longer than {FRAME_JSON_LIMIT} \
                     bytes, the most one frame's JSON may take"
                )));
            }
        }
        input.consume(used);
        read += used as u64;
        if read > ENCODE_LIMIT {
            return Err(usage(format!(
                "{source} is longer than {ENCODE_LIMIT} bytes, the most encode reads"
            )));
        }
        if end {
            break;
        }
    }
    // The last element, unless the array is empty (`[]`, `[ ]`).
    if index > 0 || !element.iter().all(u8::is_ascii_whitespace) {
        hand(source, index, &element, each)?;
        index += 1;
    }
    // Nothing but whitespace after the array.
    loop {
        let buf = input.fill_buf().map_err(cannot)?;
        if buf.is_empty() {
            break;
        }
        if let Some(at) = buf.iter().position(|b| !b.is_ascii_whitespace()) {
            return Err(usage(format!(
                "{source}: trailing characters after the JSON, at byte {}",
                read + at as u64 + 1
            )));
        }
        let n = buf.len();
        input.consume(n);
        read += n as u64;
        if read > ENCODE_LIMIT {
            return Err(usage(format!(
                "{source} is longer than {ENCODE_LIMIT} bytes, the most encode reads"
            )));
        }
    }
    Ok(Document::Array(index))
}

/// Hands the text of element `index` on.
fn hand(
    source: &str,
    index: usize,
    element: &[u8],
    each: &mut dyn FnMut(usize, &str) -> Result<(), Fail>,
) -> Result<(), Fail> {
    let text = std::str::from_utf8(element).map_err(|e| {
        usage(format!(
            "{source}: [{index}]: not UTF-8 text (byte {} of the frame object is not)",
            e.valid_up_to()
        ))
    })?;
    each(index, text)
}

fn run_encode(args: &EncodeArgs, io: &mut Io<'_>) -> Result<u8, Fail> {
    let Io {
        stdin,
        stdout,
        stderr,
    } = io;
    let (source, mut input): (String, Box<dyn BufRead + '_>) = match &args.json {
        Some(path) => {
            let file = std::fs::File::open(path)
                .map_err(|e| usage(format!("cannot read {}: {e}", path.display())))?;
            (
                path.display().to_string(),
                Box::new(BufReader::with_capacity(1 << 16, file)),
            )
        }
        None => (
            "standard input".to_owned(),
            Box::new(BufReader::with_capacity(1 << 16, &mut **stdin)),
        ),
    };
    // The frames are kept as bytes, half the size of their hex, until every one is encoded:
    // one rejected frame fails them all, so nothing is printed before.
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let mut skipped = 0usize;
    let mut skip = |index: usize, e: &encode::EncodeError| -> Result<(), Fail> {
        skipped += 1;
        stderr
            .write_all(format!("error: {source}: [{index}] skipped: {e}\n").as_bytes())
            .map_err(|e| usage(format!("cannot write to standard error: {e}")))
    };
    let mut each = |index: usize, text: &str| -> Result<(), Fail> {
        match encode_element(text) {
            Ok(bytes) => frames.push(bytes),
            Err(e) if args.skip_invalid => skip(index, &e)?,
            Err(e) => return Err(usage(format!("{source}: {}", in_array(index, e)))),
        }
        Ok(())
    };
    match read_frames_json(&mut *input, &source, &mut each)? {
        Document::Array(0) => {
            return Err(usage(format!("{source}: the array holds no frames")));
        }
        Document::Array(_) => {}
        Document::One(text) if args.skip_invalid => {
            let each = encode::encode_each(&text).map_err(|e| usage(format!("{source}: {e}")))?;
            for (i, f) in each.into_iter().enumerate() {
                match f {
                    Ok(bytes) => frames.push(bytes),
                    Err(e) => skip(i, &e)?,
                }
            }
        }
        Document::One(text) => {
            frames = encode::encode_text(&text).map_err(|e| usage(format!("{source}: {e}")))?;
        }
    }
    let mut out = String::with_capacity(1 << 16);
    for f in &frames {
        out.push_str(&hexio::to_hex(f));
        out.push('\n');
        if out.len() >= 1 << 16 {
            write_chunk(stdout, &out)?;
            out.clear();
        }
    }
    write_chunk(stdout, &out)?;
    stdout
        .flush()
        .map_err(|e| usage(format!("cannot write the output: {e}")))?;
    if skipped > 0 {
        let total = frames.len() + skipped;
        stderr
            .write_all(
                format!(
                    "error: {skipped} of {total} frames skipped, {} encoded\n",
                    frames.len()
                )
                .as_bytes(),
            )
            .map_err(|e| usage(format!("cannot write to standard error: {e}")))?;
        return Ok(EXIT_MALFORMED);
    }
    Ok(EXIT_OK)
}

fn write_chunk(stdout: &mut dyn Write, text: &str) -> Result<(), Fail> {
    stdout
        .write_all(text.as_bytes())
        .map_err(|e| usage(format!("cannot write the output: {e}")))
}

fn run_efficiency(args: &EfficiencyArgs, io: &mut Io<'_>) -> Result<u8, Fail> {
    let report = efficiency::compute(args.mfs).map_err(usage)?;
    let text = if args.json {
        to_json(&report)?
    } else {
        efficiency::render_text(&report)
    };
    write_out(io, &text)?;
    Ok(EXIT_OK)
}

fn run_link(args: &link::LinkArgs, io: &mut Io<'_>) -> Result<u8, Fail> {
    link::scenario(args).map_err(usage)?;
    for line in link::hopeless(args) {
        write_err(
            io,
            &format!(
                "warning: {line}; the run lasts until --time-limit-ns or --max-events ({})\n",
                args.max_events
            ),
        )?;
    }
    let report = link::run(args).map_err(usage)?;
    let text = if args.json {
        to_json(&report)?
    } else {
        link::render_text(&report)
    };
    write_out(io, &text)?;
    Ok(EXIT_OK)
}

fn run_vectors(args: &VectorsArgs, io: &mut Io<'_>) -> Result<u8, Fail> {
    vectors::write(&args.out).map_err(usage)?;
    write_out(
        io,
        &format!(
            "wrote {} and {}\n",
            args.out.join(vectors::JSON_FILE).display(),
            args.out.join(vectors::PCAPNG_FILE).display()
        ),
    )?;
    Ok(EXIT_OK)
}
