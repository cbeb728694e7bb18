//! The golden vectors: every well-formed vector decodes to its recorded JSON and encodes back to
//! its bytes; every malformed vector is rejected with exactly its recorded error; and the
//! generator reproduces the committed files byte for byte.

mod common;

use common::{committed_vectors, ethlink, status, stderr, stdout, vectors_dir};
use ethlink_cli::decode::decode_frame;
use ethlink_cli::encode::encode_frame;
use ethlink_cli::hexio::{parse_hex, to_hex};
use ethlink_cli::vectors::{self, ExpectedError};

const REGENERATE: &str = "cargo run -p ethlink-cli -- vectors --out conformance/vectors";
const REGENERATE_EXAMPLES: &str = "cargo run -p ethlink-cli -- vectors --out conformance/vectors \
     && cp conformance/vectors/examples.md docs/spec/examples.md";

#[test]
fn committed_files_match_the_generator() {
    let generated = vectors::generate().unwrap_or_else(|e| panic!("generator failed: {e}"));
    for (name, bytes) in [
        (vectors::JSON_FILE, &generated.json),
        (vectors::PCAPNG_FILE, &generated.pcapng),
        (vectors::EXAMPLES_FILE, &generated.examples),
    ] {
        let path = vectors_dir().join(name);
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == *bytes,
            "{} differs from what the generator writes ({} vs {} bytes); run `{REGENERATE}` and \
             commit the result",
            path.display(),
            committed.len(),
            bytes.len()
        );
    }
}

/// docs/spec/examples.md is the examples.md the generator writes: the worked examples cannot
/// drift from the vectors.
#[test]
fn committed_examples_match_the_generator() {
    let generated = vectors::generate().unwrap_or_else(|e| panic!("generator failed: {e}"));
    let path = vectors_dir()
        .join("../../docs/spec")
        .join(vectors::EXAMPLES_FILE);
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == generated.examples,
        "{} differs from the examples.md the generator writes; run `{REGENERATE_EXAMPLES}`",
        path.display()
    );
    let text = String::from_utf8(generated.examples).unwrap_or_default();
    // Every frame kind and every transaction type is shown.
    for needle in [
        "(DATA)",
        "(ACK)",
        "(NACK)",
        "(CF)",
        "(CC)",
        "(INIT)",
        "(INIT_ECHO)",
        "LOAD |",
        "STORE |",
        "ATOMIC_FADD |",
        "ATOMIC_SWAP |",
        "ATOMIC_CAS |",
        "FENCE |",
        "RDMA_WRITE |",
        "RDMA_READ |",
        "LOAD_RESP |",
        "STORE_RESP |",
        "ATOMIC_FADD_RESP |",
        "ATOMIC_SWAP_RESP |",
        "ATOMIC_CAS_RESP |",
        "FENCE_RESP |",
        "RDMA_COMPLETION |",
        "RDMA_READ_RESP |",
        "unknown request |",
        "unknown response |",
        "stomped:",
    ] {
        assert!(text.contains(needle), "examples.md shows no {needle}");
    }
}

#[test]
fn generator_writes_exactly_three_identical_files_each_run() {
    let dir = std::env::temp_dir().join(format!("ethlink-vectors-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = vectors::write(&dir).unwrap_or_else(|e| panic!("{e}"));
    let second = vectors::write(&dir).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first, second, "two runs of the generator differ");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    names.sort();
    assert_eq!(names, ["examples.md", "vectors.json", "vectors.pcapng"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vector_file_is_consistent() {
    let file = committed_vectors();
    assert_eq!(file.version, vectors::FORMAT_VERSION);
    let good = file.vectors.iter().filter(|v| v.well_formed).count();
    assert_eq!(good, file.well_formed);
    assert_eq!(file.vectors.len() - good, file.malformed);
    for v in &file.vectors {
        assert!(!v.spec.is_empty(), "{}: lists no requirement", v.name);
        assert!(
            v.spec.iter().all(|s| s.starts_with("WIRE-")),
            "{}: {:?}",
            v.name,
            v.spec
        );
        assert_eq!(
            v.well_formed,
            v.decoded.is_some() && v.expected_error.is_none(),
            "{}: a vector has `decoded` exactly when it is well-formed",
            v.name
        );
        if let Some(e) = &v.expected_error {
            assert!(
                v.spec.contains(&e.spec),
                "{}: expected spec {} not listed",
                v.name,
                e.spec
            );
        }
    }
}

#[test]
fn well_formed_vectors_decode_and_round_trip() {
    let file = committed_vectors();
    let mut failures = Vec::new();
    for v in file.vectors.iter().filter(|v| v.well_formed) {
        let bytes = parse_hex(&v.hex).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let decoded = decode_frame(&bytes, file.mfs);
        if let Some(e) = decoded.error {
            failures.push(format!("{}: rejected: {}", v.name, e.error));
            continue;
        }
        if Some(&decoded.json) != v.decoded.as_ref() {
            failures.push(format!(
                "{}: decodes differently from the recorded JSON",
                v.name
            ));
            continue;
        }
        match encode_frame(&decoded.json) {
            Ok(again) if again == bytes => {}
            Ok(again) => failures.push(format!(
                "{}: encodes to {} instead of {}",
                v.name,
                to_hex(&again),
                v.hex
            )),
            Err(e) => failures.push(format!("{}: does not encode: {e}", v.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn malformed_vectors_are_rejected_as_recorded() {
    let file = committed_vectors();
    let mut failures = Vec::new();
    for v in file.vectors.iter().filter(|v| !v.well_formed) {
        let bytes = parse_hex(&v.hex).unwrap_or_else(|e| panic!("{}: {e}", v.name));
        let Some(want) = &v.expected_error else {
            failures.push(format!("{}: no expected_error", v.name));
            continue;
        };
        let decoded = decode_frame(&bytes, file.mfs);
        let got = decoded.error.map(|e| ExpectedError {
            level: e.level.name().to_owned(),
            transaction: e.transaction,
            field: e.error.field.name().to_owned(),
            offset: e.error.offset,
            spec: e.error.spec.to_owned(),
            action: e.error.action.to_string(),
            counter: e.error.discard().map(|d| d.counter().to_owned()),
        });
        if got.as_ref() != Some(want) {
            failures.push(format!("{}:\n  want {want:?}\n  got  {got:?}", v.name));
        }
        // The FCS of every malformed vector is correct except where the FCS is the error.
        let fcs_ok = ethlink_protocol::fcs::check(&bytes);
        if fcs_ok == (want.field == "eth.fcs") {
            failures.push(format!("{}: FCS good = {fcs_ok}", v.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn cli_decodes_every_vector() {
    let file = committed_vectors();
    for v in &file.vectors {
        let out = ethlink(&["decode", "--json", "--hex", &v.hex], "");
        let json: serde_json::Value = serde_json::from_str(&stdout(&out))
            .unwrap_or_else(|e| panic!("{}: decode --json printed no JSON: {e}", v.name));
        if let Some(decoded) = &v.decoded {
            assert_eq!(status(&out), 0, "{}: {}", v.name, stderr(&out));
            assert!(stderr(&out).is_empty(), "{}: {}", v.name, stderr(&out));
            let want = serde_json::to_value(decoded).unwrap_or_default();
            assert_eq!(
                json, want,
                "{}: decode --json differs from `decoded`",
                v.name
            );
            let enc = ethlink(&["encode"], &stdout(&out));
            assert_eq!(status(&enc), 0, "{}: {}", v.name, stderr(&enc));
            assert_eq!(stdout(&enc).trim(), v.hex, "{}: encode", v.name);
        }
        if let Some(e) = &v.expected_error {
            assert_eq!(status(&out), 1, "{}: decode must exit 1", v.name);
            let err = stderr(&out);
            let lines: Vec<&str> = err.lines().collect();
            assert_eq!(lines.len(), 1, "{}: one stderr line, got {err:?}", v.name);
            let line = lines.first().copied().unwrap_or_default();
            for needle in [
                "error: frame 1: ".to_owned(),
                e.field.clone(),
                format!("at offset {}", e.offset),
                format!("({})", e.spec),
                e.action.clone(),
            ] {
                assert!(
                    line.contains(&needle),
                    "{}: {line:?} lacks {needle:?}",
                    v.name
                );
            }
            let got = json.get("error").cloned().unwrap_or_default();
            assert_eq!(
                got.get("field").and_then(|f| f.as_str()),
                Some(e.field.as_str())
            );
            assert_eq!(
                got.get("offset").and_then(serde_json::Value::as_u64),
                u64::try_from(e.offset).ok()
            );
            // Text output exits the same way.
            let text = ethlink(&["decode", "--hex", &v.hex], "");
            assert_eq!(status(&text), 1, "{}", v.name);
            assert_eq!(stderr(&text), err, "{}", v.name);
        }
    }
}

#[test]
fn transactions_before_an_error_are_shown() {
    let file = committed_vectors();
    let v = file
        .vectors
        .iter()
        .find(|v| v.name == "mixed_error_in_third_txn")
        .unwrap_or_else(|| panic!("vector mixed_error_in_third_txn is missing"));
    let out = ethlink(&["decode", "--json", "--hex", &v.hex], "");
    assert_eq!(status(&out), 1);
    let json: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap_or_default();
    let txns = json
        .get("txns")
        .and_then(|t| t.as_array())
        .cloned()
        .unwrap_or_default();
    let ops: Vec<&str> = txns
        .iter()
        .filter_map(|t| t.get("opcode").and_then(|o| o.as_str()))
        .collect();
    assert_eq!(ops, ["STORE", "LOAD"]);
    let error = json.get("error").cloned().unwrap_or_default();
    assert_eq!(
        error.get("level").and_then(|l| l.as_str()),
        Some("transaction")
    );
    assert_eq!(error.get("transaction").and_then(|t| t.as_u64()), Some(3));
    let text = ethlink(&["decode", "--hex", &v.hex], "");
    let shown = stdout(&text);
    assert!(shown.contains("txn 1 @28  STORE"), "{shown}");
    assert!(shown.contains("txn 2 @52  LOAD"), "{shown}");
    assert!(shown.contains("ERROR"), "{shown}");
    assert!(
        stderr(&text).starts_with("error: frame 1: transaction 3: txn.dlen"),
        "{}",
        stderr(&text)
    );
}

#[test]
fn decode_pcap_matches_the_json_vectors() {
    let file = committed_vectors();
    let pcap = vectors_dir().join("vectors.pcapng");
    let pcap = pcap.to_string_lossy();
    let out = ethlink(&["decode", "--json", "--pcap", &pcap], "");
    assert_eq!(status(&out), 1, "the capture holds malformed frames");
    let frames: Vec<serde_json::Value> = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("decode --pcap --json printed no JSON array: {e}"));
    assert_eq!(frames.len(), file.vectors.len());
    assert_eq!(stderr(&out).lines().count(), file.malformed);
    for (i, (v, got)) in file.vectors.iter().zip(&frames).enumerate() {
        assert_eq!(
            got.get("frame").and_then(|f| f.as_u64()),
            u64::try_from(i + 1).ok(),
            "{}",
            v.name
        );
        if let Some(decoded) = &v.decoded {
            let mut want = serde_json::to_value(decoded).unwrap_or_default();
            if let Some(obj) = want.as_object_mut() {
                obj.insert("frame".to_owned(), serde_json::json!(i + 1));
            }
            let (mut a, mut b) = (got.clone(), want);
            // Key order is not significant; compare values.
            a.sort_all_objects();
            b.sort_all_objects();
            assert_eq!(a, b, "{}", v.name);
        } else {
            assert!(got.get("error").is_some(), "{}: no error object", v.name);
        }
    }
    let text = ethlink(&["decode", "--pcap", &pcap], "");
    assert_eq!(status(&text), 1);
    let headers = stdout(&text)
        .lines()
        .filter(|l| l.starts_with("frame "))
        .count();
    assert_eq!(headers, file.vectors.len());
}
