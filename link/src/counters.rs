//! The counters of link.md §7 (Table LINK-T3). Every field is a 64-bit unsigned counter that
//! wraps modulo 2^64 (as link.md §7 states above the table), but the four high-water marks at
//! the end.

//= docs/spec/link.md#7-counters
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.
//= docs/spec/link.md#7-counters
//# LINK-7-6 An end MUST expose the counters of Table LINK-T3 under these names (they are the
//# field names of the reference implementation's `Counters`), each counting what its row says.

/// Counters of one link end. Every counter increases monotonically from construction and
/// survives re-initialisation; every discard increments exactly one of them (LINK-7-1).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Counters {
    /// DATA frames sent for the first time, per VC.
    pub tx_frames: [u64; 8],
    /// Bytes of those frames (destination MAC through FCS), per VC.
    pub tx_bytes: [u64; 8],
    /// DATA frames accepted and delivered, per VC.
    pub rx_frames: [u64; 8],
    /// Bytes of those frames, per VC.
    pub rx_bytes: [u64; 8],
    /// ACK frames sent.
    pub acks_sent: u64,
    /// ACK frames received.
    pub acks_received: u64,
    /// NACK frames sent.
    pub nacks_sent: u64,
    /// NACK frames received.
    pub nacks_received: u64,
    /// DATA frames retransmitted.
    pub frames_replayed: u64,
    /// Replays started by a NACK.
    pub replays_by_nack: u64,
    /// Replays started by the replay timer.
    pub replay_timeouts: u64,
    /// FLUSH entries.
    pub flushes: u64,
    /// FLUSH entries because the oldest frame of the replay buffer reached `llr_max_age`
    /// (LINK-3-18); counted in `flushes` too.
    pub flushes_aged: u64,
    /// Frames reported of unknown fate by a FLUSH or a link down.
    pub frames_unknown_fate: u64,
    /// Frames discarded for a bad FCS (WIRE-2.5-3); they draw a NACK while UP (LINK-4-3).
    pub rx_fcs_errors: u64,
    /// Frames discarded as damaged for their size: shorter than 64 B or longer than the MFS in
    /// force (WIRE-2.4-2, LINK-2-16); they draw a NACK while UP.
    pub rx_damaged: u64,
    /// Frames discarded for a stomped FCS (WIRE-2.5-5, LINK-4-10): no NACK, no sequence number,
    /// no credit.
    pub rx_stomped: u64,
    /// Frames discarded as not EthLink: another EtherType (WIRE-2.1-2).
    pub rx_foreign: u64,
    /// EthLink frames discarded for a version other than 1 (WIRE-3-2).
    pub rx_bad_version: u64,
    /// EthLink frames discarded for an unknown kind (WIRE-3-3).
    pub rx_unknown_kind: u64,
    /// Control frames discarded for a malformed body: short or long body (WIRE-4-1), INIT or
    /// INIT_ECHO parameters out of range (WIRE-4.5-1).
    pub rx_malformed_control: u64,
    /// DATA frames accepted by the LLR on a VC beyond the agreed count, then discarded without
    /// credit (LINK-4-11).
    pub rx_vc_not_agreed: u64,
    /// Frames discarded because the end is not UP: every frame while the physical link is down,
    /// and DATA, ACK, NACK, CF and CC frames while initialising (LINK-2-10, LINK-2-11).
    pub rx_not_up: u64,
    /// DATA duplicates discarded (LINK-4-5).
    pub duplicates: u64,
    /// DATA frames discarded because their sequence number is ahead of the expected one (a gap,
    /// LINK-4-3, LINK-4-7), in any receive state.
    pub discarded_after_nack: u64,
    /// ACKs and NACKs whose sequence number was stale or impossible (LINK-3-4).
    pub stale_acks: u64,
    /// CF entries that were stale or impossible (LINK-5-6).
    pub stale_cf_entries: u64,
    /// CC entries that were stale or impossible (LINK-5-8).
    pub stale_cc_entries: u64,
    /// Times a VC with frames waiting ran out of credit, per VC.
    pub credit_stalls: [u64; 8],
    /// Nanoseconds a VC with frames waiting spent without credit, per VC.
    pub credit_stall_ns: [u64; 8],
    /// DATA frames discarded because their cost exceeded the free buffer (LINK-4-6), per VC.
    pub credit_overruns: [u64; 8],
    /// Credits recovered by CC (LINK-5-8), per VC.
    pub credits_recovered: [u64; 8],
    /// CF frames sent.
    pub cf_sent: u64,
    /// CF frames received.
    pub cf_received: u64,
    /// CC frames sent.
    pub cc_sent: u64,
    /// CC frames received.
    pub cc_received: u64,
    /// INIT frames sent.
    pub inits_sent: u64,
    /// INIT frames received.
    pub inits_received: u64,
    /// INIT_ECHO frames sent.
    pub init_echoes_sent: u64,
    /// INIT_ECHO frames received and matched.
    pub init_echoes_received: u64,
    /// INIT_ECHO frames ignored: another echo nonce, or not initialising (LINK-2-3).
    pub init_echoes_ignored: u64,
    /// INIT and INIT_ECHO frames refused because a grant cannot carry one frame of the agreed
    /// MFS (LINK-2-12).
    pub init_refused: u64,
    /// Times an initialisation lasted `init_timeout` without reaching UP (LINK-2-14).
    pub init_timeouts: u64,
    /// Transitions to UP.
    pub link_ups: u64,
    /// Re-initialisations (after FLUSH, physical link down, or a peer restart).
    pub reinits: u64,
    /// Frames refused by the peer's smaller MFS after they were queued.
    pub oversize_for_peer: u64,
    /// Frames queued on a VC beyond the number agreed with the peer, reported lost.
    pub not_agreed_vc: u64,
    /// Frames taken back by the upper layer before they were sent, reported lost (LINK-6-5).
    pub frames_withdrawn: u64,
    /// DATA frames this end stomped while sending and took back out of its replay buffer
    /// (LINK-3-12).
    pub tx_stomped: u64,
    /// Highest number of bytes the replay buffer has held.
    pub replay_bytes_max: u64,
    /// Highest number of frames the replay buffer has held.
    pub replay_frames_max: u64,
    /// Highest occupancy of the receive buffer, in credits, over all VCs together.
    pub rx_occupied_max_credits: u64,
    /// Longest time, ns, from a frame's first transmission to the ACK or NACK that removed it
    /// from the replay buffer (never more than `llr_max_age`, LINK-3-18).
    pub replay_age_max_ns: u64,
}

impl Counters {
    /// DATA frames sent on every VC.
    pub fn tx_frames_total(&self) -> u64 {
        self.tx_frames.iter().sum()
    }

    /// DATA frames accepted on every VC.
    pub fn rx_frames_total(&self) -> u64 {
        self.rx_frames.iter().sum()
    }

    /// Frames discarded, whatever the reason: the sum of every discard counter of LINK-7-1
    /// (stale ACKs and stale CF or CC entries are not frames discarded: their frames were
    /// received and counted as such).
    pub fn discarded(&self) -> u64 {
        self.rx_fcs_errors
            + self.rx_damaged
            + self.rx_stomped
            + self.rx_foreign
            + self.rx_bad_version
            + self.rx_unknown_kind
            + self.rx_malformed_control
            + self.rx_vc_not_agreed
            + self.rx_not_up
            + self.duplicates
            + self.discarded_after_nack
            + self.credit_overruns.iter().sum::<u64>()
            + self.init_echoes_ignored
            + self.init_refused
    }

    /// Every frame handed to the end, each counted once (LINK-7-3): the DATA frames delivered,
    /// the control frames taken, and the frames discarded.
    pub fn frames_arrived(&self) -> u64 {
        //= docs/spec/link.md#7-counters
        //# LINK-7-3 Every frame handed to an end MUST increment exactly one of: `rx_frames`
        //# (delivered), a received-control counter (`acks_received`, `nacks_received`,
        //# `cf_received`, `cc_received`, `inits_received`, `init_echoes_received`), or one
        //# discard counter.
        self.rx_frames_total()
            + self.acks_received
            + self.nacks_received
            + self.cf_received
            + self.cc_received
            + self.inits_received
            + self.init_echoes_received
            + self.discarded()
    }

    /// Credit stalls on every VC.
    pub fn credit_stalls_total(&self) -> u64 {
        self.credit_stalls.iter().sum()
    }

    /// Calls `f` with the name of every counter (as link.md Table LINK-T3 names it), the VC of a
    /// per-VC counter, and its value: the form a register map or a report reads.
    pub fn for_each(&self, mut f: impl FnMut(&'static str, Option<u8>, u64)) {
        f("acks_sent", None, self.acks_sent);
        f("acks_received", None, self.acks_received);
        f("nacks_sent", None, self.nacks_sent);
        f("nacks_received", None, self.nacks_received);
        f("frames_replayed", None, self.frames_replayed);
        f("replays_by_nack", None, self.replays_by_nack);
        f("replay_timeouts", None, self.replay_timeouts);
        f("flushes", None, self.flushes);
        f("flushes_aged", None, self.flushes_aged);
        f("frames_unknown_fate", None, self.frames_unknown_fate);
        f("rx_fcs_errors", None, self.rx_fcs_errors);
        f("rx_damaged", None, self.rx_damaged);
        f("rx_stomped", None, self.rx_stomped);
        f("rx_foreign", None, self.rx_foreign);
        f("rx_bad_version", None, self.rx_bad_version);
        f("rx_unknown_kind", None, self.rx_unknown_kind);
        f("rx_malformed_control", None, self.rx_malformed_control);
        f("rx_vc_not_agreed", None, self.rx_vc_not_agreed);
        f("rx_not_up", None, self.rx_not_up);
        f("duplicates", None, self.duplicates);
        f("discarded_after_nack", None, self.discarded_after_nack);
        f("stale_acks", None, self.stale_acks);
        f("stale_cf_entries", None, self.stale_cf_entries);
        f("stale_cc_entries", None, self.stale_cc_entries);
        f("cf_sent", None, self.cf_sent);
        f("cf_received", None, self.cf_received);
        f("cc_sent", None, self.cc_sent);
        f("cc_received", None, self.cc_received);
        f("inits_sent", None, self.inits_sent);
        f("inits_received", None, self.inits_received);
        f("init_echoes_sent", None, self.init_echoes_sent);
        f("init_echoes_received", None, self.init_echoes_received);
        f("init_echoes_ignored", None, self.init_echoes_ignored);
        f("init_refused", None, self.init_refused);
        f("init_timeouts", None, self.init_timeouts);
        f("link_ups", None, self.link_ups);
        f("reinits", None, self.reinits);
        f("oversize_for_peer", None, self.oversize_for_peer);
        f("not_agreed_vc", None, self.not_agreed_vc);
        f("frames_withdrawn", None, self.frames_withdrawn);
        f("tx_stomped", None, self.tx_stomped);
        f("replay_bytes_max", None, self.replay_bytes_max);
        f("replay_frames_max", None, self.replay_frames_max);
        f(
            "rx_occupied_max_credits",
            None,
            self.rx_occupied_max_credits,
        );
        f("replay_age_max_ns", None, self.replay_age_max_ns);
        for (v, x) in self.tx_frames.iter().enumerate() {
            f("tx_frames", Some(v as u8), *x);
        }
        for (v, x) in self.tx_bytes.iter().enumerate() {
            f("tx_bytes", Some(v as u8), *x);
        }
        for (v, x) in self.rx_frames.iter().enumerate() {
            f("rx_frames", Some(v as u8), *x);
        }
        for (v, x) in self.rx_bytes.iter().enumerate() {
            f("rx_bytes", Some(v as u8), *x);
        }
        for (v, x) in self.credit_stalls.iter().enumerate() {
            f("credit_stalls", Some(v as u8), *x);
        }
        for (v, x) in self.credit_stall_ns.iter().enumerate() {
            f("credit_stall_ns", Some(v as u8), *x);
        }
        for (v, x) in self.credit_overruns.iter().enumerate() {
            f("credit_overruns", Some(v as u8), *x);
        }
        for (v, x) in self.credits_recovered.iter().enumerate() {
            f("credits_recovered", Some(v as u8), *x);
        }
    }
}
