//! Grammar analysis through its shells: the C ABI's `sieve_grammar_info_json` (called
//! through the `sieve` crate), `grammar-info` over the example GBNF grammars (skipped until
//! the GBNF front end lands) and over a sample of MaskBench schemas.

use std::ptr;

use serde_json::Value;
use sieve::analysis::sieve_grammar_info_json;
use sieve::error::{sieve_error, sieve_error_free, sieve_error_line, sieve_error_status};
use sieve::status::sieve_status;
use sieve::tokenizer::{sieve_tokenizer, sieve_tokenizer_free, sieve_tokenizer_new};
use sieve_bench::grammar_info::{ClassCensus, analyze_text, census};
use sieve_core::Limits;
use sieve_core::grammar::{CompileOptions, GrammarSyntax};
use sieve_tests::native::root;

/// A tokenizer of `a`, `b`, `c` and the special token `<|end|>` (also EOS).
fn tokenizer() -> *const sieve_tokenizer {
    let tokens: [&[u8]; 4] = [b"a", b"b", b"c", b"<|end|>"];
    let bytes: Vec<u8> = tokens.concat();
    let lens: Vec<u32> = tokens.iter().map(|t| t.len() as u32).collect();
    let special = [0u8, 0, 0, 1];
    let eos = [3u32];
    let mut out = ptr::null();
    let status = sieve_tokenizer_new(
        bytes.as_ptr(),
        bytes.len(),
        lens.as_ptr(),
        lens.len(),
        special.as_ptr(),
        eos.as_ptr(),
        eos.len(),
        None,
        ptr::null_mut(),
        &mut out,
        ptr::null_mut(),
    );
    assert_eq!(status, sieve_status::Ok);
    out
}

/// The report, sized first with an empty buffer, or the status and error.
fn info_json(
    tok: *const sieve_tokenizer,
    syntax: &str,
    text: &str,
) -> Result<Value, (sieve_status, *mut sieve_error)> {
    let call = |buf: &mut [u8], len: &mut usize, err: &mut *mut sieve_error| {
        sieve_grammar_info_json(
            tok,
            syntax.as_ptr(),
            syntax.len(),
            text.as_ptr(),
            text.len(),
            ptr::null(),
            if buf.is_empty() {
                ptr::null_mut()
            } else {
                buf.as_mut_ptr()
            },
            buf.len(),
            len,
            err,
        )
    };
    let mut len = 0usize;
    let mut err = ptr::null_mut();
    let status = call(&mut [], &mut len, &mut err);
    if status != sieve_status::InsufficientSize {
        return Err((status, err));
    }
    assert!(len > 0);
    let mut buf = vec![0xAAu8; len + 1];
    let status = call(&mut buf, &mut len, &mut err);
    assert_eq!(status, sieve_status::Ok);
    assert_eq!(buf[len], 0, "NUL-terminated");
    Ok(serde_json::from_slice(&buf[..len]).expect("the report is JSON"))
}

#[test]
fn c_abi_reports_classes_and_shortest_strings() {
    let tok = tokenizer();
    // S → a S b | c, then the special token.
    let lark = "start: s <|end|>\ns: \"a\" s \"b\" | \"c\"\nunused: \"u\"\n";
    let j = info_json(tok, "lark", lark).unwrap();
    assert_eq!(j["class"], "linear");
    assert!(j["why"].as_str().unwrap().contains("self-embedding"), "{j}");
    assert_eq!(j["start"], "start");
    let rules = j["rules"].as_array().unwrap();
    let rule = |name: &str| rules.iter().find(|r| r["name"] == name).unwrap();
    assert_eq!(rule("start")["shortest"], "c<|end|>");
    assert_eq!(rule("unused")["reachable"], false);
    assert_eq!(rule("s")["span"]["line"], 2);
    assert_eq!(j["census"]["linear"], 2);

    let j = info_json(tok, "regex", "[0-9]+(px|em)").unwrap();
    assert_eq!(j["class"], "regular");
    assert_eq!(j["rules"][0]["shortest"], "0em");

    let j = info_json(
        tok,
        "json",
        r#"{"type":"array","items":{"type":"integer"}}"#,
    )
    .unwrap();
    assert_eq!(j["class"], "regular", "{j}");
    assert_eq!(j["rules"][0]["shortest"], "[]");

    // Errors: an unknown syntax, a grammar that does not parse (with its position).
    let (status, err) = info_json(tok, "cobol", "x").unwrap_err();
    assert_eq!(status, sieve_status::InvalidArgument);
    assert_eq!(sieve_error_status(err), sieve_status::InvalidArgument);
    sieve_error_free(err);
    let (status, err) = info_json(tok, "lark", "start: \"a\"\nx: (\n").unwrap_err();
    assert_eq!(status, sieve_status::GrammarError);
    assert!(sieve_error_line(err) >= 2);
    sieve_error_free(err);
    sieve_tokenizer_free(tok);
}

#[test]
fn null_arguments_are_refused() {
    let mut len = 0;
    let status = sieve_grammar_info_json(
        ptr::null(),
        ptr::null(),
        0,
        ptr::null(),
        0,
        ptr::null(),
        ptr::null_mut(),
        0,
        &mut len,
        ptr::null_mut(),
    );
    assert_eq!(status, sieve_status::NullArgument);
}

#[test]
fn grammar_info_over_the_gbnf_examples() {
    let dir = root().join("../shared/data/gbnf");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        sieve_tests::skip_missing_data(&format!("{} not found", dir.display()));
        return;
    };
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gbnf"))
        .collect();
    files.sort();
    let vocab = sieve_bench::maskbench::byte_vocab();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let got = analyze_text(
            GrammarSyntax::Gbnf,
            &text,
            &CompileOptions::default(),
            &vocab,
            &Limits::default(),
        );
        match got {
            Ok(info) => {
                assert!(!info.rules.is_empty(), "{}", path.display());
                let start = info.rules.iter().find(|r| r.name == info.start).unwrap();
                assert!(start.productive, "{}: {}", path.display(), info.to_text());
            }
            Err(e) => panic!("{}: {e}", path.display()),
        }
    }
}

#[test]
fn grammar_info_over_maskbench_schemas() {
    let dir = root().join("../shared/data/maskbench");
    if !dir.is_dir() {
        sieve_tests::skip_missing_data(&format!("{} not found", dir.display()));
        return;
    }
    // A sample (the full census: `sieve maskbench --classes`, core/docs/analysis.md).
    let files = sieve_bench::maskbench::list_files(&[dir], 40).unwrap();
    let vocab = sieve_bench::maskbench::byte_vocab();
    let c: ClassCensus = census(
        &files,
        &CompileOptions::default(),
        &vocab,
        &Limits::default(),
        |_| {},
    );
    assert_eq!(c.total, files.len());
    let classified: usize = c.classes.values().sum();
    assert_eq!(classified + c.failed.len(), c.total);
    // Every schema of the sample compiles today (the bar was 10% failures).
    assert!(c.failed.is_empty(), "{:?}", c.failed);
    assert!(c.to_text().contains("class census over 40 schemas"));
}
