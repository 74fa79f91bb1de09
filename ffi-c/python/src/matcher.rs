//! `sieve.Matcher`: one sequence's position in a grammar.
//!
//! Method names follow LLGuidance's `LLMatcher` and XGrammar's `GrammarMatcher` where they
//! agree. A rejected token returns `False` and leaves the matcher in an error state
//! (`is_error()`, `get_error()`), as in LLGuidance; a token id out of range, a negative or
//! too long rollback and a wrong bitmask raise (`ValueError`, `sieve.MatcherError`).

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use sieve_core::error::MatcherError as CoreMatcherError;

use crate::buffers;
use crate::errors::matcher_error;
use crate::gate::Gate;
use crate::grammar::Grammar;
use sieve_core::GatePhase;

/// A matcher: create one per request from a compiled `Grammar` (cheap); thread-safe (each
/// call locks it), so one matcher may be handed between threads.
#[pyclass(module = "sieve", frozen)]
pub struct Matcher {
    inner: Mutex<sieve_core::Matcher>,
}

/// Writes the mask of `m` into `row`; a matcher in an error state (a budget was exceeded, a
/// token was rejected) gets a row that allows only EOS, so that generation ends, and
/// `false`.
pub(crate) fn fill_row(m: &mut sieve_core::Matcher, row: &mut [u32]) -> bool {
    match m.compute_mask(row) {
        Ok(()) => true,
        Err(_) => {
            sieve_kernels::fill(row, 0);
            let vocab = m.grammar().vocab().clone();
            sieve_kernels::set_bits(row, vocab.eos_tokens());
            false
        }
    }
}

impl Matcher {
    pub(crate) fn lock(&self) -> MutexGuard<'_, sieve_core::Matcher> {
        // A panic cannot leave a core matcher half-updated in a way that matters for memory
        // safety; keep serving it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_token(m: &sieve_core::Matcher, token: u32) -> PyResult<()> {
        let n = m.grammar().vocab().vocab_size();
        if token as usize >= n {
            return Err(PyValueError::new_err(format!(
                "token {token} is out of range (vocab_size {n})"
            )));
        }
        Ok(())
    }

    fn check_tokens(m: &sieve_core::Matcher, tokens: &[u32]) -> PyResult<()> {
        tokens.iter().try_for_each(|&t| Matcher::check_token(m, t))
    }
}

#[pymethods]
impl Matcher {
    /// A matcher at the start of `grammar`; with `gate` (a `sieve.Gate` built for the same
    /// tokenizer) the grammar waits behind its reasoning phase and triggers.
    #[new]
    #[pyo3(signature = (grammar, gate=None))]
    fn new(grammar: &Grammar, gate: Option<&Gate>) -> PyResult<Matcher> {
        let m = match gate {
            None => sieve_core::Matcher::new(&grammar.grammar),
            Some(g) => {
                if !std::sync::Arc::ptr_eq(g.gate.vocab(), grammar.grammar.vocab()) {
                    return Err(PyValueError::new_err(
                        "the gate and the grammar were built for different sieve.Tokenizer objects",
                    ));
                }
                sieve_core::Matcher::with_gate(&grammar.grammar, &g.gate)
            }
        };
        Ok(Matcher {
            inner: Mutex::new(m),
        })
    }

    /// The gate's phase: `"reasoning"`, `"waiting"` (for a trigger) or `"active"`; None for
    /// a matcher without a gate.
    fn gate_phase(&self) -> Option<&'static str> {
        self.lock().gate_phase().map(|p| match p {
            GatePhase::Reasoning => "reasoning",
            GatePhase::Waiting => "waiting",
            GatePhase::Active => "active",
        })
    }

    /// True when the next mask allows every token (reasoning within its budget, or waiting
    /// where no token completes a rejected trigger): the host may skip the mask. O(1), exact.
    fn is_unconstrained(&self) -> bool {
        self.lock().is_unconstrained()
    }

    /// Writes the next-token mask into row `index` of `bitmask` (an int32 numpy array or CPU
    /// torch tensor, `(batch, words)` or `(words,)`, at least `ceil(vocab_size / 32)` words a
    /// row; words past the vocabulary are zeroed). Releases the GIL. Returns `True`, or
    /// `False` when the matcher is in an error state (the row then allows only EOS).
    #[pyo3(signature = (bitmask, index=0))]
    fn fill_next_token_bitmask(
        &self,
        py: Python<'_>,
        bitmask: &Bound<'_, PyAny>,
        index: usize,
    ) -> PyResult<bool> {
        let mut m = self.lock();
        let view = buffers::bitmask(bitmask, m.mask_words())?;
        if index >= view.rows {
            return Err(PyIndexError::new_err(format!(
                "index {index} is out of range for a bitmask of {} rows",
                view.rows
            )));
        }
        // SAFETY: 1. the view is int32 and `index < rows` (checked); 2. `bitmask` is borrowed
        // for this call, so its buffer lives; 3. this call is the only user of the row.
        let row = unsafe { view.row_u32(index) };
        let m = &mut *m;
        Ok(py.detach(move || fill_row(m, row)))
    }

    /// `fill_next_token_bitmask` that returns the nanoseconds the Rust matcher spent
    /// computing the mask, timed in Rust around the call (no Python in it): the baseline
    /// of `bench/scripts/python-batch.py`.
    #[pyo3(signature = (bitmask, index=0))]
    fn _fill_timed(&self, bitmask: &Bound<'_, PyAny>, index: usize) -> PyResult<u64> {
        let mut m = self.lock();
        let view = buffers::bitmask(bitmask, m.mask_words())?;
        if index >= view.rows {
            return Err(PyIndexError::new_err("index out of range"));
        }
        // SAFETY: as in `fill_next_token_bitmask`.
        let row = unsafe { view.row_u32(index) };
        let start = std::time::Instant::now();
        fill_row(&mut m, row);
        Ok(start.elapsed().as_nanos() as u64)
    }

    /// The mask as bytes (little-endian int32 words, `4 * ceil(vocab_size / 32)` bytes).
    fn compute_bitmask<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let mut m = self.lock();
        let mut row = vec![0u32; m.mask_words()];
        fill_row(&mut m, &mut row);
        let bytes: Vec<u8> = row.iter().flat_map(|w| w.to_le_bytes()).collect();
        PyBytes::new(py, &bytes)
    }

    /// The allowed token ids, ascending.
    fn allowed_tokens(&self) -> Vec<u32> {
        let mut m = self.lock();
        let mut row = vec![0u32; m.mask_words()];
        fill_row(&mut m, &mut row);
        (0..m.grammar().vocab().vocab_size() as u32)
            .filter(|&t| sieve_kernels::test_bit(&row, t))
            .collect()
    }

    /// Would `token` be allowed next?
    fn is_allowed(&self, token: u32) -> PyResult<bool> {
        let mut m = self.lock();
        Matcher::check_token(&m, token)?;
        Ok(m.is_allowed(token).unwrap_or(false))
    }

    /// Consumes a sampled token. `False` if the grammar rejects it (the matcher is then in
    /// an error state); `ValueError` if it is out of range.
    fn consume_token(&self, token: u32) -> PyResult<bool> {
        let mut m = self.lock();
        Matcher::check_token(&m, token)?;
        Ok(m.consume_token(token).is_ok())
    }

    /// Consumes several tokens; `False` at the first rejected one (those before it stay
    /// consumed and the matcher is in an error state).
    fn consume_tokens(&self, tokens: Vec<u32>) -> PyResult<bool> {
        let mut m = self.lock();
        Matcher::check_tokens(&m, &tokens)?;
        Ok(m.consume_tokens(&tokens).is_ok())
    }

    /// Consumes the longest accepted prefix of `tokens` and returns its length (no error
    /// state for the rest).
    fn try_consume_tokens(&self, tokens: Vec<u32>) -> PyResult<usize> {
        let mut m = self.lock();
        Matcher::check_tokens(&m, &tokens)?;
        let n = m.validate_tokens(&tokens).map_err(|e| matcher_error(&e))?;
        m.consume_tokens(&tokens[..n])
            .map_err(|e| matcher_error(&e))?;
        Ok(n)
    }

    /// How many leading tokens of `tokens` would be accepted one after the other; the
    /// matcher does not move.
    fn validate_tokens(&self, tokens: Vec<u32>) -> PyResult<usize> {
        let mut m = self.lock();
        Matcher::check_tokens(&m, &tokens)?;
        m.validate_tokens(&tokens).map_err(|e| matcher_error(&e))
    }

    /// Undoes the last `n` consumed tokens (an EOS included).
    fn rollback(&self, n: usize) -> PyResult<()> {
        let mut m = self.lock();
        match m.rollback(n) {
            Ok(()) => Ok(()),
            Err(e @ CoreMatcherError::RollbackTooFar { .. }) => {
                Err(PyValueError::new_err(e.to_string()))
            }
            Err(e) => Err(matcher_error(&e)),
        }
    }

    /// The tokens the grammar forces next (greedy tokenization of the forced text); nothing
    /// is consumed.
    fn compute_ff_tokens(&self) -> PyResult<Vec<u32>> {
        self.lock()
            .compute_ff_tokens()
            .map_err(|e| matcher_error(&e))
    }

    /// The bytes every continuation starts with.
    fn compute_ff_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let b = self.lock().forced_bytes().map_err(|e| matcher_error(&e))?;
        Ok(PyBytes::new(py, &b))
    }

    /// Is the output so far a complete sentence (EOS allowed, or consumed)?
    fn is_accepting(&self) -> bool {
        self.lock().is_accepting()
    }

    /// Has an EOS token been consumed?
    fn is_stopped(&self) -> bool {
        self.lock().is_stopped()
    }

    /// XGrammar's name for `is_stopped`.
    fn is_terminated(&self) -> bool {
        self.lock().is_stopped()
    }

    /// Is the matcher in an error state (a rejected token, an exceeded budget)?
    fn is_error(&self) -> bool {
        self.lock().error().is_some()
    }

    /// The error, or None.
    fn get_error(&self) -> Option<String> {
        self.lock().error().map(|e| e.to_string())
    }

    /// Tokens consumed so far (EOS included).
    #[getter]
    fn num_tokens(&self) -> usize {
        self.lock().num_tokens()
    }

    /// Back to the start, error cleared.
    fn reset(&self) {
        self.lock().reset();
    }

    /// An independent copy at the same position (for beams, n > 1, draft trees).
    fn fork(&self) -> Matcher {
        Matcher {
            inner: Mutex::new(self.lock().clone()),
        }
    }

    /// LLGuidance's name for `fork`.
    fn deep_copy(&self) -> Matcher {
        self.fork()
    }

    fn __copy__(&self) -> Matcher {
        self.fork()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> Matcher {
        self.fork()
    }

    fn __repr__(&self) -> String {
        let m = self.lock();
        let error = m
            .error()
            .map_or_else(|| "None".to_owned(), |e| format!("{:?}", e.to_string()));
        let stopped = if m.is_stopped() { "True" } else { "False" };
        format!(
            "sieve.Matcher(tokens={}, stopped={stopped}, error={error})",
            m.num_tokens()
        )
    }
}
