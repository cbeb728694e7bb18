//! The credit loop of a scenario's links and the receive buffer it calls for (link.md §1.2,
//! "Sizing the receive buffer"; switch.md §1).
//!
//! A VC runs at line rate only while the sender never waits for credit: the receiver's buffer for
//! the VC must hold every byte the sender can send between taking credits for a frame and getting
//! them back in a CF. That time is the credit loop:
//!
//! ```text
//! loop = ser(mfs)                 the frame arrives whole
//!      + t_prop                   over the cable
//!      + t_hold                   the receiver holds its credits: a switch until it hands the
//!                                 frame to the egress link (SW-4-1), latency + egress_depth frames
//!      + cf_min_interval          the CF waits for its spacing (LINK-5-5)
//!      + ser(mfs) + ser(cf)       the CF waits behind one frame on the way back, then is sent
//!      + t_prop                   back over the cable
//! buffer >= R * loop + mfs        bytes per VC for one uncontended sender at line rate
//! ```
//!
//! `ser(x)` is the wire time of an `x`-byte frame with its preamble and inter-frame gap. The
//! fabric's default grant is twice that buffer, rounded up to whole credits: one loop for the
//! frames in flight, one for frames that wait in a switch for an egress port they share with other
//! inputs (round robin, SW-5-2), so that a port feeding a shared egress still keeps its own
//! stream going.

use crate::scenario::Scenario;

/// Bytes of preamble, start delimiter and inter-frame gap around every frame on the wire.
const WIRE_GAP: f64 = 20.0;
/// Bytes of a CF frame (a minimum-size Ethernet frame).
const CF_FRAME: f64 = 64.0;
/// The largest grant a link can announce (link.md Table LINK-T1).
const MAX_CREDITS: u64 = (1 << 19) - 1;

/// The credit loop of a scenario's links: its parts, its length and the buffer it calls for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CreditLoop {
    /// Line rate, bytes per ns.
    pub rate_bytes_per_ns: f64,
    /// Wire time of one frame of `mfs` bytes, ns.
    pub frame_ns: f64,
    /// One-way propagation delay, ns.
    pub propagation_ns: f64,
    /// How long a switch holds a frame's credits after it arrived whole, ns.
    pub hold_ns: f64,
    /// The CF spacing (`cf_min_interval`), ns.
    pub cf_interval_ns: f64,
    /// Wire time of a CF frame, ns.
    pub cf_ns: f64,
    /// The whole loop, ns.
    pub loop_ns: f64,
    /// Bytes per VC one sender needs to run at line rate through the loop.
    pub need_bytes: u64,
    /// Credits per VC the fabric grants when a scenario sets no `rx_credits`: twice the need,
    /// in whole credits.
    pub default_credits: u32,
}

impl CreditLoop {
    /// The credit loop of `s`'s links: its rate, cable, switch latency and egress depth, CF
    /// spacing, MFS and credit size.
    pub fn of(s: &Scenario) -> CreditLoop {
        let l = &s.link;
        let rate = (l.rate_gbps / 8.0).max(f64::MIN_POSITIVE);
        let ser = |bytes: f64| (bytes + WIRE_GAP) / rate;
        let mfs = f64::from(l.mfs);
        let frame_ns = ser(mfs);
        let propagation_ns = l.propagation_ns.unwrap_or(l.cable_m * 5.0).max(0.0);
        let hold_ns = s.switch.latency_ns as f64 + f64::from(s.switch.egress_depth) * frame_ns;
        let cf_interval_ns = l.cf_min_interval_ns as f64;
        let cf_ns = ser(CF_FRAME);
        let loop_ns = frame_ns
            + propagation_ns
            + hold_ns
            + cf_interval_ns
            + frame_ns
            + cf_ns
            + propagation_ns;
        let need = (rate * loop_ns).ceil() + mfs;
        let need_bytes = if need.is_finite() && need < 1e18 {
            need as u64
        } else {
            u64::MAX
        };
        let size = u64::from(l.credit_size.max(1));
        let credits = need_bytes
            .saturating_mul(2)
            .div_ceil(size)
            .clamp(1, MAX_CREDITS);
        CreditLoop {
            rate_bytes_per_ns: rate,
            frame_ns,
            propagation_ns,
            hold_ns,
            cf_interval_ns,
            cf_ns,
            loop_ns,
            need_bytes,
            default_credits: u32::try_from(credits).unwrap_or(u32::MAX),
        }
    }

    /// Credits per VC that cover the loop once (the least for line rate), in whole credits of
    /// `credit_size` bytes.
    pub fn need_credits(&self, credit_size: u16) -> u64 {
        self.need_bytes.div_ceil(u64::from(credit_size.max(1)))
    }
}

impl Scenario {
    /// The credit loop of the scenario's links and the buffer it calls for (link.md §1.2).
    pub fn credit_loop(&self) -> CreditLoop {
        CreditLoop::of(self)
    }

    /// Credits each receiver grants per VC: `link.rx_credits` when the scenario sets it, or else
    /// the default derived from the credit loop ([`CreditLoop::default_credits`]).
    pub fn rx_credits(&self) -> u32 {
        self.link
            .rx_credits
            .unwrap_or_else(|| self.credit_loop().default_credits)
    }

    /// The scenario with every derived default written in (`link.rx_credits`), as it runs: what
    /// `--print-scenario` prints and the report's scenario section holds.
    pub fn resolved(&self) -> Scenario {
        let mut s = self.clone();
        s.link.rx_credits = Some(self.rx_credits());
        s
    }

    /// What a valid scenario sets that will not do what its author likely expects, one sentence
    /// each, naming the key: today, a receive buffer set below what the credit loop needs for
    /// line rate (link.md §1.2), so that the links stall for credit even without contention.
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        if let Some(credits) = self.link.rx_credits {
            let c = self.credit_loop();
            let need = c.need_credits(self.link.credit_size);
            if u64::from(credits) < need {
                w.push(format!(
                    "link.rx_credits = {credits} ({} bytes per VC) cannot cover the credit loop of \
                     {:.0} ns at {} Gb/s, which needs {} bytes ({need} credits of {} bytes): senders \
                     will stall for credit even without contention; leave rx_credits out for the \
                     derived default of {}",
                    u64::from(credits) * u64::from(self.link.credit_size),
                    c.loop_ns,
                    self.link.rate_gbps,
                    c.need_bytes,
                    self.link.credit_size,
                    c.default_credits,
                ));
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_scenario_loop_adds_up() {
        let s = Scenario::default();
        let c = CreditLoop::of(&s);
        // 400 Gb/s = 50 B/ns; 9216 B + 20 B on the wire = 184.72 ns; 5 m = 25 ns; 250 ns and two
        // frames of egress depth; 100 ns of CF spacing; a 64 B CF = 1.68 ns.
        assert!((c.frame_ns - 184.72).abs() < 1e-9);
        assert!((c.hold_ns - (250.0 + 2.0 * 184.72)).abs() < 1e-9);
        let sum = 184.72 + 25.0 + 619.44 + 100.0 + 184.72 + 1.68 + 25.0;
        assert!((c.loop_ns - sum).abs() < 1e-6, "{}", c.loop_ns);
        let need = (50.0 * sum).ceil() as u64 + 9216;
        assert_eq!(c.need_bytes, need);
        assert_eq!(u64::from(c.default_credits), (2 * need).div_ceil(64));
        assert_eq!(c.need_credits(64), need.div_ceil(64));
    }

    #[test]
    fn a_faster_longer_loop_needs_more() {
        let mut s = Scenario::default();
        let base = CreditLoop::of(&s).need_bytes;
        s.link.rate_gbps = 800.0;
        let faster = CreditLoop::of(&s).need_bytes;
        s.link.propagation_ns = Some(100.0);
        let longer = CreditLoop::of(&s).need_bytes;
        assert!(base < faster && faster < longer, "{base} {faster} {longer}");
    }

    #[test]
    fn the_grant_is_bounded() {
        let mut s = Scenario::default();
        s.link.propagation_ns = Some(1e12);
        s.link.credit_size = 32;
        let c = CreditLoop::of(&s);
        assert_eq!(u64::from(c.default_credits), MAX_CREDITS);
    }
}
