//! Hash-consed expression store. (Interface; implementation by the regex helper.)

use super::ast::RegexAst;
use super::classes::ByteClasses;
use crate::error::LimitKind;
use crate::limits::Limits;

/// An interned expression. Reserved ids: [`ExprId::NOTHING`], [`ExprId::EPSILON`],
/// [`ExprId::ANY_STRING`] (all byte strings; `Not(NOTHING)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct ExprId(pub u32);

impl ExprId {
    /// The empty language.
    pub const NOTHING: ExprId = ExprId(0);
    /// The language `{""}`.
    pub const EPSILON: ExprId = ExprId(1);
    /// Every byte string.
    pub const ANY_STRING: ExprId = ExprId(2);

    /// The id as an index.
    #[inline(always)]
    pub fn as_usize(self) -> usize {
        self.0 as usize
    }
}

/// The expression store.
#[derive(Debug, Clone)]
pub struct ExprSet {
    _private: (),
}

#[allow(missing_docs, unused_variables)]
impl ExprSet {
    /// An empty store enforcing `limits.max_expr_nodes`, `max_repeat`, `max_nesting_depth`.
    pub fn new(limits: &Limits) -> ExprSet {
        unimplemented!()
    }
}
