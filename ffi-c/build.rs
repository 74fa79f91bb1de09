//! With the `generate-header` feature, regenerates `include/sieve.h` from the sources with
//! cbindgen (configured by `cbindgen.toml`). Without it, does nothing: the committed header is
//! used as is.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    #[cfg(feature = "generate-header")]
    generate_header();
}

#[cfg(feature = "generate-header")]
fn generate_header() {
    println!("cargo::rerun-if-changed=cbindgen.toml");
    println!("cargo::rerun-if-changed=src");
    // A hand-edited or deleted header is regenerated too.
    println!("cargo::rerun-if-changed=include/sieve.h");
    let dir = std::path::PathBuf::from(
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".to_owned()),
    );
    let config = match cbindgen::Config::from_file(dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            println!("cargo::error=reading cbindgen.toml: {e}");
            return;
        }
    };
    // Parse only this crate's sources (no `cargo metadata`, no dependencies): the output then
    // depends on nothing but src/ and cbindgen.toml, so regenerating is deterministic.
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate();
    match bindings {
        Ok(b) => {
            b.write_to_file(dir.join("include/sieve.h"));
        }
        Err(e) => println!("cargo::error=cbindgen: {e}"),
    }
}
