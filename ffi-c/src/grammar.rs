//! `sieve_grammar`: a compiled grammar (any `sieve_grammar_kind`) plus its JSON Schema
//! coverage report; and the versioned `sieve_limits`, `sieve_json_options` and
//! `sieve_gbnf_options` structs. Every kind compiles through the tokenizer's compile cache (`Grammar::compile` while it is off).

use alloc::ffi::CString;
use alloc::sync::Arc;
use core::ffi::{CStr, c_char};

use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::grammar::json::{
    CoverageReport, CoverageStatus, Direction, JsonOptions, PropertyOrder, Whitespace,
};
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_core::{Grammar, Limits};

use crate::boundary::{
    Castable, Shared, arc_clone, arc_free, arc_into_handle, ffi_boundary, handle_ref, input_slice,
    read_versioned, write_out, write_versioned,
};
use crate::error::{ErrorInfo, c_string, sieve_error};
use crate::prelude::*;
use crate::status::sieve_status;
use crate::tokenizer::sieve_tokenizer;

/// A compiled grammar bound to one tokenizer's vocabulary.
///
/// Thread safety: immutable and reference counted, like `sieve_tokenizer`: use one handle
/// from any number of threads at once (each thread makes its own matchers from it);
/// `sieve_grammar_clone` adds a reference, `sieve_grammar_free` drops one. Matchers keep what
/// they need, so a grammar may be freed while its matchers live on.
pub struct sieve_grammar {
    _private: [u8; 0],
}

/// The grammar languages `sieve_grammar_new` understands (passed as `uint32_t`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_grammar_kind {
    /// A Lark-style grammar (see the project's `core/docs/lark.md`).
    Lark = 1,
    /// A regular expression the whole output must match (`regex-syntax` syntax).
    Regex = 2,
    /// A JSON Schema (the output is a JSON document valid under it).
    JsonSchema = 3,
    /// A structural tag: XGrammar's JSON format for tool calls and reasoning (see the
    /// project's `core/docs/structural.md`). Its JSON Schemas use the JSON options given.
    StructuralTag = 4,
    /// llama.cpp's GBNF (see the project's `core/docs/gbnf.md`); start rule `root`, left
    /// recursion refused, as in llama.cpp. `sieve_grammar_new_gbnf` chooses both.
    Gbnf = 5,
}

impl TryFrom<u32> for sieve_grammar_kind {
    type Error = ();

    fn try_from(value: u32) -> Result<Self, ()> {
        match value {
            1 => Ok(sieve_grammar_kind::Lark),
            2 => Ok(sieve_grammar_kind::Regex),
            3 => Ok(sieve_grammar_kind::JsonSchema),
            4 => Ok(sieve_grammar_kind::StructuralTag),
            5 => Ok(sieve_grammar_kind::Gbnf),
            _ => Err(()),
        }
    }
}

impl sieve_grammar_kind {
    /// The core syntax of this kind.
    fn syntax(self) -> GrammarSyntax {
        match self {
            sieve_grammar_kind::Lark => GrammarSyntax::Lark,
            sieve_grammar_kind::Regex => GrammarSyntax::Regex,
            sieve_grammar_kind::JsonSchema => GrammarSyntax::JsonSchema,
            sieve_grammar_kind::StructuralTag => GrammarSyntax::StructuralTag,
            sieve_grammar_kind::Gbnf => GrammarSyntax::Gbnf,
        }
    }
}

/// How `sieve_grammar_new_gbnf` reads GBNF.
///
/// Versioned like `sieve_limits`: start from `SIEVE_GBNF_OPTIONS_INIT` (`struct_size` set,
/// every other field zero: start rule `root`, no left recursion) and set the fields you need.
/// Read once by `sieve_grammar_new_gbnf`; the caller keeps ownership of `root`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct sieve_gbnf_options {
    /// `sizeof(sieve_gbnf_options)` as the caller knows it.
    pub struct_size: usize,
    /// The start rule, NUL-terminated UTF-8 (llama.cpp's `grammar_root`); NULL: `root`.
    pub root: *const c_char,
    /// Accept left-recursive rules (llama.cpp refuses them; sieve's parser does not need to).
    pub allow_left_recursion: bool,
}

impl sieve_gbnf_options {
    /// The core options; `None` if `root` is not UTF-8.
    ///
    /// # Safety
    /// `root` is NULL or a NUL-terminated string.
    unsafe fn to_core(self) -> Option<GbnfOptions> {
        let mut opts = GbnfOptions {
            allow_left_recursion: self.allow_left_recursion,
            ..GbnfOptions::default()
        };
        if !self.root.is_null() {
            // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
            let root = unsafe { CStr::from_ptr(self.root) };
            opts.root = root.to_str().ok()?.to_owned();
        }
        Some(opts)
    }
}

/// Every budget the engine enforces while compiling a grammar and computing masks. Exceeding
/// one gives `SIEVE_STATUS_LIMIT_EXCEEDED`.
///
/// Versioned: set `struct_size = sizeof(sieve_limits)` (or use `SIEVE_LIMITS_INIT`), then
/// call `sieve_limits_default` before changing fields. The library reads and writes only the
/// first `struct_size` bytes, so programs built against an older header keep working; fields
/// they do not know take their defaults. Plain data: no thread-safety concerns.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct sieve_limits {
    /// `sizeof(sieve_limits)` as the caller knows it.
    pub struct_size: usize,
    /// Most lexer DFA states one matcher may build.
    pub max_lexer_states: u64,
    /// Most regex expression nodes (grammar lexemes plus derivatives).
    pub max_expr_nodes: u64,
    /// Regex work allowed for one mask or one token.
    pub fuel_per_mask: u64,
    /// Regex work allowed while compiling a grammar.
    pub compile_fuel: u64,
    /// Most Earley items in one row.
    pub max_items_per_row: u64,
    /// Most Earley items created while computing one mask.
    pub max_items_per_mask: u64,
    /// Most grammar symbols after lowering.
    pub max_grammar_size: u64,
    /// Deepest nesting of groups in a grammar, regex or schema.
    pub max_nesting_depth: u64,
    /// Largest `n` in a bounded repetition `{m,n}` (values above 2^32-1 are clamped).
    pub max_repeat: u64,
    /// Bytes of tables one compiled grammar plus one matcher may hold.
    pub max_memory_bytes: u64,
}

impl sieve_limits {
    fn from_core(l: &Limits) -> sieve_limits {
        let w = |x: usize| x as u64;
        sieve_limits {
            struct_size: size_of::<sieve_limits>(),
            max_lexer_states: w(l.max_lexer_states),
            max_expr_nodes: w(l.max_expr_nodes),
            fuel_per_mask: l.fuel_per_mask,
            compile_fuel: l.compile_fuel,
            max_items_per_row: w(l.max_items_per_row),
            max_items_per_mask: w(l.max_items_per_mask),
            max_grammar_size: w(l.max_grammar_size),
            max_nesting_depth: w(l.max_nesting_depth),
            max_repeat: u64::from(l.max_repeat),
            max_memory_bytes: w(l.max_memory_bytes),
        }
    }

    fn to_core(self) -> Limits {
        let n = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
        Limits {
            max_lexer_states: n(self.max_lexer_states),
            max_expr_nodes: n(self.max_expr_nodes),
            fuel_per_mask: self.fuel_per_mask,
            compile_fuel: self.compile_fuel,
            max_items_per_row: n(self.max_items_per_row),
            max_items_per_mask: n(self.max_items_per_mask),
            max_grammar_size: n(self.max_grammar_size),
            max_nesting_depth: n(self.max_nesting_depth),
            max_repeat: u32::try_from(self.max_repeat).unwrap_or(u32::MAX),
            max_memory_bytes: n(self.max_memory_bytes),
        }
    }
}

/// Fills `*limits` with the defaults (suited to JSON schemas and hand-written grammars over
/// 100k–200k-token vocabularies). `limits->struct_size` must be set first; only that many
/// bytes are written. A `struct_size` smaller than `sizeof(size_t)` gives
/// `SIEVE_STATUS_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_limits_default(limits: *mut sieve_limits) -> sieve_status {
    ffi_boundary! {
        if limits.is_null() {
            return sieve_status::NullArgument;
        }
        let defaults = sieve_limits::from_core(&Limits::default());
        // SAFETY: 1. non-NULL; writable for its `struct_size` bytes (caller contract).
        if unsafe { write_versioned(limits, defaults) } {
            sieve_status::Ok
        } else {
            sieve_status::InvalidArgument
        }
    }
}

/// Whitespace allowed between JSON tokens (`sieve_json_options.whitespace`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_json_whitespace {
    /// Up to `whitespace_max` whitespace characters around each `{ } [ ] , :`.
    Flexible = 0,
    /// No whitespace: `{"a":1}`.
    Compact = 1,
    /// Python `json.dumps` separators exactly: `{"a": 1, "b": [1, 2]}`.
    Python = 2,
    /// Pretty-printing, bounded (default): around each `{ } [ ] , :` up to 2 whitespace
    /// characters, or a line break followed by up to `whitespace_max` spaces and tabs
    /// (default 64).
    Pretty = 3,
    /// Any whitespace around each `{ } [ ] , :`, unbounded (LLGuidance's default).
    Unbounded = 4,
}

/// The order of object keys (`sieve_json_options.property_order`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_json_property_order {
    /// Any order; each required key exactly once (default).
    Any = 0,
    /// `properties` in schema order, other keys after them.
    Schema = 1,
}

/// How a JSON Schema is turned into a grammar. Versioned like `sieve_limits`: set
/// `struct_size` (or use `SIEVE_JSON_OPTIONS_INIT`) and call `sieve_json_options_default`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct sieve_json_options {
    /// `sizeof(sieve_json_options)` as the caller knows it.
    pub struct_size: usize,
    /// A `sieve_json_whitespace` value.
    pub whitespace: u32,
    /// With `SIEVE_JSON_WHITESPACE_FLEXIBLE`: most whitespace characters on each side of a
    /// punctuation token; with `SIEVE_JSON_WHITESPACE_PRETTY`: most spaces and tabs after a
    /// line break.
    pub whitespace_max: u32,
    /// A `sieve_json_property_order` value.
    pub property_order: u32,
    /// Non-zero: objects without `additionalProperties` allow other keys (the spec's rule).
    pub additional_properties_default: u8,
    /// Non-zero: every approximated or unsupported keyword is a compile error instead of a
    /// coverage report entry.
    pub strict: u8,
}

impl sieve_json_options {
    fn from_core(o: &JsonOptions) -> sieve_json_options {
        let (whitespace, whitespace_max) = match o.whitespace {
            Whitespace::Compact => (sieve_json_whitespace::Compact, 0),
            Whitespace::Python => (sieve_json_whitespace::Python, 0),
            Whitespace::Flexible { max } => (sieve_json_whitespace::Flexible, max),
            Whitespace::Pretty { max_indent } => (sieve_json_whitespace::Pretty, max_indent),
            // A whitespace regex has no C spelling; only the defaults are converted.
            Whitespace::Unbounded | Whitespace::Pattern(_) => (sieve_json_whitespace::Unbounded, 0),
        };
        let property_order = match o.property_order {
            PropertyOrder::SchemaOrder => sieve_json_property_order::Schema,
            PropertyOrder::AnyOrder => sieve_json_property_order::Any,
        };
        sieve_json_options {
            struct_size: size_of::<sieve_json_options>(),
            whitespace: whitespace as u32,
            whitespace_max,
            property_order: property_order as u32,
            additional_properties_default: u8::from(o.additional_properties_default),
            strict: u8::from(o.strict),
        }
    }

    fn to_core(self) -> Option<JsonOptions> {
        let whitespace = match self.whitespace {
            0 => Whitespace::Flexible {
                max: self.whitespace_max,
            },
            1 => Whitespace::Compact,
            2 => Whitespace::Python,
            3 => Whitespace::Pretty {
                max_indent: self.whitespace_max,
            },
            4 => Whitespace::Unbounded,
            _ => return None,
        };
        let property_order = match self.property_order {
            0 => PropertyOrder::AnyOrder,
            1 => PropertyOrder::SchemaOrder,
            _ => return None,
        };
        Some(JsonOptions {
            whitespace,
            property_order,
            additional_properties_default: self.additional_properties_default != 0,
            strict: self.strict != 0,
            ..JsonOptions::default()
        })
    }
}

/// Fills `*options` with the defaults (pretty-printing whitespace with indentation up to 64,
/// any key order, additional properties allowed, not strict). `options->struct_size` must be
/// set first.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_json_options_default(options: *mut sieve_json_options) -> sieve_status {
    ffi_boundary! {
        if options.is_null() {
            return sieve_status::NullArgument;
        }
        let defaults = sieve_json_options::from_core(&JsonOptions::default());
        // SAFETY: 1. non-NULL; writable for its `struct_size` bytes (caller contract).
        if unsafe { write_versioned(options, defaults) } {
            sieve_status::Ok
        } else {
            sieve_status::InvalidArgument
        }
    }
}

/// How a JSON Schema keyword was compiled when not exactly (`sieve_coverage_entry.status`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum sieve_coverage {
    /// Approximated: the grammar accepts more documents than the schema.
    Superset = 1,
    /// Approximated: the grammar rejects some documents the schema accepts.
    Subset = 2,
    /// A keyword the compiler does not know; ignored (as validators do).
    Unknown = 3,
    /// A known validation keyword that is not supported; ignored (a superset).
    Unsupported = 4,
}

/// One JSON Schema coverage report entry. The strings are NUL-terminated UTF-8 owned by the
/// grammar (valid until it is freed).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct sieve_coverage_entry {
    /// JSON pointer of the schema object holding the keyword (`""` is the root).
    pub pointer: *const c_char,
    /// The keyword.
    pub keyword: *const c_char,
    /// A `sieve_coverage` value.
    pub status: u32,
    /// Why it was approximated (empty for unknown and unsupported keywords).
    pub detail: *const c_char,
}

#[derive(Debug)]
struct CoverageItem {
    pointer: CString,
    keyword: CString,
    status: sieve_coverage,
    detail: CString,
}

/// The Rust value behind a `sieve_grammar`.
#[derive(Debug)]
pub struct CompiledGrammar {
    /// The grammar matchers are made from.
    pub(crate) grammar: Grammar,
    coverage: Vec<CoverageItem>,
}

impl CompiledGrammar {
    /// The compiled grammar.
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    fn new(grammar: Grammar, report: Option<CoverageReport>) -> CompiledGrammar {
        let entries = report.map(|r| r.entries).unwrap_or_default();
        let coverage = entries
            .iter()
            .map(|e| {
                let (status, detail) = match &e.status {
                    CoverageStatus::Approximated { direction, why } => (
                        match direction {
                            Direction::Subset => sieve_coverage::Subset,
                            _ => sieve_coverage::Superset,
                        },
                        why.as_str(),
                    ),
                    CoverageStatus::Spelling { why } => (sieve_coverage::Subset, why.as_str()),
                    CoverageStatus::Unknown => (sieve_coverage::Unknown, ""),
                    _ => (sieve_coverage::Unsupported, ""),
                };
                CoverageItem {
                    pointer: c_string(&e.pointer),
                    keyword: c_string(&e.keyword),
                    status,
                    detail: c_string(detail),
                }
            })
            .collect();
        CompiledGrammar { grammar, coverage }
    }
}

impl Castable for sieve_grammar {
    type Ownership = Shared;
    type Rust = CompiledGrammar;
}

/// Compiles `len` bytes of UTF-8 grammar text (no NUL needed) of kind `kind` (a
/// `sieve_grammar_kind`) for `tokenizer`'s vocabulary. `limits` may be NULL for the defaults.
/// A JSON Schema is compiled with the default `sieve_json_options`; use
/// `sieve_grammar_new_json_schema` to choose them.
///
/// On success `*out` receives a new handle (free with `sieve_grammar_free`). On failure
/// (`SIEVE_STATUS_GRAMMAR_ERROR`, `_LIMIT_EXCEEDED`, `_INVALID_UTF8`, ...) `*out` is untouched
/// and, if `error_out` is non-NULL, `*error_out` receives an error with the message, the line
/// and column (for text grammars) and the JSON pointer (for JSON Schemas and structural tags).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_grammar_new(
    tokenizer: *const sieve_tokenizer,
    kind: u32,
    text: *const u8,
    len: usize,
    limits: *const sieve_limits,
    out: *mut *const sieve_grammar,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let Ok(kind) = sieve_grammar_kind::try_from(kind) else {
            let msg = format!("unknown grammar kind {kind}");
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            return unsafe { ErrorInfo::new(sieve_status::InvalidArgument, &msg).report(error_out) };
        };
        compile(tokenizer, kind, text, len, Options::Default, limits, out, error_out)
    }
}

/// Compiles a structural tag (`len` bytes of UTF-8 JSON; kind `SIEVE_GRAMMAR_KIND_STRUCTURAL_TAG`)
/// whose JSON Schemas use `options` (NULL for the defaults). Errors carry the JSON pointer of
/// the format at fault (`sieve_error_pointer`). Otherwise as `sieve_grammar_new`.
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_grammar_new_structural_tag(
    tokenizer: *const sieve_tokenizer,
    text: *const u8,
    len: usize,
    options: *const sieve_json_options,
    limits: *const sieve_limits,
    out: *mut *const sieve_grammar,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let kind = sieve_grammar_kind::StructuralTag;
        compile(tokenizer, kind, text, len, Options::Json(options), limits, out, error_out)
    }
}

/// Compiles a JSON Schema (`len` bytes of UTF-8) with explicit options (`options` may be NULL
/// for the defaults; see `sieve_json_options`). Otherwise as `sieve_grammar_new`.
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_grammar_new_json_schema(
    tokenizer: *const sieve_tokenizer,
    text: *const u8,
    len: usize,
    options: *const sieve_json_options,
    limits: *const sieve_limits,
    out: *mut *const sieve_grammar,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let kind = sieve_grammar_kind::JsonSchema;
        compile(tokenizer, kind, text, len, Options::Json(options), limits, out, error_out)
    }
}

/// Compiles GBNF text (`len` bytes of UTF-8; kind `SIEVE_GRAMMAR_KIND_GBNF`) read as
/// `options` says (NULL for the defaults: start rule `root`, no left recursion; see
/// `sieve_gbnf_options`). Syntax errors carry their line and column. Otherwise as
/// `sieve_grammar_new`.
#[unsafe(no_mangle)]
#[must_use]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn sieve_grammar_new_gbnf(
    tokenizer: *const sieve_tokenizer,
    text: *const u8,
    len: usize,
    options: *const sieve_gbnf_options,
    limits: *const sieve_limits,
    out: *mut *const sieve_grammar,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    ffi_boundary! {
        let kind = sieve_grammar_kind::Gbnf;
        compile(tokenizer, kind, text, len, Options::Gbnf(options), limits, out, error_out)
    }
}

/// The caller's options argument, by the entry point that took it.
#[derive(Clone, Copy)]
enum Options {
    /// None: the defaults.
    Default,
    /// A `sieve_json_options` (NULL: the defaults).
    Json(*const sieve_json_options),
    /// A `sieve_gbnf_options` (NULL: the defaults).
    Gbnf(*const sieve_gbnf_options),
}

impl Options {
    /// The core options, or why they are invalid.
    ///
    /// # Safety
    /// Each pointer is NULL or readable for its `struct_size` bytes, and a GBNF `root` is
    /// NULL or NUL-terminated.
    unsafe fn read(self) -> Result<CompileOptions, &'static str> {
        let mut opts = CompileOptions::default();
        match self {
            Options::Default => {}
            Options::Json(p) if p.is_null() => {}
            Options::Json(p) => {
                let defaults = sieve_json_options::from_core(&JsonOptions::default());
                // SAFETY: 1. non-NULL; readable for its `struct_size` bytes (caller contract);
                // every field is a plain integer.
                opts.json =
                    match unsafe { read_versioned(p, defaults) }.map(sieve_json_options::to_core) {
                        Some(Some(o)) => o,
                        Some(None) => return Err("unknown whitespace or property order"),
                        None => return Err("options->struct_size is too small"),
                    };
            }
            Options::Gbnf(p) if p.is_null() => {}
            Options::Gbnf(p) => {
                let defaults = sieve_gbnf_options {
                    struct_size: size_of::<sieve_gbnf_options>(),
                    root: core::ptr::null(),
                    allow_left_recursion: false,
                };
                // SAFETY: 1. non-NULL; readable for its `struct_size` bytes (caller contract);
                // a pointer and a bool read as the caller wrote them.
                let Some(o) = (unsafe { read_versioned(p, defaults) }) else {
                    return Err("options->struct_size is too small");
                };
                // SAFETY: 1. `root` is NULL or NUL-terminated (caller contract).
                opts.gbnf = unsafe { o.to_core() }.ok_or("options->root is not UTF-8")?;
            }
        }
        Ok(opts)
    }
}

/// The caller's limits (`NULL`: the defaults); `None` when its `struct_size` is too small.
///
/// # Safety
/// `limits` is NULL or readable for its `struct_size` bytes.
pub(crate) unsafe fn read_limits(limits: *const sieve_limits) -> Option<Limits> {
    if limits.is_null() {
        return Some(Limits::default());
    }
    let defaults = sieve_limits::from_core(&Limits::default());
    // SAFETY: 1. non-NULL; readable for its `struct_size` bytes (caller contract); every
    // field is a plain integer.
    unsafe { read_versioned(limits, defaults) }.map(|l| l.to_core())
}

#[allow(clippy::too_many_arguments)]
fn compile(
    tokenizer: *const sieve_tokenizer,
    kind: sieve_grammar_kind,
    text: *const u8,
    len: usize,
    options: Options,
    limits: *const sieve_limits,
    out: *mut *const sieve_grammar,
    error_out: *mut *mut sieve_error,
) -> sieve_status {
    let fail = |status, msg: &str| {
        // SAFETY: 1. `error_out` is NULL or writable (caller contract).
        unsafe { ErrorInfo::new(status, msg).report(error_out) }
    };
    // SAFETY: 1. NULL or a live tokenizer handle; `text` NULL or readable for `len` bytes.
    let (Some(tok), Some(text)) = (unsafe { handle_ref(tokenizer) }, unsafe {
        input_slice(text, len)
    }) else {
        return fail(sieve_status::NullArgument, "tokenizer or text is NULL");
    };
    if out.is_null() {
        return fail(sieve_status::NullArgument, "out is NULL");
    }
    // SAFETY: 1. NULL or readable for its `struct_size` bytes (caller contract).
    let Some(limits) = (unsafe { read_limits(limits) }) else {
        return fail(
            sieve_status::InvalidArgument,
            "limits->struct_size is too small",
        );
    };
    // SAFETY: 1. NULL or readable for its `struct_size` bytes; a GBNF `root` NULL or
    // NUL-terminated (caller contract).
    let options = match unsafe { options.read() } {
        Ok(o) => o,
        Err(msg) => return fail(sieve_status::InvalidArgument, msg),
    };
    let text = match core::str::from_utf8(text) {
        Ok(t) => t,
        Err(e) => {
            let msg = format!("grammar text is not UTF-8 (byte {})", e.valid_up_to());
            return fail(sieve_status::InvalidUtf8, &msg);
        }
    };
    let vocab = tok.vocab();
    match tok
        .cache
        .compile(kind.syntax(), text, &options, vocab, &limits)
    {
        Ok((grammar, report)) => {
            let handle = arc_into_handle(Arc::new(CompiledGrammar::new(grammar, report)));
            // SAFETY: 1. `out` checked non-NULL.
            unsafe { write_out(out, handle) };
            sieve_status::Ok
        }
        Err(e) => {
            // SAFETY: 1. `error_out` is NULL or writable (caller contract).
            unsafe { ErrorInfo::grammar(&e).report(error_out) }
        }
    }
}

/// Adds a reference: `*out` receives a handle to the same grammar (free each handle once).
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_grammar_clone(
    grammar: *const sieve_grammar,
    out: *mut *const sieve_grammar,
) -> sieve_status {
    ffi_boundary! {
        if out.is_null() {
            return sieve_status::NullArgument;
        }
        // SAFETY: 1. NULL or a live grammar handle (caller contract).
        let Some(g) = (unsafe { arc_clone(grammar) }) else {
            return sieve_status::NullArgument;
        };
        // SAFETY: 1. `out` checked non-NULL.
        unsafe { write_out(out, arc_into_handle(g)) };
        sieve_status::Ok
    }
}

/// Drops a reference to a grammar. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_grammar_free(grammar: *const sieve_grammar) {
    ffi_boundary! {
        // SAFETY: 1. NULL or a grammar handle freed once (caller contract).
        unsafe { arc_free(grammar) }
    }
}

/// The number of JSON Schema coverage report entries (keywords not compiled exactly); 0 for
/// Lark and regex grammars and for NULL.
#[unsafe(no_mangle)]
pub extern "C" fn sieve_grammar_coverage_len(grammar: *const sieve_grammar) -> usize {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live grammar handle (caller contract).
        unsafe { handle_ref(grammar) }.map_or(0, |g| g.coverage.len())
    }
}

/// Reads coverage entry `index` (`< sieve_grammar_coverage_len`) into `*entry`; an index out
/// of range gives `SIEVE_STATUS_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
#[must_use]
pub extern "C" fn sieve_grammar_coverage_entry(
    grammar: *const sieve_grammar,
    index: usize,
    entry: *mut sieve_coverage_entry,
) -> sieve_status {
    ffi_boundary! {
        // SAFETY: 1. NULL or a live grammar handle (caller contract).
        let Some(g) = (unsafe { handle_ref(grammar) }) else {
            return sieve_status::NullArgument;
        };
        if entry.is_null() {
            return sieve_status::NullArgument;
        }
        let Some(item) = g.coverage.get(index) else {
            return sieve_status::InvalidArgument;
        };
        let value = sieve_coverage_entry {
            pointer: item.pointer.as_ptr(),
            keyword: item.keyword.as_ptr(),
            status: item.status as u32,
            detail: item.detail.as_ptr(),
        };
        // SAFETY: 1. `entry` checked non-NULL.
        unsafe { write_out(entry, value) };
        sieve_status::Ok
    }
}
