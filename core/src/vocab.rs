//! Token vocabularies. (Implementation by the trie helper.)

/// A tokenizer's token byte strings. (Interface; implementation in progress.)
#[derive(Debug, Clone)]
pub struct Vocabulary {
    _private: (),
}
