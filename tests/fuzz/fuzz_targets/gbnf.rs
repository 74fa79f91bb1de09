//! Fuzz target `gbnf`: byte 0 bit 0 = `allow_left_recursion`, then GBNF text. Compiling
//! ends in `Ok` or a typed error (never a panic); on `Ok`, the 6-token walk of the `regex`
//! target (`check_walk` in tests/src/fuzzprops.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sieve_core::grammar::gbnf::GbnfOptions;
use sieve_core::{Grammar, Limits, Matcher};
use sieve_fuzz::fuzzprops::{Rng, check_walk, vocab};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let Ok(src) = std::str::from_utf8(text) else {
        return;
    };
    let opts = GbnfOptions {
        allow_left_recursion: flags & 1 == 1,
        ..GbnfOptions::default()
    };
    let Ok(g) = Grammar::from_gbnf(src, &opts, &vocab(), &Limits::default()) else {
        return;
    };
    let mut rng = Rng::from_input(data);
    if let Err(e) = check_walk(&mut Matcher::new(&g), &mut rng, 6) {
        panic!("property failed: {e}");
    }
});
