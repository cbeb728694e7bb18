//! The golden vectors: every well-formed vector decodes to its recorded JSON and encodes back to
//! its bytes; every malformed vector is rejected with exactly its recorded error; and the
//! generator reproduces the committed files byte for byte. (What the `ethlink` command prints for
//! them is checked in cli/tests/vectors.rs.)

use std::path::PathBuf;

use ethlink_conformance::vectors::decode::decode_frame;
use ethlink_conformance::vectors::encode::encode_frame;
use ethlink_conformance::vectors::hexio::{parse_hex, to_hex};
use ethlink_conformance::vectors::{self, ExpectedError, VectorFile};

const REGENERATE: &str = "cargo run -p ethlink-cli -- vectors --out conformance/vectors";
const REGENERATE_EXAMPLES: &str = "cargo run -p ethlink-cli -- vectors --out conformance/vectors \
     && cp conformance/vectors/examples.md docs/spec/examples.md";

/// The committed vectors directory.
fn vectors_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// The committed vectors.json, parsed.
fn committed_vectors() -> VectorFile {
    let path = vectors_dir().join(vectors::JSON_FILE);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; run `{REGENERATE}`", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

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
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance-vectors");
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

/// Every vector has its case `VEC-<name>`, and every one passes against the reference link end.
#[test]
fn every_vector_case_passes_against_the_reference_link_end() {
    use ethlink_conformance::cases;
    use ethlink_conformance::device::Device;
    use ethlink_conformance::reference::RefLinkEnd;
    use ethlink_conformance::runner::run_case;
    use ethlink_conformance::{Role, Verdict};

    let file = committed_vectors();
    assert!(file.vectors.len() <= cases::link::vectors::CAPACITY);
    let all: Vec<_> = cases::all()
        .into_iter()
        .filter(|c| c.id.starts_with("VEC-"))
        .collect();
    let ids: Vec<String> = all.iter().map(|c| c.id.to_owned()).collect();
    let want: Vec<String> = file
        .vectors
        .iter()
        .map(|v| format!("VEC-{}", v.name))
        .collect();
    assert_eq!(
        ids, want,
        "one case per vector, in the order of vectors.json"
    );
    let mut dut = RefLinkEnd::default();
    let desc = dut.hello().unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for case in &all {
        assert_eq!(case.role, Role::LinkEnd);
        let r = run_case(&mut dut, &desc, case);
        if r.verdict != Verdict::Pass {
            failures.push(format!(
                "{}: {} {:?} {:?}",
                case.id, r.verdict, r.failure, r.message
            ));
        }
    }
    println!("{} vector cases, {} not passing", all.len(), failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
