//! A link end (`ethlink-link`) behind a handle.
//!
//! Events are taken from the link one at a time and kept until the caller's buffer holds them,
//! so a too-short buffer loses nothing. A delivered payload's receive-buffer credits are given
//! back to the link when the caller takes the event, unless its VC is held
//! (`ethlink_link_hold`): then they are given back when the hold ends.

use std::collections::VecDeque;

use ethlink_link::{Config, DownReason, Event as LinkEvent, Instant, Link, LostReason, Release};
use ethlink_protocol::{MacAddr, Vc};

use crate::conv::{apply_params, caps, config_error, params_of, vc};
use crate::ctx::{Polled, Transmit, describe, link_counters, tick};
use crate::error::{Error, Result};
use crate::types::{
    Description, ETHLINK_DOWN_FLUSH, ETHLINK_DOWN_PEER_RESTART, ETHLINK_DOWN_PHYSICAL,
    ETHLINK_EVENT_DELIVERED, ETHLINK_EVENT_LINK_DOWN, ETHLINK_EVENT_LINK_UP, ETHLINK_EVENT_LOST,
    ETHLINK_LOST_EXCEEDS_PEER_MFS, ETHLINK_LOST_UNKNOWN_FATE, ETHLINK_LOST_VC_NOT_AGREED,
    ETHLINK_LOST_WITHDRAWN, ETHLINK_ROLE_LINK_END, Event, LinkEndConfig,
};

/// The default configuration (link.md §1.1).
pub(crate) fn default_config() -> LinkEndConfig {
    let c = Config::default();
    LinkEndConfig {
        link: params_of(&c),
        mac: c.mac.0,
        caps: u32::from(c.caps.bits()),
        seed: c.nonce_seed,
    }
}

/// An event taken from the link and not yet handed to the caller.
enum Pending {
    Delivered {
        vc: Vc,
        payload: Vec<u8>,
        release: Release,
    },
    Lost {
        vc: Vc,
        reason: LostReason,
        payload: Vec<u8>,
    },
    Up,
    Down(DownReason),
}

/// A link end and what the ABI keeps beside it.
pub(crate) struct LinkEndDev {
    link: Link,
    now: u64,
    hold: [bool; 8],
    held: [VecDeque<Release>; 8],
    pending: Option<Pending>,
    pub(crate) snapshot: Vec<(String, u64)>,
}

fn lost_code(r: LostReason) -> u8 {
    match r {
        LostReason::UnknownFate => ETHLINK_LOST_UNKNOWN_FATE,
        LostReason::ExceedsPeerMfs => ETHLINK_LOST_EXCEEDS_PEER_MFS,
        LostReason::VcNotAgreed => ETHLINK_LOST_VC_NOT_AGREED,
        LostReason::Withdrawn => ETHLINK_LOST_WITHDRAWN,
    }
}

fn down_code(r: DownReason) -> u8 {
    match r {
        DownReason::Flush => ETHLINK_DOWN_FLUSH,
        DownReason::Physical => ETHLINK_DOWN_PHYSICAL,
        DownReason::PeerRestart => ETHLINK_DOWN_PEER_RESTART,
    }
}

fn port0(port: u16) -> Result<()> {
    if port == 0 {
        Ok(())
    } else {
        Err(Error::argument(format!(
            "port = {port}: a link end has the one port 0"
        )))
    }
}

impl LinkEndDev {
    pub(crate) fn new(cfg: &LinkEndConfig) -> Result<Self> {
        let base = Config::default();
        let mut c = apply_params(&base, &cfg.link);
        c.mac = MacAddr(cfg.mac);
        c.caps = caps(cfg.caps, "cfg->caps")?;
        c.nonce_seed = cfg.seed;
        let link = Link::new(c).map_err(|e| config_error(&e, &[]))?;
        Ok(LinkEndDev {
            link,
            now: 0,
            hold: [false; 8],
            held: Default::default(),
            pending: None,
            snapshot: Vec::new(),
        })
    }

    pub(crate) fn describe(&self) -> Description {
        describe(
            ETHLINK_ROLE_LINK_END,
            1,
            u32::from(self.link.config().caps.bits()),
            "ethlink reference link end",
        )
    }

    pub(crate) fn physical(&mut self, port: u16, up: bool, now: u64) -> Result<()> {
        port0(port)?;
        tick(&mut self.now, now)?;
        let at = Instant::from_nanos(now);
        if up {
            self.link.physical_up(at);
        } else {
            self.link.physical_down(at);
        }
        Ok(())
    }

    pub(crate) fn handle_frame(&mut self, port: u16, now: u64, frame: &[u8]) -> Result<()> {
        port0(port)?;
        tick(&mut self.now, now)?;
        self.link.handle_frame(Instant::from_nanos(now), frame);
        Ok(())
    }

    pub(crate) fn poll_transmit(&mut self, now: u64, buf: &mut [u8]) -> Result<Transmit> {
        tick(&mut self.now, now)?;
        Ok(
            match self.link.poll_transmit(Instant::from_nanos(now), buf) {
                Ok(Some(t)) => Transmit::Frame {
                    port: 0,
                    len: t.len,
                },
                Ok(None) => Transmit::Nothing,
                Err(e) => Transmit::TooSmall {
                    port: 0,
                    needed: e.needed,
                },
            },
        )
    }

    pub(crate) fn poll_timeout(&self) -> Option<u64> {
        self.link.poll_timeout().map(Instant::as_nanos)
    }

    pub(crate) fn handle_timeout(&mut self, now: u64) -> Result<()> {
        tick(&mut self.now, now)?;
        self.link.handle_timeout(Instant::from_nanos(now));
        Ok(())
    }

    /// Takes the next event of the link into `pending`, skipping notices.
    fn fetch(&mut self) {
        while self.pending.is_none() {
            self.pending = match self.link.poll_event() {
                None => return,
                Some(LinkEvent::Notice(_)) => None,
                Some(LinkEvent::LinkUp(_)) => Some(Pending::Up),
                Some(LinkEvent::LinkDown(r)) => Some(Pending::Down(r)),
                Some(LinkEvent::Delivered {
                    vc,
                    payload,
                    release,
                    ..
                }) => Some(Pending::Delivered {
                    vc,
                    payload: payload.to_vec(),
                    release,
                }),
                Some(LinkEvent::Lost {
                    vc,
                    reason,
                    payload,
                }) => Some(Pending::Lost {
                    vc,
                    reason,
                    payload: payload.to_vec(),
                }),
            };
        }
    }

    pub(crate) fn poll_event(&mut self, data: &mut [u8]) -> Result<Polled> {
        self.fetch();
        let blank = Event {
            kind: 0,
            port: 0,
            vc: 0,
            reason: 0,
            op: 0,
            status: 0,
            status_raw: 0,
            id: 0,
            len: 0,
        };
        let (event, payload) = match &self.pending {
            None => return Ok(Polled::Nothing),
            Some(Pending::Up) => (
                Event {
                    kind: ETHLINK_EVENT_LINK_UP,
                    ..blank
                },
                None,
            ),
            Some(Pending::Down(r)) => (
                Event {
                    kind: ETHLINK_EVENT_LINK_DOWN,
                    reason: down_code(*r),
                    ..blank
                },
                None,
            ),
            Some(Pending::Delivered { vc, payload, .. }) => (
                Event {
                    kind: ETHLINK_EVENT_DELIVERED,
                    vc: vc.value(),
                    len: payload.len(),
                    ..blank
                },
                Some(payload),
            ),
            Some(Pending::Lost {
                vc,
                reason,
                payload,
            }) => (
                Event {
                    kind: ETHLINK_EVENT_LOST,
                    vc: vc.value(),
                    reason: lost_code(*reason),
                    len: payload.len(),
                    ..blank
                },
                Some(payload),
            ),
        };
        if let Some(p) = payload {
            match data.get_mut(..p.len()) {
                Some(dst) => dst.copy_from_slice(p),
                None => return Ok(Polled::TooSmall(event)),
            }
        }
        if let Some(Pending::Delivered { vc, release, .. }) = self.pending.take() {
            let v = vc.index();
            if self.hold[v] {
                self.held[v].push_back(release);
            } else {
                self.link
                    .release(release)
                    .map_err(|e| Error::panic(format!("the link refused a release: {e:?}")))?;
            }
        }
        Ok(Polled::Event(event))
    }

    pub(crate) fn counters(&self, into: &mut Vec<(String, u64)>) {
        link_counters(self.link.counters(), "", into);
    }

    pub(crate) fn submit(&mut self, v: u8, payload: &[u8]) -> Result<()> {
        let v = vc(v)?;
        self.link.submit(v, payload).map_err(|e| match e {
            ethlink_link::SubmitError::QueueFull { .. } => Error::refused(format!("submit: {e}")),
            _ => Error::argument(format!("submit: {e}")),
        })
    }

    pub(crate) fn hold(&mut self, v: u8, hold: bool) -> Result<()> {
        let i = vc(v)?.index();
        self.hold[i] = hold;
        if !hold {
            while let Some(r) = self.held[i].pop_front() {
                self.link
                    .release(r)
                    .map_err(|e| Error::panic(format!("the link refused a release: {e:?}")))?;
            }
        }
        Ok(())
    }

    pub(crate) fn withdraw(&mut self) -> usize {
        self.link.withdraw()
    }
}
