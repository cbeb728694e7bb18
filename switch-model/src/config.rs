//! Parameters of a switch (switch.md §1.1, Table SW-T1).

use core::time::Duration;

use ethlink_link::{Config as LinkConfig, ConfigError};
use ethlink_protocol::{Capabilities, MacAddr, Role};

/// When a frame may leave (SW-6-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Mode {
    /// `latency` after its first bit arrived.
    #[default]
    CutThrough,
    /// `latency` after its last bit arrived.
    StoreAndForward,
}

/// Configuration of a switch. [`Config::default`] gives the defaults of switch.md Table SW-T1.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The switch's number: the bytes 2..3 of every port's MAC address (SW-9-4) and part of its
    /// ports' nonce seeds.
    pub id: u16,
    /// Ports, 1..=1024.
    pub ports: u16,
    /// Port-to-port latency, at most 10 us.
    pub latency: Duration,
    /// Cut-through or store-and-forward.
    pub mode: Mode,
    /// Line rate of every port, Gb/s, for the cut-through timing.
    pub rate_gbps: f64,
    /// Frames of one VC an egress link may hold queued, 1..=64.
    pub egress_depth: u32,
    /// Longest a frame may stay in the switch before its first transmission on its egress port
    /// begins, 1 us..=1 s and more than `latency` (SW-4-4).
    pub max_residence: Duration,
    /// Every port's link; `rx_credits` is the input buffer of each VC.
    pub link: LinkConfig,
    /// Buckets of the path pins (switch.md §2.4), 1..=2^20.
    pub pin_buckets: u32,
    /// How long a path's bucket must be idle before the path may move to another UP port
    /// (switch.md §2.4); `None`: `max_residence` plus the link's limit on a frame's life,
    /// `llr_max_age` (link.md LINK-3-18), and 1 us for the wire.
    pub pin_guard: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        let link = LinkConfig {
            // Frames wait in the switch's own queues, not the link's (SW-5-3).
            tx_queue_frames: 64,
            tx_queue_bytes: 64 * 9216,
            ..LinkConfig::default()
        };
        Config {
            id: 0,
            ports: 64,
            latency: Duration::from_nanos(250),
            mode: Mode::CutThrough,
            rate_gbps: 400.0,
            egress_depth: 2,
            max_residence: Duration::from_micros(40),
            link,
            pin_buckets: 4096,
            pin_guard: None,
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Config {
    /// The guard of the path pins (switch.md §2.4), nanoseconds: `pin_guard`, or by default
    /// the longest a frame already forwarded may still take to leave this switch and cross the
    /// link after it.
    pub fn pin_guard_ns(&self) -> u64 {
        self.pin_guard.map_or_else(
            || {
                let link = nanos(self.link.llr_max_age).saturating_add(1_000);
                nanos(self.max_residence).saturating_add(link)
            },
            nanos,
        )
    }

    /// Checks the parameters against switch.md Table SW-T1 and the link's against link.md.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value, rule| Err(ConfigError { field, value, rule });
        if !(1..=1024).contains(&self.ports) {
            return err("ports", self.ports.into(), "must be 1..=1024");
        }
        let lat = nanos(self.latency);
        if lat > 10_000 {
            return err("latency", lat, "must be at most 10 us");
        }
        if !(self.rate_gbps.is_finite() && self.rate_gbps > 0.0) {
            return err(
                "rate_gbps",
                self.rate_gbps.to_bits(),
                "must be a positive number",
            );
        }
        if !(1..=64).contains(&self.egress_depth) {
            return err("egress_depth", self.egress_depth.into(), "must be 1..=64");
        }
        let res = nanos(self.max_residence);
        if !(1_000..=1_000_000_000).contains(&res) {
            return err("max_residence", res, "must be 1 us..=1 s");
        }
        if res <= lat {
            return err("max_residence", res, "must be more than latency");
        }
        //= docs/spec/switch.md#5-arbitration
        //# SW-5-4 A switch MUST carry VCs 0 to 3 on every port: it MUST announce at least 4 VCs in
        //# the INIT and INIT_ECHO frames of every port and refuse a configuration that gives a
        //# port fewer.
        if self.link.vcs < 4 {
            return err(
                "link.vcs",
                self.link.vcs.into(),
                "must be at least 4: a switch port carries VCs 0 to 3",
            );
        }
        if !(1..=1 << 20).contains(&self.pin_buckets) {
            return err("pin_buckets", self.pin_buckets.into(), "must be 1..=2^20");
        }
        if let Some(g) = self.pin_guard {
            let g = nanos(g);
            if g > 10_000_000_000 {
                return err("pin_guard", g, "must be at most 10 s");
            }
            //= docs/spec/switch.md#24-path-pins
            //# SW-2-14 A switch MUST refuse a `pin_guard` that is not more than `max_residence`.
            if g <= res {
                return err("pin_guard", g, "must be more than max_residence");
            }
        }
        self.link.validate()
    }

    /// The link configuration of port `p` (SW-9-4, SW-9-5): the MAC address
    /// `02:01:<id>:<p>` (id and port big-endian, two bytes each), its own nonce seed, role
    /// Switch, and CUT_THROUGH in cut-through mode (SW-6-5, SW-6-6).
    pub fn port_link(&self, p: u16) -> LinkConfig {
        let mut l = self.link.clone();
        //= docs/spec/switch.md#9-reset-and-identity
        //# SW-9-4 Port *p* of the switch numbered *s* MUST use the MAC address
        //# `02:01:s1:s0:p1:p0`
        let [a, b] = self.id.to_be_bytes();
        let [c, d] = p.to_be_bytes();
        l.mac = MacAddr([0x02, 0x01, a, b, c, d]);
        l.nonce_seed = self
            .link
            .nonce_seed
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(0x5157_0000_0000 | u64::from(self.id) << 16 | u64::from(p));
        //= docs/spec/switch.md#9-reset-and-identity
        //# SW-9-5 Every port of a switch MUST announce role Switch (2) in its INIT and INIT_ECHO
        //# frames.
        l.role = Role::Switch;
        //= docs/spec/switch.md#9-reset-and-identity
        //# SW-9-6 Every port of a switch that sends 802.1Q-tagged frames MUST announce TAGGED
        // The port's link adds TAGGED to what it announces whenever it is configured with a tag
        // (classes.md CLS-3-2), so a tagging port announces it without more here.
        //= docs/spec/switch.md#6-latency-and-cut-through
        //# SW-6-5 A switch that checks the FCS of every frame before it forwards it MUST NOT
        //# announce CUT_THROUGH.
        //= docs/spec/switch.md#6-latency-and-cut-through
        //# SW-6-7 A cut-through switch MUST announce CUT_THROUGH in the INIT and INIT_ECHO frames
        //# of every port.
        l.caps = match self.mode {
            Mode::CutThrough => Capabilities::CUT_THROUGH,
            Mode::StoreAndForward => Capabilities::NONE,
        };
        l
    }
}
