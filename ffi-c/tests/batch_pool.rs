//! `sieve_compute_masks` on the library's pool, from Rust through the C ABI (one test: the
//! pool is process-wide): the masks equal the one-by-one masks at every pool size, every
//! pool thread is parked again when a call returns, and `sieve_shutdown_threads` leaves no
//! pool thread (counted by the runner, and on Linux in `/proc/self/task`).

use std::ptr;

use sieve::batch::sieve_compute_masks;
use sieve::grammar::{sieve_grammar, sieve_grammar_free, sieve_grammar_new};
use sieve::matcher::{
    sieve_matcher, sieve_matcher_compute_mask, sieve_matcher_consume_token, sieve_matcher_free,
    sieve_matcher_new,
};
use sieve::status::sieve_status;
use sieve::threads::{sieve_num_threads, sieve_set_num_threads, sieve_shutdown_threads};
use sieve::tokenizer::{sieve_tokenizer, sieve_tokenizer_free, sieve_tokenizer_new};

/// Tokens "a".."z", "ab", "abc", then EOS.
fn tokenizer() -> *const sieve_tokenizer {
    let mut tokens: Vec<Vec<u8>> = (b'a'..=b'z').map(|c| vec![c]).collect();
    tokens.extend([b"ab".to_vec(), b"abc".to_vec(), b"<|end|>".to_vec()]);
    let bytes: Vec<u8> = tokens.concat();
    let lens: Vec<u32> = tokens.iter().map(|t| t.len() as u32).collect();
    let mut special = vec![0u8; tokens.len()];
    special[tokens.len() - 1] = 1;
    let eos = [tokens.len() as u32 - 1];
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

/// Matcher `i` after `i % 9` tokens of "abcabcabc...".
fn matchers(g: *const sieve_grammar, n: usize) -> Vec<*mut sieve_matcher> {
    (0..n)
        .map(|i| {
            let mut m = ptr::null_mut();
            assert_eq!(sieve_matcher_new(g, &mut m), sieve_status::Ok);
            for k in 0..i % 9 {
                assert_eq!(
                    sieve_matcher_consume_token(m, (k % 3) as u32),
                    sieve_status::Ok
                );
            }
            m
        })
        .collect()
}

/// The pool's threads the OS lists (Linux), polled for up to 2 s until it is `want` (the
/// kernel may list a joined thread a moment longer); `want` elsewhere.
fn settled_os_threads(want: usize) -> usize {
    let count = || -> Option<usize> {
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        Some(
            tasks
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.starts_with("sieve-"))
                .count(),
        )
    };
    for _ in 0..200 {
        match count() {
            None => return want,
            Some(n) if n == want => return n,
            Some(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    count().unwrap_or(want)
}

#[test]
fn batches_on_the_pool_then_shutdown() {
    let tok = tokenizer();
    let text = "start: WORD+ \"z\"\nWORD: /(abc|ab|a|b|c)/\n";
    let mut g = ptr::null();
    let status = sieve_grammar_new(
        tok,
        1, // Lark
        text.as_ptr(),
        text.len(),
        ptr::null(),
        &mut g,
        ptr::null_mut(),
    );
    assert_eq!(status, sieve_status::Ok);
    let n = 24;
    let words = 1;
    let mut want = vec![0u32; n * words];
    for (i, m) in matchers(g, n).into_iter().enumerate() {
        let row = &mut want[i * words..(i + 1) * words];
        assert_eq!(
            sieve_matcher_compute_mask(m, row.as_mut_ptr(), words),
            sieve_status::Ok
        );
        sieve_matcher_free(m);
    }
    assert_eq!(sieve_set_num_threads(0), sieve_status::InvalidArgument);
    for threads in [1, 2, 3, 8, 3] {
        assert_eq!(sieve_set_num_threads(threads), sieve_status::Ok);
        assert_eq!(sieve_num_threads(), threads);
        for _ in 0..5 {
            let ms = matchers(g, n);
            let mut masks = vec![0xABAB_ABABu32; n * words];
            let mut statuses = vec![u32::MAX; n];
            let status = sieve_compute_masks(
                ms.as_ptr(),
                n,
                masks.as_mut_ptr(),
                words,
                statuses.as_mut_ptr(),
            );
            assert_eq!(status, sieve_status::Ok);
            // The call returned: every pool thread has left it and is parked.
            let pool = sieve_runner::global();
            assert_eq!(pool.active_workers(), 0);
            assert_eq!(pool.workers(), threads - 1);
            assert_eq!(masks, want, "{threads} threads");
            assert!(statuses.iter().all(|&s| s == sieve_status::Ok as u32));
            ms.into_iter().for_each(|m| sieve_matcher_free(m));
        }
        assert_eq!(settled_os_threads(threads - 1), threads - 1);
    }
    assert_eq!(sieve_shutdown_threads(), sieve_status::Ok);
    assert_eq!(
        settled_os_threads(0),
        0,
        "no pool thread after the shutdown"
    );
    sieve_grammar_free(g);
    sieve_tokenizer_free(tok);
}
