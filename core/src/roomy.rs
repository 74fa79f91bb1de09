//! [`Roomy`]: a `Vec` whose clone keeps the original's capacity.
//!
//! A new matcher starts from a copy of the parser template its grammar holds (the roomiest
//! one a finished matcher handed back). A plain `Vec` clone has no spare room, so the copy's Earley
//! rows, byte stack and scratch buffers would regrow by doubling, allocating on the first
//! masks of every matcher. Buffers that grow per step are `Roomy` instead: the copy starts
//! with the room its predecessor needed. Capacity is what the memory budget charges
//! ([`crate::lexer::vec_bytes`]), so the room is paid for.

use alloc::vec::Vec;
use core::ops::{Deref, DerefMut};

/// A `Vec<T>` that clones with the same capacity (see the module documentation).
#[derive(Debug)]
pub(crate) struct Roomy<T>(pub(crate) Vec<T>);

impl<T: Clone> Clone for Roomy<T> {
    fn clone(&self) -> Self {
        let mut v = Vec::new();
        // Without the room the copy is still correct: it regrows when it needs to.
        let _ = v.try_reserve_exact(self.0.capacity());
        v.extend_from_slice(&self.0);
        Roomy(v)
    }
}

impl<T> Default for Roomy<T> {
    fn default() -> Self {
        Roomy(Vec::new())
    }
}

impl<T> Deref for Roomy<T> {
    type Target = Vec<T>;

    #[inline(always)]
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> DerefMut for Roomy<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<'a, T> IntoIterator for &'a Roomy<T> {
    type Item = &'a T;
    type IntoIter = core::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}
