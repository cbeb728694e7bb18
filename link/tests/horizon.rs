//! Time near the end of the 64-bit range (link.md §1, LINK-1-2 and LINK-1-3), and the end's own
//! address (wire.md WIRE-2.3-1). Every loop here is bounded: a timer that fell due at every call
//! would end it at its cap and fail the test, never hang it.

use ethlink_link::{Config, Event, Instant, Link};
use ethlink_protocol::{FrameRepr, LinkFrame, MacAddr, Vc};

/// 2^63 - 1 ns, the horizon of link.md §1.
const HORIZON_NS: u64 = (1 << 63) - 1;
/// Frames a poll loop takes at most before it counts as one that never runs dry.
const CAP: usize = 1_000;

fn cfg(mac: u8, seed: u64) -> Config {
    Config {
        mac: MacAddr([0x02, 0, 0, 0, 0, mac]),
        nonce_seed: seed,
        ..Config::default()
    }
}

fn at(ns: u64) -> Instant {
    Instant::from_nanos(ns)
}

/// The frames `l` sends at `now`, until it has none; panics when it has more than [`CAP`].
fn drain(l: &mut Link, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 9216];
    let mut out = Vec::new();
    while let Ok(Some(t)) = l.poll_transmit(now, &mut buf) {
        out.push(buf[..t.len].to_vec());
        assert!(
            out.len() < CAP,
            "poll_transmit at {now} never ran dry: {} frames",
            out.len()
        );
    }
    out
}

/// The kind of control frame `f` is, in a word, or "DATA".
fn kind(f: &[u8]) -> &'static str {
    match FrameRepr::parse_bytes(f, 9216).map(|r| r.link) {
        Ok(LinkFrame::Init(_)) => "INIT",
        Ok(LinkFrame::InitEcho { .. }) => "INIT_ECHO",
        Ok(LinkFrame::Ack(_)) => "ACK",
        Ok(LinkFrame::Nack(_)) => "NACK",
        Ok(LinkFrame::CreditUpdate(_)) => "CF",
        Ok(LinkFrame::CreditResync(_)) => "CC",
        Ok(LinkFrame::Data { .. }) => "DATA",
        Err(_) => "malformed",
    }
}

/// Runs the timers due at `now`, then drains both ends into each other at `now` until both are
/// quiet; returns the kinds of every frame sent, A's and B's.
fn exchange(a: &mut Link, b: &mut Link, now: Instant) -> (Vec<&'static str>, Vec<&'static str>) {
    let (mut from_a, mut from_b) = (Vec::new(), Vec::new());
    for end in [&mut *a, &mut *b] {
        if end.poll_timeout().is_some_and(|d| d <= now) {
            end.handle_timeout(now);
        }
    }
    for _ in 0..CAP {
        let ab = drain(a, now);
        let ba = drain(b, now);
        if ab.is_empty() && ba.is_empty() {
            return (from_a, from_b);
        }
        for f in &ab {
            from_a.push(kind(f));
            b.handle_frame(now, f);
        }
        for f in &ba {
            from_b.push(kind(f));
            a.handle_frame(now, f);
        }
        for end in [&mut *a, &mut *b] {
            while let Some(e) = end.poll_event() {
                if let Event::Delivered { release, .. } = e {
                    let _ = end.release(release);
                }
            }
        }
    }
    panic!("the two ends never went quiet at {now}");
}

/// Two ends brought UP at `t0`.
fn pair_up_at(t0: u64) -> (Link, Link) {
    let mut a = Link::new(cfg(1, 1)).unwrap();
    let mut b = Link::new(cfg(2, 2)).unwrap();
    a.physical_up(at(t0));
    b.physical_up(at(t0));
    exchange(&mut a, &mut b, at(t0));
    assert!(a.is_up() && b.is_up(), "the ends came up at {t0}");
    (a, b)
}

//= type=test
//# LINK-1-2 An end MUST run every timer of Table LINK-T2 at every time up to and including the
//# horizon as it does near the origin: an expiry is acted on once, and a timer restarted is
//# restarted for its whole period, even when that period ends beyond the horizon (such a
//# deadline is never reached).
#[test]
fn in_init_at_the_end_of_time_an_end_sends_one_init_and_then_waits() {
    for t in [HORIZON_NS, HORIZON_NS + 1, u64::MAX] {
        let mut l = Link::new(cfg(1, 1)).unwrap();
        l.physical_up(at(t));
        let sent = drain(&mut l, at(t));
        assert_eq!(
            sent.iter().map(|f| kind(f)).collect::<Vec<_>>(),
            ["INIT"],
            "at {t}"
        );
        // The next INIT is due one init_interval on, beyond the horizon: never.
        let next = l.poll_timeout().expect("a deadline while in INIT");
        assert!(next.as_nanos() > HORIZON_NS, "next deadline {next} at {t}");
        l.handle_timeout(at(u64::MAX));
        assert!(drain(&mut l, at(u64::MAX)).is_empty(), "at {t}");
        assert!(drain(&mut l, at(u64::MAX)).is_empty(), "at {t}");
    }
}

//= type=test
//# LINK-1-2 [...] So no timer falls due again at the time it expired, at the horizon or before.
#[test]
fn an_up_link_at_the_end_of_time_sends_each_periodic_frame_once() {
    // Up 10 us before the horizon; every periodic timer (CF, CC) has fired since.
    let (mut a, mut b) = pair_up_at(HORIZON_NS - 10_000);
    for t in [HORIZON_NS, u64::MAX] {
        let (from_a, from_b) = exchange(&mut a, &mut b, at(t));
        for sent in [&from_a, &from_b] {
            // At the horizon each end's periodic timers fire once: a CF (cf_max_interval has
            // passed), a CC (cc_interval has passed), and the CF that answers the peer's CC
            // (LINK-5-13). Then nothing more, however often the ends are called.
            let cf = sent.iter().filter(|k| **k == "CF").count();
            let cc = sent.iter().filter(|k| **k == "CC").count();
            assert!(
                cf <= 2 && cc <= 1 && sent.len() == cf + cc,
                "at {t}: {sent:?}"
            );
            if t == u64::MAX {
                assert!(sent.is_empty(), "at {t}, after the horizon: {sent:?}");
            }
        }
        for end in [&a, &b] {
            let next = end.poll_timeout().expect("an UP end has a deadline");
            assert!(next.as_nanos() > HORIZON_NS, "next deadline {next} at {t}");
        }
    }
    // Traffic still flows at the horizon: submitted, sent once, delivered, acknowledged.
    let mut p = vec![0u8; 64];
    p[0..2].copy_from_slice(&1u16.to_be_bytes());
    p[5] = 1;
    p[6..8].copy_from_slice(&56u16.to_be_bytes());
    a.submit(Vc::new(0).unwrap(), &p).unwrap();
    let (from_a, _) = exchange(&mut a, &mut b, at(u64::MAX));
    assert_eq!(from_a.iter().filter(|k| **k == "DATA").count(), 1);
    assert_eq!(b.counters().rx_frames[0], 1);
}

//= type=test
//# LINK-1-3 An end MUST NOT take a time later than the horizon as its current time.
#[test]
fn a_time_after_the_horizon_is_taken_as_the_horizon() {
    let mut l = Link::new(cfg(1, 1)).unwrap();
    l.physical_up(at(u64::MAX));
    assert_eq!(drain(&mut l, at(u64::MAX)).len(), 1);
    // The INIT went at the horizon: the next is due one init_interval after it.
    let interval = u64::try_from(l.config().init_interval.as_nanos()).unwrap();
    assert_eq!(
        l.poll_timeout().map(Instant::as_nanos),
        Some(HORIZON_NS + interval)
    );
}

//= type=test
//# WIRE-2.3-1 The source MAC address MUST be the transmitting port's own unicast address.
#[test]
fn a_group_address_is_refused_as_an_ends_own() {
    for mac in [
        [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01],
        [0x03, 0, 0, 0, 0, 1],
        [0xff; 6],
        [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e],
    ] {
        let c = Config {
            mac: MacAddr(mac),
            ..Config::default()
        };
        let e = Link::new(c).expect_err("a group address is refused");
        assert_eq!(e.field, "mac");
        let text = e.to_string();
        let want = format!(
            "mac = {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}: must be a unicast address",
            mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]
        );
        assert!(text.starts_with(&want), "{text}");
    }
    for mac in [
        [0x02, 0, 0, 0, 0, 1],
        [0x00, 0x1b, 0x21, 0, 0, 1],
        [0xfe; 6],
    ] {
        let c = Config {
            mac: MacAddr(mac),
            ..Config::default()
        };
        assert!(Link::new(c).is_ok(), "{mac:02x?} is unicast");
    }
}
