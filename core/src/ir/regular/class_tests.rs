#[test]
fn ascii_classes_parse() {
    let s = super::ascii_class("[\\x{30}-\\x{39}\\x{61}-\\x{61}]").unwrap();
    assert_eq!(s[1], 0x03FF_0000);
    assert_eq!(s[3], 0b10);
    assert!(super::ascii_class("[^\\x{30}-\\x{39}]").is_none());
    assert!(super::ascii_class("[\\x{30}-\\x{E9}]").is_none());
}
