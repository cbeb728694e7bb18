//! Deliberately broken switches: each must fail at least one switch case, which shows that the
//! suite catches that kind of break. They are here, in the library, because four of them build a
//! flaw into the reference switch's cut-through decisions through a hook private to the library
//! (`reference::switch::CutFlaw`); the link-end and endpoint mutants, which only wrap the public
//! reference devices, are beside their tests in `conformance/tests/mutants/`.

pub mod switch;
