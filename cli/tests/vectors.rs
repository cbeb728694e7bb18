//! What the `ethlink` command does with the golden vectors: `decode` prints every well-formed
//! vector as its recorded JSON (which `encode` turns back into its bytes) and rejects every
//! malformed one with its recorded error, from hex and from the capture. The vectors themselves
//! are checked in conformance/tests/vectors.rs.

mod common;

use common::{committed_vectors, ethlink, status, stderr, stdout, vectors_dir};

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
