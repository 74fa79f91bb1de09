//! Grammar analysis (`sieve_core::ir::analysis`): a grammar's class (regular, linear,
//! general) and why, nullable, productive and unreachable rules, shortest strings and lexeme
//! conflicts, as the JSON report `sieve grammar-info --json` prints (format in the project's
//! `core/docs/analysis.md`).

use sieve_core::CompileBudget;
use sieve_core::grammar::{CompileOptions, GrammarSyntax, lower_ir};
use sieve_core::ir::analysis::analyze;

use crate::boundary::{
    copy_with_nul, ffi_boundary, handle_ref, input_slice, output_slice, write_out,
};
use crate::error::{ErrorInfo, sieve_error};
use crate::grammar::{read_limits, sieve_limits};
use crate::prelude::*;
use crate::status::sieve_status;
use crate::tokenizer::sieve_tokenizer;

/// Analyzes `len` bytes of UTF-8 grammar text written in `syntax` (`syntax_len` bytes:
/// `lark`, `gbnf`, `json_schema`, `regex`, `structural_tag` or `llguidance`, or a usual
/// alias such as `json`) and writes the JSON report (NUL-terminated) into `buf`. Special
/// tokens are resolved and named with `tokenizer`'s vocabulary. `limits` may be NULL for the
/// defaults; lowering the grammar and analyzing it each get the whole compile budget.
///
/// `*report_len` receives the report's length (without the NUL). If `cap` is not above it,
/// returns `SIEVE_STATUS_INSUFFICIENT_SIZE` and writes nothing to `buf`, so the caller can
/// size a buffer (`buf` may then be NULL with `cap` 0). A grammar that does not lower is
/// `SIEVE_STATUS_GRAMMAR_ERROR` (or `_LIMIT_EXCEEDED`, `_UNSUPPORTED`, ...) with the message
/// and position in `*error_out` (if non-NULL); an unknown syntax name is
/// `SIEVE_STATUS_INVALID_ARGUMENT`.
///
/// Thread safety: none needed beyond the tokenizer's (read-only).
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_grammar_info_json(
    tokenizer: *const sieve_tokenizer,
    syntax: *const u8,
    syntax_len: usize,
    text: *const u8,
    len: usize,
    limits: *const sieve_limits,
    buf: *mut u8,
    cap: usize,
    report_len: *mut usize,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let fail = |status, msg: &str| {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::new(status, msg).report(error_out) }
        };
        // SAFETY: 1. NULL or a live tokenizer handle; `syntax` and `text` NULL or readable
        // for their lengths (caller contract).
        let (Some(tok), Some(syntax), Some(text)) = (
            unsafe { handle_ref(tokenizer) },
            unsafe { input_slice(syntax, syntax_len) },
            unsafe { input_slice(text, len) },
        ) else {
            return fail(sieve_status::NullArgument, "tokenizer, syntax or text is NULL");
        };
        if report_len.is_null() {
            return fail(sieve_status::NullArgument, "report_len is NULL");
        }
        // SAFETY: 1. NULL (with `cap` 0) or writable for `cap` bytes (caller contract).
        let Some(buf) = (unsafe { output_slice(buf, cap) }) else {
            return fail(sieve_status::NullArgument, "buf is NULL");
        };
        // SAFETY: 1. NULL or readable for its `struct_size` bytes (caller contract).
        let Some(limits) = (unsafe { read_limits(limits) }) else {
            return fail(sieve_status::InvalidArgument, "limits->struct_size is too small");
        };
        let Some(syntax) = core::str::from_utf8(syntax).ok().and_then(GrammarSyntax::from_name)
        else {
            return fail(sieve_status::InvalidArgument, "unknown grammar syntax");
        };
        let text = match core::str::from_utf8(text) {
            Ok(t) => t,
            Err(e) => {
                let msg = format!("grammar text is not UTF-8 (byte {})", e.valid_up_to());
                return fail(sieve_status::InvalidUtf8, &msg);
            }
        };
        let vocab = tok.vocab();
        let opts = CompileOptions::default();
        let mut budget = CompileBudget::new(&limits);
        let info = lower_ir(syntax, text, &opts, vocab, &limits, &mut budget).and_then(|ir| {
            let mut budget = CompileBudget::new(&limits);
            analyze(&ir, Some(vocab), &limits, &mut budget)
        });
        let info = match info {
            Ok(i) => i,
            Err(e) => {
                // SAFETY: 1. `error_out` is NULL or writable (caller contract).
                return unsafe { ErrorInfo::grammar(&e).report(error_out) };
            }
        };
        let report = info.to_json().to_string();
        // SAFETY: 1. `report_len` checked non-NULL.
        unsafe { write_out(report_len, report.len()) };
        copy_with_nul(buf, report.as_bytes())
    }
}
