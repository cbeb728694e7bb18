//! Litmus cases for an endpoint (`EPT-LIT-*`; transaction.md §4, the memory model): small
//! programs of a few agents whose outcomes the model allows or forbids, run many times under
//! schedules the harness chooses, with each test's outcome histogram in the case's notes
//! (docs/conformance.md §10).
//! The tests are in the text form of `ethlink_fabric::litmus`, in `conformance/litmus/`.
//!
//! Two families:
//!
//! - **the device as the target** (`conformance/litmus/as-target/`): every location lives in the
//!   device's memory and every agent is a GPU the harness plays, sending LOAD, STORE, atomic,
//!   FENCE and RDMA requests to the device over its ports as a conforming requester would. A path
//!   is one device port, VC and source GPU, with the source stack and port in the path id:
//!   `stream K` and `port P` are one fixed path of the agent, `unordered` a path the harness draws
//!   for each operation, `rfence LOC VIA` a FENCE request on VC 0 of the path `VIA` names, which
//!   nothing waits for but a later `wait`. `wait` and `fence` (the Fence operation) hold the
//!   agent's later requests until every earlier one is answered. Each placement of the paths
//!   (every path on port 0; each agent's paths on ports of their own, spread over the device's
//!   ports) is run under [`RUNS`] seeded schedules: frames packed with up to four requests of one
//!   path or sent alone, back to back, a few ns or microseconds apart, agents interleaved at
//!   random. The registers come from the responses; the final values from LOADs an observer sends
//!   once every request has been answered.
//! - **the device as a requester** (`conformance/litmus/as-requester/`): the device is the agent of
//!   GPU 0, issuing its operations with `issue` (`stream K` or none) and `fence`; the harness holds
//!   every location, answers the device's requests and plays the other agents, whose operations act
//!   on its memory at once, in program order. It performs each port's requests in arrival order
//!   and delays the ports against each other: per schedule one port is slow, its requests taken
//!   only when no other port has one waiting and it has waited a drawn hold (up to 4 us). Run
//!   with the device's first port up only, then with all of them (up to four).
//!
//! Every outcome is judged against the model: a run that ends in a state the test's `forbidden`
//! list names fails the case with the requirement the case names for it (TXN-4-1, TXN-4-5,
//! TXN-4-6, TXN-4-9, TXN-4-10, TXN-4-11, TXN-4-12 or TXN-4-13); a state outside those the model
//! allows (`Litmus::model_outcomes`) fails it with TXN-4-8 when it holds a value no store wrote,
//! TXN-4-13 otherwise. A request answered with another status than OK, or not at all, fails as
//! the other endpoint cases do. Schedules depend only on the case, the placement and the seed:
//! the same device gives the same histograms.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use ethlink_fabric::litmus::{Histogram, Litmus, Op, Outcome, Via};

use crate::case::{Case, Stop};
use crate::cases::endpoint::case;
use crate::cases::endpoint::common::{
    DUT, G, REM, Txn, atomic, ep_up, fence, le, load, mem_write, op, parse_payload, rdma_read,
    rdma_write, resp, st, store,
};
use crate::ctx::Ctx;
use crate::device::{LsOp, Output, Request, Space, to_hex};

/// Schedules run per placement of a test.
pub const RUNS: u64 = 16;
/// Most device ports a litmus case uses.
const MAX_PORTS: u16 = 4;
/// Where the first location lives in the device's memory (region [`G`]); location `i` is the
/// granule `i` after it.
const TARGET_BASE: u64 = G.0 + 0x800;
/// Where the first location lives in the harness's memory when the device is a requester.
const REQ_BASE: u64 = 0x7_0000;
/// The key of the harness's memory.
const REQ_KEY: u32 = 0x11A5_0007;
/// The GPU id of agent `a` played by the harness.
fn agent_gpu(a: usize) -> u16 {
    0x20 + a as u16
}
/// Longest the harness waits for an answer the run needs, in ns.
const ANSWER_NS: u64 = 200_000;

/// Which side of the requests the device is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    /// Every location in the device's memory, every agent played by the harness.
    Target,
    /// The device is the agent of GPU 0; the harness holds the locations.
    Requester,
}

/// One litmus case.
struct Spec {
    id: &'static str,
    title: &'static str,
    family: Family,
    /// The test's text.
    text: &'static str,
    /// The requirement a forbidden state breaks.
    forbids: &'static str,
    reqs: &'static [&'static str],
    needs: &'static [&'static str],
}

macro_rules! target {
    ($id:literal, $file:literal, $forbids:literal, $reqs:expr, $needs:expr, $title:literal) => {
        Spec {
            id: $id,
            title: $title,
            family: Family::Target,
            text: include_str!(concat!("../../../litmus/as-target/", $file, ".toml")),
            forbids: $forbids,
            reqs: $reqs,
            needs: $needs,
        }
    };
}

macro_rules! requester {
    ($id:literal, $file:literal, $forbids:literal, $reqs:expr, $title:literal) => {
        Spec {
            id: $id,
            title: $title,
            family: Family::Requester,
            text: include_str!(concat!("../../../litmus/as-requester/", $file, ".toml")),
            forbids: $forbids,
            reqs: $reqs,
            needs: &[],
        }
    };
}

/// The catalogue of litmus cases, in order.
const SPECS: &[Spec] = &[
    target!(
        "EPT-LIT-1",
        "MP+stream+rfence",
        "TXN-4-6",
        &["TXN-4-6", "TXN-4-1", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, MP: two stores of one path are never seen out of order by loads a FENCE \
         request separates, on one port and across ports"
    ),
    target!(
        "EPT-LIT-2",
        "MP+stream+wait",
        "TXN-4-1",
        &["TXN-4-1", "TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, MP: two stores of one path are never seen out of order by a reader that \
         waits between its loads"
    ),
    target!(
        "EPT-LIT-3",
        "MP+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, MP on paths of their own: a store answered before the next is sent is seen \
         before it"
    ),
    target!(
        "EPT-LIT-4",
        "SB+rfences",
        "TXN-4-6",
        &["TXN-4-6", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, SB: two agents that each store, send a FENCE request and load never both \
         miss the other's store"
    ),
    target!(
        "EPT-LIT-5",
        "SB+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, SB: two agents that each store, wait and load never both miss the other's \
         store"
    ),
    target!(
        "EPT-LIT-6",
        "LB+rfences",
        "TXN-4-6",
        &["TXN-4-6", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, LB: two agents that each load, send a FENCE request and store never both \
         read the other's store"
    ),
    target!(
        "EPT-LIT-7",
        "LB+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, LB: two agents that each load, wait and store never both read the other's \
         store"
    ),
    target!(
        "EPT-LIT-8",
        "2+2W+stream",
        "TXN-4-1",
        &["TXN-4-1", "TXN-4-9", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, 2+2W: two agents' pairs of stores, each pair on one path, never both lose \
         their second store"
    ),
    target!(
        "EPT-LIT-9",
        "2+2W+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-9", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, 2+2W: two agents' pairs of stores with a wait between never both lose \
         their second store"
    ),
    target!(
        "EPT-LIT-10",
        "S+stream+rfence",
        "TXN-4-13",
        &["TXN-4-13", "TXN-4-1", "TXN-4-6", "TXN-2-8"],
        &[],
        "as a target, S: a store sent (after a FENCE request) once y=1 was read is never \
         overwritten by the store of x made before y=1 on one path"
    ),
    target!(
        "EPT-LIT-11",
        "R+stream+rfence",
        "TXN-4-13",
        &["TXN-4-13", "TXN-4-1", "TXN-4-6", "TXN-2-8"],
        &[],
        "as a target, R: a store that wins over y=1 is followed (after a FENCE request) by a load \
         that sees the x=1 stored before y=1 on one path"
    ),
    target!(
        "EPT-LIT-12",
        "R+fences",
        "TXN-4-13",
        &["TXN-4-13", "TXN-4-11", "TXN-2-8"],
        &[],
        "as a target, R with the Fence operation on both agents: the split outcome never shows"
    ),
    target!(
        "EPT-LIT-13",
        "WRC+rfences",
        "TXN-4-12",
        &["TXN-4-12", "TXN-4-6", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, WRC: a store seen before a flag is stored (FENCE requests between) is seen \
         by whoever sees the flag"
    ),
    target!(
        "EPT-LIT-14",
        "WRC+fences",
        "TXN-4-12",
        &["TXN-4-12", "TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, WRC with the Fence operation: a store seen before a flag is stored is seen \
         by whoever sees the flag"
    ),
    target!(
        "EPT-LIT-15",
        "IRIW+rfences",
        "TXN-4-12",
        &["TXN-4-12", "TXN-4-6", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, IRIW: two readers ordered by FENCE requests never see two independent \
         stores in opposite orders"
    ),
    target!(
        "EPT-LIT-16",
        "IRIW+waits",
        "TXN-4-12",
        &["TXN-4-12", "TXN-4-11", "TXN-4-13", "TXN-2-8"],
        &[],
        "as a target, IRIW: two readers that wait between their loads never see two independent \
         stores in opposite orders"
    ),
    target!(
        "EPT-LIT-17",
        "CoRR+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "TXN-2-8"],
        &[],
        "as a target, CoRR: two loads of one location on one path never see a write and then the \
         value before it"
    ),
    target!(
        "EPT-LIT-18",
        "CoWW+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "TXN-2-8"],
        &[],
        "as a target, CoWW: two stores to one location on one path leave the second, and a reader \
         on one path sees them in that order"
    ),
    target!(
        "EPT-LIT-19",
        "CoRW+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "TXN-2-8"],
        &[],
        "as a target, CoRW: a load never reads the store after it on its path, nor a write that \
         store overwrote"
    ),
    target!(
        "EPT-LIT-20",
        "CoWR+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "TXN-4-2", "TXN-2-8"],
        &[],
        "as a target, CoWR: a load after a store on its path reads that store or a later one"
    ),
    target!(
        "EPT-LIT-21",
        "FA+FA",
        "TXN-4-10",
        &["TXN-4-10", "TXN-2-3", "TXN-2-8"],
        &["atomics"],
        "as a target, FETCH_ADDs of two agents on paths of their own are never lost and never \
         read the same value"
    ),
    target!(
        "EPT-LIT-22",
        "SWAP+load",
        "TXN-4-10",
        &["TXN-4-10", "TXN-4-9", "TXN-2-3", "TXN-2-8"],
        &["atomics"],
        "as a target, two SWAPs of one location never both read the initial value, and a load \
         after a SWAP on its path never reads older"
    ),
    target!(
        "EPT-LIT-23",
        "MP+rdma+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-4", "TXN-4-13", "TXN-2-8"],
        &["rdma"],
        "as a target, MP with the data RDMA-written and RDMA-read: a write completed before the \
         flag is stored is read after the flag"
    ),
    target!(
        "EPT-LIT-24",
        "SB+rdma+waits",
        "TXN-4-11",
        &["TXN-4-11", "TXN-4-4", "TXN-4-13", "TXN-2-8"],
        &["rdma"],
        "as a target, SB with RDMA writes and reads and waits: the two agents never both miss the \
         other's write"
    ),
    target!(
        "EPT-LIT-25",
        "SCA+wide",
        "TXN-4-8",
        &[
            "TXN-4-8", "TXN-4-9", "TXN-4-1", "TXN-2-1", "TXN-2-2", "TXN-2-8"
        ],
        &[],
        "as a target, 8-byte stores of distinct bytes from two agents are read whole by two \
         others, never a mix of two stores, and in one order"
    ),
    requester!(
        "EPT-LIT-26",
        "MP+stream",
        "TXN-4-1",
        &["TXN-4-1", "EP-4-1", "TXN-4-13", "TXN-3-1"],
        "as a requester, MP: two stores on one ordered stream are seen in order however the \
         target delays its ports"
    ),
    requester!(
        "EPT-LIT-27",
        "CoWW+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "EP-4-1", "TXN-3-1"],
        "as a requester, CoWW: two stores to one location on one ordered stream leave the second"
    ),
    requester!(
        "EPT-LIT-28",
        "CoRR+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "EP-4-1", "TXN-3-1"],
        "as a requester, CoRR: two loads of one location on one ordered stream never see a write \
         and then the value before it"
    ),
    requester!(
        "EPT-LIT-29",
        "CoWR+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "TXN-4-2", "EP-4-1", "TXN-3-1"],
        "as a requester, CoWR: a load after a store on one ordered stream reads that store or a \
         later one"
    ),
    requester!(
        "EPT-LIT-30",
        "CoRW+stream",
        "TXN-4-9",
        &["TXN-4-9", "TXN-4-1", "EP-4-1", "TXN-3-1"],
        "as a requester, CoRW: a load never reads the store after it on its ordered stream"
    ),
    requester!(
        "EPT-LIT-31",
        "2+2W+stream",
        "TXN-4-1",
        &["TXN-4-1", "EP-4-1", "TXN-4-9", "TXN-4-13", "TXN-3-1"],
        "as a requester, 2+2W: a pair of stores on one ordered stream against another ordered \
         pair never both lose their second store"
    ),
    requester!(
        "EPT-LIT-32",
        "S+stream",
        "TXN-4-13",
        &["TXN-4-13", "TXN-4-1", "EP-4-1", "TXN-3-1"],
        "as a requester, S: a store made after reading y=1 is never overwritten by the device's \
         store of x before y=1 on one stream"
    ),
    requester!(
        "EPT-LIT-33",
        "R+stream",
        "TXN-4-13",
        &["TXN-4-13", "TXN-4-1", "EP-4-1", "TXN-3-1"],
        "as a requester, R: a store that wins over the device's y=1 is followed by a load that \
         sees its x=1 stored before y=1 on one stream"
    ),
    requester!(
        "EPT-LIT-34",
        "MP+fence",
        "TXN-4-5",
        &["TXN-4-5", "TXN-4-11", "TXN-4-13", "TXN-3-1"],
        "as a requester, MP: unordered stores on either side of a Fence are seen in order, and \
         the Fence completes after the store before it"
    ),
    requester!(
        "EPT-LIT-35",
        "SB+fence",
        "TXN-4-5",
        &["TXN-4-5", "TXN-4-11", "TXN-4-13", "TXN-3-1"],
        "as a requester, SB: a device that stores, fences and loads never misses a store made \
         before its own was read"
    ),
    requester!(
        "EPT-LIT-36",
        "LB+fence",
        "TXN-4-5",
        &["TXN-4-5", "TXN-4-11", "TXN-4-13", "TXN-3-1"],
        "as a requester, LB: a device that loads, fences and stores never reads a store that \
         depends on its own"
    ),
];

type Runner = fn(&mut Ctx<'_>) -> Result<(), Stop>;

macro_rules! runners {
    ($($i:literal)*) => {
        const RUNNERS: &[Runner] = &[$(|ctx: &mut Ctx<'_>| run(ctx, &SPECS[$i])),*];
    };
}

runners!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 34 35);

/// The cases of this module.
pub fn cases() -> Vec<Case> {
    SPECS
        .iter()
        .zip(RUNNERS)
        .map(|(s, r)| case(s.id, s.title, s.reqs, s.needs, *r))
        .collect()
}

// ----- the tests -------------------------------------------------------------------------------

/// A test as the harness runs it: the text form of `ethlink_fabric::litmus`, with every final
/// state the model allows it (`None` for a test too large to enumerate: then only its
/// `forbidden` states are judged).
struct Test {
    lit: Litmus,
    allowed: Option<BTreeSet<Outcome>>,
}

/// Reads a test and enumerates what the model allows it.
fn parse(text: &str) -> Result<Test, String> {
    let lit = Litmus::parse(text).map_err(|e| e.to_string())?;
    let allowed = lit.model_outcomes();
    Ok(Test { lit, allowed })
}

impl Test {
    /// Agent `a`'s program.
    fn prog(&self, a: usize) -> &[Op] {
        self.lit.agents.get(a).map_or(&[], |x| x.ops.as_slice())
    }

    /// Whether `o` holds, in a register or a location, a value that no write of the location
    /// wrote and that is not the initial 0: a torn or invented value (TXN-4-8). Locations that
    /// an atomic add writes, whose values are sums, are left out.
    fn invented(&self, o: &Outcome) -> bool {
        let n = self.lit.locations.len();
        let mut written: Vec<Option<Vec<u64>>> = vec![Some(vec![0]); n];
        let mut reads: Vec<(usize, usize, usize)> = Vec::new();
        for (a, agent) in self.lit.agents.iter().enumerate() {
            for op in &agent.ops {
                match *op {
                    Op::Store { loc, value, .. }
                    | Op::Swap { loc, value, .. }
                    | Op::RdmaWrite { loc, value } => {
                        if let Some(Some(w)) = written.get_mut(loc) {
                            w.push(value);
                        }
                    }
                    Op::FetchAdd { loc, .. } => {
                        if let Some(w) = written.get_mut(loc) {
                            *w = None;
                        }
                    }
                    _ => {}
                }
                if let (Some(reg), Some(loc)) = (reg_of(op), loc_of(op)) {
                    reads.push((a, reg, loc));
                }
            }
        }
        let foreign = |loc: usize, v: u64| {
            written
                .get(loc)
                .and_then(Option::as_ref)
                .is_some_and(|w| !w.contains(&v))
        };
        reads.iter().any(|&(a, reg, loc)| {
            o.regs
                .get(a)
                .and_then(|r| r.get(reg))
                .is_some_and(|&v| foreign(loc, v))
        }) || o.mem.iter().enumerate().any(|(l, &v)| foreign(l, v))
    }

    /// Whether the model forbids `o`: it meets a `forbidden` state of the test, or the model
    /// allows the test no such final state.
    fn forbids(&self, o: &Outcome) -> bool {
        self.lit.forbidden.iter().any(|c| c.holds(o))
            || self.allowed.as_ref().is_some_and(|a| !a.contains(o))
    }
}

fn test_of(spec: &Spec) -> Result<Test, Stop> {
    parse(spec.text).map_err(|e| Stop::Harness(format!("the litmus test of {}: {e}", spec.id)))
}

/// Runs one case.
fn run(ctx: &mut Ctx<'_>, spec: &Spec) -> Result<(), Stop> {
    let t = test_of(spec)?;
    match spec.family {
        Family::Target => run_target(ctx, spec, &t),
        Family::Requester => run_requester(ctx, spec, &t),
    }
}

/// A seeded generator of schedules (SplitMix64): the same seed, the same schedule.
struct Rng(u64);

impl Rng {
    fn new(case: &str, placement: u64, seed: u64) -> Self {
        // FNV-1a of the case id, so that each case draws schedules of its own.
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        for b in case.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
        Rng(h ^ (placement << 40) ^ seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True `num` times in `den`.
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

/// A placement of the paths on the device's ports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// Every path on the device's first port.
    OnePort,
    /// Paths spread over the device's ports.
    Spread(u16),
}

impl Placement {
    /// The placements a device of `ports` ports is run with.
    fn all(ports: u16) -> Vec<Placement> {
        let n = ports.min(MAX_PORTS);
        if n >= 2 {
            vec![Placement::OnePort, Placement::Spread(n)]
        } else {
            vec![Placement::OnePort]
        }
    }

    fn ports(self) -> u16 {
        match self {
            Placement::OnePort => 1,
            Placement::Spread(n) => n,
        }
    }

    fn index(self) -> u64 {
        match self {
            Placement::OnePort => 0,
            Placement::Spread(n) => u64::from(n),
        }
    }
}

/// The histogram of one placement as a note: what was run, then the histogram as litmus7 prints
/// one (`*>` marks a state the test's `forbidden` list names), then how many of the states the
/// model allows were seen, and (`!>`) each state seen that the model forbids and the list does
/// not name.
fn note_of(spec: &Spec, t: &Test, what: &str, h: &Histogram) -> String {
    let mut s = format!(
        "{} {}, {what}, {} seeded schedules:\n{}",
        spec.id,
        t.lit.name,
        h.runs(),
        h.render(&t.lit).trim_end()
    );
    if let Some(allowed) = &t.allowed {
        let seen = allowed.iter().filter(|o| h.counts.contains_key(*o)).count();
        s.push_str(&format!(
            "\nthe model allows {} states, {seen} of them seen",
            allowed.len()
        ));
        for (o, n) in &h.counts {
            if !allowed.contains(o) && !t.lit.forbidden.iter().any(|c| c.holds(o)) {
                s.push_str(&format!(
                    "\n{n:<8}!> {} (a state the model forbids)",
                    t.lit.show(o)
                ));
            }
        }
    }
    s
}

/// Fails with `spec.forbids` when `h` holds a state the test forbids.
fn judge(
    spec: &Spec,
    t: &Test,
    what: &str,
    h: &Histogram,
    first_seed: &BTreeMap<Outcome, u64>,
) -> Result<(), Stop> {
    let bad: Vec<(&Outcome, u64)> = h
        .counts
        .iter()
        .filter(|(o, _)| t.forbids(o))
        .map(|(o, n)| (o, *n))
        .collect();
    // A state the test names first: its requirement is the one the test is about.
    let named = |o: &Outcome| t.lit.forbidden.iter().any(|c| c.holds(o));
    let Some((o, n)) = bad
        .iter()
        .find(|(o, _)| named(o))
        .or_else(|| bad.first())
        .copied()
    else {
        return Ok(());
    };
    let conds: Vec<&str> = t
        .lit
        .forbidden
        .iter()
        .filter(|c| c.holds(o))
        .map(|c| c.text.as_str())
        .collect();
    // A state the test does not name breaks TXN-4-8 when it holds a value no store wrote, the
    // order axiom (TXN-4-13) otherwise.
    let (req, which) = if conds.is_empty() && t.invented(o) {
        (
            "TXN-4-8",
            "which holds a value no store wrote (nor the initial 0)".to_owned(),
        )
    } else if conds.is_empty() {
        (
            "TXN-4-13",
            "which no execution the model allows ends in".to_owned(),
        )
    } else {
        (spec.forbids, format!("which meets {}", conds.join("; ")))
    };
    Err(Stop::fail(
        req,
        format!(
            "no run of {} ({what}) ends in a state the model forbids ({}{})",
            t.lit.name,
            t.lit
                .forbidden
                .iter()
                .map(|c| c.text.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            match &t.allowed {
                Some(a) => format!(", or any state but the {} it allows", a.len()),
                None => String::new(),
            }
        ),
        format!(
            "{} in {n} of {} runs (first at seed {}), {which}{}",
            t.lit.show(o),
            h.runs(),
            first_seed.get(o).copied().unwrap_or(0),
            if bad.len() > 1 {
                format!("; {} forbidden states in all", bad.len())
            } else {
                String::new()
            }
        ),
    ))
}

/// The register an operation writes, if any.
fn reg_of(o: &Op) -> Option<usize> {
    match *o {
        Op::Load { reg, .. }
        | Op::FetchAdd { reg, .. }
        | Op::Swap { reg, .. }
        | Op::RdmaRead { reg, .. } => Some(reg),
        _ => None,
    }
}

/// The location an operation accesses, if any.
fn loc_of(o: &Op) -> Option<usize> {
    match *o {
        Op::Load { loc, .. }
        | Op::Store { loc, .. }
        | Op::FetchAdd { loc, .. }
        | Op::Swap { loc, .. }
        | Op::RdmaWrite { loc, .. }
        | Op::RdmaRead { loc, .. } => Some(loc),
        _ => None,
    }
}

/// A little-endian value of up to 8 bytes.
fn value_of(b: &[u8]) -> u64 {
    let mut v = [0u8; 8];
    let n = b.len().min(8);
    v[..n].copy_from_slice(&b[..n]);
    u64::from_le_bytes(v)
}

// ----- the device as the target ----------------------------------------------------------------

/// A DATA payload to the device from `src` with path id `path`: the network header and `txns`.
fn payload(src: u16, path: u8, txns: &[Vec<u8>]) -> Vec<u8> {
    let body = txns.concat();
    let mut p = DUT.to_be_bytes().to_vec();
    p.extend(src.to_be_bytes());
    p.push(path);
    p.push(txns.len() as u8);
    p.extend((body.len() as u16).to_be_bytes());
    p.extend(body);
    p
}

/// A path to the device: its port and the path id of the network header (the source's stack and
/// port). A path id names one device port only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Path {
    port: u16,
    id: u8,
}

/// A request the harness sent and waits to have answered.
struct Pending {
    agent: usize,
    /// The request's opcode.
    opcode: u8,
    reg: Option<usize>,
    /// The operation, for reports.
    what: String,
}

/// The requirement that gives the status and data of the answer to `opcode`.
fn answer_req(opcode: u8) -> &'static str {
    match opcode {
        op::LOAD => "TXN-2-1",
        op::STORE => "TXN-2-2",
        op::FADD | op::SWAP | op::CAS => "TXN-2-3",
        op::FENCE => "TXN-4-6",
        op::RDMA_WRITE => "TXN-2-4",
        _ => "TXN-2-5",
    }
}

/// One run of a test against the device as the target. Its agents are the test's, and one more:
/// the observer that reads the final values.
struct TargetRun<'t> {
    t: &'t Test,
    placement: Placement,
    rng: Rng,
    pc: Vec<usize>,
    waiting: Vec<usize>,
    regs: Vec<Vec<u64>>,
    pending: BTreeMap<u16, Pending>,
    next_tag: u16,
}

impl TargetRun<'_> {
    fn addr(loc: usize) -> u64 {
        TARGET_BASE + 8 * loc as u64
    }

    /// The fixed path of `via` for agent `a`, or a fresh one for an unordered operation.
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-1 [...] b MUST be ordered after a (a ob b) when both write (a store or an atomic),
    //# or when they access a common granule.
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-2 A Load issued after a Store on the same path to an overlapping address MUST return
    //# the Store's bytes for the overlap
    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-3 Nothing is promised between operations on different paths: they MAY be performed
    //# in either order.
    fn path(&mut self, a: usize, via: Via) -> Path {
        let n = self.placement.ports();
        let a16 = a as u16;
        match via {
            Via::Stream(k) => Path {
                port: ((u32::from(a16) + k) % u32::from(n)) as u16,
                id: (k % 8) as u8,
            },
            Via::Port(p) => Path {
                port: p % n,
                id: 8 + (p % 8) as u8,
            },
            Via::Unordered => {
                let port = self.rng.below(u64::from(n)) as u16;
                Path {
                    port,
                    id: 0x10 | ((port % 4) as u8 * 4 + self.rng.below(4) as u8),
                }
            }
        }
    }

    fn tag(&mut self) -> u16 {
        let t = self.next_tag;
        self.next_tag = self.next_tag.wrapping_add(1).max(1);
        t
    }

    /// The VC a step travels on, and whether it travels alone (RDMA).
    fn vc_of(s: &Op) -> (u8, bool) {
        match s {
            Op::RdmaWrite { .. } | Op::RdmaRead { .. } => (1, true),
            _ => (0, false),
        }
    }

    /// The request of step `s` of agent `a`, with a tag, recorded as pending.
    fn request(&mut self, a: usize, s: &Op) -> Option<Vec<u8>> {
        let tag = self.tag();
        let key = G.2;
        let lit = &self.t.lit;
        let name = |l: usize| lit.locations.get(l).map_or("?", |x| x.name.as_str());
        let (bytes, opcode, what) = match *s {
            Op::Load { loc, .. } => (
                load(tag, 0, key, Self::addr(loc), 8),
                op::LOAD,
                format!("LOAD {}", name(loc)),
            ),
            Op::Store { loc, value, .. } => (
                store(tag, 0, key, Self::addr(loc), &le(value, 8)),
                op::STORE,
                format!("STORE {} {value}", name(loc)),
            ),
            Op::FetchAdd { loc, value, .. } => (
                atomic(op::FADD, tag, key, Self::addr(loc), &le(value, 8)),
                op::FADD,
                format!("ATOMIC_FADD {} {value}", name(loc)),
            ),
            Op::Swap { loc, value, .. } => (
                atomic(op::SWAP, tag, key, Self::addr(loc), &le(value, 8)),
                op::SWAP,
                format!("ATOMIC_SWAP {} {value}", name(loc)),
            ),
            Op::RdmaWrite { loc, value } => (
                rdma_write(tag, 0, key, Self::addr(loc), 0, 8, &le(value, 8)),
                op::RDMA_WRITE,
                format!("RDMA_WRITE {} {value}", name(loc)),
            ),
            Op::RdmaRead { loc, .. } => (
                rdma_read(tag, 0, key, Self::addr(loc), 8),
                op::RDMA_READ,
                format!("RDMA_READ {}", name(loc)),
            ),
            //= docs/spec/transaction.md#4-ordering
            //= type=test
            //# TXN-4-6 [...] Every request of the same source that arrived on the FENCE's port
            //# before it, on any VC, MUST be ordered before every request of that source that
            //# arrives on that port after it
            Op::RFence { .. } => (fence(tag), op::FENCE, "FENCE".to_owned()),
            _ => return None,
        };
        let reg = reg_of(s);
        self.pending.insert(
            tag,
            Pending {
                agent: a,
                opcode,
                reg,
                what: format!("agent {a}'s {what} (tag {tag:#06x})"),
            },
        );
        self.waiting[a] += 1;
        Some(bytes)
    }

    /// Moves every agent past the `wait`s and `fence`s whose requests have all been answered.
    fn unblock(&mut self) {
        for a in 0..self.pc.len() {
            while self.waiting[a] == 0
                && matches!(self.t.prog(a).get(self.pc[a]), Some(Op::Wait | Op::Fence))
            {
                self.pc[a] += 1;
            }
        }
    }

    /// The agents that can send now.
    fn ready(&self) -> Vec<usize> {
        (0..self.pc.len())
            .filter(|&a| {
                matches!(
                    self.t.prog(a).get(self.pc[a]),
                    Some(s) if !matches!(s, Op::Wait | Op::Fence)
                )
            })
            .collect()
    }

    /// Sends one frame of agent `a`: its next step, and the steps after it on the same path, up to
    /// a drawn number (1 to 4).
    fn send_frame(&mut self, ctx: &mut Ctx<'_>, a: usize) -> Result<(), Stop> {
        let prog = self.t.prog(a);
        let first = prog[self.pc[a]];
        let (vc, alone) = Self::vc_of(&first);
        let via = |s: &Op| match s {
            Op::Load { via, .. }
            | Op::Store { via, .. }
            | Op::FetchAdd { via, .. }
            | Op::Swap { via, .. }
            | Op::RFence { via, .. } => *via,
            _ => Via::Unordered,
        };
        let path = self.path(a, via(&first));
        let most = match self.rng.below(8) {
            0..=3 => 1,
            4..=5 => 2,
            6 => 3,
            _ => 4,
        };
        let mut steps = vec![first];
        let mut pc = self.pc[a] + 1;
        while steps.len() < most && !alone {
            let Some(s) = prog.get(pc) else { break };
            let (v, lone) = Self::vc_of(s);
            if v != vc || lone || matches!(s, Op::Wait | Op::Fence) {
                break;
            }
            let p = match via(s) {
                // An unordered operation joins the frame's path half the time.
                Via::Unordered if self.rng.chance(1, 2) => path,
                Via::Unordered => break,
                v => self.path(a, v),
            };
            if p != path {
                break;
            }
            steps.push(*s);
            pc += 1;
        }
        self.pc[a] = pc;
        let mut txns = Vec::new();
        for s in &steps {
            if let Some(b) = self.request(a, s) {
                txns.push(b);
            }
        }
        ctx.peer_submit(path.port, vc, &payload(agent_gpu(a), path.id, &txns))
    }

    /// Takes the device's answers that arrived, checks each and puts its value in its register.
    fn take_answers(&mut self, ctx: &mut Ctx<'_>) -> Result<usize, Stop> {
        let mut got = 0;
        for p in 0..self.placement.ports() {
            for (vc, payload) in ctx.peer_delivered(p)? {
                let txns = parse_payload(p, vc, &payload).map_err(|e| {
                    Stop::fail(
                        "WIRE-5-2",
                        "every DATA payload the device sends parses",
                        format!("port {p} vc {vc}: {e}: payload {}", to_hex(&payload)),
                    )
                })?;
                for t in txns.into_iter().filter(|t| t.opcode >= 0x80) {
                    self.answer(&t)?;
                    got += 1;
                }
            }
        }
        Ok(got)
    }

    fn answer(&mut self, t: &Txn) -> Result<(), Stop> {
        let Some(p) = self.pending.remove(&t.tag) else {
            return Err(Stop::fail(
                "TXN-2-8",
                "exactly one response to each request the harness sent",
                format!("a response no outstanding request asked for: {}", t.show()),
            ));
        };
        self.waiting[p.agent] -= 1;
        let want = if p.opcode == op::RDMA_WRITE {
            op::RDMA_COMPLETION
        } else {
            p.opcode | 0x80
        };
        if t.opcode != want {
            return Err(Stop::fail(
                "TXN-2-8",
                format!("the response to {}: opcode {want:#04x}", p.what),
                t.show(),
            ));
        }
        if t.dst != agent_gpu(p.agent) {
            return Err(Stop::fail(
                "WIRE-6.1-2",
                format!(
                    "the response to {}: destination GPU {}, the request's source",
                    p.what,
                    agent_gpu(p.agent)
                ),
                t.show(),
            ));
        }
        if t.fs == st::BUSY {
            return Err(Stop::Inconclusive(format!(
                "the device answered {} BUSY; the litmus cases keep far below any backlog",
                p.what
            )));
        }
        if t.fs != st::OK {
            return Err(Stop::fail(
                answer_req(p.opcode),
                format!("the response to {}: status OK", p.what),
                t.show(),
            ));
        }
        if let Some(reg) = p.reg {
            if t.data.len() != 8 {
                return Err(Stop::fail(
                    answer_req(p.opcode),
                    format!("the response to {}: 8 bytes of data", p.what),
                    t.show(),
                ));
            }
            self.regs[p.agent][reg] = value_of(&t.data);
        }
        Ok(())
    }

    /// Runs until an answer arrives; fails when none comes within [`ANSWER_NS`].
    fn await_answer(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Stop> {
        let mut broke = None;
        let got = ctx.run_until(ANSWER_NS, |c| match self.take_answers(c) {
            Ok(n) => n > 0,
            Err(e) => {
                broke = Some(e);
                true
            }
        })?;
        if let Some(e) = broke {
            return Err(e);
        }
        if got {
            return Ok(());
        }
        let missing: Vec<&str> = self.pending.values().map(|p| p.what.as_str()).collect();
        Err(Stop::fail(
            "TXN-2-8",
            format!("a response to every request within {} us", ANSWER_NS / 1000),
            format!("no response to {}", missing.join(", ")),
        ))
    }

    /// Runs the test once: sends every agent's requests under this run's schedule and returns the
    /// outcome.
    fn go(&mut self, ctx: &mut Ctx<'_>) -> Result<Outcome, Stop> {
        loop {
            self.take_answers(ctx)?;
            self.unblock();
            let ready = self.ready();
            if !ready.is_empty() {
                let a = ready[self.rng.below(ready.len() as u64) as usize];
                self.send_frame(ctx, a)?;
                let gap = match self.rng.below(8) {
                    0..=2 => 0,
                    3..=4 => self.rng.range(1, 40),
                    5..=6 => self.rng.range(60, 400),
                    _ => self.rng.range(800, 3000),
                };
                if gap > 0 {
                    ctx.run_for(gap)?;
                }
            } else if !self.pending.is_empty() {
                self.await_answer(ctx)?;
            } else {
                break;
            }
        }
        // The final values: LOADs of an observer sent once every request of the run has been
        // answered, so ordered after every write (TXN-4-11); the last write of each location in
        // co is what they read.
        let n = self.t.lit.locations.len();
        let obs = self.pc.len() - 1;
        let mut txns = Vec::new();
        for l in 0..n {
            let tag = self.tag();
            txns.push(load(tag, 0, G.2, Self::addr(l), 8));
            self.pending.insert(
                tag,
                Pending {
                    agent: obs,
                    opcode: op::LOAD,
                    reg: Some(l),
                    what: format!(
                        "the final LOAD of {} (tag {tag:#06x})",
                        self.t.lit.locations[l].name
                    ),
                },
            );
            self.waiting[obs] += 1;
        }
        ctx.peer_submit(0, 0, &payload(agent_gpu(obs), 0x3F, &txns))?;
        while !self.pending.is_empty() {
            self.await_answer(ctx)?;
        }
        mem_write(ctx, Space::Global, TARGET_BASE, &vec![0; 8 * n])?;
        let mut regs = self.regs.clone();
        let mem = regs.pop().unwrap_or_default();
        Ok(Outcome { regs, mem })
    }
}

fn run_target(ctx: &mut Ctx<'_>, spec: &Spec, t: &Test) -> Result<(), Stop> {
    if t.lit
        .locations
        .iter()
        .any(|l| l.gpu != t.lit.locations[0].gpu)
    {
        return Err(Stop::Harness(format!(
            "{}: the device as the target holds every location; the test places them on two GPUs",
            t.lit.name
        )));
    }
    let placements = Placement::all(ctx.desc.ports);
    ep_up(ctx, placements.iter().map(|p| p.ports()).max().unwrap_or(1))?;
    let mut next_tag = 0x100u16;
    for placement in placements {
        let what = match placement {
            Placement::OnePort => "the device as the target, every path on its port 0".to_owned(),
            Placement::Spread(n) => {
                format!("the device as the target, paths spread over its ports 0..{n}")
            }
        };
        let mut h = Histogram::default();
        let mut first = BTreeMap::new();
        for seed in 0..RUNS {
            let mut r = TargetRun {
                t,
                placement,
                rng: Rng::new(spec.id, placement.index(), seed),
                pc: vec![0; t.lit.agents.len() + 1],
                waiting: vec![0; t.lit.agents.len() + 1],
                regs: t
                    .lit
                    .agents
                    .iter()
                    .map(|a| vec![0; a.regs.len()])
                    .chain([vec![0; t.lit.locations.len()]])
                    .collect(),
                pending: BTreeMap::new(),
                next_tag,
            };
            let o = r.go(ctx)?;
            next_tag = r.next_tag;
            first.entry(o.clone()).or_insert(seed);
            h.add(o);
        }
        ctx.note(note_of(spec, t, &what, &h));
        judge(spec, t, &what, &h, &first)?;
    }
    Ok(())
}

// ----- the device as a requester ---------------------------------------------------------------

/// One run of a test with the device as the agent of GPU 0.
struct RequesterRun<'t> {
    t: &'t Test,
    ports: u16,
    rng: Rng,
    /// The device's agent.
    dut: usize,
    pc: Vec<usize>,
    regs: Vec<Vec<u64>>,
    mem: Vec<u64>,
    /// The device's operations not yet completed: tag, register, operation.
    issued: BTreeMap<u16, (Option<usize>, String)>,
    /// The device's Fence not yet completed: its id and the operations issued before it.
    fence: Option<(u64, Vec<u16>)>,
    /// Requests that arrived and are not yet performed, per port, with their arrival times.
    queues: Vec<VecDeque<(u64, Txn)>>,
    /// The port whose requests the harness holds back, and for how long at most.
    slow: (u16, u64),
    /// When each harness agent may act next.
    next_act: Vec<u64>,
}

impl RequesterRun<'_> {
    /// The location a request of the device addresses, if it is one of the test's.
    fn location_of(&self, t: &Txn) -> Option<usize> {
        let addr = t.dword(4);
        let loc = usize::try_from(addr.checked_sub(REQ_BASE)? / 8).ok()?;
        (t.word(0) == REQ_KEY && addr.is_multiple_of(8) && loc < self.t.lit.locations.len())
            .then_some(loc)
    }

    /// Issues the device's next step, if it can go: an operation at once, a Fence that the
    /// steps after it wait for, a wait that holds them until everything before has completed.
    fn issue_next(&mut self, ctx: &mut Ctx<'_>) -> Result<bool, Stop> {
        let Some(step) = self.t.prog(self.dut).get(self.pc[self.dut]).copied() else {
            return Ok(false);
        };
        if self.fence.is_some() {
            return Ok(false);
        }
        let name = |l: usize| {
            self.t
                .lit
                .locations
                .get(l)
                .map_or("?".to_owned(), |x| x.name.clone())
        };
        let (loc, lsop, via, what) = match step {
            Op::Wait => {
                if self.issued.is_empty() {
                    self.pc[self.dut] += 1;
                    return Ok(true);
                }
                return Ok(false);
            }
            Op::Fence => {
                let r = ctx.request(&Request::Fence)?;
                let id =
                    r.id.ok_or_else(|| Stop::Harness("fence answered without an id".into()))?;
                self.fence = Some((id, self.issued.keys().copied().collect()));
                self.pc[self.dut] += 1;
                return Ok(true);
            }
            Op::Load { loc, via, .. } => (
                loc,
                LsOp::Load { len: 8 },
                via,
                format!("load {}", name(loc)),
            ),
            Op::Store { loc, value, via } => (
                loc,
                LsOp::Store {
                    data: to_hex(&value.to_le_bytes()),
                },
                via,
                format!("store {} {value}", name(loc)),
            ),
            Op::FetchAdd {
                loc, value, via, ..
            } => (
                loc,
                LsOp::FetchAdd { width: 8, value },
                via,
                format!("fetch_add {} {value}", name(loc)),
            ),
            Op::Swap {
                loc, value, via, ..
            } => (
                loc,
                LsOp::Swap { width: 8, value },
                via,
                format!("swap {} {value}", name(loc)),
            ),
            other => {
                return Err(Stop::Harness(format!(
                    "{}: the device as a requester cannot be given {other:?}",
                    self.t.lit.name
                )));
            }
        };
        let stream = match via {
            Via::Stream(k) => Some(k),
            Via::Unordered => None,
            Via::Port(p) => {
                return Err(Stop::Harness(format!(
                    "{}: the line protocol names no port for an operation (port {p})",
                    self.t.lit.name
                )));
            }
        };
        let reg = reg_of(&step);
        let r = ctx.request(&Request::Issue {
            dst: REM,
            space: Space::Global,
            key: REQ_KEY,
            addr: REQ_BASE + 8 * loc as u64,
            op: lsop,
            stream,
            port: None,
        })?;
        let tag = r
            .tag
            .ok_or_else(|| Stop::Harness("issue answered without a tag".into()))?;
        self.issued
            .insert(tag, (reg, format!("the device's {what} (tag {tag:#06x})")));
        self.pc[self.dut] += 1;
        Ok(true)
    }

    /// Takes the device's completions and the requests that arrived.
    fn take(&mut self, ctx: &mut Ctx<'_>) -> Result<(), Stop> {
        let now = ctx.now();
        for p in 0..self.ports {
            for (vc, payload) in ctx.peer_delivered(p)? {
                let txns = parse_payload(p, vc, &payload).map_err(|e| {
                    Stop::fail(
                        "WIRE-5-2",
                        "every DATA payload the device sends parses",
                        format!("port {p} vc {vc}: {e}: payload {}", to_hex(&payload)),
                    )
                })?;
                for t in txns {
                    if t.opcode < 0x80 {
                        self.queues[usize::from(p)].push_back((now, t));
                    }
                }
            }
        }
        let outs = ctx.take_outputs();
        let mut fences = Vec::new();
        for o in outs {
            let Output::Completion {
                tag,
                id,
                status,
                data,
            } = o
            else {
                continue;
            };
            if let Some(tag) = tag {
                let Some((reg, what)) = self.issued.remove(&tag) else {
                    return Err(Stop::fail(
                        "TXN-3-1",
                        "exactly one completion per operation",
                        format!(
                            "a completion of tag {tag:#06x}, which no operation outstanding has"
                        ),
                    ));
                };
                if status != "OK" {
                    return Err(Stop::fail(
                        "TXN-3-1",
                        format!("{what} completes OK: the harness answered it OK"),
                        format!("status {status}"),
                    ));
                }
                if let Some(reg) = reg {
                    let bytes = data
                        .as_deref()
                        .and_then(|d| hex::decode(d).ok())
                        .unwrap_or_default();
                    if bytes.len() != 8 {
                        return Err(Stop::fail(
                            "TXN-3-3",
                            format!("{what} completes with the 8 bytes the harness answered"),
                            format!("data {}", data.unwrap_or_default()),
                        ));
                    }
                    self.regs[self.dut][reg] = value_of(&bytes);
                }
            } else if let Some(id) = id {
                fences.push((id, status));
            }
        }
        // Completions of one advance come together: the operations' first, then the Fence's.
        for (id, status) in fences {
            let Some((fid, before)) = self.fence.take() else {
                continue;
            };
            if fid != id {
                self.fence = Some((fid, before));
                continue;
            }
            if status != "OK" {
                return Err(Stop::fail(
                    "TXN-4-5",
                    "the Fence completes OK",
                    format!("status {status}"),
                ));
            }
            let open: Vec<&str> = before
                .iter()
                .filter_map(|t| self.issued.get(t).map(|(_, w)| w.as_str()))
                .collect();
            if !open.is_empty() {
                // TXN-4-5: the Fence completes only once everything before it has.
                return Err(Stop::fail(
                    "TXN-4-5",
                    "the Fence completes only after every operation issued before it",
                    format!(
                        "the Fence completed while {} had not (the harness had not answered)",
                        open.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Performs the request at the head of port `p`'s queue on the harness's memory and answers
    /// it.
    fn perform(&mut self, ctx: &mut Ctx<'_>, p: u16) -> Result<(), Stop> {
        let Some((_, t)) = self.queues[usize::from(p)].pop_front() else {
            return Ok(());
        };
        if t.vc != 0 {
            return Err(Stop::fail(
                "EP-3-1",
                "load-store requests on VC 0",
                t.show(),
            ));
        }
        let bad = |req: &'static str| {
            Stop::fail(
                req,
                "a request for one of the 8-byte locations the device was given to access",
                t.show(),
            )
        };
        let data = match t.opcode {
            op::FENCE => Vec::new(),
            op::LOAD | op::STORE | op::FADD | op::SWAP => {
                let loc = self
                    .location_of(&t)
                    .ok_or_else(|| bad(answer_req(t.opcode)))?;
                let old = self.mem[loc];
                match t.opcode {
                    op::LOAD if t.half(12) == 8 => le(old, 8),
                    op::STORE if t.data.len() == 8 => {
                        self.mem[loc] = value_of(&t.data);
                        Vec::new()
                    }
                    op::FADD if t.data.len() == 8 => {
                        self.mem[loc] = old.wrapping_add(value_of(&t.data));
                        le(old, 8)
                    }
                    op::SWAP if t.data.len() == 8 => {
                        self.mem[loc] = value_of(&t.data);
                        le(old, 8)
                    }
                    _ => return Err(bad(answer_req(t.opcode))),
                }
            }
            _ => return Err(bad("TXN-2-1")),
        };
        let r = resp(t.opcode | 0x80, st::OK, t.tag, &data);
        let mut payload = DUT.to_be_bytes().to_vec();
        payload.extend(REM.to_be_bytes());
        payload.push(0);
        payload.push(1);
        payload.extend((r.len() as u16).to_be_bytes());
        payload.extend(r);
        ctx.peer_submit(p, 2, &payload)
    }

    /// Performs harness agent `a`'s next step at once on the harness's memory.
    fn agent_step(&mut self, a: usize) {
        let Some(step) = self.t.prog(a).get(self.pc[a]).copied() else {
            return;
        };
        self.pc[a] += 1;
        match step {
            Op::Store { loc, value, .. } | Op::RdmaWrite { loc, value } => self.mem[loc] = value,
            Op::Load { reg, loc, .. } | Op::RdmaRead { reg, loc } => {
                self.regs[a][reg] = self.mem[loc];
            }
            Op::FetchAdd {
                reg, loc, value, ..
            } => {
                self.regs[a][reg] = self.mem[loc];
                self.mem[loc] = self.mem[loc].wrapping_add(value);
            }
            Op::Swap {
                reg, loc, value, ..
            } => {
                self.regs[a][reg] = self.mem[loc];
                self.mem[loc] = value;
            }
            _ => {}
        }
    }

    /// The ports whose head request the harness may perform now: the slow port's only when no
    /// other port has one waiting, or once it has waited its hold.
    fn performable(&self, now: u64) -> Vec<u16> {
        let waiting: Vec<u16> = (0..self.ports)
            .filter(|&p| !self.queues[usize::from(p)].is_empty())
            .collect();
        let (slow, hold) = self.slow;
        let others = waiting.iter().any(|&p| p != slow);
        waiting
            .into_iter()
            .filter(|&p| {
                p != slow
                    || !others
                        && self.queues[usize::from(p)]
                            .front()
                            .is_some_and(|(at, _)| now >= at + hold)
            })
            .collect()
    }

    fn go(&mut self, ctx: &mut Ctx<'_>) -> Result<Outcome, Stop> {
        let start = ctx.now();
        loop {
            self.take(ctx)?;
            let now = ctx.now();
            let ports = self.performable(now);
            let agents: Vec<usize> = (0..self.pc.len())
                .filter(|&a| a != self.dut && self.pc[a] < self.t.prog(a).len())
                .collect();
            let due: Vec<usize> = agents
                .iter()
                .copied()
                .filter(|&a| self.next_act[a] <= now)
                .collect();
            // What may happen now: the device issues, a port's request is performed, a harness
            // agent acts; or time passes.
            let mut acted = false;
            match self.rng.below(4) {
                0 => {
                    // A burst of one to three of the device's steps at once.
                    for _ in 0..self.rng.range(1, 3) {
                        if !self.issue_next(ctx)? {
                            break;
                        }
                        acted = true;
                    }
                }
                1 if !ports.is_empty() => {
                    let p = ports[self.rng.below(ports.len() as u64) as usize];
                    self.perform(ctx, p)?;
                    acted = true;
                }
                2 if !due.is_empty() => {
                    let a = due[self.rng.below(due.len() as u64) as usize];
                    self.agent_step(a);
                    self.next_act[a] = now + self.rng.range(0, 1500);
                    acted = true;
                }
                _ => {}
            }
            let dut_done = self.pc[self.dut] >= self.t.prog(self.dut).len()
                && self.issued.is_empty()
                && self.fence.is_none();
            let queued = self.queues.iter().any(|q| !q.is_empty());
            if dut_done && !queued && agents.is_empty() {
                break;
            }
            if !acted || self.rng.chance(1, 2) {
                let gap = match self.rng.below(4) {
                    0 => self.rng.range(1, 20),
                    1..=2 => self.rng.range(20, 200),
                    _ => self.rng.range(200, 1500),
                };
                ctx.run_for(gap)?;
            }
            if ctx.now() > start + ANSWER_NS {
                let open: Vec<&str> = self.issued.values().map(|(_, w)| w.as_str()).collect();
                return Err(Stop::fail(
                    "TXN-3-1",
                    format!(
                        "every operation of the device's program sent and completed within {} us",
                        ANSWER_NS / 1000
                    ),
                    format!(
                        "outstanding: [{}]; the Fence {}; step {} of {}",
                        open.join(", "),
                        if self.fence.is_some() {
                            "not complete"
                        } else {
                            "none or complete"
                        },
                        self.pc[self.dut],
                        self.t.prog(self.dut).len()
                    ),
                ));
            }
        }
        Ok(Outcome {
            regs: self.regs.clone(),
            mem: self.mem.clone(),
        })
    }
}

fn run_requester(ctx: &mut Ctx<'_>, spec: &Spec, t: &Test) -> Result<(), Stop> {
    let dut = t
        .lit
        .agents
        .iter()
        .position(|a| a.gpu == 0)
        .ok_or_else(|| {
            Stop::Harness(format!(
                "{}: no agent of GPU 0 for the device to play",
                t.lit.name
            ))
        })?;
    for placement in Placement::all(ctx.desc.ports) {
        let ports = placement.ports();
        ep_up(ctx, ports)?;
        let what = match placement {
            Placement::OnePort => "the device as agent {dut}, its port 0 up".to_owned(),
            Placement::Spread(n) => format!("the device as agent {dut}, its ports 0..{n} up"),
        }
        .replace("{dut}", &dut.to_string());
        let mut h = Histogram::default();
        let mut first = BTreeMap::new();
        for seed in 0..RUNS {
            let mut rng = Rng::new(spec.id, placement.index(), seed);
            let slow = (rng.below(u64::from(ports)) as u16, rng.range(0, 4000));
            let mut r = RequesterRun {
                t,
                ports,
                rng,
                dut,
                pc: vec![0; t.lit.agents.len()],
                regs: t.lit.agents.iter().map(|a| vec![0; a.regs.len()]).collect(),
                mem: vec![0; t.lit.locations.len()],
                issued: BTreeMap::new(),
                fence: None,
                queues: vec![VecDeque::new(); usize::from(ports)],
                slow,
                next_act: Vec::new(),
            };
            let start = ctx.now();
            r.next_act = (0..t.lit.agents.len())
                .map(|_| start + r.rng.range(0, 3000))
                .collect();
            let o = r.go(ctx)?;
            first.entry(o.clone()).or_insert(seed);
            h.add(o);
        }
        ctx.note(note_of(spec, t, &what, &h));
        judge(spec, t, &what, &h, &first)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_reads_and_every_case_has_its_runner() {
        assert_eq!(SPECS.len(), RUNNERS.len());
        for s in SPECS {
            let t = parse(s.text).unwrap_or_else(|e| panic!("{}: {e}", s.id));
            assert!(!t.lit.forbidden.is_empty(), "{}: forbids nothing", s.id);
            assert!(s.reqs.contains(&s.forbids), "{}", s.id);
            if s.family == Family::Requester {
                assert!(t.lit.agents.iter().any(|a| a.gpu == 0), "{}", s.id);
            }
        }
    }

    /// Every test's `forbidden` states are states the model allows no execution to end in, its
    /// `allowed` states states some execution ends in, and the model can enumerate it.
    #[test]
    fn every_test_agrees_with_the_model() {
        for s in SPECS {
            let t = parse(s.text).unwrap_or_else(|e| panic!("{}: {e}", s.id));
            let allowed = t
                .allowed
                .as_ref()
                .unwrap_or_else(|| panic!("{}: too large for the model", s.id));
            for c in &t.lit.forbidden {
                let o = allowed.iter().find(|o| c.holds(o));
                assert!(o.is_none(), "{}: {} is allowed: {o:?}", s.id, c.text);
            }
            for c in &t.lit.allowed {
                assert!(allowed.iter().any(|o| c.holds(o)), "{}: {}", s.id, c.text);
            }
        }
    }

    #[test]
    fn rfence_is_read_with_its_path() {
        let t = parse(include_str!(
            "../../../litmus/as-target/MP+stream+rfence.toml"
        ))
        .unwrap();
        assert!(matches!(
            t.prog(1)[1],
            Op::RFence {
                via: Via::Stream(0),
                ..
            }
        ));
        assert!(matches!(t.prog(1)[2], Op::Load { .. }));
    }
}
