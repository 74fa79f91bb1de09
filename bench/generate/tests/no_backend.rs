//! Built without the `llama` feature (the default, so that `cargo test --workspace` needs no
//! cmake or libclang): the real-model tests of `tests/generate.rs` are not compiled, and
//! this says so.

#![cfg(not(feature = "llama"))]

#[test]
fn real_model_tests_need_the_llama_feature() {
    eprintln!(
        "SKIP: the real-model tests of sieve-generate are built with --features llama only \
         (llama.cpp needs cmake, a C++ compiler and libclang): run \
         `cargo test --release -p sieve-generate --features llama` (.ci/run does)"
    );
}
