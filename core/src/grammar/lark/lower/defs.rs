//! A Lark grammar's definitions, collected in order and checked for second definitions,
//! and its terminals with the ones imported from `common`.

use super::*;

/// The definitions of a parsed grammar in order: rules, terminals (defined or imported from
/// `common`), `%ignore` roots; each name charged and checked for a second definition.
pub(super) struct Defs<'p> {
    pub(super) rules: BTreeMap<String, (usize, &'p Def)>,
    pub(super) rule_order: Vec<&'p Def>,
    /// Terminal name, name span, definition (`None`: imported).
    term_defs: Vec<(String, (usize, usize), Option<&'p Def>)>,
    pub(super) ignores: Vec<usize>,
    imports: Vec<&'p ImportName>,
}

impl<'p> Defs<'p> {
    pub(super) fn collect(
        parsed: &'p Parsed,
        lines: &LineIndex<'_>,
        budget: &mut crate::CompileBudget,
    ) -> LResult<Defs<'p>> {
        let mut defs = Defs {
            rules: BTreeMap::new(),
            rule_order: Vec::new(),
            term_defs: Vec::new(),
            ignores: Vec::new(),
            imports: Vec::new(),
        };
        let mut term_spans: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let duplicate = |name: &str, span: (usize, usize), first: (usize, usize)| {
            let mut e = lines.error(
                GrammarErrorKind::DuplicateDefinition,
                span.0,
                span.1,
                format!("`{name}` is defined twice"),
            );
            e.aux_span = Some(lines.span(first.0, first.1));
            e
        };
        let def_bytes = |name: &str| DEF_BYTES.saturating_add(name.len() * DEF_NAME_COPIES);
        let charge_def = |budget: &mut crate::CompileBudget, name: &str, span: (usize, usize)| {
            budget
                .charge(def_bytes(name))
                .map_err(|k| GrammarError::limit(k).with_span(lines.span(span.0, span.1)))
        };
        for item in &parsed.items {
            match item {
                Item::Rule(def) => {
                    charge_def(budget, &def.name, def.name_span)?;
                    if let Some((i, _)) = defs.rules.get(&def.name) {
                        let first = defs.rule_order[*i].name_span;
                        return Err(duplicate(&def.name, def.name_span, first));
                    }
                    defs.rules
                        .insert(def.name.clone(), (defs.rule_order.len(), def));
                    defs.rule_order.push(def);
                }
                Item::Term(def) => {
                    charge_def(budget, &def.name, def.name_span)?;
                    if let Some(&first) = term_spans.get(&def.name) {
                        return Err(duplicate(&def.name, def.name_span, first));
                    }
                    term_spans.insert(def.name.clone(), def.name_span);
                    defs.term_defs
                        .push((def.name.clone(), def.name_span, Some(def)));
                }
                Item::Ignore(e) => defs.ignores.push(*e),
                Item::Import(names) => {
                    for n in names {
                        charge_def(budget, &n.local, n.span)?;
                        if let Some(&first) = term_spans.get(&n.local) {
                            return Err(duplicate(&n.local, n.span, first));
                        }
                        if !is_terminal_name(&n.local) || !is_terminal_name(&n.name) {
                            return Err(lines.error(
                                GrammarErrorKind::Unsupported,
                                n.span.0,
                                n.span.1,
                                "only terminals can be imported from `common`",
                            ));
                        }
                        term_spans.insert(n.local.clone(), n.span);
                        defs.term_defs.push((n.local.clone(), n.span, None));
                        defs.imports.push(n);
                    }
                }
            }
        }
        Ok(defs)
    }

    /// The terminals, in definition order, with the imported ones' regexes from `common`.
    pub(super) fn terminals<'a, 's>(
        &'a self,
        parsed: &'a Parsed,
        lines: &'a LineIndex<'s>,
        limits: &'a Limits,
    ) -> LResult<Terminals<'a, 's>> {
        let common = if self.imports.is_empty() {
            BTreeMap::new()
        } else {
            common_terminals(&Limits::default())?
        };
        let mut terms = Terminals {
            lines,
            limits,
            index: BTreeMap::new(),
            bodies: Vec::new(),
            names: Vec::new(),
            done: Vec::new(),
            rules: &self.rules,
            parsed,
        };
        let mut import_iter = self.imports.iter();
        for (name, span, def) in &self.term_defs {
            let body = match def {
                Some(def) => TermBody::Source(def),
                None => {
                    let Some(imp) = import_iter.next() else {
                        continue;
                    };
                    let Some(r) = common.get(&imp.name) else {
                        return Err(lines.error(
                            GrammarErrorKind::UndefinedSymbol,
                            span.0,
                            span.1,
                            format!("`common` has no terminal `{}`", imp.name),
                        ));
                    };
                    TermBody::Prebuilt(r.clone(), *span)
                }
            };
            terms.index.insert(name.clone(), terms.bodies.len());
            terms.bodies.push(body);
            terms.names.push(name.clone());
        }
        Ok(terms)
    }
}
