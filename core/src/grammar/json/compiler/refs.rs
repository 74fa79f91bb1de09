//! `$id` / `$anchor` / `$ref`: the resources and anchors of the input documents, base
//! URIs, and references resolved to a schema and its nonterminal.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::mem::size_of;

use serde_json::{Map, Value};

use crate::error::{GrammarErrorKind, LimitKind};
use crate::grammar::json::JsonOptions;

use super::{Compiler, Job, R, Src, child};

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let h = core::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            if let Some(v) = h {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_string())
}

fn has_scheme(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    for c in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.') {
            return false;
        }
    }
    false
}

/// Minimal RFC 3986 reference resolution (no dot-segment removal).
fn join_uri(base: &str, r: &str) -> String {
    if r.is_empty() {
        return base.to_string();
    }
    if has_scheme(r) || base.is_empty() {
        return r.to_string();
    }
    let base = base.split('#').next().unwrap_or("");
    if let Some(rest) = r.strip_prefix("//") {
        let scheme = base.split(':').next().unwrap_or("");
        return format!("{scheme}://{rest}");
    }
    if r.starts_with('/') {
        if let Some(i) = base.find("://") {
            let after = &base[i + 3..];
            let end = after.find('/').map_or(base.len(), |j| i + 3 + j);
            return format!("{}{r}", &base[..end]);
        }
        return r.to_string();
    }
    if r.starts_with('#') {
        return format!("{base}{r}");
    }
    match base.rfind('/') {
        Some(i) => format!("{}{r}", &base[..=i]),
        None => r.to_string(),
    }
}

impl<'a> Compiler<'a> {
    pub(super) fn collect_ids(&mut self) -> R<()> {
        // Other documents first on the stack, so the root is walked (and registered) first.
        let mut stack: Vec<(&'a Value, String, String)> = Vec::new();
        let opts: &'a JsonOptions = self.opts;
        for (i, (uri, doc)) in opts.documents.iter().enumerate().rev() {
            let base = uri.split('#').next().unwrap_or("").to_string();
            stack.push((doc, format!("@{i}"), base));
        }
        stack.push((self.root, String::new(), String::new()));
        let mut visited = 0usize;
        while let Some((v, ptr, base)) = stack.pop() {
            visited += 1;
            self.spend(1 + ptr.len() as u64 / 16)?;
            // Its children's pointers and bases (pushed below), and its resource or anchor.
            if let Value::Object(m) = v {
                let n = m.len()
                    + m.values()
                        .map(|x| x.as_array().map_or(0, Vec::len))
                        .sum::<usize>();
                self.alloc(
                    n.saturating_mul(
                        2 * (ptr.len() + base.len() + 48) + size_of::<(&Value, String, String)>(),
                    )
                    .saturating_add(4 * (ptr.len() + base.len() + 64)),
                )?;
            }
            if visited > self.limits.max_grammar_size {
                return Err(self.limit_error(LimitKind::GrammarSize, &ptr));
            }
            let Value::Object(m) = v else { continue };
            let mut base = base;
            let id = self.id_of(m);
            if let Some(id) = id {
                if let Some(anchor) = id.strip_prefix('#') {
                    self.anchors.push((format!("{base}#{anchor}"), ptr.clone()));
                } else {
                    let outer = base;
                    if ptr.starts_with('@') && !ptr.contains('/') && !outer.is_empty() {
                        // A document is found by the URI it was given under too.
                        self.resources
                            .push((outer.clone(), ptr.clone(), outer.clone()));
                    }
                    base = join_uri(&outer, id);
                    base = base.split('#').next().unwrap_or("").to_string();
                    self.resources.push((base.clone(), ptr.clone(), outer));
                }
            } else if ptr.is_empty() || (ptr.starts_with('@') && !ptr.contains('/')) {
                self.resources
                    .push((base.clone(), ptr.clone(), base.clone()));
            }
            for k in ["$anchor", "$dynamicAnchor"] {
                if let Some(a) = m.get(k).and_then(Value::as_str) {
                    self.anchors.push((format!("{base}#{a}"), ptr.clone()));
                }
            }
            for (k, sub) in m {
                match k.as_str() {
                    "properties" | "patternProperties" | "$defs" | "definitions"
                    | "dependentSchemas" | "dependencies" => {
                        if let Value::Object(mm) = sub {
                            let p = child(&ptr, k);
                            for (kk, s) in mm {
                                stack.push((s, child(&p, kk), base.clone()));
                            }
                        }
                    }
                    "items" | "prefixItems" | "allOf" | "anyOf" | "oneOf" => match sub {
                        Value::Array(a) => {
                            let p = child(&ptr, k);
                            for (i, s) in a.iter().enumerate() {
                                stack.push((s, format!("{p}/{i}"), base.clone()));
                            }
                        }
                        _ => stack.push((sub, child(&ptr, k), base.clone())),
                    },
                    "additionalProperties"
                    | "additionalItems"
                    | "not"
                    | "if"
                    | "then"
                    | "else"
                    | "contains"
                    | "propertyNames"
                    | "unevaluatedItems"
                    | "unevaluatedProperties" => {
                        stack.push((sub, child(&ptr, k), base.clone()));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The schema at an internal pointer: a JSON pointer into the root, or `@i` followed
    /// by a JSON pointer into `opts.documents[i]`.
    pub(super) fn lookup(&self, p: &str) -> Option<&'a Value> {
        let Some(rest) = p.strip_prefix('@') else {
            return self.root.pointer(p);
        };
        let (index, inner) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let doc = &self.opts.documents.get(index.parse::<usize>().ok()?)?.1;
        doc.pointer(inner)
    }

    fn id_of<'m>(&self, m: &'m Map<String, Value>) -> Option<&'m str> {
        if self.old_ref && m.contains_key("$ref") {
            // Draft 4–7: `$ref` makes every sibling, `$id` too, ignored.
            return None;
        }
        match m.get("$id").and_then(Value::as_str) {
            Some(id) => Some(id),
            None if self.old_id => m.get("id").and_then(Value::as_str),
            None => None,
        }
    }

    pub(super) fn base_of(&self, m: &Map<String, Value>, base: &str) -> String {
        match self.id_of(m) {
            Some(id) if !id.starts_with('#') => {
                let b = join_uri(base, id);
                b.split('#').next().unwrap_or("").to_string()
            }
            _ => base.to_string(),
        }
    }

    /// Resolve a reference to (JSON pointer in the root document, base URI there).
    pub(super) fn resolve(&mut self, r: &str, base: &str, ptr: &str) -> R<(String, String)> {
        let searched = self.resources.len() + self.anchors.len();
        self.spend(1 + searched as u64 + r.len() as u64 / 16)?;
        let (uri, frag) = match r.split_once('#') {
            Some((u, f)) => (u, f),
            None => (r, ""),
        };
        // The resource's location, its base, and the base outside it.
        let (res_ptr, res_base, outer) = if uri.is_empty() {
            let found = self.resources.iter().find(|(u, ..)| u == base);
            match found {
                Some((u, p, outer)) => (p.clone(), u.clone(), outer.clone()),
                None => (String::new(), base.to_string(), String::new()),
            }
        } else {
            let abs = join_uri(base, uri);
            let found = self.resources.iter().find(|(u, ..)| *u == abs).or_else(|| {
                self.resources
                    .iter()
                    .find(|(u, ..)| !u.is_empty() && (u.ends_with(&format!("/{uri}")) || u == uri))
            });
            match found {
                Some((u, p, outer)) => (p.clone(), u.clone(), outer.clone()),
                None => {
                    return Err(self.error(
                        GrammarErrorKind::Unsupported,
                        ptr,
                        &format!("remote reference {r:?} is not supported"),
                    ));
                }
            }
        };
        let frag = percent_decode(frag);
        if frag.is_empty() {
            // Opening the resource applies its `$id` to the base outside it.
            let outer = if outer.is_empty() { res_base } else { outer };
            return Ok((res_ptr, outer));
        }
        if frag.starts_with('/') {
            let inside = format!("{res_ptr}{frag}");
            if self.lookup(&inside).is_none() && self.lookup(&frag).is_some() {
                // Misplaced `$id`s are common: fall back to the document root.
                return Ok((frag, res_base));
            }
            let base = self.base_along(&res_ptr, &frag, res_base);
            return Ok((inside, base));
        }
        let want = format!("{res_base}#{frag}");
        if let Some((_, p)) = self.anchors.iter().find(|(a, _)| *a == want) {
            return Ok((p.clone(), res_base));
        }
        let suffix = format!("#{frag}");
        if let Some((_, p)) = self.anchors.iter().find(|(a, _)| a.ends_with(&suffix)) {
            return Ok((p.clone(), res_base));
        }
        Err(self.error(
            GrammarErrorKind::UndefinedSymbol,
            ptr,
            &format!("reference {r:?} not found"),
        ))
    }

    /// The base URI at `frag` (a JSON pointer) below the resource at `res_ptr`, whose base is
    /// `base`: the `$id`s of the objects passed on the way down apply (the target's own is
    /// applied where it is compiled).
    fn base_along(&self, res_ptr: &str, frag: &str, base: String) -> String {
        let Some(mut cur) = self.lookup(res_ptr) else {
            return base;
        };
        let mut base = base;
        let tokens: Vec<&str> = frag.split('/').skip(1).collect();
        for (i, t) in tokens.iter().enumerate() {
            if i > 0
                && let Value::Object(m) = cur
            {
                base = self.base_of(m, &base);
            }
            let t = t.replace("~1", "/").replace("~0", "~");
            let next = match cur {
                Value::Object(m) => m.get(&t),
                Value::Array(a) => t.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            };
            match next {
                Some(v) => cur = v,
                None => break,
            }
        }
        base
    }

    /// Makes the relative `$ref`s below the keywords `m` (a schema object under `base`)
    /// absolute, so that they keep their targets when `m` is merged into a schema under
    /// another base (see [`Self::flatten`]). `$id`s passed on the way down apply; values
    /// of `const`, `enum`, `default` and `examples` are data and are left alone. An explicit
    /// stack: no recursion on the schema's depth.
    pub(super) fn absolutize_refs(&mut self, m: &mut Map<String, Value>, base: &str) -> R<()> {
        const DATA: [&str; 4] = ["const", "enum", "default", "examples"];
        let mut stack: Vec<(&mut Value, String)> = Vec::new();
        for (k, v) in m.iter_mut() {
            if !DATA.contains(&k.as_str()) {
                stack.push((v, base.to_string()));
            }
        }
        while let Some((v, b)) = stack.pop() {
            self.spend(1)?;
            match v {
                Value::Object(m) => {
                    let b = self.base_of(m, &b);
                    if let Some(Value::String(r)) = m.get_mut("$ref")
                        && !has_scheme(r)
                    {
                        let abs = join_uri(&b, r);
                        self.alloc(abs.len())?;
                        *r = abs;
                    }
                    for (k, x) in m.iter_mut() {
                        if !DATA.contains(&k.as_str()) {
                            stack.push((x, b.clone()));
                        }
                    }
                }
                Value::Array(a) => stack.extend(a.iter_mut().map(|x| (x, b.clone()))),
                _ => {}
            }
        }
        Ok(())
    }

    pub(super) fn ref_target(
        &mut self,
        r: &str,
        base: &str,
        ptr: &str,
    ) -> R<(&'a Value, String, String)> {
        let (p, b) = self.resolve(r, base, ptr)?;
        match self.lookup(&p) {
            Some(v) => Ok((v, p, b)),
            None => Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            )),
        }
    }

    pub(super) fn ref_nt(&mut self, r: &str, base: &str, ptr: &str) -> R<u32> {
        let (p, b) = self.resolve(r, base, ptr)?;
        if let Some(&nt) = self.ref_nts.get(&p) {
            return Ok(nt);
        }
        if self.lookup(&p).is_none() {
            return Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            ));
        }
        let Some(target) = self.lookup(&p) else {
            return Err(self.error(
                GrammarErrorKind::UndefinedSymbol,
                ptr,
                &format!("reference {r:?} not found"),
            ));
        };
        let nt = self.nt(&format!("ref:{p}"))?;
        self.ref_nts.insert(p.clone(), nt);
        self.work.push(Job {
            nt,
            src: Src::At(target),
            ptr: p,
            base: b,
            depth: 0,
        });
        Ok(nt)
    }
}
