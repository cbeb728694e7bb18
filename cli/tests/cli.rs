//! The command line: input forms, exit statuses, error messages and help texts.

mod common;

use std::borrow::Cow;
use std::path::PathBuf;
use std::time::Duration;

use common::{committed_vectors, ethlink, status, stderr, stdout};
use pcap_file::DataLink;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};

fn vector_hex(name: &str) -> String {
    committed_vectors()
        .vectors
        .into_iter()
        .find(|v| v.name == name)
        .map(|v| v.hex)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-cli-{name}"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

fn assert_usage_error(args: &[&str], stdin: &str, needle: &str) {
    let out = ethlink(args, stdin);
    assert_eq!(status(&out), 2, "{args:?}: {}", stderr(&out));
    assert!(
        stderr(&out).contains(needle),
        "{args:?}: stderr {:?} lacks {needle:?}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{args:?}");
}

#[test]
fn stdin_hex_decodes() {
    let hex = vector_hex("store_4b_global_min_frame");
    let spaced: String = hex
        .as_bytes()
        .chunks(2)
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    for input in [hex.clone(), format!("{spaced}\n"), format!("0x{hex}")] {
        let out = ethlink(&["decode"], &input);
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        let text = stdout(&out);
        for needle in [
            "frame 1: 64 bytes",
            "dst 02:00:00:00:00:02 src 02:00:00:00:00:01",
            "kind DATA vc 0",
            "seq 1",
            "dst_gpu 2 src_gpu 1",
            "STORE tag 1 space global key 0x00001234 address 0x0000000100001000 dlen 4",
            "data a0a1a2a3",
        ] {
            assert!(text.contains(needle), "{text} lacks {needle:?}");
        }
    }
}

#[test]
fn hex_with_colons_and_prefixes() {
    let hex = vector_hex("ack");
    let colons: Vec<String> = hex
        .as_bytes()
        .chunks(2)
        .map(|p| format!("0x{}", String::from_utf8_lossy(p)))
        .collect();
    let out = ethlink(&["decode", "--hex", &colons.join(":")], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).contains("kind ACK seq 100"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    assert_usage_error(
        &["decode", "--hex", "01zz"],
        "",
        "--hex: invalid hex character 'z'",
    );
    assert_usage_error(
        &["decode", "--hex", "abc"],
        "",
        "odd number of hex digits (3)",
    );
    assert_usage_error(&["decode"], "", "standard input: no hex digits");
    assert_usage_error(
        &["decode"],
        "hello",
        "standard input: invalid hex character 'h'",
    );
    assert_usage_error(
        &["decode", "--pcap", "/nonexistent/ethlink.pcapng"],
        "",
        "cannot read /nonexistent/ethlink.pcapng",
    );
    let junk = temp_file("junk.pcap", b"this is not a capture");
    assert_usage_error(
        &["decode", "--pcap", &junk.to_string_lossy()],
        "",
        "not a pcap or pcapng capture",
    );
    assert_usage_error(
        &["decode", "--mfs", "100", "--hex", "00"],
        "",
        "outside 320..=9216",
    );
    assert_usage_error(
        &["decode", "--mfs", "big", "--hex", "00"],
        "",
        "not a whole number",
    );
    assert_usage_error(
        &["decode", "--hex", "00", "--pcap", "x"],
        "",
        "cannot be used with",
    );
    assert_usage_error(&["frobnicate"], "", "unrecognized subcommand");
    assert_usage_error(&["vectors"], "", "--out <DIR>");
    assert_usage_error(&["efficiency", "--mfs", "10000"], "", "outside 320..=9216");
    assert_usage_error(
        &["encode", "--json", "/nonexistent/frame.json"],
        "",
        "cannot read /nonexistent/frame.json",
    );
}

#[test]
fn oversize_for_a_smaller_mfs() {
    let hex = vector_hex("max_frame_9216_untagged");
    let out = ethlink(&["decode", "--mfs", "4096", "--hex", &hex], "");
    assert_eq!(status(&out), 1);
    assert_eq!(
        stderr(&out),
        "error: frame 1: frame.length out of range at offset 9216 (WIRE-2.4-2): discard as \
         damaged, count FCS error, NACK\n"
    );
}

#[test]
fn bad_fcs_line_is_exact() {
    let out = ethlink(&["decode", "--hex", &vector_hex("bad_fcs_data")], "");
    assert_eq!(status(&out), 1);
    assert_eq!(
        stderr(&out),
        "error: frame 1: eth.fcs FCS mismatch at offset 60 (WIRE-2.5-3): discard as damaged, \
         count FCS error, NACK\n"
    );
}

fn decoded_json(name: &str) -> serde_json::Value {
    let out = ethlink(&["decode", "--json", "--hex", &vector_hex(name)], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}"))
}

fn encode_error(json: &serde_json::Value) -> String {
    let out = ethlink(&["encode"], &json.to_string());
    assert_eq!(status(&out), 2, "encode accepted {json}: {}", stdout(&out));
    stderr(&out)
}

#[test]
fn encode_errors_name_the_key() {
    let good = decoded_json("packed_mixed_requests");

    let out = ethlink(&["encode"], "{\"eth\": ");
    assert_eq!(status(&out), 2);
    assert!(
        stderr(&out).contains("standard input: "),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("EOF"), "{}", stderr(&out));

    let mut j = good.clone();
    j["txns"][0]["tag"] = serde_json::json!("seven");
    let e = encode_error(&j);
    assert!(e.contains("txns[0]"), "{e}");
    assert!(e.contains("invalid type: string \"seven\""), "{e}");

    let mut j = good.clone();
    j["txns"][2]["colour"] = serde_json::json!("red");
    let e = encode_error(&j);
    assert!(
        e.contains("txns[2]") && e.contains("unknown field `colour`"),
        "{e}"
    );

    let mut j = good.clone();
    j["network"]["payload_length"] = serde_json::json!(12);
    let e = encode_error(&j);
    assert!(
        e.contains("network.payload_length: the JSON gives 12"),
        "{e}"
    );

    let mut j = good.clone();
    j["txns"][3]["width"] = serde_json::json!(6);
    let e = encode_error(&j);
    assert!(
        e.contains("txns[3].width: 6: an atomic operand is 4 or 8 bytes"),
        "{e}"
    );

    let mut j = good.clone();
    j["txns"][1]["data"] = serde_json::json!("");
    let e = encode_error(&j);
    assert!(
        e.contains("txns[1]: value of txn.dlen cannot be encoded"),
        "{e}"
    );

    let mut j = good.clone();
    j["link"]["seq"] = serde_json::json!(1 << 20);
    let e = encode_error(&j);
    assert!(
        e.contains("link.seq: 1048576 is out of range 0..=1048575"),
        "{e}"
    );

    let mut j = good.clone();
    j["network"]["dst_gpu"] = serde_json::json!(65535);
    let e = encode_error(&j);
    assert!(
        e.contains("network.dst_gpu: 0xFFFF is the reserved GPU id"),
        "{e}"
    );

    let mut j = good.clone();
    j["txns"][0]["status"] = serde_json::json!("OK");
    let e = encode_error(&j);
    assert!(e.contains("unknown field `status`"), "{e}");

    let mut j = good.clone();
    if let Some(o) = j.as_object_mut() {
        o.remove("eth");
    }
    let e = encode_error(&j);
    assert!(e.contains("eth: missing"), "{e}");

    let mut j = good.clone();
    j["reserved"] = serde_json::json!([{"offset": 0, "hex": "ff"}]);
    let e = encode_error(&j);
    assert!(e.contains("eth.dst: the JSON gives"), "{e}");

    let mut j = decoded_json("store_resp_ok");
    j["txns"][0]["status"] = serde_json::json!("FINE");
    let e = encode_error(&j);
    assert!(
        e.contains("txns[0]") && e.contains("unknown status \"FINE\""),
        "{e}"
    );

    let mut j = decoded_json("ack");
    j["link"]["vc"] = serde_json::json!(1);
    let e = encode_error(&j);
    assert!(
        e.contains("link.vc: not allowed in ACK frames: only DATA frames carry it"),
        "{e}"
    );

    // A rejected frame's JSON cannot be encoded.
    let out = ethlink(
        &["decode", "--json", "--hex", &vector_hex("store_dlen_0")],
        "",
    );
    let e = ethlink(&["encode"], &stdout(&out));
    assert_eq!(status(&e), 2);
    assert!(
        stderr(&e).contains("only well-formed frames can be encoded"),
        "{}",
        stderr(&e)
    );
}

#[test]
fn encode_edits_and_arrays() {
    // Editing a value re-encodes a different, valid frame.
    let mut j = decoded_json("store_4b_global_min_frame");
    j["txns"][0]["data"] = serde_json::json!("01 02 03 04 05 06 07 08");
    if let Some(t) = j["txns"][0].as_object_mut() {
        t.remove("dlen");
    }
    if let Some(o) = j.as_object_mut() {
        o.remove("length");
        o.remove("network");
    }
    j["network"] = serde_json::json!({"dst_gpu": 2, "src_gpu": 1, "path": {"stack": 0, "port": 1}});
    let out = ethlink(&["encode"], &j.to_string());
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let hex = stdout(&out).trim().to_owned();
    let back = ethlink(&["decode", "--hex", &hex], "");
    assert_eq!(status(&back), 0, "{}", stderr(&back));
    assert!(stdout(&back).contains("dlen 8"), "{}", stdout(&back));

    // An array gives one line per frame; --json FILE reads a file.
    let array = serde_json::json!([decoded_json("ack"), decoded_json("nack")]);
    let path = temp_file("frames.json", array.to_string().as_bytes());
    let out = ethlink(&["encode", "--json", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("{}\n{}\n", vector_hex("ack"), vector_hex("nack"))
    );
}

fn pcapng_with(
    options: Vec<InterfaceDescriptionOption<'static>>,
    frame: &[u8],
    original: u32,
) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).unwrap_or_else(|e| panic!("{e}"));
    let idb = InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options,
    };
    w.write_pcapng_block(idb).unwrap_or_else(|e| panic!("{e}"));
    let epb = EnhancedPacketBlock {
        interface_id: 0,
        timestamp: Duration::ZERO,
        original_len: original,
        data: Cow::Borrowed(frame),
        options: vec![],
    };
    w.write_pcapng_block(epb).unwrap_or_else(|e| panic!("{e}"));
    w.into_inner()
}

#[test]
fn captures_say_whether_frames_keep_their_fcs() {
    let frame = hex::decode(vector_hex("ack")).unwrap_or_default();
    let no_fcs = frame.get(..frame.len() - 4).unwrap_or_default();
    let len = u32::try_from(no_fcs.len()).unwrap_or(0);

    let file = pcapng_with(vec![InterfaceDescriptionOption::IfFcsLen(0)], no_fcs, len);
    let path = temp_file("nofcs.pcapng", &file);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("FCS not present"), "{}", stdout(&out));

    let file = pcapng_with(vec![InterfaceDescriptionOption::IfFcsLen(3)], no_fcs, len);
    let path = temp_file("fcs3.pcapng", &file);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 1);
    assert!(
        stderr(&out).starts_with("error: frame 1: the capture interface says if_fcslen=3"),
        "{}",
        stderr(&out)
    );
    let out = ethlink(&["decode", "--json", "--pcap", &path.to_string_lossy()], "");
    assert!(
        stdout(&out).contains("\"capture_error\""),
        "{}",
        stdout(&out)
    );

    let cut = pcapng_with(vec![], no_fcs, len + 4);
    let path = temp_file("snap.pcapng", &cut);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 1);
    assert!(stderr(&out).contains("snap length"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("its FCS are missing"),
        "{}",
        stderr(&out)
    );
    let cut = pcapng_with(
        vec![InterfaceDescriptionOption::IfFcsLen(0)],
        no_fcs.get(..50).unwrap_or_default(),
        len,
    );
    let path = temp_file("snap0.pcapng", &cut);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 1);
    assert!(
        stderr(&out).contains(
            "kept 50 of the frame's 60 bytes (snap length): the end of the frame is missing"
        ),
        "{}",
        stderr(&out)
    );

    let good = pcapng_with(
        vec![InterfaceDescriptionOption::IfFcsLen(4)],
        &frame,
        len + 4,
    );
    let path = temp_file("good.pcapng", &good);
    let out = ethlink(&["decode", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
}

#[test]
fn legacy_pcap_is_read() {
    let frame = hex::decode(vector_hex("tagged_store_vc3")).unwrap_or_default();
    let header = PcapHeader {
        datalink: DataLink::ETHERNET,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).unwrap_or_else(|e| panic!("{e}"));
    let len = u32::try_from(frame.len()).unwrap_or(0);
    w.write_packet(&PcapPacket::new(Duration::ZERO, len, &frame))
        .unwrap_or_else(|e| panic!("{e}"));
    let path = temp_file("legacy.pcap", &w.into_writer());
    let out = ethlink(&["decode", "--json", "--pcap", &path.to_string_lossy()], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_default();
    assert_eq!(json[0]["eth"]["vlan"]["pcp"], 3);
    assert_eq!(json[0]["link"]["vc"], 3);
}

#[test]
fn efficiency_table_and_json() {
    let out = ethlink(&["efficiency"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("RoCEv2"), "{text}");
    assert_eq!(
        text.lines().filter(|l| l.contains(" | ")).count(),
        2 + 6,
        "{text}"
    );
    let out = ethlink(&["efficiency", "--json", "--mfs", "1500"], "");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_default();
    assert_eq!(json["mfs"], 1500);
    let rows = json["rows"].as_array().cloned().unwrap_or_default();
    let sizes: Vec<u64> = rows.iter().filter_map(|r| r["size"].as_u64()).collect();
    assert_eq!(sizes, [4, 8, 64, 128, 256, 4096]);
    // At MFS 1500 a 4096-byte write needs several segments.
    assert!(rows[5]["ethlink_single"]["frames"].as_u64() > Some(1));
    for r in &rows {
        for col in [
            "ethlink_single",
            "ethlink_packed",
            "rocev2_write",
            "ethlink_read",
            "rocev2_read",
        ] {
            let e = r[col]["efficiency"].as_f64().unwrap_or(-1.0);
            assert!(e > 0.0 && e < 1.0, "{col} {e}");
        }
    }
}

#[test]
fn help_documents_every_option() {
    let top = ethlink(&["--help"], "");
    assert_eq!(status(&top), 0);
    for sub in ["decode", "encode", "efficiency", "vectors", "link", "run"] {
        assert!(stdout(&top).contains(sub), "top-level help lacks {sub}");
    }
    let cases: [(&str, &[&str]); 5] = [
        (
            "decode",
            &[
                "--hex <HEX>",
                "--pcap <FILE>",
                "--mfs <N>",
                "--json",
                "--no-fcs",
                "standard input",
                "Exit status",
            ],
        ),
        (
            "encode",
            &["--json <FILE>", "standard input", "docs/cli-json.md"],
        ),
        ("efficiency", &["--json", "--mfs <N>", "RoCEv2", "4096"]),
        (
            "vectors",
            &["--out <DIR>", "vectors.json", "vectors.pcapng"],
        ),
        (
            "run",
            &[
                "--scenario <FILE>",
                "--seed <N>",
                "--json",
                "--out <DIR>",
                "--capture-port <GPU:PORT>",
                "--capture-limit <N>",
                "--no-progress",
                "--print-scenario",
                "docs/scenarios.md",
            ],
        ),
    ];
    for (sub, needles) in cases {
        let out = ethlink(&[sub, "--help"], "");
        assert_eq!(status(&out), 0, "{sub}");
        let text = stdout(&out);
        for n in needles {
            assert!(
                text.contains(n),
                "`ethlink {sub} --help` lacks {n:?}:\n{text}"
            );
        }
    }
}

#[test]
fn documented_examples_encode_to_the_vector() {
    let doc = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/cli-json.md");
    let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let blocks: Vec<&str> = text
        .split("```json\n")
        .skip(1)
        .filter_map(|b| b.split("```").next())
        .collect();
    assert_eq!(
        blocks.len(),
        2,
        "docs/cli-json.md should hold two JSON examples"
    );
    let want = vector_hex("store_4b_global_min_frame");
    for block in blocks {
        let out = ethlink(&["encode"], block);
        assert_eq!(status(&out), 0, "{}", stderr(&out));
        assert_eq!(stdout(&out).trim(), want);
    }
    // The first example is exactly what decode prints.
    let printed: serde_json::Value =
        serde_json::from_str(&stdout(&ethlink(&["decode", "--json", "--hex", &want], "")))
            .unwrap_or_default();
    let documented: serde_json::Value = text
        .split("```json\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .and_then(|b| serde_json::from_str(b).ok())
        .unwrap_or_default();
    assert_eq!(printed, documented);
}
