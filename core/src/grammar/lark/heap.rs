//! Charging the front end's growing buffers to the [`CompileBudget`] before they grow.
//!
//! A buffer that is full grows to twice its capacity (at least [`MIN_CAPACITY`] elements);
//! the new capacity is charged in full first (the old buffer was charged when it was made,
//! and nothing is refunded), so what the Lark front end holds at any time is within what it
//! has charged.

use alloc::string::String;
use alloc::vec::Vec;

use crate::CompileBudget;
use crate::error::LimitKind;

/// Smallest capacity a charged buffer grows to.
const MIN_CAPACITY: usize = 4;

/// The capacity a full buffer of `cap` elements grows to for `additional` more beyond `len`.
fn grown(len: usize, cap: usize, additional: usize) -> usize {
    let need = len.saturating_add(additional);
    cap.saturating_mul(2).max(need).max(MIN_CAPACITY)
}

/// Make room in `v` for `additional` more elements, charging a new buffer's bytes first.
pub(super) fn reserve<T>(
    v: &mut Vec<T>,
    additional: usize,
    budget: &mut CompileBudget,
) -> Result<(), LimitKind> {
    if v.capacity() - v.len() >= additional {
        return Ok(());
    }
    let cap = grown(v.len(), v.capacity(), additional);
    budget.charge_for::<T>(cap)?;
    v.reserve_exact(cap - v.len());
    Ok(())
}

/// Push `x` onto `v`, charging its growth first.
pub(super) fn push<T>(v: &mut Vec<T>, x: T, budget: &mut CompileBudget) -> Result<(), LimitKind> {
    reserve(v, 1, budget)?;
    v.push(x);
    Ok(())
}

/// Make room in `s` for `additional` more bytes, charging a new buffer's bytes first.
pub(super) fn reserve_str(
    s: &mut String,
    additional: usize,
    budget: &mut CompileBudget,
) -> Result<(), LimitKind> {
    if s.capacity() - s.len() >= additional {
        return Ok(());
    }
    let cap = grown(s.len(), s.capacity(), additional);
    budget.charge(cap)?;
    s.reserve_exact(cap - s.len());
    Ok(())
}

/// A copy of `s`, charged first.
pub(super) fn copy_str(s: &str, budget: &mut CompileBudget) -> Result<String, LimitKind> {
    budget.charge(s.len())?;
    Ok(String::from(s))
}
