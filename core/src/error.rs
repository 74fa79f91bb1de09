//! Typed errors: grammar errors carry a source [`Span`]; limit errors name the budget.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

/// A place in grammar source text. `line` and `column` are 1-based; `column` counts chars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Position {
    /// Byte offset from the start of the source.
    pub offset: usize,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, in characters.
    pub column: u32,
}

impl Position {
    /// The position of byte `offset` in `src` (clamped to the end; snapped back to a char
    /// boundary).
    pub fn at(src: &str, offset: usize) -> Position {
        let mut offset = offset.min(src.len());
        while !src.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &src[..offset];
        let line = before.bytes().filter(|&b| b == b'\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() as u32 + 1;
        Position {
            offset,
            line,
            column,
        }
    }
}

/// A range of grammar source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte of the range.
    pub start: Position,
    /// One past the last byte.
    pub end: Position,
}

impl Span {
    /// The span of bytes `start..end` of `src`.
    pub fn at(src: &str, start: usize, end: usize) -> Span {
        Span {
            start: Position::at(src, start),
            end: Position::at(src, end),
        }
    }
}

/// Which budget of [`crate::Limits`] was exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LimitKind {
    /// `max_lexer_states`.
    LexerStates,
    /// `max_expr_nodes`.
    ExprNodes,
    /// `fuel_per_mask`: work for one mask or one token.
    Fuel,
    /// `compile_fuel`: work for compiling one grammar, all stages together
    /// ([`crate::limits::CompileBudget`]).
    CompileFuel,
    /// `max_items_per_row`.
    ItemsPerRow,
    /// `max_items_per_mask`.
    ItemsPerMask,
    /// `max_grammar_size`.
    GrammarSize,
    /// `max_nesting_depth`.
    NestingDepth,
    /// `max_repeat`.
    RepeatCount,
    /// `max_memory_bytes`.
    Memory,
}

impl LimitKind {
    /// The field name in [`crate::Limits`].
    pub fn field(self) -> &'static str {
        match self {
            LimitKind::LexerStates => "max_lexer_states",
            LimitKind::ExprNodes => "max_expr_nodes",
            LimitKind::Fuel => "fuel_per_mask",
            LimitKind::CompileFuel => "compile_fuel",
            LimitKind::ItemsPerRow => "max_items_per_row",
            LimitKind::ItemsPerMask => "max_items_per_mask",
            LimitKind::GrammarSize => "max_grammar_size",
            LimitKind::NestingDepth => "max_nesting_depth",
            LimitKind::RepeatCount => "max_repeat",
            LimitKind::Memory => "max_memory_bytes",
        }
    }
}

impl fmt::Display for LimitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "limit {} exceeded", self.field())
    }
}

/// What went wrong while compiling a grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrammarErrorKind {
    /// The grammar text does not parse.
    Syntax,
    /// A rule or terminal is used but never defined.
    UndefinedSymbol,
    /// A rule or terminal is defined twice (`aux_span` points at the first definition).
    DuplicateDefinition,
    /// A regex does not parse or uses an unsupported feature.
    InvalidRegex,
    /// A terminal matches the empty string, or matches nothing at all.
    EmptyLexeme,
    /// A special token is not in the vocabulary.
    UnknownSpecialToken,
    /// The start rule (or a needed rule) derives no finite string.
    Unproductive,
    /// A `%import`, `%directive` or feature that is not supported.
    Unsupported,
    /// A budget of [`crate::Limits`] was exceeded.
    Limit(LimitKind),
}

/// A grammar compile error with its location: a [`Span`] (line:column) in grammar text,
/// and for JSON sources (JSON Schema, structural tags) a JSON pointer. The message never
/// repeats the location; [`Display`](fmt::Display) prefixes it (`3:7: msg`,
/// `at /properties/a: msg`, or both), and shells read the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarError {
    /// What went wrong.
    pub kind: GrammarErrorKind,
    /// Human-readable detail, without the location.
    pub message: String,
    /// Where in the source text, when known.
    pub span: Option<Span>,
    /// A second related place (the first definition of a duplicate).
    pub aux_span: Option<Span>,
    /// Where in a JSON source, as a JSON pointer (`/format/elements/1/type`,
    /// `/properties/a`; the root is `#` in a JSON Schema, `/` in a structural tag), when
    /// the error is about a JSON value. Read it with [`GrammarError::pointer()`]; boxed so
    /// that the error stays small (`clippy::result_large_err`).
    pub pointer: Option<Box<String>>,
}

impl GrammarError {
    /// A new error without a position.
    pub fn new(kind: GrammarErrorKind, message: impl Into<String>) -> Self {
        GrammarError {
            kind,
            message: message.into(),
            span: None,
            aux_span: None,
            pointer: None,
        }
    }

    /// A new error about the JSON value at `pointer`.
    pub fn at_pointer(
        kind: GrammarErrorKind,
        pointer: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        GrammarError::new(kind, message).with_pointer(pointer)
    }

    /// The same error, located at `span`.
    pub fn with_span(mut self, span: Span) -> Self {
        self.span = Some(span);
        self
    }

    /// The same error, located at JSON pointer `pointer`.
    pub fn with_pointer(mut self, pointer: impl Into<String>) -> Self {
        self.pointer = Some(Box::new(pointer.into()));
        self
    }

    /// The same error, its pointer (if any) moved below `base`: an error of a JSON value
    /// embedded at `base` of an outer document. `#` and a leading `#` of the inner pointer
    /// are dropped (`/a` + `#/b` is `/a/b`); an error without a pointer gets `base`.
    pub fn nested_at(mut self, base: &str) -> Self {
        let inner = self.pointer.take().map_or_else(String::new, |p| *p);
        let inner = inner.strip_prefix('#').unwrap_or(&inner);
        let inner = if inner == "/" { "" } else { inner };
        let base = base.strip_suffix('/').unwrap_or(base);
        let joined = alloc::format!("{base}{inner}");
        self.pointer = Some(Box::new(if joined.is_empty() {
            "/".into()
        } else {
            joined
        }));
        self
    }

    /// The JSON pointer of the value at fault, when the error is about a JSON value.
    pub fn pointer(&self) -> Option<&str> {
        self.pointer.as_deref().map(String::as_str)
    }

    /// A limit error.
    pub fn limit(kind: LimitKind) -> Self {
        GrammarError::new(GrammarErrorKind::Limit(kind), alloc::format!("{kind}"))
    }
}

impl From<LimitKind> for GrammarError {
    fn from(kind: LimitKind) -> Self {
        GrammarError::limit(kind)
    }
}

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(span) = &self.span {
            write!(f, "{}:{}: ", span.start.line, span.start.column)?;
        }
        if let Some(pointer) = &self.pointer {
            write!(f, "at {pointer}: ")?;
        }
        f.write_str(&self.message)
    }
}

impl core::error::Error for GrammarError {}

/// A matcher error. Errors are sticky: once set, every later call returns it until
/// [`crate::Matcher::reset`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MatcherError {
    /// The token id is not below the vocabulary size.
    TokenOutOfRange {
        /// The offending id.
        token: u32,
        /// The vocabulary size.
        vocab_size: u32,
    },
    /// The token is not allowed at this point.
    TokenRejected {
        /// The offending id.
        token: u32,
        /// How many tokens had been consumed before it.
        position: usize,
    },
    /// The mask buffer has fewer words than `ceil(vocab_size / 32)`.
    MaskTooSmall {
        /// Words needed.
        needed: usize,
        /// Words given.
        given: usize,
    },
    /// `rollback(n)` asked for more tokens than were consumed.
    RollbackTooFar {
        /// Tokens asked for.
        requested: usize,
        /// Tokens available.
        available: usize,
    },
    /// A token was consumed after the matcher stopped (EOS).
    Stopped,
    /// A budget of [`crate::Limits`] was exceeded.
    Limit(LimitKind),
}

impl From<LimitKind> for MatcherError {
    fn from(kind: LimitKind) -> Self {
        MatcherError::Limit(kind)
    }
}

impl fmt::Display for MatcherError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MatcherError::TokenOutOfRange { token, vocab_size } => {
                write!(
                    f,
                    "token id {token} out of range (vocabulary size {vocab_size})"
                )
            }
            MatcherError::TokenRejected { token, position } => {
                write!(f, "token {token} not allowed at token position {position}")
            }
            MatcherError::MaskTooSmall { needed, given } => {
                write!(f, "mask buffer too small: {given} words, need {needed}")
            }
            MatcherError::RollbackTooFar {
                requested,
                available,
            } => write!(
                f,
                "cannot roll back {requested} tokens; only {available} consumed"
            ),
            MatcherError::Stopped => f.write_str("matcher already stopped"),
            MatcherError::Limit(k) => write!(f, "{k}"),
        }
    }
}

impl core::error::Error for MatcherError {}

/// Why a [`crate::StopController`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopError {
    /// A stop token id is not below the vocabulary size.
    TokenOutOfRange {
        /// The offending id.
        token: u32,
        /// The vocabulary size.
        vocab_size: usize,
    },
    /// The stop regex does not compile (syntax, unsupported feature, or a budget).
    Regex(GrammarError),
    /// A literal stop string is not UTF-8 (it is matched as text).
    InvalidString {
        /// Its index in the list given.
        index: usize,
    },
    /// The stop regex matches the empty string: it would stop before any text.
    EmptyMatch {
        /// The regex as given.
        pattern: String,
    },
}

impl fmt::Display for StopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StopError::TokenOutOfRange { token, vocab_size } => write!(
                f,
                "stop token {token} is not below the vocabulary size {vocab_size}"
            ),
            StopError::Regex(e) => write!(f, "invalid stop regex: {e}"),
            StopError::InvalidString { index } => {
                write!(f, "stop string {index} is not valid UTF-8")
            }
            StopError::EmptyMatch { pattern } => write!(
                f,
                "stop regex {pattern:?} matches the empty string (it would stop at once)"
            ),
        }
    }
}

impl core::error::Error for StopError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            StopError::Regex(e) => Some(e),
            _ => None,
        }
    }
}
