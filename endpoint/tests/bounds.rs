//! The bounds of an endpoint that its GPU meets: fences outstanding (EP-5-9), completions not
//! yet taken (EP-5-10), and time at the end of the 64-bit range (EP-1-5). Every loop here has a
//! cap, so that a bound that does not hold fails the test instead of hanging it.

use ethlink_endpoint::{
    CompletionStatus, Config, Endpoint, FenceError, IssueError, LsOp, LsRequest, OpId, Ordering,
    PostError, RdmaDesc, RdmaDir, Remote,
};
use ethlink_link::Instant;
use ethlink_protocol::{GpuId, Space};

/// 2^63 - 1 ns, the horizon of link.md §1.
const HORIZON_NS: u64 = (1 << 63) - 1;

/// One stack of one port, with `f` applied.
fn endpoint(f: impl FnOnce(&mut Config)) -> Endpoint {
    let mut c = Config {
        stacks: 1,
        ports: 1,
        ..Config::default()
    };
    f(&mut c);
    Endpoint::new(c).expect("configuration")
}

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

fn load() -> LsRequest {
    LsRequest {
        op: LsOp::Load { len: 8 },
        remote: Remote {
            gpu: GpuId::new(1).unwrap(),
            space: Space::Global,
            key: 7,
            addr: 0,
        },
        ordering: Ordering::Unordered,
    }
}

fn write() -> RdmaDesc {
    RdmaDesc {
        dir: RdmaDir::Write,
        local_space: Space::Global,
        local_addr: 0,
        remote: Remote {
            gpu: GpuId::new(1).unwrap(),
            space: Space::Global,
            key: 7,
            addr: 0,
        },
        len: 4096,
    }
}

/// Runs the endpoint's timers until `until`, a deadline at a time, at most 1000 of them.
fn run_timers(ep: &mut Endpoint, until: u64) {
    for _ in 0..1000 {
        match ep.poll_timeout() {
            Some(t) if t.as_nanos() <= until => ep.handle_timeout(t),
            _ => return,
        }
    }
    panic!("more than 1000 deadlines before {until}");
}

//= type=test
//# EP-5-9 While `max_fences` fences are outstanding, a fence MUST be refused with an error that
//# says so, and nothing of it recorded: the GPU takes completions and tries again.
#[test]
fn fences_beyond_max_fences_are_refused_and_nothing_of_them_is_recorded() {
    let mut ep = endpoint(|c| c.max_fences = 4);
    // No port is up: the load waits for a path until its deadline, and the fences behind it.
    let tag = ep.issue(at(0), load()).expect("a load");
    let mut fences = Vec::new();
    for _ in 0..4 {
        fences.push(ep.fence(at(0)).expect("a fence within max_fences"));
    }
    for _ in 0..3 {
        assert_eq!(ep.fence(at(0)), Err(FenceError::TooMany { outstanding: 4 }));
    }
    let e = ep.fence(at(0)).unwrap_err().to_string();
    assert!(e.contains("4 fences are outstanding"), "{e}");
    assert_eq!(ep.outstanding(), 5, "the refused fences are not recorded");
    // The load ends without a path; the four fences complete after it, and no other.
    run_timers(&mut ep, 10_000_000);
    let done: Vec<_> = std::iter::from_fn(|| ep.poll_completion()).collect();
    assert_eq!(done.len(), 5, "{done:?}");
    assert_eq!(done[0].id, OpId::Ls(tag));
    assert_eq!(done[0].status, CompletionStatus::NoPath);
    let ids: Vec<_> = done[1..].iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        fences.iter().map(|&f| OpId::Fence(f)).collect::<Vec<_>>()
    );
    // Room again.
    assert!(ep.fence(at(10_000_000)).is_ok());
}

/// A GPU that never takes its completions: each new operation is refused once the completions
/// waiting fill their bound, whatever kind it is, and the endpoint holds no more.
//= type=test
//# EP-5-10 While `lsu_tags + rdma_queue + max_fences` completions wait to be taken by the GPU,
//# an endpoint MUST refuse every new operation (issue, post, fence) with an error that says so,
//# and record nothing of it.
#[test]
fn completions_not_taken_bound_the_operations_taken() {
    let mut ep = endpoint(|c| {
        c.lsu_tags = 2;
        c.rdma_queue = 1;
        c.max_fences = 3;
    });
    assert_eq!(ep.config().max_completions(), 6);
    // With nothing outstanding a fence completes at once.
    for _ in 0..6 {
        ep.fence(at(0)).expect("a fence");
    }
    assert_eq!(ep.completions_waiting(), 6);
    assert_eq!(
        ep.fence(at(0)),
        Err(FenceError::CompletionsWaiting { waiting: 6 })
    );
    let e = ep.issue(at(0), load()).unwrap_err();
    assert_eq!(e, IssueError::TagsExhausted { outstanding: 0 });
    assert!(e.to_string().contains("completions not yet taken"), "{e}");
    let e = ep.post(at(0), write()).unwrap_err();
    assert_eq!(e, PostError::QueueFull { outstanding: 0 });
    assert!(e.to_string().contains("completions not yet taken"), "{e}");
    assert_eq!(
        ep.outstanding(),
        0,
        "nothing of the refused operations is recorded"
    );
    assert_eq!(ep.completions_waiting(), 6);
    // One taken, one more taken in.
    assert!(ep.poll_completion().is_some());
    assert!(ep.issue(at(0), load()).is_ok());

    // Millions of fences from a GPU that takes nothing leave the endpoint as big as its bound.
    let mut ep = endpoint(|_| {});
    let bound = ep.config().max_completions();
    let taken = (0..200_000).filter(|_| ep.fence(at(0)).is_ok()).count();
    assert_eq!(taken, bound);
    assert_eq!(ep.completions_waiting(), bound);
}

//= type=test
//# EP-1-5 An endpoint MUST keep link.md LINK-1-2 and LINK-1-3 for its own timers and deadlines
//# as well as its ports' links
#[test]
fn at_the_end_of_time_an_endpoint_sends_once_and_waits() {
    for t in [HORIZON_NS, u64::MAX] {
        let mut ep = endpoint(|_| {});
        ep.port_up(at(t), 0);
        let tag = ep.issue(at(t), load()).expect("a load");
        let mut buf = vec![0u8; 9216];
        for round in 0..3 {
            ep.handle_timeout(at(t));
            let mut sent = 0;
            while let Ok(Some(_)) = ep.poll_transmit(at(t), 0, &mut buf) {
                sent += 1;
                assert!(sent < 1000, "at {t}: poll_transmit never ran dry");
            }
            // The first INIT, then nothing: the next is due beyond the horizon.
            assert_eq!(sent, usize::from(round == 0), "at {t}, round {round}");
        }
        let next = ep.poll_timeout().expect("a deadline");
        assert!(next.as_nanos() > HORIZON_NS, "at {t}: {next}");
        // The load's deadline is beyond the horizon too: it never falls.
        assert!(ep.poll_completion().is_none(), "at {t}");
        assert_eq!(ep.ls_outstanding(), 1, "at {t}: tag {tag}");
    }
}
