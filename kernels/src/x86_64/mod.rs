//! x86_64 kernels. Only [`avx2`] exists: SSE2 (the x86_64 baseline) is what LLVM already
//! auto-vectorizes the scalar reference to, so a hand-written SSE2 level would not win.

#[allow(unsafe_code)]
pub mod avx2;
