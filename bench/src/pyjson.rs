//! Python's `json.dumps(data, ensure_ascii=False)` spelling of a value: the serializer lives in
//! core (`sieve_core::grammar::json::pydumps`), where the JSON Schema compiler uses it too.

pub use sieve_core::grammar::json::pydumps::{dumps, dumps_indent, float_repr};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn floats_like_python() {
        assert_eq!(float_repr(1.0), "1.0");
        assert_eq!(float_repr(0.1), "0.1");
        assert_eq!(float_repr(1e-5), "1e-05");
        assert_eq!(float_repr(0.0001), "0.0001");
        assert_eq!(float_repr(1.5e16), "1.5e+16");
        assert_eq!(float_repr(1e15), "1000000000000000.0");
        assert_eq!(float_repr(-2.5), "-2.5");
        assert_eq!(float_repr(123456789.125), "123456789.125");
        assert_eq!(float_repr(1e100), "1e+100");
        assert_eq!(float_repr(-0.0), "-0.0");
    }

    #[test]
    fn dumps_like_python() {
        let v: Value =
            serde_json::from_str(r#"{"b": [1, 2.0, "x\n\u0001é"], "a": {}, "c": null}"#).unwrap();
        assert_eq!(
            dumps(&v),
            "{\"b\": [1, 2.0, \"x\\n\\u0001é\"], \"a\": {}, \"c\": null}"
        );
        // `json.dumps(v, indent=2, ensure_ascii=False)`.
        assert_eq!(
            dumps_indent(&v, 2),
            "{\n  \"b\": [\n    1,\n    2.0,\n    \"x\\n\\u0001é\"\n  ],\n  \"a\": {},\n  \"c\": null\n}"
        );
        let ints: Value = serde_json::from_str(r#"[[1, {"k": []}], 2]"#).unwrap();
        assert_eq!(
            dumps_indent(&ints, 2),
            serde_json::to_string_pretty(&ints).unwrap()
        );
    }
}
