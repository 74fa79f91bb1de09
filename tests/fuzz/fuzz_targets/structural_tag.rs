//! Fuzz target `structural_tag`: see the property in `sieve_fuzz` (tests/src/fuzzprops.rs,
//! tests/fuzz/props_c.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = sieve_fuzz::fuzzprops::check_structural_tag(data) {
        panic!("property failed: {e}");
    }
});
