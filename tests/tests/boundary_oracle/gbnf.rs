//! The random grammars as GBNF (llama.cpp's format): terminals become rules of literals,
//! character classes and operators; sieve's GBNF front end folds the regular ones into
//! lexemes again, so its lexeme boundaries are the ones under test.

use super::render::class_runs;
use super::{Ex, Gram, Re, group, join, rep_suffix};

/// A GBNF string literal.
fn lit(b: &[u8]) -> String {
    let mut s = String::from("\"");
    for &c in b {
        if c == b'"' || c == b'\\' {
            s.push('\\');
        }
        s.push(c as char);
    }
    s.push('"');
    s
}

/// A character class: runs of three or more as ranges, `-` last (a literal there).
fn class(bs: &[u8], out: &mut String) {
    out.push('[');
    let plain: Vec<u8> = bs.iter().copied().filter(|&b| b != b'-').collect();
    class_runs(&plain, |lo, hi| match hi {
        Some(hi) => out.push_str(&format!("{}-{}", lo as char, hi as char)),
        None => out.push(lo as char),
    });
    if bs.contains(&b'-') {
        out.push('-');
    }
    out.push(']');
}

fn re(r: &Re, out: &mut String) {
    let atom = |x: &Re, o: &mut String| {
        let atomic = matches!(x, Re::Lit(_) | Re::Class(_));
        group(o, !atomic, |o| re(x, o));
    };
    match r {
        Re::Lit(b) => out.push_str(&lit(b)),
        Re::Class(bs) if bs.len() == 1 => out.push_str(&lit(bs)),
        Re::Class(bs) => class(bs, out),
        Re::Cat(v) => join(out, v, " ", |x, o| atom(x, o)),
        Re::Alt(v) => join(out, v, " | ", re),
        Re::Rep(x, m, n) => {
            atom(x, out);
            out.push_str(&rep_suffix(*m, *n));
        }
    }
}

impl Gram {
    fn gbnf_ex(&self, e: &Ex, out: &mut String) {
        let atom = |x: &Ex, o: &mut String| {
            let paren = !matches!(x, Ex::Term(_) | Ex::Ref(_));
            group(o, paren, |o| self.gbnf_ex(x, o));
        };
        match e {
            Ex::Term(i) if self.terms[*i].anon => {
                let mut s = String::new();
                re(&self.terms[*i].re, &mut s);
                group(out, true, |o| o.push_str(&s));
            }
            Ex::Term(i) => out.push_str(&format!("t{i}")),
            Ex::Ref(0) => out.push_str("root"),
            Ex::Ref(j) => out.push_str(&format!("r{j}")),
            Ex::Nest(j) => {
                let name = if *j == 0 {
                    "root".into()
                } else {
                    format!("r{j}")
                };
                out.push_str(&format!("\"(\" {name} \")\""));
            }
            Ex::Seq(v) => join(out, v, " ", |x, o| match x {
                Ex::Alt(_) => atom(x, o),
                _ => self.gbnf_ex(x, o),
            }),
            Ex::Alt(v) => join(out, v, " | ", |x, o| self.gbnf_ex(x, o)),
            Ex::Rep(x, m, n) => {
                atom(x, out);
                out.push_str(&rep_suffix(*m, *n));
            }
        }
    }

    /// GBNF text: rule 0 is `root`, the others `r1...`, named terminals `t0...`.
    pub(super) fn to_gbnf(&self) -> String {
        let mut s = String::new();
        for (i, e) in self.rules.iter().enumerate() {
            let name = if i == 0 {
                "root".into()
            } else {
                format!("r{i}")
            };
            s.push_str(&format!("{name} ::= "));
            self.gbnf_ex(e, &mut s);
            s.push('\n');
        }
        for (i, t) in self.terms.iter().enumerate().filter(|(_, t)| !t.anon) {
            s.push_str(&format!("t{i} ::= "));
            re(&t.re, &mut s);
            s.push('\n');
        }
        s
    }
}
