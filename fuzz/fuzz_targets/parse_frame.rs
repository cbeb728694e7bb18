//! Feeds arbitrary bytes to every parser of ethlink-protocol and checks that whatever parses
//! re-emits to the same bytes (reserved fields and padding zeroed).
//!
//! The first input byte selects how the rest is used:
//! - bits 1..0 = 0: the rest is a whole frame, FCS included (mostly rejected at the FCS);
//! - 1: the rest with its correct FCS appended, so the fuzzer reaches past the CRC;
//! - 2: the rest is a DATA payload for `DataRepr::parse_at` and the transaction walk;
//! - 3: the rest follows a valid Ethernet header (802.1Q-tagged when bit 2 is set) and a link
//!   header of version 1 and a known kind (from the rest's first byte), padded to 64 B, with
//!   the correct FCS.
//!
//! Bit 4 makes `parse_at` report offsets from near `usize::MAX`; bit 5 sets the link MFS to
//! 320 B instead of 9216 B.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../protocol/tests/support/roundtrip.rs"]
mod roundtrip;

const HEADER: [u8; 12] = [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let mfs = if mode & 0x20 != 0 { 320 } else { 9216 };
    match mode & 3 {
        0 => {
            roundtrip::check_frame(rest, mfs);
        }
        1 => {
            let mut frame = rest.to_vec();
            frame.extend_from_slice(&ethlink_protocol::fcs::fcs_bytes(rest));
            roundtrip::check_frame(&frame, mfs);
        }
        2 => {
            let base = if mode & 0x10 != 0 {
                usize::MAX - 16
            } else {
                14 + 6
            };
            let _ = roundtrip::check_payload(rest, base);
        }
        _ => {
            let mut frame = HEADER.to_vec();
            if mode & 4 != 0 {
                frame.extend_from_slice(&[0x81, 0x00, 0x60, 0x05]);
            }
            frame.extend_from_slice(&[0x88, 0xB5]);
            let (&kind, body) = rest.split_first().unwrap_or((&0, &[]));
            frame.push(0x10 | (kind % 7));
            frame.extend_from_slice(body);
            if frame.len() < 60 {
                frame.resize(60, 0);
            }
            let f = ethlink_protocol::fcs::fcs_bytes(&frame);
            frame.extend_from_slice(&f);
            roundtrip::check_frame(&frame, mfs);
        }
    }
});
