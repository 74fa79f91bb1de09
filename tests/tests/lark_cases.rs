//! Lark grammars: accept/reject cases over whole texts, checked byte by byte.

use sieve_tests::{accepts, is_prefix, lark, synthetic_vocab};

struct Case {
    name: &'static str,
    grammar: &'static str,
    accept: &'static [&'static str],
    reject: &'static [&'static str],
}

const JSON: &str = r#"
start: value
?value: object | array | string | SIGNED_NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: string ":" value
array: "[" [value ("," value)*] "]"
string: ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"#;

const ARITH: &str = r#"
start: sum
sum: sum "+" product | sum "-" product | product
product: product "*" atom | product "/" atom | atom
atom: NUMBER | "(" sum ")" | "-" atom
NUMBER: /[0-9]+/
%ignore " "
"#;

const CLIKE: &str = r#"
start: stmt*
stmt: "int" NAME "=" expr ";"
    | NAME "=" expr ";"
    | "if" "(" expr ")" block ("else" block)?
    | "while" "(" expr ")" block
    | "return" expr ";"
block: "{" stmt* "}"
expr: expr OP term | term
term: NAME | INT | "(" expr ")"
OP: "+" | "-" | "*" | "<" | "=="
NAME: /[a-z_][a-z0-9_]*/
INT: /[0-9]+/
%ignore /[ \t\n]+/
"#;

const CASES: &[Case] = &[
    Case {
        name: "json",
        grammar: JSON,
        accept: &[
            r#"{"a": [1, 2.5e3, "x\"y"], "b": {"c": null}}"#,
            "[]",
            "  true ",
            r#"[{"k": -0.5}, [], {}]"#,
        ],
        reject: &[r#"{"a" 1}"#, "[1,]", "tru", r#"{"a": 01x}"#, "{} {}"],
    },
    Case {
        name: "arithmetic (left recursion)",
        grammar: ARITH,
        accept: &["1", "1+2*3", "(1 + 2) * -3 / 4 - 5", "((7))"],
        reject: &["1+", "(1", "1 2", "*3", ""],
    },
    Case {
        name: "c-like",
        grammar: CLIKE,
        accept: &[
            "",
            "int x = 1;",
            "int x = 1; while (x < 10) { x = x + 1; } return x;",
            "if (a == b) { return 1; } else { return 2; }",
        ],
        reject: &[
            "int x = ;",
            "while (x) x = 1;",
            "int x = 1",
            "if (a) {} else",
        ],
    },
    Case {
        name: "lazy lexeme ends at the first match",
        grammar: r#"
start: "<a>" TEXT
TEXT[lazy]: /.*<\/a>/
"#,
        accept: &["<a>hello</a>", "<a></a>", "<a>x<b</a>"],
        reject: &["<a>hello</a>more", "<a>x</a></a>"],
    },
    Case {
        name: "greedy lexeme takes the longest match",
        grammar: r#"
start: "<a>" TEXT
TEXT: /.*<\/a>/
"#,
        accept: &["<a>hello</a>", "<a>x</a></a>"],
        reject: &["<a>hello"],
    },
    Case {
        name: "stop attribute",
        grammar: r#"
start: "<a>" body "!"
body[stop="</a>"]: /[a-z ]*/
"#,
        accept: &["<a>hello world</a>!", "<a></a>!"],
        reject: &["<a>hello</a>", "<a>HELLO</a>!"],
    },
    Case {
        name: "boundary repaired",
        grammar: r#"
start: WORD "!"
WORD: /[a-z!]+/
"#,
        // A greedy WORD would swallow the '!'; the rule is regular, so the boundary repair
        // makes it one lexeme and the grammar's strings are kept (core/docs/boundaries.md).
        accept: &["abc!", "a!!"],
        reject: &["abc", "!"],
    },
    Case {
        name: "greedy keeps going",
        grammar: r#"
start: WORD "!"
WORD: /[a-z! ]+/
%ignore " "
"#,
        // With `%ignore` the grammar is compiled as written: a greedy WORD swallows the
        // '!', so the grammar can never end and every text is rejected. (This is the
        // one-byte-lookahead lexer semantics.)
        accept: &[],
        reject: &["abc!", "abc", "abc !"],
    },
    Case {
        name: "ignore",
        grammar: r#"
start: "a" "b" "c"
%ignore /[ ]+/
"#,
        accept: &["abc", " a  b c ", "a b c   "],
        reject: &["a b", "a b d"],
    },
    Case {
        name: "repetition",
        grammar: r#"
start: "x"{2,3} ("y"{2})? Z~2
Z: "z"
"#,
        accept: &["xxzz", "xxxyyzz"],
        reject: &["xzz", "xxxxzz", "xxyzz", "xxz"],
    },
];

#[test]
fn lark_accept_reject() {
    let vocab = synthetic_vocab();
    let mut failures = Vec::new();
    for case in CASES {
        let g = lark(case.grammar, &vocab);
        for text in case.accept {
            if !accepts(&g, text) {
                failures.push(format!("{}: should accept {text:?}", case.name));
            }
        }
        for text in case.reject {
            if accepts(&g, text) {
                failures.push(format!("{}: should reject {text:?}", case.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn prefixes_of_accepted_texts_are_valid() {
    let vocab = synthetic_vocab();
    for case in CASES {
        let g = lark(case.grammar, &vocab);
        for text in case.accept {
            for (i, _) in text.char_indices() {
                assert!(
                    is_prefix(&g, &text[..i]),
                    "{}: prefix {:?} of {text:?}",
                    case.name,
                    &text[..i]
                );
            }
        }
    }
}

#[test]
fn special_tokens_by_name_and_id() {
    let vocab = synthetic_vocab();
    let eos = vocab.eos_tokens()[0];
    let tool = vocab
        .special_by_name("<|tool|>")
        .expect("synthetic vocab has <|tool|>");
    let g = lark(
        &format!("start: \"call\" <|tool|> \"x\" <[{eos}]>\n"),
        &vocab,
    );
    let mut m = sieve_core::Matcher::new(&g);
    assert!(m.try_consume_bytes(b"call"));
    // The text "<|tool|>" is not the special token.
    assert!(!m.clone().try_consume_bytes(b"<|tool|>"));
    m.consume_token(tool).expect("special token allowed");
    assert!(m.try_consume_bytes(b"x"));
    assert!(!m.is_accepting());
    let mut mask = vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).expect("mask");
    assert!(sieve_tests::bit(&mask, eos as usize));
    assert_eq!(sieve_tests::allowed_tokens(&mask), vec![eos]);
    m.consume_token(eos).expect("eos by id");
    assert!(m.is_accepting());
}
