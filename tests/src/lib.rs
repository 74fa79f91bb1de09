//! Shared helpers for sieve's cross-crate tests.
