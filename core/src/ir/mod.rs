//! The grammar IR every front end lowers to: context-free rules over nonterminals and
//! lexemes, each lexeme a [`RegexAst`].
//!
//! Invariants the front end establishes: ids index the vectors; `start` names a
//! nonterminal; every nonterminal referenced has at least one rule (else the front end
//! reports [`crate::GrammarErrorKind::UndefinedSymbol`]). Compilation checks the rest
//! (empty lexemes, productivity, limits).

pub mod analysis;
pub mod builder;
pub mod regular;

use alloc::string::String;
use alloc::vec::Vec;

use crate::error::Span;
use crate::regex::RegexAst;

/// A symbol on a rule's right-hand side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IrSymbol {
    /// Index into [`GrammarIr::nonterminals`].
    Nonterminal(u32),
    /// Index into [`GrammarIr::lexemes`].
    Lexeme(u32),
}

/// One production `lhs → rhs` (an empty `rhs` is an epsilon production).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrRule {
    /// Index into [`GrammarIr::nonterminals`].
    pub lhs: u32,
    /// The right-hand side.
    pub rhs: Vec<IrSymbol>,
}

/// A nonterminal (Lark rule name, or a generated helper such as `expr_star_3`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrNonterminal {
    /// Name for messages and debugging.
    pub name: String,
    /// Where it is defined, when it comes from source text.
    pub span: Option<Span>,
}

/// How a lexeme decides where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LexemeMode {
    /// Longest match (with one byte of lookahead, no backtracking): the lexeme ends when
    /// the next byte cannot extend it.
    #[default]
    Greedy,
    /// Shortest match: the lexeme ends as soon as it matches.
    Lazy,
}

/// A lexeme (terminal).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrLexeme {
    /// Name for messages (`NUMBER`, `"while"`, `/[a-z]+/`).
    pub name: String,
    /// What it matches. Special tokens are `Literal`s of their encodings (see
    /// [`crate::Vocabulary::special_encoding`]); front ends resolve them. A text lexeme must
    /// never match the byte `0xFF` (front ends lower text to UTF-8), or it would match
    /// special tokens.
    pub regex: RegexAst,
    /// Greedy or lazy.
    pub mode: LexemeMode,
    /// Skipped between any two lexemes (Lark `%ignore`); never referenced by rules.
    pub ignore: bool,
    /// Where it is defined or first used.
    pub span: Option<Span>,
}

/// A whole grammar.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GrammarIr {
    /// All nonterminals.
    pub nonterminals: Vec<IrNonterminal>,
    /// All productions, grouped by nothing in particular.
    pub rules: Vec<IrRule>,
    /// All lexemes, including `%ignore` ones.
    pub lexemes: Vec<IrLexeme>,
    /// The start nonterminal.
    pub start: u32,
    /// Text tokens the grammar names by id (`<[id]>` or `!<[id]>` on a token that is not
    /// special), ascending, no repeats. The compiled grammar matches each of them by id only,
    /// like a special token, everywhere in the grammar (see `Vocabulary::with_id_tokens`).
    #[cfg(feature = "text-token-ids")]
    pub id_tokens: Vec<u32>,
}

impl GrammarIr {
    /// Add a nonterminal; returns its id.
    pub fn add_nonterminal(&mut self, name: impl Into<String>, span: Option<Span>) -> u32 {
        self.nonterminals.push(IrNonterminal {
            name: name.into(),
            span,
        });
        (self.nonterminals.len() - 1) as u32
    }

    /// Add a lexeme; returns its id.
    pub fn add_lexeme(&mut self, lexeme: IrLexeme) -> u32 {
        self.lexemes.push(lexeme);
        (self.lexemes.len() - 1) as u32
    }

    /// Record text tokens matched by id (see [`GrammarIr::id_tokens`]).
    #[cfg(feature = "text-token-ids")]
    pub fn add_id_tokens(&mut self, ids: &[u32]) {
        self.id_tokens.extend_from_slice(ids);
        self.id_tokens.sort_unstable();
        self.id_tokens.dedup();
    }

    /// Add a production.
    pub fn add_rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>) {
        self.rules.push(IrRule { lhs, rhs });
    }

    /// An estimate of the heap a copy of this grammar takes: its vectors at their lengths,
    /// each name, and each lexeme's regex counted as long as its name (front ends name a
    /// lexeme after its source text; a `RegexAst` holds no more text than that).
    pub fn heap_bytes(&self) -> usize {
        use core::mem::size_of;
        let rules: usize = self
            .rules
            .iter()
            .map(|r| size_of::<IrRule>() + r.rhs.len() * size_of::<IrSymbol>())
            .sum();
        let nonterminals: usize = self
            .nonterminals
            .iter()
            .map(|n| size_of::<IrNonterminal>() + n.name.len())
            .sum();
        let lexemes: usize = self
            .lexemes
            .iter()
            .map(|l| size_of::<IrLexeme>() + 2 * l.name.len())
            .sum();
        #[cfg(feature = "text-token-ids")]
        let ids = self.id_tokens.len() * size_of::<u32>();
        #[cfg(not(feature = "text-token-ids"))]
        let ids = 0;
        rules
            .saturating_add(nonterminals)
            .saturating_add(lexemes)
            .saturating_add(ids)
    }

    /// Append `other` (a sub-grammar, such as a compiled JSON Schema) to this grammar and
    /// return `other`'s start nonterminal in this grammar's numbering.
    ///
    /// `other`'s nonterminals, lexemes and rules come after the existing ones, in their
    /// order, with every id shifted; names, spans and lexeme flags are kept and nothing is
    /// shared or deduplicated. `self.start` is unchanged. An `ignore` lexeme of `other`
    /// would apply to the whole grammar, as every `ignore` lexeme does.
    pub fn embed(&mut self, other: GrammarIr) -> u32 {
        let nt_base = self.nonterminals.len() as u32;
        let lex_base = self.lexemes.len() as u32;
        self.nonterminals.extend(other.nonterminals);
        self.lexemes.extend(other.lexemes);
        #[cfg(feature = "text-token-ids")]
        self.add_id_tokens(&other.id_tokens);
        self.rules.extend(other.rules.into_iter().map(|r| {
            IrRule {
                lhs: r.lhs.saturating_add(nt_base),
                rhs: r
                    .rhs
                    .into_iter()
                    .map(|s| match s {
                        IrSymbol::Nonterminal(n) => {
                            IrSymbol::Nonterminal(n.saturating_add(nt_base))
                        }
                        IrSymbol::Lexeme(l) => IrSymbol::Lexeme(l.saturating_add(lex_base)),
                    })
                    .collect(),
            }
        }));
        other.start.saturating_add(nt_base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn lexeme(name: &str) -> IrLexeme {
        IrLexeme {
            name: name.into(),
            regex: RegexAst::literal(name),
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        }
    }

    #[test]
    fn embed_shifts_ids() {
        let mut outer = GrammarIr::default();
        let start = outer.add_nonterminal("start", None);
        let a = outer.add_lexeme(lexeme("a"));
        let mut inner = GrammarIr::default();
        let x = inner.add_nonterminal("x", None);
        let top = inner.add_nonterminal("top", None);
        let b = inner.add_lexeme(lexeme("b"));
        inner.add_rule(x, vec![IrSymbol::Lexeme(b)]);
        inner.add_rule(top, vec![IrSymbol::Nonterminal(x), IrSymbol::Lexeme(b)]);
        inner.start = top;
        let got = outer.embed(inner);
        outer.add_rule(start, vec![IrSymbol::Lexeme(a), IrSymbol::Nonterminal(got)]);
        assert_eq!(got, 2);
        assert_eq!(outer.nonterminals[got as usize].name, "top");
        assert_eq!(outer.start, start);
        assert_eq!(outer.lexemes[1].name, "b");
        assert_eq!(
            outer.rules,
            vec![
                IrRule {
                    lhs: 1,
                    rhs: vec![IrSymbol::Lexeme(1)],
                },
                IrRule {
                    lhs: 2,
                    rhs: vec![IrSymbol::Nonterminal(1), IrSymbol::Lexeme(1)],
                },
                IrRule {
                    lhs: 0,
                    rhs: vec![IrSymbol::Lexeme(0), IrSymbol::Nonterminal(2)],
                },
            ]
        );
    }
}
