//! Grammar front ends and the compiled [`Grammar`].

pub mod ir;
pub mod lark;

/// A compiled grammar. (Interface; implementation in progress.)
#[derive(Debug, Clone)]
pub struct Grammar {
    _private: (),
}
