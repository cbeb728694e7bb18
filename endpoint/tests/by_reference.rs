//! Frames carried by reference, as a fabric's wires carry them, give the operations and the
//! bytes of frames copied; data its sender read whole from a described range comes with the
//! sender's word for it, and the receiver keeps that description instead of reading the bytes.

mod common;

use common::*;
use ethlink_endpoint::harness::BackToBack;
use ethlink_endpoint::pattern::Pattern;
use ethlink_endpoint::{CompletionStatus, Policy};
use ethlink_link::harness::Faults;
use ethlink_protocol::Space;

/// Sixteen whole segments and a short one.
const LEN: u64 = 16 * 8192 + 100;
const SRC: u64 = 0x10_0000;
const DST: u64 = 0x20_0000;
/// The source bytes: pattern 5 from its byte 3, a place the destination's own position in the
/// write (0) does not name, so that a receiver reading the bytes cannot recognise them.
const SOURCE: Pattern = Pattern::new(5, 3);

/// GPU 0 writes `SOURCE` to GPU 1 over wires with `faults`, frames by reference or copied; the
/// write completes OK.
fn write(by_ref: bool, faults: Faults, seed: u64) -> BackToBack {
    let mut b = pair(Policy::Spray, faults, seed);
    b.set_by_reference(by_ref);
    b.gpu_mut(0)
        .memory_mut()
        .write_pattern(Space::Global, SRC, LEN, SOURCE)
        .expect("in the space");
    let now = b.now();
    b.gpu_mut(0)
        .post(now, write_desc(1, SRC, DST, LEN))
        .expect("a valid write");
    assert!(b.run_until_idle(100_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].status, CompletionStatus::Ok);
    b
}

fn source_bytes() -> Vec<u8> {
    let mut want = vec![0; LEN as usize];
    SOURCE.fill(&mut want);
    want
}

#[test]
fn data_its_sender_vouched_for_is_kept_as_the_senders_description() {
    let by_ref = write(true, Faults::default(), 1);
    let by_copy = write(false, Faults::default(), 1);
    for b in [&by_ref, &by_copy] {
        assert_eq!(read_mem(b, 1, DST, LEN as usize), source_bytes());
    }
    // By reference: the sender's description, whole, and not one literal byte.
    let m = by_ref.gpu(1).memory();
    assert_eq!(m.pages(Space::Global).count(), 0);
    assert_eq!(
        m.described(Space::Global).collect::<Vec<_>>(),
        [(DST, DST + LEN, SOURCE)]
    );
    // Copied, the receiver has only the bytes, which are not the pattern at their place in the
    // write: it holds them as literal bytes.
    let m = by_copy.gpu(1).memory();
    assert!(m.pages(Space::Global).count() > 0);
    assert_eq!(m.described(Space::Global).count(), 0);
}

/// Damaged frames travel as copies of their own and replays by reference again: the bytes that
/// arrive are the source's either way, and what is kept by description is the source's.
#[test]
fn damage_and_replays_by_reference_leave_the_same_bytes() {
    let faults = Faults {
        loss: 0.1,
        ber: 1e-6,
        duplicate: 0.02,
        ..Faults::default()
    };
    let (mut replayed, mut described) = (0, 0);
    for seed in 0..6 {
        let by_ref = write(true, faults, seed);
        let by_copy = write(false, faults, seed);
        for b in [&by_ref, &by_copy] {
            assert_eq!(
                read_mem(b, 1, DST, LEN as usize),
                source_bytes(),
                "seed {seed}"
            );
        }
        let g = by_ref.gpu(0);
        replayed += (0..g.port_count())
            .filter_map(|i| g.link(i))
            .map(|l| l.counters().frames_replayed)
            .sum::<u64>();
        for (s, e, p) in by_ref.gpu(1).memory().described(Space::Global) {
            assert!(s >= DST && e <= DST + LEN, "seed {seed}");
            assert_eq!(p, SOURCE.advance(s - DST), "seed {seed}");
            described += e - s;
        }
    }
    assert!(replayed > 0, "no frame was replayed");
    assert!(described > 0, "nothing was kept by description");
}
