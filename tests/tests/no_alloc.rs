//! Steady state allocates nothing per mask: after one pass over a token sequence (which
//! builds lexer states and grows buffers), `reset` and a second pass over the same sequence
//! compute every mask again (the mask cache is keyed by fresh row serials, so the trie is
//! walked) without a single heap allocation. A counting global allocator checks it.

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

#[test]
fn masks_do_not_allocate_in_the_steady_state() {
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
