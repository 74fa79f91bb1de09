//! Tests of the Lark front end: IR shapes, error kinds and positions, limits, and
//! no-panic fuzzing.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::{NoSpecialTokens, SpecialTokens};
use crate::error::{GrammarError, GrammarErrorKind, LimitKind};
use crate::ir::{GrammarIr, IrSymbol, LexemeMode};
use crate::regex::{PatternFlags, RegexAst};
use crate::{CompileBudget, Limits};

/// [`super::parse`] with a fresh budget.
fn parse(
    src: &str,
    specials: &dyn SpecialTokens,
    limits: &Limits,
) -> Result<GrammarIr, GrammarError> {
    super::parse(src, specials, limits, &mut CompileBudget::new(limits))
}

fn ok(src: &str) -> GrammarIr {
    match parse(src, &NoSpecialTokens, &Limits::default()) {
        Ok(ir) => ir,
        Err(e) => panic!("unexpected error {e} ({:?}) in\n{src}", e.kind),
    }
}

/// `src` lowered with the test's special (and by-id text) tokens, [`Specials`].
fn ok_specials(src: &str) -> GrammarIr {
    match parse(src, &Specials, &Limits::default()) {
        Ok(ir) => ir,
        Err(e) => panic!("unexpected error {e} ({:?}) in\n{src}", e.kind),
    }
}

/// The error lowering `src` with [`Specials`] ends in.
fn err_specials(src: &str) -> GrammarError {
    match parse(src, &Specials, &Limits::default()) {
        Ok(ir) => panic!("expected an error, got {ir:?}"),
        Err(e) => e,
    }
}

fn err(src: &str) -> GrammarError {
    err_with(src, &Limits::default())
}

fn err_with(src: &str, limits: &Limits) -> GrammarError {
    match parse(src, &NoSpecialTokens, limits) {
        Ok(ir) => panic!("expected an error, got {ir:?}"),
        Err(e) => e,
    }
}

fn nt(ir: &GrammarIr, name: &str) -> u32 {
    let i = ir.nonterminals.iter().position(|n| n.name == name);
    match i {
        Some(i) => i as u32,
        None => panic!("no nonterminal {name}"),
    }
}

fn lexeme(ir: &GrammarIr, name: &str) -> u32 {
    let i = ir.lexemes.iter().position(|l| l.name == name);
    match i {
        Some(i) => i as u32,
        None => panic!("no lexeme {name}: {:?}", ir.lexemes),
    }
}

fn rules_of(ir: &GrammarIr, lhs: u32) -> Vec<Vec<IrSymbol>> {
    ir.rules
        .iter()
        .filter(|r| r.lhs == lhs)
        .map(|r| r.rhs.clone())
        .collect()
}

/// Render a rule right-hand side with names, for readable assertions.
fn show(ir: &GrammarIr, rhs: &[IrSymbol]) -> String {
    let parts: Vec<String> = rhs
        .iter()
        .map(|s| match s {
            IrSymbol::Nonterminal(i) => ir.nonterminals[*i as usize].name.clone(),
            IrSymbol::Lexeme(i) => ir.lexemes[*i as usize].name.clone(),
        })
        .collect();
    parts.join(" ")
}

fn shown_rules(ir: &GrammarIr, name: &str) -> Vec<String> {
    rules_of(ir, nt(ir, name))
        .iter()
        .map(|r| show(ir, r))
        .collect()
}

/// Every referenced nonterminal has a rule; ids are in range.
fn check_invariants(ir: &GrammarIr) {
    assert!((ir.start as usize) < ir.nonterminals.len());
    for r in &ir.rules {
        assert!((r.lhs as usize) < ir.nonterminals.len());
        for s in &r.rhs {
            match s {
                IrSymbol::Nonterminal(i) => {
                    assert!(ir.rules.iter().any(|q| q.lhs == *i), "no rule for {i}");
                }
                IrSymbol::Lexeme(i) => {
                    let l = &ir.lexemes[*i as usize];
                    assert!(!l.ignore, "rule uses an ignore lexeme");
                }
            }
        }
    }
}

const JSON: &str = r#"
?start: value

?value: object
      | array
      | string
      | SIGNED_NUMBER      -> number
      | "true"             -> true
      | "false"            -> false
      | "null"             -> null

array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value

string : ESCAPED_STRING

%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"#;

#[test]
fn json_grammar() {
    let ir = ok(JSON);
    check_invariants(&ir);
    assert_eq!(ir.nonterminals[ir.start as usize].name, "start");
    // "true" "false" "null" "[" "]" "," "{" "}" ":" + 2 terminals + ignore.
    assert_eq!(ir.lexemes.len(), 12, "{:?}", ir.lexemes);
    assert_eq!(ir.lexemes.iter().filter(|l| l.ignore).count(), 1);
    assert_eq!(shown_rules(&ir, "start"), vec!["value"]);
    assert_eq!(
        shown_rules(&ir, "value"),
        vec![
            "object",
            "array",
            "string",
            "SIGNED_NUMBER",
            "\"true\"",
            "\"false\"",
            "\"null\""
        ]
    );
    let array = shown_rules(&ir, "array");
    assert_eq!(array.len(), 1);
    assert!(array[0].starts_with("\"[\" "), "{array:?}");
    // `","` is one lexeme shared by array and object.
    let commas = ir.lexemes.iter().filter(|l| l.name == "\",\"").count();
    assert_eq!(commas, 1);
    let ws = &ir.lexemes[ir.lexemes.len() - 1];
    assert!(ws.ignore);
    assert_eq!(ws.name, "%ignore WS");
}

#[test]
fn arithmetic_left_recursion() {
    let ir = ok(r#"
start: expr
expr: expr "+" term | expr "-" term | term
term: term "*" factor | term "/" factor | factor
factor: NUMBER | "(" expr ")" | "-" factor
NUMBER: /[0-9]+/
%ignore " "
"#);
    check_invariants(&ir);
    assert_eq!(
        shown_rules(&ir, "expr"),
        vec!["expr \"+\" term", "expr \"-\" term", "term"]
    );
    assert_eq!(
        shown_rules(&ir, "factor"),
        vec!["NUMBER", "\"(\" expr \")\"", "\"-\" factor"]
    );
    // + - * / ( ) NUMBER, "-" shared, plus the ignore lexeme.
    assert_eq!(ir.lexemes.len(), 8);
    let num = &ir.lexemes[lexeme(&ir, "NUMBER") as usize];
    assert_eq!(
        num.regex,
        RegexAst::Pattern("[0-9]+".to_string(), PatternFlags::default())
    );
    assert_eq!(num.mode, LexemeMode::Greedy);
}

#[test]
fn c_like_language() {
    let ir = ok(r#"
// A tiny C-like language.
start: function+
function: type CNAME "(" [param ("," param)*] ")" block
param: type CNAME
?type: "int" | "void" | "char" "*"?
block: "{" statement* "}"
statement: "return" expr? ";"
         | type CNAME ["=" expr] ";"
         | "if" "(" expr ")" statement ("else" statement)?
         | "while" "(" expr ")" statement
         | block
         | expr ";"
expr: expr _binop atom | atom
_binop: "+" | "-" | "==" | "<"
atom: CNAME | INT | CNAME "(" [expr ("," expr)*] ")" | "(" expr ")"
%import common (CNAME, INT, WS, C_COMMENT, CPP_COMMENT)
%ignore WS
%ignore C_COMMENT | CPP_COMMENT
"#);
    check_invariants(&ir);
    let ignore: Vec<_> = ir.lexemes.iter().filter(|l| l.ignore).collect();
    assert_eq!(ignore.len(), 1);
    match &ignore[0].regex {
        RegexAst::Or(parts) => assert_eq!(parts.len(), 2),
        other => panic!("{other:?}"),
    }
    // C_COMMENT and CPP_COMMENT are only ignored, never lexemes of their own.
    assert!(!ir.lexemes.iter().any(|l| l.name == "C_COMMENT"));
    assert_eq!(shown_rules(&ir, "function").len(), 1);
    assert_eq!(shown_rules(&ir, "statement").len(), 6);
    let start = shown_rules(&ir, "start");
    assert_eq!(start, vec!["function_plus_1"]);
    assert_eq!(
        shown_rules(&ir, "function_plus_1"),
        vec!["function", "function_plus_1 function"]
    );
    assert_eq!(
        shown_rules(&ir, "block"),
        vec![format!(
            "\"{{\" statement_star_{} \"}}\"",
            find_suffix(&ir, "statement_star_")
        )]
    );
}

fn find_suffix(ir: &GrammarIr, prefix: &str) -> String {
    for n in &ir.nonterminals {
        if let Some(rest) = n.name.strip_prefix(prefix) {
            return rest.to_string();
        }
    }
    panic!("no nonterminal starting with {prefix}")
}

#[test]
fn operators_lower_to_helpers() {
    let ir = ok(
        "start: a* b+ c? [d] \"x\"~2 \"y\"~1..3 \"z\"{2,} \"w\"{0,2}\na: \"a\"\nb: \"b\"\nc: \"c\"\nd: \"d\"",
    );
    check_invariants(&ir);
    let start = shown_rules(&ir, "start");
    assert_eq!(start.len(), 1);
    let parts: Vec<&str> = start[0].split(' ').collect();
    assert_eq!(parts[0], "a_star_1");
    assert_eq!(parts[1], "b_plus_2");
    assert!(parts[2].starts_with("c_opt_"));
    assert!(parts[3].starts_with("d_opt_"));
    // "x"~2 → x x; "y"~1..3 → y tail2; "z"{2,} → z z_plus; "w"{0,2} → tail2.
    assert_eq!(&parts[4..6], &["\"x\"", "\"x\""]);
    assert_eq!(parts[6], "\"y\"");
    assert!(parts[7].starts_with("start_rep_"), "{parts:?}");
    assert_eq!(parts[8], "\"z\"");
    assert!(parts[9].starts_with("start_plus_"));
    assert!(parts[10].starts_with("start_rep_"));
    assert_eq!(parts.len(), 11);
    assert_eq!(shown_rules(&ir, "a_star_1"), vec!["", "a_star_1 a"]);
    assert_eq!(shown_rules(&ir, "b_plus_2"), vec!["b", "b_plus_2 b"]);
    assert_eq!(shown_rules(&ir, parts[2]), vec!["", "c"]);
    let tail = shown_rules(&ir, parts[7]);
    assert_eq!(tail.len(), 2);
    assert_eq!(tail[0], "");
    assert!(tail[1].starts_with("\"y\" start_rep_"));
}

#[test]
fn helpers_are_shared_and_names_unique() {
    let ir = ok("start: x* x* (x | y) (x | y)\nx_star_1: \"q\"\nx: \"x\"\ny: \"y\"");
    check_invariants(&ir);
    let start = shown_rules(&ir, "start");
    let parts: Vec<&str> = start[0].split(' ').collect();
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0], parts[1]);
    assert_eq!(parts[2], parts[3]);
    assert_ne!(parts[0], "x_star_1", "helper must not reuse a user name");
    let mut names: Vec<_> = ir.nonterminals.iter().map(|n| n.name.clone()).collect();
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len());
}

#[test]
fn groups_and_empty_alternatives() {
    let ir = ok("start: \"a\" (\"b\" \"c\") | \n  | (\"d\" | \"e\") \"f\"\n");
    check_invariants(&ir);
    let s = shown_rules(&ir, "start");
    assert_eq!(s.len(), 3);
    assert_eq!(s[0], "\"a\" \"b\" \"c\"");
    assert_eq!(s[1], "");
    assert!(s[2].starts_with("start_group_"));
    let ir = ok("start: \"x\" |");
    assert_eq!(shown_rules(&ir, "start"), vec!["\"x\"", ""]);
    let ir = ok("start:");
    assert_eq!(shown_rules(&ir, "start"), vec![""]);
}

#[test]
fn continuation_lines_and_comments() {
    let ir = ok(
        "start: a // comment\n  // only a comment\n\n  | b # hash comment\na: \"a\"\nb: \"b\"\n",
    );
    assert_eq!(shown_rules(&ir, "start"), vec!["a", "b"]);
    // Newlines inside groups are insignificant.
    let ir = ok("start: (\"a\"\n  \"b\"\n | \"c\")\n");
    assert_eq!(shown_rules(&ir, "start"), vec!["\"a\" \"b\"", "\"c\""]);
}

#[test]
fn literals_dedupe_and_flags() {
    let ir =
        ok(r#"start: "ab" "ab" "ab"i /x+/ /x+/ /x+/i "a".."f" "\n\t\x41\u00e9\U0001F600\"\\""#);
    check_invariants(&ir);
    assert_eq!(ir.lexemes.len(), 6);
    assert_eq!(ir.lexemes[0].regex, RegexAst::literal("ab"));
    let ci = PatternFlags {
        case_insensitive: true,
        ..PatternFlags::default()
    };
    assert_eq!(ir.lexemes[1].regex, RegexAst::Pattern("ab".into(), ci));
    assert_eq!(
        ir.lexemes[2].regex,
        RegexAst::Pattern("x+".into(), PatternFlags::default())
    );
    assert_eq!(ir.lexemes[3].regex, RegexAst::Pattern("x+".into(), ci));
    assert_eq!(
        ir.lexemes[4].regex,
        RegexAst::Pattern("[\\x{61}-\\x{66}]".into(), PatternFlags::default())
    );
    assert_eq!(
        ir.lexemes[5].regex,
        RegexAst::literal("\n\tA\u{e9}\u{1F600}\"\\")
    );
    assert_eq!(ir.lexemes[2].name, "/x+/");
    // Regex escapes: `\/` is a slash; other escapes pass through.
    let ir = ok(r"start: /a\/b\d\\/smx");
    let flags = PatternFlags {
        case_insensitive: false,
        dot_matches_new_line: true,
        ignore_whitespace: true,
        multi_line: true,
    };
    assert_eq!(
        ir.lexemes[0].regex,
        RegexAst::Pattern(r"a/b\d\\".into(), flags)
    );
}

#[test]
fn terminals_inline_and_compose() {
    let ir = ok(r#"
start: ID | KW
ID: LETTER (LETTER | DIGIT)* | "_"~2..3
KW.2: "if" | "else"
LETTER: "a".."z"
DIGIT: /[0-9]/
"#);
    check_invariants(&ir);
    // Only terminals used in rules are lexemes.
    assert_eq!(ir.lexemes.len(), 2);
    let id = &ir.lexemes[lexeme(&ir, "ID") as usize];
    let letter = RegexAst::Pattern("[\\x{61}-\\x{7A}]".into(), PatternFlags::default());
    let digit = RegexAst::Pattern("[0-9]".into(), PatternFlags::default());
    let expected = RegexAst::Or(vec![
        RegexAst::Concat(vec![
            letter.clone(),
            RegexAst::Repeat(Box::new(RegexAst::Or(vec![letter, digit])), 0, None),
        ]),
        RegexAst::Repeat(Box::new(RegexAst::literal("_")), 2, Some(3)),
    ]);
    assert_eq!(id.regex, expected);
    let kw = &ir.lexemes[lexeme(&ir, "KW") as usize];
    assert_eq!(
        kw.regex,
        RegexAst::Or(vec![RegexAst::literal("if"), RegexAst::literal("else")])
    );
    // A terminal used twice is one lexeme.
    let ir = ok("start: A A b\nb: A\nA: \"a\"");
    assert_eq!(ir.lexemes.len(), 1);
}

#[test]
fn terminal_chains_flatten() {
    let mut src = String::from("start: T0\n");
    for i in 0..1000 {
        src.push_str(&format!("T{i}: T{} \"x\"\n", i + 1));
    }
    src.push_str("T1000: \"y\"\n");
    let ir = ok(&src);
    // Small terminals are copied (the first 16 links splice into one sequence), larger
    // ones are shared: the lexeme is a chain of `Shared` nodes, not 1000 copies.
    let mut shared = 0;
    let mut cur = &ir.lexemes[0].regex;
    loop {
        cur = match cur {
            RegexAst::Shared(x) => {
                shared += 1;
                x
            }
            RegexAst::Concat(parts) => match parts.first() {
                Some(first) => first,
                None => break,
            },
            _ => break,
        };
    }
    assert!(shared > 900, "{shared}");
    let mut set = crate::regex::ExprSet::new(&Limits::default());
    let e = set.compile(&ir.lexemes[0].regex).unwrap();
    let text = format!("y{}", "x".repeat(1000));
    assert!(set.matches(e, text.as_bytes()).unwrap());
    assert!(!set.matches(e, &text.as_bytes()[1..]).unwrap());
}

#[test]
fn terminal_dag_is_charged_once_per_node() {
    // `T_i: T_{i-1} T_{i-1}`: 41 small definitions whose expansion is 2^40 nodes. Defining
    // them is cheap; using the last one as a lexeme is charged its expanded size.
    let mut src = String::from("T0: \"x\"\n");
    for i in 1..=40 {
        src.push_str(&format!("T{i}: T{} T{}\n", i - 1, i - 1));
    }
    let e = err(&format!("start: T40\n{src}"));
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    ok(&format!("start: T10\n{src}"));
    // One grammar-size budget for all terminals, not one each.
    let limits = Limits {
        max_grammar_size: 1000,
        ..Limits::default()
    };
    let e = err_with(&format!("start: T9 T8\n{src}"), &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    // And the compile budget pays for it.
    let limits = Limits {
        compile_fuel: 500,
        ..Limits::default()
    };
    let e = err_with(&format!("start: T9\n{src}"), &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::CompileFuel));
}

#[test]
fn postfix_chains_fold_and_count() {
    // `?` `*` `+` chains fold into one repetition: one helper.
    let ir = ok("start: \"a\"*+?*");
    check_invariants(&ir);
    assert_eq!(ir.nonterminals.len(), 2);
    let ir = ok("start: \"a\"++");
    assert_eq!(ir.nonterminals[1].name, "start_plus_1");
    let ir = ok("start: (\"a\"?)?");
    assert_eq!(ir.nonterminals[1].name, "start_opt_1");
    // Each operator is a level of nesting.
    let limits = Limits {
        max_nesting_depth: 5,
        ..Limits::default()
    };
    assert!(parse("start: ((\"a\"*)*)*****", &NoSpecialTokens, &limits).is_ok());
    let e = err_with("start: ((\"a\"*)*)******", &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    let e = err_with("start: \"a\"{1,2}{1,2}{1,2}{1,2}{1,2}{1,2}", &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
}

#[test]
fn lazy_and_stop_attributes() {
    let ir = ok(r#"
start: text tail NOTE
text[stop="END"]: /(.|\n)*/
tail[lazy]: /[a-z]+/ "!"
NOTE[lazy]: "<" /.*/ ">"
empty[stop=""]: /a*/
"#);
    check_invariants(&ir);
    assert_eq!(ir.lexemes.len(), 4);
    let text = &ir.lexemes[lexeme(&ir, "text") as usize];
    assert_eq!(text.mode, LexemeMode::Lazy);
    assert_eq!(
        text.regex,
        RegexAst::Concat(vec![
            RegexAst::Pattern("(.|\\n)*".into(), PatternFlags::default()),
            RegexAst::literal("END"),
        ])
    );
    assert_eq!(shown_rules(&ir, "text"), vec!["text"]);
    let tail = &ir.lexemes[lexeme(&ir, "tail") as usize];
    assert_eq!(tail.mode, LexemeMode::Lazy);
    assert!(matches!(&tail.regex, RegexAst::Concat(p) if p.len() == 2));
    assert_eq!(
        ir.lexemes[lexeme(&ir, "NOTE") as usize].mode,
        LexemeMode::Lazy
    );
    // Attributes: capture is accepted and ignored; others are unsupported.
    ok("start: a\na[capture]: \"x\"\nb[capture=\"n\"]: \"y\"");
    let e = err("start: a\na[max_tokens=5]: \"x\"");
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    assert_eq!(e.span.map(|s| (s.start.line, s.start.column)), Some((2, 3)));
    let e = err("start: a\na[lazy]: b\nb: \"x\"");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
}

#[test]
fn ignore_variants() {
    let ir =
        ok("start: \"a\"\n%ignore \" \"\n%ignore /\\t/\n%ignore (A | B)\nA: \"\\n\"\nB: \"\\r\"");
    let ign: Vec<_> = ir.lexemes.iter().filter(|l| l.ignore).collect();
    assert_eq!(ign.len(), 1);
    match &ign[0].regex {
        RegexAst::Or(parts) => assert_eq!(parts.len(), 3),
        other => panic!("{other:?}"),
    }
    assert_eq!(ir.lexemes.len(), 2);
}

#[test]
fn import_common() {
    let ir = ok(
        "start: NUMBER WORD X\n%import common.NUMBER\n%import common (WORD)\n%import common.ESCAPED_STRING -> X",
    );
    assert_eq!(ir.lexemes.len(), 3);
    assert_eq!(ir.lexemes[2].name, "X");
    let all = "DIGIT HEXDIGIT INT SIGNED_INT DECIMAL _EXP FLOAT SIGNED_FLOAT NUMBER \
               SIGNED_NUMBER LETTER UCASE_LETTER LCASE_LETTER WORD CNAME ESCAPED_STRING \
               _STRING_INNER _STRING_ESC_INNER WS WS_INLINE NEWLINE CR LF _CR _LF \
               SH_COMMENT CPP_COMMENT C_COMMENT SQL_COMMENT";
    let names: Vec<&str> = all.split_whitespace().collect();
    let src = format!(
        "start: {}\n%import common ({})",
        names.join(" "),
        names.join(", ")
    );
    let ir = ok(&src);
    assert_eq!(ir.lexemes.len(), names.len());
    let e = err("start: X\n%import foo.X");
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    let e = err("start: X\n%import common.NOPE");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    let e = err("start: WS\nWS: \" \"\n%import common.WS");
    assert_eq!(e.kind, GrammarErrorKind::DuplicateDefinition);
}

struct Specials;

impl SpecialTokens for Specials {
    fn by_name(&self, name: &str) -> Vec<Vec<u8>> {
        match name {
            "<|eot_id|>" | "<|end|>" => {
                let mut v = vec![0xFF];
                v.extend_from_slice(name.as_bytes());
                vec![v]
            }
            _ => Vec::new(),
        }
    }

    fn by_id(&self, id: u32) -> Option<Vec<u8>> {
        (id < 130_000).then(|| {
            let mut v = vec![0xFF];
            v.extend_from_slice(format!("<{id}>").as_bytes());
            v
        })
    }

    /// Ids `130_000..130_010` are text tokens.
    fn text_by_id(&self, id: u32) -> Option<Vec<u8>> {
        (130_000..130_010).contains(&id).then(|| {
            let mut v = vec![0xFF];
            v.extend_from_slice(format!("<text {id}>").as_bytes());
            v
        })
    }
}

#[cfg(feature = "text-token-ids")]
#[test]
fn text_tokens_by_id() {
    // Text tokens named by id become lexemes of their encodings, listed in `id_tokens`.
    let ir = ok_specials("start: <[130003]> <[130001-130003, 7]> \"a\"\nx: <[130001]>");
    check_invariants(&ir);
    assert_eq!(ir.id_tokens, vec![130_001, 130_002, 130_003]);
    assert_eq!(
        ir.lexemes[0].regex,
        RegexAst::Literal(b"\xFF<text 130003>".to_vec())
    );
    let ir = ok("start: \"a\"");
    assert!(ir.id_tokens.is_empty());
    // Ids that are neither special nor text are errors where they are written.
    let e = err_specials("start: \"a\"\n  | <[130009-130010]>");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken);
    assert_eq!(line_col(&e), (2, 5));
    assert!(e.message.contains("id 130010"), "{e}");
}

#[test]
fn special_tokens() {
    let ir = ok_specials("start: \"hi\" <|eot_id|> <[128009]> <[128000-128002, 5]> <|eot_id|>");
    check_invariants(&ir);
    assert_eq!(ir.lexemes.len(), 4);
    let mut eot = vec![0xFF];
    eot.extend_from_slice(b"<|eot_id|>");
    assert_eq!(ir.lexemes[1].regex, RegexAst::Literal(eot));
    assert_eq!(ir.lexemes[1].name, "<|eot_id|>");
    match &ir.lexemes[3].regex {
        RegexAst::Or(parts) => assert_eq!(parts.len(), 4),
        other => panic!("{other:?}"),
    }
    let e = err_specials("start: <|nope|>");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken);
    assert_eq!(e.span.map(|s| s.start.column), Some(8));
    let e = err("start: <|eot_id|>");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken);
    let e = err_specials("start: <[200000]>");
    assert_eq!(e.kind, GrammarErrorKind::UnknownSpecialToken);
    let e = err_specials("start: A\nA: <|end|>");
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
}

#[test]
fn markers_priorities_aliases() {
    let ir = ok("?start: _item | bang -> alias\n_item: \"a\"\n!bang.-1: \"b\"\nT.3: \"t\"");
    assert_eq!(shown_rules(&ir, "start"), vec!["_item", "bang"]);
    ok("%llguidance {\"x\": \"}\"}\nstart: \"a\"");
    ok("%llguidance {}\nstart: \"a\"");
}

fn line_col(e: &GrammarError) -> (u32, u32) {
    match e.span {
        Some(s) => (s.start.line, s.start.column),
        None => panic!("no span in {e:?}"),
    }
}

#[test]
fn error_unterminated_string() {
    let e = err("start: a\na: b\nb:  \"abc\n");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert_eq!(line_col(&e), (3, 5));
    let e = err("start: /abc");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert_eq!(line_col(&e), (1, 8));
}

#[test]
fn error_undefined() {
    let e = err("start: a b\na: \"x\"");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    assert_eq!(line_col(&e), (1, 10));
    let s = e.span.map(|s| (s.start.offset, s.end.offset));
    assert_eq!(s, Some((9, 10)));
    let e = err("start: \"a\"\n\nx: FOO");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    assert_eq!(line_col(&e), (3, 4));
    let e = err("start: A\nA: \"a\" B");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    assert_eq!(line_col(&e), (2, 8));
    let e = err("start: A\nA: \"a\" start");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
}

#[test]
fn error_duplicate() {
    let e = err("start: a\na: \"x\"\n\na: \"y\"");
    assert_eq!(e.kind, GrammarErrorKind::DuplicateDefinition);
    assert_eq!(line_col(&e), (4, 1));
    let aux = e.aux_span.map(|s| (s.start.line, s.start.column));
    assert_eq!(aux, Some((2, 1)));
    let e = err("start: A\nA: \"x\"\nA: \"y\"");
    assert_eq!(e.kind, GrammarErrorKind::DuplicateDefinition);
    assert_eq!(line_col(&e), (3, 1));
}

#[test]
fn error_missing_start() {
    let e = err("a: \"x\"");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
    assert!(e.message.contains("start"));
    let e = err("");
    assert_eq!(e.kind, GrammarErrorKind::UndefinedSymbol);
}

#[test]
fn error_cycle() {
    let e = err("start: A\nA: \"a\" B\nB: \"b\" A?");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert!(e.message.contains("refers to itself"), "{e}");
    assert_eq!(line_col(&e), (3, 8));
    let e = err("start: A\nA: A");
    assert_eq!(line_col(&e), (2, 4));
}

#[test]
fn error_bad_regex_span() {
    let e = err("start: x\nx: \"a\" /ab(c/");
    assert_eq!(e.kind, GrammarErrorKind::InvalidRegex);
    // regex-syntax reports the unclosed `(`: line 2, column 11.
    assert_eq!(line_col(&e), (2, 11));
    let e = err("start: x\nx: /\\d\\/+[/");
    assert_eq!(e.kind, GrammarErrorKind::InvalidRegex);
    assert_eq!(line_col(&e).0, 2);
    assert!(line_col(&e).1 >= 4, "{e}");
    let e = err("start: /a/q");
    assert_eq!(e.kind, GrammarErrorKind::Syntax);
    assert_eq!(line_col(&e), (1, 11));
}

#[test]
fn regex_error_offsets_map_into_source() {
    use super::span::LineIndex;
    use super::token::{TokKind, tokenize};
    let src = "start: x\nx: /a\\/b(c/i";
    let lines = LineIndex::unbounded(src);
    let limits = crate::Limits::default();
    let toks = match tokenize(src, &lines, &mut crate::CompileBudget::new(&limits)) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    };
    let lit = toks
        .iter()
        .find_map(|t| match &t.kind {
            TokKind::Regex(l) => Some(l.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no regex token"));
    assert_eq!(lit.pattern, "a/b(c");
    // Pattern byte 3 is `(`, at line 2, column 9.
    let (s, e) = super::parser::regex_error_range(&lit, 3, 4, 0);
    assert_eq!(&src[s..e], "(");
    assert_eq!(lines.position(s).column, 9);
    // Pattern byte 1 is the unescaped `/`, which is the `/` of `\/` in the source.
    let (s, _) = super::parser::regex_error_range(&lit, 1, 2, 0);
    assert_eq!(&src[s..s + 1], "/");
    assert_eq!(&src[s - 1..s], "\\");
    // Out-of-range offsets clamp to the closing slash.
    let (s, e) = super::parser::regex_error_range(&lit, 99, 100, 0);
    assert_eq!((&src[s..e + 1], s), ("/", src.len() - 2));
}

#[test]
fn error_misc_syntax() {
    for (src, kind) in [
        ("start: (\"a\"", GrammarErrorKind::Syntax),
        ("start: \"a\" )", GrammarErrorKind::Syntax),
        ("start \"a\"", GrammarErrorKind::Syntax),
        ("start: \"\\q\"", GrammarErrorKind::Syntax),
        ("start: \"\\xZZ\"", GrammarErrorKind::Syntax),
        ("start: \"ab\"..\"z\"", GrammarErrorKind::Syntax),
        ("start: \"z\"..\"a\"", GrammarErrorKind::Syntax),
        ("start: \"a\"{3,1}", GrammarErrorKind::Syntax),
        ("start: \"a\"{x}", GrammarErrorKind::Unsupported),
        ("start{x}: \"a\"", GrammarErrorKind::Unsupported),
        ("start: a\n%declare FOO", GrammarErrorKind::Unsupported),
        ("start: %lark {}", GrammarErrorKind::Unsupported),
        ("%json {}", GrammarErrorKind::Syntax),
        ("start: a\n%bogus", GrammarErrorKind::Unsupported),
        ("?START: \"a\"", GrammarErrorKind::Syntax),
        ("start: \"a\" ^", GrammarErrorKind::Syntax),
        ("start: <[x]>", GrammarErrorKind::Unsupported),
    ] {
        let e = err(src);
        assert_eq!(e.kind, kind, "{src}: {e}");
        assert!(e.span.is_some(), "{src}");
    }
}

/// Run `f` on a thread with a small stack (as FFI callers may have).
fn on_small_stack(bytes: usize, f: impl FnOnce() + Send + 'static) {
    extern crate std;
    let h = std::thread::Builder::new().stack_size(bytes).spawn(f);
    match h.map(|h| h.join()) {
        Ok(Ok(())) => {}
        _ => panic!("thread failed"),
    }
}

#[test]
fn default_depth_fits_small_stack() {
    // Rules never recurse: 64 KiB is plenty even in debug builds.
    on_small_stack(64 * 1024, || {
        let n = Limits::default().max_nesting_depth;
        let deep = format!("start: {}\"a\"{}", "(\"b\" ".repeat(n), ")*".repeat(n));
        assert!(parse(&deep, &NoSpecialTokens, &Limits::default()).is_ok());
        let deep = format!("start: {}\"a\"{}", "[".repeat(100_000), "]".repeat(100_000));
        assert!(parse(&deep, &NoSpecialTokens, &Limits::default()).is_err());
    });
    // Terminal regex trees are as tall as 2 * max_nesting_depth + 2; the derived
    // `Clone`/`Drop` of `RegexAst` recurse over them (about 1 KiB per level in debug).
    on_small_stack(512 * 1024, || {
        let n = Limits::default().max_nesting_depth;
        let deep = format!("start: {}\"a\"{}", "(\"b\" ".repeat(n), ")*".repeat(n));
        let ir = ok(&deep);
        check_invariants(&ir);
        let deep = format!(
            "start: A\nA: {}\"a\"{}",
            "(\"b\" ".repeat(n),
            ")*".repeat(n)
        );
        ok(&deep);
        let deep = format!("start: {}\"a\"{}", "[".repeat(n + 1), "]".repeat(n + 1));
        assert!(parse(&deep, &NoSpecialTokens, &Limits::default()).is_err());
    });
}

#[test]
fn limits_nesting_depth() {
    let limits = Limits {
        max_nesting_depth: 20,
        ..Limits::default()
    };
    let deep = format!("start: {}\"a\"{}", "(".repeat(21), ")".repeat(21));
    let e = err_with(&deep, &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    let fine = format!("start: {}\"a\"{}", "(".repeat(20), ")".repeat(20));
    assert!(parse(&fine, &NoSpecialTokens, &limits).is_ok());
    // Deep default-limit input fails cleanly.
    let deep = format!("start: {}\"a\"{}", "[".repeat(100_000), "]".repeat(100_000));
    let e = err(&deep);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    // Stacked postfix operators count as nesting.
    let e = err(&format!("start: \"a\"{}", "?".repeat(10_000)));
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    let ir = ok(&format!("start: \"a\"{}", "?".repeat(200)));
    check_invariants(&ir);
    // In terminals they build a regex tree, whose height is bounded.
    let e = err(&format!("start: A\nA: \"a\"{}", "?".repeat(100_000)));
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
    // Deep terminals too.
    let e = err_with(&format!("start: A\nA: \"a\"{}", "*".repeat(50)), &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::NestingDepth));
}

#[test]
fn limits_repeat_and_size() {
    let limits = Limits {
        max_repeat: 100,
        max_grammar_size: 1000,
        ..Limits::default()
    };
    let e = err_with("start: \"a\"{101}", &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    let e = err_with("start: A\nA: \"a\"~5..101", &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    let small = Limits {
        max_grammar_size: 250,
        ..limits.clone()
    };
    let e = err_with("start: ((\"a\"{100}){100}){100}", &small);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    let e = err_with(&format!("start: {}", "\"a\"{100} ".repeat(11)), &limits);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    // Nested counted repeats of a sequence stay linear (each level is one helper).
    let ir = ok("start: ((\"a\" \"b\"){10000}){10000}");
    assert!(ir.rules.iter().map(|r| r.rhs.len()).sum::<usize>() < 30_000);
    let e = err("start: \"a\"{99999999999}");
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::RepeatCount));
    // Exponential terminal inlining is caught.
    let mut src = String::from("start: T0\n");
    for i in 0..40 {
        src.push_str(&format!("T{i}: T{} T{}\n", i + 1, i + 1));
    }
    src.push_str("T40: \"x\"\n");
    let e = err(&src);
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    // A big special-token range is charged before it is expanded.
    let e = err_specials("start: <[0-4000000000]>");
    assert_eq!(e.kind, GrammarErrorKind::Limit(LimitKind::GrammarSize));
    // Bounded repeats within limits expand linearly.
    let ir = ok("start: \"a\"{3,10}");
    check_invariants(&ir);
    assert_eq!(rules_of(&ir, ir.start)[0].len(), 4);
}

#[test]
fn unicode_and_odd_input_does_not_panic() {
    for src in [
        "start: \"é\"..\"ü\"",
        "start: /é+/ \"ü\"i",
        "é",
        "start: é",
        "start: \"\\u00",
        "start: \"\\U0011FFFF\"",
        "start: <|",
        "start: <[1-",
        "%llguidance {",
        "%",
        "start: \"a\"~",
        "start: \"a\" ->",
        "\u{feff}start: \"a\"",
        "start: /\\",
        "start: [",
        "start: \"a\"{1,",
        "start: (\"a\" | )*",
    ] {
        let _ = parse(src, &NoSpecialTokens, &Limits::default());
    }
    let ir = ok("start: (\"a\" | )* ()* \"b\"");
    check_invariants(&ir);
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    const ALPHABET: &[&str] = &[
        "start",
        ":",
        " ",
        "\n",
        "|",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "*",
        "+",
        "?",
        "~",
        "..",
        ".",
        ",",
        "\"a\"",
        "\"",
        "/",
        "/x/",
        "A",
        "a",
        "_b",
        "%ignore",
        "%import",
        "common",
        "WS",
        "->",
        "<|",
        "|>",
        "<[",
        "]>",
        "1",
        "2",
        "é",
        "\\",
        "#",
        "//",
        "=",
        "lazy",
        "stop",
        "-",
        "i",
        "%json",
        "%json {}",
        "{\"type\":",
        "\"integer\"}",
        "\"}\"",
        "{\"items\": {\"$ref\": \"#\"}}",
    ];

    fn check(src: &str) {
        let limits = Limits {
            max_nesting_depth: 30,
            max_grammar_size: 5_000,
            max_repeat: 50,
            ..Limits::default()
        };
        if let Ok(ir) = parse(src, &Specials, &limits) {
            check_invariants(&ir);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_strings(s in "\\PC{0,80}") {
            check(&s);
        }

        #[test]
        fn random_token_soup(ix in proptest::collection::vec(0..ALPHABET.len(), 0..60)) {
            let s: String = ix.iter().map(|&i| ALPHABET[i]).collect();
            check(&s);
        }

        #[test]
        fn mutated_json(pos in 0usize..400, len in 0usize..6, ins in 0..ALPHABET.len()) {
            let mut s = String::from(JSON);
            let mut p = pos.min(s.len());
            while !s.is_char_boundary(p) { p -= 1; }
            let mut q = (p + len).min(s.len());
            while !s.is_char_boundary(q) { q -= 1; }
            s.replace_range(p..q.max(p), ALPHABET[ins]);
            check(&s);
        }
    }
}

mod inline_json;
