//! `sieve toolbench`: what a tool list costs to compile (issue 37's tool-list rows).
//!
//! Tool lists are built from MaskBench object schemas as the tools' parameters (in the file
//! order `sieve maskbench` uses, each schema kept only if it compiles alone), then written
//! in a model family's tool-call format as an XGrammar structural tag (the presets of
//! `sieve mask --tools`). For each list size it times, one thread, median of `reps`:
//!
//! - `compile`: a cold compile of the tag (no cache);
//! - `compile + first mask`: a cold compile, a matcher and its first mask;
//! - `again`: the same tag compiled again through a [`CompileCache`] that holds it;
//! - `one changed`: the list with its last tool's parameters replaced, through the same
//!   cache (what an agent pays when one tool changed between turns).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use sieve_core::grammar::cache::CompileCache;
use sieve_core::grammar::structural::presets::{self, PresetOptions};
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

/// What to measure.
#[derive(Debug, Clone)]
pub struct Config {
    /// MaskBench files or directories (the tools' parameters come from them).
    pub paths: Vec<PathBuf>,
    /// List sizes.
    pub sizes: Vec<usize>,
    /// The preset family (`qwen3`, `hermes`, `llama3`, ...).
    pub format: String,
    /// Repetitions per measurement (the median is reported).
    pub reps: usize,
    /// Write each size's tag here as `tools-N.json` (to run other engines on the same lists).
    pub write_tags: Option<PathBuf>,
}

/// One list size's medians, in milliseconds.
#[derive(Debug, Clone)]
pub struct Row {
    /// Tools in the list.
    pub tools: usize,
    /// Bytes of the structural tag.
    pub tag_bytes: usize,
    /// A cold compile.
    pub compile_ms: f64,
    /// A cold compile, a matcher and its first mask.
    pub first_mask_ms: f64,
    /// The same tag again through a cache that holds it.
    pub again_ms: f64,
    /// The list with one tool changed, through the same cache.
    pub one_changed_ms: f64,
    /// Why the tag did not compile (then the times are NaN).
    pub error: Option<String>,
}

/// The object schemas of `paths` that compile alone, at most `n`.
fn parameters(paths: &[PathBuf], n: usize, vocab: &Arc<Vocabulary>) -> Result<Vec<Value>> {
    let files = crate::maskbench::list_files(paths, 0)?;
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let mut out = Vec::new();
    for f in files {
        if out.len() >= n {
            break;
        }
        let text = std::fs::read_to_string(&f).with_context(|| format!("{}", f.display()))?;
        let Ok(v) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let schema = &v["schema"];
        let is_object = schema["type"] == "object" && schema["properties"].is_object();
        if is_object && Grammar::from_json_schema(schema, &opts, vocab, &Limits::default()).is_ok()
        {
            out.push(schema.clone());
        }
    }
    Ok(out)
}

/// An OpenAI-style tool list of the given parameters.
fn tool_list(params: &[Value]) -> Value {
    Value::Array(
        params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({"type": "function", "function": {
                    "name": format!("tool_{i}"),
                    "parameters": p,
                }})
            })
            .collect(),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::stats::percentile_sorted(&v, 50.0)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// Runs the measurements (see the module docs).
///
/// # Errors
/// Unreadable inputs or too few schemas for the largest size (a tag that does not compile is a
/// row with its error).
pub fn run(cfg: &Config, vocab: &Arc<Vocabulary>) -> Result<Vec<Row>> {
    let largest = cfg.sizes.iter().copied().max().unwrap_or(0);
    let params = parameters(&cfg.paths, largest + 1, vocab)?;
    anyhow::ensure!(
        params.len() > largest,
        "only {} object schemas compile; {} tools need {}",
        params.len(),
        largest,
        largest + 1
    );
    let opts = CompileOptions::default();
    let limits = Limits::default();
    let tag_of = |params: &[Value]| -> Result<String> {
        let tag = presets::preset(&cfg.format, &tool_list(params), &PresetOptions::default())
            .map_err(|e| anyhow::anyhow!("preset: {e}"))?;
        Ok(tag.to_string())
    };
    let compile = |cache: Option<&CompileCache>, tag: &str| -> Result<Grammar> {
        let syntax = GrammarSyntax::StructuralTag;
        let r = match cache {
            Some(c) => c.compile(syntax, tag, &opts, vocab, &limits),
            None => Grammar::compile(syntax, tag, &opts, vocab, &limits),
        };
        Ok(r.map_err(|e| anyhow::anyhow!("compile: {e}"))?.0)
    };
    let mut rows = Vec::new();
    for &n in &cfg.sizes {
        let tag = tag_of(&params[..n])?;
        let mut changed_params = params[..n].to_vec();
        if let Some(last) = changed_params.last_mut() {
            *last = params[n].clone();
        }
        let changed = tag_of(&changed_params)?;
        if let Some(dir) = &cfg.write_tags {
            let path = dir.join(format!("tools-{n}.json"));
            std::fs::write(&path, &tag).with_context(|| format!("writing {}", path.display()))?;
        }
        if let Err(e) = compile(None, &tag) {
            rows.push(Row {
                tools: n,
                tag_bytes: tag.len(),
                compile_ms: f64::NAN,
                first_mask_ms: f64::NAN,
                again_ms: f64::NAN,
                one_changed_ms: f64::NAN,
                error: Some(e.to_string()),
            });
            continue;
        }
        let (mut cold, mut first, mut again, mut one) = (vec![], vec![], vec![], vec![]);
        let mut mask = vec![0u32; vocab.mask_words()];
        for _ in 0..cfg.reps.max(1) {
            let t = Instant::now();
            drop(compile(None, &tag)?);
            cold.push(ms(t));
            let t = Instant::now();
            let g = compile(None, &tag)?;
            Matcher::new(&g)
                .compute_mask(&mut mask)
                .map_err(|e| anyhow::anyhow!("first mask: {e}"))?;
            first.push(ms(t));
            let cache = CompileCache::new(1 << 30);
            compile(Some(&cache), &tag)?;
            let t = Instant::now();
            compile(Some(&cache), &tag)?;
            again.push(ms(t));
            let t = Instant::now();
            compile(Some(&cache), &changed)?;
            one.push(ms(t));
        }
        rows.push(Row {
            tools: n,
            tag_bytes: tag.len(),
            compile_ms: median(cold),
            first_mask_ms: median(first),
            again_ms: median(again),
            one_changed_ms: median(one),
            error: None,
        });
    }
    Ok(rows)
}

/// The rows as a Markdown table.
pub fn table(rows: &[Row]) -> String {
    let mut s = String::from(
        "| tools | tag bytes | compile ms | compile + first mask ms | again (cached) ms | one changed ms |\n\
         |--:|--:|--:|--:|--:|--:|\n",
    );
    for r in rows {
        if let Some(e) = &r.error {
            s.push_str(&format!("| {} | {} | {e} | | | |\n", r.tools, r.tag_bytes));
            continue;
        }
        s.push_str(&format!(
            "| {} | {} | {:.2} | {:.2} | {:.4} | {:.2} |\n",
            r.tools, r.tag_bytes, r.compile_ms, r.first_mask_ms, r.again_ms, r.one_changed_ms
        ));
    }
    s
}

/// The rows as JSON.
pub fn to_json(rows: &[Row]) -> Value {
    Value::Array(
        rows.iter()
            .map(|r| {
                json!({"tools": r.tools, "tag_bytes": r.tag_bytes, "compile_ms": r.compile_ms,
                       "first_mask_ms": r.first_mask_ms, "again_ms": r.again_ms,
                       "one_changed_ms": r.one_changed_ms, "error": r.error})
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_list_measures_and_the_cache_hits() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/maskbench");
        let cfg = Config {
            paths: vec![dir],
            sizes: vec![1, 3],
            format: "qwen3".into(),
            reps: 1,
            write_tags: None,
        };
        let vocab = crate::maskbench::byte_vocab();
        let rows = run(&cfg, &vocab).expect("runs");
        assert_eq!(rows.len(), 2);
        assert!(rows[1].tag_bytes > rows[0].tag_bytes);
        assert!(table(&rows).lines().count() == 4);
    }
}
