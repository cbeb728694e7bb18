//! # ethlink-conformance: the EthLink conformance suite
//!
//! Cases tied to the requirements of `docs/spec/`, run against a device under test through one
//! narrow boundary ([`device::Device`]): frames on its ports, time, the requests of its upper
//! layer, and its counters. The harness ([`ctx::Ctx`]) plays every peer and every wire. Backends:
//! the reference implementation of each role ([`mod@reference`]), any external process that speaks
//! the line protocol of `docs/conformance.md` ([`external`]), and any shared library that exports
//! the C ABI of `include/ethlink.h` ([`dylib`]).
//!
//! The suite is deterministic: a case's frames, times and verdict depend only on the device's
//! answers.

pub mod app;
pub mod boundary;
pub mod case;
pub mod cases;
pub mod coverage;
pub mod ctx;
pub mod device;
pub mod dylib;
pub mod external;
pub mod files;
pub mod mutants;
pub mod reference;
pub mod report;
pub mod runner;
pub mod vectors;

pub use case::{Case, Failure, Level, Stop, Verdict};
pub use ctx::Ctx;
pub use device::{Device, DeviceError, Role};
