//! The C++ API and the build glue, end to end. Every program built here runs under
//! `valgrind --error-exitcode=1 --leak-check=full` when valgrind is installed (a `SKIP:` line
//! says so when it is not):
//! - `cxx_demo`: the C++ example `ffi-cxx/examples/demo.cc` (built by `cxx_build` into the
//!   `demo` example, `cargo build -p sieve-ffi-cxx --example demo`); checks what it printed
//!   (its batch on the library's pool ends with `shutdown_threads`, so valgrind sees no
//!   thread left).
//! - `cmake_find_package`: `tests/cmake_consumer/` with `find_package(sieve 0.1)` against the
//!   source tree's `ffi-c/cmake/sieveConfig.cmake` and the `libsieve.a` built here; a request
//!   for 0.2 must fail (`sieveConfigVersion.cmake`).
//! - `cmake_add_subdirectory`: the same consumer with `add_subdirectory(ffi-c)`, which drives
//!   cargo itself (`ffi-c/CMakeLists.txt`).
//! - `cmake_install_tree`: `ffi-c/` configured standalone, built and installed to a prefix;
//!   the consumer finds the installed package, and `pkg-config` the installed `sieve.pc`.
//! - `pkg_config`: fills `ffi-c/sieve.pc.in` for a prefix laid out from the same build and
//!   compiles the consumer's `main.c` with the flags `pkg-config` gives.
//!
//! Nested cargo builds use this test's profile and target directory (as `c_api.rs` does).
//! A missing `cmake`, `c++`, `cc` or `pkg-config` prints `SKIP: <reason>`.

use std::path::Path;
use std::process::{Command, Output};

use sieve_tests::native::{
    RELEASE, cargo, have, libsieve, profile_dir, root, run_under_valgrind, target_dir,
};

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

fn check_consumer_stdout(stdout: &str) {
    assert!(
        stdout.contains(concat!("version: sieve ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
    assert!(stdout.contains("mask: 0x7"), "{stdout}");
    // `#include <llguidance.h>` resolved and the compat layer linked.
    assert!(stdout.contains("llguidance.h: ff_tokens_ok 0"), "{stdout}");
}

#[test]
fn cxx_demo() {
    if !have("c++") {
        eprintln!("SKIP: c++ not installed: the C++ demo was not built or run");
        return;
    }
    run(
        cargo(&[
            "build",
            "--quiet",
            "-p",
            "sieve-ffi-cxx",
            "--example",
            "demo",
        ]),
        "cargo build -p sieve-ffi-cxx --example demo",
    );
    let exe = profile_dir().join("examples/demo");
    let stdout = run_under_valgrind("the C++ demo", &exe, &[] as &[&str]);
    for want in [
        concat!("version: sieve ", env!("CARGO_PKG_VERSION")),
        "generated: hello world!",
        "stopped: 1",
        "after rollback: stopped=0 accepting=1",
        "rejected: TokenRejected (sticky: TokenRejected)",
        "after reset: Ok",
        "bad grammar: GrammarError",
        "stop: shown=[hi ] stopped=1",
        "stop branch: shown=[Ex] stopped=1",
        "bad stop regex: GrammarError",
        "budget: shortest=[hi sieve!] tokens=3 text=[hello world!]",
        "structural: accepting=1",
        "compile cache: hits=1 misses=1",
        "gate: unconstrained before=1 after=0",
        "stop strings: shown=[hi ] stopped=1",
        "gbnf: accepting=1 left-recursive=1",
        " batch and sparse ok (",
        "batch: 5 matchers on 1 and 3 threads ok",
        "demo ok",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in:\n{stdout}");
    }
}

/// Whether cmake and cc are there; prints the SKIP line if not.
fn have_cmake(test: &str) -> bool {
    for tool in ["cmake", "cc"] {
        if !have(tool) {
            eprintln!("SKIP: {tool} not installed (apt-get install -y cmake gcc): {test} not run");
            return false;
        }
    }
    true
}

/// `cmake -S <consumer> -B <build> <args>`: the configure log, or the failure's output.
fn configure_consumer(build: &Path, args: &[String]) -> Result<String, String> {
    let _ = std::fs::remove_dir_all(build);
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(root().join("tests/cmake_consumer"))
        .arg("-B")
        .arg(build)
        .args(args);
    let output = configure.output().expect("running cmake");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if output.status.success() {
        Ok(log)
    } else {
        Err(log)
    }
}

/// Builds the configured consumer and runs it under valgrind.
fn build_and_run_consumer(build: &Path, what: &str) {
    let mut build_cmd = Command::new("cmake");
    build_cmd.arg("--build").arg(build);
    run(build_cmd, &format!("cmake --build ({what})"));
    let stdout = run_under_valgrind(what, &build.join("sieve_consumer"), &[] as &[&str]);
    check_consumer_stdout(&stdout);
}

/// The cache variables that make `ffi-c/CMakeLists.txt` build with this test's cargo, target
/// directory and profile, from this workspace.
fn cargo_cache_args() -> Vec<String> {
    let mut args = vec![
        format!("-DSIEVE_WORKSPACE_DIR={}", root().display()),
        format!("-DSIEVE_CARGO_TARGET_DIR={}", target_dir().display()),
        format!(
            "-DSIEVE_CARGO_PROFILE={}",
            if RELEASE { "release" } else { "debug" }
        ),
    ];
    if let Ok(cargo) = std::env::var("CARGO") {
        args.push(format!("-DSIEVE_CARGO={cargo}"));
    }
    args
}

#[test]
fn cmake_find_package() {
    if !have_cmake("cmake_find_package") {
        return;
    }
    let lib = libsieve();
    let prefix_path = format!(
        "-DCMAKE_PREFIX_PATH={};{}",
        root().join("ffi-c").display(),
        lib.parent().expect("lib has a folder").display()
    );
    let build = target_dir().join("cmake-consumer");
    let log = configure_consumer(&build, std::slice::from_ref(&prefix_path))
        .unwrap_or_else(|log| panic!("cmake configure (find_package) failed:\n{log}"));
    let found = format!("Found sieve: {}", lib.display());
    assert!(
        log.contains(&found),
        "find_package(sieve) picked another library:\n{log}"
    );
    let version = format!("found suitable version \"{}\"", env!("CARGO_PKG_VERSION"));
    assert!(log.contains(&version), "no version check in:\n{log}");
    build_and_run_consumer(&build, "the CMake consumer (find_package)");

    // A newer minor version than the package is refused (before 1.0 a minor is breaking).
    let too_new = configure_consumer(
        &target_dir().join("cmake-consumer-too-new"),
        &[prefix_path, "-DSIEVE_MIN_VERSION=0.99".to_owned()],
    );
    let log = too_new.expect_err("find_package(sieve 0.99) must fail");
    assert!(log.contains("requested version \"0.99\""), "{log}");
}

#[test]
fn cmake_add_subdirectory() {
    if !have_cmake("cmake_add_subdirectory") {
        return;
    }
    // The library may already be built; add_subdirectory's cargo step is then a no-op.
    libsieve();
    let build = target_dir().join("cmake-consumer-subdir");
    let mut args = vec![
        "-DSIEVE_VIA=add_subdirectory".to_owned(),
        format!("-DSIEVE_SOURCE_DIR={}", root().join("ffi-c").display()),
    ];
    args.extend(cargo_cache_args());
    let log = configure_consumer(&build, &args)
        .unwrap_or_else(|log| panic!("cmake configure (add_subdirectory) failed:\n{log}"));
    let want = format!(
        "sieve {} via add_subdirectory: {}",
        env!("CARGO_PKG_VERSION"),
        libsieve().display()
    );
    assert!(log.contains(&want), "missing {want:?} in:\n{log}");
    build_and_run_consumer(&build, "the CMake consumer (add_subdirectory)");
}

#[test]
fn cmake_install_tree() {
    if !have_cmake("cmake_install_tree") {
        return;
    }
    libsieve();
    let build = target_dir().join("cmake-ffi-c");
    let prefix = target_dir().join("cmake-install-prefix");
    for dir in [&build, &prefix] {
        let _ = std::fs::remove_dir_all(dir);
    }
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(root().join("ffi-c"))
        .arg("-B")
        .arg(&build)
        .args(cargo_cache_args());
    run(configure, "cmake configure (ffi-c standalone)");
    let mut build_cmd = Command::new("cmake");
    build_cmd.arg("--build").arg(&build);
    run(build_cmd, "cmake --build (ffi-c standalone)");
    let mut install = Command::new("cmake");
    install
        .arg("--install")
        .arg(&build)
        .arg("--prefix")
        .arg(&prefix);
    run(install, "cmake --install");
    for file in [
        "include/sieve.h",
        "include/llguidance.h",
        "include/llguidance_compat.h",
        "lib/libsieve.a",
        "lib/cmake/sieve/sieveConfig.cmake",
        "lib/cmake/sieve/sieveConfigVersion.cmake",
        "lib/pkgconfig/sieve.pc",
    ] {
        assert!(prefix.join(file).exists(), "{file} not installed");
    }

    let consumer = target_dir().join("cmake-consumer-installed");
    let log = configure_consumer(
        &consumer,
        &[format!("-DCMAKE_PREFIX_PATH={}", prefix.display())],
    )
    .unwrap_or_else(|log| panic!("cmake configure (installed package) failed:\n{log}"));
    let found = format!("Found sieve: {}", prefix.join("lib/libsieve.a").display());
    assert!(
        log.contains(&found),
        "the installed package was not used:\n{log}"
    );
    build_and_run_consumer(&consumer, "the CMake consumer (installed package)");

    // The installed sieve.pc finds its prefix from its own folder.
    if have("pkg-config") {
        let mut query = Command::new("pkg-config");
        query
            .args(["--static", "--cflags", "--libs", "sieve"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"));
        let flags =
            String::from_utf8(run(query, "pkg-config (installed)").stdout).expect("UTF-8 flags");
        compile_and_run_with_flags(&flags, &prefix.join("consumer-pc"), "installed sieve.pc");
    } else {
        eprintln!("SKIP: pkg-config not installed: the installed sieve.pc was not tried");
    }
}

/// The version in `ffi-c/cmake/sieveConfigVersion.cmake` is the workspace's.
#[test]
fn cmake_version_file_matches_cargo() {
    let path = root().join("ffi-c/cmake/sieveConfigVersion.cmake");
    let text = std::fs::read_to_string(&path).expect("reading sieveConfigVersion.cmake");
    let want = format!("set(PACKAGE_VERSION \"{}\")", env!("CARGO_PKG_VERSION"));
    assert!(
        text.contains(&want),
        "{} does not say {want}: update it with the workspace version",
        path.display()
    );
}

/// Compiles the consumer's `main.c` with pkg-config `flags` and runs it under valgrind.
fn compile_and_run_with_flags(flags: &str, exe: &Path, what: &str) {
    let mut cc = Command::new("cc");
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror"])
        .arg(root().join("tests/cmake_consumer/main.c"))
        .args(flags.split_whitespace())
        .arg("-o")
        .arg(exe);
    run(cc, &format!("cc with pkg-config flags ({what})"));
    let stdout = run_under_valgrind(&format!("the consumer via {what}"), exe, &[] as &[&str]);
    check_consumer_stdout(&stdout);
}

#[test]
fn pkg_config() {
    if !have("pkg-config") || !have("cc") {
        eprintln!("SKIP: pkg-config or cc not installed");
        return;
    }
    let lib = libsieve();
    // A prefix laid out as an install would be: the headers under include/, lib/libsieve.a.
    let prefix = target_dir().join("pkg-config-prefix");
    let _ = std::fs::remove_dir_all(&prefix);
    for dir in ["include", "lib/pkgconfig"] {
        std::fs::create_dir_all(prefix.join(dir)).expect("creating the prefix");
    }
    for header in ["sieve.h", "llguidance.h", "llguidance_compat.h"] {
        std::fs::copy(
            root().join("ffi-c/include").join(header),
            prefix.join("include").join(header),
        )
        .unwrap_or_else(|e| panic!("copying {header}: {e}"));
    }
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
    compile_and_run_with_flags(&flags, &prefix.join("consumer"), "sieve.pc.in");
}
