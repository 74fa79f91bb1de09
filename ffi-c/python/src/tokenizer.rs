//! `sieve.Tokenizer`: a vocabulary (every token's bytes, the special and EOS ids), shared by
//! every grammar compiled for it.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sieve_core::Vocabulary;
use sieve_core::grammar::cache::CompileCache;
use sieve_core::vocab::hf::{self, AddedTokens};

use crate::errors::vocab_error;

/// A tokenizer's vocabulary. Immutable and thread-safe; build it once per model.
///
/// Constructors: `Tokenizer.from_json(text)` (a `tokenizer.json`), `Tokenizer.from_file(path)`,
/// `Tokenizer.from_tiktoken(name)` (`o200k_base`, `cl100k_base`, embedded) and
/// `Tokenizer.from_table(tokens, special, eos)`. The Python package adds
/// `sieve.Tokenizer.from_huggingface(tok)`.
#[pyclass(module = "sieve", frozen)]
pub struct Tokenizer {
    pub(crate) vocab: Arc<Vocabulary>,
    /// The compile cache of the grammars built for this tokenizer (off until
    /// `set_compile_cache`).
    pub(crate) cache: Arc<CompileCache>,
}

/// Which added tokens of a `tokenizer.json` are control tokens, by name.
fn added_tokens(name: &str) -> PyResult<AddedTokens> {
    match name {
        "markup" => Ok(AddedTokens::Markup),
        "special" => Ok(AddedTokens::SpecialOnly),
        "all" => Ok(AddedTokens::All),
        _ => Err(PyValueError::new_err(format!(
            "added_tokens must be 'markup', 'special' or 'all', not {name:?}"
        ))),
    }
}

/// Builds a vocabulary from a table, padded with unused ids to `n_vocab` (a model's logits
/// may be wider than its tokenizer) and with `eos` replacing the table's EOS ids if given.
fn build(
    mut tokens: Vec<Vec<u8>>,
    special: &[u32],
    table_eos: &[u32],
    eos: Option<Vec<u32>>,
    n_vocab: Option<usize>,
) -> PyResult<Vocabulary> {
    if let Some(n) = n_vocab {
        if n < tokens.len() {
            return Err(PyValueError::new_err(format!(
                "n_vocab {n} is smaller than the tokenizer's {} ids",
                tokens.len()
            )));
        }
        tokens.resize(n, Vec::new());
    }
    let eos = eos.unwrap_or_else(|| table_eos.to_vec());
    Vocabulary::new(tokens, special, &eos).map_err(|e| vocab_error(&e))
}

impl Tokenizer {
    fn wrap(vocab: Vocabulary) -> Tokenizer {
        Tokenizer {
            vocab: Arc::new(vocab),
            cache: Arc::new(CompileCache::new(0)),
        }
    }

    fn from_json_text(
        text: &str,
        added: &str,
        eos: Option<Vec<u32>>,
        n_vocab: Option<usize>,
    ) -> PyResult<Tokenizer> {
        let json: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| PyValueError::new_err(format!("tokenizer.json: {e}")))?;
        let t = hf::table_with(&json, added_tokens(added)?).map_err(|e| vocab_error(&e))?;
        build(t.tokens, &t.special, &t.eos, eos, n_vocab).map(Tokenizer::wrap)
    }
}

/// A token table: `(tokens, special ids, eos ids)`.
type Table = (Vec<Vec<u8>>, Vec<u32>, Vec<u32>);

/// Every token of an embedded tiktoken encoding.
///
/// `CoreBPE` keeps its rank maps private; decoding one rank at a time is the public way to
/// read them (an unused rank fails to decode). The ranks are dense up to the special tokens.
fn tiktoken_table(bpe: &tiktoken_rs::CoreBPE) -> PyResult<Table> {
    let mut special = Vec::new();
    let mut eos = Vec::new();
    for name in bpe.special_tokens() {
        let ids = bpe.encode_with_special_tokens(name);
        let [id] = ids[..] else {
            return Err(PyValueError::new_err(format!(
                "special token {name:?} does not encode to one id"
            )));
        };
        special.push(id);
        if name == "<|endoftext|>" {
            eos.push(id);
        }
    }
    let end = special.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut tokens = Vec::with_capacity(end);
    for id in 0..end as u32 {
        tokens.push(bpe.decode_bytes(&[id]).unwrap_or_default());
    }
    Ok((tokens, special, eos))
}

#[pymethods]
impl Tokenizer {
    /// From the text of a Hugging Face `tokenizer.json`. `added_tokens` says which added
    /// tokens are control tokens (reachable only where a grammar names them): `"markup"`
    /// (the default: `"special": true` ones and those spelled like `<...>`), `"special"`
    /// or `"all"`. `eos` overrides the end-of-sequence ids; `n_vocab` pads the vocabulary
    /// to the model's logits width.
    #[staticmethod]
    #[pyo3(signature = (text, *, eos=None, n_vocab=None, added_tokens="markup"))]
    fn from_json(
        py: Python<'_>,
        text: &str,
        eos: Option<Vec<u32>>,
        n_vocab: Option<usize>,
        added_tokens: &str,
    ) -> PyResult<Tokenizer> {
        let text = text.to_owned();
        let added = added_tokens.to_owned();
        py.detach(move || Tokenizer::from_json_text(&text, &added, eos, n_vocab))
    }

    /// From a `tokenizer.json` file; as `from_json`.
    #[staticmethod]
    #[pyo3(signature = (path, *, eos=None, n_vocab=None, added_tokens="markup"))]
    fn from_file(
        py: Python<'_>,
        path: std::path::PathBuf,
        eos: Option<Vec<u32>>,
        n_vocab: Option<usize>,
        added_tokens: &str,
    ) -> PyResult<Tokenizer> {
        let added = added_tokens.to_owned();
        py.detach(move || {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| PyValueError::new_err(format!("reading {}: {e}", path.display())))?;
            Tokenizer::from_json_text(&text, &added, eos, n_vocab)
        })
    }

    /// From a Hugging Face tokenizer: a `tokenizers.Tokenizer`, or a `transformers` fast
    /// tokenizer (its `backend_tokenizer`). EOS ids: `eos` if given, else the transformers
    /// tokenizer's `eos_token_id` followed by those the `tokenizer.json` marks.
    #[staticmethod]
    #[pyo3(signature = (tokenizer, *, eos=None, n_vocab=None, added_tokens="markup"))]
    fn from_huggingface(
        py: Python<'_>,
        tokenizer: &Bound<'_, PyAny>,
        eos: Option<Vec<u32>>,
        n_vocab: Option<usize>,
        added_tokens: &str,
    ) -> PyResult<Tokenizer> {
        let backend = if tokenizer.hasattr("backend_tokenizer")? {
            tokenizer.getattr("backend_tokenizer")?
        } else {
            tokenizer.clone()
        };
        if !backend.hasattr("to_str")? {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "expected a tokenizers.Tokenizer or a transformers fast tokenizer",
            ));
        }
        let text: String = backend.call_method0("to_str")?.extract()?;
        let mut first_eos = None;
        if eos.is_none() && tokenizer.hasattr("eos_token_id")? {
            first_eos = tokenizer
                .getattr("eos_token_id")?
                .extract::<Option<u32>>()?;
        }
        let added = added_tokens.to_owned();
        py.detach(move || {
            let json: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| PyValueError::new_err(format!("tokenizer.json: {e}")))?;
            let t =
                hf::table_with(&json, self::added_tokens(&added)?).map_err(|e| vocab_error(&e))?;
            let eos = eos.or_else(|| {
                first_eos.map(|f| {
                    let mut v = vec![f];
                    v.extend(t.eos.iter().copied().filter(|&e| e != f));
                    v
                })
            });
            build(t.tokens, &t.special, &t.eos, eos, n_vocab).map(Tokenizer::wrap)
        })
    }

    /// A tiktoken encoding embedded in sieve: `"o200k_base"` or `"cl100k_base"` (EOS:
    /// `<|endoftext|>` unless `eos` says otherwise).
    #[staticmethod]
    #[pyo3(signature = (name, *, eos=None, n_vocab=None))]
    fn from_tiktoken(
        py: Python<'_>,
        name: &str,
        eos: Option<Vec<u32>>,
        n_vocab: Option<usize>,
    ) -> PyResult<Tokenizer> {
        let bpe = match name {
            "o200k_base" | "o200k" => tiktoken_rs::o200k_base_singleton(),
            "cl100k_base" | "cl100k" => tiktoken_rs::cl100k_base_singleton(),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "unknown tiktoken encoding {name:?} (o200k_base, cl100k_base)"
                )));
            }
        };
        py.detach(move || {
            let (tokens, special, table_eos) = tiktoken_table(bpe)?;
            build(tokens, &special, &table_eos, eos, n_vocab).map(Tokenizer::wrap)
        })
    }

    /// From a table: `tokens[i]` is the bytes of token `i` (empty for an unused id),
    /// `special` the control-token ids (their bytes are their names, e.g. `b"<|eot_id|>"`),
    /// `eos` the end-of-sequence ids.
    #[staticmethod]
    #[pyo3(signature = (tokens, special=Vec::new(), eos=Vec::new()))]
    fn from_table(tokens: Vec<Vec<u8>>, special: Vec<u32>, eos: Vec<u32>) -> PyResult<Tokenizer> {
        build(tokens, &special, &eos, None, None).map(Tokenizer::wrap)
    }

    /// Turns the compile cache on with a bound of `max_bytes` (0: off, the default; drops
    /// what it holds). While on, a grammar compiled again for this tokenizer with the same
    /// syntax, text, options and limits is the grammar compiled the first time (its
    /// matchers share tables with the earlier ones), or the same error, at the cost of a
    /// lookup: agents send the same tool list every turn. Entries are dropped least recently
    /// used first to stay within the bound (they are charged their text, grammar and the
    /// tables their matchers built).
    fn set_compile_cache(&self, max_bytes: usize) {
        self.cache.set_max_bytes(max_bytes);
    }

    /// The compile cache's counters: a dict with `hits`, `misses`, `evictions`, `entries`,
    /// `bytes` and `max_bytes`.
    fn compile_cache_stats(&self) -> std::collections::HashMap<&'static str, u64> {
        let s = self.cache.stats();
        [
            ("hits", s.hits),
            ("misses", s.misses),
            ("evictions", s.evictions),
            ("entries", s.entries as u64),
            ("bytes", s.bytes as u64),
            ("max_bytes", s.max_bytes as u64),
        ]
        .into_iter()
        .collect()
    }

    /// Number of token ids (the mask covers this many bits).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab.vocab_size()
    }

    /// int32 words per mask row: `ceil(vocab_size / 32)`.
    #[getter]
    fn mask_words(&self) -> usize {
        self.vocab.mask_words()
    }

    /// The end-of-sequence ids, preferred first.
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.vocab.eos_tokens().to_vec()
    }

    /// The first EOS id, or None.
    #[getter]
    fn eos_token_id(&self) -> Option<u32> {
        self.vocab.eos_tokens().first().copied()
    }

    /// The control-token ids.
    #[getter]
    fn special_token_ids(&self) -> Vec<u32> {
        self.vocab.special_tokens().to_vec()
    }

    /// Is `token` a control token?
    fn is_special(&self, token: u32) -> bool {
        self.vocab.is_special(token)
    }

    /// The bytes of `token` (a control token's name for a control token).
    fn token_bytes<'py>(&self, py: Python<'py>, token: u32) -> PyResult<Bound<'py, PyBytes>> {
        if token as usize >= self.vocab.vocab_size() {
            return Err(PyValueError::new_err(format!(
                "token {token} is out of range (vocab_size {})",
                self.vocab.vocab_size()
            )));
        }
        Ok(PyBytes::new(py, self.vocab.token_text(token)))
    }

    /// The bytes `tokens` spell (control tokens by name).
    fn decode_bytes<'py>(
        &self,
        py: Python<'py>,
        tokens: Vec<u32>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let n = self.vocab.vocab_size();
        if let Some(&t) = tokens.iter().find(|&&t| t as usize >= n) {
            return Err(PyValueError::new_err(format!(
                "token {t} is out of range (vocab_size {n})"
            )));
        }
        Ok(PyBytes::new(py, &self.vocab.tokens_to_text(&tokens)))
    }

    /// Greedy longest-match tokenization of `text` over the vocabulary (not the model's own
    /// tokenizer; for tests and forced text). None if some byte has no token.
    fn greedy_tokenize(&self, text: &[u8]) -> Option<Vec<u32>> {
        self.vocab.greedy_tokenize_text(text)
    }

    fn __repr__(&self) -> String {
        format!(
            "sieve.Tokenizer(vocab_size={}, eos={:?})",
            self.vocab.vocab_size(),
            self.vocab.eos_tokens()
        )
    }
}
