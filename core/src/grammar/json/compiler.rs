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

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::mem::size_of;

use serde_json::{Map, Value};

use super::ecma;
use super::formats;
use super::pydumps;
use super::{CoverageReport, CoverageStatus, Direction, JsonOptions};
use super::{ELEMENT_BYTES, MEMBER_BYTES, OBJECT_BYTES};
use crate::error::{GrammarError, LimitKind};
use crate::ir::{GrammarIr, IrSymbol};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{ExprSet, RegexAst};

mod arrays;
mod flatten;
mod locate;
mod negate;
mod numbers;
mod objects;
mod refs;
mod report;
mod schemas;
mod shared;
mod strings;

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
/// Most spaces and tabs of a [`super::Whitespace::Pretty`] gap before its line break, if any
/// (`", "`, `": "`).
const PRETTY_INLINE: u32 = 2;
/// Most named properties (`properties` and `required`) of an any-order object tracked as a
/// set, so that none repeats ([`objects::AnyOrderPlan`]), within [`MAX_OBJECT_RULES`].
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
    /// Draft 3–4: `id` (not only `$id`) sets the base URI, and an `integer` is one in
    /// its spelling (plain digits: `1.0` and `1e2` are numbers, not integers).
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
}
