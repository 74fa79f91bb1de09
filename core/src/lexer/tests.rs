use super::*;
use crate::regex::PatternFlags;
use alloc::collections::VecDeque;

fn lexer(patterns: &[&str]) -> Lexer {
    let limits = Limits::default();
    let mut exprs = ExprSet::new(&limits);
    let lexemes = patterns
        .iter()
        .map(|p| LexemeInfo {
            expr: exprs.compile_pattern(p, PatternFlags::default()).unwrap(),
            lazy: false,
            ignore: false,
        })
        .collect();
    Lexer::new(exprs, lexemes, Vec::new(), &limits)
}

/// Every transition read through the class blocks is the state the lexeme derivatives
/// give for that very byte, over the first few hundred states breadth-first, with the
/// bytes tried in an order that computes some blocks from a later class first.
fn check_blocks(patterns: &[&str]) {
    check_lexer(lexer(patterns), patterns.len());
}

fn check_lexer(mut lx: Lexer, lexemes: usize) {
    let patterns = &lx.lexemes.iter().map(|l| l.expr).collect::<Vec<_>>();
    let all: Vec<u32> = (0..lexemes as u32).collect();
    let start = lx.initial_state(&all).unwrap();
    let mut queue = VecDeque::from([start]);
    let mut seen = alloc::vec![start];
    let mut checked = 0;
    while let Some(s) = queue.pop_front() {
        if seen.len() > 300 {
            break;
        }
        for i in 0..256usize {
            let byte = (i * 167 % 256) as u8;
            let got = lx.next(s, byte).unwrap();
            let mut want = Vec::new();
            for k in 0..lx.pairs.get(s.0).len() {
                let (lex, e) = lx.pairs.get(s.0)[k];
                if lex != START_MARK
                    && let Some(d) = lx.derive_live(e, byte).unwrap()
                {
                    want.push((lex, d));
                }
            }
            assert_eq!(
                lx.pairs.get(got.0),
                &want[..],
                "{patterns:?}: state {s:?}, byte {byte:#x}"
            );
            checked += 1;
            if got != StateId::DEAD && !seen.contains(&got) {
                seen.push(got);
                queue.push_back(got);
            }
        }
    }
    assert!(checked > 256, "{patterns:?}: only {checked} transitions");
}

#[test]
fn class_blocks_with_and_not() {
    // A generic key beside literal keys, as the JSON compiler builds it.
    let limits = Limits::default();
    let mut exprs = ExprSet::new(&limits);
    let flags = PatternFlags::default();
    let any = exprs.compile_pattern(r#""[^"\\]*""#, flags).unwrap();
    let keys = exprs
        .compile_pattern(r#""alpha"|"alps"|"beta""#, flags)
        .unwrap();
    let not_keys = exprs.mk_not(keys).unwrap();
    let generic = exprs.mk_and(&[any, not_keys]).unwrap();
    let lexemes = [generic, keys]
        .into_iter()
        .map(|expr| LexemeInfo {
            expr,
            lazy: false,
            ignore: false,
        })
        .collect();
    let lx = Lexer::new(exprs, lexemes, Vec::new(), &limits);
    check_lexer(lx, 2);
}

#[test]
fn class_blocks_give_the_per_byte_transitions() {
    check_blocks(&[r#""(?:\S+\s+){0,20}\S+""#]);
    check_blocks(&[r#""alpha""#, r#""alpine""#, r#""beta""#, r#""[^"\\]*""#]);
    check_blocks(&[
        r"[a-z]+",
        r"[0-9]+(\.[0-9]+)?",
        r"\s+",
        r"if|else|élan|日本",
    ]);
    check_blocks(&[r"[^\x00-\x1f]{0,5}x", r"(?:é|e)+"]);
}
