//! Runs the C++ example program `examples/demo.cc`: its `sieve_cxx_demo_main` is compiled by
//! `build.rs` (`cxx_build`) into this crate's native library and holds the whole program; this
//! file only hands it the process and its exit code.
//!
//! `cargo run -p sieve-ffi-cxx --example demo` prints the text generated under a small Lark
//! grammar, the exception a bad grammar throws, and a stop controller at work.

use sieve_ffi_cxx as _;

unsafe extern "C" {
    /// Defined in `examples/demo.cc`; catches every C++ exception itself.
    fn sieve_cxx_demo_main() -> std::ffi::c_int;
}

fn main() {
    // SAFETY: 1. `sieve_cxx_demo_main` takes no arguments and lets no exception escape.
    let code = unsafe { sieve_cxx_demo_main() };
    std::process::exit(code);
}
