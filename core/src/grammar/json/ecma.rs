//! ECMA-262 patterns (JSON Schema `pattern`, `patternProperties`) as regexes over the
//! *encoded* body of a JSON string.
//!
//! Three steps: (1) [`translate`] rewrites ECMA syntax into `regex-syntax` syntax (ASCII
//! `\d`/`\w`, ECMA `\s` and `.`, literal `{`, class quirks); (2) the pattern is parsed and its
//! top-level alternatives are split at `^`/`$` anchors, turning ECMA's unanchored *search*
//! into a full match with `.*` where unanchored; (3) every character class or literal is
//! rewritten to the union of the JSON spellings of its characters ([`spell_class`]): raw where
//! JSON allows it, the short escape where one exists (`\n`, `\"`, `\/`, ...), `\uXXXX` with
//! hex digits in either case, and a surrogate pair of such escapes beyond the BMP. The regex
//! then matches exactly the encoded bodies whose decoded text the pattern matches, whatever
//! escapes the writer chose. Look-arounds, back-references and inner anchors are reported as
//! unsupported.
//!
//! The same spelling rewrite serves `enum`/`const` strings and literal property keys
//! ([`literal_spellings`]) and the `format` regexes ([`spell_regex`]).

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use regex_syntax::ParserBuilder;
use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look};

use crate::regex::RegexAst;

/// One encoded character of a string body in any JSON spelling: a raw character, a short
/// escape, a `\uXXXX` escape of a non-surrogate, or a surrogate pair of escapes (lone
/// surrogates are rejected, as serde_json rejects them).
pub(crate) const ANY_CHAR: &str = r#"(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u(?:[0-9A-Ca-cEFef][0-9A-Fa-f]{3}|[Dd][0-7][0-9A-Fa-f]{2})|\\u[Dd][89ABab][0-9A-Fa-f]{2}\\u[Dd][C-Fc-f][0-9A-Fa-f]{2})"#;

/// Longest string literal (in characters) spelled every way by [`literal_spellings`]; a
/// longer one keeps its canonical spelling only (a subset, which the caller reports).
pub(crate) const MAX_SPELLED_LITERAL: usize = 4096;

/// Why a pattern cannot be compiled exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// A feature with no regular equivalent here (look-around, back-reference, ...).
    Unsupported(String),
    /// The pattern does not parse.
    Invalid(String),
}

const ECMA_SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";

fn push_escaped_char(out: &mut String, c: char) {
    if c.is_ascii_alphanumeric() || (c as u32) > 0x7F && !c.is_whitespace() {
        out.push(c);
    } else {
        out.push_str(&format!(r"\x{{{:X}}}", c as u32));
    }
}

fn hex_value(s: &[char]) -> Option<u32> {
    let mut v: u32 = 0;
    for c in s {
        v = v.checked_mul(16)?.checked_add(c.to_digit(16)?)?;
    }
    Some(v)
}

/// Parse an escape after `\` at `chars[i]` that denotes one character (shared by classes and
/// atoms). Returns the char and the index after the escape.
fn char_escape(
    chars: &[char],
    i: usize,
    in_class: bool,
) -> Result<Option<(char, usize)>, PatternError> {
    let Some(&c) = chars.get(i) else {
        return Err(PatternError::Invalid("trailing backslash".into()));
    };
    let simple = |ch: char| Ok(Some((ch, i + 1)));
    match c {
        'n' => simple('\n'),
        'r' => simple('\r'),
        't' => simple('\t'),
        'f' => simple('\x0C'),
        'v' => simple('\x0B'),
        'b' if in_class => simple('\x08'),
        '0' if !chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => simple('\0'),
        'c' => match chars.get(i + 1) {
            Some(l) if l.is_ascii_alphabetic() => Ok(Some((char::from((*l as u8) % 32), i + 2))),
            _ => simple('\\'),
        },
        'x' => {
            let h = chars.get(i + 1..i + 3);
            match h.and_then(hex_value) {
                Some(v) => Ok(char::from_u32(v).map(|ch| (ch, i + 3))),
                None => simple('x'),
            }
        }
        'u' => {
            if chars.get(i + 1) == Some(&'{') {
                let end = chars[i + 2..].iter().position(|&ch| ch == '}');
                if let Some(e) = end {
                    let v = hex_value(&chars[i + 2..i + 2 + e]);
                    if let Some(ch) = v.and_then(char::from_u32) {
                        return Ok(Some((ch, i + 3 + e)));
                    }
                }
                return Err(PatternError::Invalid("bad \\u{...} escape".into()));
            }
            match chars.get(i + 1..i + 5).and_then(hex_value) {
                Some(v) => {
                    if (0xD800..0xDC00).contains(&v) {
                        // A surrogate pair written as two escapes.
                        if chars.get(i + 5) == Some(&'\\')
                            && chars.get(i + 6) == Some(&'u')
                            && let Some(lo) = chars.get(i + 7..i + 11).and_then(hex_value)
                            && (0xDC00..0xE000).contains(&lo)
                        {
                            let cp = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                            if let Some(ch) = char::from_u32(cp) {
                                return Ok(Some((ch, i + 11)));
                            }
                        }
                        return Err(PatternError::Unsupported("lone surrogate escape".into()));
                    }
                    match char::from_u32(v) {
                        Some(ch) => Ok(Some((ch, i + 5))),
                        None => Err(PatternError::Unsupported("surrogate escape".into())),
                    }
                }
                None => simple('u'),
            }
        }
        _ if c.is_ascii_alphanumeric() => Ok(None),
        _ => simple(c),
    }
}

/// A shorthand class escape (`\d` ...) as the inside of a bracket class, plus negation.
fn class_shorthand(c: char) -> Option<(&'static str, bool)> {
    match c {
        'd' => Some(("0-9", false)),
        'D' => Some(("0-9", true)),
        'w' => Some(("0-9A-Za-z_", false)),
        'W' => Some(("0-9A-Za-z_", true)),
        's' => Some((ECMA_SPACE, false)),
        'S' => Some((ECMA_SPACE, true)),
        _ => None,
    }
}

/// Is `{` at `chars[i]` the start of a valid quantifier `{n}`, `{n,}` or `{n,m}`?
fn quantifier_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let start = j;
    while chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
        j += 1;
    }
    if j == start {
        return None;
    }
    if chars.get(j) == Some(&',') {
        j += 1;
        while chars.get(j).is_some_and(|c| c.is_ascii_digit()) {
            j += 1;
        }
    }
    (chars.get(j) == Some(&'}')).then_some(j)
}

/// Rewrite an ECMA-262 pattern into `regex-syntax` syntax with the same meaning.
pub(crate) fn translate(src: &str) -> Result<String, PatternError> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut i = 0;
    // Whether the previous token can take a quantifier.
    let mut quantifiable = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                i = translate_escape(&chars, i, &mut out)?;
                quantifiable = true;
            }
            '.' => {
                out.push_str(r"[^\n\r\x{2028}\x{2029}]");
                quantifiable = true;
                i += 1;
            }
            '(' => {
                i = translate_group(&chars, i, &mut out)?;
                quantifiable = false;
            }
            ')' => {
                out.push(')');
                quantifiable = true;
                i += 1;
            }
            '{' => match quantifier_end(&chars, i) {
                Some(e) if quantifiable => {
                    out.extend(&chars[i..=e]);
                    i = e + 1;
                    if chars.get(i) == Some(&'?') {
                        i += 1;
                    }
                }
                _ => {
                    out.push_str(r"\{");
                    i += 1;
                    quantifiable = true;
                }
            },
            '}' => {
                out.push_str(r"\}");
                quantifiable = true;
                i += 1;
            }
            '*' | '+' | '?' => {
                out.push(c);
                i += 1;
                // Lazy quantifiers match the same language.
                if chars.get(i) == Some(&'?') {
                    i += 1;
                }
                quantifiable = false;
            }
            '[' => {
                i = translate_class(&chars, i, &mut out)?;
                quantifiable = true;
            }
            '^' | '$' | '|' => {
                out.push(c);
                quantifiable = false;
                i += 1;
            }
            _ => {
                push_escaped_char(&mut out, c);
                quantifiable = true;
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Translate the escape starting at `chars[i] == '\\'`; returns the index after it.
fn translate_escape(chars: &[char], i: usize, out: &mut String) -> Result<usize, PatternError> {
    let Some(&n) = chars.get(i + 1) else {
        return Err(PatternError::Invalid("trailing backslash".into()));
    };
    if let Some((set, neg)) = class_shorthand(n) {
        out.push_str(if neg { "[^" } else { "[" });
        out.push_str(set);
        out.push(']');
        Ok(i + 2)
    } else if n == 'b' || n == 'B' {
        Err(PatternError::Unsupported(format!("word boundary \\{n}")))
    } else if n.is_ascii_digit() && n != '0' || n == 'k' {
        Err(PatternError::Unsupported("back-reference".into()))
    } else if n == 'p' || n == 'P' {
        let end = chars[i..].iter().position(|&ch| ch == '}');
        let Some(e) = end else {
            return Err(PatternError::Invalid("bad \\p escape".into()));
        };
        out.extend(&chars[i..i + e + 1]);
        Ok(i + e + 1)
    } else {
        match char_escape(chars, i + 1, false)? {
            Some((ch, next)) => {
                push_escaped_char(out, ch);
                Ok(next)
            }
            None => Err(PatternError::Invalid(format!("unknown escape \\{n}"))),
        }
    }
}

/// Translate the group opening at `chars[i] == '('`: capturing, non-capturing, or named
/// (the name dropped); look-around is unsupported. Returns the index after the opening.
fn translate_group(chars: &[char], i: usize, out: &mut String) -> Result<usize, PatternError> {
    if chars.get(i + 1) != Some(&'?') {
        out.push('(');
        return Ok(i + 1);
    }
    match chars.get(i + 2) {
        Some(':') => {
            out.push_str("(?:");
            Ok(i + 3)
        }
        Some('<') if !matches!(chars.get(i + 3), Some('=') | Some('!')) => {
            let end = chars[i..].iter().position(|&ch| ch == '>');
            let Some(e) = end else {
                return Err(PatternError::Invalid("bad group name".into()));
            };
            out.push('(');
            Ok(i + e + 1)
        }
        _ => Err(PatternError::Unsupported("look-around".into())),
    }
}

/// Translate the class starting at `chars[i] == '['`; returns the index after `]`.
fn translate_class(chars: &[char], mut i: usize, out: &mut String) -> Result<usize, PatternError> {
    i += 1;
    let negated = chars.get(i) == Some(&'^');
    if negated {
        i += 1;
    }
    if chars.get(i) == Some(&']') {
        // `[]` matches nothing, `[^]` any character.
        out.push_str(if negated {
            r"[\x{0}-\x{10FFFF}]"
        } else {
            r"[^\x{0}-\x{10FFFF}]"
        });
        return Ok(i + 1);
    }
    out.push_str(if negated { "[^" } else { "[" });
    // Previous single char (range start candidate).
    let mut prev_single = false;
    let mut pending_range = false;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(PatternError::Invalid("unclosed character class".into()));
        };
        if c == ']' {
            if pending_range {
                out.push_str(r"\-");
            }
            out.push(']');
            return Ok(i + 1);
        }
        // Parse one class atom.
        let (atom, single, next): (String, bool, usize) = if c == '\\' {
            let Some(&n) = chars.get(i + 1) else {
                return Err(PatternError::Invalid("trailing backslash".into()));
            };
            if let Some((set, neg)) = class_shorthand(n) {
                let s = if neg {
                    format!("[^{set}]")
                } else {
                    set.to_string()
                };
                (s, false, i + 2)
            } else if n.is_ascii_digit() && n != '0' {
                return Err(PatternError::Unsupported("back-reference in class".into()));
            } else if n == 'p' || n == 'P' {
                let end = chars[i..].iter().position(|&ch| ch == '}');
                let Some(e) = end else {
                    return Err(PatternError::Invalid("bad \\p escape".into()));
                };
                (chars[i..i + e + 1].iter().collect(), false, i + e + 1)
            } else {
                match char_escape(chars, i + 1, true)? {
                    Some((ch, next)) => {
                        let mut s = String::new();
                        push_escaped_char(&mut s, ch);
                        (s, true, next)
                    }
                    None => return Err(PatternError::Invalid(format!("unknown escape \\{n}"))),
                }
            }
        } else if c == '-' && prev_single && !pending_range && chars.get(i + 1) != Some(&']') {
            pending_range = true;
            i += 1;
            continue;
        } else {
            let mut s = String::new();
            push_escaped_char(&mut s, c);
            (s, true, i + 1)
        };
        if pending_range {
            if single {
                out.push('-');
                out.push_str(&atom);
                prev_single = false;
            } else {
                // `[a-\d]`: the hyphen is literal.
                out.push_str(r"\-");
                out.push_str(&atom);
                prev_single = false;
            }
            pending_range = false;
        } else {
            out.push_str(&atom);
            prev_single = single;
        }
        i = next;
    }
}

/// Parse translated pattern text.
fn parse(pattern: &str, nest: u32) -> Result<Hir, PatternError> {
    ParserBuilder::new()
        .utf8(true)
        .unicode(true)
        .nest_limit(nest)
        .build()
        .parse(pattern)
        .map_err(|e| PatternError::Invalid(e.to_string()))
}

/// The short escape of `c`, if JSON has one.
fn short_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '"' => "\\\"",
        '\\' => "\\\\",
        '/' => "\\/",
        '\x08' => "\\b",
        '\x0C' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        _ => return None,
    })
}

/// Characters JSON does not allow raw in a string.
fn specials() -> ClassUnicode {
    ClassUnicode::new([
        ClassUnicodeRange::new('\0', '\x1F'),
        ClassUnicodeRange::new('"', '"'),
        ClassUnicodeRange::new('\\', '\\'),
    ])
}

/// Inclusive code point (or code unit) ranges.
type Ranges = Vec<(u32, u32)>;

/// One hex digit (either letter case) whose value is one of `digits`.
fn hex_digit_class(digits: &[u32]) -> RegexAst {
    let mut set = [0u32; 8];
    for &d in digits {
        let c = char::from_digit(d, 16).unwrap_or('0');
        for b in [c as u8, c.to_ascii_uppercase() as u8] {
            set[usize::from(b / 32)] |= 1 << (b % 32);
        }
    }
    RegexAst::ByteSet(set)
}

/// Exactly `n` hex digits (either case) spelling a value in `ranges` (sorted, disjoint,
/// inclusive, within `0..16^n`). Built digit by digit; first digits whose remainders are the
/// same range list share one branch. The recursion depth is `n <= 4`.
fn hex_ranges(ranges: &[(u32, u32)], n: u32) -> RegexAst {
    if n == 0 {
        return RegexAst::Epsilon;
    }
    let unit = 16u32.pow(n - 1);
    // (remainder ranges, first digits sharing them)
    let mut groups: Vec<(Ranges, Vec<u32>)> = Vec::new();
    for d in 0..16 {
        let base = d * unit;
        let top = base + (unit - 1);
        let sub: Vec<(u32, u32)> = ranges
            .iter()
            .filter(|&&(a, b)| b >= base && a <= top)
            .map(|&(a, b)| (a.max(base) - base, b.min(top) - base))
            .collect();
        if sub.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|g| g.0 == sub) {
            Some(g) => g.1.push(d),
            None => groups.push((sub, alloc::vec![d])),
        }
    }
    let mut alts = Vec::with_capacity(groups.len());
    for (sub, digits) in groups {
        let head = hex_digit_class(&digits);
        let tail = if sub == [(0, unit - 1)] {
            RegexAst::Repeat(
                Box::new(hex_digit_class(&(0..16).collect::<Vec<u32>>())),
                n - 1,
                Some(n - 1),
            )
        } else {
            hex_ranges(&sub, n - 1)
        };
        alts.push(RegexAst::Concat(alloc::vec![head, tail]));
    }
    RegexAst::Or(alts)
}

/// `\u` followed by four hex digits in one of `ranges`.
fn u_escape(ranges: &[(u32, u32)]) -> RegexAst {
    RegexAst::Concat(alloc::vec![RegexAst::literal("\\u"), hex_ranges(ranges, 4)])
}

fn class_contains(cls: &ClassUnicode, c: char) -> bool {
    cls.ranges().iter().any(|r| r.start() <= c && c <= r.end())
}

/// Every JSON spelling of one character of `cls`: raw (when JSON allows it raw), its short
/// escape, `\uXXXX` (hex digits in either case) and, beyond the BMP, a surrogate pair.
pub(crate) fn spell_class(cls: &ClassUnicode) -> RegexAst {
    let mut alts = Vec::new();
    let mut raw = cls.clone();
    raw.difference(&specials());
    if !raw.ranges().is_empty() {
        if raw.ranges().iter().all(|r| r.end().is_ascii()) {
            let mut set = [0u32; 8];
            for r in raw.ranges() {
                for b in (r.start() as u8)..=(r.end() as u8) {
                    set[usize::from(b / 32)] |= 1 << (b % 32);
                }
            }
            alts.push(RegexAst::ByteSet(set));
        } else {
            alts.push(RegexAst::Pattern(
                Hir::class(Class::Unicode(raw)).to_string(),
                Default::default(),
            ));
        }
    }
    for c in ['"', '\\', '/', '\x08', '\x0C', '\n', '\r', '\t'] {
        if class_contains(cls, c)
            && let Some(e) = short_escape(c)
        {
            alts.push(RegexAst::literal(e));
        }
    }
    let mut bmp = Vec::new();
    let mut astral = Vec::new();
    for r in cls.ranges() {
        let (a, b) = (r.start() as u32, r.end() as u32);
        for (lo, hi) in [(0, 0xD7FF), (0xE000, 0xFFFF)] {
            let (x, y) = (a.max(lo), b.min(hi));
            if x <= y {
                bmp.push((x, y));
            }
        }
        let x = a.max(0x10000);
        if x <= b {
            astral.push((x, b));
        }
    }
    if !bmp.is_empty() {
        alts.push(u_escape(&bmp));
    }
    // Surrogate pairs: (high surrogates, low surrogates) pieces of each astral range.
    let split = |v: u32| {
        (
            0xD800 + ((v - 0x10000) >> 10),
            0xDC00 + ((v - 0x10000) & 0x3FF),
        )
    };
    let mut pieces: Vec<((u32, u32), (u32, u32))> = Vec::new();
    for (a, b) in astral {
        let (ha, la) = split(a);
        let (hb, lb) = split(b);
        if ha == hb {
            pieces.push(((ha, ha), (la, lb)));
        } else {
            pieces.push(((ha, ha), (la, 0xDFFF)));
            if ha + 1 < hb {
                pieces.push(((ha + 1, hb - 1), (0xDC00, 0xDFFF)));
            }
            pieces.push(((hb, hb), (0xDC00, lb)));
        }
    }
    // Pieces with the same low range share one branch.
    let mut by_low: Vec<((u32, u32), Ranges)> = Vec::new();
    for (h, l) in pieces {
        match by_low.iter_mut().find(|g| g.0 == l) {
            Some(g) => {
                if let Some(last) = g.1.last_mut()
                    && last.1 + 1 == h.0
                {
                    last.1 = h.1;
                } else {
                    g.1.push(h);
                }
            }
            None => by_low.push((l, alloc::vec![h])),
        }
    }
    for (l, highs) in by_low {
        alts.push(RegexAst::Concat(alloc::vec![
            u_escape(&highs),
            u_escape(&[l])
        ]));
    }
    RegexAst::Or(alts)
}

/// The byte set of one hex digit of value `d`, either letter case.
fn hex_byte(d: u32) -> RegexAst {
    let mut set = [0u32; 8];
    let c = char::from_digit(d, 16).unwrap_or('0');
    for b in [c as u8, c.to_ascii_uppercase() as u8] {
        set[usize::from(b / 32)] |= 1 << (b % 32);
    }
    RegexAst::ByteSet(set)
}

/// `\u` and the four hex digits (either case) of the code unit `u`.
fn u_unit(u: u32, out: &mut Vec<RegexAst>) {
    out.push(RegexAst::literal("\\u"));
    for shift in [12, 8, 4, 0] {
        out.push(hex_byte((u >> shift) & 15));
    }
}

/// Every JSON spelling of the character `c`, built directly (no pattern text to parse: an
/// `enum` of many strings is spelled often, and this is its hot path).
fn char_spellings(c: char) -> RegexAst {
    let mut alts = Vec::with_capacity(3);
    if !(c < ' ' || c == '"' || c == '\\') {
        let mut buf = [0u8; 4];
        alts.push(RegexAst::literal(c.encode_utf8(&mut buf)));
    }
    if let Some(e) = short_escape(c) {
        alts.push(RegexAst::literal(e));
    }
    let mut units = [0u16; 2];
    let mut seq = Vec::with_capacity(10);
    for u in c.encode_utf16(&mut units) {
        u_unit(u32::from(*u), &mut seq);
    }
    alts.push(RegexAst::Concat(seq));
    RegexAst::Or(alts)
}

/// Every JSON spelling of the string body (between the quotes) of `s`, or `None` when `s`
/// has more than [`MAX_SPELLED_LITERAL`] characters.
pub(crate) fn literal_spellings(s: &str) -> Option<RegexAst> {
    if !is_spelled(s) {
        return None;
    }
    Some(RegexAst::Concat(s.chars().map(char_spellings).collect()))
}

/// Is `s` short enough to be spelled every way (at most [`MAX_SPELLED_LITERAL`] characters)?
pub(crate) fn is_spelled(s: &str) -> bool {
    s.len() <= MAX_SPELLED_LITERAL || s.chars().count() <= MAX_SPELLED_LITERAL
}

/// Every JSON spelling (quotes included) of the string `s`, or `None` when too long.
pub(crate) fn quoted_spellings(s: &str) -> Option<RegexAst> {
    let body = literal_spellings(s)?;
    Some(RegexAst::Concat(alloc::vec![
        RegexAst::literal("\""),
        body,
        RegexAst::literal("\"")
    ]))
}

/// Every JSON spelling (quotes included) of any of `strings` (each at most
/// [`MAX_SPELLED_LITERAL`] characters): one tree over the strings' character trie, so
/// common prefixes are spelled once and a derivative looks only at the branches of the
/// current trie node (a 100k-value `enum` as one flat `Or` of per-value spellings cost
/// ~1 s and 370 MB before a size limit). Each character's spelling is built once and shared
/// ([`RegexAst::Shared`]); chains of single-child trie nodes become flat concatenations.
/// Built bottom-up on arrays, without recursion.
pub(crate) fn quoted_set_spellings(strings: &[&str]) -> RegexAst {
    use crate::sync::Arc;
    use hashbrown::HashMap;
    struct TrieNode {
        /// Children by character, sorted when emitted.
        children: Vec<(char, u32)>,
        terminal: bool,
    }
    if strings.is_empty() {
        return RegexAst::Nothing;
    }
    let mut nodes = alloc::vec![TrieNode {
        children: Vec::new(),
        terminal: false,
    }];
    let mut edges: HashMap<(u32, char), u32> = HashMap::new();
    for s in strings {
        let mut at = 0u32;
        for c in s.chars() {
            at = match edges.get(&(at, c)) {
                Some(&next) => next,
                None => {
                    let next = nodes.len() as u32;
                    nodes.push(TrieNode {
                        children: Vec::new(),
                        terminal: false,
                    });
                    if let Some(n) = nodes.get_mut(at as usize) {
                        n.children.push((c, next));
                    }
                    edges.insert((at, c), next);
                    next
                }
            };
        }
        if let Some(n) = nodes.get_mut(at as usize) {
            n.terminal = true;
        }
    }
    drop(edges);
    let mut spelled: HashMap<char, Arc<RegexAst>> = HashMap::new();
    // `seq[n]`: the concatenation matching the rest of the strings below node `n`, as a flat
    // list. Children have larger ids than their parents, so one pass from the last id down
    // sees every child before its parent.
    let mut seq: Vec<Vec<RegexAst>> = (0..nodes.len()).map(|_| Vec::new()).collect();
    for n in (0..nodes.len()).rev() {
        let Some(node) = nodes.get_mut(n) else {
            continue;
        };
        node.children.sort_unstable_by_key(|&(c, _)| c);
        // One branch per child: the child's character, then what follows the child.
        let mut branches: Vec<Vec<RegexAst>> = node
            .children
            .iter()
            .map(|&(c, child)| {
                let spelling = spelled
                    .entry(c)
                    .or_insert_with(|| Arc::new(char_spellings(c)));
                let mut parts = alloc::vec![RegexAst::Shared(Arc::clone(spelling))];
                parts.extend(
                    seq.get_mut(child as usize)
                        .map(core::mem::take)
                        .unwrap_or_default(),
                );
                parts
            })
            .collect();
        let out = if branches.len() == 1 && !node.terminal {
            // A chain continues: stay flat.
            branches.pop().unwrap_or_default()
        } else if branches.is_empty() {
            // A leaf: the empty rest.
            Vec::new()
        } else {
            let mut alts: Vec<RegexAst> = branches.into_iter().map(RegexAst::Concat).collect();
            if node.terminal {
                alts.push(RegexAst::Epsilon);
            }
            alloc::vec![RegexAst::Or(alts)]
        };
        if let Some(slot) = seq.get_mut(n) {
            *slot = out;
        }
    }
    let body = seq.into_iter().next().unwrap_or_default();
    let mut parts = Vec::with_capacity(body.len() + 2);
    parts.push(RegexAst::literal("\""));
    parts.extend(body);
    parts.push(RegexAst::literal("\""));
    RegexAst::Concat(parts)
}

/// Does `v` hold a string or an object key (at any depth) longer than
/// [`MAX_SPELLED_LITERAL`] characters (spelled canonically only)?
pub(crate) fn has_long_string(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    let long = |s: &str| s.len() > MAX_SPELLED_LITERAL && s.chars().count() > MAX_SPELLED_LITERAL;
    let mut stack = alloc::vec![v];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) if long(s) => return true,
            Value::Array(a) => stack.extend(a.iter()),
            Value::Object(o) => {
                if o.keys().any(|k| long(k)) {
                    return true;
                }
                stack.extend(o.values());
            }
            _ => {}
        }
    }
    false
}

/// A `regex-syntax` regex over decoded text (no anchors or look-around) rewritten to match
/// every JSON spelling of the texts it matches, or `None` if it does not parse.
pub(crate) fn spell_regex(text: &str, nest: u32) -> Option<RegexAst> {
    let hir = parse(text, nest).ok()?;
    encode(&hir, 0).ok()
}

/// Rewrite classes and literals to match every JSON spelling of their characters, as a
/// [`RegexAst`] (literals are spelled character by character with [`char_spellings`], classes
/// through [`spell_class`]).
fn encode(h: &Hir, depth: u32) -> Result<RegexAst, PatternError> {
    if depth > 500 {
        return Err(PatternError::Unsupported("pattern nests too deeply".into()));
    }
    Ok(match h.kind() {
        HirKind::Empty => RegexAst::Epsilon,
        HirKind::Literal(lit) => {
            let s = core::str::from_utf8(&lit.0)
                .map_err(|_| PatternError::Unsupported("non-UTF-8 literal".into()))?;
            RegexAst::Concat(s.chars().map(char_spellings).collect())
        }
        HirKind::Class(Class::Unicode(cls)) => spell_class(cls),
        HirKind::Class(Class::Bytes(_)) => {
            return Err(PatternError::Unsupported("byte class".into()));
        }
        HirKind::Look(_) => {
            return Err(PatternError::Unsupported(
                "anchor or look-around inside the pattern".into(),
            ));
        }
        HirKind::Repetition(rep) => {
            RegexAst::Repeat(Box::new(encode(&rep.sub, depth + 1)?), rep.min, rep.max)
        }
        HirKind::Capture(cap) => encode(&cap.sub, depth + 1)?,
        HirKind::Concat(subs) => {
            let mut v = Vec::with_capacity(subs.len());
            for s in subs {
                v.push(encode(s, depth + 1)?);
            }
            RegexAst::Concat(v)
        }
        HirKind::Alternation(subs) => {
            let mut v = Vec::with_capacity(subs.len());
            for s in subs {
                v.push(encode(s, depth + 1)?);
            }
            RegexAst::Or(v)
        }
    })
}

fn is_start(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Look(Look::Start | Look::StartLF))
}

fn is_end(h: &Hir) -> bool {
    matches!(h.kind(), HirKind::Look(Look::End | Look::EndLF))
}

/// Split `h` into top-level alternatives with their anchoring: (start, end, body).
fn split_alternatives(
    h: &Hir,
    out: &mut Vec<(bool, bool, Hir)>,
    depth: u32,
) -> Result<(), PatternError> {
    if depth > 100 {
        return Err(PatternError::Unsupported("pattern nests too deeply".into()));
    }
    match h.kind() {
        HirKind::Alternation(subs) => {
            for s in subs {
                split_alternatives(s, out, depth + 1)?;
            }
        }
        HirKind::Capture(cap) => split_alternatives(&cap.sub, out, depth + 1)?,
        HirKind::Concat(subs) => {
            let lead = subs.iter().take_while(|s| is_start(s)).count();
            let trail = subs[lead..].iter().rev().take_while(|s| is_end(s)).count();
            let body = &subs[lead..subs.len() - trail];
            if body.len() == 1 && (lead > 0 || trail > 0) {
                // `^(a|b)$`: a single group between anchors may hold alternatives.
                let mut inner = Vec::new();
                split_alternatives(&body[0], &mut inner, depth + 1)?;
                for (s, e, b) in inner {
                    out.push((s || lead > 0, e || trail > 0, b));
                }
            } else {
                out.push((lead > 0, trail > 0, Hir::concat(body.to_vec())));
            }
        }
        _ if is_start(h) => out.push((true, false, Hir::empty())),
        _ if is_end(h) => out.push((false, true, Hir::empty())),
        _ => out.push((false, false, h.clone())),
    }
    Ok(())
}

/// `body` with a counted repetition at an unanchored end cut to its minimum: under search
/// semantics `any* r{m,n} any*` is `any* r{m} any*` (a match of `r{k}`, `k >= m`, holds one
/// of `r{m}`, and the rest is `any*`'s), so `[A-Za-z0-9]{1,255}` costs one counter state
/// instead of 255. The same holds for the first factor of an unanchored start and the last
/// factor of an unanchored end of a concatenation, through capture groups.
fn trim_open_ends(body: Hir, start: bool, end: bool) -> Hir {
    fn trim(h: Hir, first: bool, last: bool, depth: u32) -> Hir {
        // A few levels of groups and concatenations are plenty for real patterns; deeper
        // ones keep their counts (still exact, only slower).
        if depth > 4 {
            return h;
        }
        let mut h = h;
        for _ in 0..4 {
            match h.kind() {
                HirKind::Capture(cap) => h = (*cap.sub).clone(),
                HirKind::Repetition(rep) if first || last => {
                    if rep.min == 0 {
                        return Hir::empty();
                    }
                    let mut rep = rep.clone();
                    rep.max = Some(rep.min);
                    return Hir::repetition(rep);
                }
                HirKind::Concat(subs) if !subs.is_empty() => {
                    let mut subs = subs.clone();
                    let n = subs.len();
                    if last && let Some(x) = subs.pop() {
                        subs.push(trim(x, n == 1 && first, true, depth + 1));
                    }
                    if first && n > 1 && !subs.is_empty() {
                        let x = subs.remove(0);
                        subs.insert(0, trim(x, true, false, depth + 1));
                    }
                    return Hir::concat(subs);
                }
                _ => return h,
            }
        }
        h
    }
    if start && end {
        return body;
    }
    trim(body, !start, !end, 0)
}

/// The ECMA `pattern` as a regex over the encoded string body (search semantics).
pub(crate) fn pattern_regex(src: &str, nest: u32) -> Result<RegexAst, PatternError> {
    let text = translate(src)?;
    let hir = parse(&text, nest)?;
    let mut alts = Vec::new();
    split_alternatives(&hir, &mut alts, 0)?;
    let any = RegexAst::Repeat(
        Box::new(RegexAst::Pattern(ANY_CHAR.into(), Default::default())),
        0,
        None,
    );
    // One branch per anchoring, `any* (a|b|...) any*`, not one per alternative: the
    // derivatives of a long unanchored list (`(us-east-1a|us-east-1b|...)`) then hold one
    // `any* (...) any*` item plus the partial matches, instead of one copy of `any*` per
    // alternative.
    let mut groups: [Vec<RegexAst>; 4] = Default::default();
    for (start, end, body) in alts {
        let body = trim_open_ends(body, start, end);
        groups[usize::from(start) * 2 + usize::from(end)].push(encode(&body, 0)?);
    }
    let mut out = Vec::with_capacity(4);
    for (k, mut bodies) in groups.into_iter().enumerate() {
        let (start, end) = (k >= 2, k % 2 == 1);
        let body = match bodies.len() {
            0 => continue,
            1 => bodies.pop().unwrap_or(RegexAst::Nothing),
            _ => RegexAst::Or(bodies),
        };
        let mut parts = Vec::with_capacity(3);
        if !start {
            parts.push(any.clone());
        }
        parts.push(body);
        if !end {
            parts.push(any.clone());
        }
        out.push(RegexAst::Concat(parts));
    }
    Ok(RegexAst::Or(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, body: &str) -> bool {
        let limits = crate::Limits::default();
        let mut set = crate::regex::ExprSet::new(&limits);
        let ast = pattern_regex(pattern, 100).unwrap();
        let e = set.compile(&ast).unwrap();
        let d = set.derivative_bytes(e, body.as_bytes()).unwrap();
        set.is_nullable(d)
    }

    #[test]
    fn translation() {
        assert_eq!(translate(r"\d+").unwrap(), "[0-9]+");
        assert_eq!(translate(r"a{").unwrap(), r"a\{");
        assert!(translate(r"(?=a)").is_err());
        assert!(translate(r"(a)\1").is_err());
    }

    #[test]
    fn search_semantics() {
        assert!(matches("^a+$", "aaa"));
        assert!(!matches("^a+$", "aab"));
        assert!(matches("a+", "xxaxx"));
        assert!(!matches("a+", "xxx"));
        assert!(matches("^ab|cd$", "abzz"));
        assert!(matches("^ab|cd$", "zzcd"));
        assert!(!matches("^ab|cd$", "zabz"));
        assert!(matches(r"^[\w.-]+@x\.com$", "a.b-c@x.com"));
        assert!(matches(r"^\d{3}$", "123"));
        assert!(!matches(r"^\d{3}$", "1234"));
        assert!(matches(r"^[^a]$", "\\\""));
        assert!(matches(r"^.$", "\\t"));
        assert!(!matches(r"^.$", "\\n"));
        assert!(matches(r#"^\"$"#, "\\\""));
        assert!(matches(r"^[{}]+$", "{}"));
        assert!(matches(r"^é+$", "éé"));
    }
}
