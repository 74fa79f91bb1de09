//! aarch64 kernels: [`neon`], chosen at compile time where the build enables NEON (the
//! default) and detected at run time with `std` otherwise. Not compiled for bare-metal builds
//! without NEON (`aarch64-unknown-none-softfloat`): there only the scalar level exists.

#[allow(unsafe_code)]
pub mod neon;
