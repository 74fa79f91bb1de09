//! The `sieve` command-line tool: `sieve demo`, `sieve generate` (with the default
//! `generate` feature), `sieve mask`, `sieve maskbench`, `sieve schema-suite`,
//! `sieve concurrent` and `sieve grammar-info`.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use sieve_bench::concurrent::{self, ConcurrentConfig};
use sieve_bench::demo::{self, DemoConfig};
use sieve_bench::grammar_info;
use sieve_bench::mask_cmd::{self, GrammarSource, MaskConfig};
use sieve_bench::maskbench::{self, Feed, MaskbenchConfig};
use sieve_bench::schema_suite::{self, SuiteConfig};
use sieve_bench::tokenizer::LoadedTokenizer;
use sieve_core::Limits;
use sieve_core::grammar::GrammarSyntax;
use sieve_core::grammar::gbnf::GbnfOptions;

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
    /// Generate with a real model (SmolLM2-135M-Instruct by default, fetched on first use)
    /// under a JSON Schema, Lark grammar or regex; check the outputs and time the masks.
    #[cfg(feature = "generate")]
    Generate(Box<GenerateArgs>),
    /// Generate with a real model: this build has no model backend (see --help).
    #[cfg(not(feature = "generate"))]
    #[command(disable_help_flag = true)]
    Generate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Compute one token mask after a prefix and show what it allows.
    Mask(MaskArgs),
    /// Check and time JSON Schema compilation and masks on MaskBench-format files.
    Maskbench(MaskbenchArgs),
    /// Run the JSON-Schema-Test-Suite (tests/<draft>/*.json) through the compiler.
    SchemaSuite(SchemaSuiteArgs),
    /// Many matchers of one JSON Schema (or of many) at once on several threads: masks/s,
    /// latency, matcher bytes and peak RSS; with `--threads 1,2,4` a speed-up table.
    Concurrent(ConcurrentArgs),
    /// Analyze a grammar: its class (regular, linear, general) and why, nullable, productive
    /// and unreachable rules, each rule's shortest string, lexeme conflicts
    /// (core/docs/analysis.md).
    GrammarInfo(GrammarInfoArgs),
    /// Time tool lists (MaskBench object schemas as parameters, in a family's tool-call
    /// format): cold compile, compile + first mask, the same list again through the compile
    /// cache, and one tool changed.
    Toolbench(ToolbenchArgs),
}

#[derive(Debug, Args)]
struct ToolbenchArgs {
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long)]
    tokenizer: String,
    /// List sizes, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10,50,100,200,500")]
    sizes: Vec<usize>,
    /// The tool-call format (a structural-tag preset): qwen3, hermes, llama3, mistral,
    /// deepseek, harmony.
    #[arg(long, default_value = "qwen3")]
    format: String,
    /// Repetitions per measurement (medians are printed).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Write the rows as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write each size's structural tag to this directory (`tools-N.json`).
    #[arg(long)]
    write_tags: Option<PathBuf>,
    /// MaskBench files or directories the parameters come from.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct GrammarInfoArgs {
    /// The grammar file.
    file: PathBuf,
    /// lark, gbnf, json_schema, regex, structural_tag or llguidance (default: from the
    /// extension: .lark, .gbnf, .json, .regex, .llg).
    #[arg(long)]
    syntax: Option<String>,
    /// Print the JSON report (format in core/docs/analysis.md).
    #[arg(long)]
    json: bool,
    /// Names special tokens: `o200k_base`, `cl100k_base`, or a Hugging Face
    /// tokenizer.json (default: ../shared/tokenizers/llama3.json when found, else none).
    #[arg(long)]
    tokenizer: Option<String>,
}

#[cfg(feature = "generate")]
#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("source").args(["grammar", "regex", "schema", "structural_tag", "tools"])
))]
struct GenerateArgs {
    /// A GGUF model file (default: SmolLM2-135M-Instruct Q4_1 in the cache directory
    /// `$SIEVE_CACHE_DIR`, `$XDG_CACHE_HOME/sieve` or `~/.cache/sieve`, fetched with pip
    /// on first use).
    #[arg(long)]
    model: Option<PathBuf>,
    /// A JSON Schema file; the output is a JSON document it describes.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// A Lark grammar file.
    #[arg(long)]
    grammar: Option<PathBuf>,
    /// A regex the whole output must match (may start with `-`).
    #[arg(long, allow_hyphen_values = true)]
    regex: Option<String>,
    /// A structural tag file (XGrammar's JSON format: free text, tool calls, reasoning;
    /// core/docs/structural.md).
    #[arg(long)]
    structural_tag: Option<PathBuf>,
    #[command(flatten)]
    preset: PresetArgs,
    /// The user turn (repeat for several sequences, one per prompt). Default: a request
    /// for output matching the schema, grammar or regex, quoting it.
    #[arg(long, allow_hyphen_values = true)]
    prompt: Vec<String>,
    /// The system turn.
    #[arg(long, default_value = sieve_generate::report::DEFAULT_SYSTEM)]
    system: String,
    /// Most tokens per sequence, sampled plus forced [default: 256].
    #[arg(long)]
    max_tokens: Option<usize>,
    /// Sampling temperature (0 = greedy, the default).
    #[arg(long)]
    temperature: Option<f32>,
    /// Nucleus sampling threshold, with --temperature.
    #[arg(long, default_value_t = 1.0)]
    top_p: f32,
    /// Seed of sequence 0; sequence i uses seed + i.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Sequences decoded together: with one prompt, N seeds; with several prompts, their
    /// number.
    #[arg(long, default_value_t = 1)]
    batch: usize,
    /// Write the generated text here (one JSON line per sequence when there are several).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Sample every token, even where the grammar forces the text.
    #[arg(long)]
    no_jump_forward: bool,
    /// Budget mode: masks keep a completion reachable within --max-tokens, so the output
    /// is complete when the budget allows it (core/docs/budget.md). On by default when
    /// --max-tokens is given.
    #[arg(long, overrides_with = "no_budget")]
    budget: bool,
    /// Turn budget mode off.
    #[arg(long)]
    no_budget: bool,
    /// Skip the unconstrained baseline run (same prompts, same token counts, no masks)
    /// that the tokens/s comparison uses.
    #[arg(long)]
    no_compare: bool,
    /// A lazy grammar: the constraint applies from the first of these strings on (repeat
    /// for several; the grammar sees the trigger itself first). Before it, every token is
    /// allowed (core/docs/gate.md).
    #[arg(long)]
    trigger: Vec<String>,
    /// A reasoning phase first, ended by this token (a special token's name such as
    /// `</think>`, or an id); the constraint applies after it.
    #[arg(long)]
    reasoning_end: Option<String>,
    /// With --reasoning-end: at most this many reasoning tokens, then the end token is forced.
    #[arg(long, requires = "reasoning_end")]
    reasoning_budget: Option<u32>,
    /// llama.cpp threads (default: the cores not kept busy by other processes, by the load
    /// average; at least 1).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the shortest complete output of the constraint (bytes, and the token count
    /// budget mode plans with) as one JSON line and exit; no generation.
    #[arg(long)]
    shortest: bool,
    /// Only make sure the default model is cached, print its path and exit (for CI).
    #[arg(long, conflicts_with_all = ["schema", "grammar", "regex", "structural_tag", "tools", "model"])]
    fetch_only: bool,
}

/// A model family's tool-call format as the constraint (a structural-tag preset).
#[derive(Debug, Args)]
struct PresetArgs {
    /// An OpenAI-style tool list (JSON file): the constraint is the structural tag of
    /// `--tool-format` for these tools.
    #[arg(long)]
    tools: Option<PathBuf>,
    /// The model family's tool-call format: qwen3, hermes, llama3, mistral, deepseek,
    /// harmony.
    #[arg(long, default_value = "hermes", requires = "tools")]
    tool_format: String,
    /// auto, required, none, or a tool's name.
    #[arg(long, requires = "tools")]
    tool_choice: Option<String>,
    /// Allow several tool calls.
    #[arg(long, requires = "tools")]
    parallel_tool_calls: bool,
    /// A reasoning block comes first (`<think>`...`</think>` or the family's own).
    #[arg(long, requires = "tools")]
    reasoning: bool,
}

impl PresetArgs {
    /// The structural tag text, when `--tools` is given.
    fn structural_tag(&self) -> Result<Option<String>> {
        use sieve_core::grammar::structural::presets;
        let Some(path) = &self.tools else {
            return Ok(None);
        };
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let tools: serde_json::Value =
            serde_json::from_str(&text).with_context(|| format!("{}: not JSON", path.display()))?;
        let opts = presets::PresetOptions {
            tool_choice: self.tool_choice.clone(),
            parallel_tool_calls: self.parallel_tool_calls,
            reasoning: self.reasoning,
        };
        let tag = presets::preset(&self.tool_format, &tools, &opts)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Some(tag.to_string()))
    }
}

#[derive(Debug, Args)]
struct ConcurrentArgs {
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long)]
    tokenizer: String,
    /// A JSON Schema file (default: the schema `benches/masks.rs` times, with generated
    /// valid outputs).
    #[arg(long, requires = "outputs")]
    schema: Option<PathBuf>,
    /// With `--schema`: a file of valid outputs, one JSON document per line; matcher `i`
    /// is fed line `i` modulo their number.
    #[arg(long)]
    outputs: Option<PathBuf>,
    /// Instead of one schema: the first `--schemas` MaskBench files of this directory (in
    /// `sieve maskbench`'s sample order) whose schema compiles and has a valid instance a
    /// matcher accepts; matcher `i` runs schema `i % k` on its instances.
    #[arg(long, conflicts_with = "schema")]
    maskbench: Option<PathBuf>,
    /// With `--maskbench`: how many schemas.
    #[arg(long, default_value_t = 64, requires = "maskbench")]
    schemas: usize,
    /// Matchers alive at once.
    #[arg(long, default_value_t = 64)]
    matchers: usize,
    /// Host threads (default: the available parallelism). A list (`1,2,4,8`) runs the same
    /// workload at each count (1 added as the baseline) and prints a speed-up table.
    #[arg(long, value_delimiter = ',')]
    threads: Vec<usize>,
    /// With a list of `--threads`: runs per thread count; the one with the least wall time
    /// is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Seed of the first generated output (default schema).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Advance all matchers as one batch, one call of sieve's batch runner (the pool behind
    /// the C, C++ and Python batch APIs) per step, the host consuming tokens in between;
    /// the wall time is that of the batch calls.
    #[arg(long)]
    lockstep: bool,
    /// With `--lockstep`: also a digest of every mask by request and step, taken between the
    /// batch calls, and a failure if it differs between thread counts (it slows the batch
    /// calls that follow: a check, not a timing run).
    #[arg(long, requires = "lockstep")]
    mask_digest: bool,
}

#[derive(Debug, Args)]
struct MaskbenchArgs {
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long, required_unless_present = "classes")]
    tokenizer: Option<String>,
    /// Only the class census: lower each schema to the grammar IR and count regular, linear
    /// and general grammars (core/docs/analysis.md); no masks. With --json, writes the
    /// census there.
    #[arg(long)]
    classes: bool,
    /// With --classes: objects without `additionalProperties` are closed (XGrammar's strict
    /// mode) instead of open, as the spec says.
    #[arg(long, requires = "classes")]
    closed: bool,
    /// Only the first N files in sha256(file name) order (0 = all), as llgbench.
    #[arg(long, default_value_t = 0)]
    limit: usize,
    /// Write the JSON summary (with per-schema records) here.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Compile in strict mode (every approximation is an error).
    #[arg(long)]
    strict: bool,
    /// Feed every instance pretty-printed, as `json.dumps(data, indent=2)`, instead of on
    /// one line.
    #[arg(long)]
    pretty: bool,
    /// Per-schema wall-clock guard in seconds (0 = none).
    #[arg(long, default_value_t = 60.0)]
    timeout_s: f64,
    /// Write one JSON line per compiled schema with every mask time (llgbench's layout).
    #[arg(long, value_name = "FILE")]
    raw_masks: Option<PathBuf>,
    /// Write an SVG flamegraph of the run, sampled at 997 Hz from after the tokenizer is
    /// loaded (needs a build with `--features pprof`).
    #[arg(long, value_name = "FILE")]
    flamegraph: Option<PathBuf>,
    /// The lexer-state budget of each matcher (`Limits::max_lexer_states`); a smaller one
    /// shows what lexer rebuilds cost.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_lexer_states)]
    max_lexer_states: usize,
    /// MaskBench files, or directories of them.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Debug, Args)]
struct SchemaSuiteArgs {
    /// The suite folder (holding `tests/` and `remotes/`).
    dir: PathBuf,
    /// `draft2020-12`, `draft2019-09`, `draft7`, `draft6`, `draft4`, or `all`.
    #[arg(long, default_value = "all")]
    draft: String,
    /// Compile in strict mode (every approximation is an error).
    #[arg(long)]
    strict: bool,
    /// Include the files under `optional/`.
    #[arg(long)]
    optional: bool,
    /// Feed tokens of this tokenizer (masks checked) instead of bytes.
    #[arg(long)]
    tokenizer: Option<String>,
    /// Write the JSON report here.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Print only the totals, not the per-file table.
    #[arg(long)]
    summary_only: bool,
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
#[command(group(
    clap::ArgGroup::new("source").required(true).args(["grammar", "gbnf", "regex", "schema", "structural_tag", "tools"])
))]
struct MaskArgs {
    /// A grammar file: Lark, or the syntax `--syntax` names.
    #[arg(long)]
    grammar: Option<PathBuf>,
    /// How `--grammar FILE` is written: lark (the default), gbnf, json_schema, regex,
    /// structural_tag or llguidance (aliases such as json, ebnf are accepted).
    #[arg(long, value_name = "NAME")]
    syntax: Option<String>,
    /// A GBNF grammar file (llama.cpp's format); same as `--grammar FILE --syntax gbnf`.
    #[arg(long, value_name = "FILE")]
    gbnf: Option<PathBuf>,
    /// GBNF's start rule.
    #[arg(long, value_name = "RULE", default_value = "root")]
    gbnf_root: String,
    /// GBNF: accept left-recursive rules (llama.cpp refuses them).
    #[arg(long)]
    allow_left_recursion: bool,
    /// A regex the whole output must match (may start with `-`, e.g. `-?[0-9]+`).
    #[arg(long, allow_hyphen_values = true)]
    regex: Option<String>,
    /// A JSON Schema file; the output is a JSON document it describes.
    #[arg(long)]
    schema: Option<PathBuf>,
    /// A structural tag file (XGrammar's JSON format; core/docs/structural.md).
    #[arg(long)]
    structural_tag: Option<PathBuf>,
    #[command(flatten)]
    preset: PresetArgs,
    /// With a JSON Schema (`--schema`, or `--syntax json_schema`): compile in strict mode
    /// (every approximation is an error).
    #[arg(long)]
    strict: bool,
    /// `o200k_base`, `cl100k_base`, or a path to a Hugging Face tokenizer.json.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: String,
    /// Text to tokenize and consume before computing the mask (encoded as output text: no
    /// space is prepended, whatever the tokenizer; may start with `-`).
    #[arg(long, default_value = "", allow_hyphen_values = true)]
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
        #[cfg(feature = "generate")]
        Command::Generate(args) => run_generate(*args, &mut out),
        #[cfg(not(feature = "generate"))]
        Command::Generate { .. } => {
            eprintln!(
                "this sieve was built without the model backend: llama.cpp's build needs \
                 cmake, a C++ compiler and libclang.\nRun `bench/scripts/generate.sh [ARGS]` \
                 (installs them with apt when missing, then builds with --features generate), \
                 or `cargo run --release -p sieve-bench --features generate --bin sieve -- \
                 generate ARGS`."
            );
            Ok(ExitCode::from(2))
        }
        Command::Mask(args) => {
            // clap's `source` group admits one source.
            if args.syntax.is_some() && args.grammar.is_none() {
                anyhow::bail!("--syntax applies to --grammar FILE only");
            }
            let file = |syntax: GrammarSyntax, path: &PathBuf| -> Result<_> {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                Ok((syntax, path.display().to_string(), text))
            };
            let (syntax, name, text) = match (&args.grammar, &args.gbnf, &args.regex, &args.schema)
            {
                (Some(path), ..) => {
                    let syntax = match &args.syntax {
                        None => GrammarSyntax::Lark,
                        Some(s) => GrammarSyntax::from_name(s).with_context(|| {
                            let names: Vec<_> =
                                GrammarSyntax::ALL.iter().map(|s| s.name()).collect();
                            format!("unknown --syntax {s:?} (one of {})", names.join(", "))
                        })?,
                    };
                    file(syntax, path)?
                }
                (_, Some(path), ..) => file(GrammarSyntax::Gbnf, path)?,
                (_, _, Some(re), _) => (GrammarSyntax::Regex, format!("regex {re:?}"), re.clone()),
                (_, _, _, Some(path)) => file(GrammarSyntax::JsonSchema, path)?,
                (None, None, None, None) => match &args.structural_tag {
                    None if args.preset.tools.is_some() => (
                        GrammarSyntax::StructuralTag,
                        format!("--tool-format {}", args.preset.tool_format),
                        args.preset.structural_tag()?.unwrap_or_default(),
                    ),
                    Some(path) => file(GrammarSyntax::StructuralTag, path)?,
                    None => anyhow::bail!(
                        "give --grammar FILE, --gbnf FILE, --regex RE, --schema FILE or \
                         --structural-tag FILE"
                    ),
                },
            };
            if args.strict && syntax != GrammarSyntax::JsonSchema {
                anyhow::bail!("--strict applies to JSON Schemas only");
            }
            let tok = load(&args.tokenizer)?;
            let mut source = GrammarSource::new(syntax, name, &text);
            source.options.json.strict = args.strict;
            source.options.gbnf = GbnfOptions {
                root: args.gbnf_root,
                allow_left_recursion: args.allow_left_recursion,
            };
            let cfg = MaskConfig {
                prefix: args.prefix,
                sample: args.sample,
                ..MaskConfig::default()
            };
            let report = mask_cmd::run(&tok, &source, &cfg)?;
            report.print(&tok, &mut out).context("writing the report")?;
            out.flush().context("writing the report")?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Maskbench(args) if args.classes => run_census(args, &mut out),
        Command::Maskbench(args) => run_maskbench(args, &mut out),
        Command::GrammarInfo(args) => run_grammar_info(args, &mut out),
        Command::SchemaSuite(args) => run_schema_suite(args, &mut out),
        Command::Concurrent(args) => run_concurrent(&args, &mut out),
        Command::Toolbench(args) => run_toolbench(args, &mut out),
    }
}

/// `sieve toolbench`: the tool-list table (see `sieve_bench::toolbench`).
fn run_toolbench(args: ToolbenchArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let tok = load(&args.tokenizer)?;
    let cfg = sieve_bench::toolbench::Config {
        paths: args.paths,
        sizes: args.sizes,
        format: args.format,
        reps: args.reps,
        write_tags: args.write_tags,
    };
    let rows = sieve_bench::toolbench::run(&cfg, &tok.vocab)?;
    if let Some(path) = &args.json {
        write_json(path, &sieve_bench::toolbench::to_json(&rows))?;
    }
    writeln!(
        out,
        "{} ({} tokens), format {}",
        tok.name,
        tok.vocab.vocab_size(),
        cfg.format
    )
    .and_then(|()| out.write_all(sieve_bench::toolbench::table(&rows).as_bytes()))
    .and_then(|()| out.flush())
    .context("writing the table")?;
    Ok(ExitCode::SUCCESS)
}

/// `sieve concurrent`: one run (one or no `--threads`), or a speed-up table (a list).
fn run_concurrent(args: &ConcurrentArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let tok = load(&args.tokenizer)?;
    let workloads = concurrent_workloads(args, &tok, out)?;
    let refs: Vec<(&serde_json::Value, &[Vec<u32>])> =
        workloads.iter().map(|(s, o)| (s, o.as_slice())).collect();
    let mut cfg = ConcurrentConfig {
        matchers: args.matchers,
        lockstep: args.lockstep,
        mask_digest: args.mask_digest,
        ..ConcurrentConfig::default()
    };
    if args.threads.len() > 1 {
        let reports = concurrent::scaling(&tok.vocab, &refs, &cfg, &args.threads, args.rounds)?;
        concurrent::print_scaling(&reports, args.rounds, out)?;
    } else {
        if let Some(&t) = args.threads.first() {
            cfg.threads = t;
        }
        let report = concurrent::run_many(&tok.vocab, &refs, &cfg)?;
        report.print(out)?;
    }
    out.flush().context("writing the report")?;
    Ok(ExitCode::SUCCESS)
}

/// The schemas of `sieve concurrent` and the outputs (token ids) each is fed: `--maskbench`,
/// `--schema` with `--outputs`, or the default schema with generated outputs.
fn concurrent_workloads(
    args: &ConcurrentArgs,
    tok: &LoadedTokenizer,
    out: &mut dyn Write,
) -> Result<Vec<(serde_json::Value, Vec<Vec<u32>>)>> {
    if let Some(dir) = &args.maskbench {
        let (picked, skipped) =
            concurrent::maskbench_workloads(tok, dir, args.schemas, &Limits::default())?;
        if picked.is_empty() {
            anyhow::bail!("no usable schema in {}", dir.display());
        }
        writeln!(
            out,
            "schemas: {} from {} ({skipped} skipped: not compiling or no accepted valid \
             instance), first {}",
            picked.len(),
            dir.display(),
            picked[0].0
        )?;
        return Ok(picked.into_iter().map(|(_, s, o)| (s, o)).collect());
    }
    let (schema, texts) = match (&args.schema, &args.outputs) {
        (Some(path), Some(outputs)) => {
            let text = std::fs::read_to_string(outputs)
                .with_context(|| format!("reading {}", outputs.display()))?;
            let lines = text.lines().filter(|l| !l.trim().is_empty());
            (
                mask_cmd::read_schema(path)?,
                lines.map(str::to_owned).collect(),
            )
        }
        _ => (
            serde_json::from_str(concurrent::DEFAULT_SCHEMA)?,
            concurrent::default_outputs(args.matchers, args.seed),
        ),
    };
    let outputs = texts.iter().map(|t: &String| tok.encode(t)).collect();
    Ok(vec![(schema, outputs)])
}

#[cfg(feature = "generate")]
fn run_generate(args: GenerateArgs, out: &mut dyn Write) -> Result<ExitCode> {
    use sieve_bench::generate_cmd::{self, GenerateCmd, Source};
    if args.fetch_only {
        return generate_cmd::fetch_only(out);
    }
    let preset = args.preset.structural_tag()?;
    let source = match (args.schema, args.grammar, args.regex, args.structural_tag) {
        (None, None, None, None) if preset.is_some() => Source::StructuralTagText {
            text: preset.unwrap_or_default(),
            name: format!("--tool-format {}", args.preset.tool_format),
        },
        (Some(p), None, None, None) => Source::Schema(p),
        (None, Some(p), None, None) => Source::Grammar(p),
        (None, None, Some(re), None) => Source::Regex(re),
        (None, None, None, Some(p)) => Source::StructuralTag(p),
        _ => anyhow::bail!(
            "give one of --schema FILE, --grammar FILE, --regex RE or --structural-tag FILE"
        ),
    };
    let sampling = generate_cmd::sampling(args.temperature, args.top_p)?;
    let budget = (args.budget || args.max_tokens.is_some()) && !args.no_budget;
    let cmd = GenerateCmd {
        model: args.model,
        source,
        run: sieve_generate::RunConfig {
            prompts: args.prompt,
            system: args.system,
            batch: args.batch,
            generate: sieve_generate::GenerateConfig {
                max_tokens: args.max_tokens.unwrap_or(256),
                sampling,
                seed: args.seed,
                jump_forward: !args.no_jump_forward,
                budget,
                compare: !args.no_compare,
                progress: std::io::stderr().is_terminal(),
                threads: args.threads,
                gate: None,
            },
            gate: sieve_generate::GateSpec {
                triggers: args.trigger,
                reasoning_end: args.reasoning_end,
                reasoning_budget: args.reasoning_budget,
            },
        },
        output: args.output,
    };
    if args.shortest {
        return generate_cmd::shortest(&cmd, out);
    }
    generate_cmd::run(&cmd, out)
}

fn write_json(path: &std::path::Path, value: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

fn run_maskbench(args: MaskbenchArgs, out: &mut dyn Write) -> Result<ExitCode> {
    #[cfg(not(feature = "pprof"))]
    if args.flamegraph.is_some() {
        anyhow::bail!("--flamegraph needs a build with --features pprof");
    }
    let files = maskbench::list_files(&args.paths, args.limit)?;
    let tok = load(args.tokenizer.as_deref().unwrap_or_default())?;
    let cfg = MaskbenchConfig {
        strict: args.strict,
        pretty: args.pretty,
        timeout: (args.timeout_s > 0.0).then(|| Duration::from_secs_f64(args.timeout_s)),
        progress: std::io::stderr().is_terminal(),
        limits: Limits {
            max_lexer_states: args.max_lexer_states,
            ..Limits::default()
        },
    };
    // Samples the run itself (compiling, masks, checks), not the tokenizer load.
    #[cfg(feature = "pprof")]
    let sampler = match &args.flamegraph {
        Some(_) => Some(sieve_bench::profile::Sampler::start()?),
        None => None,
    };
    let report = maskbench::run(&Feed::Tokens(&tok), &files, &cfg);
    // A flamegraph error is returned after the report is written.
    #[cfg(feature = "pprof")]
    let flamegraph = match (sampler, &args.flamegraph) {
        (Some(sampler), Some(path)) => sampler.write_flamegraph(path).map(|()| Some(path)),
        _ => Ok(None),
    };
    if let Some(path) = &args.json {
        let limit = if args.limit > 0 {
            args.limit
        } else {
            files.len()
        };
        let paths: Vec<String> = args.paths.iter().map(|p| p.display().to_string()).collect();
        let meta = serde_json::json!({
            "harness": "sieve maskbench",
            "tokenizer": tok.name,
            "data": paths,
            "files": files.len(),
            "sample": format!("first {limit} files by sha256(file name)"),
            "serialization": if args.pretty {
                "json.dumps(data, indent=2, ensure_ascii=False)"
            } else {
                "json.dumps(data, indent=None, ensure_ascii=False)"
            },
            "mode": if args.strict { "strict" } else { "default" },
            "timeout_s": args.timeout_s,
            "timing": "Instant around Matcher::compute_mask only; compile = \
                       Grammar::from_json_schema (schema already parsed) + Matcher::new; \
                       ttfm = compile + first mask on that matcher",
        });
        write_json(path, &report.to_json(meta))?;
    }
    if let Some(path) = &args.raw_masks {
        let file =
            std::fs::File::create(path).with_context(|| format!("writing {}", path.display()))?;
        let mut w = std::io::BufWriter::new(file);
        report
            .write_raw_masks(&mut w)
            .and_then(|()| w.flush())
            .with_context(|| format!("writing {}", path.display()))?;
    }
    report.print(out).context("writing the report")?;
    out.flush().context("writing the report")?;
    #[cfg(feature = "pprof")]
    if let Some(path) = flamegraph? {
        eprintln!("wrote the flamegraph {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

fn run_grammar_info(args: GrammarInfoArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let syntax = grammar_info::syntax_for(&args.file, args.syntax.as_deref())?;
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let text = match grammar_info::maskbench_schema(&text) {
        Some(schema) if syntax == sieve_core::grammar::GrammarSyntax::JsonSchema => {
            eprintln!("note: a MaskBench file: analyzing its \"schema\"");
            schema
        }
        _ => text,
    };
    let tokenizer = match args.tokenizer {
        Some(t) => Some(t),
        None => grammar_info::default_tokenizer().map(|p| p.display().to_string()),
    };
    let vocab = match &tokenizer {
        Some(t) => load(t)?.vocab,
        None => maskbench::byte_vocab(),
    };
    let opts = sieve_core::grammar::CompileOptions::default();
    let info = grammar_info::analyze_text(syntax, &text, &opts, &vocab, &Limits::default())
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    grammar_info::print(&info, args.json, out).context("writing the report")?;
    out.flush().context("writing the report")?;
    Ok(ExitCode::SUCCESS)
}

fn run_census(args: MaskbenchArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let files = maskbench::list_files(&args.paths, args.limit)?;
    let vocab = match &args.tokenizer {
        Some(t) => load(t)?.vocab,
        None => maskbench::byte_vocab(),
    };
    let limits = Limits {
        max_lexer_states: args.max_lexer_states,
        ..Limits::default()
    };
    let progress = std::io::stderr().is_terminal();
    let total = files.len();
    let mut opts = sieve_core::grammar::CompileOptions::default();
    opts.json.additional_properties_default = !args.closed;
    let census = grammar_info::census(&files, &opts, &vocab, &limits, |i| {
        if progress && i % 100 == 0 {
            eprint!("\r{i}/{total}");
        }
    });
    if progress {
        eprintln!("\r{total}/{total}");
    }
    if let Some(path) = &args.json {
        write_json(path, &census.to_json())?;
    }
    out.write_all(census.to_text().as_bytes())
        .and_then(|()| out.flush())
        .context("writing the report")?;
    Ok(ExitCode::SUCCESS)
}

fn run_schema_suite(args: SchemaSuiteArgs, out: &mut dyn Write) -> Result<ExitCode> {
    let drafts = match args.draft.as_str() {
        "all" => schema_suite::DRAFTS
            .iter()
            .map(|d| (*d).to_owned())
            .collect(),
        d if schema_suite::DRAFTS.contains(&d) => vec![d.to_owned()],
        d => anyhow::bail!(
            "unknown draft {d:?} (expected {} or all)",
            schema_suite::DRAFTS.join(", ")
        ),
    };
    let tok = args.tokenizer.as_deref().map(load).transpose()?;
    let feed = match &tok {
        Some(t) => Feed::Tokens(t),
        None => Feed::bytes(),
    };
    let cfg = SuiteConfig {
        drafts,
        optional: args.optional,
        strict: args.strict,
        progress: std::io::stderr().is_terminal(),
        ..SuiteConfig::default()
    };
    let report = schema_suite::run(&args.dir, &feed, &cfg)?;
    if let Some(path) = &args.json {
        write_json(path, &report.to_json())?;
    }
    report
        .print(out, !args.summary_only)
        .context("writing the report")?;
    out.flush().context("writing the report")?;
    Ok(ExitCode::SUCCESS)
}
