//! `sieve schema-suite`: the official JSON-Schema-Test-Suite run through the compiler.
//!
//! Layout (upstream's): `DIR/tests/<draft>/*.json`, each file a list of groups
//! `{"description", "schema", "tests": [{"description", "data", "valid"}]}`; files under
//! `optional/` only with [`SuiteConfig::optional`]; `DIR/remotes/` holds the documents
//! tests reference as `http://localhost:1234/<path>`.
//!
//! Per group the schema is compiled ([`crate::maskbench::compile_schema`], default or strict
//! options); per test `data` is serialized as Python's `json.dumps(data,
//! ensure_ascii=False)` and fed byte by byte (or token by token with a tokenizer, masks
//! checked) to a fresh matcher ([`crate::maskbench::check_text`]). A check passes when a
//! valid instance is accepted or an invalid one rejected; the checks of a group that does
//! not compile all fail.
//!
//! The compiler has no hook for remote documents, so groups whose schema refers to
//! `http://localhost:1234/` count as compile errors unless they compile anyway (they are
//! counted apart as `compile_errors_remote`). Draft-4, -6 and -7 schemas carry no `$schema`
//! in the suite (the folder names the draft), so one is added to object schemas of those
//! files to tell the compiler which draft's rules apply (draft 4: `id`, plain-digit
//! integers, boolean `exclusiveMinimum`/`exclusiveMaximum`; drafts 4-7: `$ref` overrides its
//! siblings).

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use sieve_core::{GrammarErrorKind, Limits};

use crate::maskbench::{
    CompileOutcome, Coverage, Feed, TestOutcome, Verdict, check_text, compile_schema_with,
    python_dumps,
};
use crate::ratchet::Outcomes;
use crate::trace::Tracer;
use sieve_core::grammar::json::JsonOptions;

/// The drafts of the suite this harness knows, newest first.
pub const DRAFTS: &[&str] = &["draft2020-12", "draft2019-09", "draft7", "draft6", "draft4"];

/// The URL prefix under which tests reference `remotes/`.
pub const REMOTE_PREFIX: &str = "http://localhost:1234/";

const DRAFT7_URI: &str = "http://json-schema.org/draft-07/schema#";
const DRAFT6_URI: &str = "http://json-schema.org/draft-06/schema#";
const DRAFT4_URI: &str = "http://json-schema.org/draft-04/schema#";

/// Settings of one run.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// Drafts to run (folder names under `tests/`).
    pub drafts: Vec<String>,
    /// Include the files under `optional/`.
    pub optional: bool,
    /// Compile with `JsonOptions::strict`.
    pub strict: bool,
    /// Engine budgets.
    pub limits: Limits,
    /// Draw a progress bar on stderr.
    pub progress: bool,
}

impl Default for SuiteConfig {
    fn default() -> Self {
        SuiteConfig {
            drafts: DRAFTS.iter().map(|d| (*d).to_owned()).collect(),
            optional: false,
            strict: false,
            limits: Limits::default(),
            progress: false,
        }
    }
}

/// One test instance of a group.
#[derive(Debug, Clone)]
pub struct SuiteCheck {
    /// The test's description.
    pub description: String,
    /// Should the instance validate?
    pub valid: bool,
    /// Pass, fail, fail explained by a superset entry ([`crate::trace`]), or limit.
    pub outcome: TestOutcome,
    /// What happened, for humans (empty when passing).
    pub detail: String,
}

/// One schema of a test file with its checks.
#[derive(Debug, Clone)]
pub struct GroupResult {
    /// Draft folder.
    pub draft: String,
    /// Path below `tests/<draft>/`, e.g. `ref.json` or `optional/bignum.json`.
    pub file: String,
    /// Index of the group in its file.
    pub index: usize,
    /// The group's description.
    pub description: String,
    /// How compilation ended.
    pub compile: CompileOutcome,
    /// The compiler's error.
    pub compile_error: Option<String>,
    /// The schema mentions [`REMOTE_PREFIX`].
    pub remote: bool,
    /// Coverage of the compiled grammar.
    pub coverage: Coverage,
    /// Number of test instances.
    pub num_tests: usize,
    /// One entry per test instance when compiled (else empty).
    pub checks: Vec<SuiteCheck>,
}

impl GroupResult {
    /// The ratchet key: `<draft>/<file>#<index>`.
    pub fn key(&self) -> String {
        format!("{}/{}#{}", self.draft, self.file, self.index)
    }

    /// Per-case ratchet codes ([`crate::ratchet`]): `<prefix><key>` = the compile letter,
    /// `<prefix><key>/<i>` = the letter of test `i` (`-` when not run).
    pub fn case_outcomes(&self, prefix: &str, out: &mut Outcomes) {
        let code = self.outcome_code();
        let mut letters = code.chars();
        let compile = letters.next().unwrap_or('x');
        let key = self.key();
        out.insert(format!("{prefix}{key}"), compile.to_string());
        for (i, l) in letters.enumerate() {
            out.insert(format!("{prefix}{key}/{i}"), l.to_string());
        }
    }

    /// The outcome string: compile letter, then one letter per test (`-` when not run).
    pub fn outcome_code(&self) -> String {
        let mut s = String::with_capacity(1 + self.num_tests);
        s.push(self.compile.letter());
        s.extend(self.checks.iter().map(|c| c.outcome.letter()));
        let missing = self.num_tests.saturating_sub(self.checks.len());
        s.extend(std::iter::repeat_n('-', missing));
        s
    }
}

/// Totals over a set of groups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Groups (schemas).
    pub groups: usize,
    /// Groups compiled.
    pub compiled: usize,
    /// Groups not compiled (errors and limits).
    pub compile_errors: usize,
    /// Compile errors in groups that reference remote documents.
    pub compile_errors_remote: usize,
    /// Test instances.
    pub checks: usize,
    /// Checks passing.
    pub passed: usize,
    /// Valid instances rejected (compiled groups).
    pub valid_rejected: usize,
    /// Invalid instances accepted (compiled groups), with or without a reported superset.
    pub invalid_accepted: usize,
    /// Of those, explained by a superset entry of the coverage report ([`crate::trace`]);
    /// the rest are unexplained (bugs).
    pub invalid_accepted_explained: usize,
    /// Checks ended by a limit.
    pub limits: usize,
    /// Checks of groups that did not compile.
    pub not_run: usize,
}

impl Totals {
    fn add(&mut self, g: &GroupResult) {
        self.groups += 1;
        self.checks += g.num_tests;
        if g.compile != CompileOutcome::Compiled {
            self.compile_errors += 1;
            self.compile_errors_remote += usize::from(g.remote);
            self.not_run += g.num_tests;
            return;
        }
        self.compiled += 1;
        for c in &g.checks {
            match (c.outcome, c.valid) {
                (TestOutcome::Pass, _) => self.passed += 1,
                (TestOutcome::Limit, _) => self.limits += 1,
                (_, true) => self.valid_rejected += 1,
                (TestOutcome::FailExplained, false) => {
                    self.invalid_accepted += 1;
                    self.invalid_accepted_explained += 1;
                }
                (_, false) => self.invalid_accepted += 1,
            }
        }
    }

    fn to_json(self) -> Value {
        json!({
            "groups": self.groups,
            "compiled": self.compiled,
            "compile_errors": self.compile_errors,
            "compile_errors_remote": self.compile_errors_remote,
            "checks": self.checks,
            "passed": self.passed,
            "valid_rejected": self.valid_rejected,
            "invalid_accepted": self.invalid_accepted,
            "invalid_accepted_explained": self.invalid_accepted_explained,
            "invalid_accepted_unexplained": self.invalid_accepted - self.invalid_accepted_explained,
            "limits": self.limits,
            "checks_in_uncompiled_groups": self.not_run,
        })
    }
}

/// The results of a suite run.
#[derive(Debug, Clone)]
pub struct SuiteReport {
    /// Every group, by draft, file and index.
    pub groups: Vec<GroupResult>,
    /// How instances were fed.
    pub feed: String,
    /// Strict compilation.
    pub strict: bool,
}

/// The test files of one draft: `tests/<draft>/*.json`, plus `optional/**.json` when
/// asked, as paths relative to the draft folder, sorted.
///
/// # Errors
/// The draft folder cannot be read.
pub fn test_files(dir: &Path, draft: &str, optional: bool) -> Result<Vec<String>> {
    let root = dir.join("tests").join(draft);
    if !root.is_dir() {
        bail!("no test folder {}", root.display());
    }
    let mut out = Vec::new();
    let mut stack = vec![(root.clone(), String::new())];
    while let Some((folder, rel)) = stack.pop() {
        let entries =
            fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", folder.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if path.is_dir() {
                if optional && !name.starts_with('.') {
                    stack.push((path, format!("{rel}{name}/")));
                }
            } else if name.ends_with(".json") && !name.starts_with('.') {
                out.push(format!("{rel}{name}"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// The schema as handed to the compiler: draft-4, -6 and -7 object schemas without
/// `$schema` get one (see the module docs).
pub fn schema_for_draft(schema: &Value, draft: &str) -> Value {
    let mut schema = schema.clone();
    let uri = match draft {
        "draft7" => DRAFT7_URI,
        "draft6" => DRAFT6_URI,
        "draft4" => DRAFT4_URI,
        _ => return schema,
    };
    if let Value::Object(obj) = &mut schema
        && !obj.contains_key("$schema")
    {
        obj.insert("$schema".into(), Value::String(uri.into()));
    }
    schema
}

/// Runs the suite in `dir` (the folder holding `tests/` and `remotes/`).
///
/// # Errors
/// A draft folder or test file cannot be read or is malformed.
pub fn run(dir: &Path, feed: &Feed<'_>, cfg: &SuiteConfig) -> Result<SuiteReport> {
    let mut jobs: Vec<(String, String, PathBuf)> = Vec::new();
    for draft in &cfg.drafts {
        for rel in test_files(dir, draft, cfg.optional)? {
            let path = dir.join("tests").join(draft).join(&rel);
            jobs.push((draft.clone(), rel, path));
        }
    }
    let bar = if cfg.progress {
        indicatif::ProgressBar::new(jobs.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let documents = remote_documents(&dir.join("remotes"))?;
    let mut groups = Vec::new();
    for (draft, rel, path) in &jobs {
        bar.set_message(format!("{draft}/{rel}"));
        let text =
            fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        let list = file
            .as_array()
            .ok_or_else(|| anyhow!("{}: not a list of groups", path.display()))?;
        for (index, group) in list.iter().enumerate() {
            let g = run_group(feed, cfg, &documents, draft, rel, index, group)
                .with_context(|| format!("{}: group {index}", path.display()))?;
            groups.push(g);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(SuiteReport {
        groups,
        feed: feed.describe(),
        strict: cfg.strict,
    })
}

/// Every JSON file under `remotes/`, keyed by the URI tests use for it.
fn remote_documents(dir: &Path) -> Result<Vec<(String, Value)>> {
    let mut out = Vec::new();
    if !dir.is_dir() {
        return Ok(out);
    }
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let mut entries: Vec<PathBuf> = fs::read_dir(&d)
            .with_context(|| format!("reading {}", d.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<std::io::Result<_>>()?;
        entries.sort();
        for p in entries {
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "json") {
                let text =
                    fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
                let v: Value = serde_json::from_str(&text)
                    .with_context(|| format!("parsing {}", p.display()))?;
                let rel = p
                    .strip_prefix(dir)
                    .unwrap_or(&p)
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((format!("{REMOTE_PREFIX}{rel}"), v));
            }
        }
    }
    Ok(out)
}

fn run_group(
    feed: &Feed<'_>,
    cfg: &SuiteConfig,
    documents: &[(String, Value)],
    draft: &str,
    rel: &str,
    index: usize,
    group: &Value,
) -> Result<GroupResult> {
    let schema = group
        .get("schema")
        .ok_or_else(|| anyhow!("no \"schema\""))?;
    let tests = group
        .get("tests")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow!("no \"tests\" list"))?;
    let mut res = GroupResult {
        draft: draft.to_owned(),
        file: rel.to_owned(),
        index,
        description: text_field(group, "description"),
        compile: CompileOutcome::Error,
        compile_error: None,
        remote: schema.to_string().contains(REMOTE_PREFIX),
        coverage: Coverage::default(),
        num_tests: tests.len(),
        checks: Vec::new(),
    };
    let schema = schema_for_draft(schema, draft);
    // The suite checks the specification's defaults: `format` is an annotation.
    let opts = JsonOptions {
        strict: cfg.strict,
        assert_formats: false,
        documents: documents.to_vec(),
        ..JsonOptions::default()
    };
    let (grammar, coverage) = match compile_schema_with(&schema, &opts, feed.vocab(), &cfg.limits) {
        Ok(x) => x,
        Err(e) if e.kind == GrammarErrorKind::Unproductive && e.message.contains("`start`") => {
            // The schema admits no document: every instance is rejected.
            res.compile = CompileOutcome::Compiled;
            for t in tests {
                let valid = t.get("valid").and_then(Value::as_bool).unwrap_or(true);
                let text = python_dumps(t.get("data").unwrap_or(&Value::Null));
                let (outcome, detail) = if valid {
                    (
                        TestOutcome::Fail,
                        format!("valid {text} rejected: the schema compiles to no document"),
                    )
                } else {
                    (TestOutcome::Pass, String::new())
                };
                res.checks.push(SuiteCheck {
                    description: text_field(t, "description"),
                    valid,
                    outcome,
                    detail,
                });
            }
            return Ok(res);
        }
        Err(e) => {
            res.compile = match e.kind {
                GrammarErrorKind::Limit(_) => CompileOutcome::Limit,
                _ => CompileOutcome::Error,
            };
            res.compile_error = Some(e.to_string());
            return Ok(res);
        }
    };
    res.compile = CompileOutcome::Compiled;
    res.coverage = coverage;
    let unit = match feed {
        Feed::Tokens(_) => "token",
        Feed::Bytes(_) => "byte",
    };
    let (mut mask, mut times) = (Vec::new(), Vec::new());
    let mut tracer = Tracer::new(&schema, opts.assert_formats, documents);
    for (i, t) in tests.iter().enumerate() {
        let valid = t
            .get("valid")
            .and_then(Value::as_bool)
            .ok_or_else(|| anyhow!("test {i}: no boolean \"valid\""))?;
        let data = t
            .get("data")
            .ok_or_else(|| anyhow!("test {i}: no \"data\""))?;
        let text = python_dumps(data);
        times.clear();
        let check = check_text(&grammar, feed, &text, &mut mask, &mut times, None)?;
        let (outcome, detail) = match (&check.verdict, valid) {
            (Verdict::Limit(what), _) => (TestOutcome::Limit, what.clone()),
            (Verdict::Timeout, _) => (TestOutcome::Limit, "timeout".to_owned()),
            (Verdict::Accepted, true) => (TestOutcome::Pass, String::new()),
            (v, true) => (
                TestOutcome::Fail,
                format!("valid {text} rejected: {}", v.describe(unit)),
            ),
            (Verdict::Accepted, false) => {
                let trace = tracer.explain(data, &res.coverage.superset_locations);
                let outcome = if trace.explained() {
                    TestOutcome::FailExplained
                } else {
                    TestOutcome::Fail
                };
                (
                    outcome,
                    format!("invalid {text} accepted; {}", trace.describe()),
                )
            }
            (_, false) => (TestOutcome::Pass, String::new()),
        };
        res.checks.push(SuiteCheck {
            description: text_field(t, "description"),
            valid,
            outcome,
            detail,
        });
    }
    Ok(res)
}

fn compile_kind(c: CompileOutcome) -> &'static str {
    if c == CompileOutcome::Limit {
        "limit"
    } else {
        "compile_error"
    }
}

fn text_field(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_owned()
}

impl SuiteReport {
    /// Totals per draft, in [`SuiteConfig::drafts`] order of appearance.
    pub fn totals_by_draft(&self) -> Vec<(String, Totals)> {
        let mut out: Vec<(String, Totals)> = Vec::new();
        for g in &self.groups {
            let pos = match out.iter().position(|(d, _)| *d == g.draft) {
                Some(p) => p,
                None => {
                    out.push((g.draft.clone(), Totals::default()));
                    out.len() - 1
                }
            };
            out[pos].1.add(g);
        }
        out
    }

    /// Totals per file (`<draft>/<file>`), sorted.
    pub fn totals_by_file(&self) -> BTreeMap<String, Totals> {
        let mut out: BTreeMap<String, Totals> = BTreeMap::new();
        for g in &self.groups {
            out.entry(format!("{}/{}", g.draft, g.file))
                .or_default()
                .add(g);
        }
        out
    }

    /// For invalid instances accepted under a reported superset: how many times each
    /// superset keyword was named, by draft.
    pub fn superset_keywords(&self) -> BTreeMap<String, BTreeMap<String, usize>> {
        let mut out: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
        for g in &self.groups {
            let n = g
                .checks
                .iter()
                .filter(|c| c.outcome == TestOutcome::FailExplained)
                .count();
            if n == 0 {
                continue;
            }
            let per = out.entry(g.draft.clone()).or_default();
            for k in &g.coverage.superset_keywords {
                *per.entry(k.clone()).or_default() += n;
            }
        }
        out
    }

    /// Outcome strings by group key.
    pub fn outcomes(&self) -> Outcomes {
        self.groups
            .iter()
            .map(|g| (g.key(), g.outcome_code()))
            .collect()
    }

    /// Per-case ratchet codes of every group ([`GroupResult::case_outcomes`]).
    pub fn case_outcomes(&self, prefix: &str) -> Outcomes {
        let mut out = Outcomes::new();
        for g in &self.groups {
            g.case_outcomes(prefix, &mut out);
        }
        out
    }

    /// The `--json` document.
    pub fn to_json(&self) -> Value {
        let drafts: serde_json::Map<String, Value> = self
            .totals_by_draft()
            .into_iter()
            .map(|(d, t)| (d, t.to_json()))
            .collect();
        let files: Vec<Value> = self
            .totals_by_file()
            .into_iter()
            .map(|(f, t)| {
                let mut v = t.to_json();
                v["file"] = json!(f);
                v
            })
            .collect();
        let mut failures = Vec::new();
        for g in &self.groups {
            if let Some(e) = &g.compile_error {
                failures.push(json!({
                    "file": format!("{}/{}", g.draft, g.file), "group": g.index,
                    "kind": compile_kind(g.compile),
                    "remote": g.remote, "detail": e,
                }));
            }
            for (i, c) in g.checks.iter().enumerate() {
                let kind = match (c.outcome, c.valid) {
                    (TestOutcome::Pass, _) => continue,
                    (TestOutcome::Limit, _) => "limit",
                    (_, true) => "valid_rejected",
                    (TestOutcome::FailExplained, false) => "invalid_accepted_explained",
                    (_, false) => "invalid_accepted",
                };
                failures.push(json!({
                    "file": format!("{}/{}", g.draft, g.file), "group": g.index, "test": i,
                    "kind": kind, "description": c.description, "detail": c.detail,
                }));
            }
        }
        json!({
            "mode": if self.strict { "strict" } else { "default" },
            "feed": self.feed,
            "drafts": drafts,
            "files": files,
            "superset_keywords_of_invalid_accepted": self.superset_keywords(),
            "failures": failures,
        })
    }

    /// The human report: totals per draft, then per file.
    pub fn print(&self, out: &mut dyn Write, per_file: bool) -> std::io::Result<()> {
        let mode = if self.strict { "strict" } else { "default" };
        writeln!(out, "sieve schema-suite: {mode} mode, {}", self.feed)?;
        if per_file {
            writeln!(
                out,
                "  {:<48} {:>6} {:>8} {:>7} {:>6} {:>6}",
                "file", "groups", "compiled", "passed", "v.rej", "i.acc"
            )?;
            for (f, t) in self.totals_by_file() {
                writeln!(
                    out,
                    "  {f:<48} {:>6} {:>8} {:>3}/{:<3} {:>6} {:>6}",
                    t.groups, t.compiled, t.passed, t.checks, t.valid_rejected, t.invalid_accepted
                )?;
            }
        }
        for (draft, t) in self.totals_by_draft() {
            writeln!(
                out,
                "{draft}: {} / {} checks passing; {} invalid accepted ({} explained by a \
                 superset entry, {} unexplained), {} valid rejected, {} limits; groups: {} / {} compiled, {} compile \
                 errors ({} with remote refs)",
                t.passed,
                t.checks,
                t.invalid_accepted,
                t.invalid_accepted_explained,
                t.invalid_accepted - t.invalid_accepted_explained,
                t.valid_rejected,
                t.limits,
                t.compiled,
                t.groups,
                t.compile_errors,
                t.compile_errors_remote
            )?;
        }
        for (draft, kws) in self.superset_keywords() {
            let mut list: Vec<(&String, &usize)> = kws.iter().collect();
            list.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let shown: Vec<String> = list.iter().map(|(k, n)| format!("{k} {n}")).collect();
            writeln!(
                out,
                "  {draft}: superset keywords named by accepted invalid instances: {}",
                shown.join(", ")
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draft7_gets_schema() {
        let s = json!({"type": "integer"});
        assert_eq!(schema_for_draft(&s, "draft7")["$schema"], json!(DRAFT7_URI));
        assert_eq!(schema_for_draft(&s, "draft6")["$schema"], json!(DRAFT6_URI));
        assert_eq!(schema_for_draft(&s, "draft4")["$schema"], json!(DRAFT4_URI));
        assert!(
            schema_for_draft(&s, "draft2019-09")
                .get("$schema")
                .is_none()
        );
        assert!(
            schema_for_draft(&s, "draft2020-12")
                .get("$schema")
                .is_none()
        );
        assert_eq!(schema_for_draft(&json!(true), "draft7"), json!(true));
        let own = json!({"$schema": "x"});
        assert_eq!(schema_for_draft(&own, "draft7"), own);
    }
}
