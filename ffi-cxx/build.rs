//! Generates the C++ side of the bridge in `src/lib.rs` and compiles it together with the
//! C++ example `examples/demo.cc` (two small translation units, C++17).

fn main() {
    cxx_build::bridge("src/lib.rs")
        .file("examples/demo.cc")
        .std("c++17")
        .flag_if_supported("-Wall")
        .flag_if_supported("-Wextra")
        .compile("sieve-ffi-cxx");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=examples/demo.cc");
}
