//! Support code for the `sieve` CLI and benchmarks.
