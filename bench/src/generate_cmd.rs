//! `sieve generate` (with the `generate` feature): a real model under sieve's masks, through
//! the `sieve-generate` crate. This module turns the CLI's settings into a run, fetches the
//! default model on first use, and falls back to `sieve demo` when it cannot.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use sieve_generate::model::Model;
use sieve_generate::{Constraint, RunConfig, Sampling, fetch};

use crate::demo::{self, DemoConfig};
use crate::tokenizer::LoadedTokenizer;

/// What the constraint is read from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A JSON Schema file.
    Schema(PathBuf),
    /// A Lark grammar file.
    Grammar(PathBuf),
    /// A regex.
    Regex(String),
    /// A structural tag (JSON) file.
    StructuralTag(PathBuf),
    /// A structural tag's text (e.g. a preset for `--tools`).
    StructuralTagText {
        /// The JSON text.
        text: String,
        /// Names it in errors.
        name: String,
    },
}

/// Settings of `sieve generate`.
#[derive(Debug, Clone)]
pub struct GenerateCmd {
    /// A GGUF model; `None` = the cached default model (fetched if missing).
    pub model: Option<PathBuf>,
    /// The constraint.
    pub source: Source,
    /// The loop's and the prompts' settings.
    pub run: RunConfig,
    /// Write the outputs here.
    pub output: Option<PathBuf>,
}

impl Source {
    fn constraint(&self) -> Result<Constraint> {
        Ok(match self {
            Source::Schema(p) => Constraint::JsonSchema {
                schema: crate::mask_cmd::read_schema(p)?,
                name: p.display().to_string(),
            },
            Source::Grammar(p) => Constraint::Lark {
                src: demo::read_grammar(p)?,
                name: p.display().to_string(),
            },
            Source::Regex(re) => Constraint::Regex(re.clone()),
            Source::StructuralTag(p) => Constraint::StructuralTag {
                text: std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?,
                name: p.display().to_string(),
            },
            Source::StructuralTagText { text, name } => Constraint::StructuralTag {
                text: text.clone(),
                name: name.clone(),
            },
        })
    }
}

/// Builds the sampling mode from `--temperature` and `--top-p`.
///
/// # Errors
/// A temperature below 0 or a top-p outside `(0, 1]`.
pub fn sampling(temperature: Option<f32>, top_p: f32) -> Result<Sampling> {
    if !(top_p > 0.0 && top_p <= 1.0) {
        bail!("--top-p must be in (0, 1], got {top_p}");
    }
    match temperature {
        None if top_p >= 1.0 => Ok(Sampling::Greedy),
        Some(0.0) => Ok(Sampling::Greedy),
        Some(t) if !(t > 0.0 && t.is_finite()) => {
            bail!("--temperature must be 0 (greedy) or positive, got {t}")
        }
        t => Ok(Sampling::TopP {
            temperature: t.unwrap_or(1.0),
            top_p,
        }),
    }
}

/// Only makes sure the default model is cached (for CI); prints its path.
///
/// # Errors
/// The fetch failed.
pub fn fetch_only(out: &mut dyn Write) -> Result<ExitCode> {
    let path = fetch::ensure_model()?;
    writeln!(out, "{}", path.display())?;
    Ok(ExitCode::SUCCESS)
}

/// `sieve generate --shortest`: the shortest completion of the constraint from its start,
/// over the model's vocabulary, as one JSON line `{"bytes", "tokens", "text", "supersets"}`
/// (`tokens`: the greedy token count budget mode plans with, `Matcher::completion_tokens`;
/// `supersets`: the compile notes where the grammar accepts more than the schema). No
/// generation runs.
///
/// # Errors
/// The constraint or the model does not load, or the search ran out of its budget.
pub fn shortest(cmd: &GenerateCmd, out: &mut dyn Write) -> Result<ExitCode> {
    let constraint = cmd.source.constraint()?;
    let path = match &cmd.model {
        Some(p) => p.clone(),
        None => fetch::ensure_model()?,
    };
    let model = Model::load(&path)?;
    let (grammar, notes) = constraint.compile(&model.vocab)?;
    // Where the grammar accepts more than the schema (reported as a superset), outputs may
    // be invalid however they are generated.
    let supersets: Vec<&String> = notes.iter().filter(|n| n.contains("(superset)")).collect();
    let mut m = sieve_core::Matcher::new(&grammar);
    let text = m
        .shortest_completion()
        .map_err(|e| anyhow::anyhow!("shortest completion: {e}"))?
        .context("the constraint has no complete output")?;
    let tokens = m
        .completion_tokens()
        .map_err(|e| anyhow::anyhow!("completion tokens: {e}"))?
        .context("the vocabulary cannot spell the shortest completion")?;
    let line = serde_json::json!({
        "bytes": text.len(),
        "tokens": tokens,
        "text": String::from_utf8_lossy(&text),
        "supersets": supersets,
    });
    writeln!(out, "{line}")?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `sieve generate`.
///
/// # Errors
/// A constraint or model that does not load, or a failed generation.
pub fn run(cmd: &GenerateCmd, out: &mut dyn Write) -> Result<ExitCode> {
    // Read the constraint first: a bad file is reported before any download.
    let constraint = cmd.source.constraint()?;
    let path = match &cmd.model {
        Some(p) => p.clone(),
        None => match fetch::ensure_model() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("sieve: cannot get the default model: {e:#}");
                eprintln!(
                    "sieve: falling back to `sieve demo` (a random sampler under the same \
                     masks, no model); give --model FILE.gguf to use a local model"
                );
                return fallback_demo(&cmd.source, cmd.run.generate.max_tokens, out);
            }
        },
    };
    if matches!(cmd.run.generate.sampling, Sampling::Greedy)
        && cmd.run.batch > 1
        && cmd.run.prompts.len() <= 1
    {
        eprintln!(
            "note: greedy decoding of one prompt gives {} identical sequences; add \
             --temperature T for different seeds to matter",
            cmd.run.batch
        );
    }
    let model = Model::load(&path)?;
    let report = sieve_generate::run(&model, &constraint, &cmd.run)?;
    report.print(out).context("writing the report")?;
    out.flush().context("writing the report")?;
    if let Some(path) = &cmd.output {
        write_outputs(&report, path)?;
    }
    Ok(if report.all_valid() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn write_outputs(report: &sieve_generate::Report, path: &Path) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
    let mut w = std::io::BufWriter::new(file);
    report
        .write_outputs(&mut w)
        .and_then(|()| w.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// `sieve demo` on the same grammar (a Lark file) or the bundled JSON grammar.
fn fallback_demo(source: &Source, max_tokens: usize, out: &mut dyn Write) -> Result<ExitCode> {
    let tok = LoadedTokenizer::load("o200k_base")?;
    let (name, src) = match source {
        Source::Grammar(p) => (p.display().to_string(), demo::read_grammar(p)?),
        _ => (demo::JSON_LARK_NAME.to_owned(), demo::JSON_LARK.to_owned()),
    };
    let cfg = DemoConfig {
        max_tokens,
        ..DemoConfig::default()
    };
    let report = demo::run(&tok, &name, &src, &cfg)?;
    report.print(&tok, out).context("writing the report")?;
    Ok(if report.valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
