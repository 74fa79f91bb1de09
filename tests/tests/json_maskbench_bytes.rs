//! MaskBench at the byte level: compile each schema with `Grammar::from_json_schema`,
//! serialize every test instance as Python's `json.dumps` does, and check that valid
//! instances are accepted and invalid ones rejected (byte by byte, the same semantics as
//! token masks).
//!
//! Data: `$SIEVE_SHARED/data/maskbench` (default `<workspace>/../shared`). By default a fixed
//! 1-in-8 sample of the files (by name hash) runs; `SIEVE_FULL=1` runs all of them,
//! `SIEVE_MASKBENCH_FILTER=substr` only matching names, `SIEVE_STRICT=1` compiles in strict mode. Failures are written to
//! `$TMPDIR/json_maskbench_failures.txt`. On the sample, every case (each compile and each
//! instance) is compared with the per-case ratchet `tests/data/json/maskbench_bytes_expected.json`
//! (`sieve_bench::ratchet`: a pass -> fail fails; bless with
//! `SIEVE_BLESS=1 cargo test --release -p sieve-tests --test json_maskbench_bytes`, which
//! refuses regressions not named in `SIEVE_ACCEPT_REGRESSIONS=<file>`).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sieve_bench::pyjson;
use sieve_bench::ratchet::{self, Outcomes};
use sieve_bench::trace;
use sieve_core::grammar::json::serde_json::{self, Value};
use sieve_core::grammar::json::{CoverageReport, JsonOptions};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

#[derive(Default, Clone)]
struct Tally {
    schemas: usize,
    compiled: usize,
    exact: usize,
    valid_total: usize,
    valid_accepted: usize,
    valid_rejected_subset: usize,
    invalid_total: usize,
    invalid_rejected: usize,
    invalid_accepted_approx: usize,
    failures: Vec<String>,
    /// Per case (`file` for its compile, `file#i` for test `i`), a [`ratchet`] code: `c`
    /// compiled, `E` compile error, `X` compile panic; `P` pass, `V` valid rejected, `A`
    /// invalid accepted under a reported superset, `I` invalid accepted with none, `M`
    /// matcher panic.
    outcomes: Outcomes,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.schemas += o.schemas;
        self.compiled += o.compiled;
        self.exact += o.exact;
        self.valid_total += o.valid_total;
        self.valid_accepted += o.valid_accepted;
        self.valid_rejected_subset += o.valid_rejected_subset;
        self.invalid_total += o.invalid_total;
        self.invalid_rejected += o.invalid_rejected;
        self.invalid_accepted_approx += o.invalid_accepted_approx;
        self.failures.extend(o.failures);
        self.outcomes.extend(o.outcomes);
    }

    fn case(&mut self, case: String, code: &str) {
        self.outcomes.insert(case, code.to_string());
    }
}

fn shared_dir() -> PathBuf {
    match std::env::var_os("SIEVE_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    }
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn accepts(g: &Grammar, text: &str) -> bool {
    let mut m = Matcher::new(g);
    m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
}

/// Where a rejected text stops: the longest accepted prefix length, or the full length
/// when only the end is not accepting.
fn stop_at(g: &Grammar, text: &str) -> usize {
    let mut m = Matcher::new(g);
    for (i, b) in text.bytes().enumerate() {
        if !m.try_consume_bytes(&[b]) {
            return i;
        }
    }
    text.len()
}

fn around(text: &str, at: usize) -> String {
    let mut lo = at.saturating_sub(60);
    while !text.is_char_boundary(lo) {
        lo -= 1;
    }
    let mut hi = (at + 20).min(text.len());
    while !text.is_char_boundary(hi) {
        hi += 1;
    }
    let mut mid = at.min(text.len());
    while !text.is_char_boundary(mid) {
        mid -= 1;
    }
    format!("{}<<HERE>>{}", &text[lo..mid], &text[mid..hi])
}

fn report_text(r: &CoverageReport) -> String {
    let mut s = String::new();
    for e in r
        .entries
        .iter()
        .filter(|e| !matches!(e.status, sieve_core::grammar::json::CoverageStatus::Unknown))
    {
        let _ = write!(s, "\n    {e}");
    }
    s
}

fn run_file(path: &PathBuf, vocab: &Arc<Vocabulary>, limits: &Limits) -> Tally {
    let mut t = Tally {
        schemas: 1,
        ..Tally::default()
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Ok(text) = std::fs::read_to_string(path) else {
        t.failures.push(format!("{name}: unreadable"));
        t.case(name, "R");
        return t;
    };
    let Ok(file) = serde_json::from_str::<Value>(&text) else {
        t.failures.push(format!("{name}: bad JSON"));
        t.case(name, "R");
        return t;
    };
    let schema = file.get("schema").cloned().unwrap_or(Value::Bool(true));
    let opts = JsonOptions {
        strict: std::env::var_os("SIEVE_STRICT").is_some(),
        ..JsonOptions::default()
    };
    let compiled = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Grammar::from_json_schema(&schema, &opts, vocab, limits)
    }));
    let (grammar, report) = match compiled {
        Ok(Ok(x)) => x,
        Ok(Err(e))
            if e.kind == sieve_core::GrammarErrorKind::Unproductive
                && e.message.contains("`start`") =>
        {
            // Proved to admit no document: every instance is rejected.
            t.compiled = 1;
            t.case(name.clone(), "c");
            let tests = file.get("tests").and_then(Value::as_array).cloned();
            for (i, test) in tests.unwrap_or_default().iter().enumerate() {
                if test.get("valid").and_then(Value::as_bool).unwrap_or(true) {
                    t.valid_total += 1;
                    t.failures
                        .push(format!("{name}#{i}: valid_rejected: no document compiles"));
                    t.case(format!("{name}#{i}"), "V");
                } else {
                    t.invalid_total += 1;
                    t.invalid_rejected += 1;
                    t.case(format!("{name}#{i}"), "P");
                }
            }
            return t;
        }
        Ok(Err(e)) => {
            t.failures
                .push(format!("{name}: compile_error: {}", e.message));
            t.case(name, "E");
            return t;
        }
        Err(_) => {
            t.failures.push(format!("{name}: compile_panic"));
            t.case(name, "X");
            return t;
        }
    };
    t.compiled = 1;
    t.case(name.clone(), "c");
    // An invalid instance accepted is explained only by a superset entry at a location the
    // validator's errors point at (or above it): `sieve_bench::trace`.
    let supersets: Vec<String> = report
        .supersets()
        .map(|e| trace::entry_location(&e.pointer, &e.keyword))
        .collect();
    let mut tracer = trace::Tracer::new(&schema, true, &[]);
    let subset = report.subsets().next().is_some();
    if report.is_exact() {
        t.exact = 1;
    }
    let tests = file
        .get("tests")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, test) in tests.iter().enumerate() {
        let valid = test.get("valid").and_then(Value::as_bool).unwrap_or(true);
        let data = test.get("data").cloned().unwrap_or(Value::Null);
        let inst = pyjson::dumps(&data);
        let ok = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            accepts(&grammar, &inst)
        })) {
            Ok(ok) => ok,
            Err(_) => {
                t.failures.push(format!("{name}#{i}: matcher_panic"));
                t.case(format!("{name}#{i}"), "M");
                continue;
            }
        };
        let case = format!("{name}#{i}");
        let mut short = inst.clone();
        if short.len() > 300 {
            let mut cut = 300;
            while !short.is_char_boundary(cut) {
                cut -= 1;
            }
            short.truncate(cut);
        }
        if valid {
            t.valid_total += 1;
            if ok {
                t.valid_accepted += 1;
                t.case(case, "P");
            } else {
                t.case(case, "V");
                if subset {
                    t.valid_rejected_subset += 1;
                }
                let at = stop_at(&grammar, &inst);
                t.failures.push(format!(
                    "{name}#{i}: valid_rejected{}: at byte {at}/{}: {}{}",
                    if subset { " (subset reported)" } else { "" },
                    inst.len(),
                    around(&inst, at),
                    report_text(&report)
                ));
            }
        } else {
            t.invalid_total += 1;
            if !ok {
                t.invalid_rejected += 1;
                t.case(case, "P");
            } else {
                let trace = tracer.explain(&data, &supersets);
                let why = test
                    .get("python_error")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if trace.explained() {
                    t.invalid_accepted_approx += 1;
                    t.case(case, "A");
                    t.failures.push(format!(
                        "{name}#{i}: invalid_accepted_approx: {short} [{why}] {}{}",
                        trace.describe(),
                        report_text(&report)
                    ));
                } else {
                    t.case(case, "I");
                    t.failures.push(format!(
                        "{name}#{i}: invalid_accepted: {short} [{why}] {}{}",
                        trace.describe(),
                        report_text(&report)
                    ));
                }
            }
        }
    }
    t
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        100.0
    } else {
        100.0 * a as f64 / b as f64
    }
}

/// The invalid instances of the sample that sieve accepts with no superset entry of its
/// coverage report explaining them (measured 2026-11-29: 0 of 2,009; 5 before entries were
/// reported where their keywords are written). Exact, not a margin:
/// one more fails the test, and one fewer fails it too until this is lowered (a stale
/// allowance would hide the next regression).
const MAX_UNEXPLAINED: usize = 0;

#[test]
fn maskbench_bytes() {
    let dir = shared_dir().join("data/maskbench");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        sieve_tests::skip_missing_data(&format!("MaskBench data not found at {}", dir.display()));
        return;
    };
    let full = std::env::var_os("SIEVE_FULL").is_some();
    let filter = std::env::var("SIEVE_MASKBENCH_FILTER").ok();
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let sampled = full || fnv(&n).is_multiple_of(8);
            sampled && filter.as_ref().is_none_or(|f| n.contains(f.as_str()))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        sieve_tests::skip_missing_data(&format!(
            "no MaskBench files selected in {}",
            dir.display()
        ));
        return;
    }
    let vocab = Arc::new(Vocabulary::synthetic(300, 7));
    let limits = Limits::default();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(16);
    let mut total = Tally::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut t = Tally::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(p) = files.get(i) else { break };
                        t.add(run_file(p, &vocab, &limits));
                    }
                    t
                })
            })
            .collect();
        // A panicked worker fails the test: its tally is never dropped silently.
        for h in handles {
            total.add(h.join().expect("a worker panicked"));
        }
    });
    total.failures.sort();
    let out = std::env::temp_dir().join("json_maskbench_failures.txt");
    let _ = std::fs::write(&out, total.failures.join("\n"));
    let invalid_exact = total.invalid_total - total.invalid_accepted_approx;
    println!(
        "maskbench bytes ({} files{}): compiled {}/{} ({:.2}%), exact {}; valid accepted {}/{} \
         ({:.2}%; {} rejected under a reported subset); invalid rejected {}/{} ({:.2}%), \
         accepted under a reported approximation {}, rejected of the rest {:.2}%; failures in {}",
        total.schemas,
        if full { ", full" } else { ", sample" },
        total.compiled,
        total.schemas,
        pct(total.compiled, total.schemas),
        total.exact,
        total.valid_accepted,
        total.valid_total,
        pct(total.valid_accepted, total.valid_total),
        total.valid_rejected_subset,
        total.invalid_rejected,
        total.invalid_total,
        pct(total.invalid_rejected, total.invalid_total),
        total.invalid_accepted_approx,
        pct(total.invalid_rejected, invalid_exact),
        out.display()
    );
    if full || filter.is_some() || std::env::var_os("SIEVE_STRICT").is_some() {
        return;
    }
    // Per case (`sieve_bench::ratchet`): any pass -> fail fails the test, and a bless
    // refuses it unless it is named in `SIEVE_ACCEPT_REGRESSIONS`.
    let ratchet =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/json/maskbench_bytes_expected.json");
    if let Err(e) = ratchet::check(&ratchet, &total.outcomes, "json_maskbench_bytes") {
        panic!("{e:#} (failures in {})", out.display());
    }
    // Invalid instances accepted that no superset entry explains (traced to the validator's
    // error locations) are bugs; the bar only goes down. None today: coverage entries name
    // where their keywords are written (`core/src/grammar/json/compiler/locate.rs`), and the
    // trace follows `anyOf`/`oneOf` branches (`bench/src/trace.rs`).
    let unexplained = total.invalid_total - total.invalid_rejected - total.invalid_accepted_approx;
    // Exact: more is a regression; fewer asks for the constant to be lowered.
    assert_eq!(
        unexplained,
        MAX_UNEXPLAINED,
        "{unexplained} invalid instances accepted with no superset entry explaining them, \
         where MAX_UNEXPLAINED is {MAX_UNEXPLAINED} (more: a regression; fewer: lower it); see {}",
        out.display()
    );
}
