//! The context: a table of devices addressed by handles, and the text of the last error.
//!
//! A handle is 32 bits: the slot in the table (bits 11..0) and the slot's generation (bits
//! 31..12, never 0). Destroying a device moves its slot to the next generation, so a handle
//! kept after `ethlink_destroy` names nothing and is refused without touching the device. Each
//! context starts its generations at a value drawn from its own address, so a handle of another
//! context is refused too (unless its 20-bit generation happens to match a live slot's: one
//! chance in 2^20). Nothing is shared between contexts.

use crate::endpoint::EndpointDev;
use crate::error::{Error, Result};
use crate::link_end::LinkEndDev;
use crate::switch::SwitchDev;
use crate::types::{
    Description, ETHLINK_ABI_VERSION, ETHLINK_NAME_LEN, ETHLINK_TIME_MAX_NS, Event,
};

/// Devices one context holds at most.
pub(crate) const MAX_DEVICES: usize = 1 << SLOT_BITS;
const SLOT_BITS: u32 = 12;
const GEN_MASK: u32 = (1 << (32 - SLOT_BITS)) - 1;

/// A device model behind a handle.
pub(crate) enum Model {
    LinkEnd(Box<LinkEndDev>),
    Endpoint(Box<EndpointDev>),
    Switch(Box<SwitchDev>),
}

/// What a poll for a frame found.
pub(crate) enum Transmit {
    /// A frame of `len` bytes for `port` was written.
    Frame { port: u16, len: usize },
    /// Nothing to send now.
    Nothing,
    /// The next frame, for `port`, needs `needed` bytes; nothing was consumed.
    TooSmall { port: u16, needed: usize },
}

/// What a poll for an event found.
pub(crate) enum Polled {
    /// An event, its data written.
    Event(Event),
    /// No event.
    Nothing,
    /// An event whose data needs `event.len` bytes; nothing was consumed.
    TooSmall(Event),
}

struct Slot {
    generation: u32,
    model: Option<Model>,
    /// An internal error was caught while the device was in use: it is unusable.
    broken: bool,
}

/// An `ethlink_ctx`: the devices made through it and the text of the last error.
pub struct Ctx {
    slots: Vec<Slot>,
    free: Vec<usize>,
    first_generation: u32,
    last_error: String,
    /// The slot of the device the current call uses, to mark it broken on an internal error.
    active: Option<usize>,
}

impl Ctx {
    /// A context with no device; `seed` varies the handles it gives (its address, in practice).
    pub(crate) fn new(seed: u64) -> Ctx {
        // splitmix64's finaliser: nearby addresses give unrelated generations.
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let g = (z as u32) & GEN_MASK;
        Ctx {
            slots: Vec::new(),
            free: Vec::new(),
            first_generation: if g == 0 { 1 } else { g },
            last_error: String::new(),
            active: None,
        }
    }

    pub(crate) fn set_error(&mut self, text: String) {
        self.last_error = text;
    }

    pub(crate) fn last_error(&self) -> &str {
        &self.last_error
    }

    pub(crate) fn begin_call(&mut self) {
        self.active = None;
    }

    /// Marks the device the call was using unusable after an internal error.
    pub(crate) fn mark_broken(&mut self) {
        if let Some(i) = self.active.take()
            && let Some(s) = self.slots.get_mut(i)
        {
            s.broken = true;
        }
    }

    /// Stores `model` and returns its handle.
    pub(crate) fn insert(&mut self, model: Model) -> Result<u32> {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                if self.slots.len() >= MAX_DEVICES {
                    return Err(Error::refused(format!(
                        "the context holds {MAX_DEVICES} devices already: destroy one first"
                    )));
                }
                self.slots.push(Slot {
                    generation: self.first_generation,
                    model: None,
                    broken: false,
                });
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[i];
        slot.model = Some(model);
        slot.broken = false;
        Ok(slot.generation << SLOT_BITS | i as u32)
    }

    fn index(&self, h: u32) -> Result<usize> {
        let i = (h & ((1 << SLOT_BITS) - 1)) as usize;
        let generation = h >> SLOT_BITS;
        match self.slots.get(i) {
            Some(s) if s.generation == generation && s.model.is_some() => Ok(i),
            _ => Err(Error::handle(format!(
                "h = {h:#010x}: names no live device of this context \
                 (never made, destroyed, or made by another context)"
            ))),
        }
    }

    /// Destroys the device `h` names.
    pub(crate) fn remove(&mut self, h: u32) -> Result<()> {
        let i = self.index(h)?;
        let first = self.first_generation;
        let slot = &mut self.slots[i];
        slot.model = None;
        slot.broken = false;
        let mut next = slot.generation.wrapping_add(1) & GEN_MASK;
        if next == 0 {
            next = 1;
        }
        slot.generation = next;
        // A slot whose generations have all been used is never used again, so that no old
        // handle can name a new device.
        if next != first {
            self.free.push(i);
        }
        Ok(())
    }

    /// The device `h` names.
    pub(crate) fn model(&mut self, h: u32) -> Result<&mut Model> {
        let i = self.index(h)?;
        let slot = &mut self.slots[i];
        if slot.broken {
            return Err(Error::panic(format!(
                "h = {h:#010x}: the device failed internally in an earlier call and is \
                 unusable: destroy it"
            )));
        }
        self.active = Some(i);
        slot.model
            .as_mut()
            .ok_or_else(|| Error::handle(format!("h = {h:#010x}: names no device")))
    }

    /// The link end `h` names.
    pub(crate) fn link_end(&mut self, h: u32) -> Result<&mut LinkEndDev> {
        match self.model(h)? {
            Model::LinkEnd(d) => Ok(d),
            other => Err(other.wrong_role(h, "a link end")),
        }
    }

    /// The endpoint `h` names.
    pub(crate) fn endpoint(&mut self, h: u32) -> Result<&mut EndpointDev> {
        match self.model(h)? {
            Model::Endpoint(d) => Ok(d),
            other => Err(other.wrong_role(h, "an endpoint")),
        }
    }

    /// The switch `h` names.
    pub(crate) fn switch(&mut self, h: u32) -> Result<&mut SwitchDev> {
        match self.model(h)? {
            Model::Switch(d) => Ok(d),
            other => Err(other.wrong_role(h, "a switch")),
        }
    }
}

/// Checks that `now` is no later than the horizon and does not go back from `*last`, and moves
/// `*last` to it.
pub(crate) fn tick(last: &mut u64, now: u64) -> Result<()> {
    //= docs/spec/link.md#1-model
    //# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time. An
    //# interface that can refuse an input refuses such a time, naming it and the horizon
    if now > ETHLINK_TIME_MAX_NS {
        return Err(Error::too_late(now));
    }
    if now < *last {
        return Err(Error::backwards(now, *last));
    }
    *last = now;
    Ok(())
}

/// Fills a [`Description`].
pub(crate) fn describe(role: u8, ports: u16, caps: u32, name: &str) -> Description {
    let mut d = Description {
        abi_version: ETHLINK_ABI_VERSION,
        role,
        ports,
        caps,
        name: [0; ETHLINK_NAME_LEN],
        // The reference devices run their timers on nanoseconds and hand frames to the caller
        // as they are made.
        tick_ns: 1,
        rate_gbps: 0,
    };
    for (dst, src) in d
        .name
        .iter_mut()
        .zip(name.bytes().take(ETHLINK_NAME_LEN - 1))
    {
        *dst = src as core::ffi::c_char;
    }
    d
}

impl Model {
    fn role_name(&self) -> &'static str {
        match self {
            Model::LinkEnd(_) => "a link end",
            Model::Endpoint(_) => "an endpoint",
            Model::Switch(_) => "a switch",
        }
    }

    fn wrong_role(&self, h: u32, wanted: &str) -> Error {
        Error::wrong_role(format!(
            "h = {h:#010x}: names {}; this call is for {wanted}",
            self.role_name()
        ))
    }

    pub(crate) fn describe(&self) -> Description {
        match self {
            Model::LinkEnd(d) => d.describe(),
            Model::Endpoint(d) => d.describe(),
            Model::Switch(d) => d.describe(),
        }
    }

    pub(crate) fn physical(&mut self, port: u16, up: bool, now: u64) -> Result<()> {
        match self {
            Model::LinkEnd(d) => d.physical(port, up, now),
            Model::Endpoint(d) => d.physical(port, up, now),
            Model::Switch(d) => d.physical(port, up, now),
        }
    }

    pub(crate) fn handle_frame(&mut self, port: u16, now: u64, frame: &[u8]) -> Result<()> {
        match self {
            Model::LinkEnd(d) => d.handle_frame(port, now, frame),
            Model::Endpoint(d) => d.handle_frame(port, now, frame),
            Model::Switch(d) => d.handle_frame(port, now, frame),
        }
    }

    pub(crate) fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Result<Transmit> {
        match self {
            Model::LinkEnd(d) => d.poll_transmit(now, buf),
            Model::Endpoint(d) => d.poll_transmit(now, buf),
            Model::Switch(d) => d.poll_transmit(now, buf),
        }
    }

    /// The next deadline, or none when there is none at or before the horizon (a deadline after
    /// it is never reached).
    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        match self {
            Model::LinkEnd(d) => d.poll_timeout(),
            Model::Endpoint(d) => d.poll_timeout(),
            Model::Switch(d) => d.poll_timeout(),
        }
        .filter(|&t| t <= ETHLINK_TIME_MAX_NS)
    }

    pub(crate) fn handle_timeout(&mut self, now: u64) -> Result<()> {
        match self {
            Model::LinkEnd(d) => d.handle_timeout(now),
            Model::Endpoint(d) => d.handle_timeout(now),
            Model::Switch(d) => d.handle_timeout(now),
        }
    }

    pub(crate) fn poll_event(&mut self, data: &mut [u8]) -> Result<Polled> {
        match self {
            Model::LinkEnd(d) => d.poll_event(data),
            Model::Endpoint(d) => d.poll_event(data),
            Model::Switch(d) => d.poll_event(data),
        }
    }

    /// Every counter, by the names of the conformance boundary, in name order.
    pub(crate) fn counters(&self) -> Vec<(String, u64)> {
        let mut c = Vec::new();
        match self {
            Model::LinkEnd(d) => d.counters(&mut c),
            Model::Endpoint(d) => d.counters(&mut c),
            Model::Switch(d) => d.counters(&mut c),
        }
        c.sort_by(|a, b| a.0.cmp(&b.0));
        c
    }

    /// The snapshot `ethlink_counter_at` reads.
    pub(crate) fn snapshot(&mut self) -> &mut Vec<(String, u64)> {
        match self {
            Model::LinkEnd(d) => &mut d.snapshot,
            Model::Endpoint(d) => &mut d.snapshot,
            Model::Switch(d) => &mut d.snapshot,
        }
    }
}

/// Writes the counters of a link (link.md Table LINK-T3) into `into`, each name after `prefix`
/// and with `.vc<v>` for a per-VC counter.
pub(crate) fn link_counters(
    c: &ethlink_link::Counters,
    prefix: &str,
    into: &mut Vec<(String, u64)>,
) {
    c.for_each(|name, vc, value| {
        let key = match vc {
            Some(v) => format!("{prefix}{name}.vc{v}"),
            None => format!("{prefix}{name}"),
        };
        into.push((key, value));
    });
}
