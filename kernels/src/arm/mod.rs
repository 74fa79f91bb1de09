//! 32-bit ARM kernels: [`neon`], for ARMv7-A builds that enable NEON.
//!
//! On stable Rust (1.95) neither `core::arch::arm`'s NEON intrinsics nor
//! `#[target_feature(enable = "neon")]` nor `cfg(target_feature = "neon")` exist for
//! `target_arch = "arm"` (all behind `stdarch_arm_neon_intrinsics` / `arm_target_feature`).
//! So the level is written as portable code that LLVM turns into NEON, and it is selected at
//! compile time by the `sieve_arm_neon` cfg that `build.rs` sets when the build enables NEON
//! (`-C target-feature=+neon` in the rustflags, a `*neon*` target such as
//! `thumbv7neon-unknown-linux-gnueabihf`, or `neon` in `CARGO_CFG_TARGET_FEATURE` on a
//! toolchain that reports it). There is no run-time detection on 32-bit ARM
//! (`is_arm_feature_detected!` is unstable too).

pub mod neon;
