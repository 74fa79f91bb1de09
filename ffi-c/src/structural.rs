//! Structural-tag presets: the structural tag for a model family's tool-call format
//! (`sieve_core::grammar::structural::presets`), as JSON text the caller compiles with
//! `sieve_grammar_new_structural_tag` (or edits first).

use crate::boundary::{copy_with_nul, ffi_boundary, input_slice, output_slice, write_out};
use crate::error::{ErrorInfo, sieve_error};
use crate::prelude::*;
use crate::status::sieve_status;
use sieve_core::grammar::structural::presets::{self, PresetOptions};

/// `sieve_structural_tag_preset` flag: allow more than one tool call.
pub const SIEVE_PRESET_PARALLEL_CALLS: u32 = 1;
/// `sieve_structural_tag_preset` flag: a reasoning block (`<think>`…`</think>` or the family's
/// equivalent) comes first.
pub const SIEVE_PRESET_REASONING: u32 = 2;

/// Writes the structural tag (JSON text, NUL-terminated) for model family `family`
/// (`qwen3`, `hermes`, `llama3`, `mistral`, `deepseek`, `harmony`; `family_len` bytes) and
/// the OpenAI-style tool list `tools` (a JSON array, `tools_len` bytes) into `buf`.
/// `tool_choice` (`tool_choice_len` bytes; NULL for `auto`) is `auto`, `required`, `none` or
/// a tool's name; `flags` ORs `SIEVE_PRESET_*`.
///
/// `*len` receives the text's length (without the NUL). If `cap` is not above it, returns
/// `SIEVE_STATUS_INSUFFICIENT_SIZE` and writes nothing to `buf`, so the caller can size a
/// buffer. An unknown family or malformed tools is `SIEVE_STATUS_GRAMMAR_ERROR` with the
/// JSON pointer of the fault in `*error_out` (if non-NULL).
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_structural_tag_preset(
    family: *const u8,
    family_len: usize,
    tools: *const u8,
    tools_len: usize,
    tool_choice: *const u8,
    tool_choice_len: usize,
    flags: u32,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let fail = |status, msg: &str| {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::new(status, msg).report(error_out) }
        };
        // SAFETY: 1. NULL or readable for the given lengths (caller contract).
        let (Some(family), Some(tools)) = (unsafe { input_slice(family, family_len) }, unsafe {
            input_slice(tools, tools_len)
        }) else {
            return fail(sieve_status::NullArgument, "family or tools is NULL");
        };
        let choice = if tool_choice.is_null() {
            None
        } else {
            // SAFETY: 1. non-NULL and readable for `tool_choice_len` bytes (caller contract).
            match unsafe { input_slice(tool_choice, tool_choice_len) }
                .map(core::str::from_utf8)
            {
                Some(Ok(c)) => Some(c.to_owned()),
                _ => return fail(sieve_status::InvalidUtf8, "tool_choice is not UTF-8"),
            }
        };
        // SAFETY: 1. NULL or writable for `cap` bytes (caller contract).
        let Some(buf) = (unsafe { output_slice(buf, cap) }) else {
            return fail(sieve_status::NullArgument, "buf is NULL");
        };
        if len.is_null() {
            return fail(sieve_status::NullArgument, "len is NULL");
        }
        let (Ok(family), Ok(tools)) = (core::str::from_utf8(family), core::str::from_utf8(tools))
        else {
            return fail(sieve_status::InvalidUtf8, "family or tools is not UTF-8");
        };
        let tools = match sieve_core::grammar::json::parse_schema(tools) {
            Ok(v) => v,
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            Err(e) => return unsafe { ErrorInfo::grammar(&e).report(error_out) },
        };
        let opts = PresetOptions {
            tool_choice: choice,
            parallel_tool_calls: flags & SIEVE_PRESET_PARALLEL_CALLS != 0,
            reasoning: flags & SIEVE_PRESET_REASONING != 0,
        };
        let text = match presets::preset(family, &tools, &opts) {
            Ok(v) => v.to_string(),
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            Err(e) => return unsafe { ErrorInfo::grammar(&e).report(error_out) },
        };
        // SAFETY: 1. `len` checked non-NULL.
        unsafe { write_out(len, text.len()) };
        copy_with_nul(buf, text.as_bytes())
    }
}
