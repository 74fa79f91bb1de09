//! Pretty-printed MaskBench: every valid instance of `$SIEVE_SHARED/data/maskbench` (default
//! `<workspace>/../shared`), serialized as `json.dumps(data, indent=2)`, is accepted under
//! the default `JsonOptions` (the bounded pretty-printing whitespace policy), fed byte by
//! byte (`sieve_bench::maskbench` with `Feed::Bytes` and `MaskbenchConfig::pretty`).
//!
//! Every file runs (about 30 s in release on 2 shared cores); `SIEVE_MASKBENCH_SAMPLE=N` runs
//! the first N in sample order. `sieve maskbench --pretty` runs the whole set through a real
//! tokenizer in `.ci/run`.

use std::path::PathBuf;

use sieve_bench::maskbench::{self, FailureKind, Feed, MaskbenchConfig};

fn shared_dir() -> PathBuf {
    match std::env::var_os("SIEVE_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

#[test]
fn pretty_printed_valid_instances_are_accepted() {
    let dir = shared_dir().join("data/maskbench");
    if !dir.is_dir() {
        sieve_tests::skip_missing_data(&format!("MaskBench data not found at {}", dir.display()));
        return;
    }
    let limit = std::env::var("SIEVE_MASKBENCH_SAMPLE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let files = maskbench::list_files(&[dir], limit).unwrap();
    assert!(!files.is_empty(), "no MaskBench files selected");
    let cfg = MaskbenchConfig {
        pretty: true,
        timeout: None,
        ..MaskbenchConfig::default()
    };
    let report = maskbench::run(&Feed::bytes(), &files, &cfg);
    let s = report.summary_json();
    eprintln!(
        "pretty (indent=2), {} files: valid accepted {}/{}, invalid rejected {}/{}",
        files.len(),
        s["valid_accepted"],
        s["valid_total"],
        s["invalid_rejected"],
        s["invalid_total"]
    );
    let rejected: Vec<String> = report
        .files
        .iter()
        .flat_map(|f| &f.failures)
        .filter(|f| f.kind == FailureKind::ValidRejected)
        .map(|f| format!("{}: {}", f.file, f.detail))
        .collect();
    assert!(
        rejected.is_empty(),
        "{} pretty-printed valid instances rejected:\n{}",
        rejected.len(),
        rejected.join("\n")
    );
    let total: usize = report.files.iter().map(|f| f.valid_total()).sum();
    let accepted: usize = report.files.iter().map(|f| f.valid_accepted()).sum();
    // Instances of schemas that do not compile (or hit a limit) are not rejections of the
    // whitespace policy; they are the same with one-line instances (`sieve maskbench`). Over
    // the whole folder (the default sample) that is 4 valid instances today (2026-11-28),
    // exactly: more is a regression, fewer means this number is to be lowered.
    if limit == 0 {
        assert_eq!(
            total - accepted,
            4,
            "valid accepted {accepted}/{total}: 4 not accepted expected (instances of schemas \
             that do not compile)"
        );
    } else {
        eprintln!(
            "valid accepted {accepted}/{total} over a sample of {}",
            files.len()
        );
    }
}
