//! Alphabet compression: a partition of the 256 byte values into classes.
//!
//! [`ExprSet::byte_classes`] refines the trivial partition by every byte set in the roots'
//! sub-DAGs. Derivatives only build unions and intersections of those sets, so two bytes in
//! one class have the same derivative for every expression reachable from the roots. Class
//! ids are numbered by their smallest byte, which is the class's representative.
//!
//! Cost: `class_of` is one table load; building is O(256 · distinct sets + DAG size).

use alloc::vec::Vec;

use hashbrown::HashSet;

use super::exprset::{ExprId, ExprSet, Node, set_contains};

/// Split the classes `0..n` into blocks, written to `blocks`: start from one block of all
/// of them and split every block by each class set of `sets` in turn (the classes inside
/// the set and those outside). Stops early once every class is a block of its own, without
/// reading the remaining sets. The lexer and the slicer's prefix search use it with the
/// class sets of the leaves a derivative tests ([`ExprSet::first_leaves`]).
pub(crate) fn refine_blocks(
    n: usize,
    sets: impl IntoIterator<Item = [u64; 4]>,
    blocks: &mut Vec<[u64; 4]>,
) {
    blocks.clear();
    let mut all = [0u64; 4];
    for c in 0..n.min(256) {
        all[c >> 6] |= 1 << (c & 63);
    }
    blocks.push(all);
    for set in sets {
        if blocks.len() >= n {
            break;
        }
        split_blocks(blocks, &set);
    }
}

/// Split every block of `blocks` by membership in `set` (the part inside is pushed).
fn split_blocks(blocks: &mut Vec<[u64; 4]>, set: &[u64; 4]) {
    for i in 0..blocks.len() {
        let b = blocks[i];
        let inside = [b[0] & set[0], b[1] & set[1], b[2] & set[2], b[3] & set[3]];
        if inside != [0; 4] && inside != b {
            blocks[i] = [
                b[0] & !set[0],
                b[1] & !set[1],
                b[2] & !set[2],
                b[3] & !set[3],
            ];
            blocks.push(inside);
        }
    }
}

/// A partition of the 256 byte values into classes that no expression of interest
/// distinguishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ByteClasses {
    map: [u8; 256],
    reps: [u8; 256],
    num_classes: usize,
}

impl ByteClasses {
    /// Every byte in one class.
    pub fn single() -> ByteClasses {
        ByteClasses {
            map: [0; 256],
            reps: [0; 256],
            num_classes: 1,
        }
    }

    /// Every byte in its own class.
    pub fn identity() -> ByteClasses {
        let mut map = [0u8; 256];
        for (i, m) in map.iter_mut().enumerate() {
            *m = i as u8;
        }
        ByteClasses {
            map,
            reps: map,
            num_classes: 256,
        }
    }

    /// The class of `byte`.
    #[inline(always)]
    pub fn class_of(&self, byte: u8) -> u8 {
        self.map[byte as usize]
    }

    /// How many classes (1..=256).
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }

    /// The smallest byte of `class` (0 for a class id out of range).
    #[inline(always)]
    pub fn representative(&self, class: u8) -> u8 {
        self.reps[class as usize]
    }

    /// Split every class by membership in `set`.
    pub fn refine(&mut self, set: &[u32; 8]) {
        // new id for (old class, in set), assigned in byte order so ids follow smallest bytes.
        let mut remap = [[u16::MAX; 2]; 256];
        let mut next = 0u16;
        let mut map = [0u8; 256];
        let mut reps = [0u8; 256];
        for b in 0..=255u8 {
            let inside = set_contains(set, b) as usize;
            let slot = &mut remap[self.map[b as usize] as usize][inside];
            if *slot == u16::MAX {
                *slot = next;
                reps[next as usize & 0xff] = b;
                next += 1;
            }
            map[b as usize] = *slot as u8;
        }
        self.map = map;
        self.reps = reps;
        self.num_classes = next as usize;
    }
}

impl ExprSet {
    /// A partition of `0..=255` such that bytes in one class have identical derivatives for
    /// every expression reachable by derivatives from `roots`.
    pub fn byte_classes(&self, roots: &[ExprId]) -> ByteClasses {
        let mut seen: HashSet<ExprId> = HashSet::new();
        let mut sets: HashSet<[u32; 8]> = HashSet::new();
        let mut stack: Vec<ExprId> = roots.to_vec();
        // Blocks of bytes (bit sets), split by each distinct set: four words a block, where
        // `refine` would rewrite a 256-entry map.
        let mut blocks: Vec<[u64; 4]> = alloc::vec![[u64::MAX; 4]];
        while let Some(e) = stack.pop() {
            if !seen.insert(e) {
                continue;
            }
            match self.node(e) {
                Node::Nothing | Node::Epsilon => {}
                Node::Byte(_) | Node::ByteSet(_) => {
                    if let Some(s) = self.as_byte_set(e)
                        && sets.insert(s)
                    {
                        split_blocks(&mut blocks, &wide(&s));
                    }
                }
                Node::Concat(a, b) => {
                    stack.push(a);
                    stack.push(b);
                }
                Node::Or(xs) | Node::And(xs) => stack.extend(xs.iter().map(|&x| ExprId(x))),
                Node::Not(x) | Node::Repeat(x, _, _) => stack.push(x),
            }
            if blocks.len() == 256 {
                break;
            }
        }
        ByteClasses::from_blocks(&blocks)
    }
}

/// A byte set of eight 32-bit words as four 64-bit words.
fn wide(s: &[u32; 8]) -> [u64; 4] {
    core::array::from_fn(|i| u64::from(s[2 * i]) | (u64::from(s[2 * i + 1]) << 32))
}

impl ByteClasses {
    /// The partition whose classes are `blocks` (disjoint, non-empty, covering every byte),
    /// numbered by smallest byte.
    fn from_blocks(blocks: &[[u64; 4]]) -> ByteClasses {
        let mut firsts: Vec<(u8, usize)> = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| {
                let w = b.iter().position(|&w| w != 0)?;
                Some(((w * 64 + b[w].trailing_zeros() as usize) as u8, i))
            })
            .collect();
        firsts.sort_unstable();
        let mut out = ByteClasses::single();
        for (id, &(first, i)) in firsts.iter().enumerate() {
            out.reps[id] = first;
            for (w, &word) in blocks[i].iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let b = w * 64 + bits.trailing_zeros() as usize;
                    out.map[b] = id as u8;
                    bits &= bits - 1;
                }
            }
        }
        out.num_classes = firsts.len().max(1);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;

    #[test]
    fn refine_and_reps() {
        let mut s = ExprSet::new(&Limits::default());
        let ab = s.mk_literal(b"ab").unwrap();
        let mut set = [0u32; 8];
        for b in b'0'..=b'9' {
            set[(b >> 5) as usize] |= 1 << (b & 31);
        }
        let digits = s.mk_byte_set(&set).unwrap();
        let d = s.mk_repeat(digits, 1, None).unwrap();
        let e = s.mk_or(&[ab, d]).unwrap();
        let c = s.byte_classes(&[e]);
        // {a}, {b}, digits, the rest.
        assert_eq!(c.num_classes(), 4);
        assert_eq!(c.class_of(b'0'), c.class_of(b'7'));
        assert_ne!(c.class_of(b'a'), c.class_of(b'b'));
        assert_eq!(c.class_of(b'x'), c.class_of(0xff));
        assert_eq!(c.representative(c.class_of(b'5')), b'0');
        assert_eq!(c.representative(c.class_of(b'x')), 0);
        for cl in 0..c.num_classes() {
            let r = c.representative(cl as u8);
            assert_eq!(c.class_of(r) as usize, cl);
        }
        let single = ByteClasses::single();
        assert_eq!(single.num_classes(), 1);
        assert_eq!(single.class_of(200), 0);
        assert_eq!(s.byte_classes(&[]).num_classes(), 1);
        assert_eq!(ByteClasses::identity().num_classes(), 256);
    }
}
