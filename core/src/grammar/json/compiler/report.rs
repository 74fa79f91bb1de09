//! Errors, reports, budget: [`Compiler`]'s errors, its coverage-report notes, and the rules,
//! nonterminals and lexemes it adds, each charged to the budget.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::mem::size_of;

use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::grammar::json::{CoverageEntry, CoverageStatus, Direction};
use crate::ir::{IrLexeme, IrSymbol, LexemeMode};
use crate::regex::RegexAst;

use super::{Compiler, R, regex_bytes};

impl Compiler<'_> {
    pub(super) fn error(&self, kind: GrammarErrorKind, ptr: &str, msg: &str) -> GrammarError {
        let ptr = if ptr.is_empty() { "#" } else { ptr };
        GrammarError::at_pointer(kind, ptr, msg)
    }

    pub(super) fn limit_error(&self, kind: LimitKind, ptr: &str) -> GrammarError {
        let ptr = if ptr.is_empty() { "#" } else { ptr };
        GrammarError::limit(kind).with_pointer(ptr)
    }

    /// Add an entry to the coverage report for `keyword` of the schema compiled at `ptr`,
    /// reported where the keyword is written in the document ([`Self::locate`]; at `ptr`
    /// when no document location holds it).
    pub(super) fn note(&mut self, ptr: &str, keyword: &str, status: CoverageStatus) -> R<()> {
        let strict_ok = matches!(
            status,
            CoverageStatus::Unknown | CoverageStatus::Spelling { .. }
        );
        // A keyword may err both ways (a dropped divisor, spellings kept out): one entry each.
        let subset = matches!(
            status,
            CoverageStatus::Approximated {
                direction: Direction::Subset,
                ..
            } | CoverageStatus::Spelling { .. }
        );
        let tag = |k: &str| format!("{k}{}", if subset { "/-" } else { "" });
        let key = (ptr.to_string(), tag(keyword));
        let refused = self.opts.strict && !strict_ok;
        if !refused && self.reported.contains_key(&key) {
            return Ok(());
        }
        let mut located = self.locate(ptr, keyword)?;
        if located.is_empty() && keyword != "allOf" {
            // A keyword merging built (conditionals rewritten into `anyOf`s, intersected):
            // the `allOf` whose merge approximated it.
            located = self.locate(ptr, "allOf")?;
        }
        if located.is_empty()
            && let Some(i) = ptr.rfind("/oneOf/")
        {
            // A keyword the exactly-one rewrite built (the other branches negated): the
            // `oneOf` it approximates.
            located = self.locate(&ptr[..i], "oneOf")?;
        }
        if located.is_empty() {
            located.push((ptr.to_string(), keyword.to_string()));
        }
        if refused {
            let (at, k) = &located[0];
            return Err(GrammarError::at_pointer(
                GrammarErrorKind::Unsupported,
                format!("{at}/{k}"),
                format!("{status} (strict mode)"),
            ));
        }
        for (at, k) in located {
            self.alloc(
                3 * (at.len() + k.len() + 8)
                    + 2 * size_of::<CoverageEntry>()
                    + 4 * size_of::<String>()
                    + 64,
            )?;
            let key = (at, tag(&k));
            if self.reported.insert(key.clone(), ()).is_none() {
                self.report.entries.push(CoverageEntry {
                    pointer: key.0,
                    keyword: k,
                    status: status.clone(),
                });
            }
        }
        // The compiled location too, so that the walk runs once per entry.
        self.alloc(ptr.len() + keyword.len() + 8 + 2 * size_of::<String>())?;
        self.reported.insert(key, ());
        Ok(())
    }

    /// Report a spelling restriction (exact over values; see [`CoverageStatus::Spelling`]).
    pub(super) fn spelling(&mut self, ptr: &str, keyword: &str, why: &str) -> R<()> {
        let why = why.to_string();
        self.note_unless_flipped(ptr, keyword, CoverageStatus::Spelling { why })
    }

    pub(super) fn approx(
        &mut self,
        ptr: &str,
        keyword: &str,
        direction: Direction,
        why: &str,
    ) -> R<()> {
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

    pub(super) fn rule(&mut self, lhs: u32, rhs: Vec<IrSymbol>) -> R<()> {
        self.charge(rhs.len() + 1, "")?;
        self.alloc(2 * size_of::<crate::ir::IrRule>() + rhs.len() * size_of::<IrSymbol>())?;
        self.ir.add_rule(lhs, rhs);
        Ok(())
    }

    /// A new nonterminal. Its name (for messages) is cut to [`MAX_NAME`] bytes, keeping both
    /// ends: names carry JSON pointers, and a pointer per nonterminal would make the names
    /// of a deep schema quadratic in its depth.
    pub(super) fn nt(&mut self, name: &str) -> R<u32> {
        self.charge(1, "")?;
        self.alloc(2 * size_of::<crate::ir::IrNonterminal>() + name.len().min(2 * MAX_NAME))?;
        Ok(self.ir.add_nonterminal(short_name(name), None))
    }

    pub(super) fn lexeme(&mut self, name: &str, regex: RegexAst) -> R<u32> {
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
