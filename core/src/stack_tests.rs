//! Stack needed per nesting limit, measured (the table in `core/docs/architecture.md`,
//! "Stack per limit"). Each probe compiles an input nested exactly `max_nesting_depth` deep,
//! creates a matcher and computes one mask, on a thread with a given stack size, in a child
//! process (a stack overflow aborts the process); a binary search finds the smallest stack
//! that passes, to 4 KiB. Run with
//! `cargo test -p sieve-core --lib --release -- --ignored --nocapture stack_per_limit`.
extern crate std;

use alloc::format;
use alloc::string::String;
use std::println;

use crate::grammar::json::JsonOptions;
use crate::sync::Arc;
use crate::{Grammar, Limits, Matcher, Vocabulary};

/// The probes: name, the input nested `depth` deep, its syntax.
fn input(probe: &str, depth: usize) -> String {
    match probe {
        // Groups and stars in a rule: the Earley side.
        "lark-rule" => format!(
            "start: {}\"a\"{}",
            "(\"b\" ".repeat(depth),
            ")*".repeat(depth)
        ),
        // The same inside a terminal: one regex tree 2 * depth + 2 tall.
        "lark-terminal" => format!(
            "start: A\nA: {}\"a\"{}",
            "(\"b\" ".repeat(depth),
            ")*".repeat(depth)
        ),
        // regex-syntax counts a group, its repetition and the concatenation inside it: three
        // levels per group, so this is as deep as the limit allows (to within two levels).
        "regex" => format!("{}a{}", "(?:b".repeat(depth / 3), ")*".repeat(depth / 3)),
        "json-schema" => {
            let mut s = String::from("{\"type\": \"boolean\"}");
            for _ in 0..depth {
                s = format!("{{\"type\": \"array\", \"items\": {s}}}");
            }
            s
        }
        _ => String::new(),
    }
}

fn run(probe: &str, depth: usize) {
    // JSON Schema text nests at most 64 arrays and objects (`json::parse_schema`), below the
    // default `max_nesting_depth` (200): that text limit is the one that binds, so the schema
    // probes run under the default limits.
    let limits = Limits {
        max_nesting_depth: if probe == "json-schema" { 200 } else { depth },
        ..Limits::default()
    };
    let vocab = Arc::new(Vocabulary::synthetic(200, 7));
    let text = input(probe, depth);
    let g = match probe {
        "regex" => Grammar::from_regex(&text, &vocab, &limits),
        "json-schema" => {
            Grammar::from_json_schema_str(&text, &JsonOptions::default(), &vocab, &limits)
                .map(|(g, _)| g)
        }
        _ => Grammar::from_lark(&text, &vocab, &limits),
    };
    let g = g.unwrap_or_else(|e| panic!("{probe} at depth {depth}: {e}"));
    let mut m = Matcher::new(&g);
    let mut mask = alloc::vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).unwrap();
}

/// The child side: runs the probe named in the environment on a thread of the given stack.
#[test]
#[ignore = "run by stack_per_limit in a child process"]
fn stack_probe_child() {
    let (Ok(probe), Ok(depth), Ok(stack)) = (
        std::env::var("SIEVE_STACK_PROBE"),
        std::env::var("SIEVE_STACK_DEPTH"),
        std::env::var("SIEVE_STACK_BYTES"),
    ) else {
        return;
    };
    let depth: usize = depth.parse().unwrap();
    let stack: usize = stack.parse().unwrap();
    std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || run(&probe, depth))
        .unwrap()
        .join()
        .unwrap();
}

fn passes(probe: &str, depth: usize, stack: usize) -> bool {
    let exe = std::env::current_exe().unwrap();
    std::process::Command::new(exe)
        .args(["--ignored", "--exact", "stack_tests::stack_probe_child"])
        .env("SIEVE_STACK_PROBE", probe)
        .env("SIEVE_STACK_DEPTH", format!("{depth}"))
        .env("SIEVE_STACK_BYTES", format!("{stack}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
#[ignore = "a measurement (about a minute): prints the stack-per-limit table"]
fn stack_per_limit() {
    const KIB: usize = 1024;
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    println!("probe           depth  smallest stack ({build}, 4 KiB steps)");
    for probe in ["lark-rule", "lark-terminal", "regex", "json-schema"] {
        // JSON Schema text nests at most 64 arrays and objects (`json::parse_schema`).
        let depths: &[usize] = if probe == "json-schema" {
            &[10, 30, 60]
        } else {
            &[50, 200, 1000]
        };
        for &depth in depths {
            let (mut lo, mut hi) = (4 * KIB, 64 * 1024 * KIB);
            assert!(
                passes(probe, depth, hi),
                "{probe} at depth {depth} fails on 64 MiB"
            );
            while hi - lo > 4 * KIB {
                let mid = (lo + hi) / 2 / (4 * KIB) * (4 * KIB);
                if passes(probe, depth, mid) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            println!("{probe:<15} {depth:>5}  {} KiB", hi / KIB);
        }
    }
}
