//! Two link ends back to back, driven through the exported functions as a C program would:
//! they come up, exchange payloads both ways, and every payload arrives once, in order, intact.

use core::ptr::null_mut;

use ethlink_ffi::*;

mod common;

use common::{blank_event, params_zero};

fn payload(body: usize, fill: u8) -> Vec<u8> {
    let mut p = vec![fill; 8 + body];
    p[0..2].copy_from_slice(&1u16.to_be_bytes());
    p[2..4].copy_from_slice(&0u16.to_be_bytes());
    p[4] = 0;
    p[5] = 1;
    p[6..8].copy_from_slice(&(body as u16).to_be_bytes());
    p
}

fn ok(code: i32) {
    assert!(code == ETHLINK_OK || code == ETHLINK_NONE, "code {code}");
}

#[test]
fn two_link_ends_exchange_payloads_through_the_abi() {
    let mut ctx = null_mut();
    ok(ethlink_ctx_new(&mut ctx));
    let mut cfg = LinkEndConfig {
        link: params_zero(),
        mac: [0; 6],
        caps: 0,
        seed: 0,
    };
    ok(ethlink_link_end_config_default(&mut cfg));
    let mut ends = [0u32; 2];
    for (i, h) in ends.iter_mut().enumerate() {
        cfg.mac[5] = 0x10 + i as u8;
        cfg.seed = 100 + i as u64;
        ok(ethlink_link_end_new(ctx, &cfg, h));
        ok(ethlink_physical(ctx, *h, 0, 1, 0));
    }
    // Each end's payloads: 20 of them, numbered by their fill byte, both ways.
    for (i, &h) in ends.iter().enumerate() {
        for n in 0..20u8 {
            let p = payload(64 + usize::from(n), n.wrapping_add(i as u8 * 100));
            ok(ethlink_link_submit(ctx, h, n % 4, p.as_ptr(), p.len()));
        }
    }
    // Frames in flight: (arrival time, destination index, bytes).
    let mut wire: Vec<(u64, usize, Vec<u8>)> = Vec::new();
    let mut got: [Vec<(u8, Vec<u8>)>; 2] = [Vec::new(), Vec::new()];
    let mut up = [false; 2];
    let mut buf = vec![0u8; 9216];
    let mut data = vec![0u8; 9216];
    let mut now = 0u64;
    for _ in 0..100_000 {
        wire.sort_by_key(|w| w.0);
        while wire.first().is_some_and(|w| w.0 <= now) {
            let (_, to, bytes) = wire.remove(0);
            ok(ethlink_handle_frame(
                ctx,
                ends[to],
                0,
                now,
                bytes.as_ptr(),
                bytes.len(),
            ));
        }
        for (i, &h) in ends.iter().enumerate() {
            let mut d = 0;
            if ethlink_poll_timeout(ctx, h, &mut d) == ETHLINK_OK && d <= now {
                ok(ethlink_handle_timeout(ctx, h, now));
            }
            let (mut port, mut len) = (0u16, 0usize);
            while ethlink_poll_transmit(
                ctx,
                h,
                now,
                &mut port,
                buf.as_mut_ptr(),
                buf.len(),
                &mut len,
            ) == ETHLINK_OK
            {
                assert_eq!(port, 0);
                wire.push((now + 50, 1 - i, buf[..len].to_vec()));
            }
            let mut e = blank_event();
            while ethlink_poll_event(ctx, h, &mut e, data.as_mut_ptr(), data.len()) == ETHLINK_OK {
                match e.kind {
                    ETHLINK_EVENT_LINK_UP => up[i] = true,
                    ETHLINK_EVENT_DELIVERED => got[i].push((e.vc, data[..e.len].to_vec())),
                    other => panic!("unexpected event kind {other}"),
                }
            }
        }
        if got.iter().all(|g| g.len() == 20) {
            break;
        }
        let mut next = wire.iter().map(|w| w.0).min().unwrap_or(u64::MAX);
        for &h in &ends {
            let mut d = 0;
            if ethlink_poll_timeout(ctx, h, &mut d) == ETHLINK_OK {
                next = next.min(d.max(now + 1));
            }
        }
        assert!(next != u64::MAX, "nothing left to happen");
        now = next;
    }
    assert_eq!(up, [true, true]);
    for (i, g) in got.iter().enumerate() {
        let from = 1 - i;
        assert_eq!(g.len(), 20, "end {i} received {} payloads", g.len());
        // In order on each VC, and each one intact.
        for vc in 0..4u8 {
            let seq: Vec<u8> = g
                .iter()
                .filter(|(v, _)| *v == vc)
                .map(|(_, p)| p[8].wrapping_sub(from as u8 * 100))
                .collect();
            let want: Vec<u8> = (0..20u8).filter(|n| n % 4 == vc).collect();
            assert_eq!(seq, want, "VC {vc} at end {i}");
        }
        for (_, p) in g {
            let n = p[8].wrapping_sub(from as u8 * 100);
            assert_eq!(*p, payload(64 + usize::from(n), p[8]));
        }
        let mut v = 0u64;
        ok(ethlink_counter_get(
            ctx,
            ends[i],
            c"rx_frames.vc0".as_ptr(),
            &mut v,
        ));
        assert_eq!(v, 5);
    }
    ethlink_ctx_free(ctx);
}
