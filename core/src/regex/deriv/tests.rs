use super::*;
use crate::limits::Limits;
use alloc::vec;
use alloc::vec::Vec;

fn set_of(bytes: &[u8]) -> [u32; 8] {
    let mut s = [0u32; 8];
    for &b in bytes {
        s[(b >> 5) as usize] |= 1 << (b & 31);
    }
    s
}

#[test]
fn fifty_unanchored_patterns_are_shown_nonempty_without_a_search() {
    let mut s = ExprSet::new(&Limits::default());
    let any = crate::regex::RegexAst::Repeat(
        alloc::boxed::Box::new(crate::regex::RegexAst::Pattern(
            crate::grammar::json::ecma::ANY_CHAR.into(),
            Default::default(),
        )),
        0,
        None,
    );
    let mut parts = vec![s.compile(&any).unwrap()];
    for i in 0..50 {
        let lit = ["a", "b", "c", "d", "e"][i % 5].repeat(1 + i / 5);
        let ast = crate::grammar::json::ecma::pattern_regex(&lit, 100).unwrap();
        parts.push(s.compile(&ast).unwrap());
    }
    let mut e = s.mk_and(&parts).unwrap();
    assert!(s.is_surely_nonempty(e, 0));
    // And so are its derivatives, through partial matches and escapes.
    for &b in br"aababxbbbb" {
        e = s.derivative(e, b).unwrap();
        assert!(s.is_surely_nonempty(e, 0), "after {}", b as char);
    }
}

#[test]
fn star_separable_shapes() {
    let mut s = ExprSet::new(&Limits::default());
    let mut c = |p: &str| {
        s.compile(&crate::regex::RegexAst::Pattern(
            p.into(),
            Default::default(),
        ))
        .unwrap()
    };
    let floating = [c("[ab]*aa[ab]*"), c("[ab]*bb[ab]*"), c("[ab]*")];
    let prefix = [c("b[ab]*"), c("a[ab]*")];
    let suffix = [c("[ab]*ab"), c("[ab]*ba")];
    let mut and = |xs: &[ExprId]| {
        let e = s.mk_and(xs).unwrap();
        (
            s.is_surely_nonempty(e, 0),
            nonempty_by_bfs(&mut s, e, 200_000),
        )
    };
    let f = floating;
    assert_eq!(and(&[f[0], f[1], f[2]]), (true, true));
    assert_eq!(and(&[f[0], f[1], prefix[0], suffix[0]]), (true, true));
    // Two prefixes (or two suffixes) that disagree: empty, and not claimed.
    assert_eq!(and(&[f[0], prefix[0], prefix[1]]), (false, false));
    assert_eq!(and(&[f[1], suffix[0], suffix[1]]), (false, false));
}

/// Along `walk` from `e` (and at its end): every state the shape rules claim non-empty
/// has a string a breadth-first search finds.
fn claims_hold_along(
    s: &mut ExprSet,
    mut e: ExprId,
    walk: &[u8],
) -> Result<(), proptest::test_runner::TestCaseError> {
    for k in 0..=walk.len() {
        if s.is_surely_nonempty(e, 0) {
            proptest::prop_assert!(nonempty_by_bfs(s, e, 200_000), "{}", s.display(e));
        }
        if let Some(&b) = walk.get(k) {
            e = s.derivative(e, b).unwrap();
        }
    }
    Ok(())
}

proptest::proptest! {
    /// Intersections of `[ab]*`-anchored words and their derivatives: whatever the shape
    /// rules claim non-empty, a breadth-first search finds a string for.
    #[test]
    fn surely_nonempty_agrees_with_a_search(
        parts in proptest::collection::vec(
            (0u8..4, proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just('a'), proptest::strategy::Just('b'),
                proptest::strategy::Just('c')], 0..4)),
            1..5),
        walk in proptest::collection::vec(proptest::prop_oneof![
            proptest::strategy::Just(b'a'), proptest::strategy::Just(b'b'),
            proptest::strategy::Just(b'c')], 0..6),
    ) {
        let mut s = ExprSet::new(&Limits::default());
        let mut xs = Vec::new();
        for (form, word) in &parts {
            let w: alloc::string::String = word.iter().collect();
            let p = match form {
                0 => alloc::format!("[ab]*{w}[ab]*"),
                1 => alloc::format!("{w}[ab]*"),
                2 => alloc::format!("[ab]*{w}"),
                _ => alloc::format!("[ab]*{w}[ab]*|{w}"),
            };
            xs.push(s.compile(&crate::regex::RegexAst::Pattern(p, Default::default())).unwrap());
        }
        let e = s.mk_and(&xs).unwrap();
        claims_hold_along(&mut s, e, &walk)?;
    }
}

proptest::proptest! {
    /// One And/Not-free conjunct minus finite sets of words, and their derivatives:
    /// whatever is claimed non-empty, a search finds a string for; an infinite conjunct
    /// is always claimed.
    #[test]
    fn an_infinite_part_minus_finite_sets_is_nonempty(
        form in 0usize..6,
        excluded in proptest::collection::vec(
            proptest::collection::vec(proptest::prop_oneof![
                proptest::strategy::Just('a'), proptest::strategy::Just('b')], 0..4),
            1..6),
        walk in proptest::collection::vec(proptest::prop_oneof![
            proptest::strategy::Just(b'a'), proptest::strategy::Just(b'b')], 0..4),
    ) {
        let (p, infinite) = [
            ("[ab]*", true), ("a*b", true), ("(?:ab)*a", true), ("a|b(?:ab)*", true),
            ("[ab]{0,3}", false), ("a|bb|", false),
        ][form];
        let mut s = ExprSet::new(&Limits::default());
        let c = |s: &mut ExprSet, p: &str| {
            s.compile(&crate::regex::RegexAst::Pattern(p.into(), Default::default())).unwrap()
        };
        let pos = c(&mut s, p);
        let words: Vec<alloc::string::String> =
            excluded.iter().map(|w| w.iter().collect()).collect();
        let lits = c(&mut s, &words.join("|"));
        let not = s.mk_not(lits).unwrap();
        let e = s.mk_and(&[pos, not]).unwrap();
        if infinite && !s.is_nullable(e) {
            proptest::prop_assert!(s.is_surely_nonempty(e, 0), "{}", s.display(e));
        }
        claims_hold_along(&mut s, e, &walk)?;
    }
}

#[test]
fn basic_derivatives() {
    let mut s = ExprSet::new(&Limits::default());
    let abc = s.mk_literal(b"abc").unwrap();
    let bc = s.mk_literal(b"bc").unwrap();
    assert_eq!(s.derivative(abc, b'a').unwrap(), bc);
    assert_eq!(s.derivative(abc, b'b').unwrap(), ExprId::NOTHING);
    assert!(s.matches(abc, b"abc").unwrap());
    assert!(!s.matches(abc, b"ab").unwrap());
    let a = s.mk_byte(b'a').unwrap();
    let astar = s.mk_repeat(a, 0, None).unwrap();
    assert_eq!(s.derivative(astar, b'a').unwrap(), astar);
    let a3 = s.mk_repeat(a, 2, Some(3)).unwrap();
    assert!(!s.matches(a3, b"a").unwrap());
    assert!(s.matches(a3, b"aa").unwrap());
    assert!(s.matches(a3, b"aaa").unwrap());
    assert!(!s.matches(a3, b"aaaa").unwrap());
    assert_eq!(
        s.derivative(ExprId::ANY_STRING, 7).unwrap(),
        ExprId::ANY_STRING
    );
}

#[test]
fn and_not_emptiness() {
    let mut s = ExprSet::new(&Limits::default());
    let a = s.mk_byte(b'a').unwrap();
    let b = s.mk_byte(b'b').unwrap();
    let astar = s.mk_repeat(a, 0, None).unwrap();
    let ab = s.mk_or(&[a, b]).unwrap();
    let abstar = s.mk_repeat(ab, 0, None).unwrap();
    // a* ⊆ (a|b)*, not the other way.
    assert!(s.is_contained_in(astar, abstar).unwrap());
    assert!(!s.is_contained_in(abstar, astar).unwrap());
    // a+ & b+ is empty but not syntactically NOTHING.
    let aplus = s.mk_repeat(a, 1, None).unwrap();
    let bplus = s.mk_repeat(b, 1, None).unwrap();
    let both = s.mk_and(&[aplus, bplus]).unwrap();
    assert_ne!(both, ExprId::NOTHING);
    assert!(s.has_and_not(both));
    assert!(s.is_empty_language(both).unwrap());
    // ~(a*) contains "b".
    let na = s.mk_not(astar).unwrap();
    assert!(!s.is_empty_language(na).unwrap());
    assert!(s.matches(na, b"b").unwrap());
    assert!(!s.matches(na, b"aaa").unwrap());
    assert!(!s.is_nullable(na));
    // (a|b)* & ~(a*) & ~(b*) is non-empty ("ab").
    let bstar = s.mk_repeat(b, 0, None).unwrap();
    let nb = s.mk_not(bstar).unwrap();
    let mixed = s.mk_and(&[abstar, na, nb]).unwrap();
    assert!(!s.is_empty_language(mixed).unwrap());
    assert!(s.matches(mixed, b"ab").unwrap());
    assert!(!s.matches(mixed, b"bb").unwrap());
    // Even-length a-strings vs. odd-length ones.
    let aa = s.mk_literal(b"aa").unwrap();
    let even = s.mk_repeat(aa, 0, None).unwrap();
    let odd = s.mk_concat(a, even).unwrap();
    let x = s.mk_and(&[even, odd]).unwrap();
    assert!(s.is_empty_language(x).unwrap());
    assert!(s.is_contained_in(even, astar).unwrap());
    assert!(!s.is_contained_in(astar, even).unwrap());
    // first_bytes with And/Not.
    let fb = s.first_bytes(mixed).unwrap();
    assert_eq!(fb, set_of(b"ab"));
    let fb = s.first_bytes(both).unwrap();
    assert_eq!(fb, [0; 8]);
    let fb = s.first_bytes(abstar).unwrap();
    assert_eq!(fb, set_of(b"ab"));
    let fb = s.first_bytes(na).unwrap();
    assert_eq!(fb, [!0u32; 8]);
}

/// `(a+b+){0,3}a+ & [ab]{0,n}` then `c`: a word count intersected with a length, the
/// shape whose lexer states replay witnesses.
fn counted(s: &mut ExprSet, n: u32) -> ExprId {
    let a = s.mk_byte(b'a').unwrap();
    let b = s.mk_byte(b'b').unwrap();
    let ap = s.mk_repeat(a, 1, None).unwrap();
    let bp = s.mk_repeat(b, 1, None).unwrap();
    let word = s.mk_concat(ap, bp).unwrap();
    let words = s.mk_repeat(word, 0, Some(3)).unwrap();
    let pattern = s.mk_concat(words, ap).unwrap();
    let ab = s.mk_or(&[a, b]).unwrap();
    let len = s.mk_repeat(ab, 0, Some(n)).unwrap();
    let both = s.mk_and(&[pattern, len]).unwrap();
    let c = s.mk_byte(b'c').unwrap();
    s.mk_concat(both, c).unwrap()
}

#[test]
fn witness_replay_agrees_with_a_fresh_search() {
    // One store answers every query (witnesses accumulate); each answer is checked
    // against a store that has never found a witness.
    let mut shared = ExprSet::new(&Limits::default());
    let mut strings: Vec<Vec<u8>> = vec![Vec::new()];
    for len in 1..=6 {
        for bits in 0..1u32 << len {
            strings.push(
                (0..len)
                    .map(|i| if bits >> i & 1 == 1 { b'b' } else { b'a' })
                    .collect(),
            );
        }
    }
    let (mut empty, mut live) = (0, 0);
    for n in 0..8 {
        let e = counted(&mut shared, n);
        for text in &strings {
            let d = shared.derivative_bytes(e, text).unwrap();
            let got = shared.is_empty_language(d).unwrap();
            let mut fresh = ExprSet::new(&Limits::default());
            let fe = counted(&mut fresh, n);
            let fd = fresh.derivative_bytes(fe, text).unwrap();
            assert_eq!(got, fresh.is_empty_language(fd).unwrap(), "n={n} {text:?}");
            if got { empty += 1 } else { live += 1 }
        }
    }
    // Both answers occur, and some witness was remembered.
    assert!(empty > 100 && live > 100, "{empty} empty, {live} live");
    assert!(shared.witnesses[0].len > 0);
}

#[test]
fn fuel_runs_out() {
    let mut s = ExprSet::new(&Limits::default());
    let abc = s.mk_literal(b"abcdefgh").unwrap();
    let r = s.mk_repeat(abc, 0, Some(100)).unwrap();
    s.set_fuel(3);
    let mut err = None;
    for &b in b"abcdefgh" {
        if let Err(e) = s.derivative(r, b) {
            err = Some(e);
            break;
        }
    }
    assert_eq!(err, Some(LimitKind::Fuel));
    assert_eq!(s.fuel_left(), 0);
}

#[test]
fn deep_concat_iterative() {
    // 20k-deep chain of nullable items: no recursion anywhere.
    let mut s = ExprSet::new(&Limits::default());
    let a = s.mk_byte(b'a').unwrap();
    let aq = s.mk_repeat(a, 0, Some(1)).unwrap();
    let mut e = ExprId::EPSILON;
    let b = s.mk_byte(b'b').unwrap();
    e = s.mk_concat(b, e).unwrap();
    for _ in 0..1_000 {
        e = s.mk_concat(aq, e).unwrap();
    }
    assert!(s.matches(e, b"aab").unwrap());
    assert!(s.matches(e, b"b").unwrap());
    assert!(!s.matches(e, b"a").unwrap());
    // Much deeper: the derivative has quadratic size, so fuel stops it, but never the
    // Rust stack.
    for _ in 0..50_000 {
        e = s.mk_concat(aq, e).unwrap();
    }
    s.set_fuel(2_000_000);
    assert_eq!(s.derivative(e, b'a'), Err(LimitKind::Fuel));
    // A deep non-nullable chain is linear.
    let mut f = ExprId::EPSILON;
    for _ in 0..100_000 {
        f = s.mk_concat(aq, f).unwrap();
        f = s.mk_concat(b, f).unwrap();
    }
    s.set_fuel(10_000_000);
    let mut input = alloc::vec![b'b'; 100_000];
    assert!(s.matches(f, &input).unwrap());
    input.insert(1, b'a');
    assert!(s.matches(f, &input).unwrap());
    assert!(!s.matches(f, &input[1..]).unwrap());
    let _ = s.display(e);
}
