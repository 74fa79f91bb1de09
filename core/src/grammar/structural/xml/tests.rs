use super::*;
use crate::sync::Arc;
use crate::{Grammar, Matcher};
use alloc::string::ToString;
use serde_json::json;

/// Every single byte but `0xFF`, then the specials of kimi_k3 and an EOS.
fn vocab() -> Arc<Vocabulary> {
    let mut tokens: Vec<Vec<u8>> = (0u8..0xFF).map(|b| vec![b]).collect();
    let first = tokens.len() as u32;
    for name in ["<|open|>", "<|sep|>", "<|close|>", "<|eos|>"] {
        tokens.push(name.as_bytes().to_vec());
    }
    let specials: Vec<u32> = (first..first + 4).collect();
    Arc::new(Vocabulary::new(tokens, &specials, &[first + 3]).unwrap())
}

fn compile_with(
    schema: Value,
    style: XmlStyle,
    any_order: bool,
    opts: &JsonOptions,
) -> Result<Grammar, GrammarError> {
    let v = vocab();
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let ir = lower_xml(&schema, style, any_order, opts, &v, &limits, &mut budget)?;
    Grammar::from_ir(&ir, &v, &limits)
}

fn compile(schema: Value, style: XmlStyle, any_order: bool) -> Grammar {
    compile_with(schema, style, any_order, &JsonOptions::default()).unwrap()
}

/// `text` with kimi's control tokens replaced by their encodings.
fn encode(text: &str) -> Vec<u8> {
    let v = vocab();
    let specials = special_names(&v);
    let mut out = Vec::new();
    let mut i = 0;
    let b = text.as_bytes();
    while i < b.len() {
        if let Some((name, id)) = specials
            .iter()
            .find(|(n, _)| b[i..].starts_with(n.as_bytes()))
        {
            out.extend(Vocabulary::special_encoding(*id));
            i += name.len();
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// Whether `g` accepts `text` in full; pushed at once and byte by byte (which must agree).
fn accepts(g: &Grammar, text: &str) -> bool {
    let bytes = encode(text);
    let mut m = Matcher::new(g);
    let whole = m.try_consume_bytes(&bytes) && m.is_accepting();
    let mut m = Matcher::new(g);
    let bytewise = bytes.iter().all(|b| m.try_consume_bytes(&[*b])) && m.is_accepting();
    assert_eq!(
        whole, bytewise,
        "at once vs byte by byte differ on {text:?}"
    );
    whole
}

fn weather() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "minimum": 1},
            "unit": {"enum": ["c", "f"]}
        },
        "required": ["city", "days"]
    })
}

#[test]
fn qwen_declared_order() {
    let g = compile(weather(), XmlStyle::Qwen, false);
    let ok = [
        "<parameter=city>Paris</parameter><parameter=days>3</parameter>",
        "\n<parameter=city>Paris</parameter>\n<parameter=days>\n3\n</parameter>\n",
        "<parameter=city>Paris</parameter><parameter=days>3</parameter><parameter=unit>c</parameter>",
        // Raw text: `<`, prefixes of the close tag, quotes, newlines.
        "<parameter=city>a < b </parameter </param\n\"x\"</parameter><parameter=days>3</parameter>",
        "<parameter=city></parameter><parameter=days>3</parameter>",
    ];
    for t in ok {
        assert!(accepts(&g, t), "{t:?}");
    }
    let bad = [
        "",
        // Order, required, duplicates, unknown keys.
        "<parameter=days>3</parameter><parameter=city>Paris</parameter>",
        "<parameter=city>Paris</parameter>",
        "<parameter=city>Paris</parameter><parameter=days>3</parameter><parameter=days>3</parameter>",
        "<parameter=city>Paris</parameter><parameter=days>3</parameter><parameter=x>1</parameter>",
        // Value schemas.
        "<parameter=city>Paris</parameter><parameter=days>0</parameter>",
        "<parameter=city>Paris</parameter><parameter=days>\"3\"</parameter>",
        "<parameter=city>Paris</parameter><parameter=days>3</parameter><parameter=unit>k</parameter>",
        // The close tag ends the raw text at its first occurrence.
        "<parameter=city>a</parameter>b</parameter><parameter=days>3</parameter>",
    ];
    for t in bad {
        assert!(!accepts(&g, t), "{t:?}");
    }
}

#[test]
fn qwen_any_order() {
    let g = compile(weather(), XmlStyle::Qwen, true);
    for t in [
        "<parameter=days>3</parameter><parameter=city>Paris</parameter>",
        "<parameter=unit>f</parameter>\n<parameter=days>3</parameter>\n<parameter=city>P</parameter>",
    ] {
        assert!(accepts(&g, t), "{t:?}");
    }
    for t in [
        "<parameter=days>3</parameter>",
        "<parameter=days>3</parameter><parameter=city>P</parameter><parameter=days>3</parameter>",
    ] {
        assert!(!accepts(&g, t), "{t:?}");
    }
}

#[test]
fn many_properties_any_order_tracks_required() {
    let mut props = Map::new();
    for i in 0..12 {
        props.insert(format!("p{i}"), json!({"type": "integer"}));
    }
    let schema = json!({"type": "object", "properties": props, "required": ["p3", "p11"]});
    let g = compile(schema, XmlStyle::Qwen, true);
    let el = |k: &str| format!("<parameter={k}>1</parameter>");
    assert!(accepts(&g, &(el("p11") + &el("p0") + &el("p3"))));
    // Optional keys of a large object are untracked: they may repeat (documented).
    assert!(accepts(
        &g,
        &(el("p0") + &el("p0") + &el("p3") + &el("p11"))
    ));
    assert!(!accepts(&g, &(el("p3") + &el("p3") + &el("p11"))));
    assert!(!accepts(&g, &(el("p0") + &el("p3"))));
}

#[test]
fn minimax_and_glm() {
    let g = compile(weather(), XmlStyle::Minimax, false);
    assert!(accepts(
        &g,
        "<parameter name=\"city\">Rome</parameter>\n<parameter name=\"days\">2</parameter>"
    ));
    assert!(!accepts(
        &g,
        "<parameter=city>Rome</parameter><parameter=days>2</parameter>"
    ));
    let g = compile(weather(), XmlStyle::Glm, false);
    assert!(accepts(
        &g,
        "<arg_key>city</arg_key>\n<arg_value>Rome</arg_value>\n<arg_key>days</arg_key><arg_value>2</arg_value>"
    ));
    assert!(!accepts(
        &g,
        "<arg_key>city</arg_key><arg_value>Rome</arg_value>"
    ));
}

#[test]
fn deepseek_string_attribute() {
    let g = compile(weather(), XmlStyle::Deepseek, false);
    let ok = "<｜DSML｜parameter name=\"city\" string=\"true\">Rome</｜DSML｜parameter>\
              <｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>";
    assert!(accepts(&g, ok));
    let bad = "<｜DSML｜parameter name=\"city\" string=\"false\">Rome</｜DSML｜parameter>\
               <｜DSML｜parameter name=\"days\" string=\"false\">2</｜DSML｜parameter>";
    assert!(!accepts(&g, bad));
}

#[test]
fn cohere_types() {
    let schema = json!({
        "type": "object",
        "properties": {"q": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}},
                       "n": {"type": "number"}},
        "required": ["q"]
    });
    let g = compile(schema, XmlStyle::Cohere, false);
    assert!(accepts(
        &g,
        "<cofl:value name=\"q\" type=\"raw\">hi</cofl:value><cofl:value name=\"tags\" type=\"list\"><cofl:value type=\"raw\">a</cofl:value></cofl:value><cofl:value name=\"n\" type=\"json\">1.5</cofl:value>"
    ));
    assert!(!accepts(
        &g,
        "<cofl:value name=\"q\" type=\"json\">hi</cofl:value>"
    ));
}

#[test]
fn cohere_nested_dict_and_list() {
    let schema = json!({
        "type": "object",
        "properties": {
            "loc": {"type": "object", "properties": {"lat": {"type": "number"}, "name": {"type": "string"}},
                    "required": ["lat"]},
            "ids": {"type": "array", "items": {"type": "integer"}, "maxItems": 2}
        }
    });
    let g = compile(schema, XmlStyle::Cohere, false);
    let v = |inner: &str| format!("<cofl:value{inner}</cofl:value>");
    let dict = v(&format!(
        " name=\"loc\" type=\"dict\">\n{}\n{}\n",
        v(" name=\"lat\" type=\"json\">1.5"),
        v(" name=\"name\" type=\"raw\">x")
    ));
    let list = v(&format!(
        " name=\"ids\" type=\"list\">{}{}",
        v(" type=\"json\">1"),
        v(" type=\"json\">2")
    ));
    assert!(accepts(&g, &format!("{dict}\n{list}")));
    assert!(accepts(&g, &v(" name=\"ids\" type=\"list\">")));
    let three = v(&format!(
        " name=\"ids\" type=\"list\">{}{}{}",
        v(" type=\"json\">1"),
        v(" type=\"json\">2"),
        v(" type=\"json\">3")
    ));
    assert!(!accepts(&g, &three));
    // A dict without its required key, or as JSON.
    assert!(!accepts(&g, &v(" name=\"loc\" type=\"dict\">")));
    assert!(!accepts(&g, &v(" name=\"loc\" type=\"json\">{\"lat\": 1}")));
}

#[test]
fn cohere_recursive_schema_terminates() {
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string"},
                       "children": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["name"]
    });
    let g = compile(schema, XmlStyle::Cohere, false);
    let v = |inner: &str| format!("<cofl:value{inner}</cofl:value>");
    // One child, itself a dict with a name and no children.
    let leaf = v(&format!(
        " type=\"dict\">{}",
        v(" name=\"name\" type=\"raw\">b")
    ));
    let text = format!(
        "{}{}",
        v(" name=\"name\" type=\"raw\">a"),
        v(&format!(" name=\"children\" type=\"list\">{leaf}"))
    );
    assert!(accepts(&g, &text));
}

#[test]
fn kimi_k3_special_tokens() {
    let g = compile(weather(), XmlStyle::KimiK3, false);
    let ok = "<|open|>argument key=\"city\" type=\"string\"<|sep|>Oslo<|close|>argument<|sep|>\
              <|open|>argument key=\"days\" type=\"number\"<|sep|>4<|close|>argument<|sep|>";
    assert!(accepts(&g, ok));
    // The same strings as plain text are not the control tokens.
    let mut m = Matcher::new(&g);
    assert!(!m.try_consume_bytes(b"<|open|>"));
    assert!(!accepts(
        &g,
        "<|open|>argument key=\"city\" type=\"number\"<|sep|>Oslo<|close|>argument<|sep|>\
         <|open|>argument key=\"days\" type=\"number\"<|sep|>4<|close|>argument<|sep|>"
    ));
}

#[test]
fn string_constraints_and_additional() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 3},
            "kind": {"const": "x"}
        },
        "additionalProperties": {"type": "integer"}
    });
    let g = compile(schema, XmlStyle::Qwen, false);
    assert!(accepts(&g, "<parameter=id>abc</parameter>"));
    assert!(accepts(
        &g,
        "<parameter=id>ab</parameter><parameter=kind>x</parameter><parameter=n>2</parameter><parameter=m_1>3</parameter>"
    ));
    assert!(!accepts(&g, "<parameter=id>abcd</parameter>"));
    assert!(!accepts(&g, "<parameter=id>aB</parameter>"));
    assert!(!accepts(&g, "<parameter=kind>y</parameter>"));
    assert!(!accepts(&g, "<parameter=n>x</parameter>"));
    // Declared keys cannot come back as additional ones.
    assert!(!accepts(
        &g,
        "<parameter=id>a</parameter><parameter=kind>x</parameter><parameter=id>3</parameter>"
    ));
    assert!(accepts(
        &g,
        "<parameter=id>a</parameter><parameter=kind>x</parameter><parameter=idx>3</parameter>"
    ));
    let schema = json!({"type": "object", "properties": {
        "s": {"type": "string", "pattern": "b[0-9]"},
        "t": {"type": "string", "pattern": "^a|b$"}}});
    let g = compile(schema, XmlStyle::Qwen, false);
    // Unanchored: a search.
    assert!(accepts(&g, "<parameter=s>x b1 y</parameter>"));
    assert!(!accepts(&g, "<parameter=s>x b y</parameter>"));
    // Alternation with anchors is dropped (a superset).
    assert!(accepts(&g, "<parameter=t>zzz</parameter>"));
}

#[test]
fn any_value_and_optional_types() {
    let schema = json!({
        "type": "object",
        "properties": {
            "v": {},
            "o": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "s": {"type": ["string", "null"]}
        }
    });
    let g = compile(schema, XmlStyle::Qwen, false);
    assert!(accepts(&g, "<parameter=v>free text</parameter>"));
    assert!(accepts(&g, "<parameter=v>{\"a\": [1]}</parameter>"));
    assert!(accepts(
        &g,
        "<parameter=o>null</parameter><parameter=s>text</parameter>"
    ));
    assert!(!accepts(&g, "<parameter=o>text</parameter>"));
    assert!(accepts(&g, ""));
}

#[test]
fn whitespace_bound() {
    let opts = JsonOptions {
        whitespace: Whitespace::Flexible { max: 2 },
        ..JsonOptions::default()
    };
    let g = compile_with(weather(), XmlStyle::Qwen, false, &opts).unwrap();
    assert!(accepts(
        &g,
        "<parameter=city>P</parameter>\n\n<parameter=days>1</parameter>"
    ));
    assert!(!accepts(
        &g,
        "<parameter=city>P</parameter>\n\n\n<parameter=days>1</parameter>"
    ));
}

#[test]
fn no_whitespace_when_bounded_at_zero() {
    let opts = JsonOptions {
        whitespace: Whitespace::Flexible { max: 0 },
        ..JsonOptions::default()
    };
    let g = compile_with(weather(), XmlStyle::Glm, false, &opts).unwrap();
    let ok = "<arg_key>city</arg_key><arg_value>P</arg_value><arg_key>days</arg_key><arg_value>1</arg_value>";
    assert!(accepts(&g, ok));
    assert!(!accepts(
        &g,
        &ok.replace("</arg_key><arg_value>P", "</arg_key> <arg_value>P")
    ));
    assert!(!accepts(
        &g,
        &ok.replace("</arg_value><arg_key>", "</arg_value>\n<arg_key>")
    ));
    // Raw text keeps its own whitespace.
    assert!(accepts(&g, &ok.replace(">P<", "> P\n<")));
}

#[test]
fn budget_runs_out_with_an_error() {
    let v = vocab();
    for limits in [
        Limits {
            max_memory_bytes: 4_000,
            ..Limits::default()
        },
        Limits {
            compile_fuel: 50,
            ..Limits::default()
        },
    ] {
        let mut budget = CompileBudget::new(&limits);
        let e = lower_xml(
            &weather(),
            XmlStyle::Cohere,
            true,
            &JsonOptions::default(),
            &v,
            &limits,
            &mut budget,
        )
        .err()
        .unwrap();
        assert!(matches!(e.kind, GrammarErrorKind::Limit(_)), "{e}");
    }
}

#[test]
fn refs_and_defs() {
    let schema = json!({
        "$defs": {"loc": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
                  "name": {"type": "string"}},
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/loc"}, "who": {"$ref": "#/$defs/name"}}
    });
    let g = compile(schema, XmlStyle::Qwen, false);
    assert!(accepts(
        &g,
        "<parameter=at>{\"lat\": 1}</parameter><parameter=who>me</parameter>"
    ));
    assert!(!accepts(&g, "<parameter=at>{}</parameter>"));
}

#[test]
fn errors_name_the_place() {
    let e = compile_with(
        json!({"type": "string"}),
        XmlStyle::Qwen,
        false,
        &JsonOptions::default(),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    assert!(e.to_string().starts_with("at /type:"), "{}", e.message);
    let e = compile_with(
        json!({"type": "object", "properties": {"a/b": {"type": "array", "uniqueItems": true}}}),
        XmlStyle::Qwen,
        false,
        &JsonOptions {
            strict: true,
            ..JsonOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(
        e.to_string().starts_with("at /properties/a~1b"),
        "{}",
        e.message
    );
}

#[test]
fn inside_an_outer_tag() {
    // `<function=f>\n` XML `\n</function>`: the trailing whitespace and the end string.
    let v = vocab();
    let limits = Limits::default();
    let mut budget = CompileBudget::new(&limits);
    let inner = lower_xml(
        &weather(),
        XmlStyle::Qwen,
        false,
        &JsonOptions::default(),
        &v,
        &limits,
        &mut budget,
    )
    .unwrap();
    let mut ir = GrammarIr::default();
    let start = ir.add_nonterminal("start", None);
    ir.start = start;
    let lex = |ir: &mut GrammarIr, s: &str| {
        ir.add_lexeme(IrLexeme {
            name: s.into(),
            regex: RegexAst::literal(s),
            mode: LexemeMode::Greedy,
            ignore: false,
            span: None,
        })
    };
    let b = lex(&mut ir, "<function=f>\n");
    let e = lex(&mut ir, "\n</function>");
    let x = ir.embed(inner);
    ir.add_rule(
        start,
        vec![
            IrSymbol::Lexeme(b),
            IrSymbol::Nonterminal(x),
            IrSymbol::Lexeme(e),
        ],
    );
    let g = Grammar::from_ir(&ir, &v, &limits).unwrap();
    assert!(accepts(
        &g,
        "<function=f>\n<parameter=city>P</parameter>\n<parameter=days>1</parameter>\n</function>"
    ));
    assert!(accepts(
        &g,
        "<function=f>\n<parameter=city>P</parameter><parameter=days>1</parameter>\n</function>"
    ));
}
