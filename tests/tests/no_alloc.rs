//! Steady state allocates nothing per mask, on new text: one matcher walks a text (twice,
//! so lexer states and the masks remembered per lexer state are built), then is dropped,
//! handing its warm tables back to the grammar; a **fresh** matcher of the same grammar then
//! walks a **different** text of the same shape (the same lexemes in the same nesting, with
//! other keys, strings, numbers and token boundaries) and every one of its masks is computed
//! without a heap allocation. A counting global allocator checks it. (Replaying the same
//! sequence after `reset` would only prove that a cache hit does not allocate.) A lexeme in a
//! context the grammar has not seen yet is not steady state: its lexer state builds table
//! rows and slice checks once per grammar, which allocates (in an earlier version of this
//! test the new text had `false` right after `[` and `]}` mid-object, which the warm text
//! lacked).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sieve_core::Matcher;
use sieve_tests::{lark, synthetic_vocab};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: (1) every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; (2) the counters are atomics, safe to touch from any thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from `System` with `layout`; forwarded unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The counters are global: the tests of this file run one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

const JSON: &str = r#"
start: object
object: "{" [pair ("," pair)*] "}"
pair: STRING ":" value
?value: object | array | STRING | NUMBER | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
STRING: /"([^"\\\x00-\x1F]|\\["\\\/bfnrt])*"/
NUMBER: /-?(0|[1-9][0-9]*)(\.[0-9]+)?/
%ignore /[ \n]+/
"#;

/// Tokens of `text` in the synthetic vocabulary.
fn tokens(vocab: &sieve_core::Vocabulary, text: &[u8]) -> Vec<u32> {
    vocab
        .trie()
        .greedy_tokenize(text)
        .expect("the synthetic vocabulary covers ASCII")
}

/// Walks `tokens`: a mask before each (allocations counted when `count`), then the token.
/// Returns the allocations counted and the masks computed.
fn walk(m: &mut Matcher, tokens: &[u32], mask: &mut [u32], count: bool) -> usize {
    let mut allocs = 0;
    for &t in tokens {
        ALLOCS.store(0, Ordering::SeqCst);
        COUNTING.store(count, Ordering::SeqCst);
        let res = m.compute_mask(mask);
        COUNTING.store(false, Ordering::SeqCst);
        allocs += ALLOCS.load(Ordering::SeqCst);
        res.expect("mask");
        assert!(
            mask.get(t as usize / 32)
                .is_some_and(|w| w >> (t % 32) & 1 == 1),
            "token {t} not allowed"
        );
        m.consume_token(t).expect("token allowed");
    }
    allocs
}

/// Fixed in issue 15 (it failed with 19 allocations in 43 masks): a fresh matcher's copy of
/// the grammar's warm parser keeps the capacity of its Earley rows, byte stack and scratch
/// buffers (`sieve_core::roomy`), the matcher reserves its mask copy and the output room its
/// predecessor needed up front, and the trie walk reserves the vocabulary's longest token
/// instead of `TokTrie::MAX_TOKEN_LEN` (which grew the lent stack past what the budget had
/// reserved).
#[test]
fn fresh_matcher_on_new_text_does_not_allocate_per_mask() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let vocab = synthetic_vocab();
    let g = lark(JSON, &vocab);
    let warm_text =
        br#"{"name": 15, "x": {"tags": [false, "a b", 1.5]}, "ab": [null, -72], "c": "sieve"}"#;
    let new_text =
        br#"{"id": 907, "v": {"deep": [false, "q r s", 12.25]}, "k": [null, -3], "z": "t"}"#;
    assert_ne!(&warm_text[..], &new_text[..]);
    let (warm, new) = (tokens(&vocab, warm_text), tokens(&vocab, new_text));
    let mut mask = vec![0u32; vocab.mask_words()];
    {
        // Warm the grammar: one matcher over one text (twice: the first pass builds lexer
        // states and rows, the second the masks remembered per lexer state), then drop it.
        let mut m = Matcher::new(&g);
        for _ in 0..2 {
            walk(&mut m, &warm, &mut mask, false);
            m.reset();
        }
    }
    let mut fresh = Matcher::new(&g);
    let allocs = walk(&mut fresh, &new, &mut mask, true);
    assert!(fresh.is_accepting(), "the new text is a complete document");
    let stats = fresh.stats();
    assert_eq!(stats.masks, new.len() as u64);
    assert!(
        stats.cached < new.len() as u64,
        "the masks must walk the trie, not only copy the last mask"
    );
    assert_eq!(
        allocs,
        0,
        "{allocs} heap allocations in the {} masks of a fresh matcher over new text on a \
         warm grammar (see this file's header; report to the matcher's owner, do not weaken)",
        new.len()
    );
}

/// The weaker property the file tested before: the same matcher, `reset`, replaying the same
/// tokens (the mask cache is keyed by fresh row serials, so the trie is walked).
#[test]
fn same_matcher_replay_does_not_allocate() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let vocab = synthetic_vocab();
    let g = lark(JSON, &vocab);
    let text =
        br#"{"name": "sieve", "tags": ["a", "b c"], "n": -1.5, "ok": true, "x": {"y": null}}"#;
    let tokens = vocab
        .trie()
        .greedy_tokenize(text)
        .expect("the synthetic vocabulary covers ASCII");
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; vocab.mask_words()];
    let mut pass = |m: &mut Matcher, count: bool| {
        let mut allocs = 0;
        for &t in &tokens {
            ALLOCS.store(0, Ordering::SeqCst);
            COUNTING.store(count, Ordering::SeqCst);
            m.compute_mask(&mut mask).expect("mask");
            COUNTING.store(false, Ordering::SeqCst);
            allocs += ALLOCS.load(Ordering::SeqCst);
            m.consume_token(t).expect("token allowed");
        }
        allocs
    };
    // Warm-up: the first pass builds lexer states and rows, the second the masks remembered
    // per lexer state (built on a state's second visit).
    for _ in 0..2 {
        pass(&mut m, false);
        m.reset();
    }
    let before = m.stats();
    let allocs = pass(&mut m, true);
    let after = m.stats();
    assert!(after.masks - before.masks == tokens.len() as u64);
    assert!(
        after.cached - before.cached < tokens.len() as u64,
        "the second pass must walk the trie, not only copy cached masks"
    );
    assert!(
        after.state_masks > before.state_masks,
        "the counted pass must use the masks remembered per lexer state"
    );
    assert_eq!(
        allocs,
        0,
        "allocations during {} steady-state masks",
        tokens.len()
    );
}
