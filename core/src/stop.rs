//! Stop sequences over a token stream: [`StopController`] decides, token by token, which
//! decoded text is safe to show and when the sequence must end (LLGuidance's
//! `LlgStopController` semantics; the C shell `llg_*_stop_controller` and the C++
//! `sieve::StopController` are thin wrappers around it).
//!
//! The sequence stops at a stop token, or when the decoded text ends with a match of the stop
//! regex; the matched text is never shown. The regex is a sieve grammar
//! ([`Grammar::from_regex`]) run by [`Matcher`]s over bytes: one *candidate* matcher per
//! position where a match may have started, advanced byte by byte and dropped when its bytes
//! stop being a prefix of a match. Text before the earliest live candidate is safe to show
//! (cut back to a UTF-8 character boundary); a candidate that accepts stops the sequence, and
//! since candidates are kept in order of start it is the longest match ending there.
//!
//! Special tokens are shown by name and a stop match cannot run across one; ids without text
//! are shown as `<[id]>`. Invalid UTF-8 is passed through (it counts as complete characters).
//!
//! Cost per byte: one byte push per live candidate (for literal stop strings at most their
//! length), plus one trial push to see whether a match can start there. Bounded: a candidate
//! is dropped after [`MAX_STOP_BYTES`] bytes, so longer matches are not detected and no more
//! than that many bytes (plus an incomplete UTF-8 character) are held back.

use crate::sync::Arc;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::error::StopError;
use crate::{Grammar, Limits, Matcher, Vocabulary};

/// The longest stop-regex match detected, in bytes (and the most text held back for it).
pub const MAX_STOP_BYTES: usize = 1024;

/// The stop regex's matchers.
#[derive(Debug, Clone)]
struct StopRegex {
    /// At the start of the regex: tried on each byte to see whether a match can start there.
    fresh: Matcher,
    /// `(absolute byte offset where the match started, matcher after the bytes since)`, in
    /// order of start.
    live: Vec<(usize, Matcher)>,
}

/// Per-sequence stop detection: stop tokens and a stop regex over the decoded text.
///
/// `Clone` gives an independent copy (held-back text, regex state, stop flag), for example
/// to branch a sequence.
///
/// ```
/// # use std::sync::Arc;
/// use sieve_core::{Limits, StopController, Vocabulary};
///
/// let tokens = vec![b"hello".to_vec(), b" E".to_vec(), b"ND".to_vec(), b"!".to_vec()];
/// let vocab = Arc::new(Vocabulary::new(tokens, &[], &[]).unwrap());
/// let mut stop = StopController::new(vocab, &[], Some("END"), &Limits::default()).unwrap();
/// assert_eq!(stop.commit_token(0), (&b"hello"[..], false));
/// assert_eq!(stop.commit_token(1), (&b" "[..], false)); // "E" may begin "END"
/// assert_eq!(stop.commit_token(2), (&b""[..], true)); // "END" is never shown
/// assert!(stop.is_stopped());
/// ```
#[derive(Debug, Clone)]
pub struct StopController {
    vocab: Arc<Vocabulary>,
    stop_tokens: Vec<u32>,
    regex: Option<StopRegex>,
    /// Bytes decoded but not shown yet; `pending[0]` is byte `base` of the stream.
    pending: Vec<u8>,
    base: usize,
    stopped: bool,
    /// The text the last commit returned.
    emitted: Vec<u8>,
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8 character
/// that more bytes could complete (invalid bytes count as complete).
fn complete_utf8_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(rest) = bytes.get(at..) {
        match core::str::from_utf8(rest) {
            Ok(_) => return bytes.len(),
            Err(e) => match e.error_len() {
                Some(bad) => at += e.valid_up_to() + bad,
                None => return at + e.valid_up_to(),
            },
        }
    }
    bytes.len()
}

impl StopController {
    /// A controller over `vocab` stopping when one of `stop_tokens` is committed or when the
    /// text ends with a match of the regex `stop_regex` (`None`: no regex), compiled within
    /// `limits`.
    ///
    /// # Errors
    /// [`StopError::TokenOutOfRange`] for a stop token not below the vocabulary size,
    /// [`StopError::Regex`] when the regex does not compile (syntax, unsupported feature or a
    /// budget of `limits`), [`StopError::EmptyMatch`] when it matches the empty string (it
    /// would stop before any text; `""` is such a regex).
    pub fn new(
        vocab: Arc<Vocabulary>,
        stop_tokens: &[u32],
        stop_regex: Option<&str>,
        limits: &Limits,
    ) -> Result<StopController, StopError> {
        if let Some(&token) = stop_tokens
            .iter()
            .find(|&&t| t as usize >= vocab.vocab_size())
        {
            return Err(StopError::TokenOutOfRange {
                token,
                vocab_size: vocab.vocab_size(),
            });
        }
        let regex = match stop_regex {
            None => None,
            Some(pattern) => {
                let grammar =
                    Grammar::from_regex(pattern, &vocab, limits).map_err(StopError::Regex)?;
                let mut fresh = Matcher::new(&grammar);
                if fresh.is_accepting() {
                    return Err(StopError::EmptyMatch {
                        pattern: String::from(pattern),
                    });
                }
                Some(StopRegex {
                    fresh,
                    live: Vec::new(),
                })
            }
        };
        Ok(StopController {
            vocab,
            stop_tokens: stop_tokens.to_vec(),
            regex,
            pending: Vec::new(),
            base: 0,
            stopped: false,
            emitted: Vec::new(),
        })
    }

    /// [`StopController::new`] with literal stop strings too: the sequence also stops when
    /// the text ends with one of `stop_strings`. The strings are escaped and joined with the
    /// regex into one alternation, so one set of candidates serves them all (same semantics:
    /// the longest match ending first wins, the matched text is never shown).
    ///
    /// # Errors
    /// As [`StopController::new`]; [`StopError::EmptyMatch`] for an empty string,
    /// [`StopError::InvalidString`] for a string that is not UTF-8.
    pub fn with_strings(
        vocab: Arc<Vocabulary>,
        stop_tokens: &[u32],
        stop_strings: &[&[u8]],
        stop_regex: Option<&str>,
        limits: &Limits,
    ) -> Result<StopController, StopError> {
        let mut alts: Vec<String> = Vec::with_capacity(stop_strings.len() + 1);
        for (index, s) in stop_strings.iter().enumerate() {
            let text = core::str::from_utf8(s).map_err(|_| StopError::InvalidString { index })?;
            if text.is_empty() {
                return Err(StopError::EmptyMatch {
                    pattern: String::new(),
                });
            }
            alts.push(format!("(?:{})", regex_syntax::escape(text)));
        }
        if let Some(rx) = stop_regex {
            alts.push(format!("(?:{rx})"));
        }
        if alts.is_empty() {
            return StopController::new(vocab, stop_tokens, None, limits);
        }
        if stop_strings.is_empty() {
            return StopController::new(vocab, stop_tokens, stop_regex, limits);
        }
        StopController::new(vocab, stop_tokens, Some(&alts.join("|")), limits)
    }

    /// Whether the sequence has stopped (a stop token or a stop-regex match was committed).
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// The vocabulary the token ids refer to.
    pub fn vocab(&self) -> &Arc<Vocabulary> {
        &self.vocab
    }

    /// Commits `token`. Returns the bytes now safe to show (possibly empty; held-back text
    /// comes out with a later commit) and whether the sequence has stopped. A stop token
    /// releases everything held back; a stop-regex match is withheld, along with the rest of
    /// the token it ends in. After a stop, every commit returns `(&[], true)`.
    ///
    /// Any id is accepted: ids without text (unused, or not below the vocabulary size) are
    /// shown as `<[id]>`, like special tokens a stop match cannot run across them.
    pub fn commit_token(&mut self, token: u32) -> (&[u8], bool) {
        self.emitted.clear();
        self.commit(token);
        (&self.emitted, self.stopped)
    }

    /// Moves the first `n` pending bytes to `emitted`.
    fn release(&mut self, n: usize) {
        let n = n.min(self.pending.len());
        self.base += n;
        self.emitted.extend(self.pending.drain(..n));
    }

    /// [`StopController::commit_token`] writing into `self.emitted`.
    fn commit(&mut self, token: u32) {
        if self.stopped {
            return;
        }
        if self.stop_tokens.contains(&token) {
            // The held-back text was not a stop match after all.
            self.stopped = true;
            self.release(self.pending.len());
            return;
        }
        let vocab = Arc::clone(&self.vocab);
        let text = if token as usize >= vocab.vocab_size() {
            None
        } else {
            Some(vocab.token_text(token)).filter(|t| !t.is_empty())
        };
        let plain = text.filter(|_| !vocab.is_special(token));
        let Some(bytes) = plain else {
            // A special token (its name) or an id without text (`<[id]>`): shown as is; a stop
            // match cannot run across it.
            if let Some(rx) = &mut self.regex {
                rx.live.clear();
            }
            self.release(self.pending.len());
            let before = self.emitted.len();
            match text {
                Some(name) => self.emitted.extend_from_slice(name),
                None => self
                    .emitted
                    .extend_from_slice(format!("<[{token}]>").as_bytes()),
            }
            self.base += self.emitted.len() - before;
            return;
        };
        let Some(rx) = &mut self.regex else {
            self.pending.extend_from_slice(bytes);
            let n = complete_utf8_len(&self.pending);
            self.release(n);
            return;
        };
        for &b in bytes {
            let pos = self.base + self.pending.len();
            self.pending.push(b);
            rx.live.retain_mut(|(start, m)| {
                pos + 1 - *start <= MAX_STOP_BYTES && m.try_consume_bytes(&[b])
            });
            if rx.fresh.try_consume_bytes(&[b]) {
                rx.live.push((pos, rx.fresh.clone()));
                // Back to the start: the trial push is undone (it cannot fail).
                let _ = rx.fresh.rollback(1);
            }
            let hit = rx
                .live
                .iter_mut()
                .find_map(|(start, m)| m.is_accepting().then_some(*start));
            if let Some(start) = hit {
                // Candidates are in order of start, so this is the longest match ending here.
                rx.live.clear();
                self.stopped = true;
                self.release(start - self.base);
                self.pending.clear();
                return;
            }
        }
        let safe = rx
            .live
            .first()
            .map_or(self.pending.len(), |(start, _)| start - self.base);
        let n = complete_utf8_len(self.pending.get(..safe).unwrap_or_default());
        self.release(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GrammarErrorKind;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use proptest::prelude::*;

    /// Bytes 0x20..0x7f, "ab", "<|eos|>" (special), an unused id, then 0xC3 and 0xA9.
    fn vocab() -> Arc<Vocabulary> {
        let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
        tokens.push(b"ab".to_vec());
        tokens.push(b"<|eos|>".to_vec());
        tokens.push(Vec::new());
        tokens.push(vec![0xC3]);
        tokens.push(vec![0xA9]);
        let eos = (tokens.len() - 4) as u32;
        Arc::new(Vocabulary::new(tokens, &[eos], &[eos]).unwrap())
    }

    fn id(c: u8) -> u32 {
        u32::from(c - 0x20)
    }

    fn new(v: Arc<Vocabulary>, stops: &[u32], rx: Option<&str>) -> StopController {
        StopController::new(v, stops, rx, &Limits::default()).unwrap()
    }

    fn feed(c: &mut StopController, text: &str) -> String {
        let mut out = Vec::new();
        for b in text.bytes() {
            out.extend_from_slice(c.commit_token(id(b)).0);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn holds_back_a_partial_stop_and_cuts_the_match() {
        let mut c = new(vocab(), &[], Some("END|\\n\\n"));
        assert_eq!(feed(&mut c, "hello E"), "hello ");
        assert_eq!(feed(&mut c, "N"), "");
        assert_eq!(feed(&mut c, "x"), "ENx");
        assert!(!c.is_stopped());
        assert_eq!(feed(&mut c, " bye END"), " bye ");
        assert!(c.is_stopped());
        assert_eq!(feed(&mut c, "more"), "");
    }

    #[test]
    fn stop_tokens_special_tokens_and_utf8() {
        let v = vocab();
        let eos = v.eos_tokens()[0];
        let mut c = new(v.clone(), &[eos], None);
        // é split over two tokens: nothing until it is complete.
        assert_eq!(c.commit_token(eos + 2), (&b""[..], false));
        assert_eq!(c.commit_token(eos + 3), ("é".as_bytes(), false));
        assert_eq!(c.commit_token(eos + 1), (&b"<[97]>"[..], false));
        assert_eq!(c.commit_token(9999), (&b"<[9999]>"[..], false));
        assert_eq!(c.commit_token(eos), (&b""[..], true));
        assert!(c.is_stopped());
        let mut c = new(v.clone(), &[], Some("x"));
        assert_eq!(c.commit_token(eos), (&b"<|eos|>"[..], false));
        assert!(!c.is_stopped());
    }

    #[test]
    fn a_stop_token_releases_held_back_text_and_clones_are_independent() {
        let v = vocab();
        let eos = v.eos_tokens()[0];
        let mut c = new(v, &[eos], Some("STOP"));
        assert_eq!(feed(&mut c, "a ST"), "a ");
        let mut branch = c.clone();
        assert_eq!(feed(&mut c, "OP"), "");
        assert!(c.is_stopped());
        assert_eq!(feed(&mut branch, "!"), "ST!");
        assert_eq!(branch.commit_token(eos), (&b""[..], true));
        let mut c2 = new(vocab(), &[eos], Some("STOP"));
        assert_eq!(feed(&mut c2, "ST"), "");
        assert_eq!(c2.commit_token(eos), (&b"ST"[..], true));
    }

    #[test]
    fn typed_errors() {
        let v = vocab();
        let limits = Limits::default();
        let e = StopController::new(v.clone(), &[], Some("a*"), &limits).unwrap_err();
        assert!(matches!(e, StopError::EmptyMatch { .. }), "{e:?}");
        assert!(e.to_string().contains("empty string"), "{e}");
        let e = StopController::new(v.clone(), &[], Some(""), &limits).unwrap_err();
        assert!(matches!(e, StopError::EmptyMatch { .. }), "{e:?}");
        let e = StopController::new(v.clone(), &[9999], None, &limits).unwrap_err();
        assert_eq!(
            e,
            StopError::TokenOutOfRange {
                token: 9999,
                vocab_size: v.vocab_size()
            }
        );
        assert!(e.to_string().starts_with("stop token 9999"), "{e}");
        let e = StopController::new(v.clone(), &[], Some("("), &limits).unwrap_err();
        assert!(matches!(e, StopError::Regex(_)), "{e:?}");
        let tiny = Limits {
            max_repeat: 2,
            ..Limits::default()
        };
        let Err(e) = StopController::new(v, &[], Some("x{5}"), &tiny) else {
            panic!("x{{5}} compiled with max_repeat 2");
        };
        assert!(
            matches!(&e, StopError::Regex(g) if matches!(g.kind, GrammarErrorKind::Limit(_))),
            "{e:?}"
        );
    }

    #[test]
    fn literal_stop_strings_are_escaped_and_joined_with_the_regex() {
        let v = vocab();
        let limits = Limits::default();
        let strings: [&[u8]; 2] = [b"a.b", b"(x)"];
        let mut c =
            StopController::with_strings(v.clone(), &[], &strings, Some("END"), &limits).unwrap();
        // "." is literal: "axb" does not stop.
        assert_eq!(feed(&mut c, "axb "), "axb ");
        assert_eq!(feed(&mut c, "hi (x"), "hi ");
        assert_eq!(feed(&mut c, ")"), "");
        assert!(c.is_stopped());
        let mut c =
            StopController::with_strings(v.clone(), &[], &strings, Some("END"), &limits).unwrap();
        assert_eq!(feed(&mut c, "ok a.bEND"), "ok ");
        assert!(c.is_stopped());
        let mut c = StopController::with_strings(v.clone(), &[], &strings, None, &limits).unwrap();
        assert_eq!(feed(&mut c, "END a."), "END ");
        assert_eq!(feed(&mut c, "b"), "");
        assert!(c.is_stopped());
        // Without strings it is `new`.
        let mut c = StopController::with_strings(v.clone(), &[], &[], None, &limits).unwrap();
        assert_eq!(feed(&mut c, "a.b"), "a.b");
        let e = StopController::with_strings(v.clone(), &[], &[b""], None, &limits).unwrap_err();
        assert!(matches!(e, StopError::EmptyMatch { .. }), "{e:?}");
        let e = StopController::with_strings(v.clone(), &[], &[b"ok", b"\xC3"], None, &limits)
            .unwrap_err();
        assert_eq!(e, StopError::InvalidString { index: 1 });
        assert!(e.to_string().contains("stop string 1"), "{e}");
    }

    #[test]
    fn matches_longer_than_the_bound_are_not_detected() {
        let a = "a".repeat(MAX_STOP_BYTES - 2);
        // "<" + 1022 a + ">" is 1024 bytes: detected.
        let mut c = new(vocab(), &[], Some("<a*>"));
        assert_eq!(feed(&mut c, &format!("x<{a}>")), "x");
        assert!(c.is_stopped());
        // One byte longer: the candidate is dropped and everything comes out.
        let mut c = new(vocab(), &[], Some("<a*>"));
        let mut out = feed(&mut c, "x<");
        assert_eq!(out, "x");
        for i in 0..=MAX_STOP_BYTES - 2 {
            out.push_str(&feed(&mut c, "a"));
            // Never more than MAX_STOP_BYTES bytes held back.
            assert!(2 + i + 1 - out.len() <= MAX_STOP_BYTES, "{i}");
        }
        out.push_str(&feed(&mut c, ">"));
        assert!(!c.is_stopped());
        assert_eq!(out, format!("x<{a}a>"));
    }

    // ---- Differential test against a naive oracle ----

    /// Token texts of the differential vocabulary; `C3` and `A9` are the two halves of "é".
    const DIFF_TOKENS: [&[u8]; 13] = [
        b"a",
        b"b",
        b"c",
        b"ab",
        b"ba",
        b"abc",
        b"ca",
        b"cc",
        "é".as_bytes(),
        b"\xC3",
        b"\xA9",
        b"<|x|>",
        b"<|stop|>",
    ];
    const C3: u32 = 9;
    const SPECIAL: u32 = 11;
    const STOP: u32 = 12;

    fn diff_vocab() -> Arc<Vocabulary> {
        let tokens = DIFF_TOKENS.iter().map(|t| t.to_vec()).collect();
        Arc::new(Vocabulary::new(tokens, &[SPECIAL, STOP], &[STOP]).unwrap())
    }

    /// What the controller must have shown in total after each token, from the whole text
    /// decoded so far: literal stop strings searched naively in it.
    struct Oracle {
        literals: Vec<Vec<u8>>,
        /// Decoded text (special tokens by name).
        text: Vec<u8>,
        /// Where the text after the last special token starts (no match runs across one).
        barrier: usize,
        /// `Some(total shown)` once stopped.
        stopped: Option<usize>,
        /// Whether `STOP` is a stop token (else it is only a special token).
        stop_token: bool,
    }

    impl Oracle {
        /// Commits `token`; returns how many bytes of `text` must have been shown in total.
        fn commit(&mut self, token: u32) -> usize {
            if let Some(shown) = self.stopped {
                return shown;
            }
            let bytes = DIFF_TOKENS[token as usize];
            if token == STOP && self.stop_token {
                self.stopped = Some(self.text.len());
                return self.text.len();
            }
            if token == SPECIAL || token == STOP {
                self.text.extend_from_slice(bytes);
                self.barrier = self.text.len();
                return self.text.len();
            }
            for &b in bytes {
                self.text.push(b);
                let n = self.text.len();
                // The earliest start of a stop string ending here: the longest match.
                let hit = (self.barrier..n).find(|&j| {
                    let tail = &self.text[j..n];
                    self.literals.iter().any(|l| l.as_slice() == tail)
                });
                if let Some(j) = hit {
                    self.stopped = Some(j);
                    return j;
                }
            }
            // Held back: from the earliest start of a partial stop string.
            let n = self.text.len();
            let k = (self.barrier..n)
                .find(|&j| {
                    self.literals
                        .iter()
                        .any(|l| l.starts_with(&self.text[j..n]))
                })
                .unwrap_or(n);
            // Shown only up to a whole character (the text is valid UTF-8 at units' ends).
            (0..=k)
                .rev()
                .find(|&k| core::str::from_utf8(&self.text[..k]).is_ok())
                .unwrap_or(0)
        }
    }

    /// A unit of the random stream: one token, or "é" split into its two byte tokens (so
    /// the text is valid UTF-8 between units).
    fn unit() -> impl Strategy<Value = Vec<u32>> {
        prop_oneof![
            8 => (0u32..9).prop_map(|t| vec![t]),
            1 => Just(vec![C3, C3 + 1]),
            1 => Just(vec![SPECIAL]),
            1 => Just(vec![STOP]),
        ]
    }

    fn literal() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![Just('a'), Just('b'), Just('c'), Just('é')],
            1..5,
        )
        .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn literal_stop_strings_match_a_naive_search(
            literals in proptest::collection::vec(literal(), 1..4),
            units in proptest::collection::vec(unit(), 0..40),
            stop_token in any::<bool>(),
            as_strings in any::<bool>(),
        ) {
            let vocab = diff_vocab();
            let pattern = literals.join("|");
            let stops: &[u32] = if stop_token { &[STOP] } else { &[] };
            let strings: Vec<&[u8]> = literals.iter().map(|l| l.as_bytes()).collect();
            let mut c = if as_strings {
                StopController::with_strings(vocab, stops, &strings, None, &Limits::default())
            } else {
                StopController::new(vocab, stops, Some(&pattern), &Limits::default())
            }
            .unwrap();
            let mut oracle = Oracle {
                literals: literals.iter().map(|l| l.as_bytes().to_vec()).collect(),
                text: Vec::new(),
                barrier: 0,
                stopped: None,
                stop_token,
            };
            let mut shown = Vec::new();
            for token in units.into_iter().flatten() {
                let want = oracle.commit(token);
                let want_stop = oracle.stopped.is_some();
                let (text, stopped) = c.commit_token(token);
                shown.extend_from_slice(text);
                prop_assert_eq!(stopped, want_stop);
                prop_assert_eq!(&shown[..], &oracle.text[..want], "pattern {:?}", pattern);
            }
        }
    }
}
