//! Parameters of one link end (link.md §1.1) and the values agreed with the peer (LINK-2-4).

use core::fmt;

use ethlink_protocol::{Capabilities, MacAddr, Role, Seq, VlanTag};

use crate::time::Duration;

/// Configuration of one link end. [`Config::default`] gives the defaults of link.md §1.1.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// This port's own unicast MAC address, the source of every frame it sends (WIRE-2.3-1).
    pub mac: MacAddr,
    /// An 802.1Q tag to put on every frame, if any.
    pub vlan: Option<VlanTag>,
    /// Virtual channels, 1..=8.
    pub vcs: u8,
    /// Bytes per credit at this end's receiver: a power of two, 32..=2048.
    pub credit_size: u16,
    /// Credits this end's receiver grants on each VC (its buffer for the VC / `credit_size`),
    /// each 1..2^19-1 for the VCs in use, and enough for one frame of `mfs` bytes:
    /// `rx_credits[v] * credit_size >= mfs + credit_overhead` (LINK-2-13).
    pub rx_credits: [u32; 8],
    /// Bytes this end's receiver adds to a frame's length when it computes the frame's credit
    /// cost, 0..=255; announced in INIT, so the peer's transmitter uses the same value.
    pub credit_overhead: u16,
    /// Maximum frame size this end sends and accepts, 320..=9216.
    pub mfs: u16,
    /// Most unacknowledged sequenced frames, 1..=2^19.
    pub llr_window: u32,
    /// Most frames in the replay buffer, 1..=`llr_window`.
    pub replay_max_frames: u32,
    /// Most bytes in the replay buffer, at least `mfs`.
    pub replay_max_bytes: u32,
    /// Bytes accepted between cumulative ACKs, 64..=2^20.
    pub ack_spacing: u32,
    /// Longest an accepted frame waits for its ACK.
    pub ack_timer: Duration,
    /// Time without ACK progress before the whole replay buffer is replayed.
    pub replay_timer: Duration,
    /// Replays without progress before FLUSH, 1..=255.
    pub replay_count_max: u8,
    /// Longest a frame stays in the replay buffer after it was first sent: when the oldest
    /// frame reaches it the TX enters FLUSH (LINK-3-18), whatever the replay count. It bounds
    /// how long a link can take to deliver a frame or give it up (link.md §3.1).
    pub llr_max_age: Duration,
    /// Freed credits that trigger a CF.
    pub cf_min_credits: u32,
    /// Least time between two CF frames.
    pub cf_min_interval: Duration,
    /// Most time between two CF frames while the link is up.
    pub cf_max_interval: Duration,
    /// Period of CC frames while the replay buffer is empty.
    pub cc_interval: Duration,
    /// Period of INIT frames while the link initialises.
    pub init_interval: Duration,
    /// Time in INIT, while the physical link is up, after which the end reports an
    /// [`crate::Notice::InitTimeout`] and counts `init_timeouts` once; it goes on sending INIT
    /// (LINK-2-14).
    pub init_timeout: Duration,
    /// Frames the transmit queue of each VC holds before `submit` refuses (at least 1).
    pub tx_queue_frames: u32,
    /// Bytes the transmit queue of each VC holds before `submit` refuses (at least `mfs`).
    pub tx_queue_bytes: u32,
    /// Seed of the nonces this end draws for its initialisations (LINK-2-9). An end has no
    /// entropy source of its own: the embedder MUST give each incarnation of a device (each
    /// reset, each power-up) a different seed, for instance from a random source or a boot
    /// counter, or a restart may go unnoticed by the peer.
    pub nonce_seed: u64,
    /// The capabilities this end announces in INIT and INIT_ECHO (wire.md §4.5, classes.md).
    pub caps: Capabilities,
    /// The role this end announces in INIT and INIT_ECHO.
    pub role: Role,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mac: MacAddr([0x02, 0, 0, 0, 0, 1]),
            vlan: None,
            vcs: 4,
            credit_size: 64,
            rx_credits: [1280, 1280, 1280, 1280, 0, 0, 0, 0],
            credit_overhead: 0,
            mfs: 9216,
            llr_window: Seq::MAX_WINDOW,
            replay_max_frames: 115,
            replay_max_bytes: 58_768,
            ack_spacing: 2048,
            ack_timer: Duration::from_nanos(500),
            replay_timer: Duration::from_micros(5),
            replay_count_max: 3,
            llr_max_age: Duration::from_micros(25),
            cf_min_credits: 8,
            cf_min_interval: Duration::from_nanos(100),
            cf_max_interval: Duration::from_micros(2),
            cc_interval: Duration::from_micros(10),
            init_interval: Duration::from_micros(1),
            init_timeout: Duration::from_millis(1),
            tx_queue_frames: 256,
            tx_queue_bytes: 256 * 1024,
            nonce_seed: 1,
            caps: Capabilities::NONE,
            role: Role::LinkEnd,
        }
    }
}

/// A configuration value out of its range: which parameter, its value and the rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigError {
    /// The parameter, as the spec of its layer names it (link.md §1.1; the endpoint and the
    /// switch, which use this type too, name their own parameters and a port link's as
    /// `link.<name>` or as link.md does).
    pub field: &'static str,
    /// The value given (durations in nanoseconds; a MAC address in the low 48 bits; a rate in
    /// Gb/s, field `rate_gbps`, as the bits of its `f64`).
    pub value: u64,
    /// The rule it breaks.
    pub rule: &'static str,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field == "mac" {
            // A MAC address, carried in the low 48 bits, reads as one.
            let b = self.value.to_be_bytes();
            return write!(
                f,
                "mac = {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}: {}",
                b[2], b[3], b[4], b[5], b[6], b[7], self.rule
            );
        }
        if self.field == "rate_gbps" {
            // A rate, carried as the bits of its f64: NaN, inf and -400 read as given.
            return write!(
                f,
                "rate_gbps = {}: {}",
                f64::from_bits(self.value),
                self.rule
            );
        }
        write!(f, "{} = {}: {}", self.field, self.value, self.rule)
    }
}

impl core::error::Error for ConfigError {}

fn ns(d: Duration) -> u64 {
    crate::time::nanos(d)
}

impl Config {
    /// Sets the same grant on the first `vcs` VCs and zero on the others.
    pub fn with_uniform_credits(mut self, vcs: u8, credits: u32) -> Self {
        self.vcs = vcs;
        for (v, c) in self.rx_credits.iter_mut().enumerate() {
            *c = if v < usize::from(vcs) { credits } else { 0 };
        }
        self
    }

    /// Checks every parameter against link.md §1.1 and names the first one out of range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |field, value: u64, rule| Err(ConfigError { field, value, rule });
        //= docs/spec/wire.md#23-mac-addresses
        //# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
        // Every frame carries the configured address as its source, so a group address (bit 0 of
        // its first byte set, IEEE 802) is refused here rather than sent.
        if self.mac.0[0] & 1 != 0 {
            let mut b = [0u8; 8];
            b[2..].copy_from_slice(&self.mac.0);
            return err(
                "mac",
                u64::from_be_bytes(b),
                "must be a unicast address: bit 0 of its first byte (the group bit) must be 0",
            );
        }
        if !(1..=8).contains(&self.vcs) {
            return err("vcs", self.vcs.into(), "must be 1..=8");
        }
        if !(32..=2048).contains(&self.credit_size) || !self.credit_size.is_power_of_two() {
            return err(
                "credit_size",
                self.credit_size.into(),
                "must be a power of two in 32..=2048",
            );
        }
        for (v, c) in self.rx_credits.iter().enumerate() {
            if v < usize::from(self.vcs) && !(1..Seq::MAX_WINDOW).contains(c) {
                return err(
                    "rx_credits",
                    (*c).into(),
                    "each VC in use must grant 1..=2^19-1 credits",
                );
            }
        }
        if self.credit_overhead > 255 {
            return err(
                "credit_overhead",
                self.credit_overhead.into(),
                "must be 0..=255",
            );
        }
        if !(320..=9216).contains(&self.mfs) {
            return err("mfs", self.mfs.into(), "must be 320..=9216");
        }
        //= docs/spec/link.md#2-bring-up
        //# LINK-2-13 An end MUST NOT be configured with a grant that cannot hold one frame of its
        //# own MFS: for every VC *v* below `vcs`, `rx_credits[v] * credit_size >= mfs +
        //# credit_overhead`.
        let one_frame = u64::from(self.mfs) + u64::from(self.credit_overhead);
        for c in self.rx_credits.iter().take(usize::from(self.vcs)) {
            if u64::from(*c) * u64::from(self.credit_size) < one_frame {
                return err(
                    "rx_credits",
                    (*c).into(),
                    "each VC in use must hold one frame: rx_credits * credit_size >= mfs + credit_overhead",
                );
            }
        }
        if !(1..=Seq::MAX_WINDOW).contains(&self.llr_window) {
            return err("llr_window", self.llr_window.into(), "must be 1..=2^19");
        }
        if !(1..=self.llr_window).contains(&self.replay_max_frames) {
            return err(
                "replay_max_frames",
                self.replay_max_frames.into(),
                "must be 1..=llr_window",
            );
        }
        if self.replay_max_bytes < u32::from(self.mfs) || self.replay_max_bytes > 1 << 30 {
            return err(
                "replay_max_bytes",
                self.replay_max_bytes.into(),
                "must be at least mfs and at most 2^30",
            );
        }
        if !(64..=1 << 20).contains(&self.ack_spacing) {
            return err("ack_spacing", self.ack_spacing.into(), "must be 64..=2^20");
        }
        for (field, d) in [
            ("ack_timer", self.ack_timer),
            ("replay_timer", self.replay_timer),
            ("llr_max_age", self.llr_max_age),
            ("cc_interval", self.cc_interval),
            ("init_interval", self.init_interval),
            ("init_timeout", self.init_timeout),
        ] {
            if d.is_zero() {
                return err(field, 0, "must be greater than 0");
            }
        }
        for (field, d) in [
            ("ack_timer", self.ack_timer),
            ("replay_timer", self.replay_timer),
            ("llr_max_age", self.llr_max_age),
            ("cf_min_interval", self.cf_min_interval),
            ("cf_max_interval", self.cf_max_interval),
            ("cc_interval", self.cc_interval),
            ("init_interval", self.init_interval),
            ("init_timeout", self.init_timeout),
        ] {
            if d > Duration::from_secs(1) {
                return err(field, ns(d), "must be at most 1 s");
            }
        }
        if self.init_timeout < self.init_interval {
            return err(
                "init_timeout",
                ns(self.init_timeout),
                "must be at least init_interval",
            );
        }
        if self.replay_count_max == 0 {
            return err("replay_count_max", 0, "must be 1..=255");
        }
        if self.cf_min_credits == 0 {
            return err("cf_min_credits", 0, "must be at least 1");
        }
        if self.cf_max_interval <= self.cf_min_interval {
            return err(
                "cf_max_interval",
                ns(self.cf_max_interval),
                "must be greater than cf_min_interval",
            );
        }
        if self.tx_queue_frames == 0 || self.tx_queue_frames > 1 << 20 {
            return err(
                "tx_queue_frames",
                self.tx_queue_frames.into(),
                "must be 1..=2^20",
            );
        }
        if self.tx_queue_bytes < u32::from(self.mfs) || self.tx_queue_bytes > 1 << 30 {
            return err(
                "tx_queue_bytes",
                self.tx_queue_bytes.into(),
                "must be at least mfs and at most 2^30",
            );
        }
        Ok(())
    }

    /// Bytes of receive buffer this end advertises over all its VCs.
    pub fn rx_buffer_bytes(&self) -> u64 {
        self.rx_credits
            .iter()
            .take(usize::from(self.vcs))
            .map(|c| u64::from(*c) * u64::from(self.credit_size))
            .sum()
    }
}

/// The parameters in force while the link is UP (LINK-2-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agreed {
    /// VCs in use: the smaller of the two announced.
    pub vcs: u8,
    /// MFS: the smaller of the two announced.
    pub mfs: u16,
    /// LLR window of this end's TX: the smaller of the two announced.
    pub window: u32,
    /// The peer's credit size, which this end's TX uses.
    pub tx_credit_size: u16,
    /// The peer's grants, which this end's TX uses.
    pub tx_credits: [u32; 8],
    /// The peer's credit overhead, which this end's TX adds to a frame's length (LINK-5-1).
    pub tx_credit_overhead: u8,
}
