//! Deliberately broken variants of the reference, one module per role: each case of a role must
//! be able to fail, and the mutants show that some case catches each kind of break.

pub mod switch;
