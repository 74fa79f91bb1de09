//! Linker scripts: cortex-m-rt's `link.x` (which includes `memory.x`) on Cortex-M, our own
//! `aarch64.ld` on aarch64. Passed here rather than in `.cargo/config.toml` so that a
//! `RUSTFLAGS` from the environment (CI sets `-D warnings`) does not drop them.

use std::{env, fs, path::PathBuf};

fn main() {
    let target = env::var("TARGET").unwrap_or_default();
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=aarch64.ld");
    if target.starts_with("thumb") {
        fs::copy(dir.join("memory.x"), out.join("memory.x")).expect("copy memory.x");
        println!("cargo:rustc-link-search={}", out.display());
        println!("cargo:rustc-link-arg-bins=-Tlink.x");
    } else if target.starts_with("aarch64") && target.ends_with("-none") {
        println!(
            "cargo:rustc-link-arg-bins=-T{}",
            dir.join("aarch64.ld").display()
        );
    }
}
