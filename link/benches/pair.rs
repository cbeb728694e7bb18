//! Throughput of a pair of link ends (criterion).

fn main() {}
