//! Mutated vectors: decoding never panics, and every mutated frame that is still well-formed
//! encodes back to exactly its bytes (reserved bits included).

mod common;

use common::committed_vectors;
use ethlink_cli::decode::{decode_frame, decode_frame_without_fcs};
use ethlink_cli::encode::{encode_frame, refresh_fcs};
use ethlink_cli::hexio::{parse_hex, to_hex};

/// Flips every bit of the first 96 bytes of every vector (fixing the FCS) and of the whole of
/// short ones; also truncates and extends each vector.
#[test]
fn bit_flips_round_trip_or_are_rejected() {
    let file = committed_vectors();
    let mut accepted = 0usize;
    let mut failures = Vec::new();
    for v in &file.vectors {
        let bytes = parse_hex(&v.hex).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let content = bytes.len().saturating_sub(4).min(96);
        let mut candidates = Vec::new();
        for bit in 0..content * 8 {
            let mut m = bytes.clone();
            if let Some(b) = m.get_mut(bit / 8) {
                *b ^= 1 << (bit % 8);
            }
            refresh_fcs(&mut m);
            candidates.push(m);
        }
        for cut in [1usize, 4, 5, 8] {
            let mut m = bytes.clone();
            m.truncate(bytes.len().saturating_sub(cut));
            candidates.push(m.clone());
            refresh_fcs(&mut m);
            candidates.push(m);
        }
        for m in candidates {
            let d = decode_frame(&m, file.mfs);
            if d.error.is_some() {
                continue;
            }
            accepted += 1;
            match encode_frame(&d.json) {
                Ok(again) if again == m => {}
                Ok(again) => failures.push(format!(
                    "{}: {} re-encodes as {}",
                    v.name,
                    to_hex(&m),
                    to_hex(&again)
                )),
                Err(e) => failures.push(format!("{}: {} does not encode: {e}", v.name, to_hex(&m))),
            }
            if failures.len() > 20 {
                break;
            }
        }
    }
    assert!(
        accepted > 1000,
        "too few mutants were well-formed: {accepted}"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Arbitrary bytes of every length up to 128, from a fixed generator, never panic.
#[test]
fn arbitrary_bytes_never_panic() {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    for len in 0..=128usize {
        for _ in 0..64 {
            let mut frame: Vec<u8> = (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state.to_le_bytes().first().copied().unwrap_or(0)
                })
                .collect();
            // Make most of them EthLink DATA frames with a good FCS so the deeper parsers run.
            if let Some(head) = frame.get_mut(12..15) {
                head.copy_from_slice(&[0x88, 0xB5, 0x10]);
            }
            let _ = decode_frame_without_fcs(&frame, 9216);
            refresh_fcs(&mut frame);
            let _ = decode_frame(&frame, 9216);
        }
    }
}

/// Damaged captures are reported as errors, never a panic: every byte of the first blocks of
/// vectors.pcapng set to a few values, and every truncation of them.
#[test]
fn damaged_captures_never_panic() {
    let path = common::vectors_dir().join("vectors.pcapng");
    let file = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let head = file.get(..400).unwrap_or(&file);
    for at in 0..head.len() {
        for value in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
            let mut m = head.to_vec();
            if let Some(b) = m.get_mut(at) {
                *b = value;
            }
            let _ = ethlink_cli::capture::read_capture(&m);
            let _ = ethlink_cli::capture::read_capture_with(&m, false);
        }
        let _ = ethlink_cli::capture::read_capture(head.get(..at).unwrap_or_default());
        let _ = ethlink_cli::capture::read_capture_with(head.get(..at).unwrap_or_default(), false);
    }
}
