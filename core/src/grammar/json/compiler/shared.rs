//! Shared pieces: the punctuation lexemes, the option regexes, string characters and
//! lexemes, and the nonterminals of any value and of nothing.

use alloc::boxed::Box;
use alloc::vec::Vec;
use alloc::{format, vec};

use crate::error::{GrammarError, GrammarErrorKind};
use crate::grammar::json::Whitespace;
use crate::ir::IrSymbol;
use crate::regex::RegexAst;

use super::{Compiler, NUMBER, PRETTY_INLINE, Punct, R, STR_CHAR, STR_CHAR_LLG};

impl Compiler<'_> {
    pub(super) fn punct(&mut self) -> R<Punct> {
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

    /// A regex of [`super::JsonOptions`] (`item_separator`, `key_separator`, `whitespace_pattern`),
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
    pub(super) fn str_char(&self) -> &'static str {
        if self.opts.llguidance_spellings {
            STR_CHAR_LLG
        } else {
            STR_CHAR
        }
    }

    pub(super) fn string_any(&self) -> RegexAst {
        RegexAst::Repeat(
            Box::new(RegexAst::Pattern(
                self.str_char().into(),
                Default::default(),
            )),
            0,
            None,
        )
    }

    pub(super) fn quoted(body: RegexAst) -> RegexAst {
        RegexAst::Concat(vec![RegexAst::literal("\""), body, RegexAst::literal("\"")])
    }

    pub(super) fn string_lexeme(&mut self) -> R<u32> {
        if let Some(l) = self.string_lex {
            return Ok(l);
        }
        let body = self.string_any();
        let l = self.lexeme("STRING", Self::quoted(body))?;
        self.string_lex = Some(l);
        Ok(l)
    }

    pub(super) fn nothing(&mut self) -> R<u32> {
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
    pub(super) fn any(&mut self) -> R<u32> {
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
}
