//! The `sieve` command-line tool: `sieve demo` and `sieve mask`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use sieve_bench::demo::{self, DemoConfig};
use sieve_bench::mask_cmd::{self, GrammarSource, MaskConfig};
use sieve_bench::tokenizer::LoadedTokenizer;

/// Grammar-constrained decoding engine: demos and diagnostics.
#[derive(Debug, Parser)]
#[command(name = "sieve", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Sample random tokens constrained by a grammar (JSON by default) and time the masks.
    Demo(DemoArgs),
    /// Compute one token mask after a prefix and show what it allows.
    Mask(MaskArgs),
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: String,
    /// Seed of the random sampler.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Tokens sampled freely before winding down to a complete output.
    #[arg(long, default_value_t = 120)]
    max_tokens: usize,
    /// A Lark grammar file to use instead of the bundled JSON grammar.
    #[arg(long)]
    grammar: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["grammar", "regex"])))]
struct MaskArgs {
    /// A Lark grammar file.
    #[arg(long)]
    grammar: Option<PathBuf>,
    /// A regex the whole output must match.
    #[arg(long)]
    regex: Option<String>,
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: String,
    /// Text to tokenize and consume before computing the mask (SentencePiece-style
    /// tokenizers prepend a space to it, as when encoding a prompt).
    #[arg(long, default_value = "")]
    prefix: String,
    /// How many allowed tokens to list.
    #[arg(long, default_value_t = 20)]
    sample: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn load(name: &str) -> Result<LoadedTokenizer> {
    LoadedTokenizer::load(name)
}

fn run(cli: Cli) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Demo(args) => {
            let tok = load(&args.tokenizer)?;
            let (name, src) = match &args.grammar {
                Some(path) => (path.display().to_string(), demo::read_grammar(path)?),
                None => (demo::JSON_LARK_NAME.to_owned(), demo::JSON_LARK.to_owned()),
            };
            let cfg = DemoConfig {
                max_tokens: args.max_tokens,
                seed: args.seed,
                progress: std::io::stderr().is_terminal(),
                ..DemoConfig::default()
            };
            let report = demo::run(&tok, &name, &src, &cfg)?;
            report.print(&tok, &mut out).context("writing the report")?;
            out.flush().context("writing the report")?;
            Ok(if report.valid {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Mask(args) => {
            let tok = load(&args.tokenizer)?;
            let (lark, name);
            let source = match (&args.grammar, &args.regex) {
                (Some(path), _) => {
                    lark = demo::read_grammar(path)?;
                    name = path.display().to_string();
                    GrammarSource::Lark {
                        name: &name,
                        src: &lark,
                    }
                }
                (None, Some(re)) => GrammarSource::Regex(re),
                (None, None) => anyhow::bail!("give --grammar FILE or --regex RE"),
            };
            let cfg = MaskConfig {
                prefix: args.prefix,
                sample: args.sample,
                ..MaskConfig::default()
            };
            let report = mask_cmd::run(&tok, source, &cfg)?;
            report.print(&tok, &mut out).context("writing the report")?;
            out.flush().context("writing the report")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}
