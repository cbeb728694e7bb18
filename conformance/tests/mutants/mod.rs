//! Deliberately broken devices ("mutants"), one module per role, shared by the tests that run the
//! catalogue against them: each must fail at least one case of its role, which shows that the
//! suite catches that kind of break. The switch's mutants are in the library
//! (`ethlink_conformance::mutants::switch`): four of them build a flaw into the reference switch's
//! cut-through decisions through a hook private to the library.

#![allow(dead_code, unreachable_pub)]

pub mod endpoint;
pub mod link;
