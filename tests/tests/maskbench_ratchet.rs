//! Ratchet over the vendored MaskBench sample (`tests/data/maskbench/`, see its
//! `SOURCE.md`): every schema is compiled in default and in strict mode, and every test
//! instance, serialized as Python's `json.dumps`, is fed byte by byte
//! (`sieve_bench::maskbench` with `Feed::Bytes`). The outcomes are compared **per case**
//! (each compile and each test instance, `sieve_bench::ratchet`) with
//! `tests/data/maskbench_expected.json`: a case that passed and now fails is a regression; one
//! that now passes asks for the file to be updated with
//! `SIEVE_BLESS=1 cargo test --release -p sieve-tests --test maskbench_ratchet`, which
//! refuses to write regressions unless each is named in `SIEVE_ACCEPT_REGRESSIONS=<file>`.
//!
//! Byte level keeps the run deterministic and fast (no token masks: their cost is measured by
//! `sieve maskbench`, and masks are checked against consumption by the oracle tests).

use std::path::{Path, PathBuf};

use sieve_bench::maskbench::{self, Feed, MaskbenchConfig};
use sieve_bench::ratchet::{self, Outcomes};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

#[test]
fn maskbench_sample() {
    let files = maskbench::list_files(&[data_dir().join("maskbench")], 0).unwrap();
    assert!(
        files.len() >= 300,
        "vendored sample missing: {} files",
        files.len()
    );
    let feed = Feed::bytes();
    let mut outcomes = Outcomes::new();
    for strict in [false, true] {
        let cfg = MaskbenchConfig {
            strict,
            timeout: None,
            ..MaskbenchConfig::default()
        };
        let report = maskbench::run(&feed, &files, &cfg);
        let mode = if strict { "strict" } else { "default" };
        let s = report.summary_json();
        eprintln!(
            "{mode}: {}/{} compiled; valid accepted {}/{}; invalid rejected {}/{} \
             (accepted: {} explained by a superset entry, {} unexplained)",
            s["compiled"],
            s["schemas"],
            s["valid_accepted"],
            s["valid_total"],
            s["invalid_rejected"],
            s["invalid_total"],
            s["invalid_accepted_explained"],
            s["invalid_accepted_unexplained"]
        );
        outcomes.extend(report.case_outcomes(&format!("{mode}:")));
    }
    let expected = data_dir().join("maskbench_expected.json");
    if let Err(e) = ratchet::check(&expected, &outcomes, "maskbench_ratchet") {
        panic!("{e:#}");
    }
}
