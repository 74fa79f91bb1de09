//! Small helpers shared by the CLI commands: reading mask bits and showing token text.

/// Ids whose bit is set in `mask` (bit `t % 32` of word `t / 32`), below `vocab_size`.
pub fn allowed_tokens(mask: &[u32], vocab_size: usize) -> Vec<u32> {
    let mut out = Vec::new();
    for (w, &word) in mask.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let id = w * 32 + bits.trailing_zeros() as usize;
            if id >= vocab_size {
                return out;
            }
            out.push(id as u32);
            bits &= bits - 1;
        }
    }
    out
}

/// Token text for humans: a quoted, escaped string if it is UTF-8, else `b"..."` with `\xNN`
/// escapes.
pub fn escape_bytes(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => format!("{s:?}"),
        Err(_) => format!("b\"{}\"", bytes.escape_ascii()),
    }
}

/// `n` ids spread evenly over `ids` (all of them when there are at most `n`).
pub fn spread_sample(ids: &[u32], n: usize) -> Vec<u32> {
    if ids.len() <= n {
        return ids.to_vec();
    }
    (0..n).map(|i| ids[i * ids.len() / n]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_bits() {
        let mask = [0b101u32, 1 << 31, u32::MAX];
        assert_eq!(allowed_tokens(&mask, 66), [0, 2, 63, 64, 65]);
        assert_eq!(allowed_tokens(&[0, 0], 64), Vec::<u32>::new());
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_bytes(b"a\"b\n"), r#""a\"b\n""#);
        assert_eq!(escape_bytes("ü".as_bytes()), "\"ü\"");
        assert_eq!(escape_bytes(b"\xc3"), r#"b"\xc3""#);
    }

    #[test]
    fn sampling() {
        let ids: Vec<u32> = (0..10).collect();
        assert_eq!(spread_sample(&ids, 20), ids);
        assert_eq!(spread_sample(&ids, 5), [0, 2, 4, 6, 8]);
        assert!(spread_sample(&ids, 0).is_empty());
    }
}
