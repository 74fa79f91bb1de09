//! The per-sequence matcher.

/// Per-sequence state. (Interface; implementation in progress.)
#[derive(Debug, Clone)]
pub struct Matcher {
    _private: (),
}
