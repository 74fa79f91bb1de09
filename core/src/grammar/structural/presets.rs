//! Structural tags for common model families from an OpenAI-style tool list.
//!
//! [`preset`] builds the structural-tag JSON (`{"type": "structural_tag", "format": ...}`)
//! that [`crate::Grammar::from_structural_tag`] compiles. The strings of each family follow
//! XGrammar's builtin structural tags (`python/xgrammar/builtin_structural_tag.py`,
//! `get_model_structural_tag`, mlc-ai/xgrammar@53da3ff; learned from it, written here) where
//! XGrammar has the family, and the model's own chat template otherwise (`mistral`); see
//! `core/docs/structural-presets.md` for the sources, the shapes and the deviations.
//! Nothing here recurses on input depth: the tool list is walked once, schemas are copied
//! (serde_json's clone) into the output.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use serde_json::{Value, json};

use crate::error::{GrammarError, GrammarErrorKind};

/// Options of [`preset`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresetOptions {
    /// `"auto"` (free text, zero or more calls), `"required"` (at least one call, no
    /// leading text), `"none"` or a tool name (exactly that tool).
    pub tool_choice: Option<String>,
    /// Allow more than one call.
    pub parallel_tool_calls: bool,
    /// Expect a reasoning block first (`<think>...</think>` or the family's equivalent).
    pub reasoning: bool,
}

/// The families [`preset`] knows, in the order documented.
pub fn families() -> &'static [&'static str] {
    &[
        "qwen3", "hermes", "llama3", "mistral", "deepseek", "harmony",
    ]
}

/// The structural tag (`{"type": "structural_tag", "format": ...}`) for `family` (`qwen3`,
/// `hermes`, `llama3`, `mistral`, `deepseek`, `harmony`) and `tools` (OpenAI format: an
/// array of `{"type": "function", "function": {"name", "parameters"}}`).
///
/// A tool without `parameters` (or with `"strict": false`) takes any JSON arguments, as in
/// XGrammar. The reasoning budget is not part of the tag: the matcher enforces it.
///
/// # Errors
/// `Unsupported` for an unknown family (`at #/family`), a malformed tool list (`at
/// /<i>/function/name`, pointers into `tools`), a `tool_choice` naming no tool
/// (`at #/tool_choice`) or `"required"` with no tools.
pub fn preset(family: &str, tools: &Value, opts: &PresetOptions) -> Result<Value, GrammarError> {
    let family = match family {
        "qwen3" | "hermes" => Family::Hermes,
        "llama3" => Family::Llama3,
        "mistral" => Family::Mistral,
        "deepseek" => Family::Deepseek,
        "harmony" => Family::Harmony,
        _ => {
            return Err(error(
                "#/family",
                &format!(
                    "unknown model family {family:?} (known: {})",
                    families().join(", ")
                ),
            ));
        }
    };
    let mut tools = parse_tools(tools)?;
    let choice = match opts.tool_choice.as_deref() {
        None | Some("auto") => Choice::Auto,
        Some("none") => Choice::None,
        Some("required") => Choice::Required,
        Some(name) => {
            tools.retain(|t| t.name == name);
            if tools.is_empty() {
                return Err(error(
                    "#/tool_choice",
                    &format!("tool_choice names no tool in the list: {name:?}"),
                ));
            }
            tools.truncate(1);
            Choice::Forced
        }
    };
    if choice == Choice::Required && tools.is_empty() {
        return Err(error(
            "#/tool_choice",
            "tool_choice \"required\" needs at least one tool",
        ));
    }
    let cx = Build {
        tools,
        choice,
        parallel: opts.parallel_tool_calls,
        reasoning: opts.reasoning,
    };
    let format = match family {
        Family::Hermes => cx.hermes(),
        Family::Llama3 => cx.llama3(),
        Family::Mistral => cx.mistral(),
        Family::Deepseek => cx.deepseek(),
        Family::Harmony => cx.harmony(),
    };
    Ok(json!({"type": "structural_tag", "format": format}))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Hermes,
    Llama3,
    Mistral,
    Deepseek,
    Harmony,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Auto,
    None,
    Required,
    Forced,
}

struct Tool {
    name: String,
    parameters: Value,
}

fn error(ptr: &str, msg: &str) -> GrammarError {
    GrammarError::at_pointer(GrammarErrorKind::Unsupported, ptr, msg)
}

fn parse_tools(tools: &Value) -> Result<Vec<Tool>, GrammarError> {
    let list = match tools {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        _ => return Err(error("#", "tools must be an array")),
    };
    let mut out: Vec<Tool> = Vec::with_capacity(list.len());
    for (i, t) in list.iter().enumerate() {
        let Value::Object(t) = t else {
            return Err(error(&format!("/{i}"), "a tool must be an object"));
        };
        match t.get("type") {
            Some(Value::String(s)) if s == "function" => {}
            None => {}
            Some(_) => {
                return Err(error(
                    &format!("/{i}/type"),
                    "only function tools are supported",
                ));
            }
        }
        let Some(Value::Object(f)) = t.get("function") else {
            return Err(error(
                &format!("/{i}/function"),
                "a function tool needs a `function` object",
            ));
        };
        let name = match f.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            _ => {
                return Err(error(
                    &format!("/{i}/function/name"),
                    "the function needs a non-empty name",
                ));
            }
        };
        if out.iter().any(|o| o.name == name) {
            return Err(error(
                &format!("/{i}/function/name"),
                &format!("duplicate tool name {name:?}"),
            ));
        }
        let strict = f.get("strict").and_then(Value::as_bool) != Some(false);
        let parameters = match f.get("parameters") {
            Some(p @ (Value::Object(_) | Value::Bool(_))) if strict => p.clone(),
            None | Some(Value::Null) => Value::Bool(true),
            Some(_) if !strict => Value::Bool(true),
            Some(_) => {
                return Err(error(
                    &format!("/{i}/function/parameters"),
                    "parameters must be a JSON Schema object",
                ));
            }
        };
        out.push(Tool { name, parameters });
    }
    Ok(out)
}

fn tag(begin: &str, content: Value, end: Value) -> Value {
    json!({"type": "tag", "begin": begin, "content": content, "end": end})
}

fn schema(parameters: &Value) -> Value {
    json!({"type": "json_schema", "json_schema": parameters})
}

fn any_text(excludes: &[&str]) -> Value {
    if excludes.is_empty() {
        json!({"type": "any_text"})
    } else {
        json!({"type": "any_text", "excludes": excludes})
    }
}

const THINK_EXCLUDES: [&str; 2] = ["<think>", "</think>"];

struct Build {
    tools: Vec<Tool>,
    choice: Choice,
    parallel: bool,
    reasoning: bool,
}

impl Build {
    /// One tag per tool: `begin(name)`, the arguments, `end`.
    fn tags(&self, begin: impl Fn(&str) -> String, end: &str) -> Vec<Value> {
        self.tools
            .iter()
            .map(|t| tag(&begin(&t.name), schema(&t.parameters), json!(end)))
            .collect()
    }

    /// Free text with calls triggered by `trigger` (auto), at least one call first
    /// (required), one call only (forced, without parallel calls), or text only (none).
    fn triggered(&self, triggers: &[&str], tags: Vec<Value>, excludes: &[&str]) -> Value {
        match self.choice {
            Choice::None => any_text(excludes),
            Choice::Auto if tags.is_empty() => any_text(excludes),
            Choice::Forced if !self.parallel => tags
                .into_iter()
                .next()
                .unwrap_or_else(|| any_text(excludes)),
            _ => json!({
                "type": "triggered_tags",
                "triggers": triggers,
                "tags": tags,
                "at_least_one": self.choice != Choice::Auto,
                "stop_after_first": !self.parallel,
                "excludes": excludes,
            }),
        }
    }

    /// `<think>` text `</think>` then `suffix` before `body` (the `<think>` may come
    /// from the prompt: the block begins with free text, as in XGrammar).
    fn with_reasoning(&self, suffix: &str, body: Value) -> Value {
        if !self.reasoning {
            return body;
        }
        let mut elements = vec![tag("", any_text(&[]), json!("</think>"))];
        if !suffix.is_empty() {
            elements.push(json!({"type": "const_string", "value": suffix}));
        }
        elements.push(body);
        json!({"type": "sequence", "elements": elements})
    }

    /// Qwen3 / Hermes: `<tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call>`.
    fn hermes(&self) -> Value {
        let tags = self.tags(
            |n| format!("<tool_call>\n{{\"name\": \"{n}\", \"arguments\": "),
            "}\n</tool_call>",
        );
        let body = self.triggered(&["<tool_call>"], tags, &THINK_EXCLUDES);
        self.with_reasoning("\n\n", body)
    }

    /// Llama 3.1/3.2 JSON tool calls: `{"name": "NAME", "parameters": ARGS}`, bare or after
    /// `<|python_tag|>` (the end of the turn, `<|eom_id|>`/`<|eot_id|>`, is the EOS, outside
    /// the tag).
    fn llama3(&self) -> Value {
        let mut tags = self.tags(|n| format!("{{\"name\": \"{n}\", \"parameters\": "), "}");
        // Llama 3.1 may also open a call with `<|python_tag|>` (ended by `<|eom_id|>`, an
        // EOS token): the same JSON after the tag.
        let tagged = self.tags(
            |n| format!("<|python_tag|>{{\"name\": \"{n}\", \"parameters\": "),
            "}",
        );
        tags.extend(tagged);
        self.triggered(&["{\"name\": ", "<|python_tag|>"], tags, &THINK_EXCLUDES)
    }

    /// Mistral (v3 tokenizer): `[TOOL_CALLS][{"name": "NAME", "arguments": ARGS}, ...]`,
    /// each call optionally followed by Nemo's `, "id": "<9 alphanumerics>"`.
    fn mistral(&self) -> Value {
        if self.choice == Choice::None || (self.choice == Choice::Auto && self.tools.is_empty()) {
            return any_text(&[]);
        }
        // Mistral Nemo adds `"id": "<9 alphanumerics>"` after the arguments: optional.
        let id = json!({"type": "optional", "content":
            {"type": "regex", "pattern": ", ?\"id\": ?\"[A-Za-z0-9]{9}\""}});
        let calls: Vec<Value> = self
            .tools
            .iter()
            .map(|t| {
                let content = json!({"type": "sequence",
                                     "elements": [schema(&t.parameters), id.clone()]});
                let begin = format!("{{\"name\": \"{}\", \"arguments\": ", t.name);
                tag(&begin, content, json!("}"))
            })
            .collect();
        let list = json!({
            "type": "tags_with_separator",
            "tags": calls,
            "separator": ", ",
            "at_least_one": true,
            "stop_after_first": !self.parallel,
        });
        let block = tag("[TOOL_CALLS][", list, json!("]"));
        match self.choice {
            Choice::Auto => json!({
                "type": "triggered_tags",
                "triggers": ["[TOOL_CALLS]"],
                "tags": [block],
                "stop_after_first": true,
            }),
            _ => block,
        }
    }

    /// DeepSeek V3/R1: `<｜tool▁calls▁begin｜>` then calls
    /// `<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>`
    /// separated by `\n`, then `<｜tool▁calls▁end｜>`.
    fn deepseek(&self) -> Value {
        const CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
        const CALLS_END: &str = "<｜tool▁calls▁end｜>";
        let body = if self.choice == Choice::None
            || (self.choice == Choice::Auto && self.tools.is_empty())
        {
            any_text(&THINK_EXCLUDES)
        } else {
            let calls = self.tags(
                |n| format!("<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n"),
                "\n```<｜tool▁call▁end｜>",
            );
            let list = json!({
                "type": "tags_with_separator",
                "tags": calls,
                "separator": "\n",
                "at_least_one": true,
                "stop_after_first": !self.parallel,
            });
            let block = tag(CALLS_BEGIN, list, json!(CALLS_END));
            match self.choice {
                Choice::Auto => json!({
                    "type": "triggered_tags",
                    "triggers": [CALLS_BEGIN],
                    "tags": [block],
                    "excludes": THINK_EXCLUDES,
                }),
                _ => block,
            }
        };
        self.with_reasoning("", body)
    }

    /// Harmony (gpt-oss): messages joined by `<|start|>assistant`: tool calls
    /// `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS<|call|>`
    /// (and the orderings XGrammar accepts), the final answer
    /// `<|channel|>final<|message|>...<|end|>` (auto, none), the analysis
    /// `<|channel|>analysis<|message|>...<|end|>` (reasoning).
    fn harmony(&self) -> Value {
        const ENDS: [&str; 2] = ["<|end|>", "<|return|>"];
        let mut tags = Vec::new();
        if self.reasoning {
            tags.push(tag(
                "<|channel|>analysis<|message|>",
                any_text(&[]),
                json!(ENDS),
            ));
        }
        if self.choice != Choice::None {
            for t in &self.tools {
                let n = &t.name;
                for begin in [
                    format!("<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>"),
                    format!("<|channel|>commentary to=functions.{n}<|constrain|>json<|message|>"),
                    format!(" to=functions.{n}<|channel|>commentary <|constrain|>json<|message|>"),
                    format!(" to=functions.{n}<|channel|>commentary json<|message|>"),
                ] {
                    tags.push(tag(&begin, schema(&t.parameters), json!("<|call|>")));
                }
            }
        }
        if matches!(self.choice, Choice::Auto | Choice::None) {
            tags.push(tag(
                "<|channel|>final<|message|>",
                any_text(&[]),
                json!(ENDS),
            ));
        }
        json!({
            "type": "tags_with_separator",
            "tags": tags,
            "separator": "<|start|>assistant",
            "at_least_one": true,
        })
    }
}

#[cfg(test)]
mod tests {
    use alloc::string::ToString;

    use super::*;

    fn tools() -> Value {
        json!([
            {"type": "function", "function": {"name": "get_weather", "description": "w",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}},
            {"type": "function", "function": {"name": "now"}}
        ])
    }

    fn opts(choice: Option<&str>, parallel: bool, reasoning: bool) -> PresetOptions {
        PresetOptions {
            tool_choice: choice.map(String::from),
            parallel_tool_calls: parallel,
            reasoning,
        }
    }

    #[test]
    fn qwen3_auto_golden() {
        let got = preset("qwen3", &tools(), &opts(None, true, false)).unwrap();
        let args = json!({"type": "object", "properties": {"city": {"type": "string"}},
                          "required": ["city"]});
        let want = json!({"type": "structural_tag", "format": {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "tags": [
                {"type": "tag", "begin": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ",
                 "content": {"type": "json_schema", "json_schema": args},
                 "end": "}\n</tool_call>"},
                {"type": "tag", "begin": "<tool_call>\n{\"name\": \"now\", \"arguments\": ",
                 "content": {"type": "json_schema", "json_schema": true},
                 "end": "}\n</tool_call>"}
            ],
            "at_least_one": false,
            "stop_after_first": false,
            "excludes": ["<think>", "</think>"]
        }});
        assert_eq!(got, want);
        // hermes is the same format.
        assert_eq!(
            preset("hermes", &tools(), &opts(None, true, false)).unwrap(),
            want
        );
    }

    #[test]
    fn choices_and_reasoning() {
        let forced = preset("qwen3", &tools(), &opts(Some("now"), false, true)).unwrap();
        let f = &forced["format"];
        assert_eq!(f["type"], "sequence");
        assert_eq!(f["elements"][0]["end"], "</think>");
        assert_eq!(f["elements"][1]["value"], "\n\n");
        assert_eq!(f["elements"][2]["type"], "tag");
        assert!(
            f["elements"][2]["begin"]
                .as_str()
                .unwrap()
                .contains("\"now\"")
        );
        let req = preset("qwen3", &tools(), &opts(Some("required"), false, false)).unwrap();
        assert_eq!(req["format"]["at_least_one"], true);
        assert_eq!(req["format"]["stop_after_first"], true);
        let none = preset("qwen3", &tools(), &opts(Some("none"), false, false)).unwrap();
        assert_eq!(none["format"]["type"], "any_text");
    }

    #[test]
    fn other_families_shapes() {
        let l = preset("llama3", &tools(), &opts(None, false, false)).unwrap();
        assert_eq!(
            l["format"]["triggers"],
            json!(["{\"name\": ", "<|python_tag|>"])
        );
        assert_eq!(
            l["format"]["tags"][0]["begin"],
            "{\"name\": \"get_weather\", \"parameters\": "
        );
        let m = preset("mistral", &tools(), &opts(Some("required"), true, false)).unwrap();
        assert_eq!(m["format"]["begin"], "[TOOL_CALLS][");
        assert_eq!(m["format"]["content"]["separator"], ", ");
        assert_eq!(m["format"]["end"], "]");
        let d = preset("deepseek", &tools(), &opts(None, true, true)).unwrap();
        let calls = &d["format"]["elements"][1]["tags"][0];
        assert_eq!(calls["begin"], "<｜tool▁calls▁begin｜>");
        assert_eq!(
            calls["content"]["tags"][1]["begin"],
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>now\n```json\n"
        );
        assert_eq!(
            calls["content"]["tags"][1]["end"],
            "\n```<｜tool▁call▁end｜>"
        );
        let h = preset("harmony", &tools(), &opts(None, true, true)).unwrap();
        let tags = h["format"]["tags"].as_array().unwrap();
        // analysis + 4 call spellings per tool + final.
        assert_eq!(tags.len(), 1 + 8 + 1);
        assert_eq!(
            tags[1]["begin"],
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        );
        assert_eq!(h["format"]["separator"], "<|start|>assistant");
        for f in families() {
            let v = preset(f, &tools(), &PresetOptions::default()).unwrap();
            assert_eq!(v["type"], "structural_tag", "{f}");
        }
    }

    #[test]
    fn errors_have_pointers() {
        let e = preset("gpt2", &tools(), &PresetOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("at #/family:"), "{}", e.message);
        let bad = json!([{"type": "function", "function": {"parameters": {}}}]);
        let e = preset("qwen3", &bad, &PresetOptions::default()).unwrap_err();
        assert!(
            e.to_string().starts_with("at /0/function/name:"),
            "{}",
            e.message
        );
        let e = preset("qwen3", &json!({}), &PresetOptions::default()).unwrap_err();
        assert!(e.to_string().starts_with("at #:"), "{}", e.message);
        let e = preset("qwen3", &tools(), &opts(Some("nope"), false, false)).unwrap_err();
        assert!(
            e.to_string().starts_with("at #/tool_choice:"),
            "{}",
            e.message
        );
        let e = preset("qwen3", &json!([]), &opts(Some("required"), false, false)).unwrap_err();
        assert_eq!(e.kind, GrammarErrorKind::Unsupported);
    }

    // ---- End to end through `Grammar::from_structural_tag` ------------------------------

    use crate::grammar::json::JsonOptions;
    use crate::sync::Arc;
    use crate::{Grammar, Limits, Matcher, Vocabulary};

    /// Every single byte but `0xFF` plus an EOS special.
    fn vocab() -> Arc<Vocabulary> {
        let mut tokens: Vec<Vec<u8>> = (0u8..0xFF).map(|b| vec![b]).collect();
        tokens.push(b"<|eos|>".to_vec());
        Arc::new(Vocabulary::new(tokens, &[255], &[255]).unwrap())
    }

    /// The grammar of a preset (a compile error fails the test).
    fn compiled(tag: &Value) -> Option<Grammar> {
        let text = serde_json::to_string(tag).unwrap();
        match Grammar::from_structural_tag(
            &text,
            &JsonOptions::default(),
            &vocab(),
            &Limits::default(),
        ) {
            Ok(g) => Some(g),
            Err(e) => panic!("{e} in {text}"),
        }
    }

    fn accepts(g: &Grammar, text: &str) -> bool {
        let mut m = Matcher::new(g);
        m.try_consume_bytes(text.as_bytes()) && m.is_accepting()
    }

    #[test]
    fn e2e_every_family_and_choice_compiles() {
        for f in families() {
            for choice in [None, Some("none"), Some("required"), Some("get_weather")] {
                for (parallel, reasoning) in [(false, false), (true, true)] {
                    let tag = preset(f, &tools(), &opts(choice, parallel, reasoning)).unwrap();
                    if compiled(&tag).is_none() {
                        return;
                    }
                }
            }
        }
    }

    #[test]
    fn e2e_qwen3() {
        let tag = preset("qwen3", &tools(), &opts(None, false, true)).unwrap();
        let Some(g) = compiled(&tag) else { return };
        let call = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
        assert!(accepts(&g, &format!("<think>\nhm</think>\n\nSure. {call}")));
        assert!(accepts(&g, "</think>\n\nNo tool needed."));
        assert!(!accepts(
            &g,
            &format!("</think>\n\n{}", call.replace("\"Paris\"", "3"))
        ));
        assert!(!accepts(
            &g,
            "</think>\n\n<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"
        ));
        // Without parallel calls, nothing after the first call.
        assert!(!accepts(&g, &format!("</think>\n\n{call}{call}")));
    }

    #[test]
    fn e2e_deepseek_and_mistral_forced() {
        let tag = preset(
            "deepseek",
            &tools(),
            &opts(Some("get_weather"), false, false),
        )
        .unwrap();
        let Some(g) = compiled(&tag) else { return };
        assert!(accepts(
            &g,
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Oslo\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ));
        assert!(!accepts(&g, "text"));
        let tag = preset("mistral", &tools(), &opts(Some("required"), true, false)).unwrap();
        let Some(g) = compiled(&tag) else { return };
        assert!(accepts(
            &g,
            "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}}, {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]"
        ));
        assert!(accepts(
            &g,
            "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}, \"id\": \"abc123XYZ\"}]"
        ));
        assert!(!accepts(
            &g,
            "[TOOL_CALLS][{\"name\": \"now\", \"arguments\": {}, \"id\": \"abc\"}]"
        ));
    }

    #[test]
    fn e2e_harmony() {
        let tag = preset("harmony", &tools(), &opts(None, true, true)).unwrap();
        let Some(g) = compiled(&tag) else { return };
        assert!(accepts(
            &g,
            "<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Oslo\"}<|call|>"
        ));
        assert!(accepts(&g, "<|channel|>final<|message|>Hi.<|return|>"));
    }

    #[test]
    fn e2e_xml_style_in_a_tag() {
        let args = json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
        let tag = json!({"type": "structural_tag", "format": {
            "type": "tag", "begin": "<function=get_weather>\n",
            "content": {"type": "json_schema", "json_schema": args, "style": "qwen_xml"},
            "end": "\n</function>"}});
        let Some(g) = compiled(&tag) else { return };
        assert!(accepts(
            &g,
            "<function=get_weather>\n<parameter=city>\na < b\n</parameter>\n</function>"
        ));
        assert!(!accepts(&g, "<function=get_weather>\n</function>"));
    }
}
