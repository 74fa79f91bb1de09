#!/usr/bin/env python3
"""Writes the committed seed corpora: tests/fuzz/seeds/<target>/seed-*.

Run from the repository root with ../shared beside it (the JSON Schema seeds are a fixed
sample of ../shared/data/maskbench and the JSON-Schema-Test-Suite). Deterministic; keeps the
whole committed corpus under about 1 MB."""
import hashlib, json, os, random, re, struct, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SHARED = os.path.join(ROOT, "..", "shared", "data")
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/data"
OUT = os.path.join(ROOT, "tests", "fuzz", "seeds")


# Seeds left out: they take longer than the 10 s timeout under ASan on a loaded 2-core
# machine (0.4 s in release) and live in regressions/json_schema/ instead.
SLOW = {"seed-e4f56fd38489"}


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:12]
    if name in SLOW:
        return
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def lark_sources():
    out = []
    for rel in ["core/src/grammar/lark/tests.rs", "tests/tests/lark_cases.rs", "tests/tests/lark_json.rs"]:
        text = open(os.path.join(ROOT, rel)).read()
        for m in re.finditer(r'r(#*)"(.*?)"\1', text, re.S):
            s = m.group(2)
            if re.search(r"^\s*start\s*:", s, re.M):
                out.append(s)
    doc = open(os.path.join(ROOT, "core", "docs", "lark.md")).read()
    for m in re.finditer(r"```(?:lark)?\n(.*?)```", doc, re.S):
        if re.search(r"^\s*start\s*:", m.group(1), re.M):
            out.append(m.group(1))
    return sorted(set(out))


REGEXES = [
    r"[a-z]+", r"-?[0-9]+(\.[0-9]+)?", r"(ab|cd)*e", r"\d{3}-\d{4}", r"(a|a)*b", r"[^\x00-\x1f]{0,10}",
    r"\{\x22[a-z]+\x22: (true|false)\}", r"(?i)hello|world", r"\w+@\w+\.com", r"(a{2,5}b?){1,3}",
    r"[\p{L}]+", r"(?s).{0,4}x", r"(foo|bar|baz)+[0-9]?", r"\\[nrt]|[a-f0-9]{2}", r"a*?b+?c??",
    r"(?-u:[\x80-\xff])+", r"[ \t\n]*(yes|no)[ \t\n]*", r"^abc$", r"(((a)))*", r"[\u{1F600}-\u{1F64F}]",
]

TOKENIZERS = [
    '{"added_tokens":[{"id":5,"content":"<|endoftext|>","special":true},{"id":6,"content":"<think>","special":false}],'
    '"normalizer":null,"pre_tokenizer":{"type":"ByteLevel"},"decoder":null,"model":{"type":"BPE","vocab":{"a":0,"Ġb":1,"Ċ":3}}}',
    '{"added_tokens":[{"id":2,"content":"</s>","special":true},{"id":0,"content":"<unk>","special":true}],'
    '"pre_tokenizer":{"type":"Metaspace","replacement":"▁"},"model":{"type":"BPE","byte_fallback":true,'
    '"unk_token":"<unk>","vocab":{"<unk>":0,"<0x0A>":1,"</s>":2,"▁hi":3}}}',
    '{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"a":4294967295}}}',
    '{"pre_tokenizer":{"type":"ByteLevel"},"model":{"vocab":{"a":0,"b":1,"ab":2}},'
    '"added_tokens":[{"id":3,"content":"<|eot_id|>","special":true},{"id":4,"content":"<|im_end|>","special":true}]}',
    '{"model":{"type":"WordPiece","vocab":{"a":0}}}',
    '{"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"!":0,"\\"":1,"Ġ":2,"ĠĠ":3},"merges":["Ġ Ġ"]}}',
]


# GBNF beyond llama.cpp's example grammars: token terminals, every postfix form, layout.
GBNF_HAND = [
    'root ::= <|tool|> "{" [a-z]{1,8} "}" !<|eos|>* <|eos|>',
    'root ::= ("a" | [^\\n\\x00-\\x1f]+ | .){2,4} "\\u00e9\\U0001F600" # c\nx ::= root?',
    'root ::= expr\nexpr ::= expr "+" term | term\nterm ::= [0-9]+',
    'root ::= (\n  "x" |\n  "y"\n)* [z-a] [] "" <[1]> !<[2]>',
]


def gbnf_sources():
    d = os.path.join(SHARED, "gbnf")
    files = sorted(f for f in os.listdir(d) if f.endswith(".gbnf")) if os.path.isdir(d) else []
    return [open(os.path.join(d, f), encoding="utf-8").read() for f in files] + GBNF_HAND


def schemas():
    rng = random.Random(15)
    out = []
    mb = os.path.join(SHARED, "maskbench")
    files = sorted(os.listdir(mb)) if os.path.isdir(mb) else []
    for name in rng.sample(files, min(len(files), 1500)):
        try:
            s = json.load(open(os.path.join(mb, name)))["schema"]
        except Exception:
            continue
        text = json.dumps(s, separators=(",", ":"))
        if len(text) <= 1200:
            out.append(text)
        if len(out) >= 150:
            break
    suite = os.path.join(SHARED, "json-schema-test-suite", "tests", "draft2020-12")
    cases = []
    if os.path.isdir(suite):
        for name in sorted(os.listdir(suite)):
            if not name.endswith(".json"):
                continue
            for group in json.load(open(os.path.join(suite, name))):
                text = json.dumps(group["schema"], separators=(",", ":"))
                if len(text) <= 600:
                    cases.append(text)
    out += rng.sample(cases, min(len(cases), 150))
    return out + HAND_SCHEMAS


# Shapes the samples above miss: an allOf of several `contains` (kept together, issue 15),
# and its negation.
REQUESTS = [
    '{"grammars":[{"lark_grammar":"start: \\"x=\\" @num \\";\\" @w"},'
    '{"name":"num","json_schema":{"type":"integer"}},{"name":"w","lark_grammar":"start: W @num\\nW: /[a-z]+/"}]}',
    '{"grammars":[{"lark_grammar":"start: @a"},{"name":"a","lark_grammar":"start: \\"x\\" @a"}]}',
    '{"lark_grammar":"%llguidance {}\\nstart: /(.|\\\\n)*/ \\"!\\""}',
]

HAND_SCHEMAS = [
    '{"type":"array","allOf":[{"contains":{"enum":["a","b"]},"maxContains":2},'
    '{"contains":{"const":"c"},"minContains":2}],"unevaluatedItems":{"const":"d"}}',
    '{"type":"array","not":{"allOf":[{"contains":{"type":"integer"},"minContains":2,'
    '"maxContains":3},{"contains":{"type":"string"},"maxContains":1}]},'
    '"prefixItems":[{"type":"string"}]}',
]


def structural_tags():
    """Structural tags (XGrammar's format): one or two of each format type, nested."""
    obj = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
           "required": ["a"]}
    tag = lambda begin, content, end: {"type": "tag", "begin": begin, "content": content, "end": end}
    text = {"type": "any_text"}
    fmts = [
        {"type": "const_string", "value": "hello"},
        {"type": "json_schema", "json_schema": obj},
        {"type": "json_schema", "json_schema": obj, "any_order": True, "max_whitespace_cnt": 2},
        {"type": "json_schema", "json_schema": obj, "style": "qwen_xml"},
        {"type": "any_text", "excludes": ["</a>", "<b"], "max_chars": 20},
        {"type": "grammar", "grammar": 'start: "x" start | "y"'},
        {"type": "regex", "pattern": "[a-z]{1,4}[0-9]?"},
        {"type": "sequence", "elements": [text, tag("<a>", text, ["</a>", "</A>"])]},
        {"type": "or", "elements": [{"type": "const_string", "value": "p"}, {"type": "plus", "content": {"type": "const_string", "value": "q"}}]},
        {"type": "repeat", "min": 1, "max": 3, "content": {"type": "optional", "content": {"type": "star", "content": {"type": "const_string", "value": "r"}}}},
        {"type": "triggered_tags", "triggers": ["<f="], "tags": [tag("<f=a>", {"type": "json_schema", "json_schema": obj}, "</f>"), tag("<f=b>", text, "</f>")], "excludes": ["<|tool|>"]},
        {"type": "triggered_tags", "triggers": ["<|tool|>"], "tags": [tag("<|tool|>", {"type": "json_schema", "json_schema": obj}, "<|eos|>")], "at_least_one": True, "stop_after_first": True},
        {"type": "tags_with_separator", "tags": [tag("<a>", text, "</a>")], "separator": ",", "at_least_one": True},
        {"type": "dispatch", "rules": [["call:", {"type": "json_schema", "json_schema": obj}]], "loop": False, "excludes": ["zz"]},
        {"type": "token", "token": "<|tool|>"},
        {"type": "any_tokens", "exclude_tokens": ["<|eos|>"]},
        {"type": "token_triggered_tags", "trigger_tokens": ["<|tool|>"], "tags": [tag({"type": "token", "token": "<|tool|>"}, text, "<|eos|>")]},
    ]
    out = [json.dumps({"type": "structural_tag", "format": f}) for f in fmts]
    out.append(json.dumps({"type": "structural_tag", "structures": [{"begin": "<f>", "schema": obj, "end": "</f>"}], "triggers": ["<f"]}))
    return out


def main():
    for t in structural_tags():
        write("structural_tag", t)
    larks = lark_sources()
    for s in larks:
        write("lark", s)
    # LLGuidance requests: grammar lists with @name references (the lark target reads both).
    for req in REQUESTS:
        write("lark", req)
    for r in REGEXES:
        write("regex", r)
    for i, g in enumerate(gbnf_sources()):
        write("gbnf", bytes([i & 1]) + g.encode())
    schs = schemas()
    for i, s in enumerate(schs):
        write("json_schema", bytes([i & 1]) + s.encode())
    for t in TOKENIZERS:
        write("tokenizer_json", t)
    rng = random.Random(7)
    for g in range(3):
        for _ in range(6):
            write("matcher_ops", bytes([g] + [rng.randrange(256) for _ in range(40)]))
    texts = [(0, s) for s in larks[:10]] + [(1, r) for r in REGEXES[:8]] + [(2, s) for s in schs[:10]]
    for kind, s in texts:
        b = s.encode()
        flags = kind | (rng.randrange(8) << 2)
        ops = bytes(rng.randrange(256) for _ in range(30))
        write("c_abi", bytes([flags]) + struct.pack("<H", len(b)) + b + ops)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(OUT) for f in fs)
    print(f"{len(larks)} lark, {len(REGEXES)} regex, {len(schs)} schemas; corpus {total} bytes")


if __name__ == "__main__":
    sys.exit(main())
