//! Differential tests: the trie-walk mask against token-by-token answers.
//!
//! - Regexes: an independent oracle, regex-automata's DFA (token allowed iff the DFA is not
//!   dead after the prefix plus the token's bytes; EOS iff it matches at the end).
//! - Lark grammars: a consistency check, not an independent oracle: a token is allowed iff a
//!   fresh copy of the matcher accepts its bytes one by one (no trie walk, but the engine's
//!   own lexer and parser). Exactness of CFG masks is proven against independent recognizers
//!   in `budget.rs`/`gbnf_oracle.rs` (`sieve_tests::cfg`, the GBNF reference).
//!
//! Both over the synthetic vocabulary (proptest) and over o200k_base (fixed seeds).
//! Last, the stop controller (`sieve_core::StopController`): the text it shows and where it
//! stops, against the same DFA oracle run from every start position of the decoded text
//! (proptest over a small vocabulary).

use proptest::prelude::*;
use regex_automata::dfa::{Automaton, StartKind, dense};
use regex_automata::util::{primitives::StateID, start};
use regex_automata::{Anchored, MatchKind};
use sieve_core::{
    Grammar, GrammarErrorKind, Limits, Matcher, StopController, StopError, Vocabulary,
};
use sieve_tests::{check_walk, per_token_mask, per_token_mask_is_allowed, synthetic_vocab};
use std::collections::{HashMap, HashSet};

/// The DFA oracle for `pattern`: a prefix is viable iff the DFA state after it can still
/// reach a full match at the end of input. (regex-automata reports matches one byte late,
/// so "not dead" alone is not enough.) Liveness is precomputed over the reachable states.
struct DfaOracle {
    dfa: dense::DFA<Vec<u32>>,
    live: HashSet<StateID>,
}

impl DfaOracle {
    fn new(pattern: &str) -> DfaOracle {
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .start_kind(StartKind::Anchored)
                    .match_kind(MatchKind::All),
            )
            .build(pattern)
            .unwrap_or_else(|e| panic!("regex-automata rejects {pattern:?}: {e}"));
        let start = dfa
            .start_state(&start::Config::new().anchored(Anchored::Yes))
            .expect("anchored start state");
        // Reachable states and reverse edges.
        let mut seen = HashSet::from([start]);
        let mut queue = vec![start];
        let mut rev: HashMap<StateID, Vec<StateID>> = HashMap::new();
        while let Some(s) = queue.pop() {
            for b in 0..=255u8 {
                let n = dfa.next_state(s, b);
                rev.entry(n).or_default().push(s);
                if seen.insert(n) {
                    queue.push(n);
                }
            }
        }
        let mut live: HashSet<StateID> = seen
            .iter()
            .copied()
            .filter(|&s| dfa.is_match_state(dfa.next_eoi_state(s)))
            .collect();
        let mut queue: Vec<StateID> = live.iter().copied().collect();
        while let Some(s) = queue.pop() {
            for &p in rev.get(&s).map(|v| &v[..]).unwrap_or(&[]) {
                if live.insert(p) {
                    queue.push(p);
                }
            }
        }
        DfaOracle { dfa, live }
    }

    fn run(&self, bytes: &[u8]) -> Option<StateID> {
        let cfg = start::Config::new().anchored(Anchored::Yes);
        let mut s = self.dfa.start_state(&cfg).ok()?;
        for &b in bytes {
            s = self.dfa.next_state(s, b);
            if !self.live.contains(&s) {
                return None;
            }
        }
        self.live.contains(&s).then_some(s)
    }

    fn mask(&self, vocab: &Vocabulary, prefix: &[u8]) -> Vec<u32> {
        let mut mask = vec![0u32; vocab.mask_words()];
        let Some(state) = self.run(prefix) else {
            return mask;
        };
        let matches = self.dfa.is_match_state(self.dfa.next_eoi_state(state));
        let mut buf = prefix.to_vec();
        for t in 0..vocab.vocab_size() as u32 {
            let bytes = vocab.trie_bytes(t);
            buf.truncate(prefix.len());
            buf.extend_from_slice(bytes);
            let ok = !bytes.is_empty() && self.run(&buf).is_some();
            if ok || (matches && vocab.eos_tokens().contains(&t)) {
                mask[t as usize / 32] |= 1 << (t % 32);
            }
        }
        mask
    }
}

fn regex_strategy() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("ab".to_string()),
        Just("0".to_string()),
        Just(" ".to_string()),
        Just("\"".to_string()),
        Just("é".to_string()),
        Just("[a-c]".to_string()),
        Just("[0-9]".to_string()),
        Just("[^a\"]".to_string()),
        Just("\\w".to_string()),
        Just(".".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}{b}")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("(?:{a}|{b})")),
            inner.clone().prop_map(|a| format!("(?:{a})*")),
            inner.clone().prop_map(|a| format!("(?:{a})+")),
            inner.clone().prop_map(|a| format!("(?:{a})?")),
            inner.prop_map(|a| format!("(?:{a}){{1,3}}")),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn regex_masks_match_the_dfa_oracle(pattern in regex_strategy(), seed in 0u64..1000) {
        let vocab = synthetic_vocab();
        let g = Grammar::from_regex(&pattern, &vocab, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("{pattern}: {e}")))?;
        let oracle = DfaOracle::new(&pattern);
        let mut dfa_oracle = |_: &Matcher, text: &[u8]| oracle.mask(&vocab, text);
        check_walk(&g, seed, 12, &mut dfa_oracle)
            .map_err(|e| TestCaseError::fail(format!("/{pattern}/: {e}")))?;
    }

    #[test]
    fn lark_masks_match_the_per_token_consistency_check(src in lark_strategy(), seed in 0u64..1000) {
        let vocab = synthetic_vocab();
        let g = match Grammar::from_lark(&src, &vocab, &Limits::default()) {
            Ok(g) => g,
            Err(e) if e.kind == GrammarErrorKind::Unproductive => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("{e}\n{src}"))),
        };
        let mut oracle = |m: &Matcher, _: &[u8]| per_token_mask(m);
        check_walk(&g, seed, 12, &mut oracle)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
    }
}

/// Lark grammars with terminals that match the empty string (LiteRT-LM writes
/// `fc_esc_open /(.|\n)*/ fc_esc_close`), built so that the grammar is regular and lexing is
/// unambiguous: terminals spell only `x`/`y`/`z`, literals only `a`/`b`/`c`, and two terminals
/// are never adjacent. The language is then the concatenation of the parts, which the regex
/// crate's DFA decides independently of sieve. Returns the grammar and the regex.
fn nullable_terminal_strategy() -> impl Strategy<Value = (String, String)> {
    let terminal = prop_oneof![
        Just("/x*/"),
        Just("/[xy]*/"),
        Just("/(x|yz)*/"),
        Just("/x?/"),
        Just("/(?:xy)*/"),
        Just("/x*y?/"),
        Just("/(x|\\n)*/"),
    ];
    let literal = prop_oneof![Just("a"), Just("b"), Just("c"), Just("ab")];
    let part = (terminal, literal);
    (
        prop::collection::vec(part, 1..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(parts, lead, opt)| {
            let mut rule = Vec::new();
            let mut rx = String::new();
            let mut terms = Vec::new();
            for (i, (t, lit)) in parts.iter().enumerate() {
                if i > 0 || lead {
                    rule.push(format!("\"{lit}\""));
                    rx.push_str(lit);
                }
                let name = format!("T{i}");
                terms.push(format!("{name}: {t}"));
                rule.push(name);
                rx.push_str(&format!("(?:{})", t.trim_matches('/')));
            }
            // An optional use too: `[T]` around the last terminal.
            if opt {
                let last = rule.pop().unwrap_or_default();
                rule.push(format!("[{last}]"));
            }
            rule.push("\"c\"".to_string());
            rx.push('c');
            let src = format!("start: {}\n{}\n", rule.join(" "), terms.join("\n"));
            (src, rx)
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn nullable_terminal_masks_match_the_dfa_oracle(
        (src, rx) in nullable_terminal_strategy(),
        seed in 0u64..1000,
    ) {
        let vocab = synthetic_vocab();
        let g = Grammar::from_lark(&src, &vocab, &Limits::default())
            .map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        let oracle = DfaOracle::new(&rx);
        let mut dfa_oracle = |_: &Matcher, text: &[u8]| oracle.mask(&vocab, text);
        check_walk(&g, seed, 14, &mut dfa_oracle)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{src}/{rx}/")))?;
    }
}

/// Small random Lark grammars: rules r0..r3 over literals, terminals (greedy and lazy),
/// rule references and the `? * +` operators, sometimes with `%ignore`.
fn lark_strategy() -> impl Strategy<Value = String> {
    let atom = prop_oneof![
        Just("\"a\""),
        Just("\"b\""),
        Just("\"ab\""),
        Just("\", \""),
        Just("NUM"),
        Just("WORD"),
        Just("LZ"),
        Just("r1"),
        Just("r2"),
        Just("r3"),
    ];
    let op = prop_oneof![Just(""), Just(""), Just("?"), Just("*"), Just("+")];
    let item = (atom, op).prop_map(|(a, o)| format!("{a}{o}"));
    let alt = prop::collection::vec(item, 0..4).prop_map(|v| v.join(" "));
    let rule = prop::collection::vec(alt, 1..3).prop_map(|v| v.join(" | "));
    (prop::collection::vec(rule, 4), any::<bool>()).prop_map(|(rules, ignore)| {
        let mut src = String::new();
        for (i, r) in rules.iter().enumerate() {
            let name = if i == 0 {
                "start".to_string()
            } else {
                format!("r{i}")
            };
            src.push_str(&format!("{name}: {r}\n"));
        }
        src.push_str("NUM: /[0-9]+/\nWORD: /[a-z]+/\nLZ[lazy]: /q[a-z]*e/\n");
        if ignore {
            src.push_str("%ignore \" \"\n");
        }
        src
    })
}

fn o200k() -> Option<std::sync::Arc<Vocabulary>> {
    match sieve_bench::tokenizer::LoadedTokenizer::load("o200k_base") {
        Ok(t) => Some(t.vocab.clone()),
        Err(e) => {
            sieve_tests::skip_missing_data(&format!("o200k_base did not load: {e}"));
            None
        }
    }
}

#[test]
fn regex_masks_match_the_dfa_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    for (i, pattern) in [
        r#"\{"name": "[a-z ]{1,12}", "age": [1-9][0-9]?\}"#,
        r"(?:[0-9]+\.)?[0-9]+(?:e[+-]?[0-9]+)?",
        r"[A-Z][a-z]+(?: [A-Z][a-z]+)*",
        r"(?:\p{L}|\s)+",
    ]
    .iter()
    .enumerate()
    {
        let g = Grammar::from_regex(pattern, &vocab, &Limits::default()).unwrap();
        let oracle = DfaOracle::new(pattern);
        let mut dfa_oracle = |_: &Matcher, text: &[u8]| oracle.mask(&vocab, text);
        if let Err(e) = check_walk(&g, i as u64, 6, &mut dfa_oracle) {
            panic!("/{pattern}/: {e}");
        }
    }
}

#[test]
fn lark_masks_match_the_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    let src = r#"
start: value
?value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
array: "[" [value ("," value)*] "]"
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"#;
    let g = Grammar::from_lark(src, &vocab, &Limits::default()).unwrap();
    for seed in 0..3 {
        let mut oracle = |m: &Matcher, _: &[u8]| per_token_mask_is_allowed(m);
        if let Err(e) = check_walk(&g, seed, 8, &mut oracle) {
            panic!("json grammar, seed {seed}: {e}");
        }
    }
}

/// Inside JSON strings the slicer ORs in precomputed masks; the result must equal the
/// oracle, including for bounded strings where only the short slices apply.
#[test]
fn sliced_masks_match_the_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    let src = r#"
start: "{\"a\": " ESCAPED_STRING ", \"b\": " SHORT "}"
SHORT: /"[^"\\\x00-\x1F]{0,14}"/
%import common.ESCAPED_STRING
"#;
    let g = Grammar::from_lark(src, &vocab, &Limits::default()).unwrap();
    let sliced = sliced_walks_match_the_oracle(&g, 4, 14);
    assert!(sliced > 0, "the slicer never applied");
}

/// Random walks (one per seed, up to `steps` tokens, EOS never taken) on which every mask
/// must equal the `is_allowed` oracle; returns how many masks were sliced.
fn sliced_walks_match_the_oracle(g: &Grammar, seeds: u64, steps: usize) -> u64 {
    let vocab = g.vocab().clone();
    let mut sliced = 0;
    for seed in 0..seeds {
        let mut m = Matcher::new(g);
        let mut rng = sieve_tests::Rng::new(seed);
        let mut mask = vec![0u32; vocab.mask_words()];
        for step in 0..steps {
            let want = per_token_mask_is_allowed(&m);
            // Walked, then built into the state's remembered mask, then reused.
            for pass in 0..3 {
                m.forget_last_mask();
                m.compute_mask(&mut mask).unwrap();
                if let Some(d) = sieve_tests::mask_diff(&vocab, &mask, &want) {
                    panic!("seed {seed} step {step} pass {pass}: {d}");
                }
            }
            let choices: Vec<u32> = sieve_tests::allowed_tokens(&mask)
                .into_iter()
                .filter(|t| !vocab.eos_tokens().contains(t))
                .collect();
            if choices.is_empty() {
                break;
            }
            m.consume_token(choices[rng.below(choices.len())]).unwrap();
        }
        sliced += m.stats().sliced;
        assert!(
            m.stats().state_masks > 0,
            "no remembered state mask was used"
        );
    }
    sliced
}

/// The slicer's DFA check (`X{1,n}` against the lexer's char-successor graph, memoised
/// across masks) on JSON strings with length bounds, word-count patterns and free text:
/// every mask equals the oracle, and slices do apply.
#[test]
fn sliced_json_string_masks_match_the_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    let schema = r#"{
        "type": "object",
        "properties": {
            "a": {"type": "string", "maxLength": 12},
            "b": {"type": "string", "pattern": "^(?:\\S+\\s+){0,3}\\S+$", "maxLength": 40},
            "c": {"type": "string"},
            "d": {"type": "string", "minLength": 2, "maxLength": 35}
        },
        "required": ["a", "b", "c", "d"],
        "additionalProperties": false
    }"#;
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let (g, _) = Grammar::from_json_schema_str(schema, &opts, &vocab, &Limits::default()).unwrap();
    let sliced = sliced_walks_match_the_oracle(&g, 3, 40);
    assert!(sliced > 0, "the slicer never applied");
}

/// Strings whose pattern is a search (`(east-1a|...)` unanchored, or a fixed start then
/// anything): the slicer proves they never die from the part of the lexer state every
/// character reproduces, without searching the partial matches. Every mask equals the
/// oracle, and slices do apply.
#[test]
fn sliced_search_pattern_masks_match_the_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    let alts: Vec<String> = ["east", "west", "north", "south"]
        .iter()
        .flat_map(|d| (1..=3).map(move |i| format!("{d}-{i}a|{d}-{i}b")))
        .collect();
    let schema = format!(
        r#"{{
        "type": "object",
        "properties": {{
            "e": {{"type": "string", "pattern": "({})"}},
            "f": {{"type": "string", "pattern": "^ab(cd|ef)"}}
        }},
        "required": ["e", "f"],
        "additionalProperties": false
    }}"#,
        alts.join("|")
    );
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let (g, _) = Grammar::from_json_schema_str(&schema, &opts, &vocab, &Limits::default()).unwrap();
    let sliced = sliced_walks_match_the_oracle(&g, 3, 30);
    assert!(sliced > 0, "the slicer never applied");
}

/// Keys of an object with listed properties and `additionalProperties`: the generic key
/// (any string but the listed ones) keeps every key state alive, which the slicer proves
/// on the generic key without the exclusions. Every mask equals the oracle.
#[test]
fn sliced_generic_key_masks_match_the_oracle_on_o200k() {
    let Some(vocab) = o200k() else { return };
    let props: Vec<String> = (0..40)
        .map(|i| format!(r#""prop{i}Name": {{"type": "integer"}}"#))
        .collect();
    let schema = format!(
        r#"{{"type": "object", "properties": {{{}}}, "additionalProperties": {{"type": "integer"}}}}"#,
        props.join(", ")
    );
    let opts = sieve_core::grammar::json::JsonOptions::default();
    let (g, _) = Grammar::from_json_schema_str(&schema, &opts, &vocab, &Limits::default()).unwrap();
    let sliced = sliced_walks_match_the_oracle(&g, 3, 30);
    assert!(sliced > 0, "the slicer never applied");
}

/// Terminal `&` and prefix `~` (LLGuidance's extension; LiteRT-LM's text-only grammar is
/// `/(.|\n)*/ & ~FORBIDDEN_CALL`), checked against hand-written predicates over every token:
/// a token is allowed iff the text with it is still a prefix of the language (each language
/// here is prefix-closed or says which prefixes are viable), EOS iff the text is in it.
#[test]
fn intersection_and_complement_match_predicates() {
    type Pred = fn(&[u8]) -> bool;
    // (grammar, viable prefix, member)
    let cases: [(&str, Pred, Pred); 3] = [
        (
            "start: T\nT: /[ab]*/ & ~/(?s:.*)aa(?s:.*)/\n",
            |s| s.iter().all(|c| b"ab".contains(c)) && !s.windows(2).any(|w| w == b"aa"),
            |s| s.iter().all(|c| b"ab".contains(c)) && !s.windows(2).any(|w| w == b"aa"),
        ),
        (
            "start: T\nT: ~/(?s:.*)x(?s:.*)/ & /[a-z]{0,5}/\n",
            |s| s.len() <= 5 && s.iter().all(|c| c.is_ascii_lowercase() && *c != b'x'),
            |s| s.len() <= 5 && s.iter().all(|c| c.is_ascii_lowercase() && *c != b'x'),
        ),
        (
            // Lowercase words not equal to "ab", then "!".
            "start: W \"!\"\nW: /[a-z]+/ & ~(\"ab\")\n",
            |s| match s.iter().position(|&c| c == b'!') {
                None => s.iter().all(u8::is_ascii_lowercase),
                Some(i) => {
                    i + 1 == s.len()
                        && i > 0
                        && &s[..i] != b"ab"
                        && s[..i].iter().all(u8::is_ascii_lowercase)
                }
            },
            |s| {
                s.len() >= 2
                    && s.ends_with(b"!")
                    && &s[..s.len() - 1] != b"ab"
                    && s[..s.len() - 1].iter().all(u8::is_ascii_lowercase)
            },
        ),
    ];
    let vocab = synthetic_vocab();
    for (src, viable, member) in cases {
        let g = Grammar::from_lark(src, &vocab, &Limits::default())
            .unwrap_or_else(|e| panic!("{src}: {e}"));
        let mut oracle = |_: &Matcher, text: &[u8]| {
            let mut mask = vec![0u32; vocab.mask_words()];
            let mut buf = text.to_vec();
            for t in 0..vocab.vocab_size() as u32 {
                let bytes = vocab.trie_bytes(t);
                buf.truncate(text.len());
                buf.extend_from_slice(bytes);
                let ok = if vocab.eos_tokens().contains(&t) {
                    member(text)
                } else {
                    !bytes.is_empty() && viable(&buf)
                };
                if ok {
                    mask[t as usize / 32] |= 1 << (t % 32);
                }
            }
            mask
        };
        for seed in 0..20 {
            check_walk(&g, seed, 8, &mut oracle).unwrap_or_else(|e| panic!("{src}: {e}"));
        }
    }
    // Only in terminals.
    let e =
        Grammar::from_lark("start: a\na: \"x\" & \"y\"\n", &vocab, &Limits::default()).unwrap_err();
    assert_eq!(e.kind, GrammarErrorKind::Unsupported, "{e}");
}

// ---- The stop controller against the DFA oracle ----

/// Token texts for the stop-controller test; 7 and 8 are the two halves of "é".
const STOP_TOKENS: [&[u8]; 12] = [
    b"a",
    b"b",
    b"ab",
    b"ba",
    b"0",
    b" ",
    b"\"",
    b"\xC3",
    b"\xA9",
    "é".as_bytes(),
    b"<|x|>",
    b"<|stop|>",
];
const STOP_C3: u32 = 7;
const STOP_SPECIAL: u32 = 10;
const STOP_TOKEN: u32 = 11;

/// What a stop controller must have shown in total, from the whole decoded text and the DFA
/// oracle: no [`sieve_core::StopController`] code is reused.
struct StopOracle<'a> {
    dfa: &'a DfaOracle,
    /// Decoded text (special tokens by name).
    text: Vec<u8>,
    /// Where the text after the last special token starts (no match runs across one).
    barrier: usize,
    /// `Some(total shown)` once stopped.
    stopped: Option<usize>,
}

impl StopOracle<'_> {
    fn is_match(&self, bytes: &[u8]) -> bool {
        self.dfa
            .run(bytes)
            .is_some_and(|s| self.dfa.dfa.is_match_state(self.dfa.dfa.next_eoi_state(s)))
    }

    /// The starts `j` of the current segment with `text[j..]` at most `MAX_STOP_BYTES` long.
    fn starts(&self) -> std::ops::Range<usize> {
        let n = self.text.len();
        self.barrier
            .max(n.saturating_sub(sieve_core::stop::MAX_STOP_BYTES))..n
    }

    /// Commits `token`; returns how many bytes of `text` must have been shown in total.
    fn commit(&mut self, token: u32, stop_token: bool) -> usize {
        if let Some(shown) = self.stopped {
            return shown;
        }
        let bytes = STOP_TOKENS[token as usize];
        if token == STOP_TOKEN && stop_token {
            self.stopped = Some(self.text.len());
            return self.text.len();
        }
        if token == STOP_SPECIAL || token == STOP_TOKEN {
            self.text.extend_from_slice(bytes);
            self.barrier = self.text.len();
            return self.text.len();
        }
        for &b in bytes {
            self.text.push(b);
            // The earliest start of a match ending here: the longest match.
            if let Some(j) = self.starts().find(|&j| self.is_match(&self.text[j..])) {
                self.stopped = Some(j);
                return j;
            }
        }
        // Held back: from the earliest start of a prefix of a match.
        let k = self
            .starts()
            .find(|&j| self.dfa.run(&self.text[j..]).is_some())
            .unwrap_or(self.text.len());
        // Shown only up to a whole character (the text is valid UTF-8 between units).
        (0..=k)
            .rev()
            .find(|&k| std::str::from_utf8(&self.text[..k]).is_ok())
            .unwrap_or(0)
    }
}

/// A unit of the token stream: one token, or "é" split in two (so the text is valid UTF-8
/// between units).
fn stop_unit() -> impl Strategy<Value = Vec<u32>> {
    prop_oneof![
        10 => prop_oneof![0u32..7, Just(9)].prop_map(|t| vec![t]),
        1 => Just(vec![STOP_C3, STOP_C3 + 1]),
        1 => Just(vec![STOP_SPECIAL]),
        1 => Just(vec![STOP_TOKEN]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Over random regexes and token streams, the stop controller shows exactly the text
    /// before the earliest live match candidate (cut to whole characters) and stops at the
    /// first match, withholding the longest match ending there.
    #[test]
    fn stop_controller_matches_the_dfa_oracle(
        pattern in regex_strategy(),
        units in prop::collection::vec(stop_unit(), 0..40),
        stop_token in any::<bool>(),
    ) {
        let tokens = STOP_TOKENS.iter().map(|t| t.to_vec()).collect();
        let vocab = std::sync::Arc::new(
            Vocabulary::new(tokens, &[STOP_SPECIAL, STOP_TOKEN], &[STOP_TOKEN])
                .expect("stop vocabulary"),
        );
        let stops: &[u32] = if stop_token { &[STOP_TOKEN] } else { &[] };
        let mut c = match StopController::new(vocab, stops, Some(&pattern), &Limits::default()) {
            Ok(c) => c,
            Err(StopError::EmptyMatch { .. }) => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("/{pattern}/: {e}"))),
        };
        let dfa = DfaOracle::new(&pattern);
        let mut oracle = StopOracle { dfa: &dfa, text: Vec::new(), barrier: 0, stopped: None };
        let mut shown = Vec::new();
        for token in units.into_iter().flatten() {
            let want = oracle.commit(token, stop_token);
            let (text, stopped) = c.commit_token(token);
            shown.extend_from_slice(text);
            prop_assert_eq!(stopped, oracle.stopped.is_some(), "/{}/", pattern);
            prop_assert_eq!(&shown[..], &oracle.text[..want], "/{}/", pattern);
        }
    }
}
