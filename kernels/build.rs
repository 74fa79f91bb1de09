//! Sets `cfg(sieve_arm_neon)` for 32-bit ARM builds that enable NEON (see `src/arm/mod.rs`):
//! stable Rust does not expose `cfg(target_feature = "neon")` on `target_arch = "arm"`, so
//! the build's own inputs are read instead.

use std::env;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(sieve_arm_neon)");
    println!("cargo::rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    if env::var("CARGO_CFG_TARGET_ARCH").as_deref() != Ok("arm") {
        return;
    }
    let target = env::var("TARGET").unwrap_or_default();
    let features = env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let rustflags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if target.contains("neon")
        || features.split(',').any(|f| f == "neon")
        || neon_in_flags(&rustflags)
    {
        println!("cargo::rustc-cfg=sieve_arm_neon");
    }
}

/// Whether the last `neon` named in a `-C target-feature` list of the (0x1f-separated)
/// rustflags enables it.
fn neon_in_flags(flags: &str) -> bool {
    let mut neon = false;
    let mut args = flags.split('\x1f');
    while let Some(arg) = args.next() {
        let list = if let Some(v) = arg.strip_prefix("-Ctarget-feature=") {
            v.to_owned()
        } else if arg == "-C" {
            match args.next() {
                Some(v) => match v.strip_prefix("target-feature=") {
                    Some(l) => l.to_owned(),
                    None => continue,
                },
                None => break,
            }
        } else if let Some(v) = arg.strip_prefix("--codegen=target-feature=") {
            v.to_owned()
        } else {
            continue;
        };
        for f in list.split(',') {
            match f {
                "+neon" => neon = true,
                "-neon" => neon = false,
                _ => {}
            }
        }
    }
    neon
}
