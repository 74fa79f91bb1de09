//! `sieve demo` and `sieve mask` logic on the embedded cl100k_base vocabulary (no files
//! needed), plus the binary's handling of bad input.

use std::process::Command;

use sieve_bench::demo::{self, DemoConfig};
use sieve_bench::mask_cmd::{self, GrammarSource, MaskConfig};
use sieve_bench::rng::SplitMix64;
use sieve_bench::tokenizer::LoadedTokenizer;
use sieve_core::grammar::GrammarSyntax;

fn cl100k() -> LoadedTokenizer {
    LoadedTokenizer::load("cl100k_base").unwrap()
}

fn json() -> GrammarSource<'static> {
    GrammarSource::new(GrammarSyntax::Lark, demo::JSON_LARK_NAME, demo::JSON_LARK)
}

#[test]
fn demo_output_is_valid_json() {
    let tok = cl100k();
    for seed in 0..4 {
        let cfg = DemoConfig {
            max_tokens: 12,
            seed,
            ..DemoConfig::default()
        };
        let r = demo::run(&tok, demo::JSON_LARK_NAME, demo::JSON_LARK, &cfg).unwrap();
        let text = String::from_utf8_lossy(&r.text);
        assert!(r.valid, "seed {seed}: {text}");
        assert!(r.ended_by_eos, "seed {seed}: {text}");
        assert_eq!(r.mask_times.len(), r.tokens.len());
        assert!(r.first_mask >= r.compile);
        let mut printed = Vec::new();
        r.print(&tok, &mut printed).unwrap();
        let printed = String::from_utf8(printed).unwrap();
        assert!(printed.contains("\nvalid: "), "{printed}");
        assert!(printed.contains("time to first mask"), "{printed}");
        // Same seed, same output.
        let again = demo::run(&tok, demo::JSON_LARK_NAME, demo::JSON_LARK, &cfg).unwrap();
        assert_eq!(again.tokens, r.tokens);
    }
}

#[test]
fn demo_reports_grammar_errors_with_the_file_name() {
    let tok = cl100k();
    let err = demo::run(
        &tok,
        "bad.lark",
        "start: \"a\" syntax error (",
        &DemoConfig::default(),
    )
    .unwrap_err();
    assert!(format!("{err:#}").starts_with("bad.lark:"), "{err:#}");
}

#[test]
fn wind_down_prefers_eos_then_closers() {
    let tok = cl100k();
    let vocab = &tok.vocab;
    let id = |s: &str| {
        let ids = tok.encode(s);
        assert_eq!(ids.len(), 1, "{s:?}");
        ids[0]
    };
    let (quote, brace, comma, eos) = (id("\""), id("}"), id(","), 100_257);
    let mut rng = SplitMix64::new(0);
    let mut allowed = vec![quote, brace, comma, eos];
    allowed.sort_unstable();
    assert_eq!(demo::choose(vocab, &allowed, true, &mut rng), Some(eos));
    allowed.retain(|&t| t != eos);
    assert_eq!(demo::choose(vocab, &allowed, true, &mut rng), Some(quote));
    assert_eq!(
        demo::choose(vocab, &[comma, brace], true, &mut rng),
        Some(brace)
    );
    // Free phase: never EOS while content is allowed; EOS rather than whitespace.
    for _ in 0..20 {
        let t = demo::choose(vocab, &[quote, eos], false, &mut rng);
        assert_eq!(t, Some(quote));
    }
    let space = id(" ");
    assert_eq!(
        demo::choose(vocab, &[space, eos], false, &mut rng),
        Some(eos)
    );
    assert_eq!(demo::choose(vocab, &[], true, &mut rng), None);
}

#[test]
fn mask_after_prefix() {
    let tok = cl100k();
    let cfg = |prefix: &str| MaskConfig {
        prefix: prefix.to_owned(),
        sample: 5,
        ..MaskConfig::default()
    };
    let open = mask_cmd::run(&tok, &json(), &cfg(r#"{"a": [1, "#)).unwrap();
    assert!(!open.eos_allowed);
    assert!(!open.allowed.is_empty());
    assert_eq!(open.sample.len(), 5);
    assert!(open.sample.iter().all(|t| open.allowed.contains(t)));

    let done = mask_cmd::run(&tok, &json(), &cfg(r#"{"a": 1}"#)).unwrap();
    assert!(done.eos_allowed);
    let mut printed = Vec::new();
    done.print(&tok, &mut printed).unwrap();
    assert!(
        String::from_utf8(printed)
            .unwrap()
            .contains("EOS allowed: yes")
    );

    let err = mask_cmd::run(&tok, &json(), &cfg(r#"{"a": 1}}"#)).unwrap_err();
    assert!(format!("{err:#}").contains("rejected"), "{err:#}");

    let digits = mask_cmd::run(&tok, &GrammarSource::regex("[0-9]+"), &cfg("12")).unwrap();
    assert!(digits.eos_allowed);
}

#[test]
fn binary_rejects_bad_input_without_panicking() {
    let sieve = env!("CARGO_BIN_EXE_sieve");
    let out = Command::new(sieve)
        .args(["mask", "--regex", "a", "--tokenizer", "/nonexistent.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent.json"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    let out = Command::new(sieve).args(["mask"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The committed MaskBench sample.
const MASKBENCH_SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/maskbench");

#[cfg(not(feature = "pprof"))]
#[test]
fn flamegraph_needs_the_pprof_feature() {
    let svg = std::env::temp_dir().join("sieve-cli-test-no-pprof.svg");
    let out = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(["maskbench", "--tokenizer", "cl100k_base", "--flamegraph"])
        .arg(&svg)
        .arg(MASKBENCH_SAMPLE)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--features pprof"), "{stderr}");
}

#[cfg(feature = "pprof")]
#[test]
fn flamegraph_is_an_svg() {
    let svg = std::env::temp_dir().join(format!("sieve-cli-test-{}.svg", std::process::id()));
    // Ten schemas run long enough for a few hundred samples.
    let out = Command::new(env!("CARGO_BIN_EXE_sieve"))
        .args(["maskbench", "--tokenizer", "cl100k_base", "--limit", "10"])
        .arg("--flamegraph")
        .arg(&svg)
        .arg(MASKBENCH_SAMPLE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let text = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_file(&svg).unwrap();
    assert!(
        text.starts_with("<?xml"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(text.trim_end().ends_with("</svg>"));
}

/// A file under the temp dir, unique to this process and `name`.
fn temp_file(name: &str, text: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("sieve-cli-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn mask_with_a_json_schema() {
    let tok = cl100k();
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}"#;
    let source = |strict| {
        let mut s = GrammarSource::new(GrammarSyntax::JsonSchema, "s.json", schema);
        s.options.json.strict = strict;
        s
    };
    let cfg = |prefix: &str| MaskConfig {
        prefix: prefix.to_owned(),
        sample: 3,
        ..MaskConfig::default()
    };
    for strict in [false, true] {
        let done = mask_cmd::run(&tok, &source(strict), &cfg(r#"{"n": 12}"#)).unwrap();
        assert!(done.eos_allowed, "strict {strict}");
        let open = mask_cmd::run(&tok, &source(strict), &cfg(r#"{"n": "#)).unwrap();
        assert!(!open.eos_allowed);
        // A digit may follow, a quote may not (n is an integer).
        assert!(open.allowed.contains(&tok.encode("7")[0]));
        assert!(!open.allowed.contains(&tok.encode("\"")[0]));
        let err = mask_cmd::run(&tok, &source(strict), &cfg(r#"{"m"#)).unwrap_err();
        assert!(format!("{err:#}").contains("rejected"), "{err:#}");
    }
}

#[test]
fn binary_mask_schema_strict_and_hyphen_values() {
    let sieve = env!("CARGO_BIN_EXE_sieve");
    let run = |args: &[&str]| {
        let out = Command::new(sieve).args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code(), stdout, stderr)
    };
    // A value starting with `-` is a value, for --regex and for --prefix.
    let (code, stdout, stderr) = run(&[
        "mask",
        "--tokenizer",
        "cl100k_base",
        "--regex",
        "-?[0-9]+",
        "--prefix",
        "-12",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("EOS allowed: yes"), "{stdout}");

    let schema = temp_file(
        "int.json",
        r#"{"type":"array","items":{"type":"integer","minimum":0},"maxItems":2}"#,
    );
    let schema = schema.to_str().unwrap();
    for strict in [&[][..], &["--strict"][..]] {
        let mut args = vec!["mask", "--tokenizer", "cl100k_base", "--schema", schema];
        args.extend_from_slice(strict);
        args.extend_from_slice(&["--prefix", "[1, 2"]);
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, Some(0), "{strict:?}: {stderr}");
        assert!(stdout.contains("EOS allowed: no"), "{stdout}");
        args.pop();
        args.push("[1, 2]");
        let (code, stdout, stderr) = run(&args);
        assert_eq!(code, Some(0), "{strict:?}: {stderr}");
        assert!(stdout.contains("EOS allowed: yes"), "{stdout}");
        args.pop();
        args.push("[1, 2, 3");
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(2), "maxItems 2: a third item is rejected");
        assert!(stderr.contains("rejected"), "{stderr}");
    }
    // --strict needs --schema; only one source at a time; a bad schema is an error, not a panic.
    let (code, _, _) = run(&["mask", "--regex", "a", "--strict"]);
    assert_eq!(code, Some(2));
    let (code, _, _) = run(&["mask", "--regex", "a", "--schema", schema]);
    assert_eq!(code, Some(2));
    let bad = temp_file("bad.json", "{not json");
    let (code, _, stderr) = run(&["mask", "--tokenizer", "cl100k_base", "--schema"]
        .into_iter()
        .chain([bad.to_str().unwrap()])
        .collect::<Vec<_>>());
    assert_eq!(code, Some(2));
    assert!(stderr.contains("invalid JSON"), "{stderr}");
    let _ = std::fs::remove_file(schema);
    let _ = std::fs::remove_file(&bad);
}

/// `--syntax NAME` reads `--grammar FILE` in any syntax; `--gbnf FILE` is GBNF.
#[test]
fn binary_mask_syntax_and_gbnf() {
    let sieve = env!("CARGO_BIN_EXE_sieve");
    let run = |args: &[&str]| {
        let out = Command::new(sieve).args(args).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (out.status.code(), stdout, stderr)
    };
    let re = temp_file("digits.re", "[0-9]+");
    let re = re.to_str().unwrap();
    let mask = |extra: &[&str]| {
        let mut args = vec!["mask", "--tokenizer", "cl100k_base"];
        args.extend_from_slice(extra);
        run(&args)
    };
    let (code, stdout, stderr) = mask(&["--grammar", re, "--syntax", "regex", "--prefix", "12"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("EOS allowed: yes"), "{stdout}");
    let (code, _, stderr) = mask(&["--grammar", re, "--syntax", "cobol"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("unknown --syntax"), "{stderr}");
    let (code, _, stderr) = mask(&["--regex", "a", "--syntax", "regex"]);
    assert_eq!(code, Some(2), "{stderr}");

    // A GBNF syntax error names the file, line and column.
    let bad = temp_file("bad.gbnf", "root ::= \"a\" x\nx ::= \"b\" @\n");
    let bad = bad.to_str().unwrap();
    let (code, _, bad_err) = mask(&["--gbnf", bad]);
    assert_eq!(code, Some(2));
    assert!(bad_err.contains(bad), "{bad_err}");

    let gbnf = temp_file("digits.gbnf", "root ::= [0-9]+ \"!\"\n");
    let gbnf = gbnf.to_str().unwrap();
    assert!(bad_err.contains(&format!("{bad}:2:")), "{bad_err}");
    let (code, stdout, stderr) = mask(&["--gbnf", gbnf, "--prefix", "12!"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("EOS allowed: yes"), "{stdout}");
    let (code, stdout, stderr) = mask(&["--grammar", gbnf, "--syntax", "gbnf", "--prefix", "1"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("EOS allowed: no"), "{stdout}");
    // Another start rule.
    let (code, stdout, stderr) = mask(&["--gbnf", gbnf, "--gbnf-root", "nope"]);
    assert_eq!(code, Some(2), "{stdout}");
    assert!(stderr.contains("nope"), "{stderr}");
    for f in [re, bad, gbnf] {
        let _ = std::fs::remove_file(f);
    }
}

/// `sieve generate` rejects bad input before loading (or fetching) any model.
#[cfg(feature = "generate")]
#[test]
fn generate_bad_input_is_an_error_not_a_panic() {
    let sieve = env!("CARGO_BIN_EXE_sieve");
    let run = |args: &[&str]| {
        // An empty cache directory: nothing may be fetched before the input is checked.
        let out = Command::new(sieve)
            .args(args)
            .env("SIEVE_CACHE_DIR", "/nonexistent/sieve-cache")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert!(!stderr.contains("fetching"), "{stderr}");
        (out.status.code(), stderr)
    };
    let (code, stderr) = run(&["generate"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--schema"), "{stderr}");
    let (code, _) = run(&["generate", "--regex", "a", "--schema", "x.json"]);
    assert_eq!(code, Some(2));
    let (code, stderr) = run(&["generate", "--schema", "/nonexistent/s.json"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("/nonexistent/s.json"), "{stderr}");
    let (code, stderr) = run(&["generate", "--regex", "a", "--top-p", "2"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--top-p"), "{stderr}");
    let (code, stderr) = run(&["generate", "--regex", "a", "--model", "/nonexistent.gguf"]);
    assert_eq!(code, Some(2));
    assert!(stderr.contains("/nonexistent.gguf"), "{stderr}");
}
