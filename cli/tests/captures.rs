//! `decode --pcap` on captures as other tools write them (tshark, editcap), on captures cut short
//! or followed by garbage, and frame by frame: every complete frame is decoded and printed, then
//! what is wrong with the rest of the file.
//!
//! The tshark cases need `tshark` and `editcap` on the PATH (the project's test script installs
//! them); set ETHLINK_SKIP_TSHARK=1 to skip those on a machine without them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{ethlink, status, stderr, stdout, vectors_dir};

fn temp_dir(name: &str) -> PathBuf {
    let dir =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-captures-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

fn vectors_pcapng() -> Vec<u8> {
    let path = vectors_dir().join("vectors.pcapng");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.to_string_lossy().into_owned()
}

/// `decode --pcap FILE --jsonl`: (status, one parsed object per line, stderr).
fn jsonl(file: &str) -> (i32, Vec<serde_json::Value>, String) {
    let out = ethlink(&["decode", "--pcap", file, "--jsonl"], "");
    let lines = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}")))
        .collect();
    (status(&out), lines, stderr(&out))
}

/// The offsets of the blocks of a little-endian pcapng file.
fn block_offsets(file: &[u8]) -> Vec<usize> {
    let mut at = 0;
    let mut v = Vec::new();
    while let Some(len) = file.get(at + 4..at + 8) {
        v.push(at);
        let n = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as usize;
        assert!(n >= 12, "a block of {n} bytes at {at}");
        at += n;
    }
    v
}

fn tools_missing() -> bool {
    if std::env::var("ETHLINK_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        eprintln!("ETHLINK_SKIP_TSHARK=1: skipping");
        return true;
    }
    false
}

fn tool(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {program} ({e}). Install it (Debian: apt-get install tshark), or set \
             ETHLINK_SKIP_TSHARK=1 to skip this check"
            )
        });
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn jsonl_gives_one_object_per_frame_and_json_one_array() {
    let dir = temp_dir("jsonl");
    let file = put(&dir, "v.pcapng", &vectors_pcapng());
    let (code, lines, _) = jsonl(&file);
    assert_eq!(code, 1, "the vectors include malformed frames");
    assert!(lines.len() > 100);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["frame"], i + 1);
    }
    let out = ethlink(&["decode", "--pcap", &file, "--json"], "");
    let array: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("one JSON array");
    assert_eq!(array.as_array().map(Vec::len), Some(lines.len()));
    assert_eq!(array.as_array().and_then(|a| a.first()), lines.first());
    // An empty capture is an empty array.
    let empty = vectors_pcapng();
    let offsets = block_offsets(&empty);
    let head = put(&dir, "head.pcapng", &empty[..offsets[2]]);
    let out = ethlink(&["decode", "--pcap", &head, "--json"], "");
    assert_eq!((status(&out), stdout(&out).as_str()), (0, "[]\n"));
}

#[test]
fn a_capture_cut_short_decodes_every_complete_frame_then_says_where() {
    let dir = temp_dir("cut");
    let file = vectors_pcapng();
    let offsets = block_offsets(&file);
    // Blocks 0 and 1 are the section header and the interface: frame k is block k + 1. Cut
    // the tenth frame in its middle.
    let tenth = offsets[11];
    let cut = put(&dir, "cut.pcapng", &file[..tenth + 20]);
    let (code, lines, err) = jsonl(&cut);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 9, "{err}");
    assert!(
        err.contains(&format!("truncated at byte {tenth}: ")),
        "{err}"
    );
    assert!(
        err.contains("the 9 complete frames before it were decoded"),
        "{err}"
    );
    // Text output too, and the frames before the cut are all there.
    let out = ethlink(&["decode", "--pcap", &cut], "");
    assert_eq!(status(&out), 1);
    assert_eq!(stdout(&out).matches("\n\n").count(), 8);

    // Garbage after the last block: every frame, then the offset of the garbage.
    let mut tail = file.clone();
    tail.extend_from_slice(&[0xFF; 100]);
    let garbage = put(&dir, "garbage.pcapng", &tail);
    let (code, lines, err) = jsonl(&garbage);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), offsets.len() - 2);
    assert!(
        err.contains(&format!("truncated at byte {}: ", file.len())),
        "{err}"
    );

    // Not a capture at all is still a usage error.
    let junk = put(&dir, "junk", b"hello, world");
    let out = ethlink(&["decode", "--pcap", &junk], "");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("not a pcap or pcapng capture"),
        "{}",
        stderr(&out)
    );
}

/// A classic pcap (little-endian, microseconds, Ethernet) of `records`: (captured bytes,
/// original length).
fn classic_pcap(records: &[(&[u8], u32)]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0xA1B2_C3D4u32.to_le_bytes());
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    v.extend_from_slice(&[0; 8]);
    v.extend_from_slice(&65535u32.to_le_bytes());
    v.extend_from_slice(&1u32.to_le_bytes());
    for (i, (data, orig)) in records.iter().enumerate() {
        v.extend_from_slice(&(i as u32).to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&(data.len() as u32).to_le_bytes());
        v.extend_from_slice(&orig.to_le_bytes());
        v.extend_from_slice(data);
    }
    v
}

#[test]
fn a_snap_length_and_zero_length_records_are_errors_of_their_frames_only() {
    let dir = temp_dir("snap");
    let frame = [0x11u8; 64];
    let file = classic_pcap(&[(&frame[..40], 64), (&frame[..0], 0), (&frame[..40], 64)]);
    let path = put(&dir, "snap.pcap", &file);
    let (code, lines, err) = jsonl(&path);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 3, "{err}");
    assert!(
        err.contains("frame 1: the capture kept 40 of the frame's 64 bytes"),
        "{err}"
    );
    assert!(err.contains("frame 3: the capture kept 40"), "{err}");
    // Many zero-length records: one error each, and the reading goes on to the end.
    let empty: Vec<(&[u8], u32)> = vec![(&frame[..0], 0); 5000];
    let path = put(&dir, "zero.pcap", &classic_pcap(&empty));
    let (code, lines, err) = jsonl(&path);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), 5000);
    assert_eq!(err.lines().count(), 5000);
}

/// One pcapng option: code, value, padding to 4 bytes.
fn option(code: u16, value: &[u8]) -> Vec<u8> {
    let mut v = code.to_le_bytes().to_vec();
    v.extend_from_slice(&(value.len() as u16).to_le_bytes());
    v.extend_from_slice(value);
    while !v.len().is_multiple_of(4) {
        v.push(0);
    }
    v
}

fn block(kind: u32, body: &[u8]) -> Vec<u8> {
    let len = (12 + body.len()) as u32;
    let mut v = kind.to_le_bytes().to_vec();
    v.extend_from_slice(&len.to_le_bytes());
    v.extend_from_slice(body);
    v.extend_from_slice(&len.to_le_bytes());
    v
}

#[test]
fn an_interface_with_a_time_zone_option_is_read() {
    let file = vectors_pcapng();
    let offsets = block_offsets(&file);
    let mut out = file[..offsets[1]].to_vec();
    // An interface with if_tzone (code 10, 4 bytes), if_fcslen = 4 and the end of options.
    let mut idb = 1u16.to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&0u32.to_le_bytes());
    idb.extend_from_slice(&option(10, &[0, 0, 0, 0]));
    idb.extend_from_slice(&option(13, &[4]));
    idb.extend_from_slice(&option(0, &[]));
    out.extend_from_slice(&block(1, &idb));
    out.extend_from_slice(&file[offsets[2]..]);
    let dir = temp_dir("tzone");
    let path = put(&dir, "tzone.pcapng", &out);
    let (_, lines, _) = jsonl(&path);
    let (_, original, _) = jsonl(&put(&dir, "v.pcapng", &file));
    assert_eq!(lines, original);
}

#[test]
fn a_section_of_endless_interfaces_is_taken_for_garbage() {
    // A section header, 65,537 interface descriptions and a frame on the first: a section
    // describing that many interfaces is not a capture, and keeping them all would hold memory
    // in proportion to the file.
    let file = vectors_pcapng();
    let offsets = block_offsets(&file);
    let mut idb = 1u16.to_le_bytes().to_vec();
    idb.extend_from_slice(&[0, 0]);
    idb.extend_from_slice(&0u32.to_le_bytes());
    let idb = block(1, &idb);
    let mut out = file[..offsets[1]].to_vec();
    let at = out.len() + 65_536 * idb.len();
    for _ in 0..65_537 {
        out.extend_from_slice(&idb);
    }
    out.extend_from_slice(&file[offsets[2]..offsets[3]]);
    let dir = temp_dir("interfaces");
    let (code, lines, err) = jsonl(&put(&dir, "many.pcapng", &out));
    assert_eq!(code, 1, "{err}");
    assert!(lines.is_empty());
    assert!(
        err.contains(&format!(
            "truncated at byte {at}: a section that describes more than 65536 interfaces, \
             taken for garbage"
        )),
        "{err}"
    );
    // As many as that is still a capture.
    let mut out = file[..offsets[1]].to_vec();
    for _ in 0..65_536 {
        out.extend_from_slice(&idb);
    }
    out.extend_from_slice(&file[offsets[2]..offsets[3]]);
    let (code, lines, err) = jsonl(&put(&dir, "enough.pcapng", &out));
    assert_eq!((code, lines.len()), (0, 1), "{err}");
}

#[test]
fn captures_written_by_tshark_and_editcap_decode_like_ours() {
    if tools_missing() {
        return;
    }
    let dir = temp_dir("tshark");
    let ours = put(&dir, "ours.pcapng", &vectors_pcapng());
    let (_, expected, _) = jsonl(&ours);
    for (name, args) in [
        ("tshark.pcap", vec!["-F", "pcap"]),
        ("tshark.pcapng", vec!["-F", "pcapng"]),
    ] {
        let path = dir.join(name).to_string_lossy().into_owned();
        let mut a = vec!["-r", ours.as_str(), "-w", path.as_str()];
        a.extend(args);
        tool("tshark", &a);
        let (code, lines, err) = jsonl(&path);
        assert_eq!(code, 1, "{name}: {err}");
        assert_eq!(lines.len(), expected.len(), "{name}: {err}");
        for (a, b) in lines.iter().zip(&expected) {
            assert_eq!(a["hex"], b["hex"], "{name}");
            assert_eq!(a["error"], b["error"], "{name}");
        }
    }
    // A snap length of 40 bytes: every frame longer is reported, none is dropped.
    let snap = dir.join("snap.pcap").to_string_lossy().into_owned();
    tool("editcap", &["-F", "pcap", "-s", "40", &ours, &snap]);
    let (code, lines, err) = jsonl(&snap);
    assert_eq!(code, 1);
    assert_eq!(lines.len(), expected.len());
    assert!(err.contains("the capture kept 40 of the frame's"), "{err}");
}
