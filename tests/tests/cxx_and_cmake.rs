//! The C++ API and the build glue, end to end:
//! - `cxx_demo`: runs the C++ example `ffi-cxx/examples/demo.cc` (built by `cxx_build`, run
//!   through `cargo run -p sieve-ffi-cxx --example demo`) and checks what it printed.
//! - `cmake_consumer`: configures `tests/cmake_consumer/` with `find_package(sieve)` against
//!   `ffi-c/cmake/sieveConfig.cmake` and the `libsieve.a` built here, builds it and runs it.
//! - `pkg_config`: fills `ffi-c/sieve.pc.in` for a prefix laid out from the same build and
//!   compiles the consumer's `main.c` with the flags `pkg-config` gives.
//!
//! Nested cargo builds use this test's profile and target directory (as `c_api.rs` does).
//! A missing `cmake`, `c++`, `cc` or `pkg-config` prints `SKIP: <reason>`.

use std::process::{Command, Output};

use sieve_tests::native::{cargo, have, libsieve, root, target_dir};

/// Runs `cmd`, asserting success; returns its output.
fn run(mut cmd: Command, what: &str) -> Output {
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    output
}

fn check_consumer_output(output: &Output) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        stdout.contains(concat!("version: sieve ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("mask: 0x7"), "{stdout}");
}

#[test]
fn cxx_demo() {
    if !have("c++") {
        println!("SKIP: c++ not installed");
        return;
    }
    let output = run(
        cargo(&["run", "--quiet", "-p", "sieve-ffi-cxx", "--example", "demo"]),
        "cargo run -p sieve-ffi-cxx --example demo",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    for want in [
        "generated: hello world!",
        "stopped: 1",
        "after rollback: stopped=0 accepting=1",
        "rejected: TokenRejected (sticky: TokenRejected)",
        "after reset: Ok",
        "bad grammar: GrammarError",
        "demo ok",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
}

#[test]
fn cmake_consumer() {
    if !have("cmake") {
        println!("SKIP: cmake not installed (apt-get install -y cmake)");
        return;
    }
    if !have("cc") {
        println!("SKIP: cc not installed");
        return;
    }
    let lib = libsieve();
    let build = target_dir().join("cmake-consumer");
    let _ = std::fs::remove_dir_all(&build);
    let prefix_path = format!(
        "{};{}",
        root().join("ffi-c").display(),
        lib.parent().expect("lib has a folder").display()
    );
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(root().join("tests/cmake_consumer"))
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={prefix_path}"));
    let out = run(configure, "cmake configure");
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        log.contains(&format!("Found sieve: {}", lib.display())),
        "find_package(sieve) picked another library:\n{log}"
    );
    let mut build_cmd = Command::new("cmake");
    build_cmd.arg("--build").arg(&build);
    run(build_cmd, "cmake --build");
    let output = run(Command::new(build.join("sieve_consumer")), "sieve_consumer");
    check_consumer_output(&output);
}

#[test]
fn pkg_config() {
    if !have("pkg-config") || !have("cc") {
        println!("SKIP: pkg-config or cc not installed");
        return;
    }
    let lib = libsieve();
    // A prefix laid out as an install would be: include/sieve.h, lib/libsieve.a.
    let prefix = target_dir().join("pkg-config-prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    for dir in ["include", "lib/pkgconfig"] {
        std::fs::create_dir_all(prefix.join(dir)).expect("creating the prefix");
    }
    std::fs::copy(
        root().join("ffi-c/include/sieve.h"),
        prefix.join("include/sieve.h"),
    )
    .expect("copying sieve.h");
    std::fs::copy(lib, prefix.join("lib/libsieve.a")).expect("copying libsieve.a");
    let template =
        std::fs::read_to_string(root().join("ffi-c/sieve.pc.in")).expect("reading sieve.pc.in");
    let pc = template
        .replace("@PREFIX@", &prefix.display().to_string())
        .replace("@VERSION@", env!("CARGO_PKG_VERSION"));
    std::fs::write(prefix.join("lib/pkgconfig/sieve.pc"), pc).expect("writing sieve.pc");

    let mut query = Command::new("pkg-config");
    query
        .args(["--static", "--cflags", "--libs", "sieve"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"));
    let flags = String::from_utf8(run(query, "pkg-config sieve").stdout).expect("UTF-8 flags");
    let exe = prefix.join("consumer");
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(root().join("tests/cmake_consumer/main.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(&exe);
    run(cc, "cc with pkg-config flags");
    let output = run(Command::new(&exe), "pkg-config consumer");
    check_consumer_output(&output);
}
