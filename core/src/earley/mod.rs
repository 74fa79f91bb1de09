//! Earley parser over lexemes.
