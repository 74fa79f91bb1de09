//! Firmware example: sieve-core on a microcontroller-sized fixed heap, no OS.
//!
//! Builds a 27-token vocabulary, compiles a JSON grammar (Lark) and a regex, steps matchers
//! through fixed token sequences and checks every mask twice: against allowed sets written
//! by hand (`EXPECTED_*`), and against a per-token consistency check (a copy of the matcher fed each
//! token's bytes). Then runs the same walks, the host's adversarial sources and grammars too big for the budget, under
//! `max_memory_bytes` = 64 KiB and 256 KiB, measuring the heap peak of each (compile, matcher,
//! masks) with a counting allocator and the stack high-water mark by painting; each peak must
//! stay within the budget plus [`SLACK`] (`core/docs/architecture.md`, "On a fixed heap"), and the
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

use sieve_core::grammar::json::JsonOptions;
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

/// The host's JSON Schema case (`tests/tests/memory_budget.rs`).
const SCHEMA: &str = r#"{"type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 3000},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]{1,40}$"}},
        "n": {"type": "integer", "minimum": -5, "maximum": 100000}
    },
    "required": ["name", "tags", "n"]}"#;

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

    // The most heap any memory case used beyond its budget, the most stack any case used.
    let (mut max_over, mut max_stack) = (0isize, 0usize);

    // 1. Masks, under the default limits.
    let unlimited = Limits::default();
    for (name, src, walk, end) in [
        ("json", Source::Lark(JSON_LARK), JSON_WALK, JSON_END),
        ("regex", Source::Regex(REGEX), REGEX_WALK, REGEX_END),
    ] {
        heap::reset_peak();
        stack::paint();
        let base = heap::live();
        let outcome = walk_checked(&src, &vocab, &unlimited, walk, end);
        let (peak, st) = (heap::peak() - base, stack::high_water());
        max_stack = max_stack.max(st);
        match outcome {
            Ok(End::Done(n)) => println!(
                "masks {name}: ok ({n} steps, every mask as expected), heap peak {peak} bytes, stack {st} bytes"
            ),
            Ok(End::Limit(k)) => fail(format!(
                "masks {name}: limit {} under default limits",
                k.field()
            )),
            Err(e) => fail(format!("masks {name}: {e}")),
        }
    }

    // 2. Heap peaks under tight budgets: the walks above (checked again), the host's
    // adversarial sources (`tests/tests/memory_budget.rs`) and two grammars too big for
    // either budget.
    let keywords = big_lark(KEYWORD_RULES);
    let cases: [(&str, Source, Walk, Expect); 8] = [
        (
            "json",
            Source::Lark(JSON_LARK),
            Walk::Checked(JSON_WALK, JSON_END),
            Expect::FitsAt256,
        ),
        (
            "regex",
            Source::Regex(REGEX),
            Walk::Checked(REGEX_WALK, REGEX_END),
            Expect::FitsAt256,
        ),
        (
            "s: s s | a",
            Source::Lark("start: s\ns: s s | \"a\""),
            Walk::Longest(400),
            Expect::Either,
        ),
        (
            "long string",
            Source::Regex(r#""[^"]{0,9000}""#),
            Walk::NoQuote(600),
            Expect::Either,
        ),
        (
            "json schema",
            Source::Schema(SCHEMA),
            Walk::Longest(300),
            Expect::Either,
        ),
        (
            "counted repetition",
            Source::Regex("(ab|[a-c]{3}){100,3000}"),
            Walk::Longest(300),
            Expect::Limit,
        ),
        (
            "keyword rules",
            Source::Lark(&keywords),
            Walk::Longest(300),
            Expect::Limit,
        ),
        (
            "deep nesting",
            Source::Lark(&deep_lark(150)),
            Walk::Longest(300),
            Expect::Limit,
        ),
    ];
    for budget in BUDGETS {
        let limits = Limits {
            max_memory_bytes: budget,
            ..Limits::default()
        };
        for (name, src, walk, expect) in &cases {
            heap::reset_peak();
            stack::paint();
            let base = heap::live();
            let outcome = match walk {
                Walk::Checked(steps, end) => walk_checked(src, &vocab, &limits, steps, end),
                Walk::Longest(n) => walk_greedy(src, &vocab, &limits, *n, false),
                Walk::NoQuote(n) => walk_greedy(src, &vocab, &limits, *n, true),
            };
            let (peak, used, st) = (heap::peak() - base, heap::used_peak(), stack::high_water());
            let ended = match &outcome {
                Ok(End::Done(n)) => format!("done after {n} tokens"),
                Ok(End::Limit(k)) => format!("Limit({k:?})"),
                Err(e) => format!("error: {e}"),
            };
            println!(
                "budget {budget} {name}: {ended}; heap peak {peak} bytes (allocator {used}), bound {}, stack {st} bytes",
                budget + SLACK
            );
            max_over = max_over.max(peak as isize - budget as isize);
            max_stack = max_stack.max(st);
            if peak > budget + SLACK {
                fail(format!(
                    "budget {budget} {name}: heap peak {peak} > {budget} + {SLACK}"
                ));
            }
            match (outcome, expect) {
                (Err(e), _) => fail(format!("budget {budget} {name}: {e}")),
                (Ok(End::Done(_)), Expect::Limit) => {
                    fail(format!("budget {budget} {name}: fits, but should not"))
                }
                // As on the host, the JSON walk fits 256 KiB; at 64 KiB a typed limit is fine.
                (Ok(End::Limit(_)), Expect::FitsAt256) if budget >= 256 << 10 => {
                    fail(format!("budget {budget} {name}: should fit"))
                }
                _ => {}
            }
        }
    }

    if heap::failures() > 0 {
        fail(format!("{} allocation failures", heap::failures()));
    }
    println!(
        "most heap beyond the budget: {max_over} bytes (bound {SLACK}); most stack: {max_stack} bytes; heap now {} bytes",
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
    Schema(&'a str),
}

/// How a memory case walks its grammar.
enum Walk {
    /// The fixed tokens, each mask checked ([`walk_checked`]).
    Checked(&'static [(u32, &'static [u32])], &'static [u32]),
    /// Up to this many tokens, the longest allowed each time.
    Longest(usize),
    /// Up to this many tokens, the longest allowed without a `"` (stays in a string).
    NoQuote(usize),
}

/// What a memory case must end in (beyond its heap bound).
enum Expect {
    /// Done at 256 KiB; done or a typed limit at 64 KiB.
    FitsAt256,
    /// Done or a typed limit.
    Either,
    /// A typed limit at both budgets.
    Limit,
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

/// `start: e` with `e: "(" e ")" | "x"` nested `depth` times by hand (one rule per level):
/// many rules and a deep chart.
fn deep_lark(depth: usize) -> String {
    let mut s = String::from("start: e0\n");
    for i in 0..depth {
        s.push_str(&format!(
            "e{i}: \"[\" e{} \"]\" | \"{{\" e{} \"}}\" | \"a\"\n",
            i + 1,
            i + 1
        ));
    }
    s.push_str(&format!("e{depth}: \"b\"\n"));
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
        Source::Schema(s) => {
            Grammar::from_json_schema_str(s, &JsonOptions::default(), vocab, limits).map(|(g, _)| g)
        }
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
        if let Some(&(t, _)) = walk.get(step)
            && let Err(e) = m.consume_token(t)
        {
            return limit(e);
        }
    }
    Ok(End::Done(walk.len()))
}

/// Compiles `src`, then consumes the longest allowed token (not EOS; without a `"` if
/// `no_quote` and there is one) `steps` times.
fn walk_greedy(
    src: &Source,
    vocab: &Arc<Vocabulary>,
    limits: &Limits,
    steps: usize,
    no_quote: bool,
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
        let quoted = |t: u32| no_quote && vocab.trie_bytes(t).contains(&b'"');
        // Longest first, then unquoted first, then the lowest id.
        let Some(t) = allowed(&mask)
            .into_iter()
            .filter(|&t| t != EOS)
            .max_by_key(|&t| (!quoted(t), vocab.trie_bytes(t).len(), u32::MAX - t))
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
