//! JSON Schema → [`GrammarIr`]: the grammar of the JSON texts that a schema accepts.
//!
//! [`compile`] walks the schema once (with an explicit work list for `$ref` targets, so
//! recursive schemas become recursive nonterminals) and lowers every value to lexemes: one per
//! string, number and punctuation token, so adjacent lexemes never swallow each other's
//! bytes. Whitespace is folded into the punctuation lexemes ([`Whitespace`]).
//!
//! **Exact or reported.** Every keyword is compiled exactly, approximated in a documented
//! direction, or rejected; the [`CoverageReport`] lists each approximated, unknown or
//! unsupported keyword with its JSON pointer. [`JsonOptions::strict`] turns any
//! approximation (and any unsupported keyword) into a [`GrammarErrorKind::Unsupported`] error
//! whose message starts with `at <pointer>:`.
//!
//! # Coverage
//!
//! | keyword | status |
//! |:--|:--|
//! | `type` (string or array), `enum`, `const` | exact over values (enum values are filtered by `type` and checked against the other keywords). Spelling: a string matches every JSON spelling of its value (any escape choice); a number matches every spelling of its value within exponent ±12 (`2` = `2.0` = `2e0` = `0.2e1` = `20e-1`); a nonzero number beyond (`0.0000000000002e13`) is rejected: subset, reported on `enum`/`const`. `type: integer` accepts `1.0`, `1e0`, `10e-1`, `1.5e1`, ... (every exponent within ±12, and beyond with at most 12 significant fraction digits); the rest (`1.0000000000001e20`) is not regular: subset, reported on `type` |
//! | `properties`, `required`, `additionalProperties`, `patternProperties` | exact; a key matching several patterns must match their schemas' union (superset, reported, when patterns overlap) |
//! | property order | [`PropertyOrder::AnyOrder`]: any order; required keys are tracked as a set (at most 10 of them) or, beyond, counted (exact for documents without duplicate keys). [`PropertyOrder::SchemaOrder`]: schema order, extra keys last |
//! | `propertyNames` | exact for string keywords (`pattern`, lengths, `enum`, `const`, `format`); other forms ignored (superset, reported) |
//! | `minProperties`, `maxProperties` | exact (counted up to 64; beyond: superset, reported) |
//! | `dependentRequired`, `dependentSchemas`, draft-7 `dependencies` | exact: `{a: [b]}` is `(a absent) ∨ (a and b present)`, `{a: S}` is `(a absent) ∨ (a present ∧ S)` |
//! | `items`, `prefixItems`, draft-7 `items` array + `additionalItems`, `minItems`, `maxItems` | exact (`maxItems` above 1000 is dropped: superset, reported) |
//! | `anyOf` | exact (sibling keywords are merged into every branch) |
//! | `oneOf` | exact when branches are provably disjoint (types, `const`/`enum`, a required discriminator property); otherwise rewritten exactly as `∨ᵢ (Bᵢ ∧ not ∨ⱼ≠ᵢ Bⱼ)` (up to 8 branches in strict mode, 4 by default); beyond, `anyOf` (superset, reported) |
//! | `allOf` | merged (exact for the keywords above; conflicting `format`/`multipleOf`/`not` keep the first: superset, reported) |
//! | `$ref` | local JSON pointers (`~0`, `~1`, percent escapes), `$defs`, `definitions`, `$id`/`id`, `$anchor`; recursion becomes nonterminals; draft 4–7 ignore `$ref` siblings (`$id` too) as the spec says. Other documents: those given in [`JsonOptions::documents`]; any other remote reference is an error (nothing is fetched) |
//! | `minLength`, `maxLength` | exact, one escape sequence = one character (a surrogate pair escape = one); a `maxLength` above `max_repeat` is dropped (superset, reported); a `minLength` above it is an error |
//! | `pattern` | ECMA-262, unanchored search, ASCII `\d`/`\w`; exact over every JSON spelling (raw, short escapes, `\uXXXX` in either case, surrogate pairs); look-around, back-references and word boundaries are ignored (superset, reported) |
//! | `format` | with [`JsonOptions::assert_formats`] (the default): date-time, date, time, duration, email, hostname, ipv4, ipv6, uuid, uri, uri-reference enforced (see `formats.rs` for their documented looseness); the other formats of the specification (`regex`, `iri`, `json-pointer`, ...) are unsupported (ignored, reported); custom formats (`int32`, ...) are unknown (ignored). Without it, `format` is an annotation, as draft 2020-12 specifies by default |
//! | `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum` (number or draft-4 bool) | exact over values (range regexes built digit by digit). Spelling: every plain decimal, and exponent notation `m e x` with `|x| <= 12` (one case per exponent: the mantissa range is the bound shifted by `-x`); beyond, only where a whole sign class is in range (a bound of `0` is exact in every spelling). `{m e x : lo <= m 10^x <= hi}` is not regular, so a nonzero bound rejects some valid spellings (`0.0000000000001e16` under `maximum: 1000`): subset, reported on that bound |
//! | `multipleOf` | exact over values for integer divisors `2^a 5^b` (up to 10^4) and for `10^-k`, in plain decimal spelling only (`4.0`, `4e0` rejected: subset, reported); other divisors: superset, reported |
//! | `not` | pushed down per keyword: `not (k1 ∧ k2)` = `not k1 ∨ not k2`, each negated within its type (`not minimum: 5` = numbers below 5; `not required: [a]` = objects without `a`; `not items: S` = arrays containing a `not S`; `not anyOf` = all negated; ...). String keyword groups are complemented as regexes over every spelling (each group's regex holds every spelling of its strings, so the complement is exact); number keyword groups over one canonical spelling per value (plain decimals: subset, reported on `not`). Not negatable (the `not` is then ignored: superset, reported): `uniqueItems`, `additionalProperties`, `patternProperties`, `propertyNames`, `enum` members that are arrays or objects, `$dynamicRef`, and cycles through `anyOf` |
//! | `if`/`then`/`else` | exact: `(if ∧ then) ∨ (not if ∧ else)` |
//! | `contains`, `minContains`, `maxContains` | exact: arrays as an automaton over (position, matching items so far; `maxContains` splits items by `not contains`); two different `contains` in one `allOf` keep the first: the second is dropped (superset, reported on `contains`) and items only it matches count as unevaluated while its `minContains`/`maxContains` apply to the first (subset, reported on `allOf`) |
//! | `unevaluatedProperties`, `unevaluatedItems` | exact for the keys/items named by the schema's own subtree (`properties`, `patternProperties`, `additionalProperties`, `prefixItems`, `items`, `contains`, merged through `allOf`, `$ref`, `if`; an `anyOf` of up to 4 branches is expanded into its branch subsets); with `$dynamicRef` or more branches: superset, reported |
//! | `uniqueItems: true`, `$dynamicRef` | unsupported: ignored (superset, reported) |
//! | annotations (`title`, `description`, `default`, `examples`, `$comment`, ...) | ignored |
//! | other keywords | unknown: ignored (reported as [`CoverageStatus::Unknown`]; never an error) |
//!
//! Encoding: strings, literal keys, `const`/`enum` strings and strings under `pattern` and
//! `format` accept every JSON spelling (a literal longer than 4,096 characters keeps its
//! canonical `json.dumps` spelling: subset, reported for `enum`/`const`); numbers accept the
//! spellings listed above, and canonical plain decimals under a negation. An
//! object `const`/`enum` value accepts its members in any order with
//! [`PropertyOrder::AnyOrder`]. A schema that admits no document fails to compile with
//! [`GrammarErrorKind::Unproductive`] (the grammar's start derives nothing). Duplicate object
//! keys (undefined in RFC 8259) are accepted for
//! optional properties in [`PropertyOrder::AnyOrder`] (and for required ones beyond 10).

mod compiler;
mod ecma;
mod formats;
mod numeric;
pub mod pydumps;
#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// The `serde_json` this module takes schemas from (re-exported so callers use the same
/// version).
pub use serde_json;
use serde_json::Value;

use super::ir::GrammarIr;
use crate::error::{GrammarError, GrammarErrorKind, Position, Span};
use crate::limits::{CompileBudget, Limits};

/// Whitespace allowed between tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Whitespace {
    /// No whitespace at all: `{"a":1,"b":[1,2]}`.
    Compact,
    /// Exactly Python's `json.dumps` default: `{"a": 1, "b": [1, 2]}`.
    Python,
    /// Up to `max` whitespace characters (space, tab, CR, LF) before and after each of
    /// `{ } [ ] , :` (none before the first or after the last token).
    Flexible {
        /// Most whitespace characters on each side of a punctuation token.
        max: u32,
    },
}

/// The order of object keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropertyOrder {
    /// `properties` in schema order, then other keys in any order.
    SchemaOrder,
    /// Any order; each required key must appear.
    AnyOrder,
}

/// Options for [`compile`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonOptions {
    /// Whitespace between tokens.
    pub whitespace: Whitespace,
    /// Order of object keys.
    pub property_order: PropertyOrder,
    /// What an object without `additionalProperties` allows for keys not in `properties`
    /// (the spec says `true`).
    pub additional_properties_default: bool,
    /// Make every approximation and unsupported keyword an error.
    pub strict: bool,
    /// Enforce `format` (the formats this compiler knows). Draft 2020-12 makes `format` an
    /// annotation by default; constrained decoding usually wants it asserted. When false,
    /// `format` is ignored like any annotation.
    pub assert_formats: bool,
    /// Documents that `$ref` may point into besides the schema itself, by absolute URI
    /// (without fragment), e.g. `("http://example.com/defs.json", defs)`. Nothing is
    /// fetched; a reference to any other document is an error.
    pub documents: Vec<(String, Value)>,
}

impl Default for JsonOptions {
    /// `Flexible { max: 2 }` whitespace accepts both compact JSON and the `", "`/`": "`
    /// separators that `json.dumps` writes (how MaskBench and most Python clients serialize),
    /// while the bound keeps a model from emitting unbounded runs of whitespace.
    /// `AnyOrder` accepts the keys of real documents, which do not always follow the
    /// schema's order, while still enforcing `required`.
    fn default() -> Self {
        JsonOptions {
            whitespace: Whitespace::Flexible { max: 2 },
            property_order: PropertyOrder::AnyOrder,
            additional_properties_default: true,
            strict: false,
            assert_formats: true,
            documents: Vec::new(),
        }
    }
}

/// In which direction an approximation errs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// The grammar accepts more texts than the schema (some invalid ones).
    Superset,
    /// The grammar accepts fewer texts than the schema (some valid ones are rejected).
    Subset,
}

/// How one keyword was handled, when not exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CoverageStatus {
    /// Compiled approximately.
    Approximated {
        /// The direction of the error.
        direction: Direction,
        /// Why.
        why: String,
    },
    /// A keyword this compiler does not know; ignored (validators ignore it too).
    Unknown,
    /// A known validation keyword that is not supported; ignored (a superset).
    Unsupported,
}

/// One reported keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageEntry {
    /// JSON pointer of the schema object holding the keyword.
    pub pointer: String,
    /// The keyword.
    pub keyword: String,
    /// How it was handled.
    pub status: CoverageStatus,
}

/// Every keyword not compiled exactly.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoverageReport {
    /// The entries, in discovery order, without duplicates.
    pub entries: Vec<CoverageEntry>,
}

impl CoverageReport {
    /// Is every keyword compiled exactly (unknown keywords aside)?
    pub fn is_exact(&self) -> bool {
        self.entries
            .iter()
            .all(|e| e.status == CoverageStatus::Unknown)
    }

    /// Entries that make the grammar accept a superset of the schema.
    pub fn supersets(&self) -> impl Iterator<Item = &CoverageEntry> {
        self.entries.iter().filter(|e| {
            matches!(
                e.status,
                CoverageStatus::Unsupported
                    | CoverageStatus::Approximated {
                        direction: Direction::Superset,
                        ..
                    }
            )
        })
    }

    /// Entries that make the grammar reject some valid documents.
    pub fn subsets(&self) -> impl Iterator<Item = &CoverageEntry> {
        self.entries.iter().filter(|e| {
            matches!(
                e.status,
                CoverageStatus::Approximated {
                    direction: Direction::Subset,
                    ..
                }
            )
        })
    }
}

impl fmt::Display for CoverageEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}/{}: ", self.pointer, self.keyword)?;
        match &self.status {
            CoverageStatus::Approximated { direction, why } => {
                let d = match direction {
                    Direction::Superset => "superset",
                    Direction::Subset => "subset",
                };
                write!(f, "approximated ({d}): {why}")
            }
            CoverageStatus::Unknown => f.write_str("unknown keyword, ignored"),
            CoverageStatus::Unsupported => f.write_str("unsupported keyword, ignored"),
        }
    }
}

/// Compile a JSON Schema into grammar IR plus the coverage report. All work is paid from
/// `budget` (shared with the rest of the compile).
pub fn compile(
    schema: &Value,
    opts: &JsonOptions,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, CoverageReport), GrammarError> {
    compiler::Compiler::new(schema, opts, limits, budget).run()
}

/// Parse schema text with serde_json; a parse error becomes [`GrammarErrorKind::Syntax`]
/// located at its line and column.
pub fn parse_schema(text: &str) -> Result<Value, GrammarError> {
    serde_json::from_str(text).map_err(|e| {
        let line = e.line() as u32;
        let column = e.column() as u32;
        let pos = line_col_position(text, line, column);
        GrammarError::new(
            GrammarErrorKind::Syntax,
            alloc::format!("invalid JSON schema text: {e}"),
        )
        .with_span(Span {
            start: pos,
            end: pos,
        })
    })
}

fn line_col_position(text: &str, line: u32, column: u32) -> Position {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line as usize {
            let col_bytes: usize = l
                .chars()
                .take(column.saturating_sub(1) as usize)
                .map(char::len_utf8)
                .sum();
            offset += col_bytes;
            break;
        }
        offset += l.len();
    }
    Position {
        offset,
        line: line.max(1),
        column: column.max(1),
    }
}
