//! Receive buffers sized from the credit loop (link.md §1.2): a scenario that sets no
//! `rx_credits` gets twice what the loop needs, a scenario that sets less than one loop's worth is
//! warned about, and the derived buffers keep senders from stalling where the old fixed default
//! did not. Every figure compared is simulated, never wall-clock time.

use ethlink_fabric::report::Report;
use ethlink_fabric::scenario::{AllToAll, SwitchMode, Topology, TopologyKind, Workload};
use ethlink_fabric::{CreditLoop, Fabric, Scenario};

/// 8 GPUs of one port on one 800 Gb/s store-and-forward switch with 100 ns cables, all-to-all.
fn fast_loop() -> Scenario {
    let mut s = Scenario {
        topology: Topology {
            kind: TopologyKind::SingleTier,
            gpus: 8,
            stacks: 1,
            ports_per_stack: 1,
            leaves: 2,
            spines: 2,
            ..Topology::default()
        },
        traffic: vec![Workload::AllToAll(AllToAll {
            bytes_per_pair: 65_536,
            iterations: 1,
            ..AllToAll::default()
        })],
        ..Scenario::default()
    };
    s.link.rate_gbps = 800.0;
    s.link.propagation_ns = Some(100.0);
    s.link.ber = 0.0;
    s.switch.mode = SwitchMode::StoreAndForward;
    s.metrics.sample_ns = 0;
    s
}

fn run(s: &Scenario) -> Report {
    Fabric::new(s).expect("a valid scenario").run(None)
}

#[test]
fn left_out_rx_credits_is_twice_the_loop() {
    let s = fast_loop();
    assert_eq!(s.link.rx_credits, None);
    let c = CreditLoop::of(&s);
    // 800 Gb/s = 100 B/ns; a 9216 B frame is 92.36 ns on the wire; 250 ns and 2 frames of egress
    // depth; 100 ns of CF spacing; a CF 0.84 ns; 100 ns each way.
    let loop_ns = 92.36 + 100.0 + (250.0 + 2.0 * 92.36) + 100.0 + 92.36 + 0.84 + 100.0;
    assert!((c.loop_ns - loop_ns).abs() < 1e-6, "{}", c.loop_ns);
    let need = (100.0_f64 * loop_ns).ceil() as u64 + 9216;
    assert_eq!(c.need_bytes, need);
    assert_eq!(u64::from(s.rx_credits()), (2 * need).div_ceil(64));
    assert_eq!(s.resolved().link.rx_credits, Some(s.rx_credits()));
    assert!(s.warnings().is_empty(), "{:?}", s.warnings());
    // The report's buffer figure is the grant in force.
    let r = run(&s);
    assert_eq!(r.switch.input_buffer_bytes, u64::from(s.rx_credits()) * 64);
}

#[test]
fn a_buffer_below_one_loop_is_warned_about_and_one_at_it_is_not() {
    let mut s = fast_loop();
    let need = CreditLoop::of(&s).need_credits(64);
    s.link.rx_credits = Some(u32::try_from(need).unwrap() - 1);
    let w = s.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].starts_with("link.rx_credits = "), "{}", w[0]);
    assert!(w[0].contains("credit loop"), "{}", w[0]);
    s.validate()
        .expect("a small buffer is allowed, only warned about");
    s.link.rx_credits = Some(u32::try_from(need).unwrap());
    assert!(s.warnings().is_empty());
}

#[test]
fn derived_buffers_keep_the_senders_going_where_32_kib_stalls_them() {
    let derived = run(&fast_loop());
    let mut small = fast_loop();
    small.link.rx_credits = Some(512);
    let small = run(&small);
    assert!(
        derived.pass && small.pass,
        "{:?} {:?}",
        derived.failures,
        small.failures
    );
    assert!(
        small.links.credit_stall_ns > 0,
        "32 KiB at 800 Gb/s over 100 ns cables should stall"
    );
    assert!(
        derived.links.credit_stall_ns * 10 <= small.links.credit_stall_ns,
        "stall with derived buffers {} ns, with 32 KiB {} ns",
        derived.links.credit_stall_ns,
        small.links.credit_stall_ns
    );
    assert!(derived.end_ns < small.end_ns);
    // Every end that stalled is listed, and the list adds up to the total.
    let listed: u64 = small.links.port_stalls.iter().map(|p| p.stall_ns).sum();
    assert_eq!(listed, small.links.credit_stall_ns);
    assert!(small.links.port_stalls.iter().all(|p| p.stall_ns > 0
        && (p.end.starts_with("gpu") || p.end.starts_with("switch"))
        && p.end.contains(".port")));
}
