//! The property checks the fuzz targets run, compiled from the same files as
//! `tests/tests/fuzz_regressions.rs` so a saved input replays through identical code.

#[path = "../../src/fuzzprops.rs"]
pub mod fuzzprops;

#[path = "../props_c.rs"]
pub mod props_c;
