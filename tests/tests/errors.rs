//! Malformed grammars get typed errors with positions; pathological ones hit limits
//! instead of hanging.

use sieve_core::{Grammar, GrammarErrorKind, LimitKind, Limits, Matcher, MatcherError};
use sieve_tests::synthetic_vocab;

fn lark_err(src: &str) -> sieve_core::GrammarError {
    match Grammar::from_lark(src, &synthetic_vocab(), &Limits::default()) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

fn line_col(e: &sieve_core::GrammarError) -> (u32, u32) {
    let span = e
        .span
        .unwrap_or_else(|| panic!("error without a span: {e}"));
    (span.start.line, span.start.column)
}

#[test]
fn unterminated_string() {
    let e = lark_err("start: a\na: \"x\"\nb: \"oops\n");
    assert_eq!(e.kind, GrammarErrorKind::Syntax, "{e}");
    assert_eq!(line_col(&e), (3, 4), "{e}");
}

#[test]
fn undefined_rule_points_at_use() {
    let e = lark_err("start: \"a\" missing\n");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol, "{e}");
    assert_eq!(line_col(&e), (1, 12), "{e}");
}

#[test]
fn duplicate_rule_has_both_spans() {
    let e = lark_err("start: a\na: \"x\"\na: \"y\"\n");
    assert_eq!(e.kind, GrammarErrorKind::DuplicateDefinition, "{e}");
    assert_eq!(line_col(&e).0, 3, "{e}");
    assert_eq!(e.aux_span.map(|s| s.start.line), Some(2), "{e}");
}

#[test]
fn bad_regex_is_located() {
    let e = lark_err("start: A\nA: /ab(c/\n");
    assert_eq!(e.kind, GrammarErrorKind::InvalidRegex, "{e}");
    assert_eq!(line_col(&e).0, 2, "{e}");
}

#[test]
fn missing_start() {
    let e = lark_err("a: \"x\"\n");
    assert!(
        matches!(
            e.kind,
            GrammarErrorKind::UndefinedSymbol | GrammarErrorKind::Syntax
        ),
        "{e}"
    );
}

/// A terminal that matches the empty string is an optional occurrence (LLGuidance accepts
/// them; LiteRT-LM's tool-call grammars use `/(.|\n)*/`). Masks: `tests/oracle.rs`.
#[test]
fn empty_terminal_is_optional() {
    let vocab = synthetic_vocab();
    type Texts = &'static [&'static [u8]];
    // (grammar, accepted texts, rejected texts)
    let cases: [(&str, Texts, Texts); 5] = [
        ("start: A\nA: /x*/\n", &[b"", b"x", b"xxx"], &[b"y"]),
        ("start: \"a\" A\nA: /()/\n", &[b"a"], &[b"", b"aa"]),
        (
            "start: \"<\" A \">\"\nA: /[^>]*/\n",
            &[b"<>", b"<a\nb>"],
            &[b"<", b"<a"],
        ),
        // The rule is regular: the boundary repair makes it one lexeme, and `>` ends it
        // wherever the grammar says (core/docs/boundaries.md).
        (
            "start: \"<\" A \">\"\nA: /(.|\\n)*/\n",
            &[b"<>", b"<a>", b"<a>b>"],
            &[b"<", b"<a"],
        ),
        // With `%ignore` it is compiled as written, greedy: once the terminal has begun, it
        // also takes `>`, so nothing can end it. (LiteRT-LM ends `/(.|\n)*/` with a special
        // token, which text never matches.)
        (
            "start: \"<\" A \">\"\nA: /(.|\\n)*/\n%ignore \" \"\n",
            &[b"<>"],
            &[b"<a>", b"<"],
        ),
    ];
    for (src, good, bad) in cases {
        let g = Grammar::from_lark(src, &vocab, &Limits::default())
            .unwrap_or_else(|e| panic!("{src}: {e}"));
        for text in good {
            let mut m = Matcher::new(&g);
            assert!(
                m.try_consume_bytes(text) && m.is_accepting(),
                "{src} {text:?}"
            );
        }
        for text in bad {
            let mut m = Matcher::new(&g);
            assert!(
                !(m.try_consume_bytes(text) && m.is_accepting()),
                "{src} {text:?}"
            );
        }
    }
}

#[test]
fn unproductive_start() {
    let e = lark_err("start: a\na: \"x\" a\n");
    assert_eq!(e.kind, GrammarErrorKind::Unproductive, "{e}");
}

#[test]
fn huge_repetition_is_a_limit() {
    let vocab = synthetic_vocab();
    let e = Grammar::from_regex("a{1000000}", &vocab, &Limits::default()).unwrap_err();
    assert_eq!(
        e.kind,
        GrammarErrorKind::Limit(LimitKind::RepeatCount),
        "{e}"
    );
    let e = lark_err("start: \"a\"~1000000\n");
    assert!(matches!(e.kind, GrammarErrorKind::Limit(_)), "{e}");
}

#[test]
fn deep_nesting_is_a_limit() {
    let vocab = synthetic_vocab();
    let deep = format!("{}a{}", "(".repeat(5000), ")".repeat(5000));
    let e = Grammar::from_regex(&deep, &vocab, &Limits::default()).unwrap_err();
    assert!(
        matches!(
            e.kind,
            GrammarErrorKind::Limit(_) | GrammarErrorKind::InvalidRegex
        ),
        "{e}"
    );
    let e = lark_err(&format!(
        "start: {}\"a\"{}\n",
        "(".repeat(5000),
        ")".repeat(5000)
    ));
    assert_eq!(
        e.kind,
        GrammarErrorKind::Limit(LimitKind::NestingDepth),
        "{e}"
    );
}

#[test]
fn ambiguous_star_families_are_bounded() {
    // (a|a)* and friends: exponential for backtracking engines, linear for derivatives.
    let vocab = synthetic_vocab();
    for pat in ["(a|a)*b", "(a|aa)*b", "((a*)*)*b", "(a|a?)+b", "(.*a){20}"] {
        let g = Grammar::from_regex(pat, &vocab, &Limits::default()).expect(pat);
        let mut m = Matcher::new(&g);
        assert!(m.try_consume_bytes(&[b'a'; 200]), "{pat}");
        let mut mask = vec![0u32; vocab.mask_words()];
        m.compute_mask(&mut mask).expect(pat);
    }
}

#[test]
fn tiny_limits_give_limit_errors_not_hangs() {
    let vocab = synthetic_vocab();
    let limits = Limits {
        max_lexer_states: 8,
        ..Limits::default()
    };
    // Counting a-s modulo many values needs many lexer states.
    let g = Grammar::from_regex("(a{7})*|(a{11})*|(a{13})*", &vocab, &limits);
    let err = match g {
        Err(e) => MatcherError::Limit(match e.kind {
            GrammarErrorKind::Limit(k) => k,
            other => panic!("unexpected {other:?}"),
        }),
        Ok(g) => {
            let mut m = Matcher::new(&g);
            let mut mask = vec![0u32; vocab.mask_words()];
            let mut res = Ok(());
            for _ in 0..40 {
                res = m.compute_mask(&mut mask);
                if res.is_err() || !m.try_consume_bytes(b"a") {
                    break;
                }
            }
            res.unwrap_err()
        }
    };
    assert_eq!(err, MatcherError::Limit(LimitKind::LexerStates));
}

#[test]
fn bad_tokens_and_buffers() {
    let vocab = synthetic_vocab();
    let g = Grammar::from_regex("[a-z]+", &vocab, &Limits::default()).unwrap();
    let mut m = Matcher::new(&g);
    let mut short = vec![0u32; vocab.mask_words() - 1];
    assert!(matches!(
        m.compute_mask(&mut short),
        Err(MatcherError::MaskTooSmall { .. })
    ));
    let err = m.consume_token(vocab.vocab_size() as u32 + 5).unwrap_err();
    assert!(matches!(err, MatcherError::TokenOutOfRange { .. }));
    // Sticky until reset.
    let mut mask = vec![0u32; vocab.mask_words()];
    assert_eq!(m.compute_mask(&mut mask).unwrap_err(), err);
    m.reset();
    m.compute_mask(&mut mask).unwrap();
    assert!(m.rollback(3).is_err());
}

#[test]
fn random_garbage_never_panics() {
    let vocab = synthetic_vocab();
    let mut rng = sieve_tests::Rng::new(1);
    let alphabet: Vec<char> = "ab:|()[]{}*+?~\"/\\%.,<>-_ \nAZstart%ignore%import"
        .chars()
        .collect();
    let (mut ok, mut err) = (0, 0);
    for _ in 0..2000 {
        let len = rng.below(40);
        let src: String = (0..len)
            .map(|_| alphabet[rng.below(alphabet.len())])
            .collect();
        for res in [
            Grammar::from_lark(&src, &vocab, &Limits::default()),
            Grammar::from_regex(&src, &vocab, &Limits::default()),
        ] {
            match res {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(!e.message.is_empty());
                    err += 1
                }
            }
        }
    }
    // Both outcomes occur, and nothing panicked on the way.
    assert!(ok > 0 && err > 0, "ok {ok}, err {err}");
}

/// Every syntax compiles through `Grammar::compile`; its errors carry their location in
/// fields (a span for text, a JSON pointer for JSON) and the message does not repeat it:
/// `Display` writes `line:col: ` and `at <pointer>: ` in front.
#[test]
fn locations_are_fields_not_message_text() {
    use sieve_core::grammar::{CompileOptions, GrammarSyntax};
    let vocab = synthetic_vocab();
    let compile = |syntax: GrammarSyntax, text: &str| {
        Grammar::compile(
            syntax,
            text,
            &CompileOptions::default(),
            &vocab,
            &Limits::default(),
        )
        .err()
        .unwrap_or_else(|| panic!("{syntax}: expected an error for {text}"))
    };
    let e = compile(
        GrammarSyntax::JsonSchema,
        r#"{"properties": {"a": {"$ref": "https://example.invalid/s.json"}}}"#,
    );
    assert_eq!(e.pointer(), Some("/properties/a"), "{e}");
    assert!(e.span.is_none() && !e.message.starts_with("at "), "{e}");
    assert_eq!(e.to_string(), format!("at /properties/a: {}", e.message));

    let e = compile(
        GrammarSyntax::StructuralTag,
        r#"{"type": "structural_tag", "format": {"type": "sequence", "elements": [{"type": "nope"}]}}"#,
    );
    assert_eq!(e.pointer(), Some("/format/elements/0/type"), "{e}");
    assert!(
        e.to_string().starts_with("at /format/elements/0/type: "),
        "{e}"
    );

    for (syntax, text) in [
        (GrammarSyntax::Gbnf, "root ::= \"a\" x\nx ::= \"b\" @\n"),
        (GrammarSyntax::Lark, "start: \"a\" x\nx: \"b\" @\n"),
    ] {
        let e = compile(syntax, text);
        assert_eq!(e.kind, GrammarErrorKind::Syntax, "{syntax}: {e}");
        assert_eq!(line_col(&e).0, 2, "{syntax}: {e}");
        assert!(e.pointer().is_none(), "{syntax}: {e}");
        let (line, col) = line_col(&e);
        assert_eq!(e.to_string(), format!("{line}:{col}: {}", e.message));
    }

    // A `%json` schema inside Lark: the span in the grammar and the pointer in the schema.
    let e = compile(
        GrammarSyntax::Lark,
        "start: %json {\"properties\": {\"a\": {\"$ref\": \"https://example.invalid/s.json\"}}}",
    );
    assert_eq!(e.pointer(), Some("/properties/a"), "{e}");
    assert_eq!(line_col(&e).0, 1, "{e}");
}
