//! `sieve grammar-info FILE` and `sieve maskbench --classes`: grammar analysis
//! (`sieve_core::ir::analysis`, `core/docs/analysis.md`) of one grammar, or the class census
//! of a set of MaskBench schemas.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use serde_json::{Value, json};
use sieve_core::grammar::{CompileOptions, GrammarSyntax, lower_ir};
use sieve_core::ir::analysis::{GrammarClass, GrammarInfo, analyze};
use sieve_core::{CompileBudget, Grammar, GrammarError, Limits, Matcher, Vocabulary};

/// The tokenizer `grammar-info` names special tokens with when none is given: llama3's,
/// from the shared tokenizer folder beside the repository (`../shared/tokenizers`).
pub const DEFAULT_TOKENIZER: &str = "llama3.json";

/// The default tokenizer's path, if the shared folder is found (beside the current
/// directory, or beside the repository this binary was built from).
pub fn default_tokenizer() -> Option<PathBuf> {
    let here = Path::new("../shared/tokenizers").join(DEFAULT_TOKENIZER);
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/tokenizers")
        .join(DEFAULT_TOKENIZER);
    [here, repo].into_iter().find(|p| p.is_file())
}

/// The syntax of `path`: `explicit` (any name [`GrammarSyntax::from_name`] knows), else by
/// extension (`.lark`, `.gbnf`, `.json` = JSON Schema, `.regex`, `.llg` = LLGuidance).
///
/// # Errors
/// An unknown name, or no name and an unknown extension.
pub fn syntax_for(path: &Path, explicit: Option<&str>) -> Result<GrammarSyntax> {
    if let Some(name) = explicit {
        return GrammarSyntax::from_name(name).ok_or_else(|| {
            anyhow!(
                "unknown syntax {name:?} (expected lark, gbnf, json_schema, regex, \
                 structural_tag or llguidance)"
            )
        });
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let name = match ext.as_str() {
        "lark" => "lark",
        "gbnf" | "ebnf" => "gbnf",
        "json" => "json_schema",
        "regex" | "re" => "regex",
        "llg" => "llguidance",
        _ => "",
    };
    GrammarSyntax::from_name(name).ok_or_else(|| {
        anyhow!(
            "{}: cannot tell the syntax from the extension; give --syntax",
            path.display()
        )
    })
}

/// The schema of a MaskBench file (`{"schema": ..., "tests": [...]}`) given as JSON Schema
/// text, so that `grammar-info` reads MaskBench files directly; `None` for anything else.
pub fn maskbench_schema(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    let obj = v.as_object()?;
    if !obj.contains_key("tests") {
        return None;
    }
    obj.get("schema").map(Value::to_string)
}

/// Lower `text` to the IR (as `Grammar::compile` would) and analyze it. Lowering and
/// analysis each get a full compile budget under `limits`.
///
/// # Errors
/// The front end's error, or a limit the analysis hit.
pub fn analyze_text(
    syntax: GrammarSyntax,
    text: &str,
    opts: &CompileOptions,
    vocab: &Vocabulary,
    limits: &Limits,
) -> Result<GrammarInfo, GrammarError> {
    let mut budget = CompileBudget::new(limits);
    let ir = lower_ir(syntax, text, opts, vocab, limits, &mut budget)?;
    let mut budget = CompileBudget::new(limits);
    let mut info = analyze(&ir, Some(vocab), limits, &mut budget)?;
    // A read-past lexeme's candidate strings, fed byte by byte to a matcher of the same IR:
    // the ones it rejects are lost. A grammar the build refuses confirms none.
    if info.conflicts.iter().any(|c| !c.candidates.is_empty())
        && let Ok(g) = Grammar::from_lowered_ir(&ir, &crate::maskbench::byte_vocab(), limits)
    {
        info.confirm_lost(&ir, Some(vocab), |text| {
            let mut m = Matcher::new(&g);
            !(m.try_consume_bytes(text) && m.is_accepting())
        });
    }
    Ok(info)
}

/// The class census of a set of grammars.
#[derive(Debug, Clone, Default)]
pub struct ClassCensus {
    /// Grammars per class (of the whole grammar, from its start).
    pub classes: BTreeMap<GrammarClass, usize>,
    /// Grammars in which every production has at most one nonterminal, whatever their
    /// class (right-linear grammars are regular and linear).
    pub syntactically_linear: usize,
    /// Grammars that did not lower (the front end refused them or hit a limit), with the
    /// first line of their error.
    pub failed: Vec<(String, String)>,
    /// Per MaskBench collection: counts of regular, linear, general, failed.
    pub by_collection: BTreeMap<String, [usize; 4]>,
    /// Total grammars.
    pub total: usize,
}

/// Has every production reachable from the start at most one nonterminal?
fn syntactically_linear(info: &GrammarInfo) -> bool {
    match info.class {
        GrammarClass::Linear => true,
        GrammarClass::General => false,
        GrammarClass::Regular => info.syntactically_linear,
    }
}

impl ClassCensus {
    /// Count one grammar's outcome under `collection`.
    pub fn add(
        &mut self,
        name: &str,
        collection: &str,
        result: &Result<GrammarInfo, GrammarError>,
    ) {
        self.total += 1;
        let slot = self.by_collection.entry(collection.to_owned()).or_default();
        match result {
            Ok(info) => {
                *self.classes.entry(info.class).or_default() += 1;
                if syntactically_linear(info) {
                    self.syntactically_linear += 1;
                }
                slot[info.class as usize] += 1;
            }
            Err(e) => {
                slot[3] += 1;
                let msg = e.to_string();
                let first = msg.lines().next().unwrap_or_default().to_owned();
                self.failed.push((name.to_owned(), first));
            }
        }
    }

    fn count(&self, class: GrammarClass) -> usize {
        self.classes.get(&class).copied().unwrap_or(0)
    }

    /// The census as JSON.
    pub fn to_json(&self) -> Value {
        let by: serde_json::Map<String, Value> = self
            .by_collection
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    json!({"regular": v[0], "linear": v[1], "general": v[2], "failed": v[3]}),
                )
            })
            .collect();
        json!({
            "total": self.total,
            "regular": self.count(GrammarClass::Regular),
            "linear": self.count(GrammarClass::Linear),
            "general": self.count(GrammarClass::General),
            "failed": self.failed.len(),
            "syntactically_linear": self.syntactically_linear,
            "by_collection": by,
            "failures": self
                .failed
                .iter()
                .map(|(file, error)| json!({"file": file, "error": error}))
                .collect::<Vec<_>>(),
        })
    }

    /// The census for people: counts and percentages, then per collection.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let pct = |n: usize| {
            if self.total == 0 {
                0.0
            } else {
                100.0 * n as f64 / self.total as f64
            }
        };
        let _ = writeln!(s, "class census over {} schemas:", self.total);
        for class in [
            GrammarClass::Regular,
            GrammarClass::Linear,
            GrammarClass::General,
        ] {
            let n = self.count(class);
            let _ = writeln!(s, "  {:<8} {n:>6}  {:>5.1}%", class.name(), pct(n));
        }
        let f = self.failed.len();
        let _ = writeln!(s, "  {:<8} {f:>6}  {:>5.1}%", "failed", pct(f));
        let _ = writeln!(
            s,
            "  at most one nonterminal per production (regular or not): {} ({:.1}%)",
            self.syntactically_linear,
            pct(self.syntactically_linear)
        );
        let _ = writeln!(
            s,
            "\n{:<28} {:>8} {:>8} {:>8} {:>8}",
            "collection", "regular", "linear", "general", "failed"
        );
        for (k, v) in &self.by_collection {
            let _ = writeln!(s, "{k:<28} {:>8} {:>8} {:>8} {:>8}", v[0], v[1], v[2], v[3]);
        }
        for (file, error) in &self.failed {
            let _ = writeln!(s, "failed: {file}: {error}");
        }
        s
    }
}

/// The class census of MaskBench `files`: each schema lowered with
/// `lower_ir(GrammarSyntax::JsonSchema, ..)` under `opts` and classified from its start.
pub fn census(
    files: &[PathBuf],
    opts: &CompileOptions,
    vocab: &Vocabulary,
    limits: &Limits,
    mut progress: impl FnMut(usize),
) -> ClassCensus {
    let mut out = ClassCensus::default();
    for (i, path) in files.iter().enumerate() {
        progress(i);
        let name = path
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let collection = crate::maskbench::collection(&name).to_owned();
        let result = match read_schema_text(path) {
            Ok(text) => analyze_text(GrammarSyntax::JsonSchema, &text, opts, vocab, limits),
            Err(e) => Err(GrammarError::new(
                sieve_core::GrammarErrorKind::Unsupported,
                format!("{e:#}"),
            )),
        };
        out.add(&name, &collection, &result);
    }
    out
}

/// The schema of a MaskBench file as JSON text.
///
/// # Errors
/// The file does not read or holds no schema.
pub fn read_schema_text(path: &Path) -> Result<String> {
    let (schema, _) = crate::maskbench::read_maskbench_file(path)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(schema.to_string())
}

/// Print `info` (text, or the JSON report with `json`).
///
/// # Errors
/// Writing fails.
pub fn print(info: &GrammarInfo, json: bool, out: &mut dyn Write) -> std::io::Result<()> {
    if json {
        let text = serde_json::to_string_pretty(&info.to_json()).unwrap_or_default();
        writeln!(out, "{text}")
    } else {
        out.write_all(info.to_text().as_bytes())
    }
}
