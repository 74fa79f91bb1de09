//! placeholder
#[test]
fn t() {
    let v = jsonschema::validator_for(
        &sieve_core::grammar::json::serde_json::json!({"type":"integer"}),
    );
    assert!(v.is_ok());
}
