use sieve_core::{Grammar, Limits, Matcher, Vocabulary};
use std::sync::Arc;

#[test]
fn smoke() {
    let vocab = Arc::new(Vocabulary::synthetic(100, 1));
    let g =
        Grammar::from_lark("start: \"a\" B\nB: /[0-9]+/\n", &vocab, &Limits::default()).unwrap();
    let mut m = Matcher::new(&g);
    let mut mask = vec![0u32; vocab.mask_words()];
    m.compute_mask(&mut mask).unwrap();
    let n: u32 = mask.iter().map(|w| w.count_ones()).sum();
    println!("allowed at start: {n}");
    assert!(m.try_consume_bytes(b"a12"));
    assert!(m.is_accepting());
    assert!(!m.try_consume_bytes(b"x"));
}
