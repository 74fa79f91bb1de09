//! `LlgStopController`: LLGuidance's stop-sequence detector over a token stream. Each
//! committed token's text is returned once it is known not to belong to a stop sequence;
//! the sequence stops at a stop token or when the text ends with a match of the stop regex,
//! whose matched text is never returned.
//!
//! The regex is a sieve grammar (`Grammar::from_regex`) run by sieve matchers over bytes:
//! one *candidate* matcher per position where a match may have started, advanced byte by byte
//! and dropped when its bytes stop being a prefix of a match. Text before the earliest live
//! candidate is safe to return (cut at a UTF-8 character boundary); a candidate that accepts
//! stops the sequence and its text is withheld. Cost per byte: one byte push per live
//! candidate (for literal stop strings at most their length), plus one trial push to see
//! whether a match can start there. Bounded: a candidate is dropped after
//! [`MAX_STOP_BYTES`] bytes, so longer matches are not detected and no more than that many
//! bytes are held back.

use std::ffi::c_char;
use std::sync::Arc;

use sieve_core::{Grammar, Limits, Matcher, Vocabulary};

use super::tokenizer::{LlgTokenizer, vocab_of};
use super::{c_str, guard, write_message};
use crate::boundary::{
    Castable, Exclusive, box_free, box_into_handle, handle_mut, handle_ref, input_slice, write_out,
};

/// The longest stop-regex match detected, in bytes (and the most text held back).
pub(crate) const MAX_STOP_BYTES: usize = 1024;

/// Opaque stop-controller handle: one sequence, one thread at a time.
pub struct LlgStopController {
    _private: [u8; 0],
}

/// The stop regex's matchers.
#[derive(Clone)]
struct StopRegex {
    /// At the start of the regex: tried on each byte to see whether a match can start there.
    fresh: Matcher,
    /// `(absolute byte offset where the match started, matcher after the bytes since)`, in
    /// order of start.
    live: Vec<(usize, Matcher)>,
}

/// The Rust value behind an `LlgStopController`.
#[derive(Clone)]
pub(crate) struct StopController {
    vocab: Arc<Vocabulary>,
    stop_tokens: Vec<u32>,
    regex: Option<StopRegex>,
    /// Bytes decoded but not returned yet; `pending[0]` is byte `base` of the stream.
    pending: Vec<u8>,
    base: usize,
    stopped: bool,
    /// The text the last commit returned, NUL-terminated (`llg_stop_commit_token`'s result).
    last: Vec<u8>,
}

impl Castable for LlgStopController {
    type Ownership = Exclusive;
    type Rust = StopController;
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8 character
/// that more bytes could complete (invalid bytes count as complete: they are replaced).
fn complete_utf8_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    loop {
        match std::str::from_utf8(&bytes[at..]) {
            Ok(_) => return bytes.len(),
            Err(e) => match e.error_len() {
                Some(bad) => at += e.valid_up_to() + bad,
                None => return at + e.valid_up_to(),
            },
        }
    }
}

impl StopController {
    /// A controller over `vocab` stopping at `stop_tokens` or at a match of `stop_rx`.
    fn new(
        vocab: Arc<Vocabulary>,
        stop_tokens: &[u32],
        stop_rx: Option<&str>,
    ) -> Result<StopController, String> {
        if let Some(&t) = stop_tokens
            .iter()
            .find(|&&t| t as usize >= vocab.vocab_size())
        {
            return Err(format!(
                "stop token {t} is not below the vocabulary size {}",
                vocab.vocab_size()
            ));
        }
        let regex = match stop_rx {
            None => None,
            Some(rx) => {
                let grammar = Grammar::from_regex(rx, &vocab, &Limits::default())
                    .map_err(|e| format!("stop_rx: {e}"))?;
                let mut fresh = Matcher::new(&grammar);
                if fresh.is_accepting() {
                    return Err(format!(
                        "stop_rx {rx:?} matches the empty string (it would stop at once)"
                    ));
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
            last: vec![0],
        })
    }

    /// Removes and returns the first `n` pending bytes.
    fn take_pending(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.pending.len());
        self.base += n;
        self.pending.drain(..n).collect()
    }

    /// Commits one token; returns the bytes now safe to show.
    fn commit(&mut self, token: u32) -> Vec<u8> {
        if self.stopped {
            return Vec::new();
        }
        if self.stop_tokens.contains(&token) {
            // The held-back text was not a stop sequence after all.
            self.stopped = true;
            return self.take_pending(self.pending.len());
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
            let shown = match text {
                Some(name) => name.to_vec(),
                None => format!("<[{token}]>").into_bytes(),
            };
            if let Some(rx) = &mut self.regex {
                rx.live.clear();
            }
            let mut out = self.take_pending(self.pending.len());
            out.extend_from_slice(&shown);
            self.base += shown.len();
            return out;
        };
        let Some(rx) = &mut self.regex else {
            self.pending.extend_from_slice(bytes);
            let n = complete_utf8_len(&self.pending);
            return self.take_pending(n);
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
                self.stopped = true;
                rx.live.clear();
                let out = self.take_pending(start - self.base);
                self.pending.clear();
                return out;
            }
        }
        let safe = rx
            .live
            .first()
            .map_or(self.pending.len(), |(start, _)| start - self.base);
        let n = complete_utf8_len(&self.pending[..safe]);
        self.take_pending(n)
    }
}

/// Creates a stop controller for `tokenizer`: the sequence stops when one of `stop_tokens`
/// (`stop_tokens_len` ids; NULL if 0) is committed, or when the text ends with a match of the
/// regex `stop_rx` (NUL-terminated; NULL or `""` for none; a regex matching the empty string
/// is an error). NULL on failure, with the message in `error_string` (NUL-terminated,
/// truncated to `error_string_len`). Free with `llg_free_stop_controller`.
#[unsafe(no_mangle)]
pub extern "C" fn llg_new_stop_controller(
    tokenizer: *const LlgTokenizer,
    stop_tokens: *const u32,
    stop_tokens_len: usize,
    stop_rx: *const c_char,
    error_string: *mut c_char,
    error_string_len: usize,
) -> *mut LlgStopController {
    guard(std::ptr::null_mut(), || {
        let built = (|| {
            // SAFETY: 1. NULL or a live tokenizer handle (caller contract).
            let vocab = unsafe { vocab_of(tokenizer) }.ok_or("tokenizer is NULL")?;
            // SAFETY: 1. NULL or readable for `stop_tokens_len` ids (caller contract).
            let stops = unsafe { input_slice(stop_tokens, stop_tokens_len) }
                .ok_or("stop_tokens is NULL with stop_tokens_len > 0")?;
            let rx = if stop_rx.is_null() {
                None
            } else {
                // SAFETY: 1. non-NULL and NUL-terminated (caller contract).
                Some(unsafe { c_str(stop_rx, "stop_rx") }?).filter(|r| !r.is_empty())
            };
            StopController::new(vocab, stops, rx)
        })();
        match built {
            Ok(c) => box_into_handle::<LlgStopController>(c),
            Err(msg) => {
                // SAFETY: 1. NULL or writable for `error_string_len` bytes (caller contract).
                unsafe { write_message(error_string, error_string_len, &msg) };
                std::ptr::null_mut()
            }
        }
    })
}

/// Commits `token`. Returns the text now safe to show (UTF-8, NUL-terminated, possibly empty;
/// owned by the controller, valid until its next call or free), with its length in
/// `*output_len_p` (interior NUL bytes are possible), and sets `*is_stopped_p` when the
/// sequence must end. Invalid UTF-8 in tokens is replaced by U+FFFD. After a stop, every
/// commit returns `""`. NULL (and nothing changed or written) if any pointer is NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_stop_commit_token(
    stop_ctrl: *mut LlgStopController,
    token: u32,
    output_len_p: *mut usize,
    is_stopped_p: *mut bool,
) -> *const c_char {
    guard(std::ptr::null(), || {
        if output_len_p.is_null() || is_stopped_p.is_null() {
            return std::ptr::null();
        }
        // SAFETY: 1. NULL or a live controller used by one thread (caller contract).
        let Some(c) = (unsafe { handle_mut(stop_ctrl) }) else {
            return std::ptr::null();
        };
        let bytes = c.commit(token);
        let mut text = String::from_utf8_lossy(&bytes).into_owned().into_bytes();
        let len = text.len();
        text.push(0);
        c.last = text;
        // SAFETY: 1. both outputs checked non-NULL; writable (caller contract).
        unsafe {
            write_out(output_len_p, len);
            write_out(is_stopped_p, c.stopped);
        }
        c.last.as_ptr().cast()
    })
}

/// An independent copy of the controller (pending text, regex state, stop flag); NULL for
/// NULL.
#[unsafe(no_mangle)]
pub extern "C" fn llg_clone_stop_controller(
    stop_ctrl: *const LlgStopController,
) -> *mut LlgStopController {
    guard(std::ptr::null_mut(), || {
        // SAFETY: 1. NULL or a live controller handle (caller contract).
        match unsafe { handle_ref(stop_ctrl) } {
            Some(c) => box_into_handle::<LlgStopController>(c.clone()),
            None => std::ptr::null_mut(),
        }
    })
}

/// Frees a stop controller. NULL is a no-op.
#[unsafe(no_mangle)]
pub extern "C" fn llg_free_stop_controller(stop_ctrl: *mut LlgStopController) {
    guard((), || {
        // SAFETY: 1. NULL or a controller handle freed once (caller contract).
        unsafe { box_free(stop_ctrl) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes 0x20..0x7f, "ab", "<|eos|>" (special), then an unused id.
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

    fn feed(c: &mut StopController, text: &str) -> String {
        let mut out = Vec::new();
        for b in text.bytes() {
            out.extend(c.commit(id(b)));
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn holds_back_a_partial_stop_and_cuts_the_match() {
        let mut c = StopController::new(vocab(), &[], Some("END|\\n\\n")).unwrap();
        assert_eq!(feed(&mut c, "hello E"), "hello ");
        assert_eq!(feed(&mut c, "N"), "");
        assert_eq!(feed(&mut c, "x"), "ENx");
        assert!(!c.stopped);
        assert_eq!(feed(&mut c, " bye END"), " bye ");
        assert!(c.stopped);
        assert_eq!(feed(&mut c, "more"), "");
    }

    #[test]
    fn stop_tokens_special_tokens_and_utf8() {
        let v = vocab();
        let eos = v.eos_tokens()[0];
        let mut c = StopController::new(v.clone(), &[eos], None).unwrap();
        // é split over two tokens: nothing until it is complete.
        assert_eq!(c.commit(eos + 2), b"");
        assert_eq!(c.commit(eos + 3), "é".as_bytes());
        assert_eq!(c.commit(eos + 1), b"<[97]>");
        assert_eq!(c.commit(eos), b"");
        assert!(c.stopped);
        let mut c = StopController::new(v.clone(), &[], Some("x")).unwrap();
        assert_eq!(c.commit(eos), b"<|eos|>");
        assert!(!c.stopped);
        assert!(StopController::new(v.clone(), &[], Some("a*")).is_err());
        assert!(StopController::new(v.clone(), &[9999], None).is_err());
        assert!(StopController::new(v, &[], Some("(")).is_err());
    }
}
