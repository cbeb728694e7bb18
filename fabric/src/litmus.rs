//! Litmus tests for the EthLink memory model (transaction.md §4): small programs of a few agents
//! (GPUs) that load and store named locations over chosen paths, with the final states the model
//! forbids, and the outcomes of many runs of them.
//!
//! # The text form
//!
//! One test per TOML file:
//!
//! ```toml
//! # MP: data, then a flag, on one port; the reader reads the flag, then the data, with a FENCE
//! # request on its port between its loads.
//! name = "MP+rfences"
//! doc = "a FENCE request orders two loads of one port (TXN-4-6); two stores of one path stay in order (TXN-4-1)"
//! forbidden = ["1:r0=1 & 1:r1=0"]
//!
//! [locations]          # name = the GPU whose memory holds it; every location starts at 0
//! x = 1
//! y = 1
//!
//! [[agents]]           # agent 0
//! gpu = 0
//! ops = ["store x 1 port 0", "store y 1 port 0"]
//!
//! [[agents]]           # agent 1
//! gpu = 2
//! ops = ["load r0 y port 0", "rfence x port 0", "load r1 x port 0"]
//! ```
//!
//! A location is 8 bytes, naturally aligned, in the memory of its GPU; values are unsigned 64-bit
//! integers written little-endian. An agent issues its operations in the order listed (its
//! *program order*), each as soon as the one before it has been issued, unless a `wait` or a
//! `fence` stands between them. Operations (one string each, words separated by spaces):
//!
//! | operation | meaning |
//! |---|---|
//! | `store LOC V [VIA]` | an 8-byte STORE of `V` |
//! | `load REG LOC [VIA]` | an 8-byte LOAD into register `REG` (`r0`, `r1`, ...) |
//! | `fetch_add REG LOC V [VIA]` | an 8-byte FETCH_ADD of `V`; `REG` gets the old value |
//! | `swap REG LOC V [VIA]` | an 8-byte SWAP; `REG` gets the old value |
//! | `rfence LOC [VIA]` | a FENCE request (TXN-4-6) to the GPU that holds `LOC`, on `VIA`'s path: it orders what the agent sent that GPU on that port before it against what it sends there after it; what follows is issued at once (as after a store), and a `wait` waits for its answer too |
//! | `rdma_write LOC V` | an RDMA write of the 8 bytes of `V` (TXN-4-4: ordered only by completion and fences) |
//! | `rdma_read REG LOC` | an RDMA read of the 8 bytes into `REG` |
//! | `fence` | the Fence operation (TXN-4-5): issued after everything before it, and what comes after waits for its completion |
//! | `wait` | what comes after waits until everything before has completed (TXN-4-11) |
//!
//! `VIA` is `stream K` (the agent's ordered stream `K`, EP-4-1: one path while it has operations
//! outstanding), `port P` (the agent's port `P`, numbered stack by stack as endpoint.md §1
//! numbers them: port `P` is port `P % ports_per_stack` of stack `P / ports_per_stack`; the
//! operation goes on it while it is usable, EP-4-6, and the fabric's runner refuses a `P` its
//! GPUs do not have) or `unordered` (a path chosen per operation); left out, `stream 0`. Two
//! operations of an agent are on one path when they name the same `stream K` or the same
//! `port P` and go to the same GPU.
//!
//! A condition is a conjunction, terms joined by `&`: `A:REG=V` (register `REG` of agent `A`
//! at the end) or `LOC=V` (the location's final value). `forbidden` lists the final states the
//! model rules out: a run that reaches one fails. `allowed` lists states the model allows that
//! are worth seeing (the reports say whether they were seen); neither list need be complete.
//!
//! # The model
//!
//! [`Litmus::model_outcomes`] gives every final state the EthLink 1.3 ordering model
//! (transaction.md §4) allows a test, by enumerating its candidate executions: a coherence order
//! of the writes to each location and a write (or the initial 0) for each read, kept when
//! `ob | rf | co | fr` is acyclic (TXN-4-13) and every atomic's read and write are adjacent in
//! co (TXN-4-10). `ob` is made of:
//!
//! - path order (TXN-4-1): two accesses of an agent on one path, when both write (a store or an
//!   atomic) or both touch one location; nothing else on a path is ordered: a load may pass an
//!   earlier load, or an earlier store to another location, and a store an earlier load of
//!   another location;
//! - FENCE order (TXN-4-6): an access before an `rfence` and one after it, both on the
//!   `rfence`'s path (its port, to its GPU);
//! - completion order (TXN-4-11, TXN-4-5): everything before a `wait` or a `fence` and
//!   everything after it.
//!
//! RDMA accesses are in no path order and no FENCE order (TXN-4-4), and operations on different
//! paths are ordered only by completion (TXN-4-3). The catalogue's `forbidden` states are states
//! no allowed outcome meets, its `allowed` states states some allowed outcome meets; the
//! fabric's tests check both, and that the reference never ends outside the model.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;

/// Most agents, locations, operations of one agent and registers of one agent a test may have.
pub const MAX_AGENTS: usize = 8;
/// Most locations of a test.
pub const MAX_LOCATIONS: usize = 16;
/// Most operations of one agent.
pub const MAX_OPS: usize = 16;

/// A litmus test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Litmus {
    /// Its name (`MP+streams`).
    pub name: String,
    /// What it shows, in a sentence.
    pub doc: String,
    /// The locations, by name, with the GPU that holds each.
    pub locations: Vec<Location>,
    /// The agents, in the order the conditions number them.
    pub agents: Vec<Agent>,
    /// Final states the model forbids.
    pub forbidden: Vec<Cond>,
    /// Final states the model allows that are worth seeing.
    pub allowed: Vec<Cond>,
}

/// A location: 8 bytes in the memory of a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Its name.
    pub name: String,
    /// The GPU that holds it.
    pub gpu: u16,
}

/// One agent: a GPU and its program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// The GPU that runs it.
    pub gpu: u16,
    /// Its operations, in program order.
    pub ops: Vec<Op>,
    /// Its registers, by name, in the order they first appear.
    pub regs: Vec<String>,
}

/// How an operation travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Via {
    /// On ordered stream `k` of its agent (EP-4-1).
    Stream(u32),
    /// In order on port `p` of its agent.
    Port(u16),
    /// On a path chosen for it alone.
    Unordered,
}

/// One operation of an agent. Locations and registers are indexes into [`Litmus::locations`]
/// and [`Agent::regs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// An 8-byte STORE.
    Store {
        /// Where.
        loc: usize,
        /// What.
        value: u64,
        /// How.
        via: Via,
    },
    /// An 8-byte LOAD.
    Load {
        /// Into.
        reg: usize,
        /// From.
        loc: usize,
        /// How.
        via: Via,
    },
    /// An 8-byte FETCH_ADD.
    FetchAdd {
        /// The old value, into.
        reg: usize,
        /// Where.
        loc: usize,
        /// Added.
        value: u64,
        /// How.
        via: Via,
    },
    /// An 8-byte SWAP.
    Swap {
        /// The old value, into.
        reg: usize,
        /// Where.
        loc: usize,
        /// Written.
        value: u64,
        /// How.
        via: Via,
    },
    /// An RDMA write of 8 bytes.
    RdmaWrite {
        /// Where.
        loc: usize,
        /// What.
        value: u64,
    },
    /// An RDMA read of 8 bytes.
    RdmaRead {
        /// Into.
        reg: usize,
        /// From.
        loc: usize,
    },
    /// A FENCE request (TXN-4-6) to the GPU that holds `loc`: it does not hold back what
    /// follows.
    RFence {
        /// A location of the target GPU (only its GPU counts).
        loc: usize,
        /// How.
        via: Via,
    },
    /// The Fence operation (TXN-4-5).
    Fence,
    /// Everything before completes before anything after is issued.
    Wait,
}

/// One term of a condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Term {
    /// Register `reg` of agent `agent` holds `value`.
    Reg {
        /// The agent.
        agent: usize,
        /// Its register.
        reg: usize,
        /// The value.
        value: u64,
    },
    /// Location `loc` ends holding `value`.
    Mem {
        /// The location.
        loc: usize,
        /// The value.
        value: u64,
    },
}

/// A conjunction of terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cond {
    /// The terms, all of which must hold.
    pub terms: Vec<Term>,
    /// As written in the test.
    pub text: String,
}

/// The final state of one run: every agent's registers and every location.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Outcome {
    /// Per agent, its registers in [`Agent::regs`] order.
    pub regs: Vec<Vec<u64>>,
    /// Per location, its final value.
    pub mem: Vec<u64>,
}

impl Cond {
    /// Whether `o` meets every term.
    pub fn holds(&self, o: &Outcome) -> bool {
        self.terms.iter().all(|t| match *t {
            Term::Reg { agent, reg, value } => {
                o.regs.get(agent).and_then(|r| r.get(reg)) == Some(&value)
            }
            Term::Mem { loc, value } => o.mem.get(loc) == Some(&value),
        })
    }
}

/// Why a test's text was refused: where, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitmusError {
    /// Where: a key (`agents.1.ops.0`) or `toml`.
    pub at: String,
    /// What.
    pub reason: String,
}

impl fmt::Display for LitmusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.at, self.reason)
    }
}

impl std::error::Error for LitmusError {}

pub(crate) fn err<T>(at: impl Into<String>, reason: impl Into<String>) -> Result<T, LitmusError> {
    Err(LitmusError {
        at: at.into(),
        reason: reason.into(),
    })
}

/// The shape of the file, before names are resolved.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    name: String,
    #[serde(default)]
    doc: String,
    locations: BTreeMap<String, u16>,
    agents: Vec<RawAgent>,
    #[serde(default)]
    forbidden: Vec<String>,
    #[serde(default)]
    allowed: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    gpu: u16,
    ops: Vec<String>,
}

/// A word that names something: letters, digits and `_`, not starting with a digit.
fn is_name(s: &str) -> bool {
    s.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A value: decimal, or hexadecimal after `0x`.
fn value(at: &str, s: &str) -> Result<u64, LitmusError> {
    let v = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse::<u64>(),
    };
    v.or_else(|_| err(at, format!("`{s}` is not a 64-bit unsigned value")))
}

impl Litmus {
    /// Reads a test from its TOML text.
    pub fn parse(text: &str) -> Result<Litmus, LitmusError> {
        let raw: Raw = toml::from_str(text).or_else(|e| err("toml", e.to_string()))?;
        if raw.name.is_empty() || raw.name.len() > 64 || raw.name.chars().any(char::is_control) {
            return err(
                "name",
                "1 to 64 characters, none of them control characters",
            );
        }
        if raw.locations.is_empty() || raw.locations.len() > MAX_LOCATIONS {
            return err("locations", format!("1 to {MAX_LOCATIONS} locations"));
        }
        let mut locations = Vec::new();
        for (name, &gpu) in &raw.locations {
            if !is_name(name) || name.starts_with('r') && name[1..].parse::<u32>().is_ok() {
                return err(
                    format!("locations.{name}"),
                    "a name of letters, digits and _, not a register name (r0, r1, ...)",
                );
            }
            if gpu == 0xFFFF {
                return err(format!("locations.{name}"), "GPU 0xFFFF is reserved");
            }
            locations.push(Location {
                name: name.clone(),
                gpu,
            });
        }
        if raw.agents.is_empty() || raw.agents.len() > MAX_AGENTS {
            return err("agents", format!("1 to {MAX_AGENTS} agents"));
        }
        let loc_of = |at: &str, name: &str| {
            locations
                .iter()
                .position(|l| l.name == name)
                .map_or_else(|| err(at, format!("no location `{name}`")), Ok)
        };
        let mut agents = Vec::new();
        for (a, ra) in raw.agents.iter().enumerate() {
            if ra.gpu == 0xFFFF {
                return err(format!("agents.{a}.gpu"), "GPU 0xFFFF is reserved");
            }
            if ra.ops.is_empty() || ra.ops.len() > MAX_OPS {
                return err(
                    format!("agents.{a}.ops"),
                    format!("1 to {MAX_OPS} operations"),
                );
            }
            let mut regs: Vec<String> = Vec::new();
            let mut ops = Vec::new();
            for (k, text) in ra.ops.iter().enumerate() {
                let at = format!("agents.{a}.ops.{k}");
                let mut reg_of = |name: &str| {
                    if !(name.starts_with('r') && name[1..].parse::<u32>().is_ok()) {
                        return err(&at, format!("`{name}` is not a register (r0, r1, ...)"));
                    }
                    Ok(match regs.iter().position(|r| r == name) {
                        Some(i) => i,
                        None => {
                            regs.push(name.to_owned());
                            regs.len() - 1
                        }
                    })
                };
                let words: Vec<&str> = text.split_whitespace().collect();
                let (head, via) = split_via(&at, &words)?;
                let op = match head {
                    ["store", l, v] => Op::Store {
                        loc: loc_of(&at, l)?,
                        value: value(&at, v)?,
                        via,
                    },
                    ["load", r, l] => Op::Load {
                        reg: reg_of(r)?,
                        loc: loc_of(&at, l)?,
                        via,
                    },
                    ["fetch_add", r, l, v] => Op::FetchAdd {
                        reg: reg_of(r)?,
                        loc: loc_of(&at, l)?,
                        value: value(&at, v)?,
                        via,
                    },
                    ["swap", r, l, v] => Op::Swap {
                        reg: reg_of(r)?,
                        loc: loc_of(&at, l)?,
                        value: value(&at, v)?,
                        via,
                    },
                    ["rdma_write", l, v] if words.len() == 3 => Op::RdmaWrite {
                        loc: loc_of(&at, l)?,
                        value: value(&at, v)?,
                    },
                    ["rdma_read", r, l] if words.len() == 3 => Op::RdmaRead {
                        reg: reg_of(r)?,
                        loc: loc_of(&at, l)?,
                    },
                    ["rfence", l] => Op::RFence {
                        loc: loc_of(&at, l)?,
                        via,
                    },
                    ["fence"] if words.len() == 1 => Op::Fence,
                    ["wait"] if words.len() == 1 => Op::Wait,
                    _ => {
                        return err(
                            &at,
                            format!(
                                "`{text}` is not an operation: store LOC V, load REG LOC, \
                                 fetch_add REG LOC V, swap REG LOC V (each with an optional \
                                 `stream K`, `port P` or `unordered`), rfence LOC (with the \
                                 same), rdma_write LOC V, rdma_read REG LOC, fence or wait"
                            ),
                        );
                    }
                };
                if let Op::Store { loc, .. }
                | Op::Load { loc, .. }
                | Op::FetchAdd { loc, .. }
                | Op::Swap { loc, .. }
                | Op::RdmaWrite { loc, .. }
                | Op::RdmaRead { loc, .. }
                | Op::RFence { loc, .. } = op
                    && locations.get(loc).is_some_and(|l| l.gpu == ra.gpu)
                {
                    return err(
                        &at,
                        "the location is in the agent's own GPU: an agent reaches only other \
                         GPUs' memory",
                    );
                }
                ops.push(op);
            }
            agents.push(Agent {
                gpu: ra.gpu,
                ops,
                regs,
            });
        }
        let mut t = Litmus {
            name: raw.name,
            doc: raw.doc,
            locations,
            agents,
            forbidden: Vec::new(),
            allowed: Vec::new(),
        };
        for (i, c) in raw.forbidden.iter().enumerate() {
            let c = t.cond(&format!("forbidden.{i}"), c)?;
            t.forbidden.push(c);
        }
        for (i, c) in raw.allowed.iter().enumerate() {
            let c = t.cond(&format!("allowed.{i}"), c)?;
            t.allowed.push(c);
        }
        Ok(t)
    }

    /// Reads a condition.
    fn cond(&self, at: &str, text: &str) -> Result<Cond, LitmusError> {
        let mut terms = Vec::new();
        for part in text.split('&') {
            let part = part.trim();
            let Some((lhs, rhs)) = part.split_once('=') else {
                return err(at, format!("`{part}` is not A:REG=V or LOC=V"));
            };
            let (lhs, v) = (lhs.trim(), value(at, rhs.trim())?);
            let term = match lhs.split_once(':') {
                Some((a, r)) => {
                    let agent = a
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .filter(|&a| a < self.agents.len())
                        .map_or_else(|| err(at, format!("no agent `{a}`")), Ok)?;
                    let reg = self.agents[agent]
                        .regs
                        .iter()
                        .position(|x| x == r.trim())
                        .map_or_else(
                            || err(at, format!("agent {agent} has no register `{}`", r.trim())),
                            Ok,
                        )?;
                    Term::Reg {
                        agent,
                        reg,
                        value: v,
                    }
                }
                None => Term::Mem {
                    loc: self
                        .locations
                        .iter()
                        .position(|l| l.name == lhs)
                        .map_or_else(|| err(at, format!("no location `{lhs}`")), Ok)?,
                    value: v,
                },
            };
            terms.push(term);
        }
        Ok(Cond {
            terms,
            text: text.trim().to_owned(),
        })
    }

    /// Whether the test can run on GPUs `0..gpus` of `stacks` stacks of `ports_per_stack` ports
    /// each: every GPU it names exists, and every port (`port P`).
    pub fn fits(&self, gpus: u16, stacks: u8, ports_per_stack: u8) -> Result<(), LitmusError> {
        if self.max_gpu() >= gpus {
            return err(
                "agents",
                format!(
                    "the test names GPU {}, and the topology has {gpus} GPUs",
                    self.max_gpu()
                ),
            );
        }
        let ports = usize::from(stacks) * usize::from(ports_per_stack);
        for (a, agent) in self.agents.iter().enumerate() {
            for (k, op) in agent.ops.iter().enumerate() {
                let via = match *op {
                    Op::Store { via, .. }
                    | Op::Load { via, .. }
                    | Op::FetchAdd { via, .. }
                    | Op::Swap { via, .. }
                    | Op::RFence { via, .. } => via,
                    Op::RdmaWrite { .. } | Op::RdmaRead { .. } | Op::Fence | Op::Wait => continue,
                };
                if let Via::Port(p) = via
                    && usize::from(p) >= ports
                {
                    return err(
                        format!("agents.{a}.ops.{k}"),
                        format!(
                            "`port {p}`: the GPUs have {ports} ports ({stacks} stacks of \
                             {ports_per_stack}), numbered 0 to {}",
                            ports.saturating_sub(1)
                        ),
                    );
                }
            }
        }
        Ok(())
    }

    /// The highest GPU id the test names.
    pub fn max_gpu(&self) -> u16 {
        let a = self.agents.iter().map(|a| a.gpu);
        let l = self.locations.iter().map(|l| l.gpu);
        a.chain(l).max().unwrap_or(0)
    }

    /// `o` written as the reports write a state: every register, then every location.
    pub fn show(&self, o: &Outcome) -> String {
        let mut s = String::new();
        for (a, regs) in o.regs.iter().enumerate() {
            for (r, v) in regs.iter().enumerate() {
                let name = self
                    .agents
                    .get(a)
                    .and_then(|x| x.regs.get(r))
                    .map_or("?", String::as_str);
                s.push_str(&format!("{a}:{name}={v}; "));
            }
        }
        for (l, v) in o.mem.iter().enumerate() {
            let name = self.locations.get(l).map_or("?", |x| x.name.as_str());
            s.push_str(&format!("{name}={v}; "));
        }
        s.trim_end().to_owned()
    }
}

/// Most candidate executions [`Litmus::model_outcomes`] enumerates before it gives up.
pub const MAX_CANDIDATES: u64 = 1 << 20;

/// What an access writes: a value, or the value it read plus an addend (FETCH_ADD).
#[derive(Debug, Clone, Copy)]
enum Writes {
    Value(u64),
    Add(u64),
}

/// One access of an execution: a memory event on one location (TXN-4-8).
#[derive(Debug, Clone, Copy)]
struct Event {
    agent: usize,
    /// Its place in the agent's program.
    pos: usize,
    loc: usize,
    reads: bool,
    writes: Option<Writes>,
    /// The register a read returns into.
    reg: Option<usize>,
    /// Its path, when the test fixes one: a stream or a port, and the target GPU. RDMA and
    /// unordered accesses have none.
    path: Option<(Via, u16)>,
}

impl Litmus {
    /// The events of the test's accesses, agent by agent in program order.
    fn events(&self) -> Vec<Event> {
        let mut out = Vec::new();
        for (a, agent) in self.agents.iter().enumerate() {
            for (pos, op) in agent.ops.iter().enumerate() {
                let (loc, reads, writes, reg, via) = match *op {
                    Op::Store { loc, value, via } => {
                        (loc, false, Some(Writes::Value(value)), None, Some(via))
                    }
                    Op::Load { reg, loc, via } => (loc, true, None, Some(reg), Some(via)),
                    Op::FetchAdd {
                        reg,
                        loc,
                        value,
                        via,
                    } => (loc, true, Some(Writes::Add(value)), Some(reg), Some(via)),
                    Op::Swap {
                        reg,
                        loc,
                        value,
                        via,
                    } => (loc, true, Some(Writes::Value(value)), Some(reg), Some(via)),
                    Op::RdmaWrite { loc, value } => {
                        (loc, false, Some(Writes::Value(value)), None, None)
                    }
                    Op::RdmaRead { reg, loc } => (loc, true, None, Some(reg), None),
                    Op::RFence { .. } | Op::Fence | Op::Wait => continue,
                };
                out.push(Event {
                    agent: a,
                    pos,
                    loc,
                    reads,
                    writes,
                    reg,
                    path: self.path(via, loc),
                });
            }
        }
        out
    }

    /// The path an operation by `via` to the GPU of `loc` is known to take, if any.
    fn path(&self, via: Option<Via>, loc: usize) -> Option<(Via, u16)> {
        let gpu = self.locations.get(loc)?.gpu;
        match via? {
            Via::Unordered => None,
            v => Some((v, gpu)),
        }
    }

    /// Whether the model orders event `a` before event `b` of the same agent, `a` first in
    /// program order: `ob` without its transitive part (TXN-4-13).
    fn ob(&self, a: &Event, b: &Event) -> bool {
        if a.agent != b.agent || a.pos >= b.pos {
            return false;
        }
        let ops = self
            .agents
            .get(a.agent)
            .map_or(&[][..], |x| x.ops.as_slice());
        let between = ops.get(a.pos + 1..b.pos).unwrap_or(&[]);
        // Completion order: a `wait` or a Fence between them (TXN-4-11, TXN-4-5).
        if between.iter().any(|o| matches!(o, Op::Wait | Op::Fence)) {
            return true;
        }
        let Some(path) = a.path.filter(|p| b.path == Some(*p)) else {
            return false;
        };
        // Path order: both write, or one location (TXN-4-1).
        if a.writes.is_some() && b.writes.is_some() || a.loc == b.loc {
            return true;
        }
        // FENCE order: a FENCE request on their path between them (TXN-4-6).
        between.iter().any(|o| match *o {
            Op::RFence { loc, via } => self.path(Some(via), loc) == Some(path),
            _ => false,
        })
    }

    /// Every final state the EthLink 1.3 ordering model (transaction.md §4) allows this test,
    /// with every operation completed OK (the [module documentation](self) says how it is
    /// found); `None` when the test has more than [`MAX_CANDIDATES`] candidate executions.
    pub fn model_outcomes(&self) -> Option<std::collections::BTreeSet<Outcome>> {
        let ev = self.events();
        let n = ev.len();
        // The writes of each location, and each read's choices: the initial value or a write.
        let mut writes: Vec<Vec<usize>> = vec![Vec::new(); self.locations.len()];
        for (i, e) in ev.iter().enumerate() {
            if e.writes.is_some() {
                writes.get_mut(e.loc)?.push(i);
            }
        }
        let perms: Vec<Vec<Vec<usize>>> = writes.iter().map(|w| permutations(w)).collect();
        let reads: Vec<usize> = (0..n).filter(|&i| ev[i].reads).collect();
        let choices: Vec<Vec<Option<usize>>> = reads
            .iter()
            .map(|&r| {
                let mut c = vec![None];
                c.extend(
                    writes[ev[r].loc]
                        .iter()
                        .filter(|&&w| w != r)
                        .map(|&w| Some(w)),
                );
                c
            })
            .collect();
        let radix: Vec<usize> = perms
            .iter()
            .map(Vec::len)
            .chain(choices.iter().map(Vec::len))
            .collect();
        let total = radix
            .iter()
            .try_fold(1u64, |acc, &r| acc.checked_mul(r as u64))?;
        if total > MAX_CANDIDATES {
            return None;
        }
        // The ob edges do not depend on the candidate.
        let mut ob: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, a) in ev.iter().enumerate() {
            for (j, b) in ev.iter().enumerate() {
                if self.ob(a, b) {
                    ob[i].push(j);
                }
            }
        }
        let mut out = std::collections::BTreeSet::new();
        let mut digit = vec![0usize; radix.len()];
        for _ in 0..total {
            let co: Vec<&Vec<usize>> = perms.iter().zip(&digit).map(|(p, &d)| &p[d]).collect();
            let mut rf: Vec<Option<usize>> = vec![None; n];
            for (k, &r) in reads.iter().enumerate() {
                rf[r] = choices[k][digit[perms.len() + k]];
            }
            if let Some(o) = self.candidate(&ev, &ob, &co, &rf) {
                out.insert(o);
            }
            // The next candidate.
            for (d, r) in digit.iter_mut().zip(&radix) {
                *d += 1;
                if *d < *r {
                    break;
                }
                *d = 0;
            }
        }
        Some(out)
    }

    /// The final state of one candidate execution (`co`, each location's writes in coherence
    /// order; `rf`, each read's write), if the model allows it.
    fn candidate(
        &self,
        ev: &[Event],
        ob: &[Vec<usize>],
        co: &[&Vec<usize>],
        rf: &[Option<usize>],
    ) -> Option<Outcome> {
        let n = ev.len();
        let mut co_next: Vec<Option<usize>> = vec![None; n];
        let mut co_pos = vec![0usize; n];
        for order in co {
            for (k, &w) in order.iter().enumerate() {
                co_pos[w] = k;
                co_next[w] = order.get(k + 1).copied();
            }
        }
        // TXN-4-10: an atomic's read and write are adjacent in co.
        for (i, e) in ev.iter().enumerate() {
            if e.reads && e.writes.is_some() {
                let ok = match rf[i] {
                    None => co_pos[i] == 0,
                    Some(w) => co_pos[i] == co_pos[w] + 1,
                };
                if !ok {
                    return None;
                }
            }
        }
        // The values: a write's is its own, or (FETCH_ADD) the value it read plus its addend.
        let mut value: Vec<Option<u64>> = vec![None; n];
        for _ in 0..=n {
            for i in 0..n {
                if value[i].is_some() {
                    continue;
                }
                let read = match rf[i] {
                    None => Some(0),
                    Some(w) => value[w],
                };
                value[i] = match ev[i].writes {
                    Some(Writes::Value(v)) => Some(v),
                    Some(Writes::Add(a)) => read.map(|r| r.wrapping_add(a)),
                    None => Some(0),
                };
            }
        }
        let read_value = |i: usize| match rf[i] {
            None => Some(0),
            Some(w) => value[w],
        };
        // TXN-4-13: ob | rf | co | fr acyclic (co and fr by their immediate successors, which
        // carry the rest by transitivity).
        let mut edges: Vec<Vec<usize>> = ob.to_vec();
        for i in 0..n {
            if let Some(next) = co_next[i] {
                edges[i].push(next);
            }
            if ev[i].reads {
                if let Some(w) = rf[i] {
                    edges[w].push(i);
                }
                let first_after = match rf[i] {
                    Some(w) => co_next[w],
                    None => co.get(ev[i].loc).and_then(|o| o.first().copied()),
                };
                if let Some(f) = first_after.filter(|&f| f != i) {
                    edges[i].push(f);
                }
            }
        }
        if !acyclic(&edges) {
            return None;
        }
        let mut regs: Vec<Vec<u64>> = self.agents.iter().map(|a| vec![0; a.regs.len()]).collect();
        for (i, e) in ev.iter().enumerate() {
            if let Some(r) = e.reg {
                *regs.get_mut(e.agent)?.get_mut(r)? = read_value(i)?;
            }
        }
        let mut mem = Vec::with_capacity(co.len());
        for order in co {
            mem.push(match order.last() {
                Some(&w) => value[w]?,
                None => 0,
            });
        }
        Some(Outcome { regs, mem })
    }
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.is_empty() {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for k in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(k);
        for mut p in permutations(&rest) {
            p.insert(0, first);
            out.push(p);
        }
    }
    out
}

/// Whether the graph of `edges` (node to successors) has no cycle.
fn acyclic(edges: &[Vec<usize>]) -> bool {
    let n = edges.len();
    let mut indeg = vec![0usize; n];
    for e in edges.iter().flatten() {
        if let Some(d) = indeg.get_mut(*e) {
            *d += 1;
        }
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = ready.pop() {
        seen += 1;
        for &j in &edges[i] {
            if let Some(d) = indeg.get_mut(j) {
                *d -= 1;
                if *d == 0 {
                    ready.push(j);
                }
            }
        }
    }
    seen == n
}

/// Splits a trailing `stream K`, `port P` or `unordered` off the words of an operation.
fn split_via<'w>(at: &str, words: &'w [&'w str]) -> Result<(&'w [&'w str], Via), LitmusError> {
    match words {
        [head @ .., "unordered"] => Ok((head, Via::Unordered)),
        [head @ .., "stream", k] => {
            let k = k
                .parse::<u32>()
                .map_or_else(|_| err(at, format!("`stream {k}`: a stream number")), Ok)?;
            Ok((head, Via::Stream(k)))
        }
        [head @ .., "port", p] => {
            let p = p
                .parse::<u16>()
                .map_or_else(|_| err(at, format!("`port {p}`: a port number")), Ok)?;
            Ok((head, Via::Port(p)))
        }
        _ => Ok((words, Via::Stream(0))),
    }
}

/// A deliberately weakened ordering engine, to show that the catalogue catches one.
///
/// The first two weaken the requester the runner drives. The fabric cannot weaken a target
/// from outside its endpoint (a target performs what its links deliver, in their order), so
/// the last two have the runner give the target's memory what a target with a weakened
/// ordering engine would give it: of two requests the target should order, the runner sends
/// the later one first and the earlier one only once the later one has completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weakening {
    /// The requester issues the operations of an ordered stream as unordered ones: they may
    /// take different paths (EP-4-1 broken).
    StreamsUnpinned,
    /// The requester sends the operations an agent puts on a port (`port P`), FENCE requests
    /// included, on ports chosen as for unordered ones (EP-4-6 broken).
    PortsIgnored,
    /// Of two requests of one path that TXN-4-1 orders (both write, or one location), adjacent
    /// in the agent's program, the target performs the later one first (TXN-4-1 broken).
    TargetSwapsPath,
    /// Of two requests of one path with a FENCE request on that path between them (and nothing
    /// else), the target performs the later one first (TXN-4-6 broken, and TXN-4-1 too when it
    /// orders the two).
    TargetIgnoresFences,
}

/// The outcomes of many runs of one test, with the verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Histogram {
    /// How many runs ended in each state.
    pub counts: BTreeMap<Outcome, u64>,
}

impl Histogram {
    /// Counts a run.
    pub fn add(&mut self, o: Outcome) {
        *self.counts.entry(o).or_default() += 1;
    }

    /// Runs counted.
    pub fn runs(&self) -> u64 {
        self.counts.values().sum()
    }

    /// Runs that ended in a state `t` forbids.
    pub fn forbidden_seen(&self, t: &Litmus) -> u64 {
        self.counts
            .iter()
            .filter(|(o, _)| t.forbidden.iter().any(|c| c.holds(o)))
            .map(|(_, n)| n)
            .sum()
    }

    /// The histogram as litmus7 prints one: the states, one a line with its count (`*>` marks a
    /// forbidden one), then each condition with the runs that met it, and the verdict line
    /// (`Never` when no run reached a forbidden state, `Sometimes` otherwise).
    pub fn render(&self, t: &Litmus) -> String {
        let mut s = format!("Test {}\n", t.name);
        if !t.doc.is_empty() {
            s.push_str(&format!("\"{}\"\n", t.doc));
        }
        s.push_str(&format!("Histogram ({} states)\n", self.counts.len()));
        for (o, n) in &self.counts {
            let mark = if t.forbidden.iter().any(|c| c.holds(o)) {
                "*>"
            } else {
                ":>"
            };
            s.push_str(&format!("{n:<8}{mark} {}\n", t.show(o)));
        }
        for (kind, list) in [("forbidden", &t.forbidden), ("allowed", &t.allowed)] {
            for c in list {
                let seen: u64 = self
                    .counts
                    .iter()
                    .filter(|(o, _)| c.holds(o))
                    .map(|(_, n)| n)
                    .sum();
                s.push_str(&format!(
                    "{kind} ({}): {seen} of {} runs\n",
                    c.text,
                    self.runs()
                ));
            }
        }
        let bad = self.forbidden_seen(t);
        let verdict = if bad == 0 { "Never" } else { "Sometimes" };
        s.push_str(&format!(
            "Observation {} {verdict} {bad} {}\n",
            t.name,
            self.runs() - bad
        ));
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MP: &str = r#"
name = "MP+streams"
doc = "data then flag on one stream"
forbidden = ["1:r0=1 & 1:r1=0"]
allowed = ["1:r0=0 & 1:r1=1"]

[locations]
x = 1
y = 1

[[agents]]
gpu = 0
ops = ["store x 1 stream 0", "store y 1"]

[[agents]]
gpu = 2
ops = ["load r0 y stream 3", "load r1 x unordered", "wait", "fence", "load r2 x port 1", "rfence y port 1"]
"#;

    #[test]
    fn a_test_reads_with_its_ops_and_conditions() {
        let t = Litmus::parse(MP).expect("parses");
        assert_eq!(t.name, "MP+streams");
        assert_eq!(t.locations.len(), 2);
        assert_eq!(
            t.agents[0].ops,
            vec![
                Op::Store {
                    loc: 0,
                    value: 1,
                    via: Via::Stream(0)
                },
                Op::Store {
                    loc: 1,
                    value: 1,
                    via: Via::Stream(0)
                },
            ]
        );
        assert_eq!(
            t.agents[1].ops,
            vec![
                Op::Load {
                    reg: 0,
                    loc: 1,
                    via: Via::Stream(3)
                },
                Op::Load {
                    reg: 1,
                    loc: 0,
                    via: Via::Unordered
                },
                Op::Wait,
                Op::Fence,
                Op::Load {
                    reg: 2,
                    loc: 0,
                    via: Via::Port(1)
                },
                Op::RFence {
                    loc: 1,
                    via: Via::Port(1)
                },
            ]
        );
        assert_eq!(t.agents[1].regs, vec!["r0", "r1", "r2"]);
        assert_eq!(t.max_gpu(), 2);
        let bad = Outcome {
            regs: vec![vec![], vec![1, 0, 1]],
            mem: vec![1, 1],
        };
        let good = Outcome {
            regs: vec![vec![], vec![1, 1, 1]],
            mem: vec![1, 1],
        };
        assert!(t.forbidden[0].holds(&bad));
        assert!(!t.forbidden[0].holds(&good));
        let mut h = Histogram::default();
        h.add(good.clone());
        h.add(good);
        h.add(bad);
        assert_eq!((h.runs(), h.forbidden_seen(&t)), (3, 1));
        let text = h.render(&t);
        assert!(
            text.contains("2       :> 1:r0=1; 1:r1=1; 1:r2=1; x=1; y=1;"),
            "{text}"
        );
        assert!(
            text.contains("1       *> 1:r0=1; 1:r1=0; 1:r2=1; x=1; y=1;"),
            "{text}"
        );
        assert!(
            text.ends_with("Observation MP+streams Sometimes 1 2\n"),
            "{text}"
        );
    }

    #[test]
    fn mistakes_are_refused_where_they_are() {
        let cases = [
            (
                MP.replace("store x 1 stream 0", "store z 1"),
                "agents.0.ops.0: no location `z`",
            ),
            (
                MP.replace("store y 1\"", "stor y 1\""),
                "agents.0.ops.1: `stor y 1`",
            ),
            (
                MP.replace("load r0 y stream 3", "load q y"),
                "agents.1.ops.0: `q` is not a register",
            ),
            (
                MP.replace("stream 3", "stream x"),
                "agents.1.ops.0: `stream x`",
            ),
            (
                MP.replace("1:r0=1 &", "1:r7=1 &"),
                "forbidden.0: agent 1 has no register `r7`",
            ),
            (
                MP.replace("1:r0=1 &", "5:r0=1 &"),
                "forbidden.0: no agent `5`",
            ),
            (MP.replace("1:r0=1 &", "1:r0=one &"), "forbidden.0: `one`"),
            (
                MP.replace("gpu = 2", "gpu = 1"),
                "agents.1.ops.0: the location is in the agent's own GPU",
            ),
            (MP.replace("x = 1\n", "r1 = 1\n"), "locations.r1"),
            (MP.replace("doc =", "docs ="), "toml"),
            (
                MP.replace("rfence y port 1", "rfence z"),
                "agents.1.ops.5: no location `z`",
            ),
            (
                MP.replace("rfence y port 1", "rfence y 1"),
                "agents.1.ops.5: `rfence y 1` is not an operation",
            ),
            (
                MP.replace("rfence y port 1", "rfence y port q"),
                "agents.1.ops.5: `port q`",
            ),
        ];
        for (text, want) in cases {
            let e = Litmus::parse(&text).expect_err(want).to_string();
            assert!(e.starts_with(want), "{want}: {e}");
        }
    }

    /// A test of two agents: the writer's and the reader's operations, locations x and y on GPU
    /// 1.
    fn two(writer: &str, reader: &str) -> Litmus {
        Litmus::parse(&format!(
            "name = \"t\"\nforbidden = [\"x=9\"]\n[locations]\nx = 1\ny = 1\n\
             [[agents]]\ngpu = 0\nops = [{writer}]\n[[agents]]\ngpu = 2\nops = [{reader}]\n"
        ))
        .expect("parses")
    }

    /// Whether the model allows a final state that meets `cond`.
    fn allows(t: &Litmus, cond: &str) -> bool {
        let c = t.cond("c", cond).expect("a condition");
        let m = t.model_outcomes().expect("small");
        m.iter().any(|o| c.holds(o))
    }

    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-1 (path order) Of two load, store or atomic requests a and b of one source on one
    //# path, a issued before b, b MUST be ordered after a (a ob b) when both write (a store or an
    //# atomic), or when they access a common granule. Nothing else is ordered on a path: a load MAY
    //# take effect before an earlier load, before an earlier store to other granules, and a store
    //# MAY take effect before an earlier load of other granules. (Each hop keeps a link's frames in
    //# order, LINK-3-1, and a switch a path's, on one egress port while the path is busy, switch.md
    //# §2.4, so a path reaches its target on one port at a time; a path that loses frames silently
    //# breaks this order for the requests it lost; TXN-5-6 says what holds then. A request answered
    //# BUSY was not performed: sent again, it takes its place in its path's order when it is sent
    //# again.)
    #[test]
    fn the_model_keeps_on_a_path_only_writes_and_one_location() {
        let w = r#""store x 1 stream 0", "store y 1 stream 0""#;
        let mp = "1:r0=1 & 1:r1=0";
        // Two loads of one path: not kept.
        assert!(allows(
            &two(w, r#""load r0 y stream 0", "load r1 x stream 0""#),
            mp
        ));
        // The writer's stores on two paths: not kept.
        let w2 = r#""store x 1 port 0", "store y 1 port 1""#;
        assert!(allows(&two(w2, r#""load r0 y", "wait", "load r1 x""#), mp));
        // Two stores of one path, loads ordered by completion: kept.
        assert!(!allows(&two(w, r#""load r0 y", "wait", "load r1 x""#), mp));
        // Two loads of one location on one path: kept; on two paths: not.
        let corr = "1:r0=1 & 1:r1=0";
        let one = r#""store x 1""#;
        assert!(!allows(
            &two(one, r#""load r0 x port 0", "load r1 x port 0""#),
            corr
        ));
        assert!(allows(
            &two(one, r#""load r0 x port 0", "load r1 x port 1""#),
            corr
        ));
        // Unordered operations share no known path.
        assert!(allows(
            &two(one, r#""load r0 x unordered", "load r1 x unordered""#),
            corr
        ));
        // RDMA is in no path order (TXN-4-4).
        assert!(allows(
            &two(one, r#""load r0 x stream 0", "rdma_read r1 x""#),
            corr
        ));
    }

    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-6 A FENCE request is an ordering point at one target for one source and one port of
    //# arrival. Every request of the same source that arrived on the FENCE's port before it, on any
    //# VC, MUST be ordered before every request of that source that arrives on that port after it;
    //# an RDMA read that arrived before the FENCE MUST have been read whole before the FENCE is
    //# answered, but its segments MAY be read after later requests. A target MUST answer a FENCE
    //# only after every request of its source that arrived before it on its port has been
    //# performed. Requests of the source on other ports are not ordered by it: a requester that
    //# needs an ordering point across ports sends a FENCE on each port it used and waits for every
    //# answer. The FENCE_RESP is a completion (TXN-4-11): what the requester issues after it has
    //# it, on any port, is ordered after every request the FENCE ordered. (1.3: 1.2 ordered a FENCE
    //# against every request the target had taken from all its ports, an order no port can observe; EP-8-7
    //# is withdrawn.)
    #[test]
    fn the_model_orders_by_a_fence_request_on_its_port_only() {
        let w = r#""store x 1 port 0", "store y 1 port 0""#;
        let mp = "1:r0=1 & 1:r1=0";
        let same = two(
            w,
            r#""load r0 y port 0", "rfence x port 0", "load r1 x port 0""#,
        );
        assert!(!allows(&same, mp));
        let other = two(
            w,
            r#""load r0 y port 0", "rfence x port 1", "load r1 x port 0""#,
        );
        assert!(allows(&other, mp));
        // A FENCE to another GPU orders nothing at this one.
        let t = Litmus::parse(
            "name = \"t\"\nforbidden = [\"x=9\"]\n[locations]\nx = 1\ny = 1\nz = 3\n\
             [[agents]]\ngpu = 0\nops = [\"store x 1 port 0\", \"store y 1 port 0\"]\n\
             [[agents]]\ngpu = 2\nops = [\"load r0 y port 0\", \"rfence z port 0\", \
             \"load r1 x port 0\"]\n",
        )
        .expect("parses");
        assert!(allows(&t, mp));
        // Across ports, a FENCE on one port does not order the other's accesses.
        let split = two(
            w,
            r#""load r0 y port 0", "rfence x port 0", "load r1 x port 1""#,
        );
        assert!(allows(&split, mp));
    }

    //= docs/spec/transaction.md#4-ordering
    //= type=test
    //# TXN-4-12 (one copy) A write MUST become visible to every observer at once: once any read has
    //# returned its bytes, no read ordered after that read by ob, rf, co and fr, of any source,
    //# returns an older value of the granule. (The target's memory is the only copy of its bytes,
    //# so two readers that order their loads see two writes to different granules in the same
    //# order: IRIW's split outcome is forbidden.)
    #[test]
    fn the_model_is_one_copy_and_keeps_atomics_whole() {
        let iriw = |sep: &str| {
            Litmus::parse(&format!(
                "name = \"t\"\n[locations]\nx = 1\ny = 1\n\
                 [[agents]]\ngpu = 0\nops = [\"store x 1\"]\n\
                 [[agents]]\ngpu = 2\nops = [\"store y 1\"]\n\
                 [[agents]]\ngpu = 3\nops = [\"load r0 x\", {sep}\"load r1 y\"]\n\
                 [[agents]]\ngpu = 4\nops = [\"load r0 y\", {sep}\"load r1 x\"]\n"
            ))
            .expect("parses")
        };
        let split = "2:r0=1 & 2:r1=0 & 3:r0=1 & 3:r1=0";
        assert!(!allows(&iriw("\"wait\", "), split));
        assert!(!allows(&iriw("\"fence\", "), split));
        assert!(allows(&iriw(""), split));
        // Two FETCH_ADDs: exactly the two orders.
        let fa = Litmus::parse(
            "name = \"t\"\n[locations]\nx = 1\n[[agents]]\ngpu = 0\n\
             ops = [\"fetch_add r0 x 1 unordered\"]\n[[agents]]\ngpu = 2\n\
             ops = [\"fetch_add r0 x 1 unordered\"]\n",
        )
        .expect("parses");
        let m = fa.model_outcomes().expect("small");
        let shown: Vec<String> = m.iter().map(|o| fa.show(o)).collect();
        assert_eq!(
            shown,
            ["0:r0=0; 1:r0=1; x=2;", "0:r0=1; 1:r0=0; x=2;"],
            "{shown:?}"
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Any text, and the example with any one character changed, is read or refused with a
        /// reason; never a panic.
        #[test]
        fn any_text_is_read_or_refused(text in ".{0,200}", at in 0usize..400, c in proptest::char::any()) {
            let _ = Litmus::parse(&text);
            let mut chars: Vec<char> = MP.chars().collect();
            if let Some(x) = chars.get_mut(at % MP.len()) {
                *x = c;
            }
            let edited: String = chars.into_iter().collect();
            if let Err(e) = Litmus::parse(&edited) {
                proptest::prop_assert!(!e.reason.is_empty());
            }
        }
    }
}
