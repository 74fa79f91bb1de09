//! The random grammars as text: regexes (`regex-syntax`), Lark, and XGrammar structural tags.

use serde_json::{Value, json};
use sieve_tests::Rng;

use super::{Ex, Gram, Re, Terminal};

/// `x{m,n}`.
pub(super) fn rep(x: Re, m: u32, n: Option<u32>) -> Re {
    Re::Rep(Box::new(x), m, n)
}

pub(super) fn rep_suffix(m: u32, n: Option<u32>) -> String {
    match (m, n) {
        (0, Some(1)) => "?".into(),
        (0, None) => "*".into(),
        (1, None) => "+".into(),
        (m, None) => format!("{{{m},}}"),
        (m, Some(n)) if m == n => format!("{{{m}}}"),
        (m, Some(n)) => format!("{{{m},{n}}}"),
    }
}

pub(super) fn regex_byte(out: &mut String, b: u8) {
    if !b.is_ascii_alphanumeric() {
        out.push('\\');
    }
    out.push(b as char);
}

/// A class, runs of three or more consecutive bytes as ranges.
pub(super) fn regex_class(out: &mut String, bs: &[u8]) {
    out.push('[');
    class_runs(bs, |lo, hi| match hi {
        Some(hi) => {
            regex_byte(out, lo);
            out.push('-');
            regex_byte(out, hi);
        }
        None => regex_byte(out, lo),
    });
    out.push(']');
}

/// The bytes of an ascending class in order: `f(lo, Some(hi))` for a run of three or more
/// consecutive bytes, `f(b, None)` for each other byte.
pub(super) fn class_runs(bs: &[u8], mut f: impl FnMut(u8, Option<u8>)) {
    let mut i = 0;
    while i < bs.len() {
        let j = (i..bs.len())
            .take_while(|&j| bs[j] - bs[i] == (j - i) as u8)
            .last()
            .unwrap_or(i);
        if j >= i + 2 {
            f(bs[i], Some(bs[j]));
        } else {
            bs[i..=j].iter().for_each(|&b| f(b, None));
        }
        i = j + 1;
    }
}

/// Each of `v` printed by `f`, with `sep` between them.
pub(super) fn join<T>(out: &mut String, v: &[T], sep: &str, mut f: impl FnMut(&T, &mut String)) {
    for (i, x) in v.iter().enumerate() {
        out.push_str(if i > 0 { sep } else { "" });
        f(x, out);
    }
}

/// `f(out)` in parentheses when `paren`.
pub(super) fn group(out: &mut String, paren: bool, f: impl FnOnce(&mut String)) {
    out.push_str(if paren { "(" } else { "" });
    f(out);
    out.push_str(if paren { ")" } else { "" });
}

/// `r` in `regex-syntax` syntax.
pub(super) fn regex(r: &Re, out: &mut String) {
    match r {
        Re::Lit(b) => b.iter().for_each(|&c| regex_byte(out, c)),
        Re::Class(bs) => regex_class(out, bs),
        Re::Cat(v) => join(out, v, "", |x, o| {
            group(o, matches!(x, Re::Alt(_)), |o| regex(x, o));
        }),
        Re::Alt(v) => join(out, v, "|", regex),
        Re::Rep(x, m, n) => {
            let atomic = matches!(&**x, Re::Class(_) | Re::Lit(_))
                && !matches!(&**x, Re::Lit(b) if b.len() > 1);
            group(out, !atomic, |o| regex(x, o));
            out.push_str(&rep_suffix(*m, *n));
        }
    }
}

pub(super) fn regex_string(r: &Re) -> String {
    let mut s = String::new();
    regex(r, &mut s);
    s
}

pub(super) fn lark_lit(b: &[u8]) -> String {
    format!("\"{}\"", String::from_utf8_lossy(b))
}

/// `r` with Lark's terminal operators (`"a" | "b"`, `"0".."2"`, `x{1,2}`).
pub(super) fn lark_re(r: &Re, out: &mut String) {
    match r {
        Re::Lit(b) => out.push_str(&lark_lit(b)),
        Re::Class(bs) if bs.len() == 1 => out.push_str(&lark_lit(bs)),
        Re::Class(bs) if bs[bs.len() - 1] - bs[0] == bs.len() as u8 - 1 => {
            out.push_str(&format!(
                "\"{}\"..\"{}\"",
                bs[0] as char,
                bs[bs.len() - 1] as char
            ));
        }
        Re::Class(bs) => {
            out.push('/');
            regex_class(out, bs);
            out.push('/');
        }
        Re::Cat(v) => join(out, v, " ", lark_re_atom),
        Re::Alt(v) => join(out, v, " | ", lark_re),
        Re::Rep(x, m, n) => {
            lark_re_atom(x, out);
            out.push_str(&rep_suffix(*m, *n));
        }
    }
}

pub(super) fn lark_re_atom(r: &Re, out: &mut String) {
    let atomic = matches!(r, Re::Lit(_)) || matches!(r, Re::Class(bs) if bs.len() == 1);
    group(out, !atomic, |o| lark_re(r, o));
}

impl Gram {
    fn rule_name(&self, i: usize, start_named: bool) -> String {
        if i == 0 && start_named {
            "start".into()
        } else {
            format!("r{i}")
        }
    }

    /// The literal of an inline literal terminal.
    fn anon_lit(&self, e: &Ex) -> Option<String> {
        match e {
            Ex::Term(i) => match &self.terms[*i] {
                Terminal {
                    re: Re::Lit(b),
                    anon: true,
                    ..
                } => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            },
            _ => None,
        }
    }

    fn lark_ex(&self, e: &Ex, start_named: bool, out: &mut String) {
        let atom = |x: &Ex, o: &mut String| {
            let paren = !matches!(x, Ex::Term(_) | Ex::Ref(_));
            group(o, paren, |o| self.lark_ex(x, start_named, o));
        };
        match e {
            Ex::Term(i) => match (&self.terms[*i], self.anon_lit(e)) {
                (_, Some(lit)) => out.push_str(&format!("\"{lit}\"")),
                (t, None) if t.anon => out.push_str(&format!("/{}/", regex_string(&t.re))),
                _ => out.push_str(&format!("T{i}")),
            },
            Ex::Ref(j) => out.push_str(&self.rule_name(*j, start_named)),
            Ex::Nest(j) => {
                out.push_str(&format!("\"(\" {} \")\"", self.rule_name(*j, start_named)))
            }
            Ex::Seq(v) => join(out, v, " ", |x, o| match x {
                Ex::Alt(_) => atom(x, o),
                _ => self.lark_ex(x, start_named, o),
            }),
            Ex::Alt(v) => join(out, v, " | ", |x, o| self.lark_ex(x, start_named, o)),
            Ex::Rep(x, 0, Some(1)) if matches!(&**x, Ex::Seq(_)) => {
                out.push('[');
                self.lark_ex(x, start_named, out);
                out.push(']');
            }
            Ex::Rep(x, m, n) => {
                atom(x, out);
                out.push_str(&match (*m, *n) {
                    (0, Some(1)) | (_, None) => rep_suffix(*m, *n),
                    (m, Some(n)) if m == n => format!(" ~ {m}"),
                    (m, Some(n)) => format!(" ~ {m}..{n}"),
                });
            }
        }
    }

    /// Lark text: rule 0 is `start`, or (`root` given) `start: root` and the rules `r0...`.
    pub(super) fn to_lark(&self, root: Option<&Ex>) -> String {
        let start_named = root.is_none();
        let mut s = String::new();
        if let Some(e) = root {
            s.push_str("start: ");
            self.lark_ex(e, false, &mut s);
            s.push('\n');
        }
        for (i, e) in self.rules.iter().enumerate() {
            s.push_str(&format!("{}: ", self.rule_name(i, start_named)));
            self.lark_ex(e, start_named, &mut s);
            s.push('\n');
        }
        for (i, t) in self.terms.iter().enumerate().filter(|(_, t)| !t.anon) {
            s.push_str(&format!("T{i}: "));
            if t.ebnf {
                lark_re(&t.re, &mut s);
            } else {
                s.push_str(&format!("/{}/", regex_string(&t.re)));
            }
            s.push('\n');
        }
        s
    }

    /// The structural tag: `rng` picks among equivalent renderings.
    pub(super) fn to_structural(&self, rng: &mut Rng) -> String {
        let format = self.format(&self.rules[0], rng);
        json!({"type": "structural_tag", "format": format}).to_string()
    }

    fn grammar_format(&self, root: &Ex) -> Value {
        json!({"type": "grammar", "grammar": self.to_lark(Some(root))})
    }

    fn format(&self, e: &Ex, rng: &mut Rng) -> Value {
        if !matches!(e, Ex::Term(_)) && rng.below(8) == 0 {
            return self.grammar_format(e);
        }
        let all = |v: &[Ex], rng: &mut Rng| -> Vec<Value> {
            v.iter().map(|x| self.format(x, rng)).collect()
        };
        match e {
            Ex::Term(i) => match self.anon_lit(e) {
                Some(lit) => json!({"type": "const_string", "value": lit}),
                None => json!({"type": "regex", "pattern": regex_string(&self.terms[*i].re)}),
            },
            Ex::Ref(j) => self.format(&self.rules[*j], rng),
            Ex::Nest(j) => json!({
                "type": "tag",
                "begin": "(",
                "content": self.grammar_format(&Ex::Ref(*j)),
                "end": ")",
            }),
            Ex::Seq(v) => {
                if let (true, Some(begin), Some(end)) = (
                    v.len() >= 3,
                    self.anon_lit(&v[0]),
                    self.anon_lit(&v[v.len() - 1]),
                ) {
                    let mid = &v[1..v.len() - 1];
                    let content = if mid.len() == 1 {
                        self.format(&mid[0], rng)
                    } else {
                        json!({"type": "sequence", "elements": all(mid, rng)})
                    };
                    let end = [json!(end.clone()), json!([end])][rng.below(2)].clone();
                    return json!({"type": "tag", "begin": begin, "content": content, "end": end});
                }
                json!({"type": "sequence", "elements": all(v, rng)})
            }
            Ex::Alt(v) => json!({"type": "or", "elements": all(v, rng)}),
            Ex::Rep(x, m, n) => {
                let content = self.format(x, rng);
                match (*m, *n) {
                    (0, Some(1)) => json!({"type": "optional", "content": content}),
                    (0, None) if rng.below(2) == 0 => json!({"type": "star", "content": content}),
                    (1, None) if rng.below(2) == 0 => json!({"type": "plus", "content": content}),
                    (m, n) => json!({
                        "type": "repeat",
                        "min": m,
                        "max": n.map_or(-1, i64::from),
                        "content": content,
                    }),
                }
            }
        }
    }
}
