//! Litmus tests for the EthLink memory model (transaction.md §4): small programs of a few agents
//! (GPUs) that load and store named locations over chosen paths, with the final states the model
//! forbids, and the outcomes of many runs of them.
//!
//! # The text form
//!
//! One test per TOML file:
//!
//! ```toml
//! # MP: data, then a flag, on one ordered stream; the reader reads the flag, then the data.
//! name = "MP+streams"
//! doc = "a store is performed before the store issued after it on its path (TXN-4-1)"
//!
//! [locations]          # name = the GPU whose memory holds it; every location starts at 0
//! x = 1
//! y = 1
//!
//! [[agents]]           # agent 0
//! gpu = 0
//! ops = ["store x 1 stream 0", "store y 1 stream 0"]
//!
//! [[agents]]           # agent 1
//! gpu = 2
//! ops = ["load r0 y stream 0", "load r1 x stream 0"]
//!
//! forbidden = ["1:r0=1 & 1:r1=0"]
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
//! | `rdma_write LOC V` | an RDMA write of the 8 bytes of `V` |
//! | `rdma_read REG LOC` | an RDMA read of the 8 bytes into `REG` |
//! | `fence` | the Fence operation (TXN-4-5): issued after everything before it, and what comes after waits for its completion |
//! | `wait` | what comes after waits until everything before has completed |
//!
//! `VIA` is `stream K` (the agent's ordered stream `K`, EP-4-1: one path while it has operations
//! outstanding), `port P` (in order on the agent's port `P`, numbered stack by stack as
//! endpoint.md §1 numbers them: a test that needs two ports names them) or `unordered` (a path
//! chosen per operation); left out, `stream 0`. ([`crate::run_litmus`], the fabric's runner,
//! does not pin a port yet and refuses `port P`.)
//!
//! A condition is a conjunction, terms joined by `&`: `A:REG=V` (register `REG` of agent `A`
//! at the end) or `LOC=V` (the location's final value). `forbidden` lists the final states the
//! model rules out: a run that reaches one fails. `allowed` lists states the model allows that
//! are worth seeing (the reports say whether they were seen); neither list need be complete.

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
                    ["fence"] if words.len() == 1 => Op::Fence,
                    ["wait"] if words.len() == 1 => Op::Wait,
                    _ => {
                        return err(
                            &at,
                            format!(
                                "`{text}` is not an operation: store LOC V, load REG LOC, \
                                 fetch_add REG LOC V, swap REG LOC V (each with an optional \
                                 `stream K`, `port P` or `unordered`), rdma_write LOC V, \
                                 rdma_read REG LOC, fence or wait"
                            ),
                        );
                    }
                };
                if let Op::Store { loc, .. }
                | Op::Load { loc, .. }
                | Op::FetchAdd { loc, .. }
                | Op::Swap { loc, .. }
                | Op::RdmaWrite { loc, .. }
                | Op::RdmaRead { loc, .. } = op
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

/// Splits a trailing `stream K` or `unordered` off the words of an operation.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Weakening {
    /// The requester issues the operations of an ordered stream as unordered ones: they may
    /// take different paths (EP-4-1 broken).
    StreamsUnpinned,
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
ops = ["load r0 y stream 3", "load r1 x unordered", "wait", "fence", "load r2 x port 1"]
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
        ];
        for (text, want) in cases {
            let e = Litmus::parse(&text).expect_err(want).to_string();
            assert!(e.starts_with(want), "{want}: {e}");
        }
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
