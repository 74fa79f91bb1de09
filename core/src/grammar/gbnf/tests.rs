//! Tests of the GBNF front end: every construct checked with a matcher (whole and byte by
//! byte), every error with its kind and line:column, llama.cpp's left-recursion test, the
//! llama.cpp example grammars, limits, and no-panic mutations.
//!
//! In test strings, `«name»` is the special token `name` (its encoding), `«#id»` is token
//! `id` matched by id (its encoding, for a text token named `<[id]>`); everything else is
//! text.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use super::{GbnfOptions, lower};
use crate::grammar::lark::NoSpecialTokens;
use crate::{
    CompileBudget, Grammar, GrammarError, GrammarErrorKind, LimitKind, Limits, Matcher, Vocabulary,
};

const SPECIALS: &[&str] = &["<think>", "</think>", "<|eos|>", "<|tool|>"];

/// Every byte but `0xFF` as a token, some words, then the specials (`<|eos|>` is EOS).
fn vocab() -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = (0x00u8..0xFF).map(|b| vec![b]).collect();
    for w in ["ab", "bc", "abc", "<think>", "é"] {
        tokens.push(w.as_bytes().to_vec());
    }
    let first = tokens.len() as u32;
    for s in SPECIALS {
        tokens.push(s.as_bytes().to_vec());
    }
    let ids: Vec<u32> = (first..first + SPECIALS.len() as u32).collect();
    Arc::new(Vocabulary::new(tokens, &ids, &[first + 2]).unwrap())
}

/// `«name»` → the special token's encoding.
fn encode(vocab: &Vocabulary, s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find('«') {
        out.extend_from_slice(&rest.as_bytes()[..i]);
        let after = &rest[i + '«'.len_utf8()..];
        let j = after.find('»').unwrap();
        let name = &after[..j];
        let id = match name.strip_prefix('#') {
            Some(id) => id.parse().unwrap(),
            None => vocab.special_by_name(name).unwrap(),
        };
        out.extend(Vocabulary::special_encoding(id));
        rest = &after[j + '»'.len_utf8()..];
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

fn compile_with(src: &str, opts: &GbnfOptions) -> Result<Grammar, GrammarError> {
    Grammar::from_gbnf(src, opts, &vocab(), &Limits::default())
}

fn compile(src: &str) -> Grammar {
    compile_with(src, &GbnfOptions::default())
        .unwrap_or_else(|e| panic!("compile {src:?}: {e} ({:?})", e.kind))
}

fn accepts(g: &Grammar, bytes: &[u8]) -> bool {
    let mut m = Matcher::new(g);
    let whole = m.try_consume_bytes(bytes) && m.is_accepting();
    let mut m = Matcher::new(g);
    let mut ok = true;
    for b in bytes {
        if !m.try_consume_bytes(&[*b]) {
            ok = false;
            break;
        }
    }
    let bytewise = ok && m.is_accepting();
    assert_eq!(whole, bytewise, "whole vs byte by byte differ on {bytes:?}");
    whole
}

/// Whether `bytes` is a prefix of something the grammar accepts.
fn viable(g: &Grammar, bytes: &[u8]) -> bool {
    Matcher::new(g).try_consume_bytes(bytes)
}

fn check(src: &str, good: &[&str], bad: &[&str]) {
    let v = vocab();
    let g = compile(src);
    for s in good {
        assert!(accepts(&g, &encode(&v, s)), "{src:?} should accept {s:?}");
    }
    for s in bad {
        assert!(!accepts(&g, &encode(&v, s)), "{src:?} should reject {s:?}");
    }
}

fn error_with(src: &str, opts: &GbnfOptions, limits: &Limits) -> GrammarError {
    match Grammar::from_gbnf(src, opts, &vocab(), limits) {
        Ok(_) => panic!("expected an error for {src:?}"),
        Err(e) => e,
    }
}

/// The error's kind, `line:column` and message.
fn error(src: &str) -> (GrammarErrorKind, String, String) {
    let e = error_with(src, &GbnfOptions::default(), &Limits::default());
    let span = e.span.unwrap_or_else(|| panic!("no span: {e}"));
    (
        e.kind.clone(),
        format!("{}:{}", span.start.line, span.start.column),
        e.message,
    )
}

fn assert_error(src: &str, kind: GrammarErrorKind, at: &str, msg: &str) {
    let (k, pos, m) = error(src);
    assert_eq!((&k, pos.as_str()), (&kind, at), "{src:?}: {m}");
    assert!(m.contains(msg), "{src:?}: {m:?} should contain {msg:?}");
}

#[test]
fn literals_are_exact_per_character() {
    // A whole-literal lexeme would lose `abc` here (the lexer reads `ab` greedily).
    check(
        r#"root ::= "ab" | "a" "bc""#,
        &["ab", "abc"],
        &["", "a", "abcd", "b"],
    );
    check(r#"root ::= "a" "" "b""#, &["ab"], &["a", "a b", "ba"]);
    check(r#"root ::= """#, &[""], &["a"]);
    // A literal character and a class over the same text.
    check(
        r#"root ::= "a" "b" | [a-z] "c""#,
        &["ab", "ac", "zc"],
        &["zb", "a"],
    );
}

#[test]
fn ir_shape() {
    let limits = Limits::default();
    let ir = lower(
        "root ::= \"ab\" [x-z] rest\nrest ::= \"a\"",
        &GbnfOptions::default(),
        &NoSpecialTokens,
        &limits,
        &mut CompileBudget::new(&limits),
    )
    .unwrap();
    // One lexeme per code point, shared: "a", "b", [x-z].
    assert_eq!(ir.lexemes.len(), 3, "{:?}", ir.lexemes);
    assert_eq!(ir.nonterminals[ir.start as usize].name, "root");
    let rest = ir
        .nonterminals
        .iter()
        .position(|n| n.name == "rest")
        .unwrap() as u32;
    let root_rules: Vec<_> = ir.rules.iter().filter(|r| r.lhs == ir.start).collect();
    assert_eq!(root_rules.len(), 1);
    assert_eq!(root_rules[0].rhs.len(), 4);
    assert_eq!(root_rules[0].rhs[3], crate::ir::IrSymbol::Nonterminal(rest));
    let span = ir.nonterminals[rest as usize].span.unwrap();
    assert_eq!((span.start.line, span.start.column), (2, 1));
}

#[test]
fn escapes() {
    check(
        r#"root ::= "\x41\u00e9\U0001F600\n\r\t\\\"\[\]\-""#,
        &["A\u{e9}\u{1F600}\n\r\t\\\"[]-"],
        &["A"],
    );
    check(r#"root ::= [\x30-\x39\]\-]+"#, &["09", "]", "-"], &["a"]);
    // Raw newlines and UTF-8 in literals.
    check("root ::= \"a\nb\u{e9}\"", &["a\nb\u{e9}"], &["ab\u{e9}"]);
}

#[test]
fn char_classes() {
    check(
        "root ::= [a-cx] [^a-z\\n] [a-] [-a]",
        &["a0aa", "xZ--", "c\u{e9}a-"],
        &["d0aa", "aaaa", "a\naa", "a0ba"],
    );
    // A reversed range matches nothing; negated, it matches everything.
    check("root ::= [z-a] | \"q\"", &["q"], &["z", "a", "m"]);
    check("root ::= [^z-a]", &["m", "\u{e9}"], &["", "mm"]);
    // An empty class is no element at all (llama.cpp pushes nothing).
    check("root ::= \"a\" [] [^] \"b\"", &["ab"], &["a", "axb"]);
    // Multi-byte ranges, matched through partial UTF-8.
    let g = compile("root ::= [\u{e0}-\u{ef}]");
    assert!(accepts(&g, "\u{e9}".as_bytes()));
    assert!(viable(&g, &[0xC3]));
    assert!(!viable(&g, &[0xC4]));
    assert!(!accepts(&g, "\u{f0}".as_bytes()));
}

#[test]
fn any_char() {
    check(
        "root ::= . .",
        &["ab", "\u{e9}\u{1F600}", "\n\t"],
        &["a", "abc", ""],
    );
    // llama.cpp never matches U+0000 (it ends its token strings).
    check("root ::= . | \"\\x00\" | [\\x00]", &["a"], &["\0"]);
    // Surrogates and values past U+10FFFF match nothing.
    check(
        "root ::= \"a\" | \"\\uD800\" | [\\U00110000]",
        &["a"],
        &["\u{fffd}"],
    );
}

#[test]
fn repetitions() {
    check("root ::= \"a\"*", &["", "a", "aaaa"], &["b"]);
    check("root ::= \"ab\"+", &["ab", "abab"], &["", "a", "aba"]);
    check("root ::= \"a\"? \"b\"", &["b", "ab"], &["aab"]);
    check("root ::= \"a\"{3}", &["aaa"], &["aa", "aaaa"]);
    check("root ::= \"a\"{2,}", &["aa", "aaaaa"], &["a"]);
    check("root ::= \"a\"{1,3}", &["a", "aaa"], &["", "aaaa"]);
    check("root ::= \"a\"{0,1}", &["", "a"], &["aa"]);
    check("root ::= \"a\"{ 2 , 3 }", &["aa", "aaa"], &["a"]);
    check("root ::= \"x\" \"a\"{0} \"y\"", &["xy"], &["xay"]);
    // Postfix operators stack: `x{2}{2}` is four.
    check("root ::= \"a\"{2}{2}", &["aaaa"], &["aa", "aaa"]);
    check(
        "root ::= (\"a\" | \"bc\"){2}",
        &["aa", "abc", "bcbc"],
        &["a", "b"],
    );
    check("root ::= ()? \"z\"", &["z"], &[""]);
}

#[test]
fn bounded_repetitions_of_any_width() {
    // `{m,n}` lowers to doubling helpers (`d_0 → ε | x`, `d_k → d_{k-1} d_{k-1}`).
    let a = |k: usize| "a".repeat(k);
    for (m, n) in [(0, 2), (0, 7), (2, 13), (3, 16), (1, 20)] {
        let src = format!("root ::= \"a\"{{{m},{n}}}");
        let good: Vec<String> = (m..=n).map(a).collect();
        let bad: Vec<String> = (0..m).chain([n + 1, n + 2]).map(a).collect();
        let good: Vec<&str> = good.iter().map(String::as_str).collect();
        let bad: Vec<&str> = bad.iter().map(String::as_str).collect();
        check(&src, &good, &bad);
    }
    // Where the lexer cannot take the repetition as one lexeme, its rules stay.
    check(
        "root ::= [0-9]{0,6} [0-9] | \"(\" root \")\"",
        &["1", "1234567", "(12)", "((1234567))"],
        &["", "12345678", "()", "(12345678)"],
    );
    check(
        "root ::= e{0,5} \"x\" | \"(\" root \")\"\ne ::= | \"z\"",
        &["x", "zzzzzx", "(zzx)"],
        &["zzzzzzx", "(zzzzzzx)"],
    );
}

#[test]
fn groups_and_layout() {
    let src = "# a comment\n\
               root ::= ( # inside\n  \"a\"\n  | \"b\" ) \"c\"   # trailing\n\
               \n\
               rule-with-dashes ::=\n  \"x\"\r\n\
               other ::= \"y\" |\n  \"z\"\n";
    check(src, &["ac", "bc"], &["c", "ab"]);
    // Rules may be used before they are defined, and span lines after `::=` and `|`.
    check(
        "root ::= a-b\na-b ::=\n  \"q\" |\n  \"r\"",
        &["q", "r"],
        &["a-b"],
    );
    check("root ::= | \"a\"", &["", "a"], &["aa"]);
}

#[test]
fn later_definitions_replace_earlier_ones() {
    check("root ::= \"a\"\nroot ::= \"b\"", &["b"], &["a"]);
}

#[test]
fn start_rule_option() {
    let opts = GbnfOptions {
        root: "start".into(),
        ..GbnfOptions::default()
    };
    let g = compile_with("start ::= \"s\"\nroot ::= \"r\"", &opts).unwrap();
    assert!(accepts(&g, b"s"));
    assert!(!accepts(&g, b"r"));
    let e = compile_with("root ::= \"r\"", &opts).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    assert!(e.message.contains("'start'"), "{e}");
}

#[test]
fn token_terminals() {
    let v = vocab();
    let think = v.special_by_name("<think>").unwrap();
    check(
        "root ::= <think> \"x\" </think>",
        &["«<think>»x«</think>»"],
        &["<think>x</think>", "«<think>»x"],
    );
    check(
        &format!("root ::= <[{think}]> \"x\""),
        &["«<think>»x"],
        &["<think>x"],
    );
    // `!<t>`: any one special token but `t` and EOS, or (sieve cannot see text token
    // boundaries) any non-empty text.
    let src = "root ::= \"[\" !<think> \"]\"";
    check(
        src,
        &["[«</think>»]", "[«<|tool|>»]", "[abc]", "[<think>]"],
        &["[«<think>»]", "[]", "[«<|eos|>»]", "[«</think>»«</think>»]"],
    );
    check(
        &format!("root ::= !<[{think}]>"),
        &["«</think>»", "x"],
        &["«<think>»"],
    );
    // A text token in a negation is matched by id only in this grammar, so excluded
    // exactly (see `text_tokens_by_id`); other tokens still spell text.
    check(
        "root ::= !<[97]>",
        &["b", "ab", "«<think>»"],
        &["", "«#97»"],
    );
    check(
        "root ::= (!<|tool|>)* <|tool|>",
        &["«<|tool|>»", "ab«<think>»c«<|tool|>»"],
        &["ab", "«<|tool|>»«<|tool|>»"],
    );
}

/// The allowed token ids after consuming `tokens` (which must all be allowed).
fn mask_after(g: &Grammar, tokens: &[u32]) -> Vec<u32> {
    let mut m = Matcher::new(g);
    let mut mask = vec![0u32; m.mask_words()];
    for &t in tokens {
        m.compute_mask(&mut mask).unwrap();
        assert!(
            mask[t as usize / 32] >> (t % 32) & 1 == 1,
            "token {t} not allowed"
        );
        m.consume_token(t).unwrap();
    }
    m.compute_mask(&mut mask).unwrap();
    (0..g.vocab().vocab_size() as u32)
        .filter(|&t| mask[t as usize / 32] >> (t % 32) & 1 == 1)
        .collect()
}

#[cfg(feature = "text-token-ids")]
#[test]
fn text_tokens_by_id() {
    // Token ids of `vocab()`: each byte `b` is token `b`; then `ab`, `bc`, `abc`, the text
    // `<think>` and `é`; then the specials (`<|eos|>` is EOS).
    let v = vocab();
    let (ab, bc, abc, think_text) = (255u32, 256, 257, 258);
    let think = v.special_by_name("<think>").unwrap();
    let eos = v.eos_tokens()[0];
    let (a, b, c, x, y) = (97u32, 98, 99, 120, 121);
    assert_eq!(v.token_text(abc), b"abc");

    // `<[abc]>`: token `abc` by id and nothing else, not other tokens spelling its text.
    let g = compile(&format!("root ::= <[{abc}]> \"x\""));
    assert_eq!(mask_after(&g, &[]), vec![abc]);
    assert_eq!(mask_after(&g, &[abc]), vec![x]);
    assert_eq!(mask_after(&g, &[abc, x]), vec![eos]);
    check(
        &format!("root ::= <[{abc}]> \"x\""),
        &["«#257»x"],
        &["abcx", "«#257»", "«#255»cx"],
    );
    // The grammar matches it by id only, wherever it is: as text its bytes are spelled by
    // other tokens (a documented limit: llama.cpp would also read token `abc` as text at
    // `"abc"`, keeping both readings alive).
    let src = format!("root ::= <[{abc}]> \"x\" | \"abc\" \"y\"");
    let g = compile(&src);
    assert_eq!(mask_after(&g, &[]), vec![a, ab, abc]);
    assert_eq!(mask_after(&g, &[abc]), vec![x]);
    assert_eq!(mask_after(&g, &[a]), vec![b, bc]);
    assert_eq!(mask_after(&g, &[ab, c]), vec![y]);
    check(&src, &["«#257»x", "abcy"], &["«#257»y", "abcx"]);
    // A text token spelling a special token's name stays text elsewhere; by id it is itself.
    let g = compile(&format!("root ::= <[{think_text}]> | <think>"));
    assert_eq!(mask_after(&g, &[]), vec![think_text, think]);
    assert_eq!(mask_after(&g, &[think_text]), vec![eos]);

    // `!<[abc]>`: any one token but `abc`: text (of other tokens) or a special but EOS.
    let g = compile(&format!("root ::= \"[\" !<[{abc}]> \"]\""));
    let allowed = mask_after(&g, &[b'[' as u32]);
    assert!(!allowed.contains(&abc) && !allowed.contains(&eos));
    assert!(allowed.contains(&a) && allowed.contains(&ab) && allowed.contains(&think));
    // Everything up to token `abc`, then `abc` by id (a llama.cpp idiom).
    let g = compile(&format!("root ::= (!<[{abc}]>)* <[{abc}]>"));
    assert!(mask_after(&g, &[]).contains(&abc));
    assert!(mask_after(&g, &[a, bc]).contains(&abc));
    assert_eq!(mask_after(&g, &[a, abc]), vec![eos]);
    assert_eq!(mask_after(&g, &[abc]), vec![eos]);

    // Grammars that name no text token by id match text tokens as text (same vocabulary).
    let g = compile("root ::= \"abc\"");
    assert!(Arc::ptr_eq(g.vocab(), g.match_vocab()));
    assert_eq!(mask_after(&g, &[]), vec![a, ab, abc]);
    let g = compile(&format!("root ::= <[{abc}]>"));
    assert!(!Arc::ptr_eq(g.vocab(), g.match_vocab()));
    assert_eq!(g.vocab().token_text(abc), b"abc");
}

#[cfg(feature = "text-token-ids")]
#[test]
fn text_tokens_by_id_are_charged() {
    // The matching vocabulary's copy is paid from the compile budget: fuel and memory.
    // `<[260]>` (a special token) has the same shape without the copy.
    let (by_id, special) = ("root ::= <[257]>", "root ::= <[260]>");
    let n = vocab().vocab_size() as u64;
    let fuel = |src| compile(src).compile_fuel_spent();
    assert!(
        fuel(by_id) >= fuel(special) + n,
        "{} vs {}",
        fuel(by_id),
        fuel(special)
    );
    assert!(compile(by_id).bytes_used() > compile(special).bytes_used());
    // The least memory `<[260]>` compiles in is too little for `<[257]>`.
    let fits = |src: &str, bytes: usize| {
        let limits = Limits {
            max_memory_bytes: bytes,
            ..Limits::default()
        };
        match Grammar::from_gbnf(src, &GbnfOptions::default(), &vocab(), &limits) {
            Ok(_) => true,
            Err(e) => {
                assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::Memory), "{e}");
                false
            }
        }
    };
    let (mut lo, mut hi) = (1usize, 1 << 30);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if fits(special, mid) {
            hi = mid
        } else {
            lo = mid + 1
        }
    }
    assert!(!fits(by_id, lo));
}

#[test]
fn token_errors() {
    assert_error(
        "root ::= \"a\" <nope>",
        GrammarErrorKind::UnknownSpecialToken,
        "1:14",
        "<nope> is not a special token",
    );
    // A text token by id is fine (`text_tokens_by_id`); ids beyond the vocabulary are not.
    assert_error(
        "root ::= (\"a\"\n  <[9999]>)",
        GrammarErrorKind::UnknownSpecialToken,
        "2:3",
        "token id 9999 is not a token of the vocabulary",
    );
    assert_error(
        "root ::= <[x]>",
        GrammarErrorKind::Syntax,
        "1:12",
        "expecting integer",
    );
    assert_error(
        "root ::= <[1x",
        GrammarErrorKind::Syntax,
        "1:13",
        "expecting ']'",
    );
    assert_error(
        "root ::= <[1]",
        GrammarErrorKind::Syntax,
        "1:14",
        "expecting '>'",
    );
    assert_error(
        "root ::= <abc",
        GrammarErrorKind::Syntax,
        "1:14",
        "expecting '>'",
    );
    assert_error(
        "root ::= !x",
        GrammarErrorKind::Syntax,
        "1:11",
        "expecting '<'",
    );
    assert_error(
        "root ::= <[99999999999]>",
        GrammarErrorKind::Syntax,
        "1:12",
        "token id out of range",
    );
    // Without a vocabulary, every token terminal is unknown.
    let limits = Limits::default();
    let e = lower(
        "root ::= <x>",
        &GbnfOptions::default(),
        &NoSpecialTokens,
        &limits,
        &mut CompileBudget::new(&limits),
    )
    .unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken);
}

#[test]
fn syntax_errors_with_positions() {
    use GrammarErrorKind::{Syntax, UndefinedSymbol};
    assert_error("", Syntax, "1:1", "empty grammar");
    assert_error("# only a comment\n\n", Syntax, "1:1", "empty grammar");
    assert_error("root ::= \"a\"\n::= \"b\"", Syntax, "2:1", "expecting name");
    assert_error("root = \"a\"", Syntax, "1:6", "expecting ::=");
    assert_error("root\n::= \"a\"", Syntax, "1:5", "expecting ::=");
    assert_error("root ::= \"a", Syntax, "1:10", "unexpected end of input");
    assert_error("root ::= [a", Syntax, "1:10", "unexpected end of input");
    assert_error("root ::= [a-", Syntax, "1:10", "unexpected end of input");
    assert_error("root ::= \"\\q\"", Syntax, "1:11", "unknown escape");
    assert_error("root ::= \"\\x4\"", Syntax, "1:11", "expecting 2 hex chars");
    assert_error(
        "root ::= \"\\u12\"",
        Syntax,
        "1:11",
        "expecting 4 hex chars",
    );
    assert_error("root ::= (\"a\"", Syntax, "1:14", "expecting ')'");
    assert_error(
        "root ::= \"a\")",
        Syntax,
        "1:13",
        "expecting newline or end",
    );
    assert_error("root ::= \"a\"\n  | \"b\"", Syntax, "2:3", "expecting name");
    assert_error("root ::= *", Syntax, "1:10", "expecting preceding item");
    assert_error(
        "root ::= \"a\" | +",
        Syntax,
        "1:16",
        "expecting preceding item",
    );
    assert_error("root ::= \"\"*", Syntax, "1:12", "expecting preceding item");
    assert_error("root ::= []?", Syntax, "1:12", "expecting preceding item");
    assert_error(
        "root ::= \"a\"{0}*",
        Syntax,
        "1:16",
        "expecting preceding item",
    );
    assert_error("root ::= \"a\"{x}", Syntax, "1:14", "expecting an int");
    assert_error("root ::= \"a\"{,3}", Syntax, "1:14", "expecting an int");
    assert_error("root ::= \"a\"{1 2}", Syntax, "1:16", "expecting ','");
    assert_error("root ::= \"a\"{1,2", Syntax, "1:17", "expecting '}'");
    assert_error("root ::= \"a\"{3,1}", Syntax, "1:13", "below the minimum");
    assert_error(
        "root ::= x\nx ::= y",
        UndefinedSymbol,
        "2:7",
        "undefined rule identifier 'y'",
    );
    assert_error(
        "other ::= \"a\"",
        UndefinedSymbol,
        "1:1",
        "does not contain a 'root'",
    );
    // A reference in a replaced definition still has to be defined.
    assert_error(
        "root ::= (zz)\nroot ::= \"a\"",
        UndefinedSymbol,
        "1:11",
        "'zz'",
    );
    // Second line, after a multi-byte character: columns count characters.
    assert_error(
        "a ::= \"é\"\nroot ::= \"é\" ?? }",
        Syntax,
        "2:17",
        "expecting newline",
    );
}

#[test]
fn limits() {
    let e = error_with(
        "root ::= \"a\"{10001}",
        &GbnfOptions::default(),
        &Limits::default(),
    );
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    assert_eq!(e.span.map(|s| s.start.column), Some(13));
    let e = error_with(
        "root ::= \"a\"{1,99999999999999999999999}",
        &GbnfOptions::default(),
        &Limits::default(),
    );
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    let deep = format!("root ::= {}\"a\"{}", "(".repeat(300), ")".repeat(300));
    let e = error_with(&deep, &GbnfOptions::default(), &Limits::default());
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    let ok = format!("root ::= {}\"a\"{}", "(".repeat(150), ")".repeat(150));
    check(&ok, &["a"], &[""]);
    let small = Limits {
        max_grammar_size: 50,
        ..Limits::default()
    };
    let e = error_with(
        "root ::= \"a\"{40} \"b\"{40}",
        &GbnfOptions::default(),
        &small,
    );
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    let tiny = Limits {
        max_memory_bytes: 2000,
        ..Limits::default()
    };
    let big = format!("root ::= {}", "\"abcdefgh\" ".repeat(200));
    let e = error_with(&big, &GbnfOptions::default(), &tiny);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::Memory));
}

#[test]
fn left_recursion_as_llama_cpp() {
    let refused = [
        ("expr ::= expr \"+\" \"1\" | \"1\"\nroot ::= expr", "1:10"),
        ("root ::= a\na ::= b \"x\"\nb ::= a | \"y\"", "3:7"),
        // Past a rule with an empty alternative.
        ("root ::= e root \"x\" | \"y\"\ne ::= | \"z\"", "1:12"),
        ("root ::= \"\" root | \"y\"", "1:13"),
        // Through groups and repetitions.
        ("root ::= (root \"x\") | \"y\"", "1:11"),
        ("root ::= root* \"x\"", "1:10"),
        ("root ::= \"y\"{0} root", "1:17"),
        // llama.cpp's own rewrite makes these left-recursive: `S*` over an S that may be
        // empty (`x?*`, `x**`, `e*` with `e ::= | ...`).
        ("root ::= \"a\"?*", "1:10"),
        ("root ::= \"a\"**", "1:10"),
        ("root ::= e*\ne ::= | \"z\"", "1:10"),
        ("root ::= e+\ne ::= | \"z\"", "1:10"),
        ("root ::= e{2,}\ne ::= | \"z\"", "1:10"),
        // An unused rule counts, and so does a replaced definition's group.
        ("root ::= \"a\"\nx ::= x \"b\"", "2:7"),
        ("x ::= \"a\"?*\nx ::= \"c\"\nroot ::= x", "1:7"),
        ("root ::= ()* \"z\"", "1:10"),
    ];
    for (src, at) in refused {
        assert_error(src, GrammarErrorKind::Unsupported, at, "left recursion");
        let opts = GbnfOptions {
            allow_left_recursion: true,
            ..GbnfOptions::default()
        };
        if let Err(e) = compile_with(src, &opts) {
            assert_eq!(e.kind, GrammarErrorKind::Unproductive, "{src:?}: {e}");
        }
    }
    // Accepted: a terminal first, or a first rule with no empty alternative (even if it
    // derives ε: llama.cpp's test is syntactic), or an empty item in a tail.
    for src in [
        "root ::= \"x\" root | \"y\"",
        "root ::= e root \"x\" | \"y\"\ne ::= f\nf ::= | \"z\"",
        "root ::= (\"a\"?)* \"b\"",
        "root ::= \"a\"{2,5} \"b\"{0,3}",
        "root ::= \"a\"? \"b\"?",
        // A bounded tail is a chain, never a cycle.
        "root ::= e{0,5} \"x\"\ne ::= | \"z\"",
        "root ::= e{1,3} \"x\"\ne ::= | \"z\"",
    ] {
        compile(src);
    }
    let opts = GbnfOptions {
        allow_left_recursion: true,
        ..GbnfOptions::default()
    };
    let g = compile_with("root ::= root \"+\" \"1\" | \"1\"", &opts).unwrap();
    assert!(accepts(&g, b"1+1+1"));
    assert!(!accepts(&g, b"1+"));
}

fn shared_dir() -> Option<std::path::PathBuf> {
    extern crate std;
    if let Ok(dir) = std::env::var("SIEVE_SHARED") {
        return Some(dir.into());
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    dir.is_dir().then_some(dir)
}

#[test]
fn llama_cpp_example_grammars() {
    extern crate std;
    let Some(dir) = shared_dir() else {
        // `.ci/run` runs with `CI=true` and `../shared` beside the clone: missing data there
        // is a failure, not a skip.
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
        assert!(!ci, "no shared data in CI (CI is set)");
        std::eprintln!("SKIP: no shared data (set SIEVE_SHARED or put ../shared beside the repo)");
        return;
    };
    let dir = dir.join("data/gbnf");
    let mut n = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
        .collect();
    names.sort();
    for path in names {
        let src = std::fs::read_to_string(&path).unwrap();
        let g = compile_with(&src, &GbnfOptions::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        let samples: &[(&str, bool)] = match file.as_str() {
            "arithmetic.gbnf" => &[("1+2=3\n", true), ("x = (y*3)\n", true), ("x = \n", false)],
            "json.gbnf" => &[
                ("{\"a\": [1, 2.5e3, true, null, \"\\u00e9\"]}", true),
                ("{\"a\" 1}", false),
            ],
            "json_arr.gbnf" => &[("[\n{\"a\": 1}\n]", true), ("{}", false)],
            "list.gbnf" => &[("- one\n- two\n", true), ("* one\n", false)],
            "chess.gbnf" => &[("1. e4 e5\n2. Nf3 Nc6\n", true), ("1. e9 e5\n", false)],
            "japanese.gbnf" => &[("\u{65e5}\u{672c}", true)],
            "c.gbnf" => &[("int main(){return 0;}", true), ("int main() {}", false)],
            _ => &[],
        };
        for (s, good) in samples {
            assert_eq!(accepts(&g, s.as_bytes()), *good, "{file}: {s:?}");
        }
        n += 1;
    }
    assert_eq!(n, 8, "the 8 llama.cpp example grammars");
}

/// Deterministic mutations of the example-shaped grammars: no panic, any result.
#[test]
fn mutations_never_panic() {
    let base = [
        "root ::= (expr \"=\" ws term \"\\n\")+\nexpr ::= term ([-+*/] term)*\nterm ::= [a-z] [a-z0-9_]* ws | [0-9]+ ws | \"(\" ws expr \")\" ws\nws ::= [ \\t\\n]*",
        "root ::= \"{\" ( \"\\\"\" [^\"\\\\\\x7F\\x00-\\x1F]* \"\\\"\" ){0,3} \"}\" <think> !<[3]> # c\n",
        "root ::= item+\nitem ::= \"- \" [^\\r\\n\\x0b\\x0c\\x85\\u2028\\u2029]+ \"\\n\"",
    ];
    let specials = [
        b'(', b')', b'"', b'[', b']', b'{', b'}', b'|', b'\n', b'\\', b'*', b'<', b'!', b'#', b'-',
        b',', b'^', b'0', b':',
    ];
    let limits = Limits::default();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let src = base[(next() % base.len() as u64) as usize];
        let mut bytes = src.as_bytes().to_vec();
        for _ in 0..(1 + next() % 4) {
            let i = (next() % (bytes.len() as u64 + 1)) as usize;
            match next() % 3 {
                0 if i < bytes.len() => {
                    bytes.remove(i);
                }
                1 => bytes.insert(i, specials[(next() % specials.len() as u64) as usize]),
                _ if i < bytes.len() => {
                    bytes[i] = specials[(next() % specials.len() as u64) as usize];
                }
                _ => {}
            }
        }
        let Ok(text) = core::str::from_utf8(&bytes) else {
            continue;
        };
        for allow in [false, true] {
            let opts = GbnfOptions {
                allow_left_recursion: allow,
                ..GbnfOptions::default()
            };
            let _ = lower(
                text,
                &opts,
                &NoSpecialTokens,
                &limits,
                &mut CompileBudget::new(&limits),
            );
        }
    }
}

#[test]
fn a_root_that_matches_nothing_is_unproductive() {
    let e = compile_with("root ::= [z-a]", &GbnfOptions::default()).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Unproductive);
    check("root ::= [z-a] | \"\\uD800\" | \"ok\"", &["ok"], &[""]);
}

#[test]
fn nul_ends_the_source() {
    check("root ::= \"a\"\n\0garbage", &["a"], &["b"]);
}
