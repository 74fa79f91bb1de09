//! `sieve_tokenizer`: a vocabulary (token byte strings, special and EOS ids) plus an optional
//! host tokenize callback, and the compile cache of the grammars built for it. Shared (`Arc`),
//! thread-safe; immutable but for its cache, which synchronizes itself.

use alloc::sync::Arc;
use core::ffi::c_void;

use sieve_core::Vocabulary;
use sieve_core::grammar::cache::{CacheStats, CompileCache};
use sieve_core::vocab::hf::AddedTokens;

use crate::boundary::{
    Castable, HostPtr, Shared, arc_clone, arc_free, arc_into_handle, ffi_boundary, handle_ref,
    input_slice, output_slice, write_out,
};
use crate::error::{ErrorInfo, sieve_error};
use crate::prelude::*;
use crate::status::sieve_status;

/// A tokenizer's vocabulary: the exact bytes of every token id, the special tokens and the
/// end-of-sequence ids.
///
/// Thread safety: immutable and reference counted. One handle may be used from any number of
/// threads at once; `sieve_tokenizer_clone` adds a reference and `sieve_tokenizer_free`
/// drops one (free each handle once, after its last use). Grammars keep what they need, so a
/// tokenizer may be freed while grammars built from it live on.
pub struct sieve_tokenizer {
    _private: [u8; 0],
}

/// Tokenizes `len` bytes into at most `cap` ids written to `out`, returning the total number of
/// ids the text needs (which may exceed `cap`; then only the first `cap` were written). Must be
/// thread-safe: the library may call it from several threads at once with the same
/// `user_data`.
pub type sieve_tokenize_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        bytes: *const u8,
        len: usize,
        out: *mut u32,
        cap: usize,
    ) -> usize,
>;

/// The non-NULL form of [`sieve_tokenize_fn`] (private: the header names only the former).
type TokenizeFn = unsafe extern "C" fn(
    user_data: *mut c_void,
    bytes: *const u8,
    len: usize,
    out: *mut u32,
    cap: usize,
) -> usize;

/// The Rust value behind a `sieve_tokenizer`.
#[derive(Debug)]
pub struct Tokenizer {
    /// The vocabulary grammars are compiled against.
    pub(crate) vocab: Arc<Vocabulary>,
    tokenize: Option<(TokenizeFn, HostPtr<c_void>)>,
    /// The compile cache of grammars built for this tokenizer (off until
    /// `sieve_tokenizer_set_compile_cache`).
    pub(crate) cache: CompileCache,
}

impl Castable for sieve_tokenizer {
    type Ownership = Shared;
    type Rust = Tokenizer;
}

impl Tokenizer {
    /// The vocabulary.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// Tokenizes through the host callback if one was given, else greedily (longest match)
    /// over the vocabulary.
    fn tokenize(&self, bytes: &[u8]) -> Result<Vec<u32>, sieve_status> {
        let Some((f, user_data)) = self.tokenize else {
            return self
                .vocab
                .greedy_tokenize_text(bytes)
                .ok_or(sieve_status::InvalidArgument);
        };
        let mut out = vec![0u32; bytes.len().max(16)];
        for _ in 0..2 {
            // SAFETY: 1. `f` is the host's thread-safe callback with its own `user_data`;
            // 2. `bytes` is readable for its length; 3. `out` is writable for its length.
            let n = unsafe {
                f(
                    user_data.0,
                    bytes.as_ptr(),
                    bytes.len(),
                    out.as_mut_ptr(),
                    out.len(),
                )
            };
            if n <= out.len() {
                out.truncate(n);
                if out.iter().any(|&t| t as usize >= self.vocab.vocab_size()) {
                    return Err(sieve_status::CallbackError);
                }
                return Ok(out);
            }
            if n > 16 * bytes.len() + 1024 {
                return Err(sieve_status::CallbackError);
            }
            out.resize(n, 0);
        }
        Err(sieve_status::CallbackError)
    }
}

/// Builds a tokenizer from a token byte table.
///
/// - `bytes` (`byte_len` bytes): every token's bytes, concatenated in id order.
/// - `lens` (`n_tokens` entries): the byte length of token `i` (0 = unused id). The lengths
///   must add up to `byte_len`.
/// - `special_flags` (NULL, or `n_tokens` entries): non-zero marks a special (control)
///   token, whose bytes are its name (`<|eot_id|>`); a leading `0xFF` byte (LLGuidance's
///   marker) is stripped. Special tokens are reachable only by grammars that name them.
/// - `eos_ids` (`n_eos` entries, NULL if 0): the end-of-sequence ids, preferred first.
/// - `tokenize_cb` (may be NULL) + `user_data`: a thread-safe tokenizer used by
///   `sieve_tokenizer_tokenize`; without it tokenization is greedy longest-match.
///
/// On success `*out` receives a new handle (free with `sieve_tokenizer_free`). On failure
/// `*out` is untouched and, if `error_out` is non-NULL, `*error_out` receives an error to free
/// with `sieve_error_free`.
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_tokenizer_new(
    bytes: *const u8,
    byte_len: usize,
    lens: *const u32,
    n_tokens: usize,
    special_flags: *const u8,
    eos_ids: *const u32,
    n_eos: usize,
    tokenize_cb: sieve_tokenize_fn,
    user_data: *mut c_void,
    out: *mut *const sieve_tokenizer,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let fail = |status, msg: &str| {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::new(status, msg).report(error_out) }
        };
        // SAFETY: 1. each pointer is NULL or readable for its stated length (caller contract).
        let inputs = unsafe {
            (
                input_slice(bytes, byte_len),
                input_slice(lens, n_tokens),
                input_slice(eos_ids, n_eos),
            )
        };
        let (Some(bytes), Some(lens), Some(eos)) = inputs else {
            return fail(sieve_status::NullArgument, "bytes, lens or eos_ids is NULL with a non-zero length");
        };
        let flags = if special_flags.is_null() {
            None
        } else {
            // SAFETY: 1. non-NULL and readable for `n_tokens` flags (caller contract).
            unsafe { input_slice(special_flags, n_tokens) }
        };
        if out.is_null() {
            return fail(sieve_status::NullArgument, "out is NULL");
        }
        let total = lens.iter().try_fold(0usize, |acc, &l| acc.checked_add(l as usize));
        if total != Some(bytes.len()) {
            return fail(
                sieve_status::InvalidArgument,
                &format!("token lengths do not add up to byte_len ({})", bytes.len()),
            );
        }
        let mut tokens = Vec::with_capacity(lens.len());
        let mut special = Vec::new();
        let mut start = 0usize;
        for (id, &len) in lens.iter().enumerate() {
            let end = start + len as usize;
            let mut tok = bytes.get(start..end).unwrap_or_default();
            start = end;
            if flags.is_some_and(|f| f.get(id).is_some_and(|&b| b != 0)) {
                if let Some(rest) = tok.strip_prefix(&[Vocabulary::SPECIAL_PREFIX]) {
                    tok = rest;
                }
                special.push(id as u32);
            }
            tokens.push(tok.to_vec());
        }
        let vocab = match Vocabulary::new(tokens, &special, eos) {
            Ok(v) => v,
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            Err(e) => return unsafe { ErrorInfo::vocab(&e).report(error_out) },
        };
        let tokenize = tokenize_cb.map(|f| (f, HostPtr::new(user_data)));
        let tok = Arc::new(Tokenizer {
            vocab: Arc::new(vocab),
            tokenize,
            cache: CompileCache::new(0),
        });
        // SAFETY: 1. `out` checked non-NULL above; writable by contract.
        unsafe { write_out(out, arc_into_handle(tok)) };
        sieve_status::Ok
    }
}

/// Builds a tokenizer from the text of a Hugging Face `tokenizer.json` (`len` bytes of UTF-8,
/// no NUL needed): byte-level BPE (GPT-2, Llama 3, Qwen, ...) or SentencePiece-style (Llama 2,
/// Mistral). Special added tokens, and added tokens spelled like markup (`sieve_added_tokens`),
/// become special (control) tokens; the EOS ids are the special tokens
/// named `<|eot_id|>`, `<|im_end|>`, `<|end|>`, `<end_of_turn>`, `<|eom_id|>`,
/// `<|end_of_text|>`, `<|endoftext|>`, `</s>`, `<eos>` (in that preference order).
///
/// Outputs as for `sieve_tokenizer_new`; a JSON syntax error reports its line and column.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_from_json(
    text: *const u8,
    len: usize,
    out: *mut *const sieve_tokenizer,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        from_json(text, len, AddedTokens::default(), out, error_out)
    }
}

fn from_json(
    text: *const u8,
    len: usize,
    role: AddedTokens,
    out: *mut *const sieve_tokenizer,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    {
        // SAFETY: 1. NULL or readable for `len` bytes (caller contract).
        let Some(text) = (unsafe { input_slice(text, len) }).filter(|_| !out.is_null()) else {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            return unsafe {
                ErrorInfo::new(sieve_status::NullArgument, "text or out is NULL").report(error_out)
            };
        };
        let text = match core::str::from_utf8(text) {
            Ok(t) => t,
            Err(e) => {
                let msg = format!(
                    "tokenizer.json text is not UTF-8 (byte {})",
                    e.valid_up_to()
                );
                // SAFETY: 1. `error_out` is NULL or writable (caller contract).
                return unsafe {
                    ErrorInfo::new(sieve_status::InvalidUtf8, &msg).report(error_out)
                };
            }
        };
        let vocab = match Vocabulary::from_tokenizer_json_with(text, role) {
            Ok(v) => v,
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            Err(e) => return unsafe { ErrorInfo::vocab(&e).report(error_out) },
        };
        let tok = Arc::new(Tokenizer {
            vocab: Arc::new(vocab),
            tokenize: None,
            cache: CompileCache::new(0),
        });
        // SAFETY: 1. `out` checked non-NULL above.
        unsafe { write_out(out, arc_into_handle(tok)) };
        sieve_status::Ok
    }
}

/// Which added tokens of a `tokenizer.json` are control tokens (matched only where a grammar
/// names them, never as text); passed as `uint32_t` to `sieve_tokenizer_from_json_with`.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_added_tokens {
    /// The default: `"special": true` tokens and added tokens spelled like markup (`<…>`,
    /// `[…]`, no whitespace; Qwen 3's `<tool_call>` and `<think>`).
    Markup = 0,
    /// Only `"special": true` tokens (the file's own flag).
    SpecialOnly = 1,
    /// Every added token.
    All = 2,
}

/// `sieve_tokenizer_from_json` with `added_tokens` (a `sieve_added_tokens`) choosing which
/// added tokens are control tokens. An unknown value is `SIEVE_STATUS_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_from_json_with(
    text: *const u8,
    len: usize,
    added_tokens: u32,
    out: *mut *const sieve_tokenizer,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let role = match added_tokens {
            0 => AddedTokens::Markup,
            1 => AddedTokens::SpecialOnly,
            2 => AddedTokens::All,
            other => {
                let msg = format!("unknown sieve_added_tokens value {other}");
                // SAFETY: 1. `error_out` is NULL or writable (caller contract).
                return unsafe { ErrorInfo::new(sieve_status::InvalidArgument, &msg).report(error_out) };
            }
        };
        from_json(text, len, role, out, error_out)
    }
}

/// Adds a reference: `*out` receives a handle to the same tokenizer (free each handle once).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_clone(
    tokenizer: *const sieve_tokenizer,
    out: *mut *const sieve_tokenizer,
) -> sieve_status {
    ffi_boundary! {
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { arc_clone(tokenizer) }) else {
            return sieve_status::NullArgument;
        };
        // SAFETY: 1. `out` checked non-NULL.
        unsafe { write_out(out, arc_into_handle(tok)) };
        sieve_status::Ok
    }
}

/// Drops a reference to a tokenizer. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_tokenizer_free(tokenizer: *const sieve_tokenizer) {
    ffi_boundary! {
        // SAFETY: 1. NULL or a tokenizer handle freed once (caller contract).
        unsafe { arc_free(tokenizer) }
    }
}

/// Turns the tokenizer's compile cache on with a bound of `max_bytes` (0 turns it off and
/// drops what it holds; it starts off). While on, every grammar compiled for this tokenizer
/// (`sieve_grammar_new*`) is looked up first: the same kind, text, options and limits again
/// return the grammar compiled the first time (its matchers share tables with the earlier
/// ones), or the same error, in about the time of a hash of the text. Results are those of a
/// fresh compile. Entries are charged the text, the grammar and the tables its matchers
/// built, and dropped least recently used first to stay within `max_bytes`. A kept grammar
/// holds the tokenizer's vocabulary until it is dropped. Safe to call from any thread, at any
/// time.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_set_compile_cache(
    tokenizer: *const sieve_tokenizer,
    max_bytes: usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return sieve_status::NullArgument;
        };
        tok.cache.set_max_bytes(max_bytes);
        sieve_status::Ok
    }
}

/// Counters of a tokenizer's compile cache (`sieve_tokenizer_compile_cache_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct sieve_compile_cache_stats {
    /// Compiles answered from the cache.
    pub hits: u64,
    /// Compiles that ran while the cache was on.
    pub misses: u64,
    /// Entries dropped to stay within the bound.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Bytes charged to the cache now.
    pub bytes: usize,
    /// The bound (0: off).
    pub max_bytes: usize,
}

impl From<CacheStats> for sieve_compile_cache_stats {
    fn from(s: CacheStats) -> Self {
        sieve_compile_cache_stats {
            hits: s.hits,
            misses: s.misses,
            evictions: s.evictions,
            entries: s.entries,
            bytes: s.bytes,
            max_bytes: s.max_bytes,
        }
    }
}

/// Writes the counters of the tokenizer's compile cache to `*out`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_compile_cache_stats(
    tokenizer: *const sieve_tokenizer,
    out: *mut sieve_compile_cache_stats,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return sieve_status::NullArgument;
        };
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        // SAFETY: 1. `out` checked non-NULL; writable by contract.
        unsafe { out.write(tok.cache.stats().into()) };
        sieve_status::Ok
    }
}

/// The number of token ids (used or not); 0 for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_tokenizer_vocab_size(tokenizer: *const sieve_tokenizer) -> usize {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        unsafe { handle_ref(tokenizer) }.map_or(0, |t| t.vocab.vocab_size())
    }
}

/// The words a token mask needs: `ceil(vocab_size / 32)`; 0 for NULL. Bit `i % 32` of word
/// `i / 32` stands for token `i`.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_tokenizer_mask_words(tokenizer: *const sieve_tokenizer) -> usize {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        unsafe { handle_ref(tokenizer) }.map_or(0, |t| t.vocab.mask_words())
    }
}

/// The end-of-sequence ids: `*ids` points at `*n_ids` ids owned by the tokenizer (valid until
/// it is freed).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_eos_tokens(
    tokenizer: *const sieve_tokenizer,
    ids: *mut *const u32,
    n_ids: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return sieve_status::NullArgument;
        };
        if ids.is_null() || n_ids.is_null() {
            return sieve_status::NullArgument;
        }
        let eos = tok.vocab.eos_tokens();
        // SAFETY: 1. both outputs checked non-NULL.
        unsafe {
            write_out(ids, eos.as_ptr());
            write_out(n_ids, eos.len());
        }
        sieve_status::Ok
    }
}

/// The bytes of token `token`: `*bytes` points at `*len` bytes owned by the tokenizer (valid
/// until it is freed; not NUL-terminated). A special token gives its name. An unused id gives
/// length 0.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_token_bytes(
    tokenizer: *const sieve_tokenizer,
    token: u32,
    bytes: *mut *const u8,
    len: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        let Some(tok) = (unsafe { handle_ref(tokenizer) }) else {
            return sieve_status::NullArgument;
        };
        if bytes.is_null() || len.is_null() {
            return sieve_status::NullArgument;
        }
        if token as usize >= tok.vocab.vocab_size() {
            return sieve_status::TokenOutOfRange;
        }
        let text = tok.vocab.token_text(token);
        // SAFETY: 1. both outputs checked non-NULL.
        unsafe {
            write_out(bytes, text.as_ptr());
            write_out(len, text.len());
        }
        sieve_status::Ok
    }
}

/// Tokenizes `len` bytes into `out` (`cap` ids): through the tokenize callback given to
/// `sieve_tokenizer_new`, else greedily (longest match; not a BPE merge order). On success
/// `*n_out` is the number of ids written. If `cap` is too small, returns
/// `SIEVE_STATUS_INSUFFICIENT_SIZE`, writes nothing to `out`, and sets `*n_out` to the number
/// needed. Text no token sequence spells gives `SIEVE_STATUS_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_tokenizer_tokenize(
    tokenizer: *const sieve_tokenizer,
    bytes: *const u8,
    len: usize,
    out: *mut u32,
    cap: usize,
    n_out: *mut usize,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live tokenizer handle; the buffers are NULL or valid for their
        // lengths (caller contract).
        let (Some(tok), Some(bytes), Some(out)) = (unsafe { handle_ref(tokenizer) }, unsafe {
            input_slice(bytes, len)
        }, unsafe { output_slice(out, cap) }) else {
            return sieve_status::NullArgument;
        };
        if n_out.is_null() {
            return sieve_status::NullArgument;
        }
        let ids = match tok.tokenize(bytes) {
            Ok(ids) => ids,
            Err(status) => return status,
        };
        // SAFETY: 1. `n_out` checked non-NULL.
        unsafe { write_out(n_out, ids.len()) };
        let Some(dst) = out.get_mut(..ids.len()) else {
            return sieve_status::InsufficientSize;
        };
        dst.copy_from_slice(&ids);
        sieve_status::Ok
    }
}
