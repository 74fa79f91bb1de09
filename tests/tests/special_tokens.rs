//! Special tokens are tokens: a grammar's `<|name|>` and `<[id]>` allow exactly the token
//! ids they name, never text tokens that spell the name (or the trie's encoding), and text
//! never reaches the byte `0xFF` that marks special tokens.
//!
//! Every mask is checked token by token against a set computed from the token table alone
//! (ids, names and texts), not by replaying the engine: the expected set at a special
//! position is the named ids; at a text position it is the text tokens whose text is a prefix
//! of what the grammar still requires.
//!
//! Real tokenizers: every `*.json` in `$SIEVE_SHARED/tokenizers` (default
//! `<workspace>/../shared`), loaded as `sieve` does (`sieve_bench::tokenizer`). Missing
//! folder: a failure under `CI`, else a `SKIP` line.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use sieve_bench::tokenizer::LoadedTokenizer;
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::grammar::json::JsonOptions;
use sieve_core::{Grammar, GrammarErrorKind, Limits, Matcher, Vocabulary};
use sieve_tests::bit;

/// `<workspace>/../shared/tokenizers` or `$SIEVE_SHARED/tokenizers`.
fn tokenizer_dir() -> Option<PathBuf> {
    let shared = match std::env::var_os("SIEVE_SHARED") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"),
    };
    let dir = shared.join("tokenizers");
    if dir.is_dir() {
        return Some(dir);
    }
    let why = format!("{} is not a directory (set SIEVE_SHARED)", dir.display());
    if std::env::var_os("CI").is_some() {
        panic!("{why}");
    }
    eprintln!("SKIP: special tokens over real tokenizers: {why}");
    None
}

/// The token table as plain data: text per id and the special ids. Expected sets are
/// computed from it alone.
struct Table {
    texts: Vec<Vec<u8>>,
    special: BTreeSet<u32>,
    eos: Vec<u32>,
}

impl Table {
    fn of(tokens: Vec<Vec<u8>>, special: &[u32], eos: &[u32]) -> Table {
        Table {
            texts: tokens,
            special: special.iter().copied().collect(),
            eos: eos.to_vec(),
        }
    }

    fn is_text(&self, id: u32) -> bool {
        !self.special.contains(&id) && !self.texts[id as usize].is_empty()
    }

    /// Text tokens whose text is a non-empty prefix of `rest`.
    fn text_prefixes_of(&self, rest: &[u8]) -> BTreeSet<u32> {
        (0..self.texts.len() as u32)
            .filter(|&id| self.is_text(id) && rest.starts_with(&self.texts[id as usize]))
            .collect()
    }

    /// Special ids named `name`.
    fn named(&self, name: &[u8]) -> BTreeSet<u32> {
        self.special
            .iter()
            .copied()
            .filter(|&id| self.texts[id as usize] == name)
            .collect()
    }

    /// A text token with exactly this text.
    fn text_token(&self, text: &[u8]) -> Option<u32> {
        (0..self.texts.len() as u32).find(|&id| self.is_text(id) && self.texts[id as usize] == text)
    }
}

/// The mask equals `want` bit for bit, and `is_allowed` agrees on every token.
fn check_mask(what: &str, m: &mut Matcher, want: &BTreeSet<u32>, table: &Table) {
    let vocab = m.grammar().vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    m.forget_last_mask();
    m.compute_mask(&mut mask).expect("mask");
    for t in 0..vocab.vocab_size() as u32 {
        let expected = want.contains(&t);
        assert_eq!(
            bit(&mask, t as usize),
            expected,
            "{what}: token {t} {:?} (special: {}): mask says {}, expected {expected}",
            String::from_utf8_lossy(&table.texts[t as usize]),
            table.special.contains(&t),
            !expected
        );
    }
    // `is_allowed` pushes each token's bytes without the trie: a second, separate path.
    for t in 0..vocab.vocab_size() as u32 {
        assert_eq!(
            m.is_allowed(t).expect("is_allowed"),
            want.contains(&t),
            "{what}: is_allowed({t}) {:?}",
            String::from_utf8_lossy(&table.texts[t as usize])
        );
    }
}

fn compile(src: &str, vocab: &Arc<Vocabulary>) -> Grammar {
    Grammar::from_lark(src, vocab, &Limits::default())
        .unwrap_or_else(|e| panic!("grammar failed to compile: {e}\n{src}"))
}

/// A Lark string literal for `text`.
fn lark_str(text: &[u8]) -> String {
    let s = String::from_utf8(text.to_vec()).expect("UTF-8 name");
    format!("{s:?}")
}

/// `start: "a" SPECIAL "b"`: at every position the mask is exactly what the token table
/// says; text spelling the special token's name (or its encoding) never passes; EOS only at
/// the end.
fn check_between(
    label: &str,
    vocab: &Arc<Vocabulary>,
    table: &Table,
    special: &str,
    ids: &BTreeSet<u32>,
) {
    let (a, b) = (table.text_token(b"a"), table.text_token(b"b"));
    let (Some(a), Some(_)) = (a, b) else {
        panic!("{label}: no text tokens `a` and `b`");
    };
    let g = compile(&format!("start: \"a\" {special} \"b\"\n"), vocab);
    let what = format!("{label}: {special}");
    let mut m = Matcher::new(&g);
    check_mask(
        &format!("{what}, at the start"),
        &mut m,
        &table.text_prefixes_of(b"a"),
        table,
    );
    m.consume_token(a).expect("a");
    check_mask(&format!("{what}, after a"), &mut m, ids, table);

    // Nothing a text token starts is accepted here: the raw 0xFF token, the name's and the
    // encoding's spellings.
    let first = *ids.first().expect("an id");
    let name = table.texts[first as usize].clone();
    let mut spellings = vec![
        name.clone(),
        Vocabulary::special_encoding(first),
        vec![0xFF],
    ];
    spellings.push(name[..2.min(name.len())].to_vec());
    for text in &spellings {
        if let Some(tokens) = vocab.greedy_tokenize_text(text) {
            assert!(
                tokens.iter().all(|&t| table.is_text(t)),
                "{what}: text tokenized to a special token"
            );
            assert_eq!(
                m.validate_tokens(&tokens).expect("validate"),
                0,
                "{what}: text {:?} accepted where the special token must be",
                String::from_utf8_lossy(text)
            );
        }
    }
    // (The byte 0xFF itself is a valid prefix here: it starts the special's encoding. Only
    // special tokens push it.)

    for &id in ids {
        let mut m = m.clone();
        m.consume_token(id).expect("the special token");
        check_mask(
            &format!("{what}, after {id}"),
            &mut m,
            &table.text_prefixes_of(b"b"),
            table,
        );
        m.consume_token(b.unwrap()).expect("b");
        let eos: BTreeSet<u32> = table.eos.iter().copied().collect();
        check_mask(&format!("{what}, at the end"), &mut m, &eos, table);
        if let Some(&e) = table.eos.first() {
            m.consume_token(e).expect("eos");
            assert!(m.is_stopped());
        }
    }
}

/// `start: "a" (SPECIAL | "NAME") "b"`: the special ids and the text spelling the name are
/// two different ways, each allowed as itself.
fn check_special_or_text(label: &str, vocab: &Arc<Vocabulary>, table: &Table, name: &[u8]) {
    let ids = table.named(name);
    let src = format!(
        "start: \"a\" ({} | {}) \"b\"\n",
        String::from_utf8_lossy(name),
        lark_str(name)
    );
    let g = compile(&src, vocab);
    let mut m = Matcher::new(&g);
    m.consume_token(table.text_token(b"a").expect("a"))
        .expect("a");
    let mut rest = name.to_vec();
    rest.push(b'b');
    let mut want = table.text_prefixes_of(&rest);
    want.extend(ids.iter().copied());
    check_mask(&format!("{label}: {src}"), &mut m, &want, table);
    // Spelled as text, the name is followed by "b" just the same.
    let text = vocab.greedy_tokenize_text(name).expect("the name as text");
    m.consume_tokens(&text).expect("the name as text tokens");
    let b = table.text_token(b"b").expect("b");
    m.consume_token(b).expect("b");
    assert!(m.is_accepting());
}

/// `<[X]>` on a text token `X` (GBNF and Lark): `X` by id and nothing else there, not the
/// same text spelled by other tokens; the grammar reads `X` by id only (elsewhere its text
/// is spelled by other tokens). `!<[X]>` excludes exactly `X`. Ids beyond the vocabulary are
/// errors.
fn check_text_by_id(label: &str, vocab: &Arc<Vocabulary>, table: &Table) {
    // A text token of at least three ASCII letters, which smaller tokens can also spell.
    let x = (0..table.texts.len() as u32)
        .find(|&id| {
            let t = &table.texts[id as usize];
            table.is_text(id)
                && t.len() >= 3
                && t.iter().all(u8::is_ascii_lowercase)
                && vocab.greedy_tokenize_text(&t[..1]).is_some()
                && vocab.greedy_tokenize_text(&t[1..]).is_some()
        })
        .expect("a text token of letters");
    let text = table.texts[x as usize].clone();
    let (a, b) = (table.text_token(b"a"), table.text_token(b"b"));
    let (Some(a), Some(b)) = (a, b) else {
        panic!("{label}: no text tokens `a` and `b`");
    };
    let without_x = |mut set: BTreeSet<u32>| {
        set.remove(&x);
        set
    };
    let limits = Limits::default();
    let gbnf = GbnfOptions::default();
    for (front, g) in [
        (
            "GBNF",
            Grammar::from_gbnf(
                &format!("root ::= \"a\" <[{x}]> \"b\""),
                &gbnf,
                vocab,
                &limits,
            ),
        ),
        (
            "Lark",
            Grammar::from_lark(&format!("start: \"a\" <[{x}]> \"b\""), vocab, &limits),
        ),
    ] {
        let g = g.unwrap_or_else(|e| panic!("{label}: {front}: {e}"));
        let what = format!(
            "{label}: {front} <[{x}]> ({:?})",
            String::from_utf8_lossy(&text)
        );
        let mut m = Matcher::new(&g);
        let want = without_x(table.text_prefixes_of(b"a"));
        check_mask(&format!("{what}, at the start"), &mut m, &want, table);
        m.consume_token(a).expect("a");
        check_mask(
            &format!("{what}, after a"),
            &mut m,
            &BTreeSet::from([x]),
            table,
        );
        // Its text spelled by other tokens is refused at the first token.
        for k in 1..text.len() {
            let mut tokens = vocab.greedy_tokenize_text(&text[..k]).expect("prefix");
            tokens.extend(vocab.greedy_tokenize_text(&text[k..]).expect("suffix"));
            assert_eq!(
                m.validate_tokens(&tokens).expect("validate"),
                0,
                "{what}: split {k}"
            );
        }
        m.consume_token(x).expect("x by id");
        let want = without_x(table.text_prefixes_of(b"b"));
        check_mask(&format!("{what}, after {x}"), &mut m, &want, table);
        m.consume_token(b).expect("b");
        let eos: BTreeSet<u32> = table.eos.iter().copied().collect();
        check_mask(&format!("{what}, at the end"), &mut m, &eos, table);
    }
    // `!<[X]>`: one token but `X` (text of other tokens, or a special but EOS).
    let src = format!("root ::= \"a\" !<[{x}]>");
    let g = Grammar::from_gbnf(&src, &gbnf, vocab, &limits).expect("negation");
    let mut m = Matcher::new(&g);
    m.consume_token(a).expect("a");
    let mut mask = vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).expect("mask");
    assert!(!bit(&mask, x as usize), "{label}: {src}");
    assert!(
        bit(&mask, a as usize) && bit(&mask, b as usize),
        "{label}: {src}"
    );
    for &s in &table.special {
        let allowed = !table.eos.contains(&s);
        assert_eq!(
            bit(&mask, s as usize),
            allowed,
            "{label}: {src}: special {s}"
        );
    }
    // Ids beyond the vocabulary are errors.
    let n = table.texts.len();
    let e = Grammar::from_lark(&format!("start: <[{n}]>"), vocab, &limits).expect_err("range");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken, "{label}");
    let e =
        Grammar::from_gbnf(&format!("root ::= <[{n}]>"), &gbnf, vocab, &limits).expect_err("range");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken, "{label}");
}

/// Special tokens to test: the EOS ids, the first and last other specials.
fn picks(table: &Table) -> Vec<u32> {
    let mut out: BTreeSet<u32> = table.eos.iter().copied().collect();
    let others: Vec<u32> = table
        .special
        .iter()
        .copied()
        .filter(|id| !table.eos.contains(id))
        .collect();
    out.extend(others.first());
    out.extend(others.last());
    out.into_iter().collect()
}

fn is_bracket_name(name: &[u8]) -> bool {
    name.starts_with(b"<|")
        && name.ends_with(b"|>")
        && name.len() > 4
        && !name.contains(&b'\n')
        && std::str::from_utf8(name).is_ok()
}

#[test]
fn every_real_tokenizer() {
    let Some(dir) = tokenizer_dir() else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read tokenizer dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no tokenizer in {}", dir.display());
    let mut with_raw_ff = 0;
    for path in files {
        let label = path.file_stem().unwrap().to_string_lossy().into_owned();
        let tok = LoadedTokenizer::load(path.to_str().unwrap())
            .unwrap_or_else(|e| panic!("{label}: {e:#}"));
        let t = tok.table();
        let table = Table::of(t.tokens.clone(), &t.special, &t.eos);
        let vocab = tok.vocab.clone();
        assert!(!table.eos.is_empty(), "{label}: no EOS");
        // Most byte-level and byte-fallback vocabularies have a raw 0xFF text token (SmolLM2
        // has none); it must never be allowed anywhere below (masks are checked token by
        // token), nor any other text token containing 0xFF.
        let with_ff = (0..table.texts.len() as u32)
            .filter(|&t| table.is_text(t) && table.texts[t as usize].contains(&0xFF))
            .count();
        with_raw_ff += usize::from(table.text_token(&[0xFF]).is_some());
        // Detokenization gives names, never encodings.
        for &id in &table.special {
            assert_eq!(
                vocab.token_text(id),
                table.texts[id as usize],
                "{label}: {id}"
            );
        }
        let picked = picks(&table);
        for &id in &picked {
            let name = table.texts[id as usize].clone();
            check_between(
                &label,
                &vocab,
                &table,
                &format!("<[{id}]>"),
                &BTreeSet::from([id]),
            );
            if is_bracket_name(&name) {
                let n = String::from_utf8_lossy(&name).into_owned();
                check_between(&label, &vocab, &table, &n, &table.named(&name));
                check_special_or_text(&label, &vocab, &table, &name);
            }
        }
        // A list of ids: exactly those.
        let list = picked
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        check_between(
            &label,
            &vocab,
            &table,
            &format!("<[{list}]>"),
            &picked.iter().copied().collect(),
        );
        check_text_by_id(&label, &vocab, &table);
        eprintln!(
            "{label}: {} specials, {} checked; {with_ff} text tokens contain 0xFF",
            table.special.len(),
            picked.len()
        );
    }
    assert!(with_raw_ff > 0, "no tokenizer has a raw 0xFF token");
}

/// A small byte-level vocabulary: every single byte (the raw `0xFF` among them), text that
/// spells special names and encodings, a text token with `0xFF` inside, and two specials
/// sharing the name `<|eot|>` with a third special and a text token of the same bytes.
fn byte_level() -> (Arc<Vocabulary>, Table) {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    let words: [&[u8]; 12] = [
        b"<|",
        b"eot",
        b"|>",
        b"<|eot|>",
        b"\xFF<|eot|>",
        b"a\xFF",
        b"\xFF\xFF",
        b"\xFF2",
        b"62",
        b"<|tool|>",
        b"ab",
        b"<|eot",
    ];
    tokens.extend(words.iter().map(|w| w.to_vec()));
    let first = tokens.len() as u32;
    tokens.extend([
        b"<|eot|>".to_vec(),
        b"<|tool|>".to_vec(),
        b"<|eot|>".to_vec(),
    ]);
    let special = [first, first + 1, first + 2];
    let eos = [first];
    let vocab = Vocabulary::new(tokens.clone(), &special, &eos).expect("vocab");
    (Arc::new(vocab), Table::of(tokens, &special, &eos))
}

#[test]
fn synthetic_byte_level_vocabulary() {
    let (vocab, table) = byte_level();
    let eot = table.named(b"<|eot|>");
    assert_eq!(eot.len(), 2);
    let tool = table.named(b"<|tool|>");
    check_between("synthetic", &vocab, &table, "<|eot|>", &eot);
    check_between("synthetic", &vocab, &table, "<|tool|>", &tool);
    check_special_or_text("synthetic", &vocab, &table, b"<|eot|>");
    // `<[id]>` allows exactly that id: not the other special named `<|eot|>`, not the text
    // token `<|eot|>`, not the bytes of the id's encoding.
    for &id in eot.iter().chain(&tool) {
        check_between(
            "synthetic",
            &vocab,
            &table,
            &format!("<[{id}]>"),
            &BTreeSet::from([id]),
        );
    }
    let both: BTreeSet<u32> = eot.iter().chain(&tool).copied().collect();
    let ids = both
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    check_between("synthetic", &vocab, &table, &format!("<[{ids}]>"), &both);
    // A special token then text, repeated: the encodings never merge with the text around
    // them, whatever the text spells.
    let g = compile("start: (<|eot|> /[0-9a-z<|>]+/)+\n", &vocab);
    let mut m = Matcher::new(&g);
    let e = *eot.first().unwrap();
    let two = table.text_token(b"62").unwrap();
    check_mask("loop start", &mut m, &eot, &table);
    // Every text token made of the class's characters, the `<|eot|>` specials and EOS (the
    // output is complete after each round).
    let mut after_text: BTreeSet<u32> = (0..table.texts.len() as u32)
        .filter(|&t| {
            table.is_text(t)
                && table.texts[t as usize]
                    .iter()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase() || b"<|>".contains(c))
        })
        .collect();
    after_text.extend(eot.iter().copied());
    after_text.extend(table.eos.iter().copied());
    for round in 0..3 {
        m.consume_token(e).expect("eot");
        m.consume_token(two).expect("text digits");
        check_mask(&format!("loop round {round}"), &mut m, &after_text, &table);
    }
    // Forced tokens through a special: the forced bytes end with the encoding, read back
    // as the id.
    let tool = *tool.first().unwrap();
    let ab = table.text_token(b"ab").unwrap();
    let mut m = Matcher::new(&compile("start: \"ab\" <|tool|>\n", &vocab));
    assert_eq!(m.compute_ff_tokens().expect("ff"), vec![ab, tool]);
    assert_eq!(vocab.tokens_to_text(&[ab, tool]), b"ab<|tool|>");
}

/// Text lexemes never match `0xFF`, in every front-end form: after each grammar's prefix
/// the byte `0xFF` is refused (and with it every text token containing it), while the
/// character U+00FF (`C3 BF` in UTF-8) passes where the text allows it.
#[test]
fn text_never_reaches_the_marker_byte() {
    let (vocab, table) = byte_level();
    let lark_cases: &[(&str, &[u8], bool)] = &[
        ("start: \"q\" /./ \"z\"", b"q", true),
        ("start: \"q\" /(?s:.)/ \"z\"", b"q", true),
        ("start: \"q\" /[^a]/ \"z\"", b"q", true),
        ("start: \"q\" /[^\\x00-\\x7f]/ \"z\"", b"q", true),
        ("start: \"q\" /\\xFF/ \"z\"", b"q", true),
        ("start: \"q\" /\\x{FF}/ \"z\"", b"q", true),
        ("start: \"q\" /[\\x00-\\xff]/ \"z\"", b"q", true),
        ("start: \"q\" /\\W/ \"z\"", b"q", false),
        ("start: \"q\" /\\p{Any}+/ \"z\"", b"q", true),
        ("start: \"q\" /(?i)\\xff/ \"z\"", b"q", true),
        ("start: \"q\" \"\\xff\" \"z\"", b"q", true),
        ("start: \"q\" \"\\u00ff\"i \"z\"", b"q", true),
        ("start: \"q\" \"\\x00\"..\"\\xff\" \"z\"", b"q", true),
        ("start: \"q\" X \"z\"\nX: /[^z]+/", b"q", true),
        ("start: \"q\" x\nx[lazy]: /.*/ \"z\"", b"q", true),
        ("start: \"q\" x\nx[stop=\"z\"]: /.*/", b"q", true),
        (
            "start: \"q\" s\ns: %json {\"type\": \"string\"}",
            b"q\"",
            true,
        ),
        (
            "start: \"q\" s\ns: %json {\"type\": \"string\", \"not\": {\"const\": \"a\"}}",
            b"q\"",
            true,
        ),
        ("start: \"q\" s\ns: %json {}", b"q\"", true),
        ("start: \"q\" s\ns: %json {}", b"q{\"", true),
    ];
    for &(src, prefix, utf8_ok) in lark_cases {
        let g = compile(src, &vocab);
        check_no_marker(src, &g, prefix, utf8_ok, &table);
    }
    // (schema, prefix, whether U+00FF may follow the prefix)
    let schemas: &[(&str, &[u8], bool)] = &[
        (r#"{"type": "string"}"#, b"\"", true),
        (r#"{"type": "string", "pattern": "^[^a]*$"}"#, b"\"", true),
        (r#"{"type": "string", "pattern": "^\\W+$"}"#, b"\"", false),
        (r#"{"type": "string", "format": "date-time"}"#, b"\"", false),
        (r#"{"not": {"type": "integer"}}"#, b"\"", true),
        (
            r#"{"type": "string", "not": {"pattern": "^a"}}"#,
            b"\"",
            true,
        ),
        (r#"{"enum": ["ÿ", "a"]}"#, b"\"", true),
        (
            r#"{"type": "object", "propertyNames": {"pattern": "^[^a]"}}"#,
            b"{\"",
            true,
        ),
        (
            r#"{"type": "object", "properties": {"a": {}}, "patternProperties": {"^b": {}}, "additionalProperties": true}"#,
            b"{\"",
            true,
        ),
        (
            r#"{"type": "object", "additionalProperties": {"type": "string"}}"#,
            b"{\"x\":\"",
            true,
        ),
    ];
    for &(schema, prefix, utf8_ok) in schemas {
        for strict in [false, true] {
            let opts = JsonOptions {
                strict,
                ..JsonOptions::default()
            };
            let g = match Grammar::from_json_schema_str(schema, &opts, &vocab, &Limits::default()) {
                Ok((g, _)) => g,
                // Strict mode may refuse what it cannot compile exactly.
                Err(_) if strict => continue,
                Err(e) => panic!("{schema}: {e}"),
            };
            check_no_marker(schema, &g, prefix, utf8_ok, &table);
        }
    }
    // A pattern that could match raw bytes is refused, not lowered to bytes.
    for src in [
        "start: /(?-u:\\xFF)/",
        "start: /(?-u:[\\x00-\\xff])/",
        "start: /(?-u)./",
    ] {
        let e = Grammar::from_lark(src, &vocab, &Limits::default());
        assert!(e.is_err(), "{src} compiled");
    }
    assert!(Grammar::from_regex("(?-u:\\xFF)", &vocab, &Limits::default()).is_err());
}

fn check_no_marker(what: &str, g: &Grammar, prefix: &[u8], utf8_ok: bool, table: &Table) {
    let mut m = Matcher::new(g);
    assert!(
        m.try_consume_bytes(prefix) || prefix.is_empty(),
        "{what}: prefix {prefix:?}"
    );
    let mut probe = m.clone();
    assert!(!probe.try_consume_bytes(&[0xFF]), "{what}: 0xFF accepted");
    if utf8_ok {
        assert!(
            m.clone().try_consume_bytes("ÿ".as_bytes()),
            "{what}: U+00FF refused"
        );
    }
    let vocab = g.vocab().clone();
    let mut mask = vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).expect("mask");
    for t in 0..vocab.vocab_size() as u32 {
        let text = &table.texts[t as usize];
        if table.is_text(t) && text.contains(&0xFF) {
            assert!(!bit(&mask, t as usize), "{what}: token {text:?} allowed");
            assert!(
                !m.is_allowed(t).unwrap(),
                "{what}: token {text:?} is_allowed"
            );
        }
    }
}

/// The special token at the end of a grammar: allowed as a lexeme before the output is
/// complete, then EOS stops.
#[test]
fn eos_as_a_grammar_token_and_as_stop() {
    let (vocab, table) = byte_level();
    let eos = table.eos[0];
    let g = compile(&format!("start: \"ab\" <[{eos}]>\n"), &vocab);
    let mut m = Matcher::new(&g);
    m.consume_token(table.text_token(b"ab").unwrap()).unwrap();
    check_mask(
        "before the EOS lexeme",
        &mut m,
        &BTreeSet::from([eos]),
        &table,
    );
    m.consume_token(eos).unwrap();
    assert!(!m.is_stopped() && m.is_accepting());
    check_mask("after it", &mut m, &BTreeSet::from([eos]), &table);
    m.consume_token(eos).unwrap();
    assert!(m.is_stopped());
    // Rolled back over both, the grammar is where it was.
    m.rollback(2).unwrap();
    check_mask("rolled back", &mut m, &BTreeSet::from([eos]), &table);
    assert!(!m.is_accepting());
}

/// Qwen 3's `"special": false` markup tokens are control tokens by default, in the Rust API
/// and the C ABI alike; `SIEVE_ADDED_TOKENS_SPECIAL_ONLY` / `AddedTokens::SpecialOnly` keep
/// the file's flag. As a control token `<tool_call>` is refused in JSON string text; the
/// text spelling `<`, `tool`, ... stays allowed.
#[test]
fn qwen3_markup_tokens_are_control_tokens() {
    use sieve_core::vocab::hf::AddedTokens;
    let Some(dir) = tokenizer_dir() else { return };
    let text = std::fs::read_to_string(dir.join("qwen3.json")).expect("qwen3.json");
    let tool_call = 151_657;
    let markup = Vocabulary::from_tokenizer_json(&text).expect("loads");
    let plain =
        Vocabulary::from_tokenizer_json_with(&text, AddedTokens::SpecialOnly).expect("loads");
    assert_eq!(markup.token_text(tool_call), b"<tool_call>");
    assert!(markup.is_special(tool_call) && !plain.is_special(tool_call));
    for (name, id) in [
        ("<think>", 151_667),
        ("</think>", 151_668),
        ("</tool_call>", 151_658),
    ] {
        assert_eq!(markup.special_by_name(name), Some(id), "{name}");
    }
    // In a JSON string: the control token is refused, its text spelling is not.
    let opts = JsonOptions::default();
    let (g, _) = Grammar::from_json_schema_str(
        r#"{"type":"string"}"#,
        &opts,
        &Arc::new(markup),
        &Limits::default(),
    )
    .expect("compiles");
    let mut m = Matcher::new(&g);
    m.try_consume_bytes(b"\"");
    assert!(!m.is_allowed(tool_call).expect("is_allowed"));
    assert!(m.try_consume_bytes(b"<tool_call>"));

    // The C ABI's knob: a Lark grammar naming `<tool_call>` compiles only where it is a
    // control token.
    let lark = "start: <tool_call>";
    let mut tok: *const sieve::tokenizer::sieve_tokenizer = std::ptr::null();
    for (role, special) in [(0u32, true), (1, false), (2, true)] {
        let status = sieve::tokenizer::sieve_tokenizer_from_json_with(
            text.as_ptr(),
            text.len(),
            role,
            &mut tok,
            std::ptr::null_mut(),
        );
        assert_eq!(status, sieve::sieve_status::Ok);
        let mut g: *const sieve::grammar::sieve_grammar = std::ptr::null();
        let status = sieve::grammar::sieve_grammar_new(
            tok,
            sieve::grammar::sieve_grammar_kind::Lark as u32,
            lark.as_ptr(),
            lark.len(),
            std::ptr::null(),
            &mut g,
            std::ptr::null_mut(),
        );
        let want = if special {
            sieve::sieve_status::Ok
        } else {
            sieve::sieve_status::GrammarError
        };
        assert_eq!(status, want, "role {role}");
        sieve::grammar::sieve_grammar_free(g);
        sieve::tokenizer::sieve_tokenizer_free(tok);
    }
    let status = sieve::tokenizer::sieve_tokenizer_from_json_with(
        text.as_ptr(),
        text.len(),
        7,
        &mut tok,
        std::ptr::null_mut(),
    );
    assert_eq!(status, sieve::sieve_status::InvalidArgument);
}
