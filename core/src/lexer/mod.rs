//! Multi-lexeme lazy DFA.
