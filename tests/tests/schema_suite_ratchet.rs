//! Ratchet over the vendored JSON-Schema-Test-Suite (`tests/data/json-schema-test-suite/`,
//! non-optional files of draft2020-12, draft2019-09, draft7, draft6 and draft4, see its
//! `SOURCE.md`), in default and in
//! strict mode, byte level (`sieve_bench::schema_suite`). The outcomes are compared **per
//! case** (each group's compile and each test, `sieve_bench::ratchet`) with
//! `tests/data/schema_suite_expected.json`: a case that passed and now fails is a regression;
//! one that now passes asks for the file to be updated with
//! `SIEVE_BLESS=1 cargo test --release -p sieve-tests --test schema_suite_ratchet`, which
//! refuses to write regressions unless each is named in `SIEVE_ACCEPT_REGRESSIONS=<file>`.

use std::path::{Path, PathBuf};

use sieve_bench::maskbench::Feed;
use sieve_bench::ratchet::{self, Outcomes};
use sieve_bench::schema_suite::{self, SuiteConfig};

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

#[test]
fn schema_suite() {
    let dir = data_dir().join("json-schema-test-suite");
    let feed = Feed::bytes();
    let mut outcomes = Outcomes::new();
    for strict in [false, true] {
        let cfg = SuiteConfig {
            strict,
            ..SuiteConfig::default()
        };
        let report = schema_suite::run(&dir, &feed, &cfg).unwrap();
        let mode = if strict { "strict" } else { "default" };
        for (draft, t) in report.totals_by_draft() {
            eprintln!(
                "{mode} {draft}: {}/{} checks passing, {} invalid accepted ({} explained by a \
                 superset entry, {} unexplained), {} valid rejected, {}/{} groups compiled",
                t.passed,
                t.checks,
                t.invalid_accepted,
                t.invalid_accepted_explained,
                t.invalid_accepted - t.invalid_accepted_explained,
                t.valid_rejected,
                t.compiled,
                t.groups
            );
        }
        outcomes.extend(report.case_outcomes(&format!("{mode}:")));
    }
    let expected = data_dir().join("schema_suite_expected.json");
    if let Err(e) = ratchet::check(&expected, &outcomes, "schema_suite_ratchet") {
        panic!("{e:#}");
    }
}
