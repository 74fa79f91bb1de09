//! `sieve._sieve`, the extension module of the `sieve` Python package (`python/sieve/`).
//!
//! A shell: it maps Python objects onto `sieve-core` (tokenizers, grammars, matchers) and
//! `sieve-kernels` (applying masks), and runs batches on `sieve-runner`'s thread pool (shared
//! with the C and C++ bindings' batch calls) with the GIL released. Masks are written straight into the caller's int32 arrays (numpy, torch or
//! anything with `__array_interface__`); see `buffers.rs`.

use pyo3::prelude::*;

mod batch;
mod buffers;
mod errors;
mod executor;
mod gate;
mod grammar;
mod matcher;
mod presets;
mod tokenizer;

/// The module's contents; the Python package re-exports them with adapters around them.
#[pymodule]
fn _sieve(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<tokenizer::Tokenizer>()?;
    m.add_class::<grammar::Grammar>()?;
    m.add_class::<grammar::JsonOptions>()?;
    m.add_class::<matcher::Matcher>()?;
    m.add_class::<gate::Gate>()?;
    m.add("SieveError", py.get_type::<errors::SieveError>())?;
    m.add("GrammarError", py.get_type::<errors::GrammarError>())?;
    m.add("MatcherError", py.get_type::<errors::MatcherError>())?;
    m.add_function(wrap_pyfunction!(batch::fill_next_token_bitmask_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch::fill_next_token_bitmask_draft, m)?)?;
    m.add_function(wrap_pyfunction!(
        batch::fill_next_token_bitmask_draft_tree,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(batch::consume_token_batch, m)?)?;
    m.add_function(wrap_pyfunction!(batch::apply_token_bitmask_inplace, m)?)?;
    m.add_function(wrap_pyfunction!(presets::preset_families, m)?)?;
    m.add_function(wrap_pyfunction!(presets::structural_tag_preset, m)?)?;
    m.add_function(wrap_pyfunction!(executor::set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(executor::get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(executor::shutdown_threads, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
