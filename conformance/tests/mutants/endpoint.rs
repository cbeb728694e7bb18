//! Deliberately broken endpoints: the reference endpoint behind a wrapper that changes what
//! crosses the boundary, each breaking one requirement the endpoint cases check. The suite must
//! fail every one of them.

use std::collections::BTreeSet;

use ethlink_protocol::fcs::fcs_bytes;

use ethlink_conformance::device::{
    Advanced, Counters, Description, Device, DeviceError, LinkParams, Output, Reply, Request,
    Setup, Space, from_hex, to_hex,
};
use ethlink_conformance::reference::RefEndpoint;

/// How a mutant breaks the reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flaw {
    /// Every registered region is twice as long as asked: accesses past its end are accepted.
    RegionTooLong,
    /// Every registered region grants read, write and atomic, whatever was asked.
    PermsIgnored,
    /// A fence completes at once, before the operations issued before it.
    FenceEarly,
    /// A completion ACCESS_VIOLATION is reported OUT_OF_RANGE.
    StatusRenamed,
    /// The target answers ACCESS_VIOLATION on the wire as OK.
    WireStatusOk,
    /// The target's responses carry the request's tag with bit 0 flipped.
    WrongTag,
    /// The target's load-store responses go on VC 0.
    WrongVc,
    /// The target applies every ATOMIC_FADD twice.
    AtomicTwice,
    /// It packs transactions into frames but does not declare PACKING.
    PackingUndeclared,
    /// It accepts a `response_backlog` setting and keeps taking requests whatever its backlog.
    BacklogIgnored,
    /// It accepts the `hash` policy and spreads requests round-robin.
    PolicyIgnored,
    /// It accepts an `op_timeout` setting and keeps held responses for its default instead.
    OpTimeoutIgnored,
    /// Its timers count whole microseconds: an `op_timeout` setting is rounded down to one.
    OpTimeoutRoundedDown,
    /// It accepts a `hold_max` setting and performs a held request however long it was held,
    /// as 1.2 allowed (EP-8-9).
    HoldUnbounded,
    /// A target with a write buffer that answers a STORE when it takes it and writes memory
    /// 1 us later: a load behind the store on its path reads the old bytes (TXN-4-1), and a
    /// store answered OK is not yet performed (TXN-4-11).
    StoreAnsweredEarly,
    /// A target that performs the requests of a frame last to first (TXN-4-1).
    FrameReversed,
    /// A requester that sends the operations of an ordered stream as unordered ones, spread over
    /// its ports (EP-4-1, TXN-4-1).
    StreamSpread,
    /// A target that keeps the state of one requester: it takes every request as coming from the
    /// first GPU it heard from, so it reassembles by tag alone and answers that GPU (EP-6-5,
    /// WIRE-6.1-2).
    OneRequester,
    /// A target whose 8-byte FETCH_ADD adds two 32-bit halves and drops the carry between them.
    AddWithoutCarry,
}

/// A broken reference endpoint.
pub struct Mutant {
    inner: RefEndpoint,
    flaw: Flaw,
    /// Fence ids completed early, whose real completion is dropped.
    early: BTreeSet<u64>,
    /// Completions made up by the wrapper, given out at the next advance.
    extra: Vec<Output>,
    /// Stores answered and not yet written: when, where and what.
    unwritten: Vec<(u64, Space, u64, Vec<u8>)>,
    /// The first source GPU heard from since the reset (`OneRequester`).
    first_src: Option<[u8; 2]>,
}

impl Mutant {
    fn new(flaw: Flaw) -> Self {
        Mutant {
            inner: RefEndpoint::default(),
            flaw,
            early: BTreeSet::new(),
            extra: Vec::new(),
            unwritten: Vec::new(),
            first_src: None,
        }
    }

    /// Writes the buffered stores due by `now`, oldest first (at `now`: the device's clock only
    /// goes forward).
    fn write_due(&mut self, now: u64) -> Result<(), DeviceError> {
        while self.unwritten.first().is_some_and(|w| w.0 <= now) {
            let (_, space, addr, data) = self.unwritten.remove(0);
            self.inner.request(
                now,
                &Request::MemWrite {
                    space,
                    addr,
                    data: to_hex(&data),
                },
            )?;
        }
        Ok(())
    }

    /// `frame` with each STORE's data replaced by the bytes memory holds now, so that the
    /// reference answers it and writes nothing; the real bytes are buffered for 1 us.
    fn stores_buffered(&mut self, time_ns: u64, frame: &[u8]) -> Result<Vec<u8>, DeviceError> {
        let mut copy = frame.to_vec();
        let mut stores = Vec::new();
        edit_data(&mut copy, |_, t| {
            let dlen = usize::from(u16::from_be_bytes([t[6], t[7]]));
            if t[0] == 0x02 && t[4] == 5 && t.len() >= 20 + dlen {
                let space = if t[1] & 1 != 0 {
                    Space::Shared
                } else {
                    Space::Global
                };
                let addr = u64::from_be_bytes(t[12..20].try_into().unwrap_or([0; 8]));
                stores.push((space, addr, t[20..20 + dlen].to_vec()));
            }
        });
        let mut now_held = Vec::new();
        for (space, addr, data) in &stores {
            let len = data.len() as u64;
            let held = self
                .inner
                .request(
                    time_ns,
                    &Request::MemRead {
                        space: *space,
                        addr: *addr,
                        len,
                    },
                )
                .ok()
                .and_then(|r| r.data)
                .and_then(|h| from_hex("memory", &h).ok());
            now_held.push(held);
        }
        let mut k = 0;
        edit_data(&mut copy, |_, t| {
            let dlen = usize::from(u16::from_be_bytes([t[6], t[7]]));
            if t[0] == 0x02 && t[4] == 5 && t.len() >= 20 + dlen {
                if let Some(Some(held)) = now_held.get(k)
                    && held.len() == dlen
                {
                    t[20..20 + dlen].copy_from_slice(held);
                }
                k += 1;
            }
        });
        for ((space, addr, data), held) in stores.into_iter().zip(now_held) {
            if held.is_some() {
                self.unwritten.push((time_ns + 1000, space, addr, data));
            }
        }
        Ok(copy)
    }
}

/// `b` with the transactions of its DATA payload last to first, when it carries two or more and
/// every one is a request; its FCS rewritten.
fn reversed(b: &[u8]) -> Vec<u8> {
    let mut out = b.to_vec();
    let Some(l) = link_at(b) else { return out };
    if b.get(l).is_none_or(|k| k & 0x0F != 0) || b.len() < l + 14 + 4 {
        return out;
    }
    let p = l + 6;
    let count = b[p + 5];
    let plen = usize::from(u16::from_be_bytes([b[p + 6], b[p + 7]]));
    let end = (p + 8 + plen).min(b.len() - 4);
    let mut spans = Vec::new();
    let mut pos = p + 8;
    for _ in 0..count {
        let Some(t) = b.get(pos..pos + 8) else {
            return out;
        };
        let size =
            usize::from(t[4]) * 4 + usize::from(u16::from_be_bytes([t[6], t[7]])).div_ceil(4) * 4;
        if t[4] < 2 || pos + size > end || t[0] >= 0x80 {
            return out;
        }
        spans.push(pos..pos + size);
        pos += size;
    }
    if spans.len() < 2 {
        return out;
    }
    let body: Vec<u8> = spans
        .iter()
        .rev()
        .flat_map(|s| b[s.clone()].to_vec())
        .collect();
    out[p + 8..p + 8 + body.len()].copy_from_slice(&body);
    let n = out.len();
    let fcs = fcs_bytes(&out[..n - 4]);
    out[n - 4..].copy_from_slice(&fcs);
    out
}

impl Mutant {
    /// Takes `frame`, then takes 2^32 off every 8-byte FETCH_ADD in it whose low words carried.
    fn add_without_carry(
        &mut self,
        port: u16,
        time_ns: u64,
        frame: &[u8],
    ) -> Result<(), DeviceError> {
        let mut adds = Vec::new();
        let mut copy = frame.to_vec();
        edit_data(&mut copy, |_, t| {
            if t[0] == 0x03 && t.len() >= 28 && u16::from_be_bytes([t[6], t[7]]) == 8 {
                let key = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
                let addr = u64::from_be_bytes(t[12..20].try_into().unwrap_or([0; 8]));
                let add = u64::from_le_bytes(t[20..28].try_into().unwrap_or([0; 8]));
                adds.push((t[1] & 1 != 0, key, addr, add));
            }
        });
        let mut carried = Vec::new();
        for (shared, key, addr, add) in adds {
            let space = if shared { Space::Shared } else { Space::Global };
            let old = self
                .inner
                .request(
                    time_ns,
                    &Request::MemRead {
                        space,
                        addr,
                        len: 8,
                    },
                )?
                .data
                .and_then(|h| from_hex("mem_read", &h).ok())
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
                .map_or(0, u64::from_le_bytes);
            if (old & 0xFFFF_FFFF) + (add & 0xFFFF_FFFF) > 0xFFFF_FFFF {
                carried.push((shared, key, addr));
            }
        }
        self.inner.frame(port, time_ns, frame)?;
        for (shared, key, addr) in carried {
            self.inner
                .add_again(shared, key, addr, 8, (1u64 << 32).wrapping_neg());
        }
        Ok(())
    }

    /// `frame` with its source GPU replaced by the first one heard from, when it is a DATA frame.
    fn one_source(&mut self, frame: &[u8]) -> Vec<u8> {
        let mut b = frame.to_vec();
        let Some(l) = link_at(&b) else { return b };
        let p = l + 6;
        if b.get(l).is_none_or(|k| k & 0x0F != 0) || b.len() < p + 8 + 4 {
            return b;
        }
        let src = [b[p + 2], b[p + 3]];
        let first = *self.first_src.get_or_insert(src);
        if first != src {
            b[p + 2..p + 4].copy_from_slice(&first);
            let n = b.len();
            let fcs = fcs_bytes(&b[..n - 4]);
            b[n - 4..].copy_from_slice(&fcs);
        }
        b
    }
}

/// What builds a mutant.
pub type Maker = fn() -> Box<dyn Device>;

/// Every endpoint mutant, by name.
pub fn mutants() -> Vec<(&'static str, Maker)> {
    vec![
        ("region_too_long", || {
            Box::new(Mutant::new(Flaw::RegionTooLong))
        }),
        ("perms_ignored", || {
            Box::new(Mutant::new(Flaw::PermsIgnored))
        }),
        ("fence_early", || Box::new(Mutant::new(Flaw::FenceEarly))),
        ("status_renamed", || {
            Box::new(Mutant::new(Flaw::StatusRenamed))
        }),
        ("wire_status_ok", || {
            Box::new(Mutant::new(Flaw::WireStatusOk))
        }),
        ("wrong_tag", || Box::new(Mutant::new(Flaw::WrongTag))),
        ("wrong_vc", || Box::new(Mutant::new(Flaw::WrongVc))),
        ("atomic_twice", || Box::new(Mutant::new(Flaw::AtomicTwice))),
        ("packing_undeclared", || {
            Box::new(Mutant::new(Flaw::PackingUndeclared))
        }),
        ("backlog_ignored", || {
            Box::new(Mutant::new(Flaw::BacklogIgnored))
        }),
        ("policy_ignored", || {
            Box::new(Mutant::new(Flaw::PolicyIgnored))
        }),
        ("op_timeout_ignored", || {
            Box::new(Mutant::new(Flaw::OpTimeoutIgnored))
        }),
        ("op_timeout_rounded_down", || {
            Box::new(Mutant::new(Flaw::OpTimeoutRoundedDown))
        }),
        ("hold_unbounded", || {
            Box::new(Mutant::new(Flaw::HoldUnbounded))
        }),
        ("store_answered_early", || {
            Box::new(Mutant::new(Flaw::StoreAnsweredEarly))
        }),
        ("frame_reversed", || {
            Box::new(Mutant::new(Flaw::FrameReversed))
        }),
        ("stream_spread", || {
            Box::new(Mutant::new(Flaw::StreamSpread))
        }),
        ("one_requester", || {
            Box::new(Mutant::new(Flaw::OneRequester))
        }),
        ("add_without_carry", || {
            Box::new(Mutant::new(Flaw::AddWithoutCarry))
        }),
    ]
}

/// Where the link header of an EthLink frame starts, if `b` is one.
fn link_at(b: &[u8]) -> Option<usize> {
    let eth = match b.get(12..14)? {
        [0x81, 0x00] => 18,
        _ => 14,
    };
    (b.get(eth - 2..eth)? == [0x88, 0xB5]).then_some(eth)
}

/// Calls `f` with the VC byte and each transaction of a DATA frame, then rewrites its FCS.
fn edit_data(b: &mut [u8], mut f: impl FnMut(&mut u8, &mut [u8])) {
    let Some(l) = link_at(b) else { return };
    if b.get(l).is_none_or(|k| k & 0x0F != 0) || b.len() < l + 14 + 4 {
        return;
    }
    let p = l + 6;
    let count = b[p + 5];
    let plen = usize::from(u16::from_be_bytes([b[p + 6], b[p + 7]]));
    let end = (p + 8 + plen).min(b.len() - 4);
    let mut pos = p + 8;
    let (head, rest) = b.split_at_mut(p);
    let vc = &mut head[l + 1];
    let base = p;
    for _ in 0..count {
        let Some(t) = rest.get(pos - base..pos - base + 8) else {
            break;
        };
        let size =
            usize::from(t[4]) * 4 + usize::from(u16::from_be_bytes([t[6], t[7]])).div_ceil(4) * 4;
        if t[4] < 2 || pos + size > end {
            break;
        }
        f(vc, &mut rest[pos - base..pos - base + size]);
        pos += size;
    }
    let n = b.len();
    let fcs = fcs_bytes(&b[..n - 4]);
    b[n - 4..].copy_from_slice(&fcs);
}

impl Device for Mutant {
    fn hello(&mut self) -> Result<Description, DeviceError> {
        let mut d = self.inner.hello()?;
        d.name = format!("{} (mutant {:?})", d.name, self.flaw);
        if self.flaw == Flaw::PackingUndeclared {
            d.caps.retain(|c| c != "packing");
        }
        Ok(d)
    }

    fn reset(&mut self, setup: &Setup) -> Result<LinkParams, DeviceError> {
        self.early.clear();
        self.extra.clear();
        self.unwritten.clear();
        self.first_src = None;
        let mut setup = setup.clone();
        if let Some(e) = setup.endpoint.as_mut() {
            match self.flaw {
                Flaw::BacklogIgnored if e.response_backlog.is_some() => {
                    e.response_backlog = Some(u32::MAX);
                }
                Flaw::PolicyIgnored if e.policy.is_some() => {
                    e.policy = Some("round-robin".into());
                }
                Flaw::OpTimeoutIgnored => {
                    // It accepts the timer settings and keeps its own (a consistent set).
                    e.op_timeout_ns = None;
                    e.frame_lifetime_ns = None;
                    e.tag_quarantine_ns = None;
                }
                Flaw::HoldUnbounded => e.hold_max_ns = Some(1_000_000_000),
                Flaw::OpTimeoutRoundedDown => {
                    e.op_timeout_ns = e.op_timeout_ns.map(|ns| (ns / 1000).max(1) * 1000);
                }
                _ => {}
            }
        }
        self.inner.reset(&setup)
    }

    fn frame(&mut self, port: u16, time_ns: u64, frame: &[u8]) -> Result<(), DeviceError> {
        match self.flaw {
            Flaw::StoreAnsweredEarly => {
                self.write_due(time_ns)?;
                let f = self.stores_buffered(time_ns, frame)?;
                return self.inner.frame(port, time_ns, &f);
            }
            Flaw::FrameReversed => return self.inner.frame(port, time_ns, &reversed(frame)),
            Flaw::OneRequester => {
                let f = self.one_source(frame);
                return self.inner.frame(port, time_ns, &f);
            }
            _ => {}
        }
        if self.flaw == Flaw::AddWithoutCarry {
            return self.add_without_carry(port, time_ns, frame);
        }
        self.inner.frame(port, time_ns, frame)?;
        if self.flaw == Flaw::AtomicTwice {
            // Each ATOMIC_FADD of the frame once more, straight into memory.
            let mut adds = Vec::new();
            let mut copy = frame.to_vec();
            edit_data(&mut copy, |_, t| {
                if t[0] == 0x03 && t.len() >= 24 {
                    let key = u32::from_be_bytes([t[8], t[9], t[10], t[11]]);
                    let addr = u64::from_be_bytes(t[12..20].try_into().unwrap_or([0; 8]));
                    let w = usize::from(u16::from_be_bytes([t[6], t[7]]));
                    if (w == 4 || w == 8) && t.len() >= 20 + w {
                        let mut v = [0u8; 8];
                        v[..w].copy_from_slice(&t[20..20 + w]);
                        adds.push((t[1] & 1, key, addr, w, u64::from_le_bytes(v)));
                    }
                }
            });
            for (shared, key, addr, w, add) in adds {
                self.inner.add_again(shared != 0, key, addr, w, add);
            }
        }
        Ok(())
    }

    fn request(&mut self, time_ns: u64, request: &Request) -> Result<Reply, DeviceError> {
        match (self.flaw, request) {
            (
                Flaw::RegionTooLong | Flaw::PermsIgnored,
                Request::Register {
                    space,
                    base,
                    len,
                    key,
                    perms,
                },
            ) => {
                let (len, perms) = if self.flaw == Flaw::RegionTooLong {
                    (len.saturating_mul(2), perms.clone())
                } else {
                    (*len, "rwa".to_string())
                };
                self.inner.request(
                    time_ns,
                    &Request::Register {
                        space: *space,
                        base: *base,
                        len,
                        key: *key,
                        perms,
                    },
                )
            }
            (
                Flaw::StreamSpread,
                Request::Issue {
                    dst,
                    space,
                    key,
                    addr,
                    op,
                    stream: Some(_),
                    port: None,
                },
            ) => self.inner.request(
                time_ns,
                &Request::Issue {
                    dst: *dst,
                    space: *space,
                    key: *key,
                    addr: *addr,
                    op: op.clone(),
                    stream: None,
                    port: None,
                },
            ),
            (Flaw::FenceEarly, Request::Fence) => {
                let r = self.inner.request(time_ns, request)?;
                if let Some(id) = r.id {
                    self.early.insert(id);
                    self.extra.push(Output::Completion {
                        tag: None,
                        id: Some(id),
                        status: "OK".into(),
                        data: None,
                    });
                }
                Ok(r)
            }
            _ => self.inner.request(time_ns, request),
        }
    }

    fn advance(&mut self, time_ns: u64) -> Result<Advanced, DeviceError> {
        if self.flaw == Flaw::StoreAnsweredEarly {
            self.write_due(time_ns)?;
        }
        let mut a = self.inner.advance(time_ns)?;
        let mut out = std::mem::take(&mut self.extra);
        for o in a.out {
            match o {
                Output::Completion { id: Some(id), .. }
                    if self.flaw == Flaw::FenceEarly && self.early.contains(&id) => {}
                Output::Completion {
                    tag,
                    id,
                    status,
                    data,
                } if self.flaw == Flaw::StatusRenamed && status == "ACCESS_VIOLATION" => {
                    out.push(Output::Completion {
                        tag,
                        id,
                        status: "OUT_OF_RANGE".into(),
                        data,
                    });
                }
                Output::Frame { port, time_ns, hex }
                    if matches!(
                        self.flaw,
                        Flaw::WireStatusOk | Flaw::WrongTag | Flaw::WrongVc
                    ) =>
                {
                    let mut b = from_hex("frame", &hex)?;
                    let flaw = self.flaw;
                    edit_data(&mut b, |vc, t| {
                        if t[0] < 0x80 {
                            return;
                        }
                        match flaw {
                            Flaw::WireStatusOk if t[1] == 1 => t[1] = 0,
                            Flaw::WrongTag => t[3] ^= 1,
                            Flaw::WrongVc if *vc >> 5 == 2 => *vc &= 0x1F,
                            _ => {}
                        }
                    });
                    out.push(Output::Frame {
                        port,
                        time_ns,
                        hex: to_hex(&b),
                    });
                }
                other => out.push(other),
            }
        }
        a.out = out;
        Ok(a)
    }

    fn counters(&mut self) -> Result<Counters, DeviceError> {
        self.inner.counters()
    }
}
