//! Ratchet files: committed per-case outcomes that tests compare against.
//!
//! An expected file is a JSON object mapping a case name to an outcome code: one letter for
//! how the case compiled (`c` = compiled, anything else = not), then one letter per check
//! (`P` = pass, anything else = fail; the letters say which kind of failure). A check that
//! passed and now fails is a **regression**; one that failed and now passes is an
//! **improvement**; a case added, removed or with a different number of checks is a
//! **change**. Regressions fail the test; improvements and changes ask for the file to be
//! rewritten (`SIEVE_BLESS=1`), so the file always records the current state.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

/// Outcome codes by case name.
pub type Outcomes = BTreeMap<String, String>;

/// The differences between an expected and an actual [`Outcomes`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// `case: expected -> actual` for cases with a check that no longer passes.
    pub regressions: Vec<String>,
    /// `case: expected -> actual` for cases with a check that now passes (and none lost).
    pub improvements: Vec<String>,
    /// Cases added, removed, or whose number of checks changed.
    pub changes: Vec<String>,
}

impl Diff {
    /// No difference in pass/fail (letters of failures may still differ).
    pub fn is_empty(&self) -> bool {
        self.regressions.is_empty() && self.improvements.is_empty() && self.changes.is_empty()
    }

    /// A report for a test failure message, at most `max` lines per section.
    pub fn render(&self, max: usize) -> String {
        let mut s = String::new();
        for (title, list) in [
            ("regressions (passed before, fail now)", &self.regressions),
            ("improvements (failed before, pass now)", &self.improvements),
            ("changed cases", &self.changes),
        ] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(s, "{title}: {}", list.len());
            for line in list.iter().take(max) {
                let _ = writeln!(s, "  {line}");
            }
            if list.len() > max {
                let _ = writeln!(s, "  ... and {} more", list.len() - max);
            }
        }
        s
    }
}

fn passes(code: &str) -> impl Iterator<Item = bool> + '_ {
    code.chars()
        .enumerate()
        .map(|(i, c)| if i == 0 { c == 'c' } else { c == 'P' })
}

/// Compares `actual` with `expected`, check by check.
pub fn compare(expected: &Outcomes, actual: &Outcomes) -> Diff {
    let mut diff = Diff::default();
    for (name, want) in expected {
        let Some(got) = actual.get(name) else {
            diff.changes.push(format!("{name}: removed (was {want})"));
            continue;
        };
        if want.chars().count() != got.chars().count() {
            diff.changes.push(format!(
                "{name}: {want} -> {got} (number of checks changed)"
            ));
            continue;
        }
        let mut lost = false;
        let mut won = false;
        for (w, g) in passes(want).zip(passes(got)) {
            lost |= w && !g;
            won |= !w && g;
        }
        if lost {
            diff.regressions.push(format!("{name}: {want} -> {got}"));
        } else if won {
            diff.improvements.push(format!("{name}: {want} -> {got}"));
        }
    }
    for (name, got) in actual {
        if !expected.contains_key(name) {
            diff.changes.push(format!("{name}: new ({got})"));
        }
    }
    diff
}

/// Reads an expected file; a missing file reads as empty.
///
/// # Errors
/// The file exists but is not a JSON object of strings.
pub fn read(path: &Path) -> Result<Outcomes> {
    if !path.exists() {
        return Ok(Outcomes::new());
    }
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let obj = value
        .as_object()
        .with_context(|| format!("{}: not a JSON object", path.display()))?;
    let mut out = Outcomes::new();
    for (k, v) in obj {
        let code = v
            .as_str()
            .with_context(|| format!("{}: {k}: not a string", path.display()))?;
        out.insert(k.clone(), code.to_owned());
    }
    Ok(out)
}

/// Writes `outcomes` as a pretty JSON object, one case per line, sorted by name.
///
/// # Errors
/// The file cannot be written.
pub fn write(path: &Path, outcomes: &Outcomes) -> Result<()> {
    let map: Map<String, Value> = outcomes
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    let text = serde_json::to_string_pretty(&Value::Object(map))? + "\n";
    fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Is `SIEVE_BLESS` set to something other than empty or `0`?
pub fn bless_requested() -> bool {
    std::env::var("SIEVE_BLESS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The ratchet check of a test: with `SIEVE_BLESS`, rewrites `path` and succeeds;
/// otherwise `Err` with a message on any regression, improvement or change.
///
/// # Errors
/// A difference (the message says what to do), or an unreadable or unwritable file.
pub fn check(path: &Path, actual: &Outcomes, test_name: &str) -> Result<()> {
    if bless_requested() {
        return write(path, actual);
    }
    let expected = read(path)?;
    let diff = compare(&expected, actual);
    if diff.is_empty() {
        return Ok(());
    }
    let what = if diff.regressions.is_empty() {
        "results changed for the better (or cases changed)"
    } else {
        "REGRESSION: checks that passed now fail"
    };
    anyhow::bail!(
        "{what} against {}:\n{}\nIf this is intended, update the file with\n  \
         SIEVE_BLESS=1 cargo test --release -p sieve-tests --test {test_name}\n",
        path.display(),
        diff.render(40)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcomes(pairs: &[(&str, &str)]) -> Outcomes {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn classify() {
        let want = outcomes(&[("a", "cPF"), ("b", "cPP"), ("c", "e"), ("d", "cF")]);
        let got = outcomes(&[("a", "cPP"), ("b", "cFP"), ("c", "c"), ("e", "c")]);
        let d = compare(&want, &got);
        assert_eq!(d.regressions, ["b: cPP -> cFP"]);
        assert_eq!(d.improvements, ["a: cPF -> cPP", "c: e -> c"]);
        assert_eq!(d.changes.len(), 2);
        assert!(compare(&want, &want).is_empty());
        // A different failure letter is not a difference.
        assert!(compare(&outcomes(&[("a", "cF")]), &outcomes(&[("a", "cA")])).is_empty());
    }
}
