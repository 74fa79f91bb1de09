//! Replays the inputs the fuzz targets found (`tests/fuzz/regressions/<target>/*`) through
//! the same property checks the targets run (`sieve_tests::fuzzprops`, `tests/fuzz/props_c.rs`),
//! as ordinary tests. Inputs whose bug is not fixed yet live under
//! `tests/fuzz/regressions/open/<target>/` and are not replayed here (see
//! `tests/fuzz/README.md`); move a file up one level when its bug is fixed.

use std::path::{Path, PathBuf};

use sieve_tests::fuzzprops;

#[path = "../fuzz/props_c.rs"]
mod props_c;

/// A property check over one raw input.
type Check = fn(&[u8]) -> Result<(), String>;

fn regressions(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
    assert!(
        root.is_dir(),
        "{} is missing: the fuzz regression corpus must be present",
        root.display()
    );
    let dir = root.join(target);
    let mut files: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd
            .map(|e| e.expect("reading a regression directory entry").path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// Runs `check` on every saved input of `target` (each on a thread with an 8 MiB stack, as
/// libFuzzer's main thread has), collecting every failure and panic.
fn replay(target: &str, check: Check) {
    let mut failures = Vec::new();
    let files = regressions(target);
    for path in &files {
        let data = std::fs::read(path).expect("reading a regression input");
        let t = std::time::Instant::now();
        let outcome = std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(move || check(&data))
            .expect("spawning the replay thread")
            .join();
        eprintln!("{target}: {} in {:?}", path.display(), t.elapsed());
        match outcome {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(format!("{}: {e}", path.display())),
            Err(_) => failures.push(format!("{}: panicked", path.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} {target} regressions fail:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn regex() {
    replay("regex", fuzzprops::check_regex);
}

#[test]
fn lark() {
    replay("lark", fuzzprops::check_lark);
}

#[test]
fn structural_tag() {
    replay("structural_tag", fuzzprops::check_structural_tag);
}

#[test]
fn json_schema() {
    replay("json_schema", fuzzprops::check_json_schema);
}

#[test]
fn tokenizer_json() {
    replay("tokenizer_json", |data| {
        let core = fuzzprops::check_tokenizer_json(data)?;
        props_c::check_tokenizer_json_c(data, core)
    });
}

#[test]
fn matcher_ops() {
    replay("matcher_ops", fuzzprops::check_matcher_ops);
}

#[test]
fn c_abi() {
    replay("c_abi", props_c::check_c_abi);
}

/// The committed seed corpora pass the properties too (so a seed that starts failing is
/// caught by `cargo test`, not only by a fuzz run). Small targets only: the 300 schema seeds
/// are left to the fuzz step.
#[test]
fn seeds_of_the_small_targets() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    let targets: [(&str, Check); 6] = [
        ("regex", fuzzprops::check_regex),
        ("structural_tag", fuzzprops::check_structural_tag),
        ("tokenizer_json", |data| {
            let core = fuzzprops::check_tokenizer_json(data)?;
            props_c::check_tokenizer_json_c(data, core)
        }),
        ("lark", fuzzprops::check_lark),
        ("matcher_ops", fuzzprops::check_matcher_ops),
        ("c_abi", props_c::check_c_abi),
    ];
    let mut failures = Vec::new();
    for (target, check) in targets {
        let dir = corpus.join(target);
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (the seed corpus must be present)", dir.display()));
        for entry in entries {
            let path = entry.expect("reading a seed entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !name.starts_with("seed-") {
                continue;
            }
            let data = std::fs::read(&path).expect("reading a seed");
            if let Err(e) = check(&data) {
                failures.push(format!("{}: {e}", path.display()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
