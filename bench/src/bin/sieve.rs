//! The `sieve` command-line tool.
fn main() {}
