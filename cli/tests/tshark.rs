//! An independent check of vectors.pcapng: Wireshark's dissector must find the FCS of every
//! vector good except the vectors built with a bad FCS (WIRE-2.5-1, WIRE-2.5-2), which shows that
//! the capture declares its FCS correctly and that our CRC and byte order are Ethernet's.
//!
//! Needs `tshark` on the PATH (the project's test script installs it). Set ETHLINK_SKIP_TSHARK=1
//! to skip this test on a machine without it.

mod common;

use std::process::Command;

use common::{committed_vectors, vectors_dir};

#[test]
fn tshark_agrees_on_every_fcs() {
    if std::env::var("ETHLINK_SKIP_TSHARK").is_ok_and(|v| v == "1") {
        eprintln!("ETHLINK_SKIP_TSHARK=1: skipping the tshark check");
        return;
    }
    let pcap = vectors_dir().join("vectors.pcapng");
    let output = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args(["-o", "eth.check_fcs:TRUE", "-T", "fields"])
        .args(["-e", "frame.number", "-e", "eth.fcs.status"])
        .output();
    let output = match output {
        Ok(o) => o,
        Err(e) => panic!(
            "cannot run tshark ({e}). Install it (Debian: apt-get install tshark), or set \
             ETHLINK_SKIP_TSHARK=1 to skip this check"
        ),
    };
    assert!(
        output.status.success(),
        "tshark failed on {}: {}",
        pcap.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let file = committed_vectors();
    let text = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<(usize, &str)> = text
        .lines()
        .filter_map(|line| {
            let mut cols = line.split('\t');
            let number = cols.next()?.trim().parse().ok()?;
            Some((number, cols.next().unwrap_or("").trim()))
        })
        .collect();
    assert_eq!(
        rows.len(),
        file.vectors.len(),
        "tshark reported {} frames, vectors.json has {}:\n{text}",
        rows.len(),
        file.vectors.len()
    );
    let mut failures = Vec::new();
    for ((number, fcs_status), (i, v)) in rows.iter().zip(file.vectors.iter().enumerate()) {
        assert_eq!(*number, i + 1, "tshark frame numbers are out of order");
        let built_bad = v
            .expected_error
            .as_ref()
            .is_some_and(|e| e.field == "eth.fcs");
        // tshark 4.0 prints the value (1 good, 0 bad); later versions may print the name.
        let reported_good = match *fcs_status {
            "1" | "Good" => Some(true),
            "0" | "Bad" => Some(false),
            _ => None,
        };
        if reported_good != Some(!built_bad) {
            failures.push(format!(
                "frame {number} ({}): tshark says eth.fcs.status {fcs_status:?}, expected {}",
                v.name,
                if built_bad { "Bad" } else { "Good" }
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let bad = file
        .vectors
        .iter()
        .filter(|v| {
            v.expected_error
                .as_ref()
                .is_some_and(|e| e.field == "eth.fcs")
        })
        .count();
    assert!(bad >= 1, "the vectors include no frame with a bad FCS");
}
