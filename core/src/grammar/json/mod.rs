//! JSON Schema → [`GrammarIr`]: the grammar of the JSON texts that a schema accepts.
//!
//! [`compile`] walks the schema with one explicit work list: every subschema (items,
//! properties, branches, `$ref` targets, rewritten and negated schemas) becomes its own
//! nonterminal, memoized by location or by text, so recursive schemas (also through `not`,
//! `if` and `oneOf`) become recursive nonterminals and nothing recurses natively on the
//! schema's depth. It lowers every value to lexemes: one per string, number and punctuation
//! token, so adjacent lexemes never swallow each other's bytes. Whitespace is folded into the
//! punctuation lexemes ([`Whitespace`]).
//!
//! # Options
//!
//! [`JsonOptions::default`] accepts pretty-printed documents, bounded: at each gap between
//! tokens up to 2 spaces or tabs, then optionally a line break and up to 64 spaces and tabs of
//! indentation ([`Whitespace::Pretty`]; `json.dumps(indent=2)` of every valid MaskBench
//! instance, 12 levels deep at most, indents 24). Keys come in any order, each named key at
//! most once in closed objects (see the property-order row below). [`JsonOptions::llguidance`] gives
//! LLGuidance's defaults (schema order, unbounded whitespace), and a schema's top-level
//! `"x-guidance"` object is applied onto the options it is compiled with
//! ([`JsonOptions::apply_x_guidance`]: `whitespace_flexible`, `whitespace_pattern`,
//! `item_separator`, `key_separator`, `coerce_one_of`, `lenient`; any other key is an
//! error).
//!
//! # Bounded work
//!
//! - **Stack.** Flattening (`$ref` with siblings, `allOf`), negation, `const`/`enum` emission
//!   and `$id` collection run on explicit stacks; the only native recursion left is bounded
//!   by a constant (`unevaluated*` through nested `anyOf`s, 4 levels) or by the depth of
//!   the parsed value (`Value`'s own clone, comparison, printing and drop). [`parse_schema`]
//!   parses on an explicit stack and refuses text nested deeper than 64 with a
//!   [`GrammarErrorKind::Syntax`] error (serde_json allows 127, but its recursive `Value`
//!   operations take about 0.4 KiB of stack per level). With the default limits the whole
//!   compile of such text runs on a 64 KiB thread stack in release builds (tested on every
//!   MaskBench file and the adversarial suite, `tests/tests/adversarial_json.rs`); debug
//!   builds need more (unoptimized frames; 512 KiB is tested). A
//!   [`serde_json::Value`] handed to [`compile`] directly is the caller's: its depth is not
//!   checked beyond the structural limit below.
//! - **Time.** All work is paid from the compile budget (`Limits::compile_fuel`, shared
//!   with regex interning): one unit per job, flattened node, merged keyword, negated node,
//!   emitted `const` node, reference lookup (per known resource) and grammar symbol, plus the
//!   node count of cloned subtrees and the length of memo keys. Running out is
//!   `Limit(CompileFuel)`. A cloned value node costs 16 units (`NODE_COST` in
//!   `compiler.rs`), calibrated so that the whole default budget (20,000,000) lasts well
//!   under a second of rewriting. **Worst case measured** (release build, this machine: 2
//!   cores shared by several concurrent builds; `tests/tests/adversarial_json.rs`): a front
//!   end that exhausts the default budget (7 and 10 nested `if`-inside-`if`, the 22 s case
//!   of issue 15) stops in 390-540 ms; the slowest front end that finishes is a 100k-value
//!   `enum`, 220-270 ms; the MaskBench files that run out of budget stop after 0.55-1.2 s
//!   (the machine's load varies the wall time for the same work about twofold). Regex work
//!   (pattern checks here, interning and emptiness checks in `Grammar::build`) pays
//!   [`crate::regex::COMPILE_REGEX_WEIGHT`] units per derivative node or search step, so the
//!   default budget buys about 2.5 million of them: the slowest MaskBench compile is about
//!   0.4 s (two test threads on this machine), and intersected patterns that used to run 6-7
//!   s (`Handwritten---allany17`, `string4`) stop with `CompileFuel` within 0.5 s.
//! - **Memory.** Everything the front end builds that grows with the input is charged to
//!   the compile budget's front-end bytes (`CompileBudget::charge`, a quarter of
//!   `Limits::max_memory_bytes`, cumulative, never refunded) before it is built, at an
//!   estimate meant to bound its heap: the parsed values ([`parse_schema_within`]), every
//!   copied, merged, rewritten or negated schema value (its strings, `ELEMENT_BYTES` per
//!   array element, `MEMBER_BYTES` plus the key per object member), memo keys and queued
//!   jobs, `$id` walk pointers, coverage entries, `enum`/`const` spellings and the
//!   [`GrammarIr`] emitted (rules, nonterminal names, lexemes with their regex trees). Beyond
//!   it is `Limit(Memory)`. The regex store the compiler checks patterns with keeps its own
//!   bound, a third of `max_memory_bytes`, and is dropped before `Grammar::build` makes its
//!   own.
//! - **Depth.** Structural nesting (a subschema below its parent, reset at each `$ref`) is
//!   refused beyond `Limits::max_nesting_depth` with `Limit(NestingDepth)`.
//!
//! **Exact or reported.** Every keyword is compiled exactly, approximated in a documented
//! direction, or rejected; the [`CoverageReport`] lists each approximated, unknown or
//! unsupported keyword with its JSON pointer. [`JsonOptions::strict`] turns any
//! approximation of values (and any unsupported keyword) into a
//! [`GrammarErrorKind::Unsupported`] error whose message starts with `at <pointer>:`.
//! A keyword that is exact over values but rejects some valid *spellings* (numbers in
//! exponent notation beyond the regular cases, literals over 4,096 characters in escaped
//! form) is reported as [`CoverageStatus::Spelling`]; strict mode compiles it, as it does the
//! whitespace policy, and never with an empty report.
//!
//! # Coverage
//!
//! | keyword | status |
//! |:--|:--|
//! | `type` (string or array), `enum`, `const` | exact over values (enum values are filtered by `type` and checked against the other keywords). Spelling: a string matches every JSON spelling of its value (any escape choice); a number matches every spelling of its value within exponent ±12 (`2` = `2.0` = `2e0` = `0.2e1` = `20e-1`); a nonzero number beyond (`0.0000000000002e13`) is rejected: subset, reported on `enum`/`const`. `type: integer` accepts `1.0`, `1e0`, `10e-1`, `1.5e1`, ... (every exponent within ±12, and beyond with at most 12 significant fraction digits); the rest (`1.0000000000001e20`) is not regular: subset, reported on `type`. Under a draft-03 or draft-04 `$schema`, `type: integer` is plain digits only (those drafts define an integer as a number without fraction or exponent part: `1.0` is not one), exact |
//! | `properties`, `required`, `additionalProperties`, `patternProperties` | exact; a key matching several patterns must match their schemas' union (superset, reported, when patterns overlap) |
//! | property order | [`PropertyOrder::AnyOrder`]: any order, each required key once; in a closed object (`additionalProperties: false`, no `patternProperties`) no named key twice: the keys seen are tracked as a set, every named key of an object with up to 7 of them (more while the object's key automaton stays within 2,048 rules); a larger closed object tracks its required keys (up to 10; beyond, they are counted) and its first optional keys, and holds at most as many members as it names, so no key loops. An open object tracks only its required keys: it takes any number of other keys anyway, so tracking its optional ones would stop no loop and costs lexer states (+4% mask time on MaskBench); its optional keys may repeat, as may keys matched only by `additionalProperties`/`patternProperties` (an unbounded set, as in LLGuidance). [`PropertyOrder::SchemaOrder`]: schema order, extra keys last |
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
//! | `not` | pushed down per keyword: `not (k1 ∧ k2)` = `not k1 ∨ not k2`, each negated within its type (`not minimum: 5` = numbers below 5; `not required: [a]` = objects without `a`; `not items: S` = arrays containing a `not S`; `not anyOf` = all negated; ...). String keyword groups are complemented as regexes over every spelling (each group's regex holds every spelling of its strings, so the complement is exact); number keyword groups over one canonical spelling per value (plain decimals: subset, reported on `not`). Not negatable (the `not` is then ignored: superset, reported): `uniqueItems`, `additionalProperties`, `patternProperties`, `propertyNames`, `enum` members that are arrays or objects, `$dynamicRef`, and cycles through `anyOf`. A `not` below a keyword (`properties: {a: {not: S}}`) is its own memoized nonterminal, so recursion through `not`, `if` and `oneOf` is exact |
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
//! keys (undefined in RFC 8259) are rejected for named keys wherever they are tracked (the
//! property-order row above): in [`PropertyOrder::AnyOrder`] a repeated key is accepted only
//! for optional keys of open objects, the untracked optional keys of large closed objects
//! (boundedly), required keys beyond 10, and keys matched only by
//! `additionalProperties`/`patternProperties`.

#[cfg(feature = "json-schema")]
mod compiler;
#[cfg(feature = "json-schema")]
pub(crate) mod ecma;
#[cfg(feature = "json-schema")]
mod formats;
#[cfg(feature = "json-schema")]
mod numeric;
pub mod pydumps;
#[cfg(all(test, feature = "json-schema"))]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::mem::size_of;

/// The `serde_json` this module takes schemas from (re-exported so callers use the same
/// version).
pub use serde_json;
use serde_json::{Map, Value};

use super::ir::GrammarIr;
use crate::error::{GrammarError, GrammarErrorKind, LimitKind, Position, Span};
use crate::limits::{CompileBudget, Limits};

/// Whitespace allowed between tokens: at each *gap* (before and after each of
/// `{ } [ ] , :`, never before the first or after the last token of the document), and the
/// spelling of the separators ([`JsonOptions::item_separator`], [`JsonOptions::key_separator`]).
///
/// Whitespace is never a value, so every policy is exact over values; the bounded ones are a
/// subset of the texts RFC 8259 allows (reported nowhere: the policy is the caller's choice).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whitespace {
    /// No whitespace at all: `{"a":1,"b":[1,2]}`.
    Compact,
    /// Exactly Python's `json.dumps` default: `{"a": 1, "b": [1, 2]}` (a space after each
    /// separator).
    Python,
    /// Up to `max` whitespace characters (space, tab, CR, LF) at each gap.
    Flexible {
        /// Most whitespace characters at each gap.
        max: u32,
    },
    /// Pretty-printing, bounded (the default, with `max_indent: 64`): at each gap up to 2
    /// spaces or tabs (compact JSON, `", "` and `": "`), then optionally one line break
    /// (`\n` or `\r\n`) followed by up to `max_indent` spaces and tabs. One line break per
    /// gap: no blank lines. Accepts `json.dumps(indent=k)` and
    /// `serde_json::to_string_pretty` output up to `max_indent / k` levels deep, while a
    /// model cannot emit whitespace without end: every gap is bounded, and every gap needs a
    /// punctuation token.
    Pretty {
        /// Most spaces and tabs after a line break.
        max_indent: u32,
    },
    /// Any run of space, tab, CR and LF at each gap, unbounded: LLGuidance's
    /// `whitespace_flexible: true` (its `[\x20\x0A\x0D\x09]+`, optional at each gap).
    Unbounded,
    /// A regex (regex-syntax syntax, matching the whole gap) matched at most once at each
    /// gap: LLGuidance's `whitespace_pattern`. The gap may also be empty.
    Pattern(String),
}

impl Whitespace {
    /// The default policy: [`Whitespace::Pretty`] with `max_indent` [`Self::DEFAULT_MAX_INDENT`].
    pub const DEFAULT: Whitespace = Whitespace::Pretty {
        max_indent: Self::DEFAULT_MAX_INDENT,
    };

    /// The indentation bound of the default policy: 64 spaces. MaskBench's valid instances
    /// nest at most 12 levels deep, so `indent=2` pretty-printing indents at most 24 (and
    /// `indent=4` 48); 64 leaves room for deeper documents and tab/4-space styles while
    /// keeping a runaway gap under one line of a typical terminal.
    pub const DEFAULT_MAX_INDENT: u32 = 64;
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
    /// Whitespace between tokens (default [`Whitespace::DEFAULT`]).
    pub whitespace: Whitespace,
    /// The regex (regex-syntax syntax) separating array items and object members, in place
    /// of `,` (LLGuidance's `item_separator`; default `","`). Whitespace gaps still surround
    /// it.
    pub item_separator: String,
    /// The regex separating an object key from its value, in place of `:` (LLGuidance's
    /// `key_separator`; default `":"`).
    pub key_separator: String,
    /// Treat `oneOf` as `anyOf` (LLGuidance's `coerce_one_of`): a superset when branches
    /// overlap, not reported (the caller asked for it).
    pub coerce_one_of: bool,
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
    /// Spellings as LLGuidance 1.9.1 allows them, instead of every spelling of the same value:
    /// object keys and `const`/`enum` values in their canonical spelling (`"name"`, `12`, not
    /// `"n\u0061me"`, `1.2e1`), integers in plain notation, and string characters without
    /// `\/`, without an unescaped DEL, and with `\u` only for control characters and DEL. A subset of texts, not of values. With declared property
    /// order this makes key names forced text, which LLGuidance's clients expect.
    pub llguidance_spellings: bool,
}

impl Default for JsonOptions {
    /// [`Whitespace::Pretty`] with a 64-character indentation bound
    /// ([`Whitespace::DEFAULT`]) accepts compact JSON, the `", "`/`": "` separators that
    /// `json.dumps` writes (how MaskBench and most Python clients serialize) and
    /// pretty-printed documents (`json.dumps(indent=2)`, what models write), while the bounds
    /// keep a model from emitting unbounded runs of whitespace. `AnyOrder` accepts the keys
    /// of real documents, which do not always follow the schema's order, while still
    /// enforcing `required` and (where tracked) that no key repeats.
    fn default() -> Self {
        JsonOptions {
            whitespace: Whitespace::DEFAULT,
            item_separator: String::from(","),
            key_separator: String::from(":"),
            coerce_one_of: false,
            property_order: PropertyOrder::AnyOrder,
            additional_properties_default: true,
            strict: false,
            assert_formats: true,
            documents: Vec::new(),
            llguidance_spellings: false,
        }
    }
}

impl JsonOptions {
    /// LLGuidance 1.9.1's JSON defaults: declared property order
    /// ([`PropertyOrder::SchemaOrder`]), unbounded flexible whitespace
    /// ([`Whitespace::Unbounded`], its `whitespace_flexible: true`), `,` and `:` separators,
    /// formats asserted, `oneOf` not coerced, keys and `const`/`enum` values in their
    /// canonical spelling ([`Self::llguidance_spellings`]). Differences that remain: this compiler
    /// compiles some keywords LLGuidance refuses (it reports them instead), and LLGuidance
    /// refuses unknown formats unless `lenient`.
    pub fn llguidance() -> Self {
        JsonOptions {
            whitespace: Whitespace::Unbounded,
            property_order: PropertyOrder::SchemaOrder,
            llguidance_spellings: true,
            ..JsonOptions::default()
        }
    }

    /// Applies the schema's top-level `"x-guidance"` object (LLGuidance's JSON options; the
    /// key is only recognized at the top level, as there) onto `self`:
    ///
    /// | key | effect |
    /// |:--|:--|
    /// | `whitespace_flexible` (bool) | `true`: [`Whitespace::Unbounded`]; `false`: [`Whitespace::Compact`] |
    /// | `whitespace_pattern` (string or null) | [`Whitespace::Pattern`]; overrides `whitespace_flexible` |
    /// | `item_separator`, `key_separator` (string) | [`Self::item_separator`], [`Self::key_separator`] |
    /// | `coerce_one_of` (bool) | [`Self::coerce_one_of`] |
    /// | `lenient` (bool) | `true`: unsupported keywords and formats are ignored (reported), not errors: [`Self::strict`] off, and `coerce_one_of` on |
    ///
    /// A schema without `"x-guidance"` (or not an object) leaves `self` as it is.
    ///
    /// # Errors
    /// [`GrammarErrorKind::Unsupported`] for an unknown key or a value of the wrong type,
    /// with its pointer below `/x-guidance`.
    pub fn apply_x_guidance(&mut self, schema: &Value) -> Result<(), GrammarError> {
        let Some(x) = schema.get("x-guidance") else {
            return Ok(());
        };
        let bad = |key: &str, why: &str| {
            let at = if key.is_empty() {
                String::from("/x-guidance")
            } else {
                alloc::format!("/x-guidance/{key}")
            };
            GrammarError::at_pointer(GrammarErrorKind::Unsupported, at, why)
        };
        let Value::Object(x) = x else {
            return Err(bad("", "must be an object"));
        };
        let flag = |k: &str, v: &Value| v.as_bool().ok_or_else(|| bad(k, "must be a boolean"));
        let text = |k: &str, v: &Value| {
            v.as_str()
                .map(String::from)
                .ok_or_else(|| bad(k, "must be a string"))
        };
        let mut pattern = None;
        let mut flexible = None;
        for (k, v) in x {
            match k.as_str() {
                "whitespace_flexible" => flexible = Some(flag(k, v)?),
                "whitespace_pattern" => {
                    if !v.is_null() {
                        pattern = Some(text(k, v)?);
                    }
                }
                "item_separator" => self.item_separator = text(k, v)?,
                "key_separator" => self.key_separator = text(k, v)?,
                "coerce_one_of" => self.coerce_one_of = flag(k, v)?,
                "lenient" => {
                    if flag(k, v)? {
                        self.strict = false;
                        self.coerce_one_of = true;
                    }
                }
                _ => {
                    return Err(bad(k, "unknown x-guidance option"));
                }
            }
        }
        match (pattern, flexible) {
            (Some(p), _) => self.whitespace = Whitespace::Pattern(p),
            (None, Some(true)) => self.whitespace = Whitespace::Unbounded,
            (None, Some(false)) => self.whitespace = Whitespace::Compact,
            (None, None) => {}
        }
        Ok(())
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
    /// Exact over values, restricted in spelling: every value the keyword accepts keeps an
    /// accepted spelling, but some valid spellings of some values are rejected (numbers in
    /// exponent notation whose set of spellings is not regular, very long literals in escaped
    /// form). Like the whitespace policy, a subset of texts, not of values: reported, and
    /// [`JsonOptions::strict`] does not refuse it.
    Spelling {
        /// Which spellings are rejected.
        why: String,
    },
}

/// One reported keyword.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoverageEntry {
    /// JSON pointer of the schema object holding the keyword, in the document as written:
    /// a keyword that merging moved (an `allOf` member, a `$ref` target, the siblings of an
    /// `anyOf` merged into its branches) is reported at each place it is written, and a
    /// keyword that merging built at the `allOf` or `oneOf` that built it. Only when no such
    /// place is found is the pointer the one the compiler built (`/anyOf/2/...` of a merged
    /// branch). A keyword in another document (`JsonOptions::documents`) keeps the
    /// compiler's `@index/...` pointer.
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

    /// Entries that make the grammar reject some valid documents (values or spellings).
    pub fn subsets(&self) -> impl Iterator<Item = &CoverageEntry> {
        self.entries.iter().filter(|e| {
            matches!(
                e.status,
                CoverageStatus::Approximated {
                    direction: Direction::Subset,
                    ..
                } | CoverageStatus::Spelling { .. }
            )
        })
    }

    /// Entries that restrict spellings only (every accepted value keeps a spelling).
    pub fn spellings(&self) -> impl Iterator<Item = &CoverageEntry> {
        self.entries
            .iter()
            .filter(|e| matches!(e.status, CoverageStatus::Spelling { .. }))
    }
}

impl fmt::Display for CoverageEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}/{}: {}", self.pointer, self.keyword, self.status)
    }
}

impl fmt::Display for CoverageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoverageStatus::Approximated { direction, why } => {
                let d = match direction {
                    Direction::Superset => "superset",
                    Direction::Subset => "subset",
                };
                write!(f, "approximated ({d}): {why}")
            }
            CoverageStatus::Spelling { why } => write!(f, "spellings restricted (subset): {why}"),
            CoverageStatus::Unknown => f.write_str("unknown keyword, ignored"),
            CoverageStatus::Unsupported => f.write_str("unsupported keyword, ignored"),
        }
    }
}

/// Compile a JSON Schema into grammar IR plus the coverage report. All work is paid from
/// `budget` (shared with the rest of the compile). A top-level `"x-guidance"` object is
/// applied onto `opts` first ([`JsonOptions::apply_x_guidance`]): a schema that carries it
/// asks for those options, whoever compiles it.
///
/// # Errors
/// See [`GrammarErrorKind`]; an invalid `"x-guidance"` is `Unsupported`.
pub fn compile(
    schema: &Value,
    opts: &JsonOptions,
    limits: &Limits,
    budget: &mut CompileBudget,
) -> Result<(GrammarIr, CoverageReport), GrammarError> {
    #[cfg(not(feature = "json-schema"))]
    {
        let _ = (schema, opts, limits, budget);
        Err(super::not_compiled_in("json-schema", "JSON Schemas"))
    }
    #[cfg(feature = "json-schema")]
    {
        if schema.get("x-guidance").is_some() {
            let mut own = opts.clone();
            own.apply_x_guidance(schema)?;
            return compiler::Compiler::new(schema, &own, limits, budget).run();
        }
        compiler::Compiler::new(schema, opts, limits, budget).run()
    }
}

/// At most 64 nested arrays and objects in schema text. serde_json's `Value` clones, drops,
/// compares and prints itself recursively, about 0.4 KiB of stack per level in release
/// builds (clone), and the compiler clones and prints subschemas: at serde_json's own limit
/// (127 levels) a clone alone takes 50 KiB, too much for a 64 KiB stack. The deepest
/// MaskBench schema has 63 levels.
const MAX_TEXT_DEPTH: usize = 65;

/// Parse schema text; a parse error becomes [`GrammarErrorKind::Syntax`] located at its line
/// and column. Arrays and objects are parsed on an explicit stack (serde_json's parser
/// recurses, about 0.5 KiB of stack per level in release builds); scalars are parsed by
/// serde_json, so the values are the ones it would build. Nesting deeper than 64 is a
/// syntax error (serde_json's own limit is 127; see `MAX_TEXT_DEPTH`). The values are
/// charged to a budget of the default [`Limits`] ([`parse_schema_within`]).
pub fn parse_schema(text: &str) -> Result<Value, GrammarError> {
    parse_schema_within(text, &mut CompileBudget::new(&Limits::default()))
}

/// [`parse_schema`], charging the values it builds to `budget`'s front-end bytes before
/// building them (each string and key at twice its spelling, each array element and object
/// member at `ELEMENT_BYTES` and `MEMBER_BYTES`): beyond the budget's share it stops with
/// [`GrammarErrorKind::Limit`]`(`[`LimitKind::Memory`]`)`. The text itself is the caller's.
pub fn parse_schema_within(text: &str, budget: &mut CompileBudget) -> Result<Value, GrammarError> {
    parse_value(text, budget).map_err(|e| {
        let (offset, msg) = match e {
            ParseError::Syntax(offset, msg) => (offset, msg),
            ParseError::Memory(offset) => {
                let pos = offset_position(text, offset);
                return GrammarError::new(
                    GrammarErrorKind::Limit(LimitKind::Memory),
                    alloc::format!(
                        "JSON schema text: {} exceeded at line {} column {}",
                        LimitKind::Memory,
                        pos.line,
                        pos.column
                    ),
                )
                .with_span(Span {
                    start: pos,
                    end: pos,
                });
            }
        };
        let pos = offset_position(text, offset);
        GrammarError::new(
            GrammarErrorKind::Syntax,
            alloc::format!(
                "invalid JSON schema text: {msg} at line {} column {}",
                pos.line,
                pos.column
            ),
        )
        .with_span(Span {
            start: pos,
            end: pos,
        })
    })
}

/// Estimated heap bytes of one array element, charged by the parser and the compiler: its
/// slot in the array's buffer, doubled for the buffer's growth room.
pub(crate) const ELEMENT_BYTES: usize = 2 * size_of::<Value>();

/// Estimated heap bytes of one object member besides its key's characters (an
/// `IndexMap` entry: hash, key and value, plus its index slot and control byte), doubled for
/// growth room.
pub(crate) const MEMBER_BYTES: usize =
    2 * (2 * size_of::<usize>() + size_of::<String>() + size_of::<Value>() + 1);

/// Estimated heap bytes of the `Open` frames and bookkeeping of one object (its index table's
/// control group).
pub(crate) const OBJECT_BYTES: usize = 2 * size_of::<usize>() + 16;

/// An array or object being parsed: its members so far (and, for an object, the key of the
/// member whose value comes next).
enum Open {
    Array(Vec<Value>),
    Object(Map<String, Value>, String),
}

/// Why parsing stopped: a syntax error (offset, message) or the memory budget (offset).
enum ParseError {
    Syntax(usize, String),
    Memory(usize),
}

fn parse_value(text: &str, budget: &mut CompileBudget) -> Result<Value, ParseError> {
    let b = text.as_bytes();
    let mut i = 0usize;
    let mut stack: Vec<Open> = Vec::new();
    let err = |i: usize, m: &str| -> ParseError { ParseError::Syntax(i, String::from(m)) };
    loop {
        // A value.
        skip_ws(b, &mut i);
        let mut v = match b.get(i) {
            Some(b'{') | Some(b'[') => {
                if stack.len() + 1 >= MAX_TEXT_DEPTH {
                    return Err(err(i, "recursion limit exceeded"));
                }
                let object = b.get(i) == Some(&b'{');
                budget
                    .charge(2 * size_of::<Open>() + OBJECT_BYTES)
                    .map_err(|_| ParseError::Memory(i))?;
                i += 1;
                skip_ws(b, &mut i);
                match (object, b.get(i)) {
                    (true, Some(b'}')) => {
                        i += 1;
                        Value::Object(Map::new())
                    }
                    (false, Some(b']')) => {
                        i += 1;
                        Value::Array(Vec::new())
                    }
                    (true, _) => {
                        let k = parse_key(text, &mut i, budget)?;
                        stack.push(Open::Object(Map::new(), k));
                        continue;
                    }
                    (false, _) => {
                        stack.push(Open::Array(Vec::new()));
                        continue;
                    }
                }
            }
            Some(b'"') => Value::String(parse_string(text, &mut i, budget)?),
            Some(b't') | Some(b'f') | Some(b'n') => parse_literal(b, &mut i)?,
            Some(c) if *c == b'-' || c.is_ascii_digit() => parse_number(text, &mut i, budget)?,
            None => return Err(err(i, "EOF while parsing a value")),
            Some(_) => return Err(err(i, "expected value")),
        };
        // Attach it, closing every container it completes.
        loop {
            skip_ws(b, &mut i);
            let Some(top) = stack.last_mut() else {
                if i != b.len() {
                    return Err(err(i, "trailing characters"));
                }
                return Ok(v);
            };
            // Another member (back to the outer loop for its value), or the closing bracket.
            match top {
                Open::Array(items) => {
                    budget
                        .charge(ELEMENT_BYTES)
                        .map_err(|_| ParseError::Memory(i))?;
                    items.push(v);
                    match b.get(i) {
                        Some(b',') => {
                            i += 1;
                            break;
                        }
                        Some(b']') => {}
                        _ => return Err(err(i, "expected `,` or `]`")),
                    }
                }
                Open::Object(members, key) => {
                    budget
                        .charge(MEMBER_BYTES)
                        .map_err(|_| ParseError::Memory(i))?;
                    members.insert(core::mem::take(key), v);
                    match b.get(i) {
                        Some(b',') => {
                            i += 1;
                            skip_ws(b, &mut i);
                            *key = parse_key(text, &mut i, budget)?;
                            break;
                        }
                        Some(b'}') => {}
                        _ => return Err(err(i, "expected `,` or `}`")),
                    }
                }
            }
            i += 1;
            v = match stack.pop() {
                Some(Open::Array(items)) => Value::Array(items),
                Some(Open::Object(members, _)) => Value::Object(members),
                None => return Err(err(i, "unbalanced")),
            };
        }
    }
}

/// `true`, `false` or `null` at `*i`.
fn parse_literal(b: &[u8], i: &mut usize) -> Result<Value, ParseError> {
    let rest = b.get(*i..).unwrap_or(&[]);
    let (lit, v) = if rest.starts_with(b"true") {
        (4, Value::Bool(true))
    } else if rest.starts_with(b"false") {
        (5, Value::Bool(false))
    } else if rest.starts_with(b"null") {
        (4, Value::Null)
    } else {
        return Err(ParseError::Syntax(*i, String::from("expected value")));
    };
    *i += lit;
    Ok(v)
}

/// A number at `*i` (read by serde_json, whose scratch is charged: a `Number` holds no heap).
fn parse_number(
    text: &str,
    i: &mut usize,
    budget: &mut CompileBudget,
) -> Result<Value, ParseError> {
    let b = text.as_bytes();
    let start = *i;
    while b
        .get(*i)
        .is_some_and(|c| c.is_ascii_digit() || b"+-.eE".contains(c))
    {
        *i += 1;
    }
    let t = text.get(start..*i).unwrap_or("");
    budget
        .charge(t.len())
        .map_err(|_| ParseError::Memory(start))?;
    let n: serde_json::Number =
        serde_json::from_str(t).map_err(|e| ParseError::Syntax(start, alloc::format!("{e}")))?;
    Ok(Value::Number(n))
}

fn skip_ws(b: &[u8], i: &mut usize) {
    while matches!(b.get(*i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        *i += 1;
    }
}

/// A JSON string at `*i` (its escapes decoded by serde_json), charged to `budget` at twice
/// its spelling (serde_json's scratch buffer and the string) before it is decoded.
fn parse_string(
    text: &str,
    i: &mut usize,
    budget: &mut CompileBudget,
) -> Result<String, ParseError> {
    let b = text.as_bytes();
    let start = *i;
    let mut j = start + 1;
    loop {
        match b.get(j) {
            None => {
                return Err(ParseError::Syntax(
                    j,
                    String::from("EOF while parsing a string"),
                ));
            }
            Some(b'"') => break,
            Some(b'\\') => j += 2,
            Some(_) => j += 1,
        }
    }
    *i = j + 1;
    let Some(t) = text.get(start..j + 1) else {
        return Err(ParseError::Syntax(start, String::from("invalid escape")));
    };
    budget
        .charge(2 * t.len())
        .map_err(|_| ParseError::Memory(start))?;
    serde_json::from_str(t).map_err(|e| ParseError::Syntax(start, alloc::format!("{e}")))
}

/// An object key and its colon.
fn parse_key(text: &str, i: &mut usize, budget: &mut CompileBudget) -> Result<String, ParseError> {
    let b = text.as_bytes();
    if b.get(*i) != Some(&b'"') {
        return Err(ParseError::Syntax(*i, String::from("key must be a string")));
    }
    let k = parse_string(text, i, budget)?;
    skip_ws(b, i);
    if b.get(*i) != Some(&b':') {
        return Err(ParseError::Syntax(*i, String::from("expected `:`")));
    }
    *i += 1;
    Ok(k)
}

/// Line and column (1-based, in characters) of a byte offset.
fn offset_position(text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = text.get(..offset).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |p| p + 1);
    let column = before.get(line_start..).map_or(0, |l| l.chars().count()) + 1;
    Position {
        offset,
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
    }
}
