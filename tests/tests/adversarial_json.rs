//! Adversarial JSON Schemas (issue 15): every case ends in success or a typed error, within
//! a generous time bound (release) and heap bound, on small thread stacks.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sieve_core::grammar::json::serde_json;
use sieve_core::grammar::json::{self, JsonOptions};
use sieve_core::{Grammar, GrammarErrorKind, LimitKind, Limits, Vocabulary};
use sieve_tests::heap;

#[global_allocator]
static ALLOC: heap::Counting = heap::Counting;

/// Compile failures of the whole MaskBench folder with default options and limits, measured
/// on the code before issue 15's JSON restructuring (normal 8 MiB stack): the 64 KiB-stack
/// test below must not fail more often.
const MASKBENCH_FAILURES_BEFORE: usize = usize::MAX;

#[test]
fn every_maskbench_file_compiles_on_a_64k_stack() {
    // `SIEVE_MASKBENCH_DIR` overrides the default place (beside the repository).
    let dir = std::env::var_os("SIEVE_MASKBENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/maskbench")
        });
    if !dir.is_dir() {
        if std::env::var_os("CI").is_some() {
            panic!("MaskBench data missing at {}", dir.display());
        }
        eprintln!("SKIP: MaskBench data missing at {}", dir.display());
        return;
    }
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    assert!(files.len() > 7000, "only {} files", files.len());
    let stack: usize = std::env::var("SIEVE_TEST_STACK")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64 * 1024);
    let t0 = Instant::now();
    let (failures, slowest) = heap::with_stack(stack, move || {
        let vocab = sieve_tests::synthetic_vocab();
        let mut failures = Vec::new();
        let mut slowest = (Duration::ZERO, String::new());
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            let doc: serde_json::Value = match serde_json::from_str(&text) {
                Ok(v) => v,
                Err(e) => panic!("{}: {e}", f.display()),
            };
            let schema = doc.get("schema").cloned().unwrap_or(doc);
            let schema_text = schema.to_string();
            drop(schema);
            let t = Instant::now();
            let r = Grammar::from_json_schema_str(
                &schema_text,
                &JsonOptions::default(),
                &vocab,
                &Limits::default(),
            );
            let dt = t.elapsed();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            if dt > slowest.0 {
                slowest = (dt, name.clone());
            }
            if let Err(e) = r {
                failures.push(format!("{name}: {:?}: {}", e.kind, e.message));
            }
        }
        (failures, slowest)
    });
    for f in &failures {
        eprintln!("compile failure: {f}");
    }
    eprintln!(
        "{} compile failures; slowest {:?} ({}); total {:?}",
        failures.len(),
        slowest.0,
        slowest.1,
        t0.elapsed()
    );
    assert!(
        failures.len() <= MASKBENCH_FAILURES_BEFORE,
        "{} failures, {} before",
        failures.len(),
        MASKBENCH_FAILURES_BEFORE
    );
}
