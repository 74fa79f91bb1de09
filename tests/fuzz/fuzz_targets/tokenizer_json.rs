//! Fuzz target `tokenizer_json`: see the property in `sieve_fuzz` (tests/src/fuzzprops.rs,
//! tests/fuzz/props_c.rs).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = sieve_fuzz::fuzzprops::check_tokenizer_json(data)
        .and_then(|core| sieve_fuzz::props_c::check_tokenizer_json_c(data, core))
    {
        panic!("property failed: {e}");
    }
});
