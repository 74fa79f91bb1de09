//! aarch64 kernels: [`neon`], chosen at compile time (NEON is on by default for aarch64).

#[allow(unsafe_code)]
pub mod neon;
