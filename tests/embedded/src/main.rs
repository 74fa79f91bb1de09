//! Firmware example: sieve-core on a microcontroller-sized fixed heap, no OS.
//!
//! Builds a 27-token vocabulary, compiles a JSON grammar (Lark) and a regex, steps matchers
//! through fixed token sequences and checks every mask twice: against allowed sets written
//! by hand (`EXPECTED_*`), and against a brute-force oracle (a copy of the matcher fed each
//! token's bytes). Then runs the same walks, and two grammars too big for the budget, under
//! `max_memory_bytes` = 64 KiB and 256 KiB, measuring the heap peak of each (compile, matcher,
//! masks) with a counting allocator and the stack high-water mark by painting; each peak must
//! stay within the budget plus [`SLACK`] (`core/docs/budget.md`, "On a fixed heap"), and the
//! over-budget grammars must end in a typed `Limit` error (a panic or an allocation failure
//! fails the run).
//!
//! Output goes through semihosting; the exit status is 0 when every check passed. Targets:
//! `thumbv7em-none-eabihf` (qemu `-M mps2-an386`, Cortex-M4F) and `aarch64-unknown-none`
//! (qemu `-M virt -cpu cortex-a53`). `run.sh` builds and runs both.
#![no_std]
#![no_main]

extern crate alloc;

#[macro_use]
mod semihosting;
mod heap;
mod stack;

#[cfg(target_arch = "arm")]
mod rt_cortex_m;

#[cfg(target_arch = "aarch64")]
mod rt_aarch64;

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use sieve_core::{Grammar, GrammarErrorKind, LimitKind, Limits, Matcher, MatcherError, Vocabulary};

/// The heap a run may use beyond `max_memory_bytes`: what `Limits::max_memory_bytes`
/// documents (the structs themselves, per-call scratch, lexeme names) and
/// `tests/tests/memory_budget.rs` checks on the host.
const SLACK: usize = 64 << 10;

/// Rules of the over-budget Lark grammar.
const KEYWORD_RULES: usize = 600;

/// The budgets of the memory cases.
const BUDGETS: [usize; 2] = [64 << 10, 256 << 10];

/// The vocabulary: token id = index. Token 0 is the special EOS token.
const TOKENS: [&str; 27] = [
    "<eos>", "{", "}", "[", "]", ",", ":", "\"", "\"a", "a", "b", "1", "12", "0", "-", "true",
    "tr", "ue", "null", " ", "{\"", "\"}", "a\"", "\n", ".", "ab", "c",
];
const EOS: u32 = 0;

const JSON_LARK: &str = r#"
start: value
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1F]|\\["\\\/bfnrt])*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?/
%ignore /[ \n]+/
"#;

/// A value may start with these (whitespace included, `"}` is a string's start).
const VALUE_START: &[u32] = &[1, 3, 7, 8, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 23];
/// In a string after `"a`: every token but the control character `\n` and those that close
/// the key and then continue with something other than `:`.
const IN_KEY: &[u32] = &[
    1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 25, 26,
];

/// `{"a":[12,true]}` as tokens `{` `"a` `"` `:` `[` `12` `,` `tr` `ue` `]` `}`: the mask
/// before each token (the hand-computed allowed set), and after the last one.
const JSON_WALK: &[(u32, &[u32])] = &[
    (1, VALUE_START),
    (8, &[2, 7, 8, 19, 21, 23]),
    (7, IN_KEY),
    (6, &[6, 19, 23]),
    (3, VALUE_START),
    (
        12,
        &[1, 3, 4, 7, 8, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 23],
    ),
    (5, &[4, 5, 11, 12, 13, 19, 23, 24]),
    (16, VALUE_START),
    (17, &[17]),
    (4, &[4, 5, 19, 23]),
    (2, &[2, 5, 19, 23]),
];
/// After the whole object: EOS or trailing whitespace.
const JSON_END: &[u32] = &[EOS, 19, 23];

const REGEX: &str = "(ab|c)+";
/// `a` `b` `c` under `(ab|c)+`.
const REGEX_WALK: &[(u32, &[u32])] = &[(9, &[9, 25, 26]), (10, &[10]), (26, &[EOS, 9, 25, 26])];
const REGEX_END: &[u32] = &[EOS, 9, 25, 26];

/// The firmware's main program; returns the exit status.
pub fn run() -> u32 {
    heap::init();
    stack::paint();
    println!("sieve firmware: heap {} KiB", heap::HEAP_BYTES >> 10);
    let mut failures = 0u32;
    let mut fail = |msg: String| {
        println!("FAIL: {msg}");
        failures += 1;
    };

    let tokens: Vec<Vec<u8>> = TOKENS.iter().map(|t| t.as_bytes().to_vec()).collect();
    let vocab = match Vocabulary::new(tokens, &[EOS], &[EOS]) {
        Ok(v) => Arc::new(v),
        Err(e) => {
            println!("FAIL: vocabulary: {e}");
            return 1;
        }
    };
    println!(
        "vocabulary: {} tokens, heap {} bytes (the host's, not charged to grammars)",
        vocab.vocab_size(),
        heap::live()
    );

    // 1. Masks, under the default limits.
    let unlimited = Limits::default();
    for (name, src, walk, end) in [
        ("json", Source::Lark(JSON_LARK), JSON_WALK, JSON_END),
        ("regex", Source::Regex(REGEX), REGEX_WALK, REGEX_END),
    ] {
        heap::reset_peak();
        stack::paint();
        let base = heap::live();
        match walk_checked(&src, &vocab, &unlimited, walk, end) {
            Ok(End::Done(n)) => println!(
                "masks {name}: ok ({n} steps, every mask as expected), heap peak {} bytes, stack {} bytes",
                heap::peak() - base,
                stack::high_water()
            ),
            Ok(End::Limit(k)) => fail(format!(
                "masks {name}: limit {} under default limits",
                k.field()
            )),
            Err(e) => fail(format!("masks {name}: {e}")),
        }
    }

    // 2. Heap peaks under tight budgets.
    let keywords = big_lark(KEYWORD_RULES);
    let cases: [(&str, Source, &[(u32, &[u32])], &[u32], bool); 4] = [
        ("json", Source::Lark(JSON_LARK), JSON_WALK, JSON_END, false),
        ("regex", Source::Regex(REGEX), REGEX_WALK, REGEX_END, false),
        ("keyword rules", Source::Lark(&keywords), &[], &[], true),
        (
            "counted repetition",
            Source::Regex("(ab|[a-c]{3}){100,3000}"),
            &[],
            &[],
            true,
        ),
    ];
    for budget in BUDGETS {
        let limits = Limits {
            max_memory_bytes: budget,
            ..Limits::default()
        };
        for (name, src, walk, end, over) in &cases {
            heap::reset_peak();
            stack::paint();
            let base = heap::live();
            let outcome = if walk.is_empty() {
                walk_greedy(src, &vocab, &limits, 300)
            } else {
                walk_checked(src, &vocab, &limits, walk, end)
            };
            let (peak, used, st) = (heap::peak() - base, heap::used_peak(), stack::high_water());
            let ended = match &outcome {
                Ok(End::Done(n)) => format!("done after {n} steps"),
                Ok(End::Limit(k)) => format!("Limit({k:?})"),
                Err(e) => format!("error: {e}"),
            };
            println!(
                "budget {budget} {name}: {ended}; heap peak {peak} bytes (allocator {used}), limit {}, stack {st} bytes",
                budget + SLACK
            );
            if peak > budget + SLACK {
                fail(format!(
                    "budget {budget} {name}: heap peak {peak} > {budget} + {SLACK}"
                ));
            }
            match outcome {
                Err(e) => fail(format!("budget {budget} {name}: {e}")),
                Ok(End::Done(_)) if *over => {
                    fail(format!("budget {budget} {name}: fits, but should not"))
                }
                // The walks must finish at 256 KiB (as on the host); at 64 KiB a typed limit
                // is fine.
                Ok(End::Limit(_)) if !*over && budget >= 256 << 10 => {
                    fail(format!("budget {budget} {name}: should fit"))
                }
                Ok(_) => {}
            }
        }
    }

    if heap::failures() > 0 {
        fail(format!("{} allocation failures", heap::failures()));
    }
    println!(
        "stack high-water mark: {} bytes; heap now {} bytes",
        stack::high_water(),
        heap::live()
    );
    if failures == 0 {
        println!("RESULT: PASS");
        0
    } else {
        println!("RESULT: FAIL ({failures} failures)");
        1
    }
}

enum Source<'a> {
    Lark(&'a str),
    Regex(&'a str),
}

enum End {
    /// The walk finished after this many tokens.
    Done(usize),
    /// A typed limit error, at compile time or in a step.
    Limit(LimitKind),
}

/// `start: item+` with `n` rules `r<i>: "k<i>" "(" ARG ")"` (alternatives of `item`): a
/// grammar too big for 256 KiB.
fn big_lark(n: usize) -> String {
    let mut s = String::from("start: item+\nitem: ");
    for i in 0..n {
        s.push_str(if i == 0 { "r0" } else { " | r" });
        if i > 0 {
            s.push_str(&format!("{i}"));
        }
    }
    s.push('\n');
    for i in 0..n {
        s.push_str(&format!("r{i}: \"k{i}\" \"(\" ARG ( \",\" ARG)* \")\"\n"));
    }
    s.push_str("ARG: /[a-c]+|[0-9]{1,3}/\n");
    s
}

fn compile(
    src: &Source,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
) -> Result<Result<Grammar, LimitKind>, String> {
    let r = match src {
        Source::Lark(s) => Grammar::from_lark(s, vocab, limits),
        Source::Regex(s) => Grammar::from_regex(s, vocab, limits),
    };
    match r {
        Ok(g) => Ok(Ok(g)),
        Err(e) => match e.kind {
            GrammarErrorKind::Limit(k) => Ok(Err(k)),
            _ => Err(format!("compile: not a limit error: {e}")),
        },
    }
}

fn limit(e: MatcherError) -> Result<End, String> {
    match e {
        MatcherError::Limit(k) => Ok(End::Limit(k)),
        e => Err(format!("not a limit error: {e}")),
    }
}

/// Compiles `src`, then consumes `walk`'s tokens, checking each mask (and the final one)
/// against the expected set and against [`oracle`].
fn walk_checked(
    src: &Source,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
    walk: &[(u32, &[u32])],
    end: &[u32],
) -> Result<End, String> {
    let g = match compile(src, vocab, limits)? {
        Ok(g) => g,
        Err(k) => return Ok(End::Limit(k)),
    };
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; m.mask_words()];
    for step in 0..=walk.len() {
        if let Err(e) = m.compute_mask(&mut mask) {
            return limit(e);
        }
        let want = walk.get(step).map_or(end, |w| w.1);
        let got = allowed(&mask);
        if got != want {
            return Err(format!("step {step}: mask {got:?}, expected {want:?}"));
        }
        let brute = oracle(&m, vocab);
        if got != brute {
            return Err(format!("step {step}: mask {got:?}, brute force {brute:?}"));
        }
        if let Some(&(t, _)) = walk.get(step) {
            if let Err(e) = m.consume_token(t) {
                return limit(e);
            }
        }
    }
    Ok(End::Done(walk.len()))
}

/// Compiles `src`, then consumes the longest allowed token (not EOS) `steps` times.
fn walk_greedy(
    src: &Source,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
    steps: usize,
) -> Result<End, String> {
    let g = match compile(src, vocab, limits)? {
        Ok(g) => g,
        Err(k) => return Ok(End::Limit(k)),
    };
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; m.mask_words()];
    for step in 0..steps {
        if let Err(e) = m.compute_mask(&mut mask) {
            return limit(e);
        }
        let Some(t) = allowed(&mask)
            .into_iter()
            .filter(|&t| t != EOS)
            .max_by_key(|&t| vocab.trie_bytes(t).len())
        else {
            return Ok(End::Done(step));
        };
        if let Err(e) = m.consume_token(t) {
            return limit(e);
        }
    }
    Ok(End::Done(steps))
}

/// The allowed token ids of a mask, ascending.
fn allowed(mask: &[u32]) -> Vec<u32> {
    (0..TOKENS.len() as u32)
        .filter(|&t| mask[t as usize / 32] & (1 << (t % 32)) != 0)
        .collect()
}

/// Brute force: a token is allowed iff a copy of the matcher accepts its bytes; EOS iff the
/// matcher accepts.
fn oracle(m: &Matcher, vocab: &Vocabulary) -> Vec<u32> {
    let accepting = m.clone().is_accepting();
    (0..TOKENS.len() as u32)
        .filter(|&t| {
            if t == EOS {
                accepting
            } else {
                m.clone().try_consume_bytes(vocab.trie_bytes(t))
            }
        })
        .collect()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    println!("FAIL: panic: {info}");
    semihosting::exit(2)
}

/// No interrupts are ever enabled and there is one core, so a critical section has nothing to
/// exclude (cortex-m's `critical-section-single-core` provides it on Cortex-M).
#[cfg(target_arch = "aarch64")]
mod single_core {
    struct SingleCore;
    critical_section::set_impl!(SingleCore);
    // SAFETY: one core, interrupts masked from reset to exit: nothing can run between
    // acquire and release.
    unsafe impl critical_section::Impl for SingleCore {
        unsafe fn acquire() {}
        unsafe fn release(_: ()) {}
    }
}
