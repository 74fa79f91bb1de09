//! llama.cpp's example GBNF grammars (`<shared>/data/gbnf/*.gbnf`) against sieve's two front
//! ends:
//! - every example compiles with `Grammar::from_gbnf` and its matcher starts with a
//!   non-empty mask;
//! - `json`, `arithmetic` and `list` have hand-written Lark twins (`tests/data/gbnf/*.lark`,
//!   written for exactly the same language), and both grammars give identical masks at every
//!   step of seeded random walks over the full Llama 3 vocabulary. A walk picks among the
//!   allowed tokens (often a short one, so structures close), takes EOS when allowed after a
//!   while, and is at most [`STEPS`] tokens long.
//!
//! A consistency check (two of sieve's front ends, one engine), not a proof of exactness:
//! `gbnf_oracle.rs` checks GBNF masks against an independent Earley reference.
//!
//! Missing `shared` folder: a `SKIP` line (a failure under `CI=true`).

use std::path::PathBuf;
use std::sync::Arc;

use sieve_bench::tokenizer::LoadedTokenizer;
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use sieve_tests::{Rng, allowed_tokens, bit};

const EXAMPLES: &[&str] = &[
    "arithmetic",
    "c",
    "chess",
    "english",
    "japanese",
    "json",
    "json_arr",
    "list",
];

const TWINS: &[&str] = &["json", "arithmetic", "list"];

const WALKS: usize = 24;
const STEPS: usize = 100;

fn shared_dir() -> Option<PathBuf> {
    let shared = match std::env::var_os("SIEVE_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let need = [
        shared.join("data/gbnf"),
        shared.join("tokenizers/llama3.json"),
    ];
    if need.iter().all(|p| p.exists()) {
        return Some(shared);
    }
    sieve_tests::skip_missing_data(&format!(
        "GBNF examples: {} or {} is missing (set SIEVE_SHARED)",
        need[0].display(),
        need[1].display()
    ));
    None
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn llama3(shared: &std::path::Path) -> Arc<Vocabulary> {
    let path = shared.join("tokenizers/llama3.json");
    let tok = LoadedTokenizer::load(path.to_str().expect("UTF-8 path")).expect("llama3 loads");
    tok.vocab
}

fn gbnf(name: &str, src: &str, vocab: &Arc<Vocabulary>) -> Grammar {
    Grammar::from_gbnf(src, &GbnfOptions::default(), vocab, &Limits::default())
        .unwrap_or_else(|e| panic!("{name}.gbnf does not compile: {e}"))
}

#[test]
fn llama_cpp_examples_compile() {
    let Some(shared) = shared_dir() else {
        return;
    };
    let vocab = llama3(&shared);
    let mut failures = Vec::new();
    for name in EXAMPLES {
        let src = read(shared.join(format!("data/gbnf/{name}.gbnf")));
        match Grammar::from_gbnf(&src, &GbnfOptions::default(), &vocab, &Limits::default()) {
            Err(e) => failures.push(format!("{name}.gbnf: {e}")),
            Ok(g) => {
                let mut m = Matcher::new(&g);
                let mut mask = vec![0u32; vocab.mask_words()];
                m.compute_mask(&mut mask).expect("mask");
                if allowed_tokens(&mask).is_empty() {
                    failures.push(format!("{name}.gbnf: empty first mask"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Random walks on `a` (GBNF) and `b` (Lark) side by side; `Err` describes a difference.
fn diff_walks(a: &Grammar, b: &Grammar, vocab: &Vocabulary, seed: u64) -> Result<usize, String> {
    let eos = vocab.eos_tokens().to_vec();
    let short: Vec<bool> = (0..vocab.vocab_size() as u32)
        .map(|t| vocab.trie_bytes(t).len() <= 2)
        .collect();
    let mut rng = Rng::new(seed);
    let mut masks = 0;
    for walk in 0..WALKS {
        let (mut ma, mut mb) = (Matcher::new(a), Matcher::new(b));
        let mut text: Vec<u8> = Vec::new();
        let (mut xa, mut xb) = (
            vec![0u32; vocab.mask_words()],
            vec![0u32; vocab.mask_words()],
        );
        for step in 0..=STEPS {
            ma.compute_mask(&mut xa)
                .map_err(|e| format!("walk {walk} step {step}: GBNF mask: {e}"))?;
            mb.compute_mask(&mut xb)
                .map_err(|e| format!("walk {walk} step {step}: Lark mask: {e}"))?;
            masks += 1;
            if xa != xb {
                let diff: Vec<String> = (0..vocab.vocab_size())
                    .filter(|&t| bit(&xa, t) != bit(&xb, t))
                    .take(8)
                    .map(|t| {
                        format!(
                            "  token {t} {:?}: GBNF {}, Lark {}",
                            String::from_utf8_lossy(vocab.trie_bytes(t as u32)),
                            bit(&xa, t),
                            bit(&xb, t)
                        )
                    })
                    .collect();
                return Err(format!(
                    "walk {walk} step {step}, after {:?}:\n{}",
                    String::from_utf8_lossy(&text),
                    diff.join("\n")
                ));
            }
            let all = allowed_tokens(&xa);
            let eos_ok = all.iter().any(|t| eos.contains(t));
            let text_tokens: Vec<u32> = all.into_iter().filter(|t| !eos.contains(t)).collect();
            if eos_ok && (step >= STEPS || text_tokens.is_empty() || rng.below(10) == 0) {
                ma.consume_token(eos[0]).map_err(|e| e.to_string())?;
                mb.consume_token(eos[0]).map_err(|e| e.to_string())?;
                break;
            }
            if text_tokens.is_empty() || step == STEPS {
                break;
            }
            let shorts: Vec<u32> = text_tokens
                .iter()
                .copied()
                .filter(|&t| short[t as usize])
                .collect();
            let t = if !shorts.is_empty() && rng.below(3) != 0 {
                shorts[rng.below(shorts.len())]
            } else {
                text_tokens[rng.below(text_tokens.len())]
            };
            ma.consume_token(t)
                .map_err(|e| format!("walk {walk} step {step}: GBNF refused {t}: {e}"))?;
            mb.consume_token(t)
                .map_err(|e| format!("walk {walk} step {step}: Lark refused {t}: {e}"))?;
            text.extend_from_slice(vocab.trie_bytes(t));
        }
    }
    Ok(masks)
}

#[test]
fn gbnf_and_lark_twins_give_identical_masks() {
    let Some(shared) = shared_dir() else {
        return;
    };
    let vocab = llama3(&shared);
    let mut failures = Vec::new();
    for (i, name) in TWINS.iter().enumerate() {
        let g = gbnf(
            name,
            &read(shared.join(format!("data/gbnf/{name}.gbnf"))),
            &vocab,
        );
        let lark_src =
            read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("data/gbnf/{name}.lark")));
        let l = Grammar::from_lark(&lark_src, &vocab, &Limits::default())
            .unwrap_or_else(|e| panic!("{name}.lark does not compile: {e}"));
        match diff_walks(&g, &l, &vocab, 0x1a4c_0000 + i as u64) {
            Ok(n) => eprintln!("{name}: {n} masks identical"),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
