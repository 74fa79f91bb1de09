//! The builder every front end lowers through: nonterminals and rules, lexemes deduplicated by
//! key (literals, code-point classes, patterns, special tokens), and the EBNF operators
//! (group, optional, star, plus, `{m,n}`) as helper nonterminals, deduplicated too.
//!
//! Everything is charged as it is made: [`Limits::max_grammar_size`] counts rule symbols and
//! lexeme sizes, the [`CompileBudget`] pays one unit of fuel per symbol and the heap bytes
//! estimated below. `{m,n}` costs `O(m + n)` symbols and helpers (never `m * n`; `O(m +
//! log n)` with [`Builder::repeat_doubling`]), and is refused past [`Limits::max_repeat`].

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use hashbrown::{HashMap, HashSet};

use super::{GrammarIr, IrLexeme, IrSymbol, LexemeMode};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind, Span};
use crate::limits::{CompileBudget, Limits};
use crate::regex::{PatternFlags, RegexAst};

/// Estimated heap bytes of one rule symbol (the symbol, its share of the rule vector, and
/// the copies helper keys and the compiled rules make of it).
pub const SYMBOL_BYTES: usize = 32;
/// Estimated heap bytes of one helper nonterminal beyond its symbols (its entry, name and
/// map slots).
pub const HELPER_BYTES: usize = 384;

/// How special tokens are found by name and id (the vocabulary implements it; see
/// [`crate::Vocabulary::special_encoding`]).
pub trait SpecialTokens {
    /// The byte strings of the special tokens written `name` (like `"<|eot_id|>"`, brackets
    /// included), one per token with that name; empty if unknown.
    fn by_name(&self, name: &str) -> Vec<Vec<u8>>;
    /// The byte string of special token `id` in `<[id]>`; `None` if `id` is not a special
    /// token.
    fn by_id(&self, id: u32) -> Option<Vec<u8>>;
    /// The byte strings of every special token but the end-of-sequence ones, ascending by
    /// id (what "any one special token" may be inside a grammar). None by default.
    fn all_but_eos(&self) -> Vec<Vec<u8>> {
        Vec::new()
    }
    /// The byte string text token `id` is matched as by id (`<[id]>` on a token that is
    /// not special): its encoding as if it were special; `None` if `id` is special, unused
    /// or out of range. A grammar naming a text token this way lists it in
    /// [`GrammarIr::id_tokens`], and the compiled grammar matches that token by id only.
    /// None by default.
    fn text_by_id(&self, id: u32) -> Option<Vec<u8>> {
        let _ = id;
        None
    }
}

/// What makes two anonymous lexemes the same lexeme.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LexemeKey {
    /// A literal byte string.
    Literal(Vec<u8>),
    /// A literal matched ASCII-case-insensitively.
    LiteralNoCase(String),
    /// A `regex-syntax` pattern with its flags (as bits).
    Pattern(String, u8),
    /// A set of code-point ranges, negated or not.
    Class(Vec<(char, char)>, bool),
    /// Any one code point.
    AnyChar,
    /// One of these special-token encodings.
    Special(Vec<Vec<u8>>),
    /// Front-end specific: a name it chose (a Lark terminal, a lowered GBNF rule).
    Named(String),
}

/// Key of a helper nonterminal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum HelperKey {
    Alts(Vec<Vec<IrSymbol>>),
    Star(Vec<IrSymbol>),
    Plus(Vec<IrSymbol>),
    /// Up to `n` more copies.
    Tail(Vec<IrSymbol>, u32),
    /// Up to `2^k` more copies, as two halves.
    Double(Vec<IrSymbol>, u32),
}

impl HelperKey {
    fn symbols(&self) -> usize {
        match self {
            HelperKey::Alts(alts) => alts.iter().map(|a| a.len() + 1).sum(),
            HelperKey::Star(s)
            | HelperKey::Plus(s)
            | HelperKey::Tail(s, _)
            | HelperKey::Double(s, _) => s.len(),
        }
    }
}

/// A result whose error is a located [`GrammarError`].
pub type BResult<T> = Result<T, GrammarError>;

/// Builds a [`GrammarIr`] within the limits and the compile budget.
pub struct Builder<'b> {
    ir: GrammarIr,
    limits: &'b Limits,
    budget: &'b mut CompileBudget,
    /// Grammar size so far ([`Limits::max_grammar_size`]).
    size: usize,
    lexemes: HashMap<LexemeKey, u32>,
    helpers: HashMap<HelperKey, u32>,
    /// Nonterminal names in use.
    taken: HashSet<String>,
    counter: usize,
}

impl<'b> Builder<'b> {
    /// An empty grammar under `limits`, paid from `budget`.
    pub fn new(limits: &'b Limits, budget: &'b mut CompileBudget) -> Builder<'b> {
        Builder {
            ir: GrammarIr::default(),
            limits,
            budget,
            size: 0,
            lexemes: HashMap::new(),
            helpers: HashMap::new(),
            taken: HashSet::new(),
            counter: 0,
        }
    }

    /// The grammar so far.
    pub fn ir(&self) -> &GrammarIr {
        &self.ir
    }

    /// The grammar so far, to change in place (a front end that embeds a sub-grammar or
    /// rewrites rules it made; what it adds this way it has charged itself).
    pub fn ir_mut(&mut self) -> &mut GrammarIr {
        &mut self.ir
    }

    /// A nonterminal whose cost the front end charged already (with its definition);
    /// the name is reserved.
    pub fn declare_nonterminal(&mut self, name: &str, span: Option<Span>) -> u32 {
        self.taken.insert(String::from(name));
        self.ir.add_nonterminal(name, span)
    }

    /// The limits it is built under.
    pub fn limits(&self) -> &Limits {
        self.limits
    }

    /// The compile budget (for stages the builder does not know, such as a sub-grammar).
    pub fn budget(&mut self) -> &mut CompileBudget {
        self.budget
    }

    /// The finished grammar, starting at `start`.
    pub fn finish(mut self, start: u32) -> GrammarIr {
        self.ir.start = start;
        self.ir
    }

    /// Count `n` against the grammar size and pay its fuel.
    pub fn charge_units(&mut self, n: usize, span: Option<Span>) -> BResult<()> {
        self.size = self.size.saturating_add(n);
        let kind = if self.size > self.limits.max_grammar_size {
            Some(LimitKind::GrammarSize)
        } else {
            self.budget.spend(n as u64).err()
        };
        match kind {
            Some(kind) => Err(located(GrammarError::limit(kind), span)),
            None => Ok(()),
        }
    }

    /// Charge `bytes` of front-end heap.
    pub fn charge_bytes(&mut self, bytes: usize, span: Option<Span>) -> BResult<()> {
        self.budget
            .charge(bytes)
            .map_err(|k| located(GrammarError::limit(k), span))
    }

    /// Pay for `n` rule symbols: grammar size, fuel and [`SYMBOL_BYTES`] each.
    pub fn charge(&mut self, n: usize, span: Option<Span>) -> BResult<()> {
        self.charge_units(n, span)?;
        self.charge_bytes(n.saturating_mul(SYMBOL_BYTES), span)
    }

    /// A nonterminal named `name` (the name is reserved: helpers never take it).
    pub fn nonterminal(&mut self, name: &str, span: Option<Span>) -> BResult<u32> {
        self.charge_bytes(
            HELPER_BYTES.saturating_add(name.len().saturating_mul(2)),
            span,
        )?;
        self.taken.insert(String::from(name));
        Ok(self.ir.add_nonterminal(name, span))
    }

    /// A production `lhs → rhs`.
    pub fn rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>, span: Option<Span>) -> BResult<()> {
        self.charge(1 + rhs.len(), span)?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    /// A lexeme; with a `key`, the one lexeme made for that key (the first one's name, mode
    /// and span win). `units` is its size for [`Limits::max_grammar_size`] (its regex's
    /// node count, say).
    pub fn lexeme(
        &mut self,
        key: Option<LexemeKey>,
        lexeme: IrLexeme,
        units: usize,
    ) -> BResult<u32> {
        if let Some(k) = &key
            && let Some(&id) = self.lexemes.get(k)
        {
            self.charge(1, lexeme.span)?;
            return Ok(id);
        }
        let span = lexeme.span;
        self.charge_units(units.max(1), span)?;
        let key_bytes = match &key {
            Some(LexemeKey::Literal(b)) => b.len(),
            Some(LexemeKey::LiteralNoCase(s) | LexemeKey::Pattern(s, _) | LexemeKey::Named(s)) => {
                s.len()
            }
            Some(LexemeKey::Class(r, _)) => r.len() * 8,
            Some(LexemeKey::Special(v)) => v.iter().map(|e| e.len() + 24).sum(),
            Some(LexemeKey::AnyChar) | None => 0,
        };
        let bytes = (2 * core::mem::size_of::<IrLexeme>())
            .saturating_add(lexeme.name.len())
            .saturating_add(key_bytes.saturating_mul(3));
        self.charge_bytes(bytes, span)?;
        let id = self.ir.add_lexeme(lexeme);
        if let Some(k) = key {
            self.lexemes.insert(k, id);
        }
        Ok(id)
    }

    /// The lexeme matching exactly `text` (UTF-8 of a literal).
    pub fn literal(&mut self, text: &[u8], span: Option<Span>) -> BResult<u32> {
        let key = LexemeKey::Literal(text.to_vec());
        if let Some(id) = self.known(&key, span)? {
            return Ok(id);
        }
        let name = format!("{:?}", String::from_utf8_lossy(text));
        let lexeme = text_lexeme(name, RegexAst::Literal(text.to_vec()), span);
        self.lexeme(Some(key), lexeme, 1)
    }

    /// The lexeme made under `key` already, charged as [`Builder::lexeme`] charges a reuse
    /// (a front end's repeated characters and classes skip building names and regexes).
    fn known(&mut self, key: &LexemeKey, span: Option<Span>) -> BResult<Option<u32>> {
        match self.lexemes.get(key) {
            Some(&id) => {
                self.charge(1, span)?;
                Ok(Some(id))
            }
            None => Ok(None),
        }
    }

    /// The lexeme matching `text` ASCII-case-insensitively.
    pub fn literal_no_case(&mut self, text: &str, span: Option<Span>) -> BResult<u32> {
        let name = format!("{text:?}i");
        let flags = PatternFlags {
            case_insensitive: true,
            ..PatternFlags::default()
        };
        let ast = RegexAst::Pattern(regex_syntax::escape(text), flags);
        let lexeme = text_lexeme(name, ast, span);
        self.lexeme(Some(LexemeKey::LiteralNoCase(text.into())), lexeme, 1)
    }

    /// The lexeme matching one code point in `ranges` (inclusive), or not in them when
    /// `negated` (any code point otherwise, newline included). Its regex is
    /// [`class_regex`].
    pub fn class(
        &mut self,
        ranges: &[(char, char)],
        negated: bool,
        span: Option<Span>,
    ) -> BResult<u32> {
        self.charge_bytes(ranges.len().saturating_mul(40), span)?;
        let key = LexemeKey::Class(ranges.to_vec(), negated);
        if let Some(id) = self.known(&key, span)? {
            return Ok(id);
        }
        let lexeme = text_lexeme(
            class_name(ranges, negated),
            class_regex(ranges, negated),
            span,
        );
        self.lexeme(Some(key), lexeme, 1)
    }

    /// The lexeme matching any one code point.
    pub fn any_char(&mut self, span: Option<Span>) -> BResult<u32> {
        let ast = code_points_regex(&[(0, 0xD7FF), (0xE000, 0x10FFFF)]);
        let lexeme = text_lexeme(String::from("/./"), ast, span);
        self.lexeme(Some(LexemeKey::AnyChar), lexeme, 1)
    }

    /// The lexeme matching the special token(s) written `name`; `None` if the vocabulary
    /// has none.
    pub fn special_by_name(
        &mut self,
        specials: &dyn SpecialTokens,
        name: &str,
        span: Option<Span>,
    ) -> BResult<Option<u32>> {
        let encodings = specials.by_name(name);
        if encodings.is_empty() {
            return Ok(None);
        }
        self.special(encodings, String::from(name), span).map(Some)
    }

    /// The lexeme matching token `id` by id: a special token, or a text token, which is
    /// then recorded in [`GrammarIr::id_tokens`] (see [`SpecialTokens::text_by_id`]);
    /// `None` if `id` is neither (unused or out of range).
    pub fn special_by_id(
        &mut self,
        specials: &dyn SpecialTokens,
        id: u32,
        span: Option<Span>,
    ) -> BResult<Option<u32>> {
        let Some(enc) = self.token_by_id(specials, id, span)? else {
            return Ok(None);
        };
        self.special(vec![enc], format!("<[{id}]>"), span).map(Some)
    }

    /// The encoding token `id` is matched as by id: a special token's, or a text token's,
    /// which is then recorded in [`GrammarIr::id_tokens`] (charged); `None` if `id` is
    /// neither.
    pub fn token_by_id(
        &mut self,
        specials: &dyn SpecialTokens,
        id: u32,
        span: Option<Span>,
    ) -> BResult<Option<Vec<u8>>> {
        if let Some(enc) = specials.by_id(id) {
            return Ok(Some(enc));
        }
        #[cfg(not(feature = "text-token-ids"))]
        {
            let _ = span;
            Ok(None)
        }
        #[cfg(feature = "text-token-ids")]
        self.text_token_by_id(specials, id, span)
    }

    /// [`Builder::token_by_id`] for a token that is not special.
    #[cfg(feature = "text-token-ids")]
    fn text_token_by_id(
        &mut self,
        specials: &dyn SpecialTokens,
        id: u32,
        span: Option<Span>,
    ) -> BResult<Option<Vec<u8>>> {
        let Some(enc) = specials.text_by_id(id) else {
            return Ok(None);
        };
        if self.ir.id_tokens.binary_search(&id).is_err() {
            self.charge_units(1, span)?;
            self.charge_bytes(core::mem::size_of::<u32>(), span)?;
            self.ir.add_id_tokens(&[id]);
        }
        Ok(Some(enc))
    }

    /// The lexeme matching any one special token but the end-of-sequence ones and those
    /// whose byte strings are in `excluded` (GBNF's `!<token>`); `None` if none is left.
    pub fn special_except(
        &mut self,
        specials: &dyn SpecialTokens,
        excluded: &[Vec<u8>],
        span: Option<Span>,
    ) -> BResult<Option<u32>> {
        let mut encodings = specials.all_but_eos();
        self.charge_bytes(
            encodings
                .iter()
                .map(|e| e.len().saturating_add(24))
                .fold(0usize, usize::saturating_add),
            span,
        )?;
        encodings.retain(|e| !excluded.contains(e));
        if encodings.is_empty() {
            return Ok(None);
        }
        let units = encodings.len();
        self.charge_units(units, span)?;
        self.special(encodings, String::from("<special>"), span)
            .map(Some)
    }

    fn special(
        &mut self,
        encodings: Vec<Vec<u8>>,
        name: String,
        span: Option<Span>,
    ) -> BResult<u32> {
        let ast = if encodings.len() == 1 {
            RegexAst::Literal(encodings[0].clone())
        } else {
            RegexAst::Or(encodings.iter().cloned().map(RegexAst::Literal).collect())
        };
        let lexeme = text_lexeme(name, ast, span);
        self.lexeme(Some(LexemeKey::Special(encodings)), lexeme, 1)
    }

    /// A fresh helper nonterminal name `{base}_{kind}_{n}`.
    pub fn fresh_name(&mut self, base: &str, kind: &str) -> String {
        loop {
            self.counter += 1;
            // Written by hand: `format!` costs more than the rest of a helper.
            let mut digits = [0u8; 20];
            let mut at = digits.len();
            let mut k = self.counter;
            loop {
                at -= 1;
                digits[at] = b'0' + (k % 10) as u8;
                k /= 10;
                if k == 0 {
                    break;
                }
            }
            let mut name = String::with_capacity(base.len() + kind.len() + 2 + digits.len() - at);
            name.push_str(base);
            name.push('_');
            name.push_str(kind);
            name.push('_');
            name.extend(digits[at..].iter().map(|&d| char::from(d)));
            if !self.taken.contains(name.as_str()) {
                self.taken.insert(name.clone());
                return name;
            }
        }
    }

    /// The helper for `key`, created with `productions(id)` if new.
    fn helper(
        &mut self,
        key: HelperKey,
        base: &str,
        kind: &str,
        span: Option<Span>,
        productions: impl FnOnce(u32) -> Vec<Vec<IrSymbol>>,
    ) -> BResult<u32> {
        if let Some(&id) = self.helpers.get(&key) {
            return Ok(id);
        }
        let key_bytes = key
            .symbols()
            .saturating_mul(2 * core::mem::size_of::<IrSymbol>());
        let bytes = HELPER_BYTES
            .saturating_add(key_bytes)
            .saturating_add(base.len().saturating_add(kind.len()).saturating_mul(3));
        self.charge_bytes(bytes, span)?;
        let name = self.fresh_name(base, kind);
        let id = self.ir.add_nonterminal(name, span);
        for rhs in productions(id) {
            self.rule(id, rhs, span)?;
        }
        self.helpers.insert(key, id);
        Ok(id)
    }

    /// `alts` as one symbol sequence: itself if there is one alternative, else a `group`
    /// helper (one per distinct set of alternatives).
    pub fn group(
        &mut self,
        mut alts: Vec<Vec<IrSymbol>>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        if alts.len() == 1 {
            return Ok(alts.pop().unwrap_or_default());
        }
        let key = HelperKey::Alts(alts.clone());
        let id = self.helper(key, base, "group", span, |_| alts)?;
        self.charge(1, span)?;
        Ok(vec![IrSymbol::Nonterminal(id)])
    }

    /// `(alts)?` as a symbol sequence.
    pub fn optional(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        self.repeat(alts, 0, Some(1), base, span)
    }

    /// `(alts)*` as a symbol sequence.
    pub fn star(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        self.repeat(alts, 0, None, base, span)
    }

    /// `(alts)+` as a symbol sequence.
    pub fn plus(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        self.repeat(alts, 1, None, base, span)
    }

    /// `(alts){min,max}` (`max` `None`: unbounded) as a symbol sequence: `min` copies, then
    /// a left-recursive `star`/`plus` helper or a chain of `max - min` optional tails
    /// (`tail_k → ε | op tail_{k-1}`). Helpers are named after `base`.
    pub fn repeat(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        min: u32,
        max: Option<u32>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        self.repeat_in(alts, min, max, base, span, false)
    }

    /// [`Builder::repeat`], but the `max - min` optional copies of `{m,n}` are doubling
    /// helpers (`d_0 → ε | op`, `d_k → d_{k-1} d_{k-1}`, one per bit of `max - min`, used
    /// for its set bits): `O(log n)` helpers, not `n`, for an ambiguous grammar of the same
    /// language. For front ends whose grammars go through [`crate::ir::regular::lexify`],
    /// which folds either form into one `op{m,n}` (GBNF: `[0-9]{0,15}` costs 4 helpers).
    pub fn repeat_doubling(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        min: u32,
        max: Option<u32>,
        base: &str,
        span: Option<Span>,
    ) -> BResult<Vec<IrSymbol>> {
        self.repeat_in(alts, min, max, base, span, true)
    }

    fn repeat_in(
        &mut self,
        alts: Vec<Vec<IrSymbol>>,
        min: u32,
        max: Option<u32>,
        base: &str,
        span: Option<Span>,
        doubling: bool,
    ) -> BResult<Vec<IrSymbol>> {
        let limit = self.limits.max_repeat;
        if min > limit || max.is_some_and(|n| n > limit) {
            return Err(located(GrammarError::limit(LimitKind::RepeatCount), span));
        }
        if max.is_some_and(|n| n < min) {
            return Err(located(
                GrammarError::new(
                    GrammarErrorKind::Syntax,
                    format!(
                        "repetition {{{min},{}}}: the maximum is below the minimum",
                        max.unwrap_or(0)
                    ),
                ),
                span,
            ));
        }
        let mut out = Vec::new();
        if min == 0 && max == Some(1) {
            let mut alts = alts;
            if alts.iter().all(|a| !a.is_empty()) {
                alts.insert(0, Vec::new());
            }
            if alts.len() > 1 {
                let id = self.helper(HelperKey::Alts(alts.clone()), base, "opt", span, |_| alts)?;
                self.charge(1, span)?;
                out.push(IrSymbol::Nonterminal(id));
            }
            return Ok(out);
        }
        let mut op = self.group(alts, base, span)?;
        if op.is_empty() || max == Some(0) {
            return Ok(out);
        }
        // Copies of a multi-symbol operand go through one helper to keep expansions small.
        let copies = max.unwrap_or(min);
        if op.len() > 1 && copies > 1 {
            let key = HelperKey::Alts(vec![op.clone()]);
            let id = self.helper(key, base, "group", span, |_| vec![op])?;
            self.charge(1, span)?;
            op = vec![IrSymbol::Nonterminal(id)];
        }
        match max {
            None if min == 0 => {
                let op2 = op.clone();
                let id = self.helper(HelperKey::Star(op), base, "star", span, |id| {
                    let mut rec = vec![IrSymbol::Nonterminal(id)];
                    rec.extend(op2);
                    vec![Vec::new(), rec]
                })?;
                self.charge(1, span)?;
                out.push(IrSymbol::Nonterminal(id));
            }
            None => {
                self.push_copies(&mut out, &op, min - 1, span)?;
                let op2 = op.clone();
                let id = self.helper(HelperKey::Plus(op), base, "plus", span, |id| {
                    let mut rec = vec![IrSymbol::Nonterminal(id)];
                    rec.extend(op2.iter().copied());
                    vec![op2, rec]
                })?;
                self.charge(1, span)?;
                out.push(IrSymbol::Nonterminal(id));
            }
            Some(n) if doubling => {
                self.push_copies(&mut out, &op, min, span)?;
                self.doubling_tail(&mut out, &op, n.saturating_sub(min), base, span)?;
            }
            Some(n) => {
                self.push_copies(&mut out, &op, min, span)?;
                // tail_k: ε | op tail_{k-1}; tail_1: ε | op.
                let mut prev: Option<u32> = None;
                for k in 1..=n.saturating_sub(min) {
                    let mut rhs = op.clone();
                    if let Some(p) = prev {
                        rhs.push(IrSymbol::Nonterminal(p));
                    }
                    let key = HelperKey::Tail(op.clone(), k);
                    let id = self.helper(key, base, "rep", span, |_| vec![Vec::new(), rhs])?;
                    prev = Some(id);
                }
                if let Some(p) = prev {
                    self.charge(1, span)?;
                    out.push(IrSymbol::Nonterminal(p));
                }
            }
        }
        Ok(out)
    }

    /// `op{0,extra}` in doubling form onto `out`: `d_0 = op{0,1}` (`tail_1`'s rule), `d_k =
    /// op{0,2^k}` (`d_{k-1} d_{k-1}`); the set bits of `extra` pick the halves, largest first.
    fn doubling_tail(
        &mut self,
        out: &mut Vec<IrSymbol>,
        op: &[IrSymbol],
        extra: u32,
        base: &str,
        span: Option<Span>,
    ) -> BResult<()> {
        let mut picked = Vec::new();
        let mut prev: Option<u32> = None;
        for k in 0..u32::BITS - extra.leading_zeros() {
            let id = match prev {
                None => {
                    let rhs = op.to_vec();
                    let key = HelperKey::Tail(op.to_vec(), 1);
                    self.helper(key, base, "rep", span, |_| vec![Vec::new(), rhs])?
                }
                Some(p) => {
                    let key = HelperKey::Double(op.to_vec(), k);
                    let half = IrSymbol::Nonterminal(p);
                    self.helper(key, base, "rep", span, |_| vec![vec![half, half]])?
                }
            };
            if extra & (1 << k) != 0 {
                picked.push(id);
            }
            prev = Some(id);
        }
        for &id in picked.iter().rev() {
            self.charge(1, span)?;
            out.push(IrSymbol::Nonterminal(id));
        }
        Ok(())
    }

    fn push_copies(
        &mut self,
        out: &mut Vec<IrSymbol>,
        op: &[IrSymbol],
        copies: u32,
        span: Option<Span>,
    ) -> BResult<()> {
        for _ in 0..copies {
            self.charge(op.len(), span)?;
            out.extend_from_slice(op);
        }
        Ok(())
    }
}

/// A greedy, non-ignored text lexeme.
pub fn text_lexeme(name: String, regex: RegexAst, span: Option<Span>) -> IrLexeme {
    IrLexeme {
        name,
        regex,
        mode: LexemeMode::Greedy,
        ignore: false,
        span,
    }
}

/// One code point in `ranges` (or not in them, when `negated`) as a byte-level tree: the
/// ASCII part one byte set, each other range its UTF-8 byte sequences (so no pattern is
/// parsed); `Nothing` for an empty class.
///
/// The complement is computed here ([`class_ranges`]): `regex-syntax` negates
/// `[^\x{D7FF}\x{E000}]` to a class that still holds both (its gap computation steps over
/// the surrogates and turns the empty gap between them into the range `D7FF-E000`).
pub fn class_regex(ranges: &[(char, char)], negated: bool) -> RegexAst {
    code_points_regex(&class_ranges(ranges, negated))
}

/// The name of the class lexeme of `ranges`/`negated`: the positive pattern it stands for
/// (`/[\x{41}-\x{5A}]/`), or `[]` when it is empty.
pub fn class_name(ranges: &[(char, char)], negated: bool) -> String {
    let set = class_ranges(ranges, negated);
    if set.is_empty() {
        return String::from("[]");
    }
    let mut p = String::from("/[");
    for (a, b) in set {
        // Into `p` directly: a `format!` per range costs an allocation each.
        let _ = core::fmt::Write::write_fmt(&mut p, format_args!("\\x{{{a:X}}}-\\x{{{b:X}}}"));
    }
    p.push_str("]/");
    p
}

/// One code point of `set` (sorted, disjoint ranges of scalar values) as a byte-level tree.
fn code_points_regex(set: &[(u32, u32)]) -> RegexAst {
    let mut ascii = [0u32; 8];
    let mut alts = Vec::new();
    let byte_range = |lo: u8, hi: u8| {
        let mut w = [0u32; 8];
        for b in lo..=hi {
            w[(b >> 5) as usize] |= 1 << (b & 31);
        }
        RegexAst::ByteSet(w)
    };
    for &(a, b) in set {
        for x in a..=b.min(0x7F) {
            ascii[(x >> 5) as usize] |= 1 << (x & 31);
        }
        let (Some(lo), Some(hi)) = (char::from_u32(a.max(0x80)), char::from_u32(b)) else {
            continue;
        };
        if lo > hi {
            continue;
        }
        for seq in regex_syntax::utf8::Utf8Sequences::new(lo, hi) {
            let parts: Vec<RegexAst> = seq
                .as_slice()
                .iter()
                .map(|r| byte_range(r.start, r.end))
                .collect();
            alts.push(RegexAst::Concat(parts));
        }
    }
    if ascii != [0; 8] {
        alts.insert(0, RegexAst::ByteSet(ascii));
    }
    match alts.len() {
        0 => RegexAst::Nothing,
        1 => alts.pop().unwrap_or(RegexAst::Nothing),
        _ => RegexAst::Or(alts),
    }
}

/// The code points of `ranges` (or of their complement, when `negated`) as sorted, disjoint
/// ranges of scalar values (surrogates never included).
pub fn class_ranges(ranges: &[(char, char)], negated: bool) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = ranges
        .iter()
        .map(|&(a, b)| {
            let (a, b) = (u32::from(a), u32::from(b));
            if a <= b { (a, b) } else { (b, a) }
        })
        .collect();
    v.sort_unstable();
    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match merged.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    let set = if negated {
        let mut out = Vec::with_capacity(merged.len() + 1);
        let mut next = 0u32;
        for (a, b) in merged {
            if a > next {
                out.push((next, a - 1));
            }
            next = b.saturating_add(1);
        }
        if next <= 0x10FFFF {
            out.push((next, 0x10FFFF));
        }
        out
    } else {
        merged
    };
    // Scalar values only: cut every range at the surrogates.
    let mut out = Vec::with_capacity(set.len() + 1);
    for (a, b) in set {
        for (lo, hi) in [(0, 0xD7FF), (0xE000, 0x10FFFF)] {
            let (l, h) = (a.max(lo), b.min(hi));
            if l <= h {
                out.push((l, h));
            }
        }
    }
    out
}

fn located(mut err: GrammarError, span: Option<Span>) -> GrammarError {
    if err.span.is_none() {
        err.span = span;
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_ranges_complement_steps_over_the_surrogates() {
        let c = |a: u32| char::from_u32(a).unwrap();
        // regex-syntax's own negation keeps both of these (see `class_regex`).
        let got = class_ranges(&[(c(0xD7FF), c(0xD7FF)), (c(0xE000), c(0xE000))], true);
        assert_eq!(got, vec![(0, 0xD7FE), (0xE001, 0x10FFFF)]);
        let got = class_ranges(&[(c(0x800), c(0xD7FF)), (c(0xE000), c(0xFFFF))], true);
        assert_eq!(got, vec![(0, 0x7FF), (0x10000, 0x10FFFF)]);
        // Overlapping, reversed and adjacent ranges merge; a positive class keeps its set.
        let got = class_ranges(&[('c', 'a'), ('b', 'd'), ('e', 'e'), ('x', 'z')], false);
        assert_eq!(got, vec![(0x61, 0x65), (0x78, 0x7A)]);
        assert_eq!(
            class_ranges(&[], true),
            vec![(0, 0xD7FF), (0xE000, 0x10FFFF)]
        );
        assert!(class_ranges(&[('\0', c(0x10FFFF))], true).is_empty());
        assert_eq!(class_regex(&[('\0', c(0x10FFFF))], true), RegexAst::Nothing);
    }
}
