//! Alphabet compression. (Interface; implementation by the regex helper.)

/// A partition of the 256 byte values into classes that no expression of interest
/// distinguishes.
#[derive(Debug, Clone)]
pub struct ByteClasses {
    map: [u8; 256],
    num_classes: usize,
}

impl ByteClasses {
    /// The class of `byte`.
    #[inline(always)]
    pub fn class_of(&self, byte: u8) -> u8 {
        self.map[byte as usize]
    }

    /// How many classes (1..=256).
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }
}
