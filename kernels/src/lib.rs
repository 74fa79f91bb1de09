//! sieve-kernels: the word-level kernels behind sieve's token masks.
//!
//! A token mask is a `u32` bitset: token `t` is bit `t % 32` of word `t / 32`, and a set bit
//! means the token is allowed. This crate combines masks (OR, AND, AND-NOT), counts them
//! (popcount, single-bit detection) and applies them to logits in `f32`, IEEE `f16` and
//! `bf16` (the 16-bit formats as raw bit patterns, so no float-16 type is needed), densely
//! (one row or a batch of rows) or for a sparse list of candidate tokens.
//!
//! # Key types
//! - [`Kernel`]: the implementation level. [`Kernel::selected`] names the one the free
//!   functions use; tests and benches call the methods on a specific [`Kernel`] to force it.
//! - [`scalar`]: the portable reference, always built.
//! - `x86_64::avx2::Avx2` and `aarch64::neon::Neon`: tokens for the vector levels (only the
//!   module of the target architecture is compiled). Holding a token proves that its
//!   instruction set can run.
//!
//! # Usage pattern
//! ```
//! let mut mask = [0u32; 2];
//! sieve_kernels::or_into(&mut mask, &[0b1010, 1]);
//! assert_eq!(sieve_kernels::popcount(&mask), 3);
//! let mut logits = [0.5f32; 40];
//! sieve_kernels::apply_mask_f32(&mut logits, &mask);
//! assert_eq!(logits[1], 0.5);
//! assert_eq!(logits[0], f32::NEG_INFINITY);
//! ```
//!
//! # Kernel levels and dispatch
//! | level | where | vector width `W` |
//! | --- | --- | --- |
//! | [`Kernel::Scalar`] | everywhere | 1 word |
//! | [`Kernel::Avx2`] | x86_64: detected at run time with `std`, `cfg(target_feature = "avx2")` without | 8 words (256 bits) |
//! | [`Kernel::Neon`] | aarch64: `cfg(target_feature = "neon")` (the default), else detected at run time with `std`; 32-bit ARM: builds with `+neon` (`cfg(sieve_arm_neon)`, set by `build.rs`) | 4 words (128 bits) |
//!
//! NEON code is compiled only where it can run: an aarch64 build without NEON and without
//! `std` (`aarch64-unknown-none-softfloat`, where enabling NEON would change the float ABI)
//! has only the scalar level, and builds warning-free. On 32-bit ARM, stable Rust (1.95) has
//! no NEON intrinsics, no `#[target_feature(enable = "neon")]` and no
//! `cfg(target_feature = "neon")`, so that level is portable branch-free code that LLVM
//! vectorizes to NEON (`arm/neon.rs` says why and how), chosen when the build's rustflags
//! or target name enable NEON.
//!
//! Every free function calls [`Kernel::selected`], the best available level, and every
//! [`Kernel`] method is the one dispatch site: it turns the level into an ISA token (`None`
//! if the level cannot run, which falls back to scalar) and calls the token's method. The
//! AVX2 check costs one relaxed atomic load after the first call. Under Miri only the scalar
//! level is available. The vector kernels are bit-identical to [`scalar`]: logits are moved by
//! bitwise selects, never by float arithmetic, so NaN payloads, `-0.0` and infinities pass
//! through unchanged. `apply_mask_sparse_f32` uses AVX2 gathers on x86_64 and is scalar on
//! NEON (no gather instruction).
//!
//! # Level-independent kernels
//! [`copy_into`], [`fill`], [`fill_prefix`], [`set_bit`], [`clear_bit`], [`test_bit`],
//! [`set_bits`] and [`clear_bits`] have one implementation for every level: copies and fills
//! are `memcpy`/`memset`, which the C library already runs with the CPU's widest vectors,
//! and the bit kernels touch one word per id. They exist so that `sieve-core` does all its
//! word-level mask work through this crate (slice and state-mask copies, clearing, EOS bits);
//! a vector level can take them over without touching the engine.
//!
//! # Performance
//! `cargo bench -p sieve-bench --bench kernels` (criterion medians, 0.5 s warm-up, 1 s
//! measurement), 2026-11-23, Intel Xeon @ 2.80 GHz, 2 vCPUs shared with parallel builds (load
//! 7-9, so figures vary by about ±30% between runs). GB/s of the row produced or scanned;
//! `memcpy` is `copy_from_slice` of the same byte size.
//!
//! | kernel | row | scalar | AVX2 | memcpy | AVX2 / scalar |
//! | --- | --- | ---: | ---: | ---: | ---: |
//! | `or_into` | 4k words | 23.9 | 51.1 | 85.9 | 2.1x |
//! | `or_into` | 8k words | 22.4 | 35.9 | 36.8 | 1.6x |
//! | `popcount` | 4k words | 2.2 | 17.5 | 35.1 | 8.0x |
//! | `single_set_bit` | 8k words | 1.6 | 43.2 | 16.9 | 27x |
//! | `apply_mask_f32`, random mask | 128k | 0.33 | 13.7 | 12.5 | 41x |
//! | `apply_mask_f32`, random mask | 256k | 0.41 | 11.4 | 5.1 | 28x |
//! | `apply_mask_bf16`, random mask | 256k | 0.22 | 8.8 | 15.2 | 41x |
//! | `apply_mask_f32`, sparse mask | 256k | 7.0 | 14.5 | 6.4 | 2.1x |
//! | `apply_mask_f32_batch` | 8 x 256k | 0.37 | 4.0 | 2.5 | 11x |
//! | `apply_mask_sparse_f32` | 256k ids | 0.26 | 1.25 | 5.5 | 4.7x |
//!
//! The `or_into` rows are from later runs of the same day, after the AVX2 loop learned to
//! align `dst` and to avoid 4K aliasing: the median of 7 runs, load 0.3 to 3.1. Before that
//! change, in the same layout, AVX2 ran at 27.9 (4k words) and 23.1 (8k words) GB/s. AND and
//! AND-NOT match OR. LLVM auto-vectorizes the scalar loops to SSE2, so AVX2 can be about 2x
//! faster at most. These kernels read two rows and write one. With rows in L2 (8k words)
//! they run at `memcpy` speed. In L1 (4k words), two loads per store hold them to about 0.6
//! of `memcpy`. `bench/perf.md` has the runs.
//!
//! Mask application on mostly all-disallowed ("sparse") masks is bound by stores in both
//! versions and runs at or above `memcpy` speed (it only writes).
//!
//! # Crate features
//! - `std` (default): run-time AVX2 detection on x86_64 (`is_x86_feature_detected!`, cached
//!   in an `AtomicU8`), and run-time NEON detection on aarch64 builds that do not enable NEON
//!   (`is_aarch64_feature_detected!`). Without it, AVX2 and NEON are used only when the build
//!   enables them (`-C target-feature=+avx2`; NEON is on by default for aarch64). The crate
//!   is `#![no_std]` either way and never allocates.
//!
//! `build.rs` only sets `cfg(sieve_arm_neon)` for 32-bit ARM builds with NEON (see the level
//! table above).
//!
//! # Panics & limits
//! No function panics or allocates. Binary operations work over the shorter slice; logits
//! beyond the mask are treated as disallowed.
#![no_std]
#![deny(missing_docs)]
#![deny(unsafe_code)]

#[cfg(any(test, feature = "std"))]
extern crate std;

/// Generates the safe methods of an ISA token, each calling the module's function of the
/// same name. `token_methods!(Token, unsafe)` is for `#[target_feature]` functions (x86_64,
/// aarch64): expanded inside the ISA modules (the only places that allow `unsafe`), so the
/// one `unsafe` call per kernel sits next to the token's constructors, and the `SAFETY`
/// comments apply. `token_methods!(Token)` is for a module of plain safe functions (32-bit
/// ARM, which has no `#[target_feature]` on stable): the calls are plain blocks there.
#[cfg(any(
    target_arch = "x86_64",
    all(target_arch = "aarch64", any(target_feature = "neon", feature = "std")),
    all(target_arch = "arm", sieve_arm_neon),
))]
macro_rules! token_methods {
    ($token:ident $(, $unsafe:tt)?) => {
        impl $token {
            /// See [`crate::or_into`].
            #[inline]
            pub fn or_into(self, dst: &mut [u32], src: &[u32]) {
                // SAFETY: (1) the target feature must be supported by the CPU: `self`
                // exists only if the constructor checked it or its caller promised it.
                $($unsafe)? { or_into(dst, src) }
            }

            /// See [`crate::and_into`].
            #[inline]
            pub fn and_into(self, dst: &mut [u32], src: &[u32]) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { and_into(dst, src) }
            }

            /// See [`crate::andnot_into`].
            #[inline]
            pub fn andnot_into(self, dst: &mut [u32], src: &[u32]) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { andnot_into(dst, src) }
            }

            /// See [`crate::popcount`].
            #[inline]
            pub fn popcount(self, words: &[u32]) -> u64 {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { popcount(words) }
            }

            /// See [`crate::single_set_bit`].
            #[inline]
            pub fn single_set_bit(self, words: &[u32]) -> Option<usize> {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { single_set_bit(words) }
            }

            /// See [`crate::apply_mask_f32`].
            #[inline]
            pub fn apply_mask_f32(self, logits: &mut [f32], mask: &[u32]) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { apply_mask_f32(logits, mask) }
            }

            /// See [`crate::apply_mask_f32_batch`].
            #[inline]
            pub fn apply_mask_f32_batch(
                self,
                logits: &mut [f32],
                row_len: usize,
                masks: &[u32],
                mask_words: usize,
            ) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { apply_mask_f32_batch(logits, row_len, masks, mask_words) }
            }

            /// See [`crate::apply_mask_f16`].
            #[inline]
            pub fn apply_mask_f16(self, logits: &mut [u16], mask: &[u32]) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { apply_mask_f16(logits, mask) }
            }

            /// See [`crate::apply_mask_bf16`].
            #[inline]
            pub fn apply_mask_bf16(self, logits: &mut [u16], mask: &[u32]) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { apply_mask_bf16(logits, mask) }
            }

            /// See [`crate::apply_mask_sparse_f32`].
            #[inline]
            pub fn apply_mask_sparse_f32(
                self,
                logits: &mut [f32],
                candidate_ids: &[u32],
                mask: &[u32],
            ) {
                // SAFETY: (1) as in `or_into`: `self` proves the target feature.
                $($unsafe)? { apply_mask_sparse_f32(logits, candidate_ids, mask) }
            }
        }
    };
}

pub mod scalar;

#[cfg(all(target_arch = "aarch64", any(target_feature = "neon", feature = "std")))]
pub mod aarch64;
#[cfg(all(target_arch = "arm", sieve_arm_neon))]
pub mod arm;
#[cfg(target_arch = "x86_64")]
pub mod x86_64;

/// `-inf` as an IEEE binary16 bit pattern.
pub const F16_NEG_INFINITY: u16 = 0xFC00;
/// `-inf` as a bfloat16 bit pattern.
pub const BF16_NEG_INFINITY: u16 = 0xFF80;

/// A kernel implementation level.
///
/// Every variant exists on every target so that callers can name levels portably; use
/// [`Kernel::is_available`] to ask whether one can run here. Forcing a level that cannot run
/// executes the scalar reference instead (never undefined behavior).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kernel {
    /// The portable reference in [`scalar`].
    Scalar,
    /// 256-bit AVX2 kernels (x86_64 only).
    Avx2,
    /// 128-bit NEON kernels (aarch64, and 32-bit ARM builds with NEON enabled).
    Neon,
}

/// A level resolved against the running CPU: holding an ISA token proves it can run.
#[derive(Clone, Copy)]
enum Resolved {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Avx2(x86_64::avx2::Avx2),
    #[cfg(all(target_arch = "aarch64", any(target_feature = "neon", feature = "std")))]
    Neon(aarch64::neon::Neon),
    #[cfg(all(target_arch = "arm", sieve_arm_neon))]
    Neon(arm::neon::Neon),
}

/// The dispatch site: `dispatch!(kernel, f(args))` calls `f` of the resolved level.
macro_rules! dispatch {
    ($kernel:expr, $f:ident($($arg:expr),*)) => {
        match $kernel.resolve() {
            Resolved::Scalar => scalar::$f($($arg),*),
            #[cfg(target_arch = "x86_64")]
            Resolved::Avx2(token) => token.$f($($arg),*),
            #[cfg(any(
                all(target_arch = "aarch64", any(target_feature = "neon", feature = "std")),
                all(target_arch = "arm", sieve_arm_neon),
            ))]
            Resolved::Neon(token) => token.$f($($arg),*),
        }
    };
}

impl Kernel {
    /// Every level, best first; filter with [`Kernel::is_available`].
    pub const ALL: [Kernel; 3] = [Kernel::Avx2, Kernel::Neon, Kernel::Scalar];

    /// The level the free functions of this crate dispatch to: the best available one.
    #[inline]
    pub fn selected() -> Kernel {
        if Kernel::Avx2.is_available() {
            Kernel::Avx2
        } else if Kernel::Neon.is_available() {
            Kernel::Neon
        } else {
            Kernel::Scalar
        }
    }

    /// Whether this level can run on the current CPU (always `false` under Miri for the
    /// vector levels).
    #[inline]
    pub fn is_available(self) -> bool {
        !matches!(self.resolve(), Resolved::Scalar) || self == Kernel::Scalar
    }

    /// A short lowercase name (`"scalar"`, `"avx2"`, `"neon"`), for bench labels and logs.
    #[inline]
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Scalar => "scalar",
            Kernel::Avx2 => "avx2",
            Kernel::Neon => "neon",
        }
    }

    /// Turns the level into a token for the running CPU, or `Scalar` if it cannot run.
    #[inline]
    fn resolve(self) -> Resolved {
        match self {
            Kernel::Scalar => Resolved::Scalar,
            Kernel::Avx2 => {
                #[cfg(target_arch = "x86_64")]
                if let Some(token) = x86_64::avx2::Avx2::new() {
                    return Resolved::Avx2(token);
                }
                Resolved::Scalar
            }
            Kernel::Neon => {
                #[cfg(all(target_arch = "aarch64", any(target_feature = "neon", feature = "std")))]
                if let Some(token) = aarch64::neon::Neon::new() {
                    return Resolved::Neon(token);
                }
                #[cfg(all(target_arch = "arm", sieve_arm_neon))]
                if let Some(token) = arm::neon::Neon::new() {
                    return Resolved::Neon(token);
                }
                Resolved::Scalar
            }
        }
    }

    /// See [`or_into`].
    #[inline]
    pub fn or_into(self, dst: &mut [u32], src: &[u32]) {
        dispatch!(self, or_into(dst, src))
    }

    /// See [`and_into`].
    #[inline]
    pub fn and_into(self, dst: &mut [u32], src: &[u32]) {
        dispatch!(self, and_into(dst, src))
    }

    /// See [`andnot_into`].
    #[inline]
    pub fn andnot_into(self, dst: &mut [u32], src: &[u32]) {
        dispatch!(self, andnot_into(dst, src))
    }

    /// See [`popcount`].
    #[inline]
    pub fn popcount(self, words: &[u32]) -> u64 {
        dispatch!(self, popcount(words))
    }

    /// See [`single_set_bit`].
    #[inline]
    pub fn single_set_bit(self, words: &[u32]) -> Option<usize> {
        dispatch!(self, single_set_bit(words))
    }

    /// See [`apply_mask_f32`].
    #[inline]
    pub fn apply_mask_f32(self, logits: &mut [f32], mask: &[u32]) {
        dispatch!(self, apply_mask_f32(logits, mask))
    }

    /// See [`apply_mask_f32_batch`].
    #[inline]
    pub fn apply_mask_f32_batch(
        self,
        logits: &mut [f32],
        row_len: usize,
        masks: &[u32],
        mask_words: usize,
    ) {
        dispatch!(
            self,
            apply_mask_f32_batch(logits, row_len, masks, mask_words)
        )
    }

    /// See [`apply_mask_f16`].
    #[inline]
    pub fn apply_mask_f16(self, logits: &mut [u16], mask: &[u32]) {
        dispatch!(self, apply_mask_f16(logits, mask))
    }

    /// See [`apply_mask_bf16`].
    #[inline]
    pub fn apply_mask_bf16(self, logits: &mut [u16], mask: &[u32]) {
        dispatch!(self, apply_mask_bf16(logits, mask))
    }

    /// See [`apply_mask_sparse_f32`].
    #[inline]
    pub fn apply_mask_sparse_f32(self, logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
        dispatch!(self, apply_mask_sparse_f32(logits, candidate_ids, mask))
    }
}

/// `dst[i] = src[i]` over the shorter slice (a slice mask or a remembered mask copied into
/// the caller's buffer). Level-independent: `memcpy` already uses the CPU's widest vectors.
#[inline]
pub fn copy_into(dst: &mut [u32], src: &[u32]) {
    scalar::copy_into(dst, src);
}

/// Every word of `dst` becomes `word` (0 clears a mask). Level-independent (`memset`).
#[inline]
pub fn fill(dst: &mut [u32], word: u32) {
    scalar::fill(dst, word);
}

/// Sets bits `0..n_bits` of `dst` and clears the rest: the mask allowing every token of an
/// `n_bits`-token vocabulary. Level-independent (`memset` twice and one word).
#[inline]
pub fn fill_prefix(dst: &mut [u32], n_bits: usize) {
    scalar::fill_prefix(dst, n_bits);
}

/// Sets bit `id` (token `id` allowed); an id beyond the mask is ignored.
#[inline]
pub fn set_bit(mask: &mut [u32], id: u32) {
    scalar::set_bit(mask, id);
}

/// Clears bit `id`; an id beyond the mask is ignored.
#[inline]
pub fn clear_bit(mask: &mut [u32], id: u32) {
    scalar::clear_bit(mask, id);
}

/// Whether bit `id` is set; bits beyond the mask read as clear.
#[inline]
pub fn test_bit(mask: &[u32], id: u32) -> bool {
    scalar::test_bit(mask, id)
}

/// Sets the bit of every id in `ids` (the EOS tokens, a gate's end tokens); ids beyond the
/// mask are ignored. Level-independent: one scattered store per id.
#[inline]
pub fn set_bits(mask: &mut [u32], ids: &[u32]) {
    scalar::set_bits(mask, ids);
}

/// Clears the bit of every id in `ids`; ids beyond the mask are ignored.
#[inline]
pub fn clear_bits(mask: &mut [u32], ids: &[u32]) {
    scalar::clear_bits(mask, ids);
}

/// `dst[i] |= src[i]` over the shorter slice.
#[inline]
pub fn or_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().or_into(dst, src);
}

/// `dst[i] &= src[i]` over the shorter slice; words of `dst` beyond `src` are unchanged.
#[inline]
pub fn and_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().and_into(dst, src);
}

/// `dst[i] &= !src[i]` over the shorter slice.
#[inline]
pub fn andnot_into(dst: &mut [u32], src: &[u32]) {
    Kernel::selected().andnot_into(dst, src);
}

/// Number of set bits in `words`.
#[inline]
pub fn popcount(words: &[u32]) -> u64 {
    Kernel::selected().popcount(words)
}

/// `Some(i)` if exactly one bit is set (`i = word * 32 + bit`), else `None`.
#[inline]
pub fn single_set_bit(words: &[u32]) -> Option<usize> {
    Kernel::selected().single_set_bit(words)
}

/// Sets `logits[i]` to `-inf` unless bit `i` of `mask` is set; logits beyond the mask
/// (`i >= 32 * mask.len()`) become `-inf`.
#[inline]
pub fn apply_mask_f32(logits: &mut [f32], mask: &[u32]) {
    Kernel::selected().apply_mask_f32(logits, mask);
}

/// [`apply_mask_f32`] over a batch: row `i` is `logits[i * row_len..][..row_len]` and its
/// mask is `masks[i * mask_words..][..mask_words]`.
///
/// A short last row or mask is used as it is; a row without any mask words (past the end of
/// `masks`, or `mask_words == 0`) becomes all `-inf`. `row_len == 0` does nothing.
#[inline]
pub fn apply_mask_f32_batch(logits: &mut [f32], row_len: usize, masks: &[u32], mask_words: usize) {
    Kernel::selected().apply_mask_f32_batch(logits, row_len, masks, mask_words);
}

/// [`apply_mask_f32`] on raw IEEE binary16 bit patterns (`-inf` = [`F16_NEG_INFINITY`]).
#[inline]
pub fn apply_mask_f16(logits: &mut [u16], mask: &[u32]) {
    Kernel::selected().apply_mask_f16(logits, mask);
}

/// [`apply_mask_f32`] on raw bfloat16 bit patterns (`-inf` = [`BF16_NEG_INFINITY`]).
#[inline]
pub fn apply_mask_bf16(logits: &mut [u16], mask: &[u32]) {
    Kernel::selected().apply_mask_bf16(logits, mask);
}

/// Sparse masking: `logits[i]` is the logit of token `candidate_ids[i]` (for example after a
/// top-k cut) and becomes `-inf` unless that token's bit is set. Logits without a candidate id
/// (`i >= candidate_ids.len()`) become `-inf`; extra candidate ids are ignored.
#[inline]
pub fn apply_mask_sparse_f32(logits: &mut [f32], candidate_ids: &[u32], mask: &[u32]) {
    Kernel::selected().apply_mask_sparse_f32(logits, candidate_ids, mask);
}

#[cfg(test)]
mod tests;
