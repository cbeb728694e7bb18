//! Frames without their FCS: `decode --no-fcs`, captures with if_fcslen=0 (or without if_fcslen
//! and --no-fcs) and `encode` of the JSON they decode to.

mod common;

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Duration;

use common::{committed_vectors, ethlink, status, stderr, stdout};
use ethlink_cli::decode::{decode_frame, decode_frame_without_fcs};
use ethlink_cli::encode::encode_frame;
use ethlink_cli::vectors::VectorJson;
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use serde_json::Value;

fn vector(name: &str) -> VectorJson {
    committed_vectors()
        .vectors
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

fn bytes_of(v: &VectorJson) -> Vec<u8> {
    hex::decode(&v.hex).unwrap_or_else(|e| panic!("{}: {e}", v.name))
}

/// The vector's bytes without the last four (its FCS).
fn stripped(name: &str) -> Vec<u8> {
    let bytes = bytes_of(&vector(name));
    bytes
        .get(..bytes.len().saturating_sub(4))
        .unwrap_or_default()
        .to_vec()
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-nofcs-{name}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

fn json_of(out: &std::process::Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(out), stderr(out)))
}

/// `value` without the keys that tell a frame with FCS from one without.
fn without_fcs_keys(mut value: Value) -> Value {
    if let Some(o) = value.as_object_mut() {
        o.remove("fcs");
        o.remove("fcs_present");
    }
    value
}

const SAMPLES: [&str; 6] = [
    "store_4b_global_min_frame",
    "packed_mixed_requests",
    "tagged_init",
    "cf_vc0_vc2",
    "data_nonzero_reserved_bits",
    "max_frame_9216_tagged",
];

#[test]
fn stripped_vector_decodes_to_the_same_fields() {
    for name in SAMPLES {
        let full = ethlink(&["decode", "--json", "--hex", &vector(name).hex], "");
        assert_eq!(status(&full), 0, "{name}: {}", stderr(&full));
        let full = json_of(&full);
        let hex = hex::encode(stripped(name));
        let out = ethlink(&["decode", "--no-fcs", "--json", "--hex", &hex], "");
        assert_eq!(status(&out), 0, "{name}: {}", stderr(&out));
        let json = json_of(&out);
        assert_eq!(json["fcs"], Value::Null, "{name}: {json}");
        assert!(
            json.as_object().is_some_and(|o| o.contains_key("fcs")),
            "{name}: {json}"
        );
        assert_eq!(json["fcs_present"], Value::Bool(false), "{name}: {json}");
        // `length` counts the FCS in both.
        assert_eq!(json["length"], full["length"], "{name}");
        assert_eq!(without_fcs_keys(json), without_fcs_keys(full), "{name}");
    }
}

#[test]
fn every_well_formed_vector_decodes_and_encodes_without_fcs() {
    let file = committed_vectors();
    let mut checked = 0;
    for v in file.vectors.iter().filter(|v| v.well_formed) {
        let bytes = bytes_of(v);
        let short = bytes.get(..bytes.len() - 4).unwrap_or_default();
        let with = decode_frame(&bytes, file.mfs);
        let without = decode_frame_without_fcs(short, file.mfs);
        assert_eq!(without.error, None, "{}", v.name);
        assert_eq!(without.json.fcs, Some(None), "{}", v.name);
        assert_eq!(without.json.fcs_present, Some(false), "{}", v.name);
        let mut expected = with.json.clone();
        expected.fcs = Some(None);
        expected.fcs_present = Some(false);
        assert_eq!(without.json, expected, "{}", v.name);
        assert_eq!(
            encode_frame(&without.json).as_deref(),
            Ok(short),
            "{}",
            v.name
        );
        checked += 1;
    }
    assert!(checked > 50, "only {checked} well-formed vectors");
}

#[test]
fn malformed_vectors_fail_the_same_without_fcs() {
    let file = committed_vectors();
    let mut checked = 0;
    for v in file.vectors.iter().filter(|v| !v.well_formed) {
        let Some(want) = &v.expected_error else {
            panic!("{}: malformed without an expected error", v.name);
        };
        if want.field == "eth.fcs" {
            continue;
        }
        let bytes = bytes_of(v);
        let short = bytes
            .get(..bytes.len().saturating_sub(4))
            .unwrap_or_default();
        let got = decode_frame_without_fcs(short, file.mfs).error;
        let got = got.unwrap_or_else(|| panic!("{}: accepted without FCS", v.name));
        assert_eq!(got.error.spec, want.spec, "{}", v.name);
        assert_eq!(got.error.field.name(), want.field, "{}", v.name);
        assert_eq!(got.error.offset, want.offset, "{}", v.name);
        assert_eq!(got.transaction, want.transaction, "{}", v.name);
        checked += 1;
    }
    assert!(checked > 20, "only {checked} malformed vectors");
}

#[test]
fn text_says_the_fcs_was_not_checked() {
    let hex = hex::encode(stripped("store_4b_global_min_frame"));
    let out = ethlink(&["decode", "--no-fcs"], &hex);
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "frame 1: 64 bytes, FCS not present (60 bytes given without it; FCS not checked)\n"
        ),
        "{text}"
    );
    assert!(text.contains("STORE tag 1"), "{text}");
    assert!(!text.contains("(good)"), "{text}");

    // With its FCS the frame still says it was checked, and the JSON has no fcs_present.
    let full = vector("store_4b_global_min_frame").hex;
    let out = ethlink(&["decode", "--hex", &full], "");
    assert!(stdout(&out).contains(", FCS "), "{}", stdout(&out));
    assert!(stdout(&out).contains("(good)"), "{}", stdout(&out));
    let out = ethlink(&["decode", "--json", "--hex", &full], "");
    assert!(!stdout(&out).contains("fcs_present"), "{}", stdout(&out));
}

#[test]
fn runt_without_fcs_is_rejected() {
    let runt = stripped("runt_63b");
    assert_eq!(runt.len(), 59);
    let out = ethlink(&["decode", "--no-fcs", "--hex", &hex::encode(&runt)], "");
    assert_eq!(status(&out), 1, "{}", stderr(&out));
    assert_eq!(
        stderr(&out),
        "error: frame 1: frame.length truncated at offset 63 (WIRE-2.4-2): discard as damaged, \
         count FCS error, NACK\n"
    );
    let out = ethlink(
        &["decode", "--no-fcs", "--json", "--hex", &hex::encode(&runt)],
        "",
    );
    assert_eq!(status(&out), 1);
    let json = json_of(&out);
    assert_eq!(json["error"]["spec"], "WIRE-2.4-2");
    assert_eq!(json["length"], 63);
    assert_eq!(json["fcs_present"], false);

    // 60 bytes without FCS is the smallest frame: padding checks still apply.
    let min = stripped("ack");
    assert_eq!(min.len(), 60);
    let out = ethlink(&["decode", "--no-fcs", "--hex", &hex::encode(&min)], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));

    // Too long for the MFS once the FCS is counted: 9216 - 4 + 1 bytes given.
    let mut long = stripped("max_frame_9216_untagged");
    long.push(0);
    let out = ethlink(&["decode", "--no-fcs", "--hex", &hex::encode(&long)], "");
    assert_eq!(status(&out), 1);
    assert!(stderr(&out).contains("(WIRE-2.4-2)"), "{}", stderr(&out));

    // A frame that still has its FCS does not pass as one without: the FCS reads as padding.
    let full = vector("store_4b_global_min_frame").hex;
    let out = ethlink(&["decode", "--no-fcs", "--hex", &full], "");
    assert_eq!(status(&out), 1);
    assert!(stderr(&out).contains("WIRE-2.4-3"), "{}", stderr(&out));

    // Garbage of every short length is rejected, never a panic.
    for len in 0..64 {
        let hex = "ab".repeat(len.max(1));
        let out = ethlink(&["decode", "--no-fcs", "--hex", &hex], "");
        assert_eq!(status(&out), 1, "{len}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"), "{len}");
    }
}

#[test]
fn encode_round_trip_without_fcs() {
    for name in SAMPLES {
        let hex = hex::encode(stripped(name));
        let out = ethlink(&["decode", "--no-fcs", "--json", "--hex", &hex], "");
        assert_eq!(status(&out), 0, "{name}: {}", stderr(&out));
        let back = ethlink(&["encode"], &stdout(&out));
        assert_eq!(status(&back), 0, "{name}: {}", stderr(&back));
        assert_eq!(stdout(&back), format!("{hex}\n"), "{name}");
    }

    // `"fcs": null` alone also asks for no FCS; `"fcs_present": true` for one.
    let json = json_of(&ethlink(
        &[
            "decode",
            "--no-fcs",
            "--json",
            "--hex",
            &hex::encode(stripped("ack")),
        ],
        "",
    ));
    let mut j = json.clone();
    if let Some(o) = j.as_object_mut() {
        o.remove("fcs_present");
    }
    let out = ethlink(&["encode"], &j.to_string());
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), hex::encode(stripped("ack")));
    let mut j = json.clone();
    if let Some(o) = j.as_object_mut() {
        o.remove("fcs");
        o.insert("fcs_present".to_owned(), Value::Bool(true));
    }
    let out = ethlink(&["encode"], &j.to_string());
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), vector("ack").hex);

    // Contradictions are refused, naming the key.
    let mut j = json.clone();
    j["fcs"] = Value::String("00112233".to_owned());
    let out = ethlink(&["encode"], &j.to_string());
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("fcs: the JSON gives FCS bytes"),
        "{}",
        stderr(&out)
    );
    let mut j = json;
    j["fcs_present"] = Value::Bool(true);
    let out = ethlink(&["encode"], &j.to_string());
    assert_eq!(status(&out), 2);
    assert!(stderr(&out).contains("fcs: null says"), "{}", stderr(&out));

    // An array mixes frames with and without FCS.
    let with = json_of(&ethlink(
        &["decode", "--json", "--hex", &vector("nack").hex],
        "",
    ));
    let without = json_of(&ethlink(
        &[
            "decode",
            "--no-fcs",
            "--json",
            "--hex",
            &hex::encode(stripped("ack")),
        ],
        "",
    ));
    let out = ethlink(&["encode"], &Value::Array(vec![with, without]).to_string());
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\n{}\n", vector("nack").hex, hex::encode(stripped("ack")))
    );
}

fn pcapng(options: Vec<InterfaceDescriptionOption<'static>>, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    let idb = InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options,
    };
    w.write_pcapng_block(idb).unwrap_or_else(|e| panic!("{e}"));
    for frame in frames {
        let epb = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::ZERO,
            original_len: u32::try_from(frame.len()).unwrap_or(0),
            data: Cow::Borrowed(frame),
            options: vec![],
        };
        w.write_pcapng_block(epb).unwrap_or_else(|e| panic!("{e}"));
    }
    w.into_inner()
}

const CAPTURED: [&str; 3] = ["store_4b_global_min_frame", "ack", "packed_mixed_responses"];

/// The decode of each vector of `CAPTURED` with its FCS, as a capture numbers them.
fn expected_capture_json() -> Vec<Value> {
    CAPTURED
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let out = ethlink(&["decode", "--json", "--hex", &vector(name).hex], "");
            let mut json = without_fcs_keys(json_of(&out));
            json["frame"] = Value::from(i + 1);
            json
        })
        .collect()
}

fn check_capture_without_fcs(out: &std::process::Output) {
    assert_eq!(status(out), 0, "{}", stderr(out));
    let json = json_of(out);
    let frames = json.as_array().cloned().unwrap_or_default();
    assert_eq!(frames.len(), CAPTURED.len(), "{json}");
    for f in &frames {
        assert_eq!(f["fcs_present"], false, "{f}");
        assert_eq!(f["fcs"], Value::Null, "{f}");
    }
    let frames: Vec<Value> = frames.into_iter().map(without_fcs_keys).collect();
    assert_eq!(frames, expected_capture_json());
}

#[test]
fn pcapng_with_fcslen_0_decodes() {
    let frames: Vec<Vec<u8>> = CAPTURED.iter().map(|n| stripped(n)).collect();
    let file = pcapng(vec![InterfaceDescriptionOption::IfFcsLen(0)], &frames);
    let path = temp_file("fcslen0.pcapng", &file);
    let path = path.to_string_lossy();
    // The interface says so: no flag needed, and the flag changes nothing.
    check_capture_without_fcs(&ethlink(&["decode", "--json", "--pcap", &path], ""));
    check_capture_without_fcs(&ethlink(
        &["decode", "--no-fcs", "--json", "--pcap", &path],
        "",
    ));
    let out = ethlink(&["decode", "--pcap", &path], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).matches("FCS not present").count(),
        CAPTURED.len(),
        "{}",
        stdout(&out)
    );

    // A runt on such an interface is a malformed frame, not a capture error.
    let mut runts = frames.clone();
    runts.push(stripped("runt_63b"));
    let file = pcapng(vec![InterfaceDescriptionOption::IfFcsLen(0)], &runts);
    let path = temp_file("fcslen0-runt.pcapng", &file);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 1);
    assert_eq!(
        stderr(&out),
        "error: frame 4: frame.length truncated at offset 63 (WIRE-2.4-2): discard as damaged, \
         count FCS error, NACK\n"
    );
}

#[test]
fn undeclared_fcs_follows_the_flag() {
    let frames: Vec<Vec<u8>> = CAPTURED.iter().map(|n| stripped(n)).collect();
    // pcapng without if_fcslen.
    let file = pcapng(vec![], &frames);
    let path = temp_file("nofcslen.pcapng", &file);
    let path = path.to_string_lossy();
    check_capture_without_fcs(&ethlink(
        &["decode", "--no-fcs", "--json", "--pcap", &path],
        "",
    ));
    // Without the flag the frames are taken to end with an FCS, which they do not.
    let out = ethlink(&["decode", "--pcap", &path], "");
    assert_eq!(status(&out), 1);
    assert!(stderr(&out).contains("WIRE-2.5-3"), "{}", stderr(&out));

    // Classic pcap.
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap_or_else(|e| panic!("{e}"));
    for f in &frames {
        let len = u32::try_from(f.len()).unwrap_or(0);
        w.write_packet(&PcapPacket::new(Duration::ZERO, len, f))
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let path = temp_file("nofcs.pcap", &w.into_writer());
    let path = path.to_string_lossy();
    check_capture_without_fcs(&ethlink(
        &["decode", "--no-fcs", "--json", "--pcap", &path],
        "",
    ));
    let out = ethlink(&["decode", "--pcap", &path], "");
    assert_eq!(status(&out), 1);
    assert!(stderr(&out).contains("WIRE-2.5-3"), "{}", stderr(&out));
}

#[test]
fn declared_fcs_wins_over_the_flag() {
    let frames: Vec<Vec<u8>> = CAPTURED.iter().map(|n| bytes_of(&vector(n))).collect();
    let file = pcapng(vec![InterfaceDescriptionOption::IfFcsLen(4)], &frames);
    let path = temp_file("fcslen4.pcapng", &file);
    for args in [
        ["decode", "--json", "--pcap"].as_slice(),
        ["decode", "--no-fcs", "--json", "--pcap"].as_slice(),
    ] {
        let mut args = args.to_vec();
        let p = path.to_string_lossy();
        args.push(&p);
        let out = ethlink(&args, "");
        assert_eq!(status(&out), 0, "{args:?}: {}", stderr(&out));
        let json = json_of(&out);
        let frames = json.as_array().cloned().unwrap_or_default();
        assert_eq!(frames.len(), CAPTURED.len());
        for (f, name) in frames.iter().zip(CAPTURED) {
            assert!(f.get("fcs_present").is_none(), "{f}");
            assert_eq!(
                f["fcs"],
                vector(name)
                    .hex
                    .get(vector(name).hex.len() - 8..)
                    .unwrap_or_default()
            );
        }
    }

    // Any other if_fcslen is a capture error for each frame.
    let file = pcapng(vec![InterfaceDescriptionOption::IfFcsLen(2)], &frames);
    let path = temp_file("fcslen2.pcapng", &file);
    let out = ethlink(
        &["decode", "--no-fcs", "--pcap", &path.to_string_lossy()],
        "",
    );
    assert_eq!(status(&out), 1);
    assert!(
        stderr(&out).starts_with("error: frame 1: the capture interface says if_fcslen=2"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_mentions_no_fcs() {
    let out = ethlink(&["decode", "--help"], "");
    assert_eq!(status(&out), 0);
    let text = stdout(&out);
    for needle in ["--no-fcs", "if_fcslen=0", "not checked"] {
        assert!(
            text.contains(needle),
            "decode --help lacks {needle:?}:\n{text}"
        );
    }
    let short = stdout(&ethlink(&["decode", "-h"], ""));
    assert!(short.contains("--no-fcs"), "{short}");
    let encode = stdout(&ethlink(&["encode", "--help"], ""));
    assert!(encode.contains("fcs_present"), "{encode}");
    assert!(encode.contains("--no-fcs"), "{encode}");
}
