//! A short real generation with the default model (SmolLM2-135M-Instruct Q4_1), when it is
//! cached (`sieve generate --fetch-only` caches it; see `sieve_generate::fetch` for the
//! directory). Without it the tests print `SKIP: <reason>` and pass.
//!
//! Cost: about 0.2 s to load the model and well under a second of inference.
//!
//! The model backend is the `llama` feature (llama.cpp's build needs cmake and libclang):
//! `cargo test --workspace` builds without it and prints a SKIP line instead; `.ci/run` runs
//! these tests with `cargo test --release -p sieve-generate --features llama`.

#![cfg(feature = "llama")]

use std::path::PathBuf;

use serde_json::json;
use sieve_generate::model::Model;
use sieve_generate::{Constraint, GenerateConfig, RunConfig, Sampling, fetch};

fn model_path() -> Option<PathBuf> {
    let path = fetch::cached_model();
    if path.is_none() {
        let where_ = fetch::default_model_path()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|e| e.to_string());
        eprintln!(
            "SKIP: the default model is not cached at {where_} (run `sieve generate \
             --fetch-only`)"
        );
    }
    path
}

#[test]
fn greedy_schema_output_is_complete_and_valid() {
    let Some(path) = model_path() else { return };
    let model = Model::load(&path).expect("loading the cached model");
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 16},
            "age": {"type": "integer", "minimum": 0, "maximum": 120}
        },
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let constraint = Constraint::JsonSchema {
        schema,
        name: "test schema".into(),
    };
    let cfg = RunConfig {
        prompts: vec!["Give the name and age of a fictional person, as JSON.".into()],
        generate: GenerateConfig {
            max_tokens: 40,
            sampling: Sampling::Greedy,
            compare: false,
            ..GenerateConfig::default()
        },
        ..RunConfig::default()
    };
    let report = sieve_generate::run(&model, &constraint, &cfg).expect("generation");
    let seq = &report.output.sequences[0];
    let text = String::from_utf8_lossy(&seq.text);
    assert!(
        seq.stop.is_complete(),
        "stopped by {} after {} tokens: {text}",
        seq.stop,
        seq.tokens.len()
    );
    assert!(report.validity[0].valid, "{:?}: {text}", report.validity[0]);
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        value["name"].is_string() && value["age"].is_u64(),
        "{value}"
    );
    // Every consumed token was checked by a mask: as many masks as sampled tokens, at least.
    assert!(report.output.constrained.mask_times.len() >= seq.tokens.len() - seq.forced);
}

#[test]
fn regex_batch_with_seeds() {
    let Some(path) = model_path() else { return };
    let model = Model::load(&path).expect("loading the cached model");
    let constraint = Constraint::Regex("(yes|no), [a-z ]{1,20}\\.".into());
    let cfg = RunConfig {
        prompts: vec!["Is the sky blue? Answer yes or no, then a short reason.".into()],
        batch: 2,
        generate: GenerateConfig {
            max_tokens: 24,
            sampling: Sampling::TopP {
                temperature: 0.8,
                top_p: 0.95,
            },
            seed: 5,
            ..GenerateConfig::default()
        },
        ..RunConfig::default()
    };
    let report = sieve_generate::run(&model, &constraint, &cfg).expect("generation");
    assert_eq!(report.output.sequences.len(), 2);
    assert!(report.output.unconstrained.is_some());
    for (s, v) in report.output.sequences.iter().zip(&report.validity) {
        let text = String::from_utf8_lossy(&s.text);
        // A sequence may run out of tokens inside the free text; a complete one is valid.
        if s.stop.is_complete() {
            assert!(v.valid, "{v:?}: {text}");
        }
        assert!(s.tokens.len() <= 24);
    }
}

/// The vocabulary read from the GGUF spells every token as the Hugging Face
/// `tokenizer.json` of SmolLM2 does (`shared/tokenizers/smollm2.json`, found through
/// `$SIEVE_SHARED` or `../shared` next to the workspace).
#[test]
fn gguf_vocabulary_matches_tokenizer_json() {
    let Some(path) = model_path() else { return };
    let shared = std::env::var_os("SIEVE_SHARED").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
        PathBuf::from,
    );
    let file = shared.join("tokenizers/smollm2.json");
    let Ok(text) = std::fs::read_to_string(&file) else {
        eprintln!("SKIP: {} not readable (set SIEVE_SHARED)", file.display());
        return;
    };
    let json: serde_json::Value = serde_json::from_str(&text).expect("tokenizer JSON");
    let table = sieve_core::vocab::hf::table(&json).expect("HF table");
    let model = Model::load(&path).expect("loading the cached model");
    let v = &model.vocab;
    assert_eq!(v.vocab_size(), table.tokens.len());
    for (id, bytes) in table.tokens.iter().enumerate() {
        assert_eq!(v.token_text(id as u32), bytes.as_slice(), "token {id}");
    }
    assert_eq!(v.special_tokens(), table.special.as_slice());
    assert_eq!(v.eos_tokens().first(), table.eos.first());
}

/// Budget mode: at 1.2x the shortest completion's token count, a schema whose lists and
/// strings invite a long answer still ends complete and valid, in every sequence of a
/// sampled batch; so does a regex with a free-text tail at a tight budget.
#[test]
fn budget_mode_finishes_within_max_tokens() {
    let Some(path) = model_path() else { return };
    let model = Model::load(&path).expect("loading the cached model");
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "hobbies": {"type": "array", "items": {"type": "string"}, "minItems": 2},
            "bio": {"type": "string", "minLength": 5}
        },
        "required": ["name", "hobbies", "bio"],
        "additionalProperties": false
    });
    let regex = Constraint::Regex("(yes|no), [a-z ]{1,60}\\.".into());
    let schema = Constraint::JsonSchema {
        schema,
        name: "budget test schema".into(),
    };
    for constraint in [schema, regex] {
        let (grammar, _) = constraint.compile(&model.vocab).expect("compiles");
        let mut m = sieve_core::Matcher::new(&grammar);
        let shortest = m
            .completion_tokens()
            .expect("search")
            .expect("a completion");
        let max_tokens = (shortest * 6).div_ceil(5);
        let cfg = RunConfig {
            prompts: vec!["Write a long, detailed answer with many items.".into()],
            batch: 3,
            generate: GenerateConfig {
                max_tokens,
                sampling: Sampling::TopP {
                    temperature: 1.0,
                    top_p: 1.0,
                },
                seed: 11,
                budget: true,
                compare: false,
                ..GenerateConfig::default()
            },
            ..RunConfig::default()
        };
        let report = sieve_generate::run(&model, &constraint, &cfg).expect("generation");
        for (s, v) in report.output.sequences.iter().zip(&report.validity) {
            let text = String::from_utf8_lossy(&s.text);
            assert!(
                s.stop.is_complete() && v.valid,
                "budget {max_tokens} (shortest {shortest}): stopped by {} after {} tokens, \
                 {v:?}: {text}",
                s.stop,
                s.tokens.len()
            );
            assert!(s.tokens.len() <= max_tokens);
        }
    }
}

/// Tool calling (issue 18): with two tools described in the system turn (SmolLM2's own
/// tool-call prompt and `<tool_call>[...]</tool_call>` format), the structural tag
/// `bench/grammars/tool-call.structural.json` (free text, then one call of either tool)
/// yields free text plus a `<tool_call>` whose arguments the `jsonschema` crate validates
/// against the called tool's parameters (`bench/grammars/tools.json`). The 135M model does
/// not call tools on its own; the tag requires one call, and budget mode makes room for it
/// within `max_tokens`, so the model chooses the text, the tool and the arguments.
#[test]
fn tool_call_with_two_tools_validates() {
    let Some(path) = model_path() else { return };
    let model = Model::load(&path).expect("loading the cached model");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../grammars");
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).expect("bench/grammars file");
    let tag = read("tool-call.structural.json");
    let tools: serde_json::Value = serde_json::from_str(&read("tools.json")).expect("tools JSON");
    let tool_list: Vec<serde_json::Value> = tools
        .as_array()
        .expect("a tool list")
        .iter()
        .map(|t| t["function"].clone())
        .collect();
    let system = format!(
        "You are an expert in composing functions. You are given a question and a set of \
         possible functions. Based on the question, you will need to make one or more \
         function/tool calls to achieve the purpose.\n\nYou have access to the following \
         tools:\n<tools>{}</tools>\n\nThe output MUST strictly adhere to the following \
         format.\n<tool_call>[\n{{\"name\": \"func_name1\", \"arguments\": {{\"argument1\": \
         \"value1\"}}}}\n]</tool_call>",
        serde_json::Value::Array(tool_list)
    );
    let constraint = Constraint::StructuralTag {
        text: tag,
        name: "tool-call.structural.json".into(),
    };
    let cfg = RunConfig {
        prompts: vec!["What is the weather like in Paris today?".into()],
        system,
        generate: GenerateConfig {
            max_tokens: 120,
            sampling: Sampling::Greedy,
            budget: true,
            compare: false,
            ..GenerateConfig::default()
        },
        ..RunConfig::default()
    };
    let report = sieve_generate::run(&model, &constraint, &cfg).expect("generation");
    let seq = &report.output.sequences[0];
    let text = String::from_utf8_lossy(&seq.text).into_owned();
    assert!(seq.stop.is_complete(), "stopped by {}: {text}", seq.stop);
    let (free, rest) = text.split_once("<tool_call>[").expect("a <tool_call>");
    assert!(!free.trim().is_empty(), "free text before the call: {text}");
    let call = rest.strip_suffix("]</tool_call>").expect("the call's end");
    let call: serde_json::Value = serde_json::from_str(call).expect("the call is JSON");
    let name = call["name"].as_str().expect("a tool name");
    let tool = tools
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["function"]["name"] == name))
        .unwrap_or_else(|| panic!("unknown tool {name}: {text}"));
    let validator =
        jsonschema::validator_for(&tool["function"]["parameters"]).expect("schema compiles");
    assert!(
        validator.is_valid(&call["arguments"]),
        "arguments invalid for {name}: {text}"
    );
    eprintln!("tool call output: {text}");
}
