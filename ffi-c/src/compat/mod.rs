//! An LLGuidance-compatible C surface (`include/llguidance_compat.h`, written by hand).
//!
//! Runtimes that already call LLGuidance's `llg_*` functions (llama.cpp's sampler,
//! onnxruntime-genai's constraint processor, Chromium, LiteRT-LM) can relink against
//! `libsieve` instead. The names, struct layouts, return conventions and pointer lifetimes
//! follow LLGuidance's public header; the work is done by `sieve-core`.
//!
//! # Error model (as in LLGuidance)
//! - Constraint and matcher constructors never return NULL: a grammar that does not compile
//!   gives a handle in the error state; `llg_get_error` / `llg_matcher_get_error` say why.
//! - Errors are sticky: once set, every fallible call returns -1 and the message pointer
//!   stays the same until the handle is freed. `llg_matcher_reset` cannot clear an error.
//! - `llg_new_tokenizer` returns NULL on failure and writes the message into the caller's
//!   buffer (NUL-terminated, truncated to fit).
//! - Pointers returned inside `LlgMaskResult` / `LlgCommitResult` and by
//!   `llg_matcher_get_mask` are owned by the handle and stay valid until the next `llg_*`
//!   call on that same handle.
//!
//! # Masks and grammars as LLGuidance makes them
//! - Where the grammar forces text, a mask holds only the first token of that text's
//!   tokenization by the host's `tokenize_fn` ([`llg_mask`]); sieve's native masks keep
//!   every token that spells it.
//! - JSON Schemas compile with LLGuidance's defaults (`JsonOptions::llguidance()`: declared
//!   property order, any whitespace run, canonical keys, `const`/`enum` values and plain
//!   integers), and a schema's `x-guidance` applies.
//! - Checked against LLGuidance 1.9.1 itself: llama.cpp's `common/llguidance.cpp`, compiled
//!   unchanged and linked once to each library, gives the same allowed-token count and the
//!   same pick at every step of 18 generations (`bench/real-clients/`).
//!
//! # Beyond the per-sequence calls
//! - `llg_par_compute_mask` (`par.rs`): a batch of constraints on the library's pool (the
//!   runner `sieve_compute_masks` uses), optionally asynchronous with a completion callback
//!   run on a pool thread (without `std`: on the calling thread, and the callback runs before
//!   the call returns).
//! - The stop controller (`stop.rs`): `LlgStopController` is a handle around
//!   `sieve_core::StopController` (stop tokens and a stop regex; the algorithm, its
//!   `MAX_STOP_BYTES` bound and its tests are in `core/src/stop.rs`); the file only converts
//!   arguments, the NUL-terminated output and error messages.
//! - `LlgParserLimits` is honoured: `LlgParserLimits::to_sieve` (`constraint.rs`) maps each
//!   field onto the sieve budget of the same kind, relative to LLGuidance's defaults.
//! - Decoding and marker tokenization (`llg_decode_tokens`, `llg_tokenize_bytes_marker`,
//!   `llg_stringify_tokens`) and `llg_get_version` (`tokenizer.rs`).
//!
//! The module is hidden from cbindgen: `sieve.h` does not declare these functions.

use alloc::ffi::CString;
use alloc::sync::Arc;
use core::ffi::{CStr, c_char};

use sieve_core::grammar::json::JsonOptions;
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

use crate::prelude::*;

mod constraint;
mod matcher;
mod par;
mod stop;
mod tokenizer;

/// Runs `body` and turns a panic into `fallback`, so no unwind crosses into C (without `std`
/// a panic aborts).
pub(crate) fn guard<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    crate::boundary::catch_panic(body).unwrap_or(fallback)
}

/// Prints an error for `log_stderr_level >= 1`: to stderr with `std`; without `std` there is
/// no stderr and the message is only kept in the handle (`llg_get_error`).
pub(crate) fn log_stderr(msg: &str) {
    #[cfg(feature = "std")]
    std::eprintln!("sieve (llg compat): {msg}");
    #[cfg(not(feature = "std"))]
    let _ = msg;
}

/// Borrows a NUL-terminated C string as UTF-8; `Err` says what is wrong with it.
///
/// # Safety
/// `ptr` is NULL or points at a NUL-terminated string that outlives `'a`.
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, String> {
    if ptr.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: 1. non-NULL and NUL-terminated by the caller's contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str()
        .map_err(|e| format!("{what} is not valid UTF-8 (byte {})", e.valid_up_to()))
}

/// An owned message for C: interior NUL bytes are replaced so nothing is cut.
pub(crate) fn c_message(msg: &str) -> CString {
    CString::new(msg.replace('\0', "\\0")).unwrap_or_default()
}

/// Writes `msg` into a caller's `char` buffer of `len` bytes, truncated and NUL-terminated.
/// Does nothing for a NULL buffer or a zero length.
///
/// # Safety
/// `buf` is NULL or writable for `len` bytes.
pub(crate) unsafe fn write_message(buf: *mut c_char, len: usize, msg: &str) {
    if buf.is_null() || len == 0 {
        return;
    }
    let bytes = msg.as_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: 1. `buf` is writable for `len > n` bytes; 2. `bytes` is readable for `n`;
    // 3. a caller's buffer cannot overlap our string.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        buf.add(n).write(0);
    }
}

/// A mask as LLGuidance computes it: sieve's, narrowed to the one canonical token where the
/// grammar forces text (LLGuidance allows only the first token of the forced text's
/// tokenization there; see `Matcher::canonical_forced_token`). Forced text is tokenized by
/// the host's `tokenize_fn` when it gave one.
pub(crate) fn llg_mask(
    m: &mut Matcher,
    tokenizer: Option<&tokenizer::CompatTokenizer>,
    mask: &mut [u32],
) -> Result<(), String> {
    m.compute_mask(mask).map_err(|e| e.to_string())?;
    if m.is_stopped() {
        return Ok(());
    }
    if let Some(&t) = ff_tokens(m, tokenizer)?.first() {
        sieve_kernels::fill(mask, 0);
        sieve_kernels::set_bit(mask, t);
    }
    Ok(())
}

/// The forced tokens (`Matcher::compute_ff_tokens_with`), tokenized by the host's
/// `tokenize_fn` when the layer has one, else greedily.
pub(crate) fn ff_tokens(
    m: &mut Matcher,
    tokenizer: Option<&tokenizer::CompatTokenizer>,
) -> Result<Vec<u32>, String> {
    match tokenizer {
        Some(t) => m.compute_ff_tokens_with(&mut |text| t.tokenize(text)),
        None => m.compute_ff_tokens(),
    }
    .map_err(|e| e.to_string())
}

/// The JSON Schema options of this layer: LLGuidance's defaults, which its clients were
/// tuned for.
fn json_options() -> JsonOptions {
    JsonOptions::llguidance()
}

/// Compiles grammar text of an LLGuidance constraint type against `vocab` within `limits`
/// (from the host's `LlgParserLimits`, see [`constraint::LlgParserLimits::to_sieve`]).
///
/// Types: `regex`; `json` / `json_schema`; `json_object`; `lark`; `llguidance` / `guidance`
/// (LLGuidance's JSON grammar list, or Lark text when it does not start with `{`: see
/// `sieve_core::grammar::llguidance`); and, beyond LLGuidance, `gbnf` / `ebnf` / `grammar`
/// (llama.cpp's GBNF, start rule `root`). `lark` text that is GBNF ([`is_gbnf`]) compiles
/// as GBNF. Each type names a [`GrammarSyntax`]; [`Grammar::compile`] does the rest.
pub(crate) fn compile(
    vocab: &Arc<Vocabulary>,
    kind: &str,
    data: &str,
    limits: &Limits,
) -> Result<Grammar, String> {
    let (syntax, text) = match kind {
        "json_object" => (Some(GrammarSyntax::JsonSchema), r#"{"type": "object"}"#),
        "lark" if is_gbnf(data) => (Some(GrammarSyntax::Gbnf), data),
        "regex" | "json" | "json_schema" | "lark" | "llguidance" | "guidance" | "gbnf" | "ebnf"
        | "grammar" => (GrammarSyntax::from_name(kind), data),
        _ => (None, data),
    };
    let Some(syntax) = syntax else {
        return Err(format!(
            "unknown constraint type {kind:?} (expected regex, json, json_schema, json_object, lark, llguidance, gbnf)"
        ));
    };
    let opts = CompileOptions {
        json: json_options(),
        ..CompileOptions::default()
    };
    Grammar::compile(syntax, text, &opts, vocab, limits)
        .map(|(g, _)| g)
        .map_err(|e| e.to_string())
}

/// Whether `lark` grammar text is GBNF: llama.cpp hands LLGuidance its grammars as type
/// `lark`, and a host routing every grammar to this library passes GBNF there too. The
/// test is conservative: no `%llguidance` header, and the first line that is not blank, a
/// `#` comment (GBNF) or a `//` comment (Lark) defines a rule with `::=` (`name ::= ...`),
/// which is never valid Lark (Lark writes `name: ...`).
pub(crate) fn is_gbnf(text: &str) -> bool {
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with("//") {
            continue;
        }
        let name_len = line
            .bytes()
            .take_while(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
            .count();
        return name_len > 0 && line[name_len..].trim_start().starts_with("::=");
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> Arc<Vocabulary> {
        let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
        tokens.push(b"<|eos|>".to_vec());
        let eos = (tokens.len() - 1) as u32;
        Arc::new(Vocabulary::new(tokens, &[eos], &[eos]).unwrap())
    }

    #[test]
    fn top_level_forms() {
        let v = vocab();
        let l = Limits::default();
        let ok = |kind: &str, text: &str| compile(&v, kind, text, &l).is_ok();
        assert!(ok(
            "llguidance",
            r#"{"grammars":[{"lark_grammar":"start: \"a\""}]}"#
        ));
        assert!(ok(
            "guidance",
            r#"{"grammars":[{"json_schema":{"type":"integer"}}]}"#
        ));
        assert!(ok("llguidance", r#"{"lark_grammar":"start: \"a\""}"#));
        assert!(ok("llguidance", "start: \"a\""));
        // Grammar 0 is the start; the others are reached through `@name`.
        let two = r#"{"grammars":[{"lark_grammar":"start: \"a\" @b"},{"name":"b","lark_grammar":"start: \"b\""}]}"#;
        assert!(ok("llguidance", two));
        let err = |kind: &str, text: &str| compile(&v, kind, text, &l).unwrap_err();
        let missing =
            r#"{"grammars":[{"lark_grammar":"start: @c"},{"name":"b","json_schema":{}}]}"#;
        assert!(err("llguidance", missing).contains("no grammar named"));
        assert!(err("nope", "x").contains("unknown constraint type"));
    }

    /// `lark` text is GBNF only when its first definition uses `::=`.
    #[test]
    fn gbnf_detection_is_conservative() {
        assert!(is_gbnf("root ::= \"a\""));
        assert!(is_gbnf("# a comment\n\n  root-rule ::= [a-z]+\n"));
        assert!(is_gbnf("root::=x"));
        assert!(!is_gbnf("%llguidance {}\nstart: \"a\"\nx ::= y"));
        assert!(!is_gbnf("start: \"a\""));
        assert!(!is_gbnf("// start ::= a\nstart: \"::=\""));
        assert!(!is_gbnf("start: a\na ::= \"b\""));
        assert!(!is_gbnf(""));
        assert!(!is_gbnf("::= a"));
        // Named explicitly, or detected, GBNF goes to the GBNF front end (whose error says so
        // while it is a stub).
        let v = vocab();
        let l = Limits::default();
        for kind in ["gbnf", "ebnf", "grammar", "lark"] {
            match compile(&v, kind, "root ::= \"a\"", &l) {
                Ok(_) => {}
                Err(e) => assert!(e.contains("GBNF"), "{kind}: {e}"),
            }
        }
    }

    /// Through this layer JSON Schemas get LLGuidance's defaults: declared property order,
    /// any whitespace run between tokens; a schema's `x-guidance` still applies.
    #[test]
    fn json_defaults_are_llguidances() {
        let v = vocab();
        let l = Limits::default();
        let accepts = |schema: &str, text: &str| {
            let g = compile(&v, "json_schema", schema, &l).unwrap();
            let mut m = sieve_core::Matcher::new(&g);
            m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
        };
        let s = r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#;
        assert!(accepts(s, "{\"a\": 1, \"b\": 2}"));
        assert!(accepts(s, "{\n      \"a\" :1,\n\n\"b\":2\n}"));
        assert!(!accepts(s, "{\"b\": 2, \"a\": 1}"));
        // Keys and enum values in their canonical spelling; integers in plain notation.
        assert!(!accepts(s, "{\"\\u0061\": 1, \"b\": 2}"));
        assert!(!accepts(s, "{\"a\": 1e0, \"b\": 2}"));
        assert!(!accepts(r#"{"enum": [12]}"#, "1.2e1"));
        assert!(accepts(r#"{"enum": [12]}"#, "12"));
        // Strings: LLGuidance's characters (checked against LLGuidance 1.9.1 itself).
        let st = r#"{"type": "string"}"#;
        assert!(accepts(st, "\"a\\u001f\\n\""));
        assert!(!accepts(st, "\"\\/\""));
        assert!(!accepts(st, "\"\\u0041\""));
        assert!(!accepts(st, "\"\u{7f}\""));
        let compact = r#"{"x-guidance":{"whitespace_flexible":false},"type":"array","items":{"type":"integer"}}"#;
        assert!(accepts(compact, "[1,2]"));
        assert!(!accepts(compact, "[1, 2]"));
    }

    /// Where the grammar forces text, the mask holds only the first token of its
    /// tokenization, as LLGuidance's does; elsewhere sieve's mask is unchanged.
    #[test]
    fn forced_text_allows_its_canonical_token_only() {
        let v = vocab();
        let l = Limits::default();
        let g = compile(&v, "lark", "start: \"ab\" /[0-9]+/", &l).unwrap();
        let mut m = Matcher::new(&g);
        let mut mask = vec![0u32; m.mask_words()];
        llg_mask(&mut m, None, &mut mask).unwrap();
        let allowed: Vec<u32> = (0..v.vocab_size() as u32)
            .filter(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 1)
            .collect();
        // Single-byte vocabulary: "a" is the forced text's first token.
        assert_eq!(allowed, vec![u32::from(b'a' - 0x20)]);
        m.consume_token(u32::from(b'a' - 0x20)).unwrap();
        m.consume_token(u32::from(b'b' - 0x20)).unwrap();
        llg_mask(&mut m, None, &mut mask).unwrap();
        let digits = (b'0'..=b'9').map(|d| u32::from(d - 0x20));
        assert!(
            digits
                .clone()
                .all(|t| mask[t as usize / 32] >> (t % 32) & 1 == 1)
        );
    }

    #[test]
    fn messages_are_truncated_and_terminated() {
        let mut buf = [0x55 as c_char; 4];
        // SAFETY: 1. `buf` is a live local of 4 bytes.
        unsafe { write_message(buf.as_mut_ptr(), buf.len(), "hello") };
        assert_eq!(buf.map(|c| c as u8), *b"hel\0");
    }
}
