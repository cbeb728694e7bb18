//! Drives one link end, brought UP with a well-behaved peer, with an arbitrary sequence of
//! operations: frames from the wire (raw, or with a correct FCS appended so that they reach the
//! parser and the state machine), time, submissions, releases and polls. The end must never
//! panic, never hold more than its bounds, and never lend out a payload it did not accept.

#![no_main]

use ethlink_link::{Config, Event, Instant, Link, Release};
use ethlink_protocol::{MacAddr, Vc, fcs};
use libfuzzer_sys::fuzz_target;

fn up_pair() -> (Link, Link) {
    let cfg = |mac: u8, seed: u64| {
        let mut c = Config::default().with_uniform_credits(2, 64);
        // 64 credits of 64 B hold one frame of 4096 B (LINK-2-13).
        c.mfs = 4096;
        c.mac = MacAddr([2, 0, 0, 0, 0, mac]);
        c.nonce_seed = seed;
        c.replay_max_frames = 8;
        c.replay_max_bytes = 9216;
        // The first end stomps frames now and then, as a cut-through device may (CLS-3-3).
        if mac == 1 {
            c.caps = ethlink_protocol::Capabilities::CUT_THROUGH;
        }
        c
    };
    let mut a = Link::new(cfg(1, 1)).expect("valid config");
    let mut b = Link::new(cfg(2, 2)).expect("valid config");
    a.physical_up(Instant::ZERO);
    b.physical_up(Instant::ZERO);
    let mut buf = vec![0u8; 9216];
    for _ in 0..8 {
        while let Ok(Some(t)) = a.poll_transmit(Instant::ZERO, &mut buf) {
            b.handle_frame(Instant::ZERO, &buf[..t.len]);
        }
        while let Ok(Some(t)) = b.poll_transmit(Instant::ZERO, &mut buf) {
            a.handle_frame(Instant::ZERO, &buf[..t.len]);
        }
    }
    while a.poll_event().is_some() {}
    while b.poll_event().is_some() {}
    (a, b)
}

fn take<'a>(rest: &mut &'a [u8], n: usize) -> &'a [u8] {
    let n = n.min(rest.len());
    let (h, t) = rest.split_at(n);
    *rest = t;
    h
}

fuzz_target!(|data: &[u8]| {
    let (mut a, mut peer) = up_pair();
    let mut now = 0u64;
    let mut held: Vec<Release> = Vec::new();
    let mut buf = vec![0u8; 9216];
    let mut rest = data;
    while let Some((&op, tail)) = rest.split_first() {
        rest = tail;
        match op % 8 {
            0 | 1 => {
                let len = usize::from(take(&mut rest, 1).first().copied().unwrap_or(0)) * 8;
                let mut frame = take(&mut rest, len).to_vec();
                if op % 8 == 1 && frame.len() >= 4 {
                    let n = frame.len() - 4;
                    let sum = fcs::fcs_bytes(&frame[..n]);
                    frame[n..].copy_from_slice(&sum);
                }
                a.handle_frame(Instant::from_nanos(now), &frame);
            }
            2 => {
                now += u64::from(take(&mut rest, 1).first().copied().unwrap_or(0)) * 50;
                a.handle_timeout(Instant::from_nanos(now));
            }
            3 => {
                let n = usize::from(take(&mut rest, 1).first().copied().unwrap_or(0)) * 4;
                let mut p = vec![0u8; 8 + n];
                p[6..8].copy_from_slice(&(n as u16).to_be_bytes());
                let vc = Vc::new(op >> 5).unwrap_or_default();
                let _ = a.submit(vc, &p);
            }
            4 => {
                while let Ok(Some(t)) = a.poll_transmit(Instant::from_nanos(now), &mut buf) {
                    // Now and then a new DATA frame is stomped and taken back (LINK-3-12): the
                    // peer discards it without a NACK, and the next frame carries its number.
                    let fresh = t.data.is_some_and(|(_, _, replay)| !replay);
                    if fresh && buf.get(t.len - 1).is_some_and(|b| b & 0x1F == 0) {
                        let seq = t.data.map(|(_, s, _)| s);
                        let stomped = a.stomp_last().expect("a new frame can be stomped");
                        assert_eq!(Some(stomped.seq), seq);
                        assert_eq!(a.next_seq(), stomped.seq);
                        continue;
                    }
                    // The well-behaved peer answers, so ACKs and credits come back.
                    peer.handle_frame(Instant::from_nanos(now), &buf[..t.len]);
                }
                while let Some(e) = peer.poll_event() {
                    if let Event::Delivered { release, .. } = e {
                        let _ = peer.release(release);
                    }
                }
                while let Ok(Some(t)) = peer.poll_transmit(Instant::from_nanos(now), &mut buf) {
                    a.handle_frame(Instant::from_nanos(now), &buf[..t.len]);
                }
            }
            5 => {
                while let Some(e) = a.poll_event() {
                    if let Event::Delivered { release, payload, .. } = e {
                        // A network header at least, or empty: a malformed body (LINK-4-17).
                        assert!(payload.is_empty() || payload.len() >= 8);
                        held.push(release);
                    }
                }
            }
            6 => {
                for r in held.drain(..) {
                    let _ = a.release(r);
                }
            }
            _ => {
                a.physical_down(Instant::from_nanos(now));
                a.physical_up(Instant::from_nanos(now));
            }
        }
        let c = a.config();
        assert!(a.replay_frames() <= c.replay_max_frames as usize);
        assert!(a.replay_bytes() <= c.replay_max_bytes as usize);
        for v in 0..2 {
            let vc = Vc::new(v).unwrap_or_default();
            assert!(a.rx_occupied(vc) <= a.rx_grant(vc));
        }
    }
});
