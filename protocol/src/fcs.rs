//! The Ethernet frame check sequence (WIRE-2.5-1, WIRE-2.5-2).
//!
//! CRC-32/ISO-HDLC as IEEE 802.3 defines it. With the `std` feature it is computed by `crc32fast`,
//! which folds with carry-less multiplication (PCLMULQDQ / PMULL) when the CPU has it (detected at
//! run time) and uses slice-by-16 tables otherwise; without `std`, by the table-driven `crc` crate.
//! `crc32fast` has a small fixed cost per call, which matters here: most EthLink frames are 64 to
//! a few hundred bytes (see `benches/wire.rs`).

/// Length of the FCS in bytes.
pub const FCS_LEN: usize = 4;

//= docs/spec/wire.md#25-frame-check-sequence
//# WIRE-2.5-1 The FCS MUST be the CRC-32 of IEEE 802.3 clause 3.2.9 [...] computed over every
//# byte from the destination MAC address to the last padding byte.
/// The CRC-32 of `bytes` as Ethernet computes its FCS.
#[cfg(feature = "std")]
pub fn crc32(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// The CRC-32 of `bytes` as Ethernet computes its FCS.
#[cfg(not(feature = "std"))]
pub fn crc32(bytes: &[u8]) -> u32 {
    const CRC: crc::Crc<u32, crc::Table<16>> =
        crc::Crc::<u32, crc::Table<16>>::new(&crc::CRC_32_ISO_HDLC);
    CRC.checksum(bytes)
}

//= docs/spec/wire.md#25-frame-check-sequence
//# WIRE-2.5-2 The 32-bit CRC value MUST be appended least significant byte first.
/// The four FCS bytes, in the order they follow the frame.
pub fn fcs_bytes(frame_without_fcs: &[u8]) -> [u8; FCS_LEN] {
    crc32(frame_without_fcs).to_le_bytes()
}

//= docs/spec/wire.md#25-frame-check-sequence
//# WIRE-2.5-4 A device that has begun to transmit a frame and then learns that the frame is
//# damaged MUST end it with the stomped FCS: the bitwise complement of the frame's correct FCS.
/// The four bytes of a stomped FCS (wire.md §2.5): the complement of the correct FCS of
/// `frame_without_fcs`, in transmission order.
pub fn stomped_bytes(frame_without_fcs: &[u8]) -> [u8; FCS_LEN] {
    (!crc32(frame_without_fcs)).to_le_bytes()
}

/// Whether the last four bytes of `frame` are the stomped FCS of the bytes before them.
pub fn is_stomped(frame: &[u8]) -> bool {
    match frame.split_last_chunk::<FCS_LEN>() {
        Some((body, fcs)) => stomped_bytes(body) == *fcs,
        None => false,
    }
}

/// What a receiving MAC already knows of a frame's FCS, so that the link layer need not compute
/// the CRC again: a MAC checks the FCS as the frame streams in and hands the frame up with a
/// status. A simulated wire that knows whether it damaged a frame is such a MAC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FcsStatus {
    /// The FCS is the CRC of the frame: the frame is as its sender emitted it, and its sender did
    /// not stomp it.
    Good,
    /// The FCS does not match and is not the stomped FCS: the frame was damaged.
    Bad,
    /// The FCS is the stomped FCS (WIRE-2.5-4): its sender gave the frame up.
    Stomped,
}

impl FcsStatus {
    /// The status of `frame`'s last four bytes, computed.
    pub fn of(frame: &[u8]) -> FcsStatus {
        if check(frame) {
            FcsStatus::Good
        } else if is_stomped(frame) {
            FcsStatus::Stomped
        } else {
            FcsStatus::Bad
        }
    }
}

/// Whether the last four bytes of `frame` are the FCS of the bytes before them.
/// A frame shorter than four bytes never checks.
pub fn check(frame: &[u8]) -> bool {
    match frame.split_last_chunk::<FCS_LEN>() {
        Some((body, fcs)) => fcs_bytes(body) == *fcs,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The residues wire.md §2.5 names: the CRC of a whole frame, its FCS included, is a constant
    /// that tells a good FCS from a stomped one without a second CRC.
    #[test]
    fn residues_tell_a_good_fcs_from_a_stomped_one() {
        for len in [60usize, 61, 1000, 9212] {
            let body: std::vec::Vec<u8> = (0..len).map(|i| (i * 31 + len) as u8).collect();
            let mut good = body.clone();
            good.extend_from_slice(&fcs_bytes(&body));
            let mut stomped = body.clone();
            stomped.extend_from_slice(&stomped_bytes(&body));
            assert_eq!(crc32(&good), 0x2144_DF1C, "{len}");
            assert_eq!(crc32(&stomped), 0xFFFF_FFFF, "{len}");
            assert_eq!(!crc32(&good), 0xDEBB_20E3);
            assert_eq!(!crc32(&stomped), 0);
        }
    }

    //= type=test
    // WIRE-2.5-1: the catalogue check value of CRC-32/ISO-HDLC.
    #[test]
    fn check_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
    }

    //= type=test
    // WIRE-2.5-2: least significant byte first, and the residue property of a good frame.
    #[test]
    fn appended_lsb_first() {
        let mut frame = [0u8; 64];
        for (i, b) in frame.iter_mut().enumerate() {
            *b = i as u8;
        }
        let fcs = fcs_bytes(&frame[..60]);
        assert_eq!(fcs, crc32(&frame[..60]).to_le_bytes());
        frame[60..].copy_from_slice(&fcs);
        assert!(check(&frame));
        // The CRC of a frame followed by its FCS is the fixed residue of CRC-32.
        assert_eq!(crc32(&frame), 0x2144_DF1C);
        frame[10] ^= 0x01;
        assert!(!check(&frame));
        assert!(!check(&[1, 2, 3]));
    }

    //= type=test
    // WIRE-2.5-4: the stomped FCS is the complement of the good one, and never checks as good.
    #[test]
    fn stomped_fcs_is_the_complement() {
        let frame: std::vec::Vec<u8> = (0..60u8).collect();
        let good = fcs_bytes(&frame);
        let stomped = stomped_bytes(&frame);
        for (g, s) in good.iter().zip(stomped.iter()) {
            assert_eq!(*g, !*s);
        }
        let mut whole = frame.clone();
        whole.extend_from_slice(&stomped);
        assert!(is_stomped(&whole));
        assert!(!check(&whole));
        let mut good_whole = frame;
        good_whole.extend_from_slice(&good);
        assert!(!is_stomped(&good_whole));
        assert!(!is_stomped(&[1, 2]));
    }

    #[test]
    fn large_buffers_agree_with_bitwise_reference() {
        fn reference(bytes: &[u8]) -> u32 {
            let mut crc = 0xFFFF_FFFFu32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = if crc & 1 != 0 {
                        (crc >> 1) ^ 0xEDB8_8320
                    } else {
                        crc >> 1
                    };
                }
            }
            !crc
        }
        let data: [u8; 9216] = core::array::from_fn(|i| (i.wrapping_mul(31) ^ (i >> 3)) as u8);
        let lens = [
            0usize, 1, 3, 4, 15, 16, 17, 31, 32, 60, 63, 64, 65, 112, 127, 128, 129, 255, 256, 364,
            1500, 4097, 9212, 9216,
        ];
        for len in lens {
            assert_eq!(crc32(&data[..len]), reference(&data[..len]), "len {len}");
        }
    }
}
