//! Ratchet files: committed per-case outcomes that tests compare against.
//!
//! An expected file is a JSON object mapping a **case** to a one-letter outcome code. A case
//! is one compile (`default:file.json`: `c` = compiled, any other letter = not) or one test
//! instance (`default:file.json#3`: `P` = pass, any other letter = a kind of failure, `-` =
//! not run because the schema did not compile). A case **passes** iff its code is `c` or
//! `P`.
//!
//! Comparing an expected file with a run, case by case:
//! - a **regression** is a case that passed and now fails, or passed and is gone;
//! - an **improvement** is a case that failed and now passes;
//! - a **change** is a case added, or a failing case removed;
//! - a **kind change** is a failing case that fails another way (`A` → `F`: an explained
//!   acceptance became unexplained; `e` → `p`: a compile error became a panic).
//!
//! Any difference fails the test.
//!
//! Blessing (`SIEVE_BLESS=1`) rewrites the file to the run's outcomes **except regressions**,
//! and prints every difference it wrote (old → new, by case) as a commit message to use. A
//! regressed case keeps its passing code in the file and the test fails listing every one of
//! them. To accept regressions, name each of them in a file given as
//! `SIEVE_ACCEPT_REGRESSIONS=<path>` (one case per line, `#` starts a comment); the bless then
//! writes them too and prints each accepted regression. A regression not in that file is
//! still refused, so no pass→fail can enter a ratchet file without being named.
//!
//! A missing expected file is an error unless blessing (the first bless creates it).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

/// Outcome codes by case name.
pub type Outcomes = BTreeMap<String, String>;

/// Does this outcome code pass?
pub fn passes(code: &str) -> bool {
    code == "c" || code == "P"
}

/// The differences between an expected and an actual [`Outcomes`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Cases that passed and now fail or are gone: `(case, "expected -> actual")`.
    pub regressions: Vec<(String, String)>,
    /// Cases that failed and now pass.
    pub improvements: Vec<(String, String)>,
    /// Cases added, or failing cases removed.
    pub changes: Vec<(String, String)>,
    /// Failing cases that fail another way (`"A -> F"`).
    pub kinds: Vec<(String, String)>,
}

impl Diff {
    /// No difference in pass/fail.
    pub fn is_empty(&self) -> bool {
        self.regressions.is_empty()
            && self.improvements.is_empty()
            && self.changes.is_empty()
            && self.kinds.is_empty()
    }

    /// A report for a test failure message, at most `max` lines per section (`usize::MAX`:
    /// all of them).
    pub fn render(&self, max: usize) -> String {
        let mut s = String::new();
        for (title, list) in [
            ("regressions (passed before, fail now)", &self.regressions),
            ("improvements (failed before, pass now)", &self.improvements),
            ("changed cases", &self.changes),
            ("failing another way", &self.kinds),
        ] {
            if list.is_empty() {
                continue;
            }
            let _ = writeln!(s, "{title}: {}", list.len());
            for (case, what) in list.iter().take(max) {
                let _ = writeln!(s, "  {case}: {what}");
            }
            if list.len() > max {
                let _ = writeln!(s, "  ... and {} more", list.len() - max);
            }
        }
        s
    }
}

/// Compares `actual` with `expected`, case by case.
pub fn compare(expected: &Outcomes, actual: &Outcomes) -> Diff {
    let mut diff = Diff::default();
    for (name, want) in expected {
        match actual.get(name) {
            None if passes(want) => diff
                .regressions
                .push((name.clone(), format!("{want} -> removed"))),
            None => diff
                .changes
                .push((name.clone(), format!("{want} -> removed"))),
            Some(got) if passes(want) && !passes(got) => {
                diff.regressions
                    .push((name.clone(), format!("{want} -> {got}")));
            }
            Some(got) if !passes(want) && passes(got) => {
                diff.improvements
                    .push((name.clone(), format!("{want} -> {got}")));
            }
            Some(got) if !passes(want) && got != want => {
                diff.kinds.push((name.clone(), format!("{want} -> {got}")));
            }
            Some(_) => {}
        }
    }
    for (name, got) in actual {
        if !expected.contains_key(name) {
            diff.changes.push((name.clone(), format!("new -> {got}")));
        }
    }
    diff
}

/// Reads an expected file.
///
/// # Errors
/// The file is missing, or is not a JSON object of strings.
pub fn read(path: &Path) -> Result<Outcomes> {
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

/// The cases named in a `SIEVE_ACCEPT_REGRESSIONS` file: one per line; blank lines, lines
/// starting with `#` and comments after whitespace + `#` are ignored (case names contain `#`,
/// as in `default:f.json#3`).
pub fn parse_accepted(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| {
            let l = l.trim();
            let end = l.find([' ', '\t']).unwrap_or(l.len());
            if l.starts_with('#') { "" } else { &l[..end] }
        })
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What a bless does with a diff: the file to write, the regressions accepted (named in
/// `accepted`) and those refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bless {
    /// The outcomes to write: `actual`, except that refused regressions keep their expected
    /// (passing) code and a passing case that is gone stays unless accepted.
    pub outcomes: Outcomes,
    /// Regressions named in the accept list, now written.
    pub accepted: Vec<(String, String)>,
    /// Regressions not named: kept as they were, and the test fails.
    pub refused: Vec<(String, String)>,
}

/// Plans a bless of `actual` over `expected`, accepting only the regressions in `accepted`.
pub fn plan_bless(expected: &Outcomes, actual: &Outcomes, accepted: &BTreeSet<String>) -> Bless {
    let diff = compare(expected, actual);
    let mut bless = Bless {
        outcomes: actual.clone(),
        ..Bless::default()
    };
    for (case, what) in diff.regressions {
        if accepted.contains(&case) {
            bless.accepted.push((case, what));
            continue;
        }
        if let Some(want) = expected.get(&case) {
            bless.outcomes.insert(case.clone(), want.clone());
        }
        bless.refused.push((case, what));
    }
    bless
}

/// The commit message a bless prints: every difference it wrote into `path`, by kind.
pub fn bless_message(path: &Path, written: &Diff) -> String {
    let name = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let count = written.regressions.len()
        + written.improvements.len()
        + written.changes.len()
        + written.kinds.len();
    format!(
        "---- commit message for the bless ----\nratchet {name}: {count} cases changed \
         ({} regressions accepted by name, {} improvements, {} failing another way, {} added or \
         removed)\n\n{}---- end ----",
        written.regressions.len(),
        written.improvements.len(),
        written.kinds.len(),
        written.changes.len(),
        written.render(usize::MAX)
    )
}

fn render_list(list: &[(String, String)]) -> String {
    let mut s = String::new();
    for (case, what) in list {
        let _ = writeln!(s, "  {case}: {what}");
    }
    s
}

/// The ratchet check of a test. Without `SIEVE_BLESS`: `Err` with a message on any
/// regression, improvement or change (or a missing file). With it: writes the file as
/// [`plan_bless`] says and fails if a regression was refused.
///
/// # Errors
/// A difference (the message says what to do), a refused regression, or an unreadable or
/// unwritable file.
pub fn check(path: &Path, actual: &Outcomes, test_name: &str) -> Result<()> {
    let how = format!("SIEVE_BLESS=1 cargo test --release -p sieve-tests --test {test_name}");
    if bless_requested() {
        let expected = if path.exists() {
            read(path)?
        } else {
            Outcomes::new()
        };
        let accepted = match std::env::var_os("SIEVE_ACCEPT_REGRESSIONS") {
            Some(list) => {
                let text = fs::read_to_string(&list)
                    .with_context(|| format!("reading SIEVE_ACCEPT_REGRESSIONS={list:?}"))?;
                parse_accepted(&text)
            }
            None => BTreeSet::new(),
        };
        let plan = plan_bless(&expected, actual, &accepted);
        write(path, &plan.outcomes)?;
        let written = compare(&expected, &plan.outcomes);
        if !written.is_empty() {
            eprintln!("{}", bless_message(path, &written));
        }
        if !plan.accepted.is_empty() {
            eprintln!(
                "{}: ACCEPTED {} regressions (named in SIEVE_ACCEPT_REGRESSIONS):\n{}",
                path.display(),
                plan.accepted.len(),
                render_list(&plan.accepted)
            );
        }
        if !plan.refused.is_empty() {
            bail!(
                "REFUSED to bless {} regressions into {} (they keep their passing code; the \
                 rest was written):\n{}To accept them, list each case in a file (one per line) \
                 and run\n  SIEVE_ACCEPT_REGRESSIONS=<file> {how}\n",
                plan.refused.len(),
                path.display(),
                render_list(&plan.refused)
            );
        }
        return Ok(());
    }
    if !path.exists() {
        bail!(
            "the ratchet file {} is missing; create it with\n  {how}",
            path.display()
        );
    }
    let expected = read(path)?;
    let diff = compare(&expected, actual);
    if diff.is_empty() {
        return Ok(());
    }
    let what = if diff.regressions.is_empty() {
        "results changed for the better (or cases changed)"
    } else {
        "REGRESSION: cases that passed now fail"
    };
    bail!(
        "{what} against {}:\n{}\nIf this is intended, update the file with\n  {how}\n\
         (a bless writes improvements and changes only; regressions must be named in\n  \
         SIEVE_ACCEPT_REGRESSIONS=<file>)\n",
        path.display(),
        diff.render(usize::MAX)
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

    fn names(list: &[(String, String)]) -> Vec<&str> {
        list.iter().map(|(c, _)| c.as_str()).collect()
    }

    #[test]
    fn classify_per_case() {
        let want = outcomes(&[
            ("f", "c"),
            ("f#0", "P"),
            ("f#1", "F"),
            ("g", "e"),
            ("g#0", "-"),
            ("h#0", "P"),
            ("i#0", "A"),
        ]);
        let got = outcomes(&[
            ("f", "c"),
            ("f#0", "F"),
            ("f#1", "P"),
            ("g", "c"),
            ("g#0", "P"),
            ("j#0", "F"),
        ]);
        let d = compare(&want, &got);
        assert_eq!(names(&d.regressions), ["f#0", "h#0"]);
        assert_eq!(d.regressions[1].1, "P -> removed");
        assert_eq!(names(&d.improvements), ["f#1", "g", "g#0"]);
        assert_eq!(names(&d.changes), ["i#0", "j#0"]);
        assert!(d.kinds.is_empty());
        assert!(compare(&want, &want).is_empty());
        // A different failure letter is a difference of its own.
        let d = compare(&outcomes(&[("a", "A")]), &outcomes(&[("a", "F")]));
        assert_eq!(d.kinds, [("a".to_owned(), "A -> F".to_owned())]);
        assert!(!d.is_empty());
        assert!(!compare(&outcomes(&[("a", "e")]), &outcomes(&[("a", "p")])).is_empty());
    }

    /// The gate itself: a ratchet file whose failing case now fails another way fails the
    /// check, and a bless writes it and names it in the commit message.
    #[test]
    fn changed_failure_letter_fails_until_blessed() {
        let path = std::env::temp_dir().join(format!("sieve-ratchet-kind-{}", std::process::id()));
        write(&path, &outcomes(&[("f#0", "A"), ("f#1", "P")])).expect("write");
        let run = outcomes(&[("f#0", "F"), ("f#1", "P")]);
        let err = check(&path, &run, "x").unwrap_err();
        let msg = format!("{err:#}");
        assert!(msg.contains("f#0: A -> F"), "{msg}");
        let diff = compare(&read(&path).expect("read"), &run);
        let message = bless_message(&path, &diff);
        assert!(message.contains("1 cases changed"), "{message}");
        assert!(message.contains("f#0: A -> F"), "{message}");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn bless_refuses_unnamed_regressions() {
        let want = outcomes(&[("a", "P"), ("b", "P"), ("c", "F"), ("d", "P")]);
        let got = outcomes(&[("a", "F"), ("b", "L"), ("c", "P")]);
        // Nothing accepted: improvements are written, every regression keeps its code.
        let plan = plan_bless(&want, &got, &BTreeSet::new());
        assert_eq!(names(&plan.refused), ["a", "b", "d"]);
        assert!(plan.accepted.is_empty());
        assert_eq!(
            plan.outcomes,
            outcomes(&[("a", "P"), ("b", "P"), ("c", "P"), ("d", "P")])
        );
        // The named ones are written and listed; the others are still refused.
        let accepted = parse_accepted("# why: ...\na   # old pass was wrong\n\nd\n");
        assert_eq!(
            parse_accepted("default:f.json#3 # comment\n  strict:g.json#0\n#x\n"),
            ["default:f.json#3", "strict:g.json#0"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect()
        );
        let plan = plan_bless(&want, &got, &accepted);
        assert_eq!(names(&plan.accepted), ["a", "d"]);
        assert_eq!(names(&plan.refused), ["b"]);
        assert_eq!(
            plan.outcomes,
            outcomes(&[("a", "F"), ("b", "P"), ("c", "P")])
        );
        // After a full bless the file equals the run.
        let all: BTreeSet<String> = ["a", "b", "d"].iter().map(|s| (*s).to_owned()).collect();
        assert_eq!(plan_bless(&want, &got, &all).outcomes, got);
    }

    #[test]
    fn missing_file_is_an_error() {
        let path =
            std::env::temp_dir().join(format!("sieve-ratchet-missing-{}", std::process::id()));
        let err = check(&path, &Outcomes::new(), "x").unwrap_err();
        assert!(format!("{err:#}").contains("missing"), "{err:#}");
    }
}
