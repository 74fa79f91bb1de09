//! Compiles and runs the C programs in `tests/c/` against `libsieve.a` (the `sieve-ffi-c`
//! staticlib): `cc -std=c11 -Wall -Wextra -Werror`, then each program under
//! `valgrind --error-exitcode=1 --leak-check=full` when valgrind is installed.
//!
//! The library is built first with `cargo build -p sieve-ffi-c` (same profile as this test,
//! same target directory): a staticlib is not produced for a dev-dependency. In release
//! builds `api_e2e` loads the real tokenizer `../shared/tokenizers/llama3.json` when present;
//! otherwise (and in debug builds, too slow under valgrind) the programs use a small byte
//! table built in C.

use std::path::{Path, PathBuf};
use std::process::Command;

use sieve_tests::native::{RELEASE, have, libsieve as lib, root, run_under_valgrind, target_dir};

fn compile(name: &str, lib: &Path) -> PathBuf {
    let out_dir = target_dir().join("c-tests");
    std::fs::create_dir_all(&out_dir).expect("creating the C test output dir");
    let exe = out_dir.join(name);
    let src = root().join("tests/c").join(format!("{name}.c"));
    let output = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-O1", "-I"])
        .arg(root().join("ffi-c/include"))
        .arg("-I")
        .arg(root().join("tests/c"))
        .arg(&src)
        .arg(lib)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(&exe)
        .output()
        .expect("running cc");
    assert!(
        output.status.success(),
        "cc {} failed:\n{}",
        src.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    exe
}

fn tokenizer_json() -> Option<PathBuf> {
    if !RELEASE {
        // An unoptimized library under valgrind takes minutes on a 128k vocabulary.
        println!(
            "note: debug build: the C tests use their small byte table (--release for llama3)"
        );
        return None;
    }
    let path = root().join("../shared/tokenizers/llama3.json");
    if path.exists() {
        Some(path)
    } else {
        println!(
            "note: {} not found; the C tests use their small byte table",
            path.display()
        );
        None
    }
}

fn c_test(name: &str, with_tokenizer: bool) {
    if !have("cc") {
        eprintln!("SKIP: no C compiler (cc) installed; {name}.c not run");
        return;
    }
    let exe = compile(name, lib());
    let tok = if with_tokenizer {
        tokenizer_json()
    } else {
        None
    };
    let args: Vec<&Path> = tok.iter().map(PathBuf::as_path).collect();
    run_under_valgrind(&format!("{name}.c"), &exe, &args);
}

#[test]
fn c_api_end_to_end() {
    c_test("api_e2e", true);
}

#[test]
fn c_budget_mode() {
    c_test("budget", false);
}

#[test]
fn c_threads_and_batches() {
    c_test("threads", false);
}

#[test]
fn c_structural_tags() {
    c_test("structural", false);
}

#[test]
fn c_gates_and_stop_strings() {
    c_test("gate", false);
}

/// `sieve_matcher_fill_draft_tree` against a sequential reference on random trees.
#[test]
fn c_draft_tree() {
    c_test("draft_tree", false);
}

#[test]
fn c_bad_input() {
    c_test("bad_input", false);
}

/// The sparse and batch mask kernels (`sieve_apply_mask_sparse_f32`,
/// `sieve_apply_mask_f32_batch`) on masks from `sieve_compute_masks`, and their bad arguments.
#[test]
fn c_kernels_sparse_and_batch() {
    c_test("kernels", false);
}

/// LLGuidance's own declarations (struct layouts, the 46 function types, the decode flags)
/// compiled against `ffi-c/include/llguidance.h` (`tests/c/compat_abi.c`): a drift is a
/// build failure. The program then calls a few functions through those types.
#[test]
fn c_compat_abi_matches_llguidance() {
    if !have("cc") {
        eprintln!("SKIP: no C compiler (cc) installed; compat_abi.c not run");
        return;
    }
    let exe = compile("compat_abi", lib());
    let stdout = run_under_valgrind("compat_abi.c", &exe, &[] as &[&Path]);
    assert!(
        stdout.contains("46 functions with LLGuidance's types; mask 0x4"),
        "{stdout}"
    );
}

/// llama.cpp's llguidance sampler call sequence against the LLGuidance-compatible layer
/// (`ffi-c/include/llguidance_compat.h`).
#[test]
fn c_compat_llama_cpp() {
    c_test("compat_llama_cpp", false);
}

/// onnxruntime-genai's constraint processor call sequence (tokenizer.json + tokenize
/// callback, `llg_compute_mask` / `llg_commit_token`) against the compatible layer.
#[test]
fn c_compat_ort_genai() {
    c_test("compat_ort_genai", false);
}

/// LiteRT-LM's constraint provider: functional states (clone + commit), its tool-call
/// grammars (`<escape>/(.|\n)*/<escape>`, `%ignore`, empty alternatives) and its text-only
/// grammar (`/(.|\n)*/ & ~FORBIDDEN_CALL`).
#[test]
fn c_compat_litert_lm() {
    c_test("compat_litert_lm", false);
}

/// A serving loop's batch and stop calls against the compatible layer:
/// `llg_par_compute_mask` (synchronous, and with a completion callback on a library thread)
/// checked against `llg_compute_mask`, malformed batches, `LlgParserLimits` mapped onto
/// sieve's budgets, the stop controller, and decoding / marker tokenization.
#[test]
fn c_compat_batch_and_stop() {
    c_test("compat_batch_stop", false);
}

/// GBNF through the C ABI (`sieve_grammar_new_gbnf` and its options, the GBNF kind), and
/// error locations read from the error's fields (line and column, JSON pointer).
#[test]
fn c_gbnf_and_error_locations() {
    c_test("gbnf", false);
}

/// GBNF through the LLGuidance-compatible layer in llama.cpp's call order: type "lark"
/// with GBNF text, and the explicit "gbnf" / "ebnf" / "grammar" types.
#[test]
fn c_compat_gbnf() {
    c_test("compat_gbnf", false);
}
