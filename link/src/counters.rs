//! The counters of link.md §7.

//= docs/spec/link.md#7-counters
//# LINK-7-1 Every discard this document or wire.md requires to be counted MUST increment exactly
//# one counter.

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
    /// Frames reported of unknown fate by a FLUSH or a link down.
    pub frames_unknown_fate: u64,
    /// Frames with a bad FCS.
    pub fcs_errors: u64,
    /// Other damaged frames: shorter than 64 B or longer than the MFS.
    pub damaged_frames: u64,
    /// Frames that are not EthLink (another EtherType).
    pub foreign_frames: u64,
    /// EthLink frames discarded as malformed: bad version, unknown kind, bad padding or body,
    /// INIT parameters out of range, a VC beyond those agreed.
    pub malformed_frames: u64,
    /// DATA duplicates discarded (LINK-4-5).
    pub duplicates: u64,
    /// Frames discarded in NACK_SENT or SEND_NACK while waiting for the expected one (LINK-4-4).
    pub discarded_after_nack: u64,
    /// ACKs and NACKs whose sequence number was stale or impossible (LINK-3-4).
    pub stale_acks: u64,
    /// CF entries that were stale or impossible (LINK-5-6).
    pub stale_cf_entries: u64,
    /// CC entries that were stale or impossible (LINK-5-8).
    pub stale_cc_entries: u64,
    /// DATA frames received while the link was not UP (LINK-2-7).
    pub data_not_up: u64,
    /// ACK, NACK, CF and CC frames received while the link was not UP.
    pub control_not_up: u64,
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
    /// INIT and INIT_ECHO frames received while the physical link was down.
    pub init_while_off: u64,
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
    /// Highest number of bytes the replay buffer has held.
    pub replay_bytes_max: u64,
    /// Highest number of frames the replay buffer has held.
    pub replay_frames_max: u64,
    /// Highest occupancy of the receive buffer, in credits, over all VCs together.
    pub rx_occupied_max_credits: u64,
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

    /// Credit stalls on every VC.
    pub fn credit_stalls_total(&self) -> u64 {
        self.credit_stalls.iter().sum()
    }
}
