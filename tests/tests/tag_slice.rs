//! The free-text slice (`slicer::TAG_FREE_TEXT`, `[^<]+`): tool-call grammars whose free text
//! ends at a `<` trigger get their first mask from it, and it changes no mask.
//!
//! Each family's "auto" tool grammar (free text, then calls) is compiled twice on Llama 3's
//! vocabulary: once with the default slices, once with the JSON text slices only (the
//! reference: the tag slice left out). Along random walks (each step a token allowed by the
//! reference mask, the walk's own text first), both matchers give the same mask at every
//! step. For the `<`-triggered families the first mask must have used a slice.

use std::sync::Arc;

use serde_json::json;
use sieve_core::grammar::json::JsonOptions;
use sieve_core::grammar::structural::presets::{PresetOptions, preset};
use sieve_core::slicer::{TAG_FREE_TEXT, default_slices};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use sieve_tests::{Rng, allowed_tokens};

/// Llama 3's vocabulary twice: default slices, and the default slices without the tag one.
fn vocabularies() -> Option<(Arc<Vocabulary>, Arc<Vocabulary>)> {
    let full = sieve_tests::llama3_vocab()?;
    assert!(
        full.slices().iter().any(|s| s.pattern() == TAG_FREE_TEXT),
        "the default slices hold the tag slice"
    );
    let tokens: Vec<Vec<u8>> = (0..full.vocab_size() as u32)
        .map(|id| full.token_text(id).to_vec())
        .collect();
    let json_only: Vec<String> = default_slices()
        .into_iter()
        .filter(|p| p != TAG_FREE_TEXT)
        .collect();
    let reference =
        Vocabulary::with_slices(tokens, full.special_tokens(), full.eos_tokens(), &json_only)
            .unwrap();
    Some((full, Arc::new(reference)))
}

fn tools() -> serde_json::Value {
    json!([{
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"]
            }
        }
    }])
}

fn grammar(family: &str, vocab: &Arc<Vocabulary>) -> Grammar {
    let opts = PresetOptions {
        tool_choice: Some("auto".into()),
        ..PresetOptions::default()
    };
    let tag = preset(family, &tools(), &opts).unwrap();
    Grammar::from_structural_tag(
        &tag.to_string(),
        &JsonOptions::default(),
        vocab,
        &Limits::default(),
    )
    .unwrap()
}

/// Masks of both grammars along `walks` random walks of up to `steps` tokens, starting with
/// `text` (tokenized greedily) when it fits. Returns how many masks were compared and the
/// first mask's slice count on the default vocabulary.
fn compare(
    family: &str,
    full: &Arc<Vocabulary>,
    reference: &Arc<Vocabulary>,
    text: &str,
) -> (usize, u64) {
    let (g, r) = (grammar(family, full), grammar(family, reference));
    let mut rng = Rng::new(0x7a6_5117);
    let mut compared = 0;
    let mut first_sliced = 0;
    let start = reference
        .greedy_tokenize_text(text.as_bytes())
        .unwrap_or_default();
    for walk in 0..6 {
        let (mut m, mut n) = (Matcher::new(&g), Matcher::new(&r));
        let (mut a, mut b) = (vec![0u32; m.mask_words()], vec![0u32; n.mask_words()]);
        for step in 0..48 {
            m.compute_mask(&mut a).unwrap();
            n.compute_mask(&mut b).unwrap();
            if walk == 0 && step == 0 {
                first_sliced = m.stats().sliced;
            }
            assert_eq!(a, b, "{family}: walk {walk} step {step}: masks differ");
            compared += 1;
            let allowed: Vec<u32> = allowed_tokens(&b)
                .into_iter()
                .filter(|t| !reference.eos_tokens().contains(t))
                .collect();
            let t = match start.get(step) {
                Some(&t) if walk < 3 && allowed.contains(&t) => t,
                _ if allowed.is_empty() => break,
                _ => allowed[rng.below(allowed.len())],
            };
            m.consume_token(t).unwrap();
            n.consume_token(t).unwrap();
        }
    }
    (compared, first_sliced)
}

#[test]
fn tag_slice_changes_no_mask_and_serves_the_first_mask() {
    let Some((full, reference)) = vocabularies() else {
        return;
    };
    let call = r#"Let me check. <tool_call>
{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}
</tool_call>"#;
    for (family, sliced) in [
        ("qwen3", true),
        ("hermes", true),
        ("llama3", false),
        ("deepseek", true),
    ] {
        let (compared, first_sliced) = compare(family, &full, &reference, call);
        assert!(compared >= 100, "{family}: {compared} masks");
        if sliced {
            assert!(first_sliced >= 1, "{family}: the first mask used no slice");
        }
    }
}
