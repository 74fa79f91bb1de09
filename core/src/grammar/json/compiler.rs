//! The schema walker: resolves `$ref`, merges `allOf`, distributes sibling keywords over
//! `anyOf`/`oneOf`, and emits rules and lexemes into a [`GrammarIr`].
//!
//! **No native recursion on the schema.** Every subschema (an item, a property, a branch, a
//! `$ref` target, a rewritten or negated schema) becomes its own nonterminal through one work
//! list ([`Compiler::sub`]): the nonterminal is allocated, the subschema queued, and its id
//! returned. Jobs are memoized by location (a JSON pointer into a document, when the
//! subschema is the value found there) or by text (a schema built by merging or negation),
//! so shared subschemas compile once and reference cycles, also through `not`, `if` and
//! `oneOf`, become cycles between nonterminals. Flattening (`$ref` with siblings, `allOf`),
//! negation and `const` emission walk explicit stacks. What still recurses natively is
//! bounded by a constant (`unevaluated*` expansion, [`MAX_UNEVALUATED_DEPTH`]) or by
//! serde_json's own depth limit on parsed values (`Value`'s clone, drop and comparisons).
//!
//! **Budgeted.** All work is paid from the compile budget (`compile_fuel`): one unit per job,
//! flattened node, merged keyword, negated node, emitted const node and reference lookup,
//! plus the size of every memo key and cloned subtree. Grammar growth is charged to
//! `limits.max_grammar_size` as rules and lexemes are added. The bytes of every copied or
//! built value, memo key, job, report entry, rule, nonterminal and lexeme are charged to the
//! budget's front-end bytes ([`Compiler::alloc`]) before they are allocated (a regex tree
//! when it becomes a lexeme, or per value for `enum` spellings); a walk that only moves its
//! operands (merging) pays fuel, not bytes.
//!
//! The compiler's private keywords (the number and string exclusions of pushed-down
//! negations, the first counted `contains` position) are spelled with a prefix that no key of
//! the input documents starts with ([`PrivateKeys`]), so a user key is never obeyed as one.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use serde_json::{Map, Value};

use super::ecma::{self, PatternError};
use super::formats;
use super::numeric::{self, Decimal};
use super::{CoverageEntry, CoverageReport, CoverageStatus, Direction, JsonOptions};
use super::{ELEMENT_BYTES, MEMBER_BYTES, OBJECT_BYTES};
use super::{PropertyOrder, Whitespace};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::ir::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{ExprSet, RegexAst};

mod negate;

/// One string character as LLGuidance 1.9.1 writes it ([`JsonOptions::llguidance_spellings`]):
/// no DEL unescaped, no `\/`, and `\u` only for control characters and DEL.
const STR_CHAR_LLG: &str =
    r#"(?:[^"\\\x00-\x1F\x7F]|\\["\\bfnrt]|\\u00[01][0-9A-Fa-f]|\\u007[Ff])"#;
/// One encoded character of a generic string body: any JSON escape, a surrogate pair escape
/// counting as one character, lone surrogates rejected.
const STR_CHAR: &str = r#"(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u(?:[0-9A-Ca-cEFef][0-9A-Fa-f]{3}|[Dd][0-7][0-9A-Fa-f]{2})|\\u[Dd][89ABab][0-9A-Fa-f]{2}\\u[Dd][C-Fc-f][0-9A-Fa-f]{2})"#;
const NUMBER: &str = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";
/// One spelling per number value (no exponent, no `-0`, no trailing fraction zeros): the
/// domain in which a number regex is complemented, so that complementing spellings
/// complements values.
const CANON_NUMBER: &str = r"(?:0|-?(?:[1-9][0-9]*(?:\.[0-9]*[1-9])?|0\.[0-9]*[1-9]))";
/// An integer as LLGuidance writes one ([`JsonOptions::llguidance_spellings`]): plain digits,
/// no fraction, no exponent.
const INTEGER_CANONICAL: &str = r"-?(?:0|[1-9][0-9]*)";
/// Most spaces and tabs of a [`Whitespace::Pretty`] gap before its line break, if any
/// (`", "`, `": "`).
const PRETTY_INLINE: u32 = 2;
/// Most named properties (`properties` and `required`) of an any-order object tracked as a
/// set, so that none repeats ([`AnyOrderPlan`]), within [`MAX_OBJECT_RULES`].
const MAX_TRACKED_KEYS: usize = 10;
/// Most required properties tracked as a set when not every named key is (the state
/// budget permitting); beyond, they are counted.
const MAX_TRACKED_REQUIRED: usize = 10;
/// Most rules (states times transitions) of one object's key automaton spent on tracking
/// optional keys: every key of an object with up to 7 named keys (2^7 states, 9 rules each),
/// fewer of a larger one. A budget per object keeps schemas with hundreds of objects within
/// `Limits::max_grammar_size` (issue 16: tracking 10 keys, 10k rules per object, put 9
/// MaskBench schemas over it and doubled the mean compile time).
const MAX_OBJECT_RULES: usize = 2048;
/// [`MAX_OBJECT_RULES`] once the grammar has grown past a quarter of
/// `Limits::max_grammar_size`: every key of objects with up to 3 named keys, fewer of larger
/// ones (a schema of hundreds of 7-key objects, JsonSchemaStore's `v4-config`, went over the
/// limit otherwise).
const MAX_OBJECT_RULES_LEAN: usize = 64;
/// Most states of one object's key automaton.
const MAX_OBJECT_STATES: usize = 4096;
/// Largest `maxItems` unrolled exactly.
const MAX_UNROLLED_ITEMS: u64 = 1000;

/// Most `contains` conditions one array enforces together (an `allOf` of more keeps the
/// first ones and reports the rest as a superset): each item picks which of them it
/// counts for, 2^n ways.
const MAX_CONTAINS_GROUPS: usize = 4;

/// One `contains` condition of an array: the items from index `from` on that match
/// `schema` number at least `min` and at most `max`.
#[derive(Debug, Clone, PartialEq)]
struct ContainsGroup {
    schema: Value,
    min: u64,
    max: Option<u64>,
    from: u64,
}
/// Largest count tracked for `minProperties`/`maxProperties`.
const MAX_PROPERTY_COUNT: u64 = 64;
/// Most `anyOf` branches produced when merging two `anyOf`s.
const MAX_BRANCH_PRODUCT: usize = 64;
/// Most `oneOf` branches rewritten exactly when not provably disjoint.
const MAX_ONE_OF_REWRITE: usize = 8;
/// The same outside strict mode.
const MAX_ONE_OF_REWRITE_DEFAULT: usize = 4;

const T_NULL: u8 = 1;
const T_BOOL: u8 = 2;
const T_INT: u8 = 4;
const T_NUM: u8 = 8;
const T_STR: u8 = 16;
const T_ARR: u8 = 32;
const T_OBJ: u8 = 64;
const T_ALL: u8 = 127;

fn type_bit(name: &str) -> Option<u8> {
    Some(match name {
        "null" => T_NULL,
        "boolean" => T_BOOL,
        "integer" => T_INT,
        "number" => T_NUM | T_INT,
        "string" => T_STR,
        "array" => T_ARR,
        "object" => T_OBJ,
        _ => return None,
    })
}

fn value_type(v: &Value) -> u8 {
    match v {
        Value::Null => T_NULL,
        Value::Bool(_) => T_BOOL,
        Value::Number(n) => {
            let integral = n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f == (f as i64) as f64);
            if integral { T_INT } else { T_NUM }
        }
        Value::String(_) => T_STR,
        Value::Array(_) => T_ARR,
        Value::Object(_) => T_OBJ,
    }
}

/// Keywords that never affect validation.
fn is_annotation(k: &str) -> bool {
    matches!(
        k,
        "title"
            | "description"
            | "default"
            | "examples"
            | "example"
            | "$comment"
            | "$schema"
            | "$id"
            | "id"
            | "$anchor"
            | "$dynamicAnchor"
            | "$recursiveAnchor"
            | "$vocabulary"
            | "$defs"
            | "definitions"
            | "readOnly"
            | "writeOnly"
            | "deprecated"
            | "contentMediaType"
            | "contentEncoding"
            | "contentSchema"
            | "x-guidance"
    )
}

/// A `$schema` naming one of the published drafts' metaschemas (scheme, trailing `#` and a
/// trailing slash aside).
fn is_known_draft(uri: &str) -> bool {
    let rest = uri
        .strip_prefix("https://")
        .or_else(|| uri.strip_prefix("http://"))
        .unwrap_or(uri);
    let rest = rest.trim_end_matches('#').trim_end_matches('/');
    matches!(
        rest,
        "json-schema.org/draft-03/schema"
            | "json-schema.org/draft-04/schema"
            | "json-schema.org/draft-06/schema"
            | "json-schema.org/draft-07/schema"
            | "json-schema.org/draft/2019-09/schema"
            | "json-schema.org/draft/2020-12/schema"
    )
}

/// Keywords compiled by this module.
fn is_handled(k: &str) -> bool {
    matches!(
        k,
        "type"
            | "enum"
            | "const"
            | "properties"
            | "required"
            | "additionalProperties"
            | "patternProperties"
            | "propertyNames"
            | "minProperties"
            | "maxProperties"
            | "items"
            | "prefixItems"
            | "additionalItems"
            | "minItems"
            | "maxItems"
            | "minLength"
            | "maxLength"
            | "pattern"
            | "format"
            | "minimum"
            | "maximum"
            | "exclusiveMinimum"
            | "exclusiveMaximum"
            | "multipleOf"
            | "anyOf"
            | "oneOf"
            | "allOf"
            | "$ref"
            | "not"
            | "if"
            | "then"
            | "else"
            | "dependentRequired"
            | "dependentSchemas"
            | "dependencies"
            | "contains"
            | "minContains"
            | "maxContains"
    )
}

/// Validation keywords we know but do not compile (ignored: a superset).
fn is_unsupported(k: &str) -> bool {
    matches!(
        k,
        "uniqueItems"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "$dynamicRef"
            | "$recursiveRef"
    )
}

/// Does the schema object carry any validation keyword besides `skip`?
fn has_validation(m: &Map<String, Value>, skip: &[&str], keys: &PrivateKeys) -> bool {
    m.keys().any(|k| {
        !skip.contains(&k.as_str()) && (is_handled(k) || is_unsupported(k) || keys.is_private(k))
    })
}

/// The names of the compiler's private keywords, chosen per compile so that no key of the
/// input documents starts with their prefix: `$sieve:` unless the input uses it, else
/// `$sieve0:`, `$sieve1:`, ... (the first one free).
pub(super) struct PrivateKeys {
    prefix: String,
    /// A number must satisfy none of these keyword groups.
    pub(super) not_number: String,
    /// A string must satisfy none of these keyword groups.
    pub(super) not_string: String,
    /// `contains` counts only the items from this index on.
    pub(super) contains_from: String,
    /// The other `contains` conditions of an `allOf` (each an object of `contains`,
    /// `minContains`, `maxContains` and `contains_from`), all enforced with the first.
    pub(super) contains_more: String,
}

impl PrivateKeys {
    /// Keys free in `docs`; also returns the number of object keys scanned (the work done).
    fn free_in(docs: &[&Value]) -> (PrivateKeys, u64) {
        // Indices taken: 0 for `$sieve:`, i + 1 for `$sieve<i>:`.
        let mut taken: alloc::collections::BTreeSet<u64> = alloc::collections::BTreeSet::new();
        let mut stack: Vec<&Value> = docs.to_vec();
        let mut work = 0u64;
        while let Some(v) = stack.pop() {
            work += 1;
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        work += 1;
                        if let Some(rest) = k.strip_prefix("$sieve") {
                            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
                            if rest.as_bytes().get(digits) == Some(&b':') {
                                if digits == 0 {
                                    taken.insert(0);
                                } else if let Ok(i) = rest[..digits].parse::<u64>() {
                                    taken.insert(i.saturating_add(1));
                                }
                            }
                        }
                        stack.push(x);
                    }
                }
                Value::Array(a) => stack.extend(a.iter()),
                _ => {}
            }
        }
        let mut n = 0u64;
        while taken.contains(&n) {
            n += 1;
        }
        let prefix = if n == 0 {
            String::from("$sieve:")
        } else {
            format!("$sieve{}:", n - 1)
        };
        let keys = PrivateKeys {
            not_number: format!("{prefix}notNumber"),
            not_string: format!("{prefix}notString"),
            contains_from: format!("{prefix}containsFrom"),
            contains_more: format!("{prefix}containsMore"),
            prefix,
        };
        (keys, work)
    }

    pub(super) fn is_private(&self, k: &str) -> bool {
        k.starts_with(self.prefix.as_str())
    }
}

/// Most nested `anyOf`/`oneOf` levels expanded for `unevaluated*` (deeper: superset,
/// reported); the expansion recurses natively, so this bounds its depth.
pub(super) const MAX_UNEVALUATED_DEPTH: usize = 4;

/// Where a queued subschema comes from.
enum Src<'a> {
    /// The value at the job's pointer in a document.
    At(&'a Value),
    /// A schema built by the compiler (merged, rewritten, negated).
    Owned(Value),
}

/// A subschema handed to [`Compiler::queue`].
enum SubSrc<'s> {
    Borrowed(&'s Value),
    Owned(Value),
}

/// A subschema queued for compilation into nonterminal `nt`.
struct Job<'a> {
    nt: u32,
    src: Src<'a>,
    ptr: String,
    base: String,
    /// Structural nesting below the last `$ref` (checked against `max_nesting_depth`).
    depth: usize,
}

/// A `$ref`/`allOf` node being flattened: its keywords so far and the subschemas still to
/// merge (popped from the end), each with its pointer, base and the `$ref` target it is.
struct FlatFrame<'v> {
    acc: Value,
    kids: Vec<(&'v Value, String, String, Option<String>)>,
    ptr: String,
    base: String,
    /// The `$ref` target this node is (for cycle detection).
    via: Option<String>,
}

enum Opened<'v> {
    Done(Value),
    Frame(FlatFrame<'v>),
}

/// An array or object `const` value being emitted: its nonterminal, its right-hand side so
/// far and the members still to emit.
struct ConstFrame<'v> {
    nt: u32,
    rhs: Vec<IrSymbol>,
    members: Members<'v>,
    first: bool,
}

enum Members<'v> {
    Array(core::slice::Iter<'v, Value>),
    Object(serde_json::map::Iter<'v>),
}

/// Compile fuel per value node cloned, compared or dropped by the rewriting (an allocation
/// and a free each, several times the cost of one unit of regex work).
const NODE_COST: u64 = 16;

/// Nodes of `v` (objects, arrays and scalars) times [`NODE_COST`], counted up to `cap` (then
/// more than `cap`), and the estimated heap bytes of a copy of `v` (counted as far as the weight):
/// each string's characters, [`ELEMENT_BYTES`] per array element, [`MEMBER_BYTES`] plus the
/// key per object member, [`OBJECT_BYTES`] per object.
fn weigh(v: &Value, cap: u64) -> (u64, usize) {
    let mut n = 0u64;
    let mut bytes = 0usize;
    let mut stack = vec![v];
    while let Some(x) = stack.pop() {
        n += NODE_COST;
        if n > cap {
            return (n, bytes);
        }
        bytes = bytes.saturating_add(match x {
            Value::Object(m) => {
                stack.extend(m.values());
                m.keys().fold(OBJECT_BYTES, |b, k| {
                    b.saturating_add(MEMBER_BYTES + k.len())
                })
            }
            Value::Array(a) => {
                stack.extend(a.iter());
                a.len().saturating_mul(ELEMENT_BYTES)
            }
            Value::String(t) => t.len(),
            _ => 0,
        });
    }
    (n, bytes)
}

/// Estimated heap bytes of one character of a string spelled by `ecma::quoted_set_spellings`:
/// its trie node, child entry and edge, and its tree nodes.
const SET_CHAR_BYTES: usize = 2 * size_of::<RegexAst>() + 48;

/// Estimated heap bytes of a regex tree: each node's slot (doubled for the growth room of
/// the vectors holding it) plus its literal bytes and pattern text.
pub(super) fn regex_bytes(r: &RegexAst) -> usize {
    let mut bytes = 0usize;
    let mut stack = vec![r];
    while let Some(x) = stack.pop() {
        bytes = bytes.saturating_add(2 * size_of::<RegexAst>());
        match x {
            RegexAst::Literal(b) => bytes = bytes.saturating_add(b.len()),
            RegexAst::Pattern(p, _) => bytes = bytes.saturating_add(p.len()),
            RegexAst::Concat(v) | RegexAst::Or(v) | RegexAst::And(v) => stack.extend(v.iter()),
            RegexAst::Not(b) | RegexAst::Repeat(b, _, _) => stack.push(b),
            // Shared subtrees (one spelling per character of a string set) are counted
            // where they are built, not at every use.
            RegexAst::Shared(_) => {}
            RegexAst::Nothing | RegexAst::Epsilon | RegexAst::ByteSet(_) => {}
        }
    }
    bytes
}

/// A non-negative integer keyword value (`2` or `2.0`).
fn as_count(v: &Value) -> Option<u64> {
    v.as_u64().or_else(|| {
        let f = v.as_f64()?;
        ((0.0..1.8e19).contains(&f) && (f as u64) as f64 == f).then_some(f as u64)
    })
}

/// Rewrite `const` as a one-value `enum` (intersected with an `enum` already there).
fn const_to_enum(m: &mut Map<String, Value>) {
    if let Some(c) = m.remove("const") {
        let list = match m.get("enum") {
            Some(Value::Array(e)) if !e.contains(&c) => Vec::new(),
            _ => vec![c],
        };
        m.insert("enum".into(), Value::Array(list));
    }
}

/// Escape one JSON-pointer token.
fn ptr_token(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

fn child(ptr: &str, k: &str) -> String {
    format!("{ptr}/{}", ptr_token(k))
}

/// Every spelling (quotes included) of the key `k`; its canonical spelling only when it is
/// longer than `ecma::MAX_SPELLED_LITERAL` characters.
fn key_spellings(k: &str, canonical: bool) -> RegexAst {
    let literal = || RegexAst::Literal(super::pydumps::string(k).into_bytes());
    if canonical {
        return literal();
    }
    ecma::quoted_spellings(k).unwrap_or_else(literal)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let h = core::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = h {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

fn has_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.') {
            return false;
        }
    }
    false
}

/// Minimal RFC 3986 reference resolution (no dot-segment removal).
fn join_uri(base: &str, r: &str) -> String {
    if r.is_empty() {
        return base.to_string();
    }
    if has_scheme(r) || base.is_empty() {
        return r.to_string();
    }
    let base = base.split('#').next().unwrap_or("");
    if let Some(rest) = r.strip_prefix("//") {
        let scheme = base.split(':').next().unwrap_or("");
        return format!("{scheme}://{rest}");
    }
    if r.starts_with('/') {
        if let Some(i) = base.find("://") {
            let after = &base[i + 3..];
            let end = after.find('/').map_or(base.len(), |j| i + 3 + j);
            return format!("{}{r}", &base[..end]);
        }
        return r.to_string();
    }
    if r.starts_with('#') {
        return format!("{base}{r}");
    }
    match base.rfind('/') {
        Some(i) => format!("{}{r}", &base[..=i]),
        None => r.to_string(),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Punctuation lexemes, in this order: `{ } [ ] , :`.
#[derive(Clone, Copy)]
struct Punct {
    lbrace: u32,
    rbrace: u32,
    lbrack: u32,
    rbrack: u32,
    comma: u32,
    colon: u32,
}

/// A numeric bound: value and whether it is exclusive.
#[derive(Clone)]
struct Bound {
    value: f64,
    dec: Decimal,
    strict: bool,
}

/// Replace, in every right-hand side, each nonterminal whose only rule is one other
/// nonterminal (the wrappers of the work list and of `$ref`s) by the end of its chain, so
/// the matcher does not pay for unit steps. A cycle of such rules (a schema that is only a
/// reference to itself) is left to derive nothing.
fn skip_aliases(ir: &mut GrammarIr) {
    let n = ir.nonterminals.len();
    let mut rules = vec![0u32; n];
    let mut alias: Vec<Option<u32>> = vec![None; n];
    for r in &ir.rules {
        let l = r.lhs as usize;
        if let Some(c) = rules.get_mut(l) {
            *c += 1;
        }
        if let ([IrSymbol::Nonterminal(t)], Some(a)) = (r.rhs.as_slice(), alias.get_mut(l))
            && (*t as usize) < n
        {
            *a = Some(*t);
        }
    }
    for (a, &c) in alias.iter_mut().zip(&rules) {
        if c != 1 {
            *a = None;
        }
    }
    // 0: not seen, 1: on the current chain, 2: resolved.
    let mut state = vec![0u8; n];
    let mut resolved: Vec<u32> = (0..n as u32).collect();
    let mut chain = Vec::new();
    for i in 0..n {
        let mut x = i;
        let end = loop {
            match state[x] {
                2 => break resolved[x],
                1 => break x as u32,
                _ => {}
            }
            state[x] = 1;
            chain.push(x);
            match alias[x] {
                Some(t) => x = t as usize,
                None => break x as u32,
            }
        };
        for y in chain.drain(..) {
            resolved[y] = end;
            state[y] = 2;
        }
    }
    for r in &mut ir.rules {
        for sym in &mut r.rhs {
            if let IrSymbol::Nonterminal(x) = sym
                && let Some(&t) = resolved.get(*x as usize)
            {
                *x = t;
            }
        }
    }
}

pub(crate) struct Compiler<'a> {
    root: &'a Value,
    opts: &'a JsonOptions,
    limits: &'a Limits,
    /// The whole compile's budget; `exprs` runs on its fuel and settles it at the end.
    budget: &'a mut CompileBudget,
    ir: GrammarIr,
    report: CoverageReport,
    reported: BTreeMap<(String, String), ()>,
    /// Lexemes by the structural hash of their regex ([`RegexAst::structural_hash`]); a hit
    /// is confirmed by comparing the trees.
    lex_cache: BTreeMap<u64, Vec<u32>>,
    ref_nts: BTreeMap<String, u32>,
    /// Subschemas waiting for their nonterminal's rules.
    work: Vec<Job<'a>>,
    /// The nonterminal of every queued subschema, by location or by text ([`Self::sub`]).
    memo: BTreeMap<String, u32>,
    /// Every resource: its URI, its location, and the base URI outside it (where its own
    /// `$id` is applied again when it is opened).
    resources: Vec<(String, String, String)>,
    anchors: Vec<(String, String)>,
    any_nt: Option<u32>,
    nothing_nt: Option<u32>,
    string_lex: Option<u32>,
    punct: Option<Punct>,
    /// Draft 4–7: `$ref` siblings are ignored.
    old_ref: bool,
    /// Draft 3–4: `id` (not only `$id`) sets the base URI.
    old_id: bool,
    /// Draft 3–6: `if`/`then`/`else` are not keywords yet.
    before_7: bool,
    size: usize,
    exprs: ExprSet,
    /// Inside a complemented regex: approximations are not reported but flagged in
    /// `inexact`, and the caller excludes nothing instead (a superset, reported).
    flip: bool,
    inexact: bool,
    /// The spelling of the private keywords.
    keys: PrivateKeys,
    /// The pointer and depth of the job being compiled.
    job_ptr: String,
    job_depth: usize,
}

type R<T> = Result<T, GrammarError>;

impl<'a> Compiler<'a> {
    pub(crate) fn new(
        root: &'a Value,
        opts: &'a JsonOptions,
        limits: &'a Limits,
        budget: &'a mut CompileBudget,
    ) -> Self {
        let mut exprs = ExprSet::new(limits);
        // As in `Grammar::build`: the store gets a third of the memory budget. It is dropped
        // with the compiler, before the grammar's own store is built.
        exprs.max_memory = limits.max_memory_bytes / 3;
        exprs.set_fuel(budget.left());
        exprs.set_weight(crate::regex::COMPILE_REGEX_WEIGHT);
        let draft = root
            .get("$schema")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let old_ref = ["draft-03", "draft-04", "draft-06", "draft-07"]
            .iter()
            .any(|d| draft.contains(d));
        let old_id = ["draft-03", "draft-04"].iter().any(|d| draft.contains(d));
        let before_7 = ["draft-03", "draft-04", "draft-06"]
            .iter()
            .any(|d| draft.contains(d));
        let mut docs = vec![root];
        docs.extend(opts.documents.iter().map(|(_, d)| d));
        let (keys, scanned) = PrivateKeys::free_in(&docs);
        let _ = exprs.spend_fuel(scanned);
        Compiler {
            root,
            opts,
            limits,
            ir: GrammarIr::default(),
            report: CoverageReport::default(),
            reported: BTreeMap::new(),
            lex_cache: BTreeMap::new(),
            ref_nts: BTreeMap::new(),
            work: Vec::new(),
            resources: Vec::new(),
            anchors: Vec::new(),
            any_nt: None,
            nothing_nt: None,
            string_lex: None,
            punct: None,
            old_ref,
            old_id,
            before_7,
            memo: BTreeMap::new(),
            size: 0,
            exprs,
            budget,
            flip: false,
            inexact: false,
            keys,
            job_ptr: String::new(),
            job_depth: 0,
        }
    }

    pub(crate) fn run(mut self) -> R<(GrammarIr, CoverageReport)> {
        let out = self.run_work();
        self.budget.settle(self.exprs.fuel_left());
        let report = core::mem::take(&mut self.report);
        let ir = core::mem::take(&mut self.ir);
        out.map(|()| (ir, report))
            .map_err(crate::limits::compile_fuel_error)
    }

    fn run_work(&mut self) -> R<()> {
        self.spend(0)?;
        self.collect_ids()?;
        let start = self.ir.add_nonterminal("start", None);
        self.ir.start = start;
        let root_base = self
            .resources
            .first()
            .map(|r| r.2.clone())
            .unwrap_or_default();
        self.ref_nts.insert(String::new(), start);
        let root = self.root;
        self.work.push(Job {
            nt: start,
            src: Src::At(root),
            ptr: String::new(),
            base: root_base,
            depth: 0,
        });
        while let Some(job) = self.work.pop() {
            // A job's clones are paid where they are made (an owned job's schema when it
            // was queued).
            self.spend(1)?;
            self.job_ptr.clone_from(&job.ptr);
            self.job_depth = job.depth;
            let inner = match &job.src {
                Src::At(v) => self.schema(v, &job.ptr, &job.base)?,
                Src::Owned(v) => self.schema(v, &job.ptr, &job.base)?,
            };
            self.rule(job.nt, vec![IrSymbol::Nonterminal(inner)])?;
        }
        skip_aliases(&mut self.ir);
        Ok(())
    }

    /// [`Self::sub`] for a schema the compiler just built (moved into the job, not cloned).
    fn sub_owned(&mut self, s: Value, ptr: &str, base: &str) -> R<u32> {
        self.queue(SubSrc::Owned(s), ptr, base)
    }

    /// The nonterminal of subschema `s` found at `ptr`: queued for compilation (once per
    /// location, or once per text for a schema the compiler built), never compiled here.
    fn sub(&mut self, s: &Value, ptr: &str, base: &str) -> R<u32> {
        self.queue(SubSrc::Borrowed(s), ptr, base)
    }

    fn queue(&mut self, src: SubSrc<'_>, ptr: &str, base: &str) -> R<u32> {
        let s: &Value = match &src {
            SubSrc::Borrowed(v) => v,
            SubSrc::Owned(v) => v,
        };
        match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => return self.nothing(),
            _ => {}
        }
        self.spend(1 + ptr.len() as u64 / 16)?;
        let located = match &src {
            SubSrc::Borrowed(_) => self.lookup(ptr).filter(|v| core::ptr::eq(*v, s)),
            SubSrc::Owned(_) => None,
        };
        // The memo key (kept), the job's pointer and base (kept while queued).
        self.alloc(2 * (base.len() + ptr.len() + 24) + 2 * size_of::<Job<'_>>())?;
        let key = match located {
            Some(_) => format!("L{}:{base}{ptr}", base.len()),
            None => {
                // The text is not known before it is printed: charged after, as its
                // printing costs about as much as the value itself (already charged).
                let text = s.to_string();
                self.spend(text.len() as u64 / 8)?;
                self.alloc(3 * text.len())?;
                format!("O{}:{base}{text}", base.len())
            }
        };
        if let Some(&nt) = self.memo.get(&key) {
            return Ok(nt);
        }
        // Rewrites of the job's own schema stay at its depth; subschemas go one deeper.
        let depth = if ptr == self.job_ptr {
            self.job_depth
        } else {
            self.job_depth + 1
        };
        if depth > self.limits.max_nesting_depth {
            return Err(self.limit_error(LimitKind::NestingDepth, ptr));
        }
        let nt = self.nt(&format!("schema:{ptr}"))?;
        self.memo.insert(key, nt);
        let src = match (located, src) {
            (Some(v), _) => Src::At(v),
            (None, SubSrc::Owned(v)) => Src::Owned(v),
            (None, SubSrc::Borrowed(v)) => {
                self.spend_on(v)?;
                Src::Owned(v.clone())
            }
        };
        self.work.push(Job {
            nt,
            src,
            ptr: ptr.to_string(),
            base: base.to_string(),
            depth,
        });
        Ok(nt)
    }

    /// Pay `units` of compile work.
    fn spend(&mut self, units: u64) -> R<()> {
        self.exprs
            .spend_fuel(units)
            .map_err(|_| self.limit_error(LimitKind::CompileFuel, ""))
    }

    /// Pay for cloning (or walking) `v`: its node count, and its estimated bytes
    /// ([`weigh`]) charged to the front end's memory (a walk is charged as a copy).
    fn spend_on(&mut self, v: &Value) -> R<()> {
        self.spend_on_times(v, 1)
    }

    /// Pay for walking `v` (its node count) without copying it.
    fn spend_walk(&mut self, v: &Value) -> R<()> {
        let left = self.exprs.fuel_left();
        let w = weigh(v, left).0;
        self.spend(w)
    }

    /// [`Self::spend_on`] for `times` copies of `v`.
    fn spend_on_times(&mut self, v: &Value, times: usize) -> R<()> {
        let left = self.exprs.fuel_left();
        let (w, bytes) = weigh(v, left);
        self.spend(w.saturating_mul(times as u64))?;
        self.alloc(bytes.saturating_mul(times))
    }

    /// Pay for cloning the schema object `m`.
    fn spend_on_map(&mut self, m: &Map<String, Value>) -> R<()> {
        self.spend(NODE_COST)?;
        self.alloc(OBJECT_BYTES)?;
        for (k, v) in m {
            self.alloc(MEMBER_BYTES + k.len())?;
            self.spend_on(v)?;
        }
        Ok(())
    }

    /// Charge `bytes` the front end is about to allocate to the budget's front-end share
    /// (`CompileBudget::charge`); beyond it, `Limit(Memory)`.
    fn alloc(&mut self, bytes: usize) -> R<()> {
        if self.budget.charge(bytes).is_err() {
            return Err(self.limit_error(LimitKind::Memory, &self.job_ptr));
        }
        Ok(())
    }

    // ---- errors, reports, budget -------------------------------------------------------

    fn error(&self, kind: GrammarErrorKind, ptr: &str, msg: &str) -> GrammarError {
        let ptr = if ptr.is_empty() { "#" } else { ptr };
        GrammarError::at_pointer(kind, ptr, msg)
    }

    fn limit_error(&self, kind: LimitKind, ptr: &str) -> GrammarError {
        let ptr = if ptr.is_empty() { "#" } else { ptr };
        GrammarError::limit(kind).with_pointer(ptr)
    }

    fn note(&mut self, ptr: &str, keyword: &str, status: CoverageStatus) -> R<()> {
        let strict_ok = matches!(
            status,
            CoverageStatus::Unknown | CoverageStatus::Spelling { .. }
        );
        if self.opts.strict && !strict_ok {
            return Err(GrammarError::at_pointer(
                GrammarErrorKind::Unsupported,
                format!("{ptr}/{keyword}"),
                format!("{status} (strict mode)"),
            ));
        }
        // A keyword may err both ways (a dropped divisor, spellings kept out): one entry each.
        let subset = matches!(
            status,
            CoverageStatus::Approximated {
                direction: Direction::Subset,
                ..
            } | CoverageStatus::Spelling { .. }
        );
        let key = (
            ptr.to_string(),
            format!("{keyword}{}", if subset { "/-" } else { "" }),
        );
        self.alloc(
            3 * (ptr.len() + keyword.len() + 8)
                + 2 * size_of::<CoverageEntry>()
                + 4 * size_of::<String>()
                + 64,
        )?;
        if self.reported.insert(key, ()).is_none() {
            self.report.entries.push(CoverageEntry {
                pointer: ptr.to_string(),
                keyword: keyword.to_string(),
                status,
            });
        }
        Ok(())
    }

    /// Report a spelling restriction (exact over values; see [`CoverageStatus::Spelling`]).
    fn spelling(&mut self, ptr: &str, keyword: &str, why: &str) -> R<()> {
        let why = why.to_string();
        self.note_unless_flipped(ptr, keyword, CoverageStatus::Spelling { why })
    }

    fn approx(&mut self, ptr: &str, keyword: &str, direction: Direction, why: &str) -> R<()> {
        let why = why.to_string();
        self.note_unless_flipped(
            ptr,
            keyword,
            CoverageStatus::Approximated { direction, why },
        )
    }

    /// [`Self::note`], except inside a complemented regex, where the caller excludes nothing
    /// instead (flagged in `inexact`).
    fn note_unless_flipped(&mut self, ptr: &str, keyword: &str, status: CoverageStatus) -> R<()> {
        if self.flip {
            self.inexact = true;
            return Ok(());
        }
        self.note(ptr, keyword, status)
    }

    fn charge(&mut self, n: usize, ptr: &str) -> R<()> {
        self.spend(n as u64)?;
        self.size = self.size.saturating_add(n);
        if self.size > self.limits.max_grammar_size {
            return Err(self.limit_error(LimitKind::GrammarSize, ptr));
        }
        Ok(())
    }

    fn rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>) -> R<()> {
        self.charge(rhs.len() + 1, "")?;
        self.alloc(2 * size_of::<crate::ir::IrRule>() + rhs.len() * size_of::<IrSymbol>())?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    /// A new nonterminal. Its name (for messages) is cut to [`MAX_NAME`] bytes, keeping both
    /// ends: names carry JSON pointers, and a pointer per nonterminal would make the names
    /// of a deep schema quadratic in its depth.
    fn nt(&mut self, name: &str) -> R<u32> {
        self.charge(1, "")?;
        self.alloc(2 * size_of::<crate::ir::IrNonterminal>() + name.len().min(2 * MAX_NAME))?;
        Ok(self.ir.add_nonterminal(short_name(name), None))
    }

    fn lexeme(&mut self, name: &str, regex: RegexAst) -> R<u32> {
        let (key, nodes) = regex.structural_hash();
        self.spend(1 + nodes as u64)?;
        if let Some(ids) = self.lex_cache.get(&key) {
            for &id in ids {
                if self
                    .ir
                    .lexemes
                    .get(id as usize)
                    .is_some_and(|l| l.regex == regex)
                {
                    return Ok(id);
                }
            }
        }
        self.charge(1 + nodes, "")?;
        // The tree is kept by the IR (its bytes were allocated by the caller, charged here
        // at the latest) and the cache entry.
        self.alloc(
            regex_bytes(&regex) + name.len() + 2 * size_of::<IrLexeme>() + 4 * size_of::<u64>(),
        )?;
        let id = self.ir.add_lexeme(IrLexeme {
            name: name.to_string(),
            regex,
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        });
        self.lex_cache.entry(key).or_default().push(id);
        Ok(id)
    }

    // ---- shared pieces -----------------------------------------------------------------

    fn punct(&mut self) -> R<Punct> {
        if let Some(p) = self.punct {
            return Ok(p);
        }
        let ws_char = || RegexAst::Pattern("[ \\t\\n\\r]".into(), Default::default());
        // The regex of one gap; `None` = no whitespace.
        let gap = match &self.opts.whitespace {
            Whitespace::Compact | Whitespace::Python => None,
            Whitespace::Flexible { max } => {
                Some(RegexAst::Repeat(Box::new(ws_char()), 0, Some(*max)))
            }
            // A sequence, not a union of the two runs: after a line break only the
            // indentation is left, so the states of the two runs never combine.
            Whitespace::Pretty { max_indent } => {
                let blank = || RegexAst::Pattern("[ \\t]".into(), Default::default());
                Some(RegexAst::Concat(vec![
                    RegexAst::Repeat(Box::new(blank()), 0, Some(PRETTY_INLINE)),
                    RegexAst::Repeat(
                        Box::new(RegexAst::Concat(vec![
                            RegexAst::Pattern("\\r?\\n".into(), Default::default()),
                            RegexAst::Repeat(Box::new(blank()), 0, Some(*max_indent)),
                        ])),
                        0,
                        Some(1),
                    ),
                ]))
            }
            Whitespace::Unbounded => Some(RegexAst::Repeat(Box::new(ws_char()), 0, None)),
            Whitespace::Pattern(p) => Some(RegexAst::Repeat(
                Box::new(self.option_regex(p, "whitespace_pattern")?),
                0,
                Some(1),
            )),
        };
        let item = self.option_regex(&self.opts.item_separator.clone(), "item_separator")?;
        let key = self.option_regex(&self.opts.key_separator.clone(), "key_separator")?;
        let python = self.opts.whitespace == Whitespace::Python;
        let mk = |c: RegexAst, before: bool, after: bool, sep: bool| -> RegexAst {
            let mut parts = Vec::new();
            if before {
                parts.extend(gap.clone());
            }
            parts.push(c);
            if sep && python {
                parts.push(RegexAst::literal(" "));
            }
            if after {
                parts.extend(gap.clone());
            }
            if parts.len() == 1 {
                parts.pop().unwrap_or(RegexAst::Nothing)
            } else {
                RegexAst::Concat(parts)
            }
        };
        let lit = RegexAst::literal;
        let p = Punct {
            lbrace: self.lexeme("'{'", mk(lit("{"), false, true, false))?,
            rbrace: self.lexeme("'}'", mk(lit("}"), true, false, false))?,
            lbrack: self.lexeme("'['", mk(lit("["), false, true, false))?,
            rbrack: self.lexeme("']'", mk(lit("]"), true, false, false))?,
            comma: self.lexeme("','", mk(item, true, true, true))?,
            colon: self.lexeme("':'", mk(key, true, true, true))?,
        };
        self.punct = Some(p);
        Ok(p)
    }

    /// A regex of [`JsonOptions`] (`item_separator`, `key_separator`, `whitespace_pattern`),
    /// checked here so that its error names the option. The literal separators stay literals.
    fn option_regex(&mut self, p: &str, option: &str) -> R<RegexAst> {
        if p == "," || p == ":" {
            return Ok(RegexAst::literal(p));
        }
        let r = RegexAst::Pattern(p.into(), Default::default());
        self.exprs.compile(&r).map_err(|e| {
            GrammarError::new(
                GrammarErrorKind::InvalidRegex,
                format!("JSON option {option} {p:?}: {}", e.message),
            )
        })?;
        Ok(r)
    }

    /// One JSON string character: every spelling, or LLGuidance's.
    fn str_char(&self) -> &'static str {
        if self.opts.llguidance_spellings {
            STR_CHAR_LLG
        } else {
            STR_CHAR
        }
    }

    fn string_any(&self) -> RegexAst {
        RegexAst::Repeat(
            Box::new(RegexAst::Pattern(
                self.str_char().into(),
                Default::default(),
            )),
            0,
            None,
        )
    }

    fn quoted(body: RegexAst) -> RegexAst {
        RegexAst::Concat(vec![RegexAst::literal("\""), body, RegexAst::literal("\"")])
    }

    fn string_lexeme(&mut self) -> R<u32> {
        if let Some(l) = self.string_lex {
            return Ok(l);
        }
        let body = self.string_any();
        let l = self.lexeme("STRING", Self::quoted(body))?;
        self.string_lex = Some(l);
        Ok(l)
    }

    fn nothing(&mut self) -> R<u32> {
        if let Some(n) = self.nothing_nt {
            return Ok(n);
        }
        let n = self.nt("nothing")?;
        let l = self.lexeme("NOTHING", RegexAst::Nothing)?;
        self.rule(n, vec![IrSymbol::Lexeme(l)])?;
        self.nothing_nt = Some(n);
        Ok(n)
    }

    /// Any JSON value.
    fn any(&mut self) -> R<u32> {
        if let Some(n) = self.any_nt {
            return Ok(n);
        }
        let p = self.punct()?;
        let any = self.nt("any")?;
        self.any_nt = Some(any);
        let s = self.string_lexeme()?;
        let num = self.lexeme(
            "NUMBER",
            RegexAst::Pattern(NUMBER.into(), Default::default()),
        )?;
        let lit = self.lexeme(
            "true|false|null",
            RegexAst::Or(vec![
                RegexAst::literal("true"),
                RegexAst::literal("false"),
                RegexAst::literal("null"),
            ]),
        )?;
        for l in [s, num, lit] {
            self.rule(any, vec![IrSymbol::Lexeme(l)])?;
        }
        let members = self.nt("any_members")?;
        let member = self.nt("any_member")?;
        self.rule(
            member,
            vec![
                IrSymbol::Lexeme(s),
                IrSymbol::Lexeme(p.colon),
                IrSymbol::Nonterminal(any),
            ],
        )?;
        self.rule(members, vec![IrSymbol::Nonterminal(member)])?;
        self.rule(
            members,
            vec![
                IrSymbol::Nonterminal(members),
                IrSymbol::Lexeme(p.comma),
                IrSymbol::Nonterminal(member),
            ],
        )?;
        self.rule(
            any,
            vec![IrSymbol::Lexeme(p.lbrace), IrSymbol::Lexeme(p.rbrace)],
        )?;
        self.rule(
            any,
            vec![
                IrSymbol::Lexeme(p.lbrace),
                IrSymbol::Nonterminal(members),
                IrSymbol::Lexeme(p.rbrace),
            ],
        )?;
        let items = self.nt("any_items")?;
        self.rule(items, vec![IrSymbol::Nonterminal(any)])?;
        self.rule(
            items,
            vec![
                IrSymbol::Nonterminal(items),
                IrSymbol::Lexeme(p.comma),
                IrSymbol::Nonterminal(any),
            ],
        )?;
        self.rule(
            any,
            vec![IrSymbol::Lexeme(p.lbrack), IrSymbol::Lexeme(p.rbrack)],
        )?;
        self.rule(
            any,
            vec![
                IrSymbol::Lexeme(p.lbrack),
                IrSymbol::Nonterminal(items),
                IrSymbol::Lexeme(p.rbrack),
            ],
        )?;
        Ok(any)
    }

    // ---- $id / $anchor / $ref ----------------------------------------------------------

    fn collect_ids(&mut self) -> R<()> {
        // Other documents first on the stack, so the root is walked (and registered) first.
        let mut stack: Vec<(&'a Value, String, String)> = Vec::new();
        let opts: &'a JsonOptions = self.opts;
        for (i, (uri, doc)) in opts.documents.iter().enumerate().rev() {
            let base = uri.split('#').next().unwrap_or("").to_string();
            stack.push((doc, format!("@{i}"), base));
        }
        stack.push((self.root, String::new(), String::new()));
        let mut visited = 0usize;
        while let Some((v, ptr, base)) = stack.pop() {
            visited += 1;
            self.spend(1 + ptr.len() as u64 / 16)?;
            // Its children's pointers and bases (pushed below), and its resource or anchor.
            if let Value::Object(m) = v {
                let n = m.len()
                    + m.values()
                        .map(|x| x.as_array().map_or(0, Vec::len))
                        .sum::<usize>();
                self.alloc(
                    n.saturating_mul(
                        2 * (ptr.len() + base.len() + 48) + size_of::<(&Value, String, String)>(),
                    )
                    .saturating_add(4 * (ptr.len() + base.len() + 64)),
                )?;
            }
            if visited > self.limits.max_grammar_size {
                return Err(self.limit_error(LimitKind::GrammarSize, &ptr));
            }
            let Value::Object(m) = v else { continue };
            let mut base = base;
            let id = self.id_of(m);
            if let Some(id) = id {
                if let Some(anchor) = id.strip_prefix('#') {
                    self.anchors.push((format!("{base}#{anchor}"), ptr.clone()));
                } else {
                    let outer = base;
                    if ptr.starts_with('@') && !ptr.contains('/') && !outer.is_empty() {
                        // A document is found by the URI it was given under too.
                        self.resources
                            .push((outer.clone(), ptr.clone(), outer.clone()));
                    }
                    base = join_uri(&outer, id);
                    base = base.split('#').next().unwrap_or("").to_string();
                    self.resources.push((base.clone(), ptr.clone(), outer));
                }
            } else if ptr.is_empty() || (ptr.starts_with('@') && !ptr.contains('/')) {
                self.resources
                    .push((base.clone(), ptr.clone(), base.clone()));
            }
            for k in ["$anchor", "$dynamicAnchor"] {
                if let Some(a) = m.get(k).and_then(Value::as_str) {
                    self.anchors.push((format!("{base}#{a}"), ptr.clone()));
                }
            }
            for (k, sub) in m {
                match k.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies" => {
                        if let Value::Object(mm) = sub {
                            let p = child(&ptr, k);
                            for (kk, s) in mm {
                                stack.push((s, child(&p, kk), base.clone()));
                            }
                        }
                    }
                    "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match sub {
                        Value::Array(a) => {
                            let p = child(&ptr, k);
                            for (i, s) in a.iter().enumerate() {
                                stack.push((s, format!("{p}/{i}"), base.clone()));
                            }
                        }
                        _ => stack.push((sub, child(&ptr, k), base.clone())),
                    },
                    "additionalProperties"
                    | "additionalItems"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedItems"
                    | "unevaluatedProperties" => {
                        stack.push((sub, child(&ptr, k), base.clone()));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The schema at an internal pointer: a JSON pointer into the root, or `@i` followed
    /// by a JSON pointer into `opts.documents[i]`.
    fn lookup(&self, p: &str) -> Option<&'a Value> {
        let Some(rest) = p.strip_prefix('@') else {
            return self.root.pointer(p);
        };
        let (index, inner) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let doc = &self.opts.documents.get(index.parse::<usize>().ok()?)?.1;
        doc.pointer(inner)
    }

    fn id_of<'m>(&self, m: &'m Map<String, Value>) -> Option<&'m str> {
        if self.old_ref && m.contains_key("$ref") {
            // Draft 4–7: `$ref` makes every sibling, `$id` too, ignored.
            return None;
        }
        match m.get("$id").and_then(Value::as_str) {
            Some(id) => Some(id),
            None if self.old_id => m.get("id").and_then(Value::as_str),
            None => None,
        }
    }

    fn base_of(&self, m: &Map<String, Value>, base: &str) -> String {
        match self.id_of(m) {
            Some(id) if !id.starts_with('#') => {
                let b = join_uri(base, id);
                b.split('#').next().unwrap_or("").to_string()
            }
            _ => base.to_string(),
        }
    }

    /// Resolve a reference to (JSON pointer in the root document, base URI there).
    fn resolve(&mut self, r: &str, base: &str, ptr: &str) -> R<(String, String)> {
        let searched = self.resources.len() + self.anchors.len();
        self.spend(1 + searched as u64 + r.len() as u64 / 16)?;
        let (uri, frag) = match r.split_once('#') {
            Some((u, f)) => (u, f),
            None => (r, ""),
        };
        // The resource's location, its base, and the base outside it.
        let (res_ptr, res_base, outer) = if uri.is_empty() {
            let found = self.resources.iter().find(|(u, ..)| u == base);
            match found {
                Some((u, p, outer)) => (p.clone(), u.clone(), outer.clone()),
                None => (String::new(), base.to_string(), String::new()),
            }
        } else {
            let abs = join_uri(base, uri);
            let found = self.resources.iter().find(|(u, ..)| *u == abs).or_else(|| {
                self.resources
                    .iter()
                    .find(|(u, ..)| !u.is_empty() && (u.ends_with(&format!("/{uri}")) || u == uri))
            });
            match found {
                Some((u, p, outer)) => (p.clone(), u.clone(), outer.clone()),
                None => {
                    return Err(self.error(
                        GrammarErrorKind::Unsupported,
                        ptr,
                        &format!("remote reference {r:?} is not supported"),
                    ));
                }
            }
        };
        let frag = percent_decode(frag);
        if frag.is_empty() {
            // Opening the resource applies its `$id` to the base outside it.
            let outer = if outer.is_empty() { res_base } else { outer };
            return Ok((res_ptr, outer));
        }
        if frag.starts_with('/') {
            let inside = format!("{res_ptr}{frag}");
            if self.lookup(&inside).is_none() && self.lookup(&frag).is_some() {
                // Misplaced `$id`s are common: fall back to the document root.
                return Ok((frag, res_base));
            }
            let base = self.base_along(&res_ptr, &frag, res_base);
            return Ok((inside, base));
        }
        let want = format!("{res_base}#{frag}");
        if let Some((_, p)) = self.anchors.iter().find(|(a, _)| *a == want) {
            return Ok((p.clone(), res_base));
        }
        let suffix = format!("#{frag}");
        if let Some((_, p)) = self.anchors.iter().find(|(a, _)| a.ends_with(&suffix)) {
            return Ok((p.clone(), res_base));
        }
        Err(self.error(
            GrammarErrorKind::UndefinedSymbol,
            ptr,
            &format!("reference {r:?} not found"),
        ))
    }

    /// The base URI at `frag` (a JSON pointer) below the resource at `res_ptr`, whose base is
    /// `base`: the `$id`s of the objects passed on the way down apply (the target's own is
    /// applied where it is compiled).
    fn base_along(&self, res_ptr: &str, frag: &str, base: String) -> String {
        let Some(mut cur) = self.lookup(res_ptr) else {
            return base;
        };
        let mut base = base;
        let tokens: Vec<&str> = frag.split('/').skip(1).collect();
        for (i, t) in tokens.iter().enumerate() {
            if i > 0
                && let Value::Object(m) = cur
            {
                base = self.base_of(m, &base);
            }
            let t = t.replace("~1", "/").replace("~0", "~");
            let next = match cur {
                Value::Object(m) => m.get(&t),
                Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            match next {
                Some(v) => cur = v,
                None => break,
            }
        }
        base
    }

    fn ref_target(&mut self, r: &str, base: &str, ptr: &str) -> R<(&'a Value, String, String)> {
        let (p, b) = self.resolve(r, base, ptr)?;
        match self.lookup(&p) {
            Some(v) => Ok((v, p, b)),
            None => Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            )),
        }
    }

    fn ref_nt(&mut self, r: &str, base: &str, ptr: &str) -> R<u32> {
        let (p, b) = self.resolve(r, base, ptr)?;
        if let Some(&nt) = self.ref_nts.get(&p) {
            return Ok(nt);
        }
        if self.lookup(&p).is_none() {
            return Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            ));
        }
        let Some(target) = self.lookup(&p) else {
            return Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            ));
        };
        let nt = self.nt(&format!("ref:{p}"))?;
        self.ref_nts.insert(p.clone(), nt);
        self.work.push(Job {
            nt,
            src: Src::At(target),
            ptr: p,
            base: b,
            depth: 0,
        });
        Ok(nt)
    }

    // ---- flattening: $ref with siblings, allOf -----------------------------------------

    /// The schema with top-level `$ref` and `allOf` merged in: a post-order walk of the
    /// `$ref`/`allOf` tree on an explicit stack (each node's own keywords, then its `$ref`
    /// target and `allOf` members merged in order). A `$ref` back to a schema being
    /// flattened on the current path (a cycle with no structure in between) adds nothing.
    fn flatten<'v>(&mut self, s: &'v Value, ptr: &str, base: &str) -> R<Value>
    where
        'a: 'v,
    {
        let mut stack: Vec<FlatFrame<'v>> = Vec::new();
        let mut pending = Some((s, ptr.to_string(), base.to_string(), None));
        let mut result: Option<Value> = None;
        loop {
            if let Some((v, p, b, via)) = pending.take() {
                match self.flatten_open(v, p, b, via, &stack)? {
                    Opened::Done(x) => result = Some(x),
                    Opened::Frame(f) => stack.push(f),
                }
            }
            let Some(top) = stack.last_mut() else {
                return Ok(result.unwrap_or(Value::Bool(true)));
            };
            if let Some(x) = result.take() {
                let acc = core::mem::replace(&mut top.acc, Value::Bool(true));
                top.acc = self.merge(acc, x, &top.ptr)?;
            }
            if let Some(kid) = top.kids.pop() {
                pending = Some(kid);
            } else if let Some(f) = stack.pop() {
                result = Some(match f.acc {
                    Value::Object(am) => self.apply_unevaluated(am, &f.ptr, &f.base, 0)?,
                    acc => acc,
                });
            }
        }
    }

    /// One node of [`Self::flatten`]: a finished value, or a frame whose `$ref` target and
    /// `allOf` members are still to be merged into its own keywords.
    fn flatten_open<'v>(
        &mut self,
        v: &'v Value,
        ptr: String,
        base: String,
        via: Option<String>,
        path: &[FlatFrame<'v>],
    ) -> R<Opened<'v>>
    where
        'a: 'v,
    {
        let (mut v, mut ptr, mut base, mut via) = (v, ptr, base, via);
        let mut hops = 0usize;
        loop {
            self.spend(1)?;
            let Value::Object(m) = v else {
                self.spend_on(v)?;
                return Ok(Opened::Done(v.clone()));
            };
            base = self.base_of(m, &base);
            if let Some(r) = m.get("$ref").and_then(Value::as_str)
                && self.old_ref
            {
                // Draft 4–7: the target replaces the schema (a chain is followed in place).
                let (t, tp, tb) = self.ref_target(r, &base, &ptr)?;
                hops += 1;
                if hops > self.resources.len() + self.anchors.len() + 64
                    || path.iter().any(|f| f.via.as_deref() == Some(tp.as_str()))
                    || via.as_deref() == Some(tp.as_str())
                {
                    return Ok(Opened::Done(Value::Bool(true)));
                }
                (v, ptr, base, via) = (t, tp.clone(), tb, Some(tp));
                continue;
            }
            let mut acc = Map::new();
            for (k, x) in m {
                if k != "$ref" && k != "allOf" {
                    self.spend_on(x)?;
                    acc.insert(k.clone(), x.clone());
                }
            }
            let acc = self.rewrite_conditionals(acc, &ptr)?;
            // Popped from the end: the `$ref` target first, then `allOf` in order.
            let mut kids = Vec::new();
            if let Some(Value::Array(subs)) = m.get("allOf") {
                self.alloc(subs.len().saturating_mul(
                    2 * (ptr.len() + base.len() + 16) + size_of::<(&Value, String, String)>(),
                ))?;
                for (i, sub) in subs.iter().enumerate().rev() {
                    kids.push((sub, format!("{ptr}/allOf/{i}"), base.clone(), None));
                }
            }
            if let Some(r) = m.get("$ref").and_then(Value::as_str) {
                let (t, tp, tb) = self.ref_target(r, &base, &ptr)?;
                let cycle = path.iter().any(|f| f.via.as_deref() == Some(tp.as_str()))
                    || via.as_deref() == Some(tp.as_str());
                if !cycle {
                    kids.push((t, tp.clone(), tb, Some(tp)));
                }
            }
            if kids.is_empty() {
                return Ok(Opened::Done(match acc {
                    Value::Object(am) => self.apply_unevaluated(am, &ptr, &base, 0)?,
                    acc => acc,
                }));
            }
            return Ok(Opened::Frame(FlatFrame {
                acc,
                kids,
                ptr,
                base,
                via,
            }));
        }
    }

    fn all_of(a: Value, b: Value) -> Value {
        if a == Value::Bool(true) {
            return b;
        }
        if b == Value::Bool(true) || a == b {
            return a;
        }
        // Repeated merges append to one `allOf` instead of nesting them (the depth of the
        // values built stays that of their parts).
        if let Value::Object(mut am) = a {
            if am.len() == 1
                && let Some(Value::Array(list)) = am.get_mut("allOf")
            {
                list.push(b);
                return Value::Object(am);
            }
            let mut m = Map::new();
            m.insert("allOf".into(), Value::Array(vec![Value::Object(am), b]));
            return Value::Object(m);
        }
        let mut m = Map::new();
        m.insert("allOf".into(), Value::Array(vec![a, b]));
        Value::Object(m)
    }

    /// Intersection of two flattened schemas.
    fn merge(&mut self, a: Value, b: Value, ptr: &str) -> R<Value> {
        // Merging walks, clones and drops its operands: paid by their node counts. Their
        // bytes were charged where they were built; merging moves them, and what it copies
        // is charged below.
        self.spend_walk(&a)?;
        self.spend_walk(&b)?;
        // Constructed schemas (negations, rewrites) may still hold a `$ref` or `allOf`.
        let unflat = |v: &Value| matches!(v, Value::Object(m) if m.contains_key("$ref") || m.contains_key("allOf"));
        let a = if unflat(&a) {
            self.flatten(&a, ptr, "")?
        } else {
            a
        };
        let b = if unflat(&b) {
            self.flatten(&b, ptr, "")?
        } else {
            b
        };
        let (mut am, mut bm) = match (a, b) {
            (Value::Bool(false), _) | (_, Value::Bool(false)) => return Ok(Value::Bool(false)),
            (Value::Bool(true), x) | (x, Value::Bool(true)) => return Ok(x),
            (Value::Object(am), Value::Object(bm)) => (am, bm),
            (x, _) => return Ok(x),
        };
        self.spend((1 + am.len() + bm.len()) as u64)?;
        // Each of `b`'s keywords moved into `a`, and per keyword of both a new
        // `allOf`/`anyOf` wrapper or merged list.
        let both = bm.keys().filter(|k| am.contains_key(*k)).count();
        self.alloc(
            bm.len().saturating_mul(MEMBER_BYTES)
                + both.saturating_mul(OBJECT_BYTES + MEMBER_BYTES + 2 * ELEMENT_BYTES),
        )?;
        const_to_enum(&mut am);
        const_to_enum(&mut bm);
        // `merge_positions` copies each side's schema for later items into every tuple
        // position of the other side.
        let tuple_len = |m: &Map<String, Value>| match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(p)), _) | (None, Some(Value::Array(p))) => p.len(),
            _ => 0,
        };
        let n = tuple_len(&am).max(tuple_len(&bm));
        if n > 0 {
            for m in [&am, &bm] {
                let rest = m.get("items").filter(|v| !v.is_array());
                if let Some(r) = rest.or_else(|| m.get("additionalItems")) {
                    self.spend_on_times(r, n)?;
                }
            }
            self.alloc(n.saturating_mul(2 * ELEMENT_BYTES + OBJECT_BYTES + MEMBER_BYTES))?;
        }
        Self::merge_positions(&mut am, &mut bm);
        // `additionalProperties` of one side constrains the other side's extra properties.
        // Only then are both sides' `properties` copied (and charged).
        let restricts = |m: &Map<String, Value>| matches!(m.get("additionalProperties"), Some(v) if *v != Value::Bool(true));
        let (b_extra, a_extra) = if restricts(&am) || restricts(&bm) {
            for m in [&am, &bm] {
                for k in ["properties", "additionalProperties"] {
                    if let Some(v) = m.get(k) {
                        let bytes = weigh(v, u64::MAX).1;
                        self.alloc(bytes)?;
                    }
                }
            }
            let a_add = am.get("additionalProperties").cloned();
            let b_add = bm.get("additionalProperties").cloned();
            let a_props = am.get("properties").cloned();
            let b_props = bm.get("properties").cloned();
            let a_pat = am.get("patternProperties");
            let b_pat = bm.get("patternProperties");
            (
                self.cross_additional(&b_props, &a_props, &a_add, a_pat, ptr)?,
                self.cross_additional(&a_props, &b_props, &b_add, b_pat, ptr)?,
            )
        } else {
            (Map::new(), Map::new())
        };
        if let Some(Value::Object(pm)) = am.get_mut("properties") {
            for (k, v) in a_extra {
                pm.insert(k, v);
            }
        }
        self.merge_contains(&mut am, &mut bm);
        for (k, vb) in bm {
            let Some(va) = am.remove(&k) else {
                if k == "properties" {
                    let mut pm = match vb {
                        Value::Object(pm) => pm,
                        other => {
                            am.insert(k, other);
                            continue;
                        }
                    };
                    for (kk, v) in &b_extra {
                        pm.insert(kk.clone(), v.clone());
                    }
                    am.insert(k, Value::Object(pm));
                } else {
                    am.insert(k, vb);
                }
                continue;
            };
            let merged = self.merge_keyword(&k, va, vb, &b_extra, ptr)?;
            am.insert(k, merged);
        }
        Ok(Value::Object(am))
    }

    /// The `contains` conditions of both sides of an `allOf`, all kept: `b`'s condition
    /// (and the ones it already carries) join `a`'s list under `contains_more`. A
    /// `minContains`/`maxContains` without a `contains` beside it means nothing and is
    /// dropped, so it cannot attach to the other side's `contains`.
    fn merge_contains(&self, am: &mut Map<String, Value>, bm: &mut Map<String, Value>) {
        let (cf, more) = (&self.keys.contains_from, &self.keys.contains_more);
        for m in [&mut *am, &mut *bm] {
            if !m.contains_key("contains") {
                for k in ["minContains", "maxContains", cf.as_str(), more.as_str()] {
                    m.remove(k);
                }
            }
        }
        if !(am.contains_key("contains") && bm.contains_key("contains")) {
            return;
        }
        let group_keys = ["contains", "minContains", "maxContains", cf.as_str()];
        let ga: Map<String, Value> = group_keys
            .iter()
            .filter_map(|k| am.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect();
        let gb: Map<String, Value> = group_keys
            .iter()
            .filter_map(|k| bm.remove(*k).map(|v| (k.to_string(), v)))
            .collect();
        let listed = |m: &mut Map<String, Value>| match m.remove(more.as_str()) {
            Some(Value::Array(a)) => a,
            _ => Vec::new(),
        };
        let mut list = listed(am);
        let ga = Value::Object(ga);
        for g in core::iter::once(Value::Object(gb)).chain(listed(bm)) {
            if g != ga && !list.contains(&g) {
                list.push(g);
            }
        }
        if !list.is_empty() {
            am.insert(more.clone(), Value::Array(list));
        }
    }

    /// The `contains` conditions of a flattened array schema that constrain something
    /// (`minContains: 0` without `maxContains` does not): its own, then `contains_more`'s.
    fn contains_groups(&self, m: &Map<String, Value>) -> Vec<ContainsGroup> {
        let group = |g: &Map<String, Value>| {
            let schema = g.get("contains")?.clone();
            let min = g.get("minContains").and_then(as_count).unwrap_or(1);
            let max = g.get("maxContains").and_then(as_count);
            let from = g
                .get(self.keys.contains_from.as_str())
                .and_then(as_count)
                .unwrap_or(0);
            (min > 0 || max.is_some()).then_some(ContainsGroup {
                schema,
                min,
                max,
                from,
            })
        };
        let mut out: Vec<ContainsGroup> = group(m).into_iter().collect();
        if let Some(Value::Array(list)) = m.get(self.keys.contains_more.as_str()) {
            for g in list {
                if let Value::Object(g) = g
                    && let Some(g) = group(g)
                    && !out.contains(&g)
                {
                    out.push(g);
                }
            }
        }
        out
    }

    /// Array item schemas by position: each side's tuple part (`prefixItems`, or draft-7
    /// `items` as an array) and the schema of the items after it are combined position by
    /// position into `am` (a side's list `items` applies to the other side's tuple
    /// positions too; `additionalItems` without a tuple `items` applies to nothing).
    fn merge_positions(am: &mut Map<String, Value>, bm: &mut Map<String, Value>) {
        let tuple = |m: &Map<String, Value>| {
            m.contains_key("prefixItems") || matches!(m.get("items"), Some(Value::Array(_)))
        };
        if !tuple(am) && !tuple(bm) {
            for m in [&mut *am, &mut *bm] {
                m.remove("additionalItems");
            }
            return;
        }
        let new_style = am.contains_key("prefixItems") || bm.contains_key("prefixItems");
        let split = |m: &mut Map<String, Value>| -> (Vec<Value>, Value) {
            let add = m.remove("additionalItems");
            match (m.remove("prefixItems"), m.remove("items")) {
                (Some(Value::Array(p)), items) => (p, items.unwrap_or(Value::Bool(true))),
                (None, Some(Value::Array(p))) => (p, add.unwrap_or(Value::Bool(true))),
                (_, items) => (Vec::new(), items.unwrap_or(Value::Bool(true))),
            }
        };
        let explicit = |m: &Map<String, Value>| {
            matches!(m.get("items"), Some(v) if !v.is_array())
                || (m.contains_key("additionalItems")
                    && matches!(m.get("items"), Some(Value::Array(_))))
        };
        // An explicit `items: true` still evaluates every item (`unevaluatedItems`).
        let keep_rest = explicit(am) || explicit(bm);
        let (pa, ra) = split(am);
        let (pb, rb) = split(bm);
        let n = pa.len().max(pb.len());
        let prefix: Vec<Value> = (0..n)
            .map(|i| {
                let x = pa.get(i).cloned().unwrap_or_else(|| ra.clone());
                let y = pb.get(i).cloned().unwrap_or_else(|| rb.clone());
                Self::all_of(x, y)
            })
            .collect();
        let rest = Self::all_of(ra, rb);
        if new_style {
            am.insert("prefixItems".into(), Value::Array(prefix));
            if rest != Value::Bool(true) || keep_rest {
                am.insert("items".into(), rest);
            }
        } else {
            am.insert("items".into(), Value::Array(prefix));
            if rest != Value::Bool(true) || keep_rest {
                am.insert("additionalItems".into(), rest);
            }
        }
    }

    /// The properties of one side of an `allOf` that the other side's
    /// `additionalProperties` constrains: those it neither names nor matches by pattern.
    fn cross_additional(
        &mut self,
        props: &Option<Value>,
        other_props: &Option<Value>,
        add: &Option<Value>,
        other_patterns: Option<&Value>,
        ptr: &str,
    ) -> R<Map<String, Value>> {
        let mut extra = Map::new();
        let (Some(Value::Object(pm)), Some(add)) = (props, add) else {
            return Ok(extra);
        };
        if *add == Value::Bool(true) {
            return Ok(extra);
        }
        let mut pattern_keys = Vec::new();
        if let Some(Value::Object(pp)) = other_patterns {
            for pat in pp.keys() {
                match self.pattern(pat, ptr, "patternProperties")? {
                    Some(r) => {
                        pattern_keys.push(Self::quoted(RegexAst::And(vec![self.string_any(), r])))
                    }
                    None => pattern_keys.push(Self::quoted(self.string_any())),
                }
            }
        }
        for (k, v) in pm {
            if matches!(other_props, Some(Value::Object(o)) if o.contains_key(k)) {
                continue;
            }
            let lit = super::pydumps::string(k);
            let mut matched = false;
            for pk in &pattern_keys {
                if self.key_matches(&lit, pk)? {
                    matched = true;
                    break;
                }
            }
            if !matched {
                self.spend_on(v)?;
                self.spend_on(add)?;
                self.alloc(MEMBER_BYTES + k.len() + OBJECT_BYTES + 2 * ELEMENT_BYTES)?;
                extra.insert(k.clone(), Self::all_of(v.clone(), add.clone()));
            }
        }
        Ok(extra)
    }

    fn merge_keyword(
        &mut self,
        k: &str,
        va: Value,
        vb: Value,
        b_extra: &Map<String, Value>,
        ptr: &str,
    ) -> R<Value> {
        if va == vb && k != "properties" {
            return Ok(va);
        }
        let num = |v: &Value| v.as_f64();
        Ok(match k {
            "type" => {
                let set = |v: &Value| -> u8 {
                    match v {
                        Value::String(s) => type_bit(s).unwrap_or(0),
                        Value::Array(a) => a
                            .iter()
                            .filter_map(|x| x.as_str().and_then(type_bit))
                            .fold(0, |x, y| x | y),
                        _ => T_ALL,
                    }
                };
                let both = set(&va) & set(&vb);
                // Parsed names set `T_NUM` only together with `T_INT`.
                let names = negate::type_names(both);
                Value::Array(names)
            }
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                match (va, vb) {
                    (Value::Object(mut ma), Value::Object(mb)) => {
                        for (kk, v) in mb {
                            let v = if k == "properties" {
                                b_extra.get(&kk).cloned().unwrap_or(v)
                            } else {
                                v
                            };
                            let nv = match ma.remove(&kk) {
                                Some(old) => Self::all_of(old, v),
                                None => v,
                            };
                            ma.insert(kk, nv);
                        }
                        if k == "properties" {
                            for (kk, v) in b_extra {
                                if !ma.contains_key(kk) {
                                    ma.insert(kk.clone(), v.clone());
                                }
                            }
                        }
                        Value::Object(ma)
                    }
                    (va, _) => va,
                }
            }
            "required" => {
                let n = va.as_array().map_or(0, Vec::len) * vb.as_array().map_or(0, Vec::len);
                self.spend(n as u64)?;
                let mut out: Vec<Value> = va.as_array().cloned().unwrap_or_default();
                for x in vb.as_array().cloned().unwrap_or_default() {
                    if !out.contains(&x) {
                        out.push(x);
                    }
                }
                Value::Array(out)
            }
            "dependentRequired" | "dependencies" => match (va, vb) {
                (Value::Object(mut ma), Value::Object(mb)) => {
                    for (kk, v) in mb {
                        ma.entry(kk).or_insert(v);
                    }
                    Value::Object(ma)
                }
                (va, _) => va,
            },
            _ if k == self.keys.not_number || k == self.keys.not_string => {
                let mut out = va.as_array().cloned().unwrap_or_default();
                out.extend(vb.as_array().cloned().unwrap_or_default());
                Value::Array(out)
            }
            "additionalProperties"
            | "additionalItems"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "not" => {
                if k == "not" {
                    // Appended to one `anyOf` when merged again (no nesting).
                    match va {
                        Value::Object(mut ma)
                            if ma.len() == 1
                                && matches!(ma.get("anyOf"), Some(Value::Array(_))) =>
                        {
                            if let Some(Value::Array(list)) = ma.get_mut("anyOf") {
                                list.push(vb);
                            }
                            Value::Object(ma)
                        }
                        va => {
                            let mut m = Map::new();
                            m.insert("anyOf".into(), Value::Array(vec![va, vb]));
                            Value::Object(m)
                        }
                    }
                } else {
                    Self::all_of(va, vb)
                }
            }
            "items" | "prefixItems" => match (va, vb) {
                (Value::Array(a), Value::Array(b)) => {
                    let n = a.len().max(b.len());
                    let mut out = Vec::with_capacity(n);
                    for i in 0..n {
                        match (a.get(i), b.get(i)) {
                            (Some(x), Some(y)) => out.push(Self::all_of(x.clone(), y.clone())),
                            (Some(x), None) | (None, Some(x)) => out.push(x.clone()),
                            (None, None) => {}
                        }
                    }
                    Value::Array(out)
                }
                (Value::Array(a), _) | (_, Value::Array(a)) => {
                    self.approx(ptr, k, Direction::Superset, "tuple and list items merged")?;
                    Value::Array(a)
                }
                (va, vb) => Self::all_of(va, vb),
            },
            "enum" => {
                let n = va.as_array().map_or(0, Vec::len) * vb.as_array().map_or(0, Vec::len);
                self.spend(n as u64)?;
                let a = va.as_array().cloned().unwrap_or_default();
                let b = vb.as_array().cloned().unwrap_or_default();
                Value::Array(a.into_iter().filter(|x| b.contains(x)).collect())
            }
            "minimum" | "minLength" | "minItems" | "minProperties" | "exclusiveMinimum" => {
                match (num(&va), num(&vb)) {
                    (Some(x), Some(y)) => {
                        if x >= y {
                            va
                        } else {
                            vb
                        }
                    }
                    _ => {
                        self.approx(ptr, k, Direction::Superset, "could not merge bounds")?;
                        va
                    }
                }
            }
            "maximum" | "maxLength" | "maxItems" | "maxProperties" | "exclusiveMaximum" => {
                match (num(&va), num(&vb)) {
                    (Some(x), Some(y)) => {
                        if x <= y {
                            va
                        } else {
                            vb
                        }
                    }
                    _ => {
                        self.approx(ptr, k, Direction::Superset, "could not merge bounds")?;
                        va
                    }
                }
            }
            "pattern" => {
                let mut out = Vec::new();
                for v in [va, vb] {
                    match v {
                        Value::Array(a) => out.extend(a),
                        other => out.push(other),
                    }
                }
                Value::Array(out)
            }
            "multipleOf" => match (va.as_u64(), vb.as_u64()) {
                (Some(x), Some(y)) if x > 0 && y > 0 => {
                    let l = (x / gcd(x, y)).saturating_mul(y);
                    Value::from(l)
                }
                _ => {
                    self.approx(ptr, k, Direction::Superset, "two different multipleOf")?;
                    va
                }
            },
            "anyOf" | "oneOf" => match (va, vb) {
                (Value::Array(a), Value::Array(b)) if a.len() * b.len() <= MAX_BRANCH_PRODUCT => {
                    let mut out = Vec::with_capacity(a.len() * b.len());
                    // Every branch is cloned once per branch of the other side.
                    for x in &a {
                        self.spend_on_times(x, b.len())?;
                    }
                    for y in &b {
                        self.spend_on_times(y, a.len())?;
                    }
                    for x in &a {
                        for y in &b {
                            out.push(Self::all_of(x.clone(), y.clone()));
                        }
                    }
                    Value::Array(out)
                }
                (va, _) => {
                    self.approx(ptr, k, Direction::Superset, "too many combined branches")?;
                    va
                }
            },
            _ if is_annotation(k) => va,
            _ => {
                if is_handled(k) || is_unsupported(k) {
                    self.approx(
                        ptr,
                        k,
                        Direction::Superset,
                        "allOf with two different values; the first is kept",
                    )?;
                }
                va
            }
        })
    }

    // ---- schemas ------------------------------------------------------------------------

    /// The nonterminal of one queued subschema (only called from the work loop: everything
    /// below it reaches other subschemas through [`Self::sub`]).
    fn schema(&mut self, s: &Value, ptr: &str, base: &str) -> R<u32> {
        let m = match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => return self.nothing(),
            Value::Object(m) => m,
            _ => {
                return Err(self.error(
                    GrammarErrorKind::Syntax,
                    ptr,
                    "a schema must be an object or a boolean",
                ));
            }
        };
        let base = self.base_of(m, base);
        if let Some(r) = m.get("$ref") {
            let Some(r) = r.as_str() else {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "$ref must be a string"));
            };
            if self.old_ref || !has_validation(m, &["$ref"], &self.keys) {
                return self.ref_nt(r, &base, ptr);
            }
        }
        if m.contains_key("$ref") || m.contains_key("allOf") {
            // The job itself is memoized ([`Self::sub`]): recursive structures that repeat
            // `{"$ref": X, <siblings>}` or `{"allOf": [{"$ref": X}, ...]}` meet the same
            // memo entry again, so the recursion becomes a cycle of nonterminals.
            let flat = self.flatten(s, ptr, &base)?;
            return self.schema_flat(&flat, ptr, &base);
        }
        self.schema_flat(s, ptr, &base)
    }

    /// A schema without top-level `$ref`/`allOf`.
    fn schema_flat(&mut self, s: &Value, ptr: &str, base: &str) -> R<u32> {
        let m = match s {
            Value::Bool(true) => return self.any(),
            Value::Bool(false) => return self.nothing(),
            Value::Object(m) => m,
            _ => return self.nothing(),
        };
        if let Some(nt) = self.schema_rewrite(m, ptr, base)? {
            return Ok(nt);
        }
        if m.contains_key("anyOf") || m.contains_key("oneOf") {
            return self.schema_branches(m, ptr, base);
        }
        self.plain(m, ptr, base)
    }

    /// `anyOf`/`oneOf` with the sibling keywords merged into every branch (out of line to
    /// keep the recursive frame of [`Self::schema_flat`] small).
    #[inline(never)]
    fn schema_branches(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        for key in ["anyOf", "oneOf"] {
            let Some(branches) = m.get(key) else { continue };
            let Value::Array(branches) = branches else {
                return Err(self.error(
                    GrammarErrorKind::Syntax,
                    ptr,
                    &format!("{key} must be an array"),
                ));
            };
            self.spend_on_map(m)?;
            let mut rest = m.clone();
            rest.remove(key);
            let rest_empty = !has_validation(&rest, &[], &self.keys);
            let rewritten;
            let mut branches = branches;
            if key == "oneOf" && !self.one_of_disjoint(branches, &rest, base, ptr)? {
                if self.opts.coerce_one_of {
                    self.approx(
                        ptr,
                        "oneOf",
                        Direction::Superset,
                        "coerce_one_of: compiled as anyOf",
                    )?;
                } else {
                    // Default mode keeps big overlapping `oneOf`s as (reported) `anyOf`s: the
                    // exact form grows with the square of the branches and its negations can
                    // make masks expensive.
                    // Default mode also keeps `oneOf`s that reach `$ref`s: negating recursive
                    // definitions inlines them, which can grow without bound.
                    let most = if self.opts.strict {
                        MAX_ONE_OF_REWRITE
                    } else if branches.iter().any(|b| b.to_string().contains("\"$ref\"")) {
                        0
                    } else {
                        MAX_ONE_OF_REWRITE_DEFAULT
                    };
                    if branches.len() <= most {
                        // Each branch is copied once per branch.
                        for b in branches {
                            self.spend_on_times(b, branches.len())?;
                        }
                        rewritten = negate::exactly_one(branches);
                        branches = &rewritten;
                    } else {
                        self.approx(
                            ptr,
                            "oneOf",
                            Direction::Superset,
                            "branches not provably disjoint; compiled as anyOf",
                        )?;
                    }
                }
            }
            let nt = self.nt(&format!("{key}:{ptr}"))?;
            for (i, b) in branches.iter().enumerate() {
                let bp = format!("{ptr}/{key}/{i}");
                let inner = if rest_empty {
                    self.sub(b, &bp, base)?
                } else {
                    let fb = self.flatten(b, &bp, base)?;
                    self.spend((1 + rest.len()) as u64)?;
                    let merged = self.merge(Value::Object(rest.clone()), fb, &bp)?;
                    self.sub_owned(merged, &bp, base)?
                };
                self.rule(nt, vec![IrSymbol::Nonterminal(inner)])?;
            }
            return Ok(nt);
        }
        self.plain(m, ptr, base)
    }

    /// The rewrites of [`Self::schema_flat`] (conditionals, `unevaluated*`, `not`), out of
    /// line to keep the recursive frames small.
    #[inline(never)]
    fn schema_rewrite(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<Option<u32>> {
        if negate::CONDITIONAL_KEYS.iter().any(|k| m.contains_key(*k))
            || m.contains_key("unevaluatedProperties")
            || m.contains_key("unevaluatedItems")
            || m.contains_key("not")
        {
            self.spend_on_map(m)?;
        }
        if negate::CONDITIONAL_KEYS.iter().any(|k| m.contains_key(*k)) {
            let rewritten = self.rewrite_conditionals(m.clone(), ptr)?;
            return self.sub_owned(rewritten, ptr, base).map(Some);
        }
        if m.contains_key("unevaluatedProperties") || m.contains_key("unevaluatedItems") {
            let converted = self.apply_unevaluated(m.clone(), ptr, base, 0)?;
            return self.sub_owned(converted, ptr, base).map(Some);
        }
        if let Some(n) = m.get("not")
            && let Some(neg) = self.negate(n, &child(ptr, "not"), base)?
        {
            let mut rest = m.clone();
            rest.remove("not");
            let merged = self.merge(Value::Object(rest), neg, ptr)?;
            return self.sub_owned(merged, ptr, base).map(Some);
        }
        Ok(None)
    }

    /// Types and literal values a flattened branch can take, for disjointness proofs.
    fn branch_summary(
        &mut self,
        b: &Value,
        base: &str,
        ptr: &str,
    ) -> R<(u8, Option<Vec<Value>>, Value)> {
        let fb = self.flatten(b, ptr, base)?;
        let Value::Object(m) = &fb else {
            return Ok((if fb == Value::Bool(true) { T_ALL } else { 0 }, None, fb));
        };
        let mut types = match m.get("type") {
            Some(Value::String(s)) => type_bit(s).unwrap_or(T_ALL),
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().and_then(type_bit))
                .fold(0, |x, y| x | y),
            _ => T_ALL,
        };
        let mut values = None;
        if let Some(c) = m.get("const") {
            values = Some(vec![c.clone()]);
        } else if let Some(Value::Array(e)) = m.get("enum") {
            values = Some(e.clone());
        }
        if let Some(vs) = &values {
            types &= vs.iter().fold(0, |acc, v| acc | value_type(v));
        }
        if m.contains_key("anyOf") || m.contains_key("oneOf") {
            types = T_ALL;
        }
        Ok((types, values, fb))
    }

    /// Can we prove that no instance matches two of the `oneOf` branches?
    fn one_of_disjoint(
        &mut self,
        branches: &[Value],
        rest: &Map<String, Value>,
        base: &str,
        ptr: &str,
    ) -> R<bool> {
        let _ = rest;
        let mut sums = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            sums.push(self.branch_summary(b, base, &format!("{ptr}/oneOf/{i}"))?);
        }
        for i in 0..sums.len() {
            for j in i + 1..sums.len() {
                let na = sums[i].1.as_ref().map_or(1, Vec::len) as u64;
                let nb = sums[j].1.as_ref().map_or(1, Vec::len) as u64;
                self.spend(1 + na.saturating_mul(nb))?;
                if !self.pair_disjoint(&sums[i], &sums[j]) {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn pair_disjoint(
        &self,
        a: &(u8, Option<Vec<Value>>, Value),
        b: &(u8, Option<Vec<Value>>, Value),
    ) -> bool {
        // `number` sets both numeric bits, `integer` only T_INT.
        if a.0 & b.0 == 0 {
            return true;
        }
        if let (Some(va), Some(vb)) = (&a.1, &b.1)
            && va.iter().all(|x| !vb.contains(x))
        {
            return true;
        }
        // A discriminator: a property required in both whose values are disjoint literals.
        if let (Value::Object(ma), Value::Object(mb)) = (&a.2, &b.2)
            && (a.0 & !T_OBJ == 0 || b.0 & !T_OBJ == 0)
        {
            let req = |m: &Map<String, Value>| -> Vec<String> {
                m.get("required")
                    .and_then(Value::as_array)
                    .map(|r| {
                        r.iter()
                            .filter_map(|x| x.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let lits = |m: &Map<String, Value>, k: &str| -> Option<Vec<Value>> {
                let p = m.get("properties")?.get(k)?;
                if let Some(c) = p.get("const") {
                    return Some(vec![c.clone()]);
                }
                p.get("enum").and_then(Value::as_array).cloned()
            };
            let ra = req(ma);
            let rb = req(mb);
            for k in ra.iter().filter(|k| rb.contains(k)) {
                if let (Some(x), Some(y)) = (lits(ma, k), lits(mb, k))
                    && x.iter().all(|v| !y.contains(v))
                {
                    return true;
                }
            }
        }
        false
    }

    fn report_keywords(&mut self, m: &Map<String, Value>, ptr: &str) -> R<()> {
        for (k, v) in m {
            if k == "$schema" && !v.as_str().is_some_and(is_known_draft) {
                // A metaschema of its own may turn vocabularies off (validation keywords then
                // apply to nothing) or on (format assertions): compiled as the drafts know them,
                // wrong either way.
                let why = "not a known draft's metaschema: keywords compiled as a draft's";
                self.approx(ptr, k, Direction::Subset, why)?;
                self.approx(ptr, k, Direction::Superset, why)?;
                continue;
            }
            if is_handled(k) || is_annotation(k) || self.keys.is_private(k) {
                continue;
            }
            if is_unsupported(k) {
                if k == "uniqueItems" && *v != Value::Bool(true) {
                    continue;
                }
                self.note(ptr, k, CoverageStatus::Unsupported)?;
            } else {
                self.note(ptr, k, CoverageStatus::Unknown)?;
            }
        }
        Ok(())
    }

    /// A schema without `$ref`/`allOf`/`anyOf`/`oneOf`.
    fn plain(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        // The recursion goes through here (arrays, objects): the rest is out of line so
        // this frame stays small.
        let (types, values) = self.plain_types(m, ptr)?;
        if let Some(values) = values {
            return self.plain_values(m, types, &values, ptr);
        }
        let nt = self.plain_scalars(m, types, ptr)?;
        if types & T_ARR != 0 {
            let a = self.array(m, ptr, base)?;
            self.rule(nt, vec![IrSymbol::Nonterminal(a)])?;
        }
        if types & T_OBJ != 0 {
            let o = self.object(m, ptr, base)?;
            self.rule(nt, vec![IrSymbol::Nonterminal(o)])?;
        }
        if types == 0 {
            let n = self.nothing()?;
            self.rule(nt, vec![IrSymbol::Nonterminal(n)])?;
        }
        Ok(nt)
    }

    /// The types a plain schema allows (after a simple `not`) and its `const`/`enum` list.
    #[inline(never)]
    fn plain_types(&mut self, m: &Map<String, Value>, ptr: &str) -> R<(u8, Option<Vec<Value>>)> {
        self.report_keywords(m, ptr)?;
        let mut types = match m.get("type") {
            None => T_ALL,
            Some(Value::String(s)) => match type_bit(s) {
                Some(t) => t,
                None => {
                    return Err(self.error(
                        GrammarErrorKind::Syntax,
                        ptr,
                        &format!("unknown type {s:?}"),
                    ));
                }
            },
            Some(Value::Array(a)) => {
                let mut t = 0;
                for x in a {
                    match x.as_str().and_then(type_bit) {
                        Some(b) => t |= b,
                        None => {
                            return Err(self.error(
                                GrammarErrorKind::Syntax,
                                ptr,
                                &format!("unknown type {x}"),
                            ));
                        }
                    }
                }
                t
            }
            Some(_) => {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "bad \"type\""));
            }
        };
        if let Some(not) = m.get("not") {
            types = self.apply_not(not, types, ptr)?;
        }
        let mut values: Option<Vec<Value>> = None;
        if let Some(c) = m.get("const") {
            self.spend_on(c)?;
            values = Some(vec![c.clone()]);
        }
        if let Some(e) = m.get("enum") {
            let Value::Array(e) = e else {
                return Err(self.error(GrammarErrorKind::Syntax, ptr, "enum must be an array"));
            };
            self.alloc(e.len().saturating_mul(ELEMENT_BYTES))?;
            for x in e {
                self.spend_on(x)?;
            }
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        Ok((types, values))
    }

    /// A plain schema with `const`/`enum`.
    #[inline(never)]
    fn plain_values(
        &mut self,
        m: &Map<String, Value>,
        types: u8,
        values: &[Value],
        ptr: &str,
    ) -> R<u32> {
        let nt = self.nt(ptr)?;
        {
            let mut scalars = Vec::new();
            // Strings spelled every way, as one prefix-sharing tree (`ecma::quoted_set_spellings`).
            let mut strings: Vec<&str> = Vec::new();
            let mut alternatives = 0;
            // The string keywords' regex, compiled once for all string values (a long `enum`
            // under a negation would rebuild its exclusions per value).
            let mut string_check: Option<crate::regex::ExprId> = None;
            let string_keys = negate::STRING_KEYS.iter().any(|k| m.contains_key(*k))
                || m.contains_key(self.keys.not_string.as_str());
            for v in values {
                if types & value_type(v) == 0 {
                    continue;
                }
                let allowed = match v {
                    Value::String(text) if string_keys => {
                        let e = match string_check {
                            Some(e) => e,
                            None => {
                                let body = self.string_body(m, ptr)?;
                                let e = self.exprs.compile(&Self::quoted(body)).map_err(|e| {
                                    GrammarError::new(GrammarErrorKind::InvalidRegex, e.message)
                                })?;
                                string_check = Some(e);
                                e
                            }
                        };
                        let lit = super::pydumps::string(text);
                        let d = self.exprs.derivative_bytes(e, lit.as_bytes())?;
                        self.exprs.is_nullable(d)
                    }
                    _ => self.scalar_allowed(m, v, ptr)?,
                };
                if !allowed {
                    continue;
                }
                self.report_value_spellings(m, v, ptr)?;
                match v {
                    Value::Array(_) | Value::Object(_) => {
                        let c = self.const_value(v, ptr)?;
                        self.rule(nt, vec![IrSymbol::Nonterminal(c)])?;
                        alternatives += 1;
                    }
                    Value::String(text) if ecma::is_spelled(text) => {
                        // Its entry here and its characters' trie nodes and spelling nodes in
                        // `ecma::quoted_set_spellings`.
                        self.alloc(
                            size_of::<&str>() + (text.len() + 1).saturating_mul(SET_CHAR_BYTES),
                        )?;
                        strings.push(text.as_str());
                    }
                    _ => {
                        let r = self.scalar_regex(v);
                        self.alloc(regex_bytes(&r))?;
                        scalars.push(r);
                    }
                }
            }
            if !strings.is_empty() {
                scalars.push(ecma::quoted_set_spellings(&strings));
            }
            if !scalars.is_empty() {
                let l = self.lexeme("ENUM", RegexAst::Or(scalars))?;
                self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
                alternatives += 1;
            }
            if alternatives == 0 {
                let n = self.nothing()?;
                self.rule(nt, vec![IrSymbol::Nonterminal(n)])?;
            }
        }
        Ok(nt)
    }

    /// The nonterminal of a plain schema with its scalar alternatives.
    #[inline(never)]
    fn plain_scalars(&mut self, m: &Map<String, Value>, types: u8, ptr: &str) -> R<u32> {
        let nt = self.nt(ptr)?;
        if types & T_NULL != 0 {
            let l = self.lexeme("null", RegexAst::literal("null"))?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & T_BOOL != 0 {
            let l = self.lexeme(
                "true|false",
                RegexAst::Or(vec![RegexAst::literal("true"), RegexAst::literal("false")]),
            )?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & (T_INT | T_NUM) != 0 {
            let l = self.number(m, types & T_NUM == 0, ptr)?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        if types & T_STR != 0 {
            let body = self.string_body(m, ptr)?;
            let l = self.lexeme(&format!("string:{ptr}"), Self::quoted(body))?;
            self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
        }
        Ok(nt)
    }

    /// `not`: exact for `{}`, `true`, `false` and a bare `type`; otherwise ignored.
    fn apply_not(&mut self, not: &Value, types: u8, ptr: &str) -> R<u8> {
        match not {
            Value::Bool(true) => Ok(0),
            Value::Bool(false) => Ok(types),
            Value::Object(n) => {
                let keys: Vec<&str> = n
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !is_annotation(k))
                    .collect();
                if keys.is_empty() {
                    return Ok(0);
                }
                if keys == ["type"] {
                    let t = match &n["type"] {
                        Value::String(s) => type_bit(s),
                        Value::Array(a) => Some(
                            a.iter()
                                .filter_map(|x| x.as_str().and_then(type_bit))
                                .fold(0, |x, y| x | y),
                        ),
                        _ => None,
                    };
                    if let Some(t) = t {
                        // `not: {type: integer}` leaves non-integral numbers, which the
                        // number lexeme cannot separate: keep numbers (superset) then.
                        if t & T_INT != 0 && t & T_NUM == 0 && types & T_NUM != 0 {
                            self.note(ptr, "not", CoverageStatus::Unsupported)?;
                            return Ok(types & !(t & !T_INT));
                        }
                        return Ok(types & !t);
                    }
                }
                self.note(ptr, "not", CoverageStatus::Unsupported)?;
                Ok(types)
            }
            _ => Ok(types),
        }
    }

    /// A scalar literal in every spelling: numbers as `numeric::value_spellings` (`2`, `2.0`,
    /// `2e0`, `0.2e1`; exponents beyond its cases are reported by the caller), strings with
    /// any escapes (`ecma::quoted_spellings`; canonical only when too long, reported).
    fn scalar_regex(&self, v: &Value) -> RegexAst {
        if self.opts.llguidance_spellings {
            return RegexAst::Literal(self.scalar_text(v).into_bytes());
        }
        if let Value::Number(n) = v
            && let Some(d) = Decimal::parse(&n.to_string())
        {
            return RegexAst::Pattern(numeric::value_spellings(&d), Default::default());
        }
        if let Value::String(s) = v
            && let Some(r) = ecma::quoted_spellings(s)
        {
            return r;
        }
        RegexAst::Literal(self.scalar_text(v).into_bytes())
    }

    /// Report the spellings of `enum`/`const` values that [`Self::scalar_regex`] and
    /// [`Self::const_value`] do not accept (a subset).
    fn report_value_spellings(&mut self, m: &Map<String, Value>, v: &Value, ptr: &str) -> R<()> {
        let keyword = if m.contains_key("enum") {
            "enum"
        } else {
            "const"
        };
        if numeric::has_nonzero_number(v) {
            let why = format!(
                "a number is accepted in exponent notation only with an exponent within ±{} \
                 (the spellings `m e x` of one value are not regular)",
                numeric::EXP_CASES
            );
            self.spelling(ptr, keyword, &why)?;
        }
        if ecma::has_long_string(v) {
            let why = format!(
                "a string or key longer than {} characters is accepted in its canonical \
                 (`json.dumps`) spelling only",
                ecma::MAX_SPELLED_LITERAL
            );
            self.spelling(ptr, keyword, &why)?;
        }
        Ok(())
    }

    fn scalar_text(&self, v: &Value) -> String {
        match v {
            Value::Null => "null".into(),
            Value::Bool(b) => if *b { "true" } else { "false" }.into(),
            Value::Number(n) => super::pydumps::number(n),
            Value::String(s) => super::pydumps::string(s),
            _ => String::new(),
        }
    }

    /// A nonterminal matching exactly one JSON value (for `const`/`enum`): arrays and
    /// objects are emitted from an explicit stack of open containers.
    fn const_value(&mut self, v: &Value, ptr: &str) -> R<u32> {
        let mut stack: Vec<ConstFrame<'_>> = Vec::new();
        let mut pending = Some(v);
        let mut done: Option<u32> = None;
        loop {
            if let Some(x) = pending.take() {
                self.spend(1)?;
                let nt = self.nt("const")?;
                match x {
                    Value::Array(a) => {
                        let p = self.punct()?;
                        stack.push(ConstFrame {
                            nt,
                            rhs: vec![IrSymbol::Lexeme(p.lbrack)],
                            members: Members::Array(a.iter()),
                            first: true,
                        });
                    }
                    Value::Object(o)
                        if o.len() > 1 && self.opts.property_order == PropertyOrder::AnyOrder =>
                    {
                        // Key order is not part of the value: any order of the same members.
                        let mut props = Map::new();
                        for (k, x) in o {
                            props.insert(k.clone(), negate::obj(vec![("const", x.clone())]));
                        }
                        let keys: Vec<Value> = o.keys().map(|k| Value::String(k.clone())).collect();
                        let s = negate::obj(vec![
                            ("type", "object".into()),
                            ("properties", Value::Object(props)),
                            ("required", Value::Array(keys)),
                            ("additionalProperties", Value::Bool(false)),
                        ]);
                        let inner = self.sub_owned(s, ptr, "")?;
                        self.rule(nt, vec![IrSymbol::Nonterminal(inner)])?;
                        done = Some(nt);
                    }
                    Value::Object(o) => {
                        let p = self.punct()?;
                        stack.push(ConstFrame {
                            nt,
                            rhs: vec![IrSymbol::Lexeme(p.lbrace)],
                            members: Members::Object(o.iter()),
                            first: true,
                        });
                    }
                    _ => {
                        let t = self.scalar_text(x);
                        let r = self.scalar_regex(x);
                        let l = self.lexeme(&t, r)?;
                        self.rule(nt, vec![IrSymbol::Lexeme(l)])?;
                        done = Some(nt);
                    }
                }
            }
            let Some(top) = stack.last_mut() else {
                return match done {
                    Some(nt) => Ok(nt),
                    None => self.nothing(),
                };
            };
            if let Some(c) = done.take() {
                top.rhs.push(IrSymbol::Nonterminal(c));
            }
            let p = self.punct()?;
            let sep = !top.first;
            top.first = false;
            match &mut top.members {
                Members::Array(it) => {
                    if let Some(x) = it.next() {
                        if sep {
                            top.rhs.push(IrSymbol::Lexeme(p.comma));
                        }
                        pending = Some(x);
                        continue;
                    }
                    top.rhs.push(IrSymbol::Lexeme(p.rbrack));
                }
                Members::Object(it) => {
                    if let Some((k, x)) = it.next() {
                        if sep {
                            top.rhs.push(IrSymbol::Lexeme(p.comma));
                        }
                        let kl = self.lexeme(
                            &super::pydumps::string(k),
                            key_spellings(k, self.opts.llguidance_spellings),
                        )?;
                        top.rhs.push(IrSymbol::Lexeme(kl));
                        top.rhs.push(IrSymbol::Lexeme(p.colon));
                        pending = Some(x);
                        continue;
                    }
                    top.rhs.push(IrSymbol::Lexeme(p.rbrace));
                }
            }
            if let Some(f) = stack.pop() {
                self.rule(f.nt, f.rhs)?;
                done = Some(f.nt);
            }
        }
    }

    // ---- numbers ------------------------------------------------------------------------

    fn bound(&mut self, m: &Map<String, Value>, lower: bool, ptr: &str) -> R<Option<Bound>> {
        let (incl, excl) = if lower {
            ("minimum", "exclusiveMinimum")
        } else {
            ("maximum", "exclusiveMaximum")
        };
        let parse = |v: &Value| -> Option<(f64, Decimal)> {
            let Value::Number(n) = v else { return None };
            Some((n.as_f64()?, Decimal::parse(&n.to_string())?))
        };
        let mut best: Option<Bound> = None;
        let mut consider = |b: Bound| {
            let better = match &best {
                None => true,
                Some(old) => {
                    if lower {
                        b.value > old.value || (b.value == old.value && b.strict)
                    } else {
                        b.value < old.value || (b.value == old.value && b.strict)
                    }
                }
            };
            if better {
                best = Some(b);
            }
        };
        let draft4_excl = m.get(excl) == Some(&Value::Bool(true));
        if let Some(v) = m.get(incl) {
            match parse(v) {
                Some((value, dec)) => consider(Bound {
                    value,
                    dec,
                    strict: draft4_excl,
                }),
                None => self.approx(ptr, incl, Direction::Superset, "not a finite number")?,
            }
        }
        if let Some(v) = m.get(excl)
            && !v.is_boolean()
        {
            match parse(v) {
                Some((value, dec)) => consider(Bound {
                    value,
                    dec,
                    strict: true,
                }),
                None => self.approx(ptr, excl, Direction::Superset, "not a finite number")?,
            }
        }
        Ok(best)
    }

    fn number(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> R<u32> {
        let regex = self.number_full_regex(m, integer, ptr)?;
        for (keyword, why) in
            numeric::spelling_losses(m, integer, m.contains_key(self.keys.not_number.as_str()))
        {
            self.spelling(ptr, keyword, &why)?;
        }
        self.lexeme(&format!("number:{ptr}"), regex)
    }

    /// The number regex of `m` including its [`PrivateKeys::not_number`] exclusions.
    fn number_full_regex(
        &mut self,
        m: &Map<String, Value>,
        integer: bool,
        ptr: &str,
    ) -> R<RegexAst> {
        let r = self.number_regex(m, integer, ptr)?;
        let Some(Value::Array(groups)) = m.get(self.keys.not_number.as_str()) else {
            return Ok(r);
        };
        let mut parts = vec![
            r,
            RegexAst::Pattern(CANON_NUMBER.into(), Default::default()),
        ];
        let mut excluded = Vec::new();
        for g in groups {
            let r = self.excluded_regex(g, ptr, false)?;
            excluded.push(r);
        }
        parts.push(RegexAst::Not(Box::new(RegexAst::Or(excluded))));
        Ok(RegexAst::And(parts))
    }

    /// The regex of a keyword group excluded by [`PrivateKeys::not_number`] or
    /// [`PrivateKeys::not_string`]; when it is
    /// not exact, nothing is excluded (a superset, reported).
    fn excluded_regex(&mut self, g: &Value, ptr: &str, string: bool) -> R<RegexAst> {
        let (saved_flip, saved_inexact) = (self.flip, self.inexact);
        self.flip = true;
        self.inexact = false;
        let r = if string {
            self.string_group_regex(g, ptr)
        } else {
            self.number_group_regex(g, ptr)
        };
        let inexact = self.inexact;
        self.flip = saved_flip;
        self.inexact = saved_inexact || inexact;
        let r = r?;
        if inexact {
            if self.flip {
                return Ok(RegexAst::Nothing);
            }
            self.approx(
                ptr,
                "not",
                Direction::Superset,
                "a negated keyword is not compiled exactly; nothing is excluded for it",
            )?;
            return Ok(RegexAst::Nothing);
        }
        Ok(r)
    }

    /// The numbers satisfying one keyword group (numeric keywords, `enum`, `type`).
    fn number_group_regex(&mut self, g: &Value, ptr: &str) -> R<RegexAst> {
        let Value::Object(g) = g else {
            return Ok(if *g == Value::Bool(false) {
                RegexAst::Nothing
            } else {
                RegexAst::Pattern(NUMBER.into(), Default::default())
            });
        };
        let integer = g.get("type").and_then(negate::type_bits) == Some(T_INT);
        let mut parts = vec![self.number_full_regex(g, integer, ptr)?];
        let mut values: Option<Vec<Value>> = g.get("const").map(|c| vec![c.clone()]);
        if let Some(Value::Array(e)) = g.get("enum") {
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        if let Some(vals) = values {
            let alts: Vec<RegexAst> = vals
                .iter()
                .filter(|v| v.is_number())
                .map(|v| self.scalar_regex(v))
                .collect();
            parts.push(RegexAst::Or(alts));
        }
        Ok(RegexAst::And(parts))
    }

    fn number_regex(&mut self, m: &Map<String, Value>, integer: bool, ptr: &str) -> R<RegexAst> {
        let lo = self.bound(m, true, ptr)?;
        let hi = self.bound(m, false, ptr)?;
        let mut parts: Vec<RegexAst> = Vec::new();
        let pat = |s: String| RegexAst::Pattern(s, Default::default());
        let bounded = lo.is_some() || hi.is_some();
        let mut integer = integer;
        let mut frac_digits: Option<usize> = None;
        let mut int_step: Option<u64> = None;
        if let Some(mo) = m.get("multipleOf") {
            let d = mo.as_f64().unwrap_or(0.0);
            let dec = Value::as_number(mo).and_then(|n| Decimal::parse(&n.to_string()));
            match dec {
                Some(dec) if d > 0.0 && dec.int == "1" && !dec.frac.is_empty() => {
                    self.approx(
                        ptr,
                        "multipleOf",
                        Direction::Superset,
                        "divisor not supported",
                    )?;
                }
                Some(dec) if d > 0.0 && dec.frac.is_empty() => {
                    integer = true;
                    let n: u64 = dec.int.parse().unwrap_or(0);
                    if n > 1 {
                        int_step = Some(n);
                    }
                }
                Some(dec)
                    if d > 0.0
                        && dec.int == "0"
                        && dec.frac.ends_with('1')
                        && dec.frac[..dec.frac.len() - 1].bytes().all(|b| b == b'0') =>
                {
                    frac_digits = Some(dec.frac.len());
                }
                _ => {
                    self.approx(
                        ptr,
                        "multipleOf",
                        Direction::Superset,
                        "divisor not supported",
                    )?;
                }
            }
        }
        // The value set in every spelling (exponent notation: see `numeric::exponent_spellings`).
        if bounded {
            let mut plain = vec![pat(numeric::ANY_MAG_SIGNED.into())];
            if let Some(b) = &lo {
                plain.push(pat(numeric::ge(&b.dec, b.strict)));
            }
            if let Some(b) = &hi {
                plain.push(pat(numeric::le(&b.dec, b.strict)));
            }
            if integer && self.opts.llguidance_spellings {
                plain.push(pat(INTEGER_CANONICAL.into()));
            } else if integer {
                plain.push(pat(numeric::INTEGER_PLAIN.into()));
            }
            let lo_b = lo.as_ref().map(|b| (&b.dec, b.strict));
            let hi_b = hi.as_ref().map(|b| (&b.dec, b.strict));
            // Integrality is tested inside each notation's case (see
            // `numeric::exponent_spellings`).
            if integer && self.opts.llguidance_spellings {
                // LLGuidance writes integers in plain notation only.
                parts.push(RegexAst::And(plain));
            } else {
                parts.push(RegexAst::Or(vec![
                    RegexAst::And(plain),
                    numeric::exponent_spellings(lo_b, hi_b, integer),
                ]));
            }
        } else if integer && self.opts.llguidance_spellings {
            parts.push(pat(INTEGER_CANONICAL.into()));
        } else if integer {
            // Every integer spelling is a JSON number: no `NUMBER &` around it (an
            // intersection makes every cold lexer transition of the lexeme run an
            // emptiness check).
            parts.push(pat(numeric::integer_spellings()));
        } else {
            parts.push(pat(NUMBER.into()));
        }
        if let Some(k) = frac_digits {
            // Plain decimal notation only (reported by `numeric::spelling_losses`).
            parts.push(pat(format!(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]{{1,{k}}}0*)?")));
        }
        if let Some(n) = int_step {
            match self.multiple_regex(n) {
                Some(r) => parts.push(pat(r)),
                None => self.approx(
                    ptr,
                    "multipleOf",
                    Direction::Superset,
                    "divisor not supported",
                )?,
            }
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::And(parts)
        })
    }

    /// Integers (optional `-`) divisible by `n`, for `n = 2^a 5^b` (checked on the last
    /// digits) and small `n` (a digit automaton unrolled into a regex is too large, so
    /// other divisors are unsupported).
    fn multiple_regex(&self, n: u64) -> Option<String> {
        let mut a = 0;
        let mut b = 0;
        let mut x = n;
        while x.is_multiple_of(2) {
            x /= 2;
            a += 1;
        }
        while x.is_multiple_of(5) {
            x /= 5;
            b += 1;
        }
        if x != 1 {
            return None;
        }
        let k = a.max(b) as u32;
        if k > 4 {
            return None;
        }
        let modulus = 10u64.pow(k);
        // All k-digit endings (with leading zeros) divisible by n.
        let mut ends = Vec::new();
        let mut v = 0;
        while v < modulus {
            ends.push(format!("{:0width$}", v, width = k as usize));
            v += n;
        }
        // Shorter numbers: the values below 10^(k-1)... handled by listing them directly.
        let mut short = Vec::new();
        let mut v = n;
        while v < modulus / 10 {
            short.push(v.to_string());
            v += n;
        }
        let mut alts = vec![String::from("0")];
        alts.extend(short.iter().map(|s| format!("-?{s}")));
        alts.push(format!("-?[1-9][0-9]*(?:{})", ends.join("|")));
        // Numbers with exactly k digits whose value is a multiple: covered when the leading
        // part is empty only if they start with a non-zero digit.
        let full: Vec<&String> = ends.iter().filter(|e| !e.starts_with('0')).collect();
        if !full.is_empty() {
            let f: Vec<&str> = full.iter().map(|s| s.as_str()).collect();
            alts.push(format!("-?(?:{})", f.join("|")));
        }
        Some(format!("(?:{})", alts.join("|")))
    }

    // ---- strings ------------------------------------------------------------------------

    /// The body (between quotes) of a string satisfying the string keywords of `m`.
    fn string_body(&mut self, m: &Map<String, Value>, ptr: &str) -> R<RegexAst> {
        let mut parts = Vec::new();
        let min = m.get("minLength").and_then(as_count).unwrap_or(0);
        let max = m.get("maxLength").and_then(as_count);
        let max_repeat = u64::from(self.limits.max_repeat);
        if min > max_repeat {
            return Err(self.limit_error(LimitKind::RepeatCount, &child(ptr, "minLength")));
        }
        let mut max = max;
        if max.is_some_and(|x| x > max_repeat) {
            self.approx(
                ptr,
                "maxLength",
                Direction::Superset,
                "above the max_repeat limit; not enforced",
            )?;
            max = None;
        }
        if max.is_some_and(|x| x < min) {
            return Ok(RegexAst::Nothing);
        }
        let char_re = RegexAst::Pattern(self.str_char().into(), Default::default());
        parts.push(RegexAst::Repeat(
            Box::new(char_re),
            min as u32,
            max.map(|x| x as u32),
        ));
        let patterns: Vec<String> = match m.get("pattern") {
            Some(Value::String(p)) => vec![p.clone()],
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        for p in patterns {
            if let Some(r) = self.pattern(&p, ptr, "pattern")? {
                parts.push(r)
            }
        }
        if let Some(f) = m.get("format").and_then(Value::as_str)
            && self.opts.assert_formats
        {
            match formats::format_regex(f) {
                // Every spelling of the matching texts (`\u0040` for `@`).
                Some(r) => parts.push(ecma::spell_regex(&r, 100).unwrap_or(RegexAst::Nothing)),
                None if formats::is_spec_format(f) => {
                    self.note(ptr, "format", CoverageStatus::Unsupported)?;
                }
                None => self.note(ptr, "format", CoverageStatus::Unknown)?,
            }
        }
        if let Some(Value::Array(groups)) = m.get(self.keys.not_string.as_str()) {
            parts.push(RegexAst::Repeat(
                Box::new(RegexAst::Pattern(
                    self.str_char().into(),
                    Default::default(),
                )),
                0,
                None,
            ));
            let mut excluded = Vec::new();
            for g in groups {
                let r = self.excluded_regex(g, ptr, true)?;
                excluded.push(r);
            }
            parts.push(RegexAst::Not(Box::new(RegexAst::Or(excluded))));
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(RegexAst::Nothing)
        } else {
            RegexAst::And(parts)
        })
    }

    /// The string bodies satisfying one keyword group (string keywords, `enum`).
    fn string_group_regex(&mut self, g: &Value, ptr: &str) -> R<RegexAst> {
        let Value::Object(g) = g else {
            return Ok(if *g == Value::Bool(false) {
                RegexAst::Nothing
            } else {
                self.string_any()
            });
        };
        let mut parts = vec![self.string_body(g, ptr)?];
        let mut values: Option<Vec<Value>> = g.get("const").map(|c| vec![c.clone()]);
        if let Some(Value::Array(e)) = g.get("enum") {
            values = Some(match values {
                Some(c) => c.into_iter().filter(|x| e.contains(x)).collect(),
                None => e.clone(),
            });
        }
        if let Some(vals) = values {
            let alts: Vec<RegexAst> = vals
                .iter()
                .filter_map(|v| v.as_str())
                .map(|v| {
                    ecma::literal_spellings(v).unwrap_or_else(|| {
                        let q = super::pydumps::string(v);
                        RegexAst::Literal(q.as_bytes()[1..q.len() - 1].to_vec())
                    })
                })
                .collect();
            if vals.iter().any(ecma::has_long_string) {
                // Complemented over every spelling, a canonical-only literal would exclude
                // too little: nothing is excluded instead (the caller reports it).
                self.approx(ptr, "enum", Direction::Superset, "string too long to spell")?;
            }
            parts.push(RegexAst::Or(alts));
        }
        Ok(RegexAst::And(parts))
    }

    /// Does a scalar `enum` value satisfy the other keywords of its type in `m`?
    fn scalar_allowed(&mut self, m: &Map<String, Value>, v: &Value, ptr: &str) -> R<bool> {
        let has = |keys: &[&str], internal: &str| {
            keys.iter().any(|k| m.contains_key(*k)) || m.contains_key(internal)
        };
        match v {
            Value::String(text) if has(&negate::STRING_KEYS, &self.keys.not_string) => {
                let body = self.string_body(m, ptr)?;
                self.key_matches(&super::pydumps::string(text), &Self::quoted(body))
            }
            Value::Number(n) if has(&negate::NUMBER_KEYS, &self.keys.not_number) => {
                let Some(d) = Decimal::parse(&n.to_string()) else {
                    return Ok(true);
                };
                let mut text = String::new();
                if d.negative {
                    text.push('-');
                }
                text.push_str(&d.int);
                if !d.frac.is_empty() {
                    text.push('.');
                    text.push_str(&d.frac);
                }
                let integer = m.get("type").and_then(negate::type_bits) == Some(T_INT);
                let r = self.number_full_regex(m, integer, ptr)?;
                let r = RegexAst::And(vec![
                    r,
                    RegexAst::Pattern(CANON_NUMBER.into(), Default::default()),
                ]);
                self.key_matches(&text, &r)
            }
            _ => Ok(true),
        }
    }

    /// An ECMA pattern over the encoded body, or `None` (reported) when unsupported.
    fn pattern(&mut self, p: &str, ptr: &str, keyword: &str) -> R<Option<RegexAst>> {
        let nest = u32::try_from(self.limits.max_nesting_depth).unwrap_or(u32::MAX);
        match ecma::pattern_regex(p, nest) {
            Ok(r) => {
                // Check it compiles (repetition limits, size) before using it.
                match self.exprs.compile(&r) {
                    Ok(_) => Ok(Some(r)),
                    Err(e) => {
                        self.approx(
                            ptr,
                            keyword,
                            Direction::Superset,
                            &format!("pattern {p:?} not compiled: {e}"),
                        )?;
                        Ok(None)
                    }
                }
            }
            Err(PatternError::Unsupported(why)) | Err(PatternError::Invalid(why)) => {
                self.approx(
                    ptr,
                    keyword,
                    Direction::Superset,
                    &format!("pattern {p:?} ignored: {why}"),
                )?;
                Ok(None)
            }
        }
    }

    // ---- arrays -------------------------------------------------------------------------

    fn array(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        let groups = self.contains_groups(m);
        if !groups.is_empty() {
            return self.array_contains(m, groups, ptr, base);
        }
        let mut prefix = Vec::new();
        let prefix_src: Option<(&Vec<Value>, &str)> = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(a)), _) => Some((a, "prefixItems")),
            (_, Some(Value::Array(a))) => Some((a, "items")),
            _ => None,
        };
        if let Some((a, kw)) = prefix_src {
            for (i, s) in a.iter().enumerate() {
                prefix.push(self.sub(s, &format!("{ptr}/{kw}/{i}"), base)?);
            }
        }
        let rest_schema = if prefix_src.is_some_and(|(_, kw)| kw == "items") {
            m.get("additionalItems").map(|v| (v, "additionalItems"))
        } else {
            match m.get("items") {
                Some(Value::Array(_)) => None,
                Some(v) => Some((v, "items")),
                None => None,
            }
        };
        let rest = match rest_schema {
            Some((Value::Bool(false), _)) => None,
            Some((v, kw)) => Some(self.sub(v, &child(ptr, kw), base)?),
            None => Some(self.any()?),
        };
        self.array_rules(m, prefix, rest, ptr)
    }

    /// The rules of an array once its item nonterminals are known (out of line: keeps the
    /// recursive frame of [`Self::array`] small).
    #[inline(never)]
    fn array_rules(
        &mut self,
        m: &Map<String, Value>,
        prefix: Vec<u32>,
        mut rest: Option<u32>,
        ptr: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let min = m.get("minItems").and_then(as_count).unwrap_or(0);
        let mut max = m.get("maxItems").and_then(as_count);
        if min > u64::from(self.limits.max_repeat) {
            return Err(self.limit_error(LimitKind::RepeatCount, &child(ptr, "minItems")));
        }
        let np = prefix.len() as u64;
        if rest.is_none() {
            max = Some(max.map_or(np, |x| x.min(np)));
        }
        if max.is_some_and(|x| x > MAX_UNROLLED_ITEMS.max(min).max(np)) {
            self.approx(
                ptr,
                "maxItems",
                Direction::Superset,
                "too large to unroll; not enforced",
            )?;
            max = None;
            if rest.is_none() {
                rest = Some(self.nothing()?);
            }
        }
        let arr = self.nt(&format!("array:{ptr}"))?;
        if max.is_some_and(|x| x < min) {
            let n = self.nothing()?;
            self.rule(arr, vec![IrSymbol::Nonterminal(n)])?;
            return Ok(arr);
        }
        let k_end = max.unwrap_or(min.max(np)) as usize;
        let states: Vec<u32> = (0..=k_end)
            .map(|i| self.nt(&format!("array:{ptr}#{i}")))
            .collect::<R<_>>()?;
        for i in 0..k_end {
            let elem = if (i as u64) < np {
                prefix[i]
            } else {
                match rest {
                    Some(r) => r,
                    None => break,
                }
            };
            if i as u64 >= min {
                self.rule(states[i], vec![])?;
            }
            let mut rhs = Vec::new();
            if i > 0 {
                rhs.push(IrSymbol::Lexeme(p.comma));
            }
            rhs.push(IrSymbol::Nonterminal(elem));
            rhs.push(IrSymbol::Nonterminal(states[i + 1]));
            self.rule(states[i], rhs)?;
        }
        let last = states[k_end];
        self.rule(last, vec![])?;
        if max.is_none()
            && let Some(r) = rest
        {
            let tail = self.nt(&format!("array:{ptr}#tail"))?;
            let mut first = Vec::new();
            if k_end > 0 {
                first.push(IrSymbol::Lexeme(p.comma));
            }
            first.push(IrSymbol::Nonterminal(r));
            self.rule(tail, first)?;
            self.rule(
                tail,
                vec![
                    IrSymbol::Nonterminal(tail),
                    IrSymbol::Lexeme(p.comma),
                    IrSymbol::Nonterminal(r),
                ],
            )?;
            self.rule(last, vec![IrSymbol::Nonterminal(tail)])?;
        }
        self.rule(
            arr,
            vec![
                IrSymbol::Lexeme(p.lbrack),
                IrSymbol::Nonterminal(states[0]),
                IrSymbol::Lexeme(p.rbrack),
            ],
        )?;
        Ok(arr)
    }

    /// An array with `contains` conditions (each with its `minContains`/`maxContains` and
    /// first counted index): an automaton over (position, matching items so far per
    /// condition). Each item chooses the conditions it counts for and is compiled as the
    /// item schema with those conditions and, for the conditions with a `maxContains` that it
    /// does not count for, their negations. A condition without `maxContains` may leave a
    /// matching item uncounted (its count only needs to reach the minimum, and stops there).
    fn array_contains(
        &mut self,
        m: &Map<String, Value>,
        mut groups: Vec<ContainsGroup>,
        ptr: &str,
        base: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let cp = child(ptr, "contains");
        if groups.len() > MAX_CONTAINS_GROUPS {
            groups.truncate(MAX_CONTAINS_GROUPS);
            self.approx(
                ptr,
                "contains",
                Direction::Superset,
                "more than 4 contains conditions on one array; the first 4 are enforced",
            )?;
        }
        let (prefix, rest): (Vec<Value>, Option<Value>) =
            match (m.get("prefixItems"), m.get("items")) {
                (Some(Value::Array(a)), items) => (a.clone(), items.cloned()),
                (None, Some(Value::Array(a))) => (a.clone(), m.get("additionalItems").cloned()),
                (_, items) => (Vec::new(), items.cloned()),
            };
        let rest = match rest {
            Some(Value::Bool(false)) => None,
            Some(v) => Some(v),
            None => Some(Value::Bool(true)),
        };
        let np = prefix.len() as u64;
        let min = m.get("minItems").and_then(as_count).unwrap_or(0);
        let mut max = m.get("maxItems").and_then(as_count);
        if rest.is_none() {
            max = Some(max.map_or(np, |x| x.min(np)));
        }
        let arr = self.nt(&format!("array:{ptr}"))?;
        let cmin_all = groups.iter().map(|g| g.min).max().unwrap_or(0);
        if groups.iter().any(|g| g.max.is_some_and(|x| x < g.min))
            || max.is_some_and(|x| x < min.max(cmin_all))
        {
            let n = self.nothing()?;
            self.rule(arr, vec![IrSymbol::Nonterminal(n)])?;
            return Ok(arr);
        }
        let limit = u64::from(self.limits.max_repeat).min(MAX_UNROLLED_ITEMS);
        // Count states: one mixed-radix number, a digit per condition. Conditions whose
        // counts together need more states than `limit` are dropped from the last (a
        // superset, reported); the first alone is held to the limit below.
        let states_of = |gs: &[ContainsGroup]| {
            gs.iter().fold(1u64, |n, g| {
                n.saturating_mul(g.max.unwrap_or(g.min).saturating_add(1))
            })
        };
        if groups.len() > 1 && states_of(&groups) > limit + 1 {
            while groups.len() > 1 && states_of(&groups) > limit + 1 {
                groups.pop();
            }
            self.approx(
                ptr,
                "contains",
                Direction::Superset,
                "contains conditions whose counts together exceed max_repeat; the first ones \
                 are enforced",
            )?;
        }
        let from_all = groups.iter().map(|g| g.from).max().unwrap_or(0);
        // At most `limit + 1`: several conditions were cut to it above, and one alone is
        // held to it by the check below.
        let count_states = states_of(&groups);
        let tops: Vec<u64> = groups.iter().map(|g| g.max.unwrap_or(g.min)).collect();
        let strides: Vec<u64> = (0..groups.len()).map(|j| states_of(&groups[..j])).collect();
        if min.max(cmin_all).max(np).max(from_all) > limit
            || groups.iter().any(|g| g.max.is_some_and(|x| x > limit))
        {
            return Err(self.limit_error(LimitKind::RepeatCount, &cp));
        }
        if max.is_some_and(|x| x > limit) {
            self.approx(
                ptr,
                "maxItems",
                Direction::Superset,
                "too large to unroll with contains; not enforced",
            )?;
            max = None;
        }
        let digit = |x: u64, j: usize| (x / strides[j]) % (tops[j] + 1);
        let accept = |x: u64| (0..groups.len()).all(|j| digit(x, j) >= groups[j].min);
        // The next count state when an item counts for the conditions in `take` (None:
        // one of them is at its `maxContains`).
        let step = |x: u64, take: u32| -> Option<u64> {
            let mut y = x;
            for (j, g) in groups.iter().enumerate() {
                if take & (1 << j) == 0 {
                    continue;
                }
                let d = digit(x, j);
                match g.max {
                    Some(hi) if d >= hi => return None,
                    Some(_) => y += strides[j],
                    None if d < tops[j] => y += strides[j],
                    None => {}
                }
            }
            Some(y)
        };
        // Item nonterminals by (item schema, conditions counted, conditions negated).
        let mut cache: Vec<(Value, u32, u32, u32)> = Vec::new();
        let mut elem = |s: &mut Self, e: &Value, take: u32, negated: u32| -> R<u32> {
            if let Some(&(_, _, _, n)) = cache
                .iter()
                .find(|(v, t, g, _)| *t == take && *g == negated && v == e)
            {
                return Ok(n);
            }
            let n = if take == 0 && negated == 0 {
                s.sub(e, &cp, base)?
            } else {
                let mut schema = e.clone();
                for (j, g) in groups.iter().enumerate() {
                    if take & (1 << j) != 0 {
                        schema = Self::all_of(schema, g.schema.clone());
                    } else if negated & (1 << j) != 0 {
                        let not_c = negate::obj(vec![("not", g.schema.clone())]);
                        schema = Self::all_of(schema, not_c);
                    }
                }
                s.sub_owned(schema, &cp, base)?
            };
            cache.push((e.clone(), take, negated, n));
            Ok(n)
        };
        // Conditions with a `maxContains`: an item they count at its position and that does
        // not count for them must not match them.
        let exact: u32 = (0..groups.len())
            .filter(|&j| groups[j].max.is_some())
            .fold(0, |acc, j| acc | (1 << j));
        // The ways an item at `counting` positions (a bit per condition that counts it) may
        // move count state `x`: (conditions counted, conditions negated, next state).
        let moves = |x: u64, counting: u32| -> Vec<(u32, u32, u64)> {
            let mut out = Vec::new();
            for take in 0..(1u32 << groups.len()) {
                if take & !counting != 0 {
                    continue;
                }
                let Some(y) = step(x, take) else { continue };
                out.push((take, exact & counting & !take, y));
            }
            out
        };
        let k_end = max.unwrap_or(min.max(np).max(from_all).max(1)) as usize;
        let mut states = Vec::with_capacity(k_end + 1);
        for i in 0..=k_end {
            let row: Vec<u32> = (0..count_states)
                .map(|x| self.nt(&format!("array:{ptr}#{i}.{x}")))
                .collect::<R<_>>()?;
            states.push(row);
        }
        let unbounded = max.is_none() && rest.is_some();
        let all_counting: u32 = (1u32 << groups.len()) - 1;
        for i in 0..=k_end {
            let counting: u32 = (0..groups.len())
                .filter(|&j| i as u64 >= groups[j].from)
                .fold(0, |acc, j| acc | (1 << j));
            for x in 0..count_states {
                let here = states[i][x as usize];
                if i as u64 >= min && accept(x) && !(unbounded && i == k_end) {
                    self.rule(here, vec![])?;
                }
                if i == k_end {
                    continue;
                }
                let e = match prefix.get(i) {
                    Some(e) => e.clone(),
                    None => match &rest {
                        Some(r) => r.clone(),
                        None => continue,
                    },
                };
                for (take, negated, y) in moves(x, counting) {
                    let n = elem(self, &e, take, negated)?;
                    let mut rhs = Vec::new();
                    if i > 0 {
                        rhs.push(IrSymbol::Lexeme(p.comma));
                    }
                    rhs.push(IrSymbol::Nonterminal(n));
                    rhs.push(IrSymbol::Nonterminal(states[i + 1][y as usize]));
                    self.rule(here, rhs)?;
                }
            }
        }
        if unbounded && let Some(r) = &rest {
            // Left-recursive loop: T[a][b] = items after position k_end, entered with count
            // state a, now at count state b (every condition counts from k_end on).
            for a in 0..count_states {
                let t: Vec<u32> = (0..count_states)
                    .map(|b| self.nt(&format!("array:{ptr}#loop{a}.{b}")))
                    .collect::<R<_>>()?;
                self.rule(t[a as usize], vec![])?;
                for b in 0..count_states {
                    for (take, negated, y) in moves(b, all_counting) {
                        let n = elem(self, r, take, negated)?;
                        self.rule(
                            t[y as usize],
                            vec![
                                IrSymbol::Nonterminal(t[b as usize]),
                                IrSymbol::Lexeme(p.comma),
                                IrSymbol::Nonterminal(n),
                            ],
                        )?;
                    }
                    if accept(b) {
                        self.rule(
                            states[k_end][a as usize],
                            vec![IrSymbol::Nonterminal(t[b as usize])],
                        )?;
                    }
                }
            }
        }
        self.rule(
            arr,
            vec![
                IrSymbol::Lexeme(p.lbrack),
                IrSymbol::Nonterminal(states[0][0]),
                IrSymbol::Lexeme(p.rbrack),
            ],
        )?;
        Ok(arr)
    }

    // ---- objects ------------------------------------------------------------------------

    /// Does the literal key (encoded, with quotes) match the key regex?
    fn key_matches(&mut self, key_lit: &str, regex: &RegexAst) -> R<bool> {
        let e = self
            .exprs
            .compile(regex)
            .map_err(|e| GrammarError::new(GrammarErrorKind::InvalidRegex, e.message))?;
        let d = self.exprs.derivative_bytes(e, key_lit.as_bytes())?;
        Ok(self.exprs.is_nullable(d))
    }

    /// The key regex (whole lexeme, with quotes) for `propertyNames`, if decidable.
    fn property_names(&mut self, v: &Value, ptr: &str, base: &str) -> R<Option<RegexAst>> {
        // A bare `$ref` (beside annotations) is followed, a chain of them too.
        let mut v = v;
        let mut base = base.to_string();
        let mut hops = 0usize;
        while let Value::Object(pm) = v
            && let Some(r) = pm.get("$ref").and_then(Value::as_str)
            && pm.keys().all(|k| k == "$ref" || is_annotation(k))
        {
            hops += 1;
            if hops > self.resources.len() + self.anchors.len() + 64 {
                break;
            }
            let here = self.base_of(pm, &base);
            let (t, _, b) = self.ref_target(r, &here, ptr)?;
            v = t;
            base = b;
        }
        match v {
            Value::Bool(true) => Ok(None),
            Value::Bool(false) => Ok(Some(RegexAst::Nothing)),
            Value::Object(pm) => {
                let string_only = pm.keys().all(|k| {
                    is_annotation(k)
                        || matches!(
                            k.as_str(),
                            "type"
                                | "pattern"
                                | "minLength"
                                | "maxLength"
                                | "format"
                                | "enum"
                                | "const"
                        )
                });
                if !string_only {
                    self.approx(
                        ptr,
                        "propertyNames",
                        Direction::Superset,
                        "only string keywords are enforced on keys",
                    )?;
                    return Ok(None);
                }
                let mut parts = Vec::new();
                let vals = match (pm.get("const"), pm.get("enum")) {
                    (Some(c), _) => Some(vec![c.clone()]),
                    (None, Some(Value::Array(e))) => Some(e.clone()),
                    _ => None,
                };
                if let Some(vals) = vals {
                    let lits = vals
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|k| key_spellings(k, self.opts.llguidance_spellings))
                        .collect();
                    parts.push(RegexAst::Or(lits));
                }
                let body = self.string_body(pm, &child(ptr, "propertyNames"))?;
                parts.push(Self::quoted(body));
                Ok(Some(RegexAst::And(parts)))
            }
            _ => Ok(None),
        }
    }

    fn member(&mut self, key_lex: u32, value: u32) -> R<u32> {
        let p = self.punct()?;
        let nt = self.nt("member")?;
        self.rule(
            nt,
            vec![
                IrSymbol::Lexeme(key_lex),
                IrSymbol::Lexeme(p.colon),
                IrSymbol::Nonterminal(value),
            ],
        )?;
        Ok(nt)
    }

    fn object(&mut self, m: &Map<String, Value>, ptr: &str, base: &str) -> R<u32> {
        let p = self.punct()?;
        let empty = Map::new();
        let props = match m.get("properties") {
            Some(Value::Object(pm)) => pm,
            _ => &empty,
        };
        let mut required: Vec<String> = Vec::new();
        if let Some(Value::Array(r)) = m.get("required") {
            for x in r {
                if let Some(s) = x.as_str()
                    && !required.iter().any(|y| y == s)
                {
                    required.push(s.to_string());
                }
            }
        }
        let pattern_props: Vec<(String, Value)> = match m.get("patternProperties") {
            Some(Value::Object(pp)) => pp.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            _ => Vec::new(),
        };
        let key_names = match m.get("propertyNames") {
            Some(v) => self.property_names(v, ptr, base)?,
            None => None,
        };
        // Key regexes for the patterns (whole lexeme with quotes).
        let mut pattern_keys = Vec::new();
        for (pat, _) in &pattern_props {
            let r = self.pattern(pat, &child(ptr, "patternProperties"), "patternProperties")?;
            let body = match r {
                Some(r) => RegexAst::And(vec![self.string_any(), r]),
                None => self.string_any(),
            };
            pattern_keys.push(Self::quoted(body));
        }
        if pattern_props.len() > 1 {
            self.approx(
                ptr,
                "patternProperties",
                Direction::Superset,
                "a key matching several patterns needs to match only one of their schemas",
            )?;
        }
        let additional = m.get("additionalProperties");
        // Named keys: properties first, then required keys not listed there.
        let mut named: Vec<(String, Option<&Value>)> =
            props.iter().map(|(k, v)| (k.clone(), Some(v))).collect();
        for r in &required {
            if !props.contains_key(r) {
                named.push((r.clone(), None));
            }
        }
        let mut named_members = Vec::with_capacity(named.len());
        let mut literal_keys = Vec::with_capacity(named.len());
        for (k, schema) in &named {
            let lit = super::pydumps::string(k);
            literal_keys.push(key_spellings(k, self.opts.llguidance_spellings));
            let kp = child(&child(ptr, "properties"), k);
            // Schemas of matching patterns apply too.
            let mut extra: Vec<Value> = Vec::new();
            for (i, pk) in pattern_keys.iter().enumerate() {
                if self.key_matches(&lit, pk)? {
                    extra.push(pattern_props[i].1.clone());
                }
            }
            let value = match schema {
                Some(s) if extra.is_empty() => self.sub(s, &kp, base)?,
                _ => {
                    let mut acc = match schema {
                        Some(s) => (*s).clone(),
                        None => {
                            if extra.is_empty() {
                                match additional {
                                    Some(a) => a.clone(),
                                    None => Value::Bool(self.opts.additional_properties_default),
                                }
                            } else {
                                Value::Bool(true)
                            }
                        }
                    };
                    for e in extra {
                        acc = Self::all_of(acc, e);
                    }
                    self.sub_owned(acc, &kp, base)?
                }
            };
            let mut key_re = key_spellings(k, self.opts.llguidance_spellings);
            if let Some(kn) = &key_names {
                key_re = RegexAst::And(vec![key_re, kn.clone()]);
            }
            let kl = self.lexeme(&lit, key_re)?;
            let mem = self.member(kl, value)?;
            named_members.push((mem, required.iter().any(|r| r == k)));
        }
        let not_named = if literal_keys.is_empty() {
            None
        } else {
            Some(RegexAst::Not(Box::new(RegexAst::Or(literal_keys))))
        };
        let mut extras = Vec::new();
        for (i, (_, schema)) in pattern_props.iter().enumerate() {
            let mut parts = vec![pattern_keys[i].clone()];
            parts.extend(not_named.clone());
            parts.extend(key_names.clone());
            let kl = self.lexeme(
                &format!("key:{ptr}/patternProperties/{i}"),
                RegexAst::And(parts),
            )?;
            let sp = format!("{ptr}/patternProperties/{}", ptr_token(&pattern_props[i].0));
            let v = self.sub(schema, &sp, base)?;
            extras.push(self.member(kl, v)?);
        }
        let add_value = match additional {
            Some(Value::Bool(false)) => None,
            Some(a) => Some(self.sub(a, &child(ptr, "additionalProperties"), base)?),
            None => {
                if self.opts.additional_properties_default {
                    Some(self.any()?)
                } else {
                    None
                }
            }
        };
        if let Some(v) = add_value {
            let mut parts = vec![Self::quoted(self.string_any())];
            parts.extend(not_named.clone());
            for pk in &pattern_keys {
                parts.push(RegexAst::Not(Box::new(pk.clone())));
            }
            parts.extend(key_names.clone());
            let kl = if parts.len() == 1 {
                self.string_lexeme()?
            } else {
                self.lexeme(
                    &format!("key:{ptr}/additionalProperties"),
                    RegexAst::And(parts),
                )?
            };
            extras.push(self.member(kl, v)?);
        }
        let min_p = m.get("minProperties").and_then(as_count).unwrap_or(0);
        let max_p = m.get("maxProperties").and_then(as_count);
        let body = self.object_body(&named_members, &extras, min_p, max_p, ptr)?;
        let obj = self.nt(&format!("object:{ptr}"))?;
        self.rule(
            obj,
            vec![
                IrSymbol::Lexeme(p.lbrace),
                IrSymbol::Nonterminal(body),
                IrSymbol::Lexeme(p.rbrace),
            ],
        )?;
        Ok(obj)
    }

    /// The members between the braces: a small automaton over (position or set of required
    /// keys seen, number of members so far).
    fn object_body(
        &mut self,
        named: &[(u32, bool)],
        extras: &[u32],
        min_p: u64,
        max_p: Option<u64>,
        ptr: &str,
    ) -> R<u32> {
        let p = self.punct()?;
        let k = named.iter().filter(|x| x.1).count() as u64;
        let possible = if extras.is_empty() {
            Some(named.len() as u64)
        } else {
            None
        };
        let need_min = min_p > k;
        let need_max = max_p.is_some_and(|mx| possible.is_none_or(|n| mx < n));
        let mut cap: u64 = 1;
        let mut min_p = min_p;
        let mut max_p = max_p;
        if need_min || need_max {
            cap = min_p.max(max_p.map_or(0, |x| x + 1)).max(1);
            if cap > MAX_PROPERTY_COUNT {
                self.approx(
                    ptr,
                    if need_max {
                        "maxProperties"
                    } else {
                        "minProperties"
                    },
                    Direction::Superset,
                    "property count too large to track",
                )?;
                cap = 1;
                min_p = 0;
                max_p = None;
            }
        } else {
            min_p = 0;
            max_p = None;
        }
        let order = self.opts.property_order;
        // Any order tracks the set of named keys seen ([`AnyOrderPlan`]), so that none
        // repeats.
        let plan = if order == PropertyOrder::AnyOrder {
            // Past a quarter of the grammar budget, objects track fewer optional keys.
            let lean = self.size > self.limits.max_grammar_size / 4;
            let plan = AnyOrderPlan::new(named, extras.is_empty(), cap, max_p, lean);
            cap = plan.cap;
            max_p = plan.max_p;
            Some(plan)
        } else {
            None
        };
        let inc = |c: u64| (c + 1).min(cap);
        let can_add = |c: u64| max_p.is_none_or(|mx| c < mx);
        let mut states: BTreeMap<(u64, u64), u32> = BTreeMap::new();
        let mut todo: Vec<(u64, u64)> = vec![(0, 0)];
        let start = self.nt(&format!("members:{ptr}"))?;
        states.insert((0, 0), start);
        let sep = |c: u64, v: &mut Vec<IrSymbol>| {
            if c > 0 {
                v.push(IrSymbol::Lexeme(p.comma));
            }
        };
        match order {
            PropertyOrder::SchemaOrder => {
                let extra_nt = if extras.is_empty() {
                    None
                } else {
                    let e = self.nt("extra")?;
                    for &x in extras {
                        self.rule(e, vec![IrSymbol::Nonterminal(x)])?;
                    }
                    Some(e)
                };
                let n = named.len() as u64;
                while let Some((i, c)) = todo.pop() {
                    let here = states[&(i, c)];
                    let mut goto =
                        |s: &mut Self, key: (u64, u64), todo: &mut Vec<(u64, u64)>| -> R<u32> {
                            if let Some(&x) = states.get(&key) {
                                return Ok(x);
                            }
                            let x = s.nt("members")?;
                            states.insert(key, x);
                            todo.push(key);
                            Ok(x)
                        };
                    if i < n {
                        let (mem, req) = named[i as usize];
                        if can_add(c) {
                            let next = goto(self, (i + 1, inc(c)), &mut todo)?;
                            let mut rhs = Vec::new();
                            sep(c, &mut rhs);
                            rhs.push(IrSymbol::Nonterminal(mem));
                            rhs.push(IrSymbol::Nonterminal(next));
                            self.rule(here, rhs)?;
                        }
                        if !req {
                            let next = goto(self, (i + 1, c), &mut todo)?;
                            self.rule(here, vec![IrSymbol::Nonterminal(next)])?;
                        }
                    } else {
                        if c >= min_p {
                            self.rule(here, vec![])?;
                        }
                        if let Some(e) = extra_nt
                            && can_add(c)
                        {
                            let next = goto(self, (i, inc(c)), &mut todo)?;
                            let mut rhs = Vec::new();
                            sep(c, &mut rhs);
                            rhs.push(IrSymbol::Nonterminal(e));
                            rhs.push(IrSymbol::Nonterminal(next));
                            self.rule(here, rhs)?;
                        }
                    }
                }
            }
            PropertyOrder::AnyOrder => {
                let plan = plan.unwrap_or_default();
                // Bit `j` of a state's mask: `named[plan.tracked[j]]` is present; with
                // `counted`, the mask is the number of required members seen instead.
                let need: u64 = if plan.counted {
                    plan.required as u64
                } else {
                    plan.tracked
                        .iter()
                        .enumerate()
                        .filter(|&(_, &i)| named[i].1)
                        .fold(0, |m, (j, _)| m | (1 << j))
                };
                let pool: Vec<u32> = named
                    .iter()
                    .enumerate()
                    .filter(|&(i, x)| !(plan.tracked.contains(&i) || (plan.counted && x.1)))
                    .map(|(_, x)| x.0)
                    .chain(extras.iter().copied())
                    .collect();
                let group = |s: &mut Self, name: &str, members: &[u32]| -> R<Option<u32>> {
                    if members.is_empty() {
                        return Ok(None);
                    }
                    let e = s.nt(name)?;
                    for &x in members {
                        s.rule(e, vec![IrSymbol::Nonterminal(x)])?;
                    }
                    Ok(Some(e))
                };
                let pool_nt = group(self, "optional", &pool)?;
                let req_members: Vec<u32> = named.iter().filter(|x| x.1).map(|x| x.0).collect();
                let req_nt = if plan.counted {
                    group(self, "required", &req_members)?
                } else {
                    None
                };
                let done = |mask: u64| {
                    if plan.counted {
                        mask == need
                    } else {
                        mask & need == need
                    }
                };
                while let Some((mask, c)) = todo.pop() {
                    let here = states[&(mask, c)];
                    let mut goto =
                        |s: &mut Self, key: (u64, u64), todo: &mut Vec<(u64, u64)>| -> R<u32> {
                            if let Some(&x) = states.get(&key) {
                                return Ok(x);
                            }
                            let x = s.nt("members")?;
                            states.insert(key, x);
                            todo.push(key);
                            Ok(x)
                        };
                    if done(mask) && c >= min_p {
                        self.rule(here, vec![])?;
                    }
                    if !can_add(c) {
                        continue;
                    }
                    let mut steps: Vec<(u32, u64)> = Vec::new();
                    for (j, &i) in plan.tracked.iter().enumerate() {
                        if mask & (1 << j) == 0 {
                            steps.push((named[i].0, mask | (1 << j)));
                        }
                    }
                    if let Some(r) = req_nt
                        && mask < need
                    {
                        steps.push((r, mask + 1));
                    }
                    if let Some(o) = pool_nt {
                        steps.push((o, mask));
                    }
                    for (mem, to) in steps {
                        let next = goto(self, (to, inc(c)), &mut todo)?;
                        let mut rhs = Vec::new();
                        sep(c, &mut rhs);
                        rhs.push(IrSymbol::Nonterminal(mem));
                        rhs.push(IrSymbol::Nonterminal(next));
                        self.rule(here, rhs)?;
                    }
                }
            }
        }
        Ok(start)
    }
}

/// How an any-order object tracks its named keys ([`PropertyOrder::AnyOrder`]).
///
/// Every named key (of `properties` and `required`) is tracked in a set when the object has
/// at most [`MAX_TRACKED_KEYS`] of them and the states fit [`MAX_OBJECT_STATES`] and
/// [`MAX_OBJECT_RULES`] ([`MAX_OBJECT_RULES_LEAN`] in a large grammar): each key appears at
/// most once, exactly. A larger object tracks its required keys and, while the
/// states fit, its first optional ones (schema order); the other optional keys form a pool
/// that may repeat, and a closed object (no `additionalProperties`/`patternProperties`
/// key) is then bounded to as many members as it has named keys, so that a repeated key
/// cannot loop. Beyond 10 required keys (or the state budget) the required keys are counted
/// instead, which is exact for documents without duplicate keys.
#[derive(Debug, Default)]
struct AnyOrderPlan {
    /// Indices (into the named members) of the tracked keys: bit `j` of a state's mask is
    /// `tracked[j]`.
    tracked: Vec<usize>,
    /// Required keys are counted, not tracked.
    counted: bool,
    /// Required keys.
    required: usize,
    /// The member counter's cap and the most members (see `object_body`).
    cap: u64,
    max_p: Option<u64>,
}

impl AnyOrderPlan {
    fn new(named: &[(u32, bool)], closed: bool, cap: u64, max_p: Option<u64>, lean: bool) -> Self {
        let rules = if lean {
            MAX_OBJECT_RULES_LEAN
        } else {
            MAX_OBJECT_RULES
        };
        // States of `keys` tracked keys with a counter capped at `cap` (count 0 only with no
        // key), and their rules (one per tracked key, the pool, the end).
        let states = |keys: usize, cap: u64| {
            (1usize << keys)
                .saturating_mul(cap as usize)
                .saturating_add(1)
        };
        let fits = |keys: usize, cap: u64| {
            keys <= MAX_TRACKED_KEYS
                && states(keys, cap) <= MAX_OBJECT_STATES
                && states(keys, cap).saturating_mul(keys + 2) <= rules
        };
        let n = named.len();
        let required = named.iter().filter(|x| x.1).count();
        let plan = |tracked, counted, cap, max_p| AnyOrderPlan {
            tracked,
            counted,
            required,
            cap,
            max_p,
        };
        // An open object takes any number of other keys, so tracking its optional keys
        // cannot stop a loop; it would only multiply lexer states (measured: +4% mask time
        // on MaskBench, where most objects are open). Its required keys are tracked.
        if closed && fits(n, cap) {
            return plan((0..n).collect(), false, cap, max_p);
        }
        // Required keys alone are tracked up to `MAX_TRACKED_REQUIRED` (the state budget
        // only), counted beyond.
        let counted =
            !(required <= MAX_TRACKED_REQUIRED && states(required, cap) <= MAX_OBJECT_STATES);
        // Some optional keys go untracked: bound a closed object's members by its named
        // keys, when the counter fits the budgets.
        let (mut cap, mut max_p) = (cap, max_p);
        let bound = n as u64;
        let bounded_cap = cap.max(bound + 1);
        let base = if counted {
            (required + 1).saturating_mul(bounded_cap as usize + 1)
        } else {
            states(required, bounded_cap)
        };
        if closed
            && max_p.is_none_or(|m| m > bound)
            && base <= MAX_OBJECT_STATES
            && base.saturating_mul(required.min(MAX_TRACKED_REQUIRED) + 2) <= MAX_OBJECT_RULES
        {
            cap = bounded_cap;
            max_p = Some(bound);
        }
        if counted {
            return plan(Vec::new(), true, cap, max_p);
        }
        let mut tracked: Vec<usize> = (0..n).filter(|&i| named[i].1).collect();
        for i in (0..n).filter(|&i| closed && !named[i].1) {
            if !fits(tracked.len() + 1, cap) {
                break;
            }
            tracked.push(i);
        }
        plan(tracked, false, cap, max_p)
    }
}

/// The longest nonterminal name kept whole (see `Compiler::nt`).
const MAX_NAME: usize = 64;
/// Bytes of a cut name kept from its start; the end fills the rest, after `…`.
const NAME_HEAD: usize = 24;

/// `name`, or its first and last bytes (on character boundaries) around `…` when it is
/// longer than [`MAX_NAME`].
fn short_name(name: &str) -> String {
    if name.len() <= MAX_NAME {
        return name.to_string();
    }
    let head = name.floor_char_boundary(NAME_HEAD);
    let tail = name.ceil_char_boundary(name.len() - (MAX_NAME - NAME_HEAD - '…'.len_utf8()));
    alloc::format!("{}…{}", &name[..head], &name[tail..])
}
