//! Two GPUs back to back through the link fault injector: load-store, RDMA, ports going down.

mod common;

use common::*;
use ethlink_endpoint::{CompletionData, CompletionStatus, OpId, Ordering, Policy};
use ethlink_link::harness::Faults;

#[test]
fn store_then_load_on_one_stream() {
    let mut b = pair(Policy::Spray, Faults::default(), 1);
    let now = b.now();
    let s = b
        .gpu_mut(0)
        .issue(now, store(1, 0x1000, b"hello, gpu", Ordering::Stream(7)))
        .unwrap();
    let l = b
        .gpu_mut(0)
        .issue(now, load(1, 0x1000, 10, Ordering::Stream(7)))
        .unwrap();
    assert!(b.run_until_idle(1_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 2, "{c:?}");
    let st = c.iter().find(|c| c.id == OpId::Ls(s)).unwrap();
    assert_eq!(st.status, CompletionStatus::Ok);
    let ld = c.iter().find(|c| c.id == OpId::Ls(l)).unwrap();
    match ld.data {
        CompletionData::Load(bytes) => assert_eq!(bytes.as_slice(), b"hello, gpu"),
        other => panic!("{other:?}"),
    }
    assert_eq!(read_mem(&b, 1, 0x1000, 10), b"hello, gpu");
}

#[test]
fn rdma_write_and_read() {
    let mut b = pair(Policy::Spray, Faults::default(), 2);
    let data = pattern(5, 1 << 20);
    b.gpu_mut(0)
        .memory_mut()
        .write(ethlink_protocol::Space::Global, 0x10_0000, &data)
        .unwrap();
    let now = b.now();
    let w = b
        .gpu_mut(0)
        .post(now, write_desc(1, 0x10_0000, 0x20_0000, 1 << 20))
        .unwrap();
    assert!(b.run_until_idle(10_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, OpId::Rdma(w));
    assert_eq!(c[0].status, CompletionStatus::Ok);
    assert_eq!(read_mem(&b, 1, 0x20_0000, 1 << 20), data);
    let now = b.now();
    let r = b
        .gpu_mut(0)
        .post(now, read_desc(1, 0x40_0000, 0x20_0000, 1 << 20))
        .unwrap();
    assert!(b.run_until_idle(20_000_000));
    let c = b.take_completions(0);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].id, OpId::Rdma(r));
    assert_eq!(c[0].status, CompletionStatus::Ok);
    assert_eq!(read_mem(&b, 0, 0x40_0000, 1 << 20), data);
}
