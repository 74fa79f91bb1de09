//! Plumbing for the tests that build and run native programs (C, C++, CMake): where the
//! workspace and its target directory are, which tools exist, and `libsieve.a` built once
//! in the test's own profile and target directory (a staticlib is not produced for a
//! dev-dependency, so the tests build it with cargo).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Whether this test binary is a release build (nested builds use the same profile).
pub const RELEASE: bool = !cfg!(debug_assertions);

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// The cargo target directory (`CARGO_TARGET_DIR`, relative to the root, or `target/`).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        }
        None => root().join("target"),
    }
}

/// `target/release` or `target/debug`, matching this test's profile.
pub fn profile_dir() -> PathBuf {
    target_dir().join(if RELEASE { "release" } else { "debug" })
}

/// Whether `tool --version` runs.
pub fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A `cargo` command in the workspace root, with this test's target dir and profile.
pub fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.current_dir(root())
        .args(args)
        .env("CARGO_TARGET_DIR", target_dir());
    if RELEASE {
        cmd.arg("--release");
    }
    cmd
}

/// Builds `libsieve.a` once per test binary (a no-op when it is up to date) and returns
/// its path.
pub fn libsieve() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let status = cargo(&["build", "--quiet", "-p", "sieve-ffi-c"])
            .status()
            .expect("running cargo build -p sieve-ffi-c");
        assert!(status.success(), "cargo build -p sieve-ffi-c failed");
        let lib = profile_dir().join("libsieve.a");
        assert!(lib.exists(), "{} missing after the build", lib.display());
        lib
    })
}

/// The valgrind flags every native test program runs under: any error or definite, indirect
/// or possibly lost block fails the run (a handle a host keeps until exit points at the start
/// of its allocation, so it is reachable). `tests/valgrind.supp` holds the suppressions (none
/// today; see the file).
pub const VALGRIND_ARGS: &[&str] = &[
    "--error-exitcode=1",
    "--leak-check=full",
    "--errors-for-leak-kinds=definite,indirect,possible",
    concat!(
        "--suppressions=",
        env!("CARGO_MANIFEST_DIR"),
        "/valgrind.supp"
    ),
    "--quiet",
];

/// Runs `exe args` under valgrind ([`VALGRIND_ARGS`]) when valgrind is installed; without it
/// prints a `SKIP:` line naming `what` and runs the program directly. Panics unless the
/// program exits with 0 (valgrind turns an error or a leak into exit code 1); returns its
/// stdout (also printed).
pub fn run_under_valgrind<S: AsRef<OsStr>>(what: &str, exe: &Path, args: &[S]) -> String {
    let valgrind = have("valgrind");
    let mut cmd = if valgrind {
        let mut c = Command::new("valgrind");
        c.args(VALGRIND_ARGS).arg(exe);
        c
    } else {
        eprintln!("SKIP: valgrind not installed: {what} ran without it (no memory checks)");
        Command::new(exe)
    };
    cmd.args(args);
    let output = cmd
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", exe.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "{what} ({}) failed ({}){}:\n{stdout}\n{stderr}",
        exe.display(),
        output.status,
        if valgrind { " under valgrind" } else { "" },
    );
    stdout
}
