//! The model: a GGUF file loaded by llama.cpp (through `llama-cpp-2`), its vocabulary as a
//! sieve [`Vocabulary`], its tokenizer and its chat template.
//!
//! The vocabulary is read from the GGUF itself (`token_to_piece` of every id, special
//! tokens spelled as their names), so the model file is all `sieve generate` needs; the
//! token bytes agree with the Hugging Face `tokenizer.json` of the same model (checked for
//! SmolLM2 in `tests/generate.rs` when `shared/tokenizers` is present). Special tokens are
//! llama.cpp's control tokens; EOS ids are its end-of-generation tokens, with the chat-turn
//! end (`<|im_end|>`, `<|eot_id|>`, ...) preferred.
//!
//! llama.cpp's backend is process-global and initialised once ([`backend`]). Loading
//! SmolLM2-135M takes about 0.1 s; reading the vocabulary about 20 ms.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, anyhow, bail};
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::token::LlamaToken;
use sieve_core::Vocabulary;
use sieve_core::vocab::hf::KNOWN_EOS_NAMES;

/// The process's llama.cpp backend (initialised on first use, logs silenced).
///
/// # Errors
/// llama.cpp failed to initialise.
pub fn backend() -> Result<&'static LlamaBackend> {
    static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let mut b = LlamaBackend::init().map_err(|e| e.to_string())?;
            b.void_logs();
            Ok(b)
        })
        .as_ref()
        .map_err(|e| anyhow!("initialising llama.cpp: {e}"))
}

/// A loaded model with its sieve vocabulary.
pub struct Model {
    /// The llama.cpp model (weights and tokenizer).
    pub llama: LlamaModel,
    /// The vocabulary handed to grammars and matchers (ids are the model's).
    pub vocab: Arc<Vocabulary>,
    /// Where it was loaded from.
    pub path: String,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("path", &self.path)
            .field("vocab_size", &self.vocab.vocab_size())
            .field("eos", &self.vocab.eos_tokens())
            .finish_non_exhaustive()
    }
}

impl Model {
    /// Loads a GGUF model (CPU only) and reads its vocabulary.
    ///
    /// # Errors
    /// The file is missing or not a model llama.cpp can load, or its vocabulary is not one
    /// sieve accepts.
    pub fn load(path: &Path) -> Result<Model> {
        if !path.is_file() {
            bail!("model file {} not found", path.display());
        }
        let backend = backend()?;
        let llama = LlamaModel::load_from_file(backend, path, &LlamaModelParams::default())
            .map_err(|e| anyhow!("loading model {}: {e}", path.display()))?;
        let vocab = Arc::new(
            read_vocabulary(&llama)
                .with_context(|| format!("reading the vocabulary of {}", path.display()))?,
        );
        Ok(Model {
            llama,
            vocab,
            path: path.display().to_string(),
        })
    }

    /// Tokenizes prompt text: special-token names (`<|im_start|>`) become their ids; no BOS.
    pub fn encode_prompt(&self, text: &str) -> Vec<u32> {
        let ids = self.llama.vocab().tokenize(text.as_bytes(), false, true);
        ids.into_iter().map(|t| t.0 as u32).collect()
    }

    /// Tokenizes output text canonically (special-token names stay text), as the model
    /// would have written it; the `tokenize` of [`sieve_core::Matcher::compute_ff_tokens_with`].
    pub fn encode_text(&self, text: &[u8]) -> Vec<u32> {
        let ids = self.llama.vocab().tokenize(text, false, false);
        ids.into_iter().map(|t| t.0 as u32).collect()
    }

    /// The chat prompt of a ChatML model (SmolLM2, Qwen): a system turn, the user turn, and
    /// the start of the assistant turn.
    pub fn chat_prompt(system: &str, user: &str) -> String {
        format!(
            "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n\
             <|im_start|>assistant\n"
        )
    }
}

/// The model's token table as a sieve vocabulary.
fn read_vocabulary(llama: &LlamaModel) -> Result<Vocabulary> {
    let v = llama.vocab();
    let n = usize::try_from(v.n_tokens()).context("negative vocabulary size")?;
    let mut tokens = Vec::with_capacity(n);
    let mut special = Vec::new();
    let mut eos = Vec::new();
    for id in 0..n {
        let t = LlamaToken(i32::try_from(id).context("vocabulary too large")?);
        let control = v.is_control(t);
        let bytes = v.token_to_piece(t, true, None);
        if control && !bytes.is_empty() {
            special.push(id as u32);
            if v.is_eog(t) {
                eos.push((id as u32, bytes.clone()));
            }
        }
        tokens.push(bytes);
    }
    // Chat-turn ends first (KNOWN_EOS_NAMES order), then any other end-of-generation token.
    eos.sort_by_key(|(id, name)| {
        let rank = KNOWN_EOS_NAMES
            .iter()
            .position(|k| k.as_bytes() == name.as_slice())
            .unwrap_or(KNOWN_EOS_NAMES.len());
        (rank, *id)
    });
    let eos: Vec<u32> = eos.into_iter().map(|(id, _)| id).collect();
    if eos.is_empty() {
        bail!("the model has no end-of-generation token");
    }
    Vocabulary::new(tokens, &special, &eos).map_err(|e| anyhow!("{e}"))
}
