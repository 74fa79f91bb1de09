//! A digest of what the JSON Schema compiler builds, to show that a refactoring changed
//! nothing: for every schema of the given MaskBench files and JSON-Schema-Test-Suite
//! directories, under four option sets, the IR (its `Debug` form), the coverage report and
//! the compile fuel left are hashed (or the error, for a schema that fails). Prints one
//! digest per option set and one over all.
//!
//!     cargo run --release -p sieve-bench --example ir_digest -- ../shared/data/maskbench \
//!         tests/data/json-schema-test-suite/tests

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use sieve_core::grammar::json::{self, JsonOptions, PropertyOrder, Whitespace, serde_json};
use sieve_core::{CompileBudget, Limits};

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            json_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// The schemas of a file: MaskBench's `schema`, or each suite group's `schema`.
fn schemas(v: &serde_json::Value) -> Vec<serde_json::Value> {
    match v {
        serde_json::Value::Object(o) if o.contains_key("schema") => vec![v["schema"].clone()],
        serde_json::Value::Array(groups) => groups
            .iter()
            .filter_map(|g| g.get("schema").cloned())
            .collect(),
        _ => Vec::new(),
    }
}

fn main() {
    let mut files = Vec::new();
    for a in std::env::args().skip(1) {
        json_files(Path::new(&a), &mut files);
    }
    let option_sets = [
        ("default", JsonOptions::default()),
        (
            "strict",
            JsonOptions {
                strict: true,
                ..JsonOptions::default()
            },
        ),
        (
            "compact+ordered",
            JsonOptions {
                whitespace: Whitespace::Compact,
                property_order: PropertyOrder::SchemaOrder,
                ..JsonOptions::default()
            },
        ),
        ("llguidance", JsonOptions::llguidance()),
    ];
    let limits = Limits::default();
    let mut all = DefaultHasher::new();
    let mut count = 0usize;
    for (name, opts) in &option_sets {
        let mut h = DefaultHasher::new();
        for f in &files {
            let Ok(text) = std::fs::read_to_string(f) else {
                continue;
            };
            let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
                continue;
            };
            for s in schemas(&v) {
                let mut budget = CompileBudget::new(&limits);
                let r = json::compile(&s, opts, &limits, &mut budget);
                format!("{r:?}").hash(&mut h);
                budget.left().hash(&mut h);
                budget.bytes_charged().hash(&mut h);
                count += 1;
            }
        }
        let d = h.finish();
        println!("{name}: {d:016x}");
        d.hash(&mut all);
    }
    println!(
        "all ({count} compiles over {} files): {:016x}",
        files.len(),
        all.finish()
    );
}
