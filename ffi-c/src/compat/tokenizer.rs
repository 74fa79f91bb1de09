//! `LlgTokenizer`: a shared vocabulary built from LLGuidance's `LlgTokenizerInit` (v1) or
//! `LlgTokenizerInitV2` (with `struct_size` and extra EOS ids).

use alloc::sync::Arc;
use core::ffi::{c_char, c_void};

use sieve_core::Vocabulary;
use sieve_core::grammar::json::serde_json;
use sieve_core::vocab::hf;

use super::{c_str, guard, write_message};
use crate::boundary::{
    Castable, HostPtr, Shared, arc_clone, arc_free, arc_into_handle, handle_ref, input_slice,
    output_slice, read_versioned,
};
use crate::prelude::*;

/// Opaque tokenizer handle (reference counted, immutable, usable from any thread).
pub struct LlgTokenizer {
    _private: [u8; 0],
}

/// LLGuidance's tokenize callback: writes at most `output_tokens_len` ids and returns how
/// many the text needs. Must be thread-safe.
pub type LlgTokenizeFn = Option<
    unsafe extern "C" fn(
        user_data: *const c_void,
        bytes: *const u8,
        bytes_len: usize,
        output_tokens: *mut u32,
        output_tokens_len: usize,
    ) -> usize,
>;

/// The non-NULL form of [`LlgTokenizeFn`].
type TokenizeFn = unsafe extern "C" fn(*const c_void, *const u8, usize, *mut u32, usize) -> usize;

/// Version 1 of the tokenizer description (zero-initialise it; no `struct_size`). The field
/// order is LLGuidance's, relied on by positional initialisers in hosts.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LlgTokenizerInit {
    /// Number of token ids.
    pub vocab_size: u32,
    /// The end-of-sequence id (for chat, the end-of-turn id).
    pub tok_eos: u32,
    /// Byte length of each token (`vocab_size` entries).
    pub token_lens: *const u32,
    /// All token bytes, concatenated; special tokens start with `0xFF`.
    pub token_bytes: *const u8,
    /// Alternatively, the text of a Hugging Face `tokenizer.json` (NUL-terminated).
    pub tokenizer_json: *const c_char,
    /// The callback only accepts valid UTF-8.
    pub tokenize_assumes_string: bool,
    /// Optional thread-safe tokenize callback.
    pub tokenize_fn: LlgTokenizeFn,
    /// Ignore `tokenize_fn` and tokenize greedily.
    pub use_approximate_greedy_tokenize_fn: bool,
    /// First argument of `tokenize_fn`.
    pub tokenize_user_data: *const c_void,
    /// NULL-terminated list of slice regexes; NULL = defaults, empty = none.
    pub slices: *const *const c_char,
}

/// Version 2: `struct_size` first, the v1 fields, then extra EOS ids. Only `struct_size`
/// bytes are read; fields beyond are zero.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct LlgTokenizerInitV2 {
    /// `sizeof(LlgTokenizerInitV2)` as the caller knows it.
    pub struct_size: usize,
    /// As in v1.
    pub vocab_size: u32,
    /// As in v1.
    pub tok_eos: u32,
    /// As in v1.
    pub token_lens: *const u32,
    /// As in v1.
    pub token_bytes: *const u8,
    /// As in v1.
    pub tokenizer_json: *const c_char,
    /// As in v1.
    pub tokenize_assumes_string: bool,
    /// As in v1.
    pub tokenize_fn: LlgTokenizeFn,
    /// As in v1.
    pub use_approximate_greedy_tokenize_fn: bool,
    /// As in v1.
    pub tokenize_user_data: *const c_void,
    /// As in v1.
    pub slices: *const *const c_char,
    /// More end-of-sequence ids (`tok_eos_extra_count` of them), or NULL.
    pub tok_eos_extra: *const u32,
    /// Length of `tok_eos_extra`.
    pub tok_eos_extra_count: u32,
}

impl LlgTokenizerInitV2 {
    fn zeroed() -> Self {
        LlgTokenizerInitV2 {
            struct_size: size_of::<Self>(),
            vocab_size: 0,
            tok_eos: 0,
            token_lens: core::ptr::null(),
            token_bytes: core::ptr::null(),
            tokenizer_json: core::ptr::null(),
            tokenize_assumes_string: false,
            tokenize_fn: None,
            use_approximate_greedy_tokenize_fn: false,
            tokenize_user_data: core::ptr::null(),
            slices: core::ptr::null(),
            tok_eos_extra: core::ptr::null(),
            tok_eos_extra_count: 0,
        }
    }

    fn from_v1(v1: &LlgTokenizerInit) -> Self {
        LlgTokenizerInitV2 {
            vocab_size: v1.vocab_size,
            tok_eos: v1.tok_eos,
            token_lens: v1.token_lens,
            token_bytes: v1.token_bytes,
            tokenizer_json: v1.tokenizer_json,
            tokenize_assumes_string: v1.tokenize_assumes_string,
            tokenize_fn: v1.tokenize_fn,
            use_approximate_greedy_tokenize_fn: v1.use_approximate_greedy_tokenize_fn,
            tokenize_user_data: v1.tokenize_user_data,
            slices: v1.slices,
            ..Self::zeroed()
        }
    }
}

/// The Rust value behind an `LlgTokenizer`.
pub(crate) struct CompatTokenizer {
    /// The vocabulary grammars compile against.
    pub(crate) vocab: Arc<Vocabulary>,
    tokenize: Option<(TokenizeFn, HostPtr<c_void>)>,
    /// `tokenize_assumes_string`: the callback only gets valid UTF-8.
    assumes_string: bool,
}

impl Castable for LlgTokenizer {
    type Ownership = Shared;
    type Rust = CompatTokenizer;
}

impl CompatTokenizer {
    /// Builds the vocabulary described by `init`.
    ///
    /// # Safety
    /// The pointers in `init` are NULL or valid as LLGuidance documents them.
    unsafe fn new(init: &LlgTokenizerInitV2) -> Result<CompatTokenizer, String> {
        let n = init.vocab_size as usize;
        // The host's `vocab_size` sizes tables: validate it before anything is allocated
        // or read from it.
        if u64::from(init.vocab_size) > hf::MAX_TOKEN_ID + 1 {
            return Err(format!(
                "vocab_size {n} is larger than {} (the most token ids supported)",
                hf::MAX_TOKEN_ID + 1
            ));
        }
        let (tokens, special) = if init.tokenizer_json.is_null() {
            // SAFETY: 1. `token_lens` is NULL or has `vocab_size` entries (caller contract).
            let lens = unsafe { input_slice(init.token_lens, n) }
                .ok_or("token_lens is NULL (and no tokenizer_json given)")?;
            let total = lens.iter().map(|&l| l as usize).sum::<usize>();
            // SAFETY: 1. `token_bytes` holds the sum of `token_lens` bytes (caller contract).
            let bytes = unsafe { input_slice(init.token_bytes, total) }
                .ok_or("token_bytes is NULL (and no tokenizer_json given)")?;
            let mut tokens = Vec::with_capacity(n);
            let mut special = Vec::new();
            let mut at = 0usize;
            for (id, &len) in lens.iter().enumerate() {
                let tok = &bytes[at..at + len as usize];
                at += len as usize;
                match tok.split_first() {
                    Some((&Vocabulary::SPECIAL_PREFIX, name)) if !name.is_empty() => {
                        special.push(id as u32);
                        tokens.push(name.to_vec());
                    }
                    _ => tokens.push(tok.to_vec()),
                }
            }
            (tokens, special)
        } else {
            // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
            let text = unsafe { c_str(init.tokenizer_json, "tokenizer_json") }?;
            let json: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("tokenizer_json is not valid JSON: {e}"))?;
            let table = hf::table(&json).map_err(|e| format!("tokenizer_json: {e}"))?;
            let mut tokens = table.tokens;
            if tokens.len() > n {
                return Err(format!(
                    "tokenizer_json has {} tokens but vocab_size is {n}",
                    tokens.len()
                ));
            }
            // Padding beyond the file's ids is allowed (models round their embedding
            // tables up), within the bound the file's own ids must meet.
            if n as u64 > hf::max_table_len(tokens.len()) {
                return Err(format!(
                    "vocab_size {n} is far beyond the {} ids of tokenizer_json (at most {})",
                    tokens.len(),
                    hf::max_table_len(tokens.len())
                ));
            }
            tokens.resize(n, Vec::new());
            (tokens, table.special)
        };
        let mut eos = vec![init.tok_eos];
        if init.tok_eos_extra_count > 0 {
            // SAFETY: 1. NULL or `tok_eos_extra_count` ids (caller contract).
            let extra =
                unsafe { input_slice(init.tok_eos_extra, init.tok_eos_extra_count as usize) }
                    .ok_or("tok_eos_extra is NULL with a non-zero tok_eos_extra_count")?;
            eos.extend_from_slice(extra);
        }
        let vocab = if init.slices.is_null() {
            Vocabulary::new(tokens, &special, &eos)
        } else {
            // SAFETY: 1. a NULL-terminated array of C strings (caller contract).
            let slices = unsafe { slice_list(init.slices) }?;
            Vocabulary::with_slices(tokens, &special, &eos, &slices)
        }
        .map_err(|e| e.to_string())?;
        let tokenize = init
            .tokenize_fn
            .filter(|_| !init.use_approximate_greedy_tokenize_fn)
            .map(|f| (f, HostPtr::new(init.tokenize_user_data.cast_mut())));
        Ok(CompatTokenizer {
            vocab: Arc::new(vocab),
            tokenize,
            assumes_string: init.tokenize_assumes_string,
        })
    }

    /// Tokenizes text through the host callback, else greedily (longest match); forced
    /// tokens are tokenized here too, so they are the host's canonical segmentation, as in
    /// LLGuidance. With `tokenize_assumes_string` the callback gets only valid UTF-8: the
    /// bytes of an invalid sequence are tokenized greedily between the valid runs. `None`
    /// when the callback misbehaves or no token sequence spells the text.
    pub(crate) fn tokenize(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        if self.tokenize.is_none() || !self.assumes_string {
            return self.tokenize_run(bytes);
        }
        let mut out = Vec::new();
        for chunk in bytes.utf8_chunks() {
            if !chunk.valid().is_empty() {
                out.extend(self.tokenize_run(chunk.valid().as_bytes())?);
            }
            if !chunk.invalid().is_empty() {
                out.extend(self.vocab.greedy_tokenize_text(chunk.invalid())?);
            }
        }
        Some(out)
    }

    /// One run of text through the host callback, else greedily.
    fn tokenize_run(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        let Some((f, user_data)) = self.tokenize else {
            return self.vocab.greedy_tokenize_text(bytes);
        };
        let mut out = vec![0u32; bytes.len() + 1];
        for _ in 0..2 {
            // SAFETY: 1. the host's thread-safe callback with its own user data; 2. `bytes`
            // and `out` are valid for their lengths.
            let need = unsafe {
                f(
                    user_data.0,
                    bytes.as_ptr(),
                    bytes.len(),
                    out.as_mut_ptr(),
                    out.len(),
                )
            };
            if need <= out.len() {
                out.truncate(need);
                let ok = out.iter().all(|&t| (t as usize) < self.vocab.vocab_size());
                return ok.then_some(out);
            }
            if need > 16 * bytes.len() + 1024 {
                return None;
            }
            out.resize(need, 0);
        }
        None
    }
}

/// Reads a NULL-terminated `char*` array of slice regexes.
///
/// # Safety
/// `list` is a non-NULL, NULL-terminated array of NUL-terminated strings.
unsafe fn slice_list(list: *const *const c_char) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for i in 0.. {
        // SAFETY: 1. entries up to and including the terminating NULL are readable.
        let p = unsafe { list.add(i).read() };
        if p.is_null() {
            break;
        }
        // SAFETY: 1. a NUL-terminated string (caller contract).
        out.push(unsafe { c_str(p, "a slice regex") }?.to_owned());
    }
    Ok(out)
}

/// Shared tail of the two constructors.
///
/// # Safety
/// As for [`CompatTokenizer::new`]; `error_string` is NULL or writable for
/// `error_string_len` bytes.
unsafe fn new_tokenizer(
    init: &LlgTokenizerInitV2,
    error_string: *mut c_char,
    error_string_len: usize,
) -> *mut LlgTokenizer {
    // SAFETY: 1. forwarded caller contract.
    match unsafe { CompatTokenizer::new(init) } {
        Ok(t) => arc_into_handle::<LlgTokenizer>(Arc::new(t)).cast_mut(),
        Err(msg) => {
            // SAFETY: 1. forwarded caller contract.
            unsafe { write_message(error_string, error_string_len, &msg) };
            core::ptr::null_mut()
        }
    }
}

/// Builds a tokenizer from a v1 description; NULL on failure with the message in
/// `error_string` (NUL-terminated, truncated to `error_string_len`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_tokenizer(
    tok_init: *const LlgTokenizerInit,
    error_string: *mut c_char,
    error_string_len: usize,
) -> *mut LlgTokenizer {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a readable, initialised struct (caller contract).
        let Some(v1) = (unsafe { tok_init.as_ref() }) else {
            // SAFETY: 1. NULL or writable for its length (caller contract).
            unsafe { write_message(error_string, error_string_len, "tok_init is NULL") };
            return core::ptr::null_mut();
        };
        // SAFETY: 1. the struct's pointers follow the documented contract.
        unsafe {
            new_tokenizer(
                &LlgTokenizerInitV2::from_v1(v1),
                error_string,
                error_string_len,
            )
        }
    })
}

/// Builds a tokenizer from a v2 description (reads only `struct_size` bytes, which must
/// cover at least `struct_size`, `vocab_size` and `tok_eos`).
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_tokenizer_v2(
    tok_init: *const LlgTokenizerInitV2,
    error_string: *mut c_char,
    error_string_len: usize,
) -> *mut LlgTokenizer {
    guard(core::ptr::null_mut(), || {
        let fail = |msg: &str| {
            // SAFETY: 1. NULL or writable for its length (caller contract).
            unsafe { write_message(error_string, error_string_len, msg) };
            core::ptr::null_mut()
        };
        if tok_init.is_null() {
            return fail("tok_init is NULL");
        }
        // SAFETY: 1. non-NULL; its first field is readable (caller contract).
        let size = unsafe { tok_init.cast::<usize>().read() };
        if size < core::mem::offset_of!(LlgTokenizerInitV2, token_lens) {
            return fail("tok_init->struct_size is too small");
        }
        let mut defaults = LlgTokenizerInitV2::zeroed();
        defaults.struct_size = 0;
        // SAFETY: 1. readable for `struct_size` bytes; fields are plain data written by C.
        let Some(init) = (unsafe { read_versioned(tok_init, defaults) }) else {
            return fail("tok_init->struct_size is too small");
        };
        // SAFETY: 1. the struct's pointers follow the documented contract.
        unsafe { new_tokenizer(&init, error_string, error_string_len) }
    })
}

/// Adds a reference to a tokenizer (NULL for NULL).
#[unsafe(no_mangle)]
pub extern "C" fn llg_clone_tokenizer(tok: *const LlgTokenizer) -> *mut LlgTokenizer {
    guard(core::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
        match unsafe { arc_clone(tok) } {
            Some(t) => arc_into_handle::<LlgTokenizer>(t).cast_mut(),
            None => core::ptr::null_mut(),
        }
    })
}

/// Drops a reference to a tokenizer. NULL is a no-op. Constraints and matchers built from it
/// keep the vocabulary alive.
#[unsafe(no_mangle)]
pub extern "C" fn llg_free_tokenizer(tok: *mut LlgTokenizer) {
    guard((), || {
        // SAFETY: 1. NULL or a tokenizer handle freed once (caller contract).
        unsafe { arc_free(tok.cast_const()) }
    })
}

/// Tokenizes bytes (host callback, else greedy). Returns the number of ids the text needs
/// and writes at most `output_tokens_len` of them; 0 on bad arguments.
#[unsafe(no_mangle)]
pub extern "C" fn llg_tokenize_bytes(
    tok: *const LlgTokenizer,
    bytes: *const u8,
    bytes_len: usize,
    output_tokens: *mut u32,
    output_tokens_len: usize,
) -> usize {
    guard(0, || {
        // SAFETY: 1. NULL or a live handle; buffers NULL or valid for their lengths.
        let (Some(t), Some(bytes)) = (unsafe { handle_ref(tok) }, unsafe {
            input_slice(bytes, bytes_len)
        }) else {
            return 0;
        };
        let ids = t.tokenize(bytes).unwrap_or_default();
        // SAFETY: 1. NULL (then length 0 is used) or writable for its length.
        let out = unsafe { output_slice(output_tokens, output_tokens_len) }.unwrap_or_default();
        let n = ids.len().min(out.len());
        out[..n].copy_from_slice(&ids[..n]);
        ids.len()
    })
}

/// `llg_decode_tokens` flag: include special tokens (their names, `<[id]>` for ids without
/// text).
pub const LLG_DECODE_INCLUDE_SPECIAL: u32 = 1;
/// `llg_decode_tokens` flag: replace invalid UTF-8 with U+FFFD.
pub const LLG_DECODE_VALID_UTF8: u32 = 2;

impl CompatTokenizer {
    /// The bytes of `tokens`, concatenated; special tokens (and ids without text) only with
    /// `include_special`.
    fn decode(&self, tokens: &[u32], include_special: bool) -> Vec<u8> {
        let mut out = Vec::new();
        for &t in tokens {
            let text = if (t as usize) < self.vocab.vocab_size() {
                self.vocab.token_text(t)
            } else {
                &[]
            };
            let special = text.is_empty() || self.vocab.is_special(t);
            if !special || (include_special && !text.is_empty()) {
                out.extend_from_slice(text);
            } else if include_special {
                out.extend_from_slice(format!("<[{t}]>").as_bytes());
            }
        }
        out
    }

    /// Tokenizes text in which `0xFF<name>` (a special token's name) and `0xFF[id]` stand
    /// for special tokens; the rest goes through [`CompatTokenizer::tokenize`].
    fn tokenize_marker(&self, bytes: &[u8]) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        let mut rest = bytes;
        while !rest.is_empty() {
            let plain = rest
                .iter()
                .position(|&b| b == Vocabulary::SPECIAL_PREFIX)
                .unwrap_or(rest.len());
            if plain > 0 {
                out.extend(self.tokenize(&rest[..plain])?);
                rest = &rest[plain..];
                continue;
            }
            let after = &rest[1..];
            let (id, len) = self.special_at(after)?;
            out.push(id);
            rest = &after[len..];
        }
        Some(out)
    }

    /// The special token that `bytes` starts with (after a `0xFF` marker) and its length:
    /// `[id]`, or the longest special token name.
    fn special_at(&self, bytes: &[u8]) -> Option<(u32, usize)> {
        if let Some(body) = bytes.strip_prefix(b"[") {
            let digits = body.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && body.get(digits) == Some(&b']') {
                let id: u32 = core::str::from_utf8(&body[..digits]).ok()?.parse().ok()?;
                return ((id as usize) < self.vocab.vocab_size()).then_some((id, digits + 2));
            }
        }
        self.vocab
            .special_tokens()
            .iter()
            .map(|&id| (id, self.vocab.token_text(id)))
            .filter(|(_, name)| !name.is_empty() && bytes.starts_with(name))
            .max_by_key(|(_, name)| name.len())
            .map(|(id, name)| (id, name.len()))
    }
}

/// Copies `text` into a caller buffer of `len` bytes, truncated and NUL-terminated (nothing
/// for NULL or 0), and returns `text.len() + 1`, the size that would hold all of it.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
unsafe fn write_text(buf: *mut c_char, len: usize, text: &[u8]) -> usize {
    // SAFETY: 1. NULL or writable for `len` bytes (caller contract).
    if let Some(dst) = unsafe { output_slice(buf.cast::<u8>(), len) }
        && !dst.is_empty()
    {
        let n = text.len().min(dst.len() - 1);
        dst[..n].copy_from_slice(&text[..n]);
        dst[n] = 0;
    }
    text.len() + 1
}

/// Tokenizes bytes in which special tokens are written `0xFF<name>` (e.g. `\xFF<|eot_id|>`)
/// or `0xFF[id]`; other text as `llg_tokenize_bytes`. Returns the number of ids needed and
/// writes at most `output_tokens_len`; 0 on bad arguments or text that cannot be tokenized.
#[unsafe(no_mangle)]
pub extern "C" fn llg_tokenize_bytes_marker(
    tok: *const LlgTokenizer,
    bytes: *const u8,
    bytes_len: usize,
    output_tokens: *mut u32,
    output_tokens_len: usize,
) -> usize {
    guard(0, || {
        // SAFETY: 1. NULL or a live handle; buffers NULL or valid for their lengths.
        let (Some(t), Some(bytes)) = (unsafe { handle_ref(tok) }, unsafe {
            input_slice(bytes, bytes_len)
        }) else {
            return 0;
        };
        let ids = t.tokenize_marker(bytes).unwrap_or_default();
        // SAFETY: 1. NULL (then length 0 is used) or writable for its length.
        let out = unsafe { output_slice(output_tokens, output_tokens_len) }.unwrap_or_default();
        let n = ids.len().min(out.len());
        out[..n].copy_from_slice(&ids[..n]);
        ids.len()
    })
}

/// Decodes tokens to text (`flags`: `LLG_DECODE_INCLUDE_SPECIAL`, `LLG_DECODE_VALID_UTF8`),
/// written NUL-terminated and truncated to `output_len` bytes. Returns the size the whole
/// text needs, NUL included; 0 for a NULL tokenizer or `tokens` NULL with `n_tokens > 0`.
#[unsafe(no_mangle)]
pub extern "C" fn llg_decode_tokens(
    tok: *const LlgTokenizer,
    tokens: *const u32,
    n_tokens: usize,
    output: *mut c_char,
    output_len: usize,
    flags: u32,
) -> usize {
    guard(0, || {
        // SAFETY: 1. NULL or a live handle; `tokens` NULL or readable for `n_tokens` ids.
        let (Some(t), Some(tokens)) = (unsafe { handle_ref(tok) }, unsafe {
            input_slice(tokens, n_tokens)
        }) else {
            return 0;
        };
        let mut text = t.decode(tokens, flags & LLG_DECODE_INCLUDE_SPECIAL != 0);
        if flags & LLG_DECODE_VALID_UTF8 != 0 {
            text = String::from_utf8_lossy(&text).into_owned().into_bytes();
        }
        // SAFETY: 1. NULL or writable for `output_len` bytes (caller contract).
        unsafe { write_text(output, output_len, &text) }
    })
}

/// A debugging rendering of tokens, e.g. `⟦"The"‧" answer"‧<|eot_id|>⟧` (each token's text
/// escaped and quoted, special tokens by name, `<[id]>` for ids without text), written
/// NUL-terminated and truncated to `output_len` bytes. Returns the size the whole rendering
/// needs, NUL included; 0 on bad arguments.
#[unsafe(no_mangle)]
pub extern "C" fn llg_stringify_tokens(
    tok: *const LlgTokenizer,
    tokens: *const u32,
    n_tokens: usize,
    output: *mut c_char,
    output_len: usize,
) -> usize {
    guard(0, || {
        // SAFETY: 1. NULL or a live handle; `tokens` NULL or readable for `n_tokens` ids.
        let (Some(t), Some(tokens)) = (unsafe { handle_ref(tok) }, unsafe {
            input_slice(tokens, n_tokens)
        }) else {
            return 0;
        };
        let parts: Vec<String> = tokens
            .iter()
            .map(|&id| {
                let text = t.decode(&[id], true);
                if t.vocab.is_special(id)
                    || text.is_empty()
                    || (id as usize) >= t.vocab.vocab_size()
                {
                    String::from_utf8_lossy(&text).into_owned()
                } else {
                    format!("{:?}", String::from_utf8_lossy(&text))
                }
            })
            .collect();
        let text = format!("⟦{}⟧", parts.join("‧"));
        // SAFETY: 1. NULL or writable for `output_len` bytes (caller contract).
        unsafe { write_text(output, output_len, text.as_bytes()) }
    })
}

/// The version: a static NUL-terminated string `"sieve@X (llguidance-compatible)"`; never
/// free it.
#[unsafe(no_mangle)]
pub extern "C" fn llg_get_version() -> *const c_char {
    concat!(
        "sieve@",
        env!("CARGO_PKG_VERSION"),
        " (llguidance-compatible)\0"
    )
    .as_ptr()
    .cast()
}

/// The tokenizer behind a handle (a new strong reference), if non-NULL.
///
/// # Safety
/// `tok` is NULL or a live tokenizer handle.
pub(crate) unsafe fn tokenizer_of(tok: *const LlgTokenizer) -> Option<Arc<CompatTokenizer>> {
    // SAFETY: 1. forwarded caller contract.
    unsafe { arc_clone(tok) }
}

/// The vocabulary behind a tokenizer handle, if non-NULL.
///
/// # Safety
/// `tok` is NULL or a live tokenizer handle.
pub(crate) unsafe fn vocab_of(tok: *const LlgTokenizer) -> Option<Arc<Vocabulary>> {
    // SAFETY: 1. forwarded caller contract.
    unsafe { handle_ref(tok) }.map(|t| t.vocab.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `new_tokenizer_v2` on `init`: the handle (freed) or the error message.
    fn build(init: &LlgTokenizerInitV2) -> Result<(), String> {
        let mut err = [0 as c_char; 256];
        let tok = llg_new_tokenizer_v2(init, err.as_mut_ptr(), err.len());
        if tok.is_null() {
            // SAFETY: 1. `write_message` NUL-terminates within the buffer.
            let msg = unsafe { core::ffi::CStr::from_ptr(err.as_ptr()) };
            return Err(msg.to_string_lossy().into_owned());
        }
        llg_free_tokenizer(tok);
        Ok(())
    }

    #[test]
    fn vocab_size_is_validated_before_sizing_tables() {
        let json =
            c"{\"decoder\":{\"type\":\"ByteLevel\"},\"model\":{\"vocab\":{\"a\":0,\"b\":1}}}";
        let mut init = LlgTokenizerInitV2::zeroed();
        init.tokenizer_json = json.as_ptr();
        init.vocab_size = 2;
        assert_eq!(build(&init), Ok(()));
        // Padding a little is fine; 4 billion ids for a 2-token file is refused before
        // anything is allocated (it used to resize the table to `vocab_size`).
        init.vocab_size = 1000;
        assert_eq!(build(&init), Ok(()));
        init.vocab_size = u32::MAX;
        let e = build(&init).unwrap_err();
        assert!(e.contains("vocab_size"), "{e}");
        init.vocab_size = 10_000_000;
        let e = build(&init).unwrap_err();
        assert!(e.contains("far beyond"), "{e}");
        // Without tokenizer_json, `vocab_size` is checked before the host's arrays are read.
        let mut init = LlgTokenizerInitV2::zeroed();
        init.vocab_size = u32::MAX;
        let e = build(&init).unwrap_err();
        assert!(e.contains("vocab_size"), "{e}");
    }
}
