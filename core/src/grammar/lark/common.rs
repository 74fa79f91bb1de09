//! Sieve's own definitions of the terminals of Lark's `common` module, written in the
//! dialect itself and parsed by the same front end on `%import common...`.
//!
//! The languages follow Lark's `common.lark`; where Lark relies on lazy quantifiers or
//! lookbehind (which a language-level lexer cannot express) the definitions say the same
//! thing with plain regular expressions (an escaped string cannot contain an unescaped
//! quote, a C comment cannot contain `*/`).

/// The `common` module.
pub(super) const COMMON: &str = r#"
// Numbers
DIGIT: "0".."9"
HEXDIGIT: "a".."f" | "A".."F" | DIGIT
INT: DIGIT+
SIGNED_INT: ["+" | "-"] INT
DECIMAL: INT "." INT? | "." INT
_EXP: ("e" | "E") SIGNED_INT
FLOAT: INT _EXP | DECIMAL _EXP?
SIGNED_FLOAT: ["+" | "-"] FLOAT
NUMBER: FLOAT | INT
SIGNED_NUMBER: ["+" | "-"] NUMBER

// Strings
_STRING_INNER: /.*/
_STRING_ESC_INNER: /([^\\\n]|\\.)*/
ESCAPED_STRING: "\"" /([^"\\\n]|\\.)*/ "\""

// Names
LCASE_LETTER: "a".."z"
UCASE_LETTER: "A".."Z"
LETTER: UCASE_LETTER | LCASE_LETTER
WORD: LETTER+
CNAME: ("_" | LETTER) ("_" | LETTER | DIGIT)*

// Whitespace
WS_INLINE: (" " | /\t/)+
WS: /[ \t\f\r\n]/+
CR: /\r/
LF: /\n/
_CR: /\r/
_LF: /\n/
NEWLINE: (CR? LF)+
_NEWLINE: (CR? LF)+

// Comments
SH_COMMENT: /#[^\n]*/
CPP_COMMENT: /\/\/[^\n]*/
C_COMMENT: "/*" /([^*]|\*+[^*\/])*/ /\*+/ "/"
SQL_COMMENT: /--[^\n]*/
"#;
