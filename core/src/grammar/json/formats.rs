//! Regexes for the `format` values we enforce (over the decoded string; none of them can
//! match `"`, `\` or control characters, so they apply to the encoded text unchanged).
//!
//! Sources: RFC 3339 (date, time, date-time, duration in its appendix A), RFC 4291 (ipv6),
//! RFC 1123 (hostname labels), RFC 3986 (uri, uri-reference; the character repertoire, with
//! `%` followed by two hex digits), RFC 4122 (uuid). Known looseness, documented in the
//! module coverage table: `date` accepts February 29 in every year, `hostname` does not check
//! the 253-byte total, `email` is the common dot-atom form (no quoted local parts or
//! address literals).

const DATE: &str = r"[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-9]))";
const TIME: &str = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const DUR_TIME: &str = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
const DEC_OCTET: &str = r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
const LABEL: &str = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const URI_CHAR: &str = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})";

/// The regex (`regex-syntax` syntax, full match) for a known format, or `None`.
pub(crate) fn format_regex(name: &str) -> Option<alloc::string::String> {
    use alloc::format;
    let h16 = "[0-9A-Fa-f]{1,4}";
    let ipv4 = format!(r"{DEC_OCTET}(?:\.{DEC_OCTET}){{3}}");
    Some(match name {
        "date" => DATE.into(),
        "time" => TIME.into(),
        "date-time" => format!("{DATE}[Tt]{TIME}"),
        "duration" => format!(
            "P(?:(?:[0-9]+D|[0-9]+M(?:[0-9]+D)?|[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?)(?:{DUR_TIME})?|{DUR_TIME}|[0-9]+W)"
        ),
        "email" => {
            let atom = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
            format!(r"{atom}(?:\.{atom})*@{LABEL}(?:\.{LABEL})*")
        }
        "hostname" => format!(r"{LABEL}(?:\.{LABEL})*\.?"),
        "ipv4" => ipv4,
        "ipv6" => {
            let ls32 = format!("(?:{h16}:{h16}|{ipv4})");
            let mut alts = alloc::vec::Vec::new();
            alts.push(format!("(?:{h16}:){{6}}{ls32}"));
            alts.push(format!("::(?:{h16}:){{5}}{ls32}"));
            alts.push(format!("(?:{h16})?::(?:{h16}:){{4}}{ls32}"));
            alts.push(format!(
                "(?:(?:{h16}:){{0,1}}{h16})?::(?:{h16}:){{3}}{ls32}"
            ));
            alts.push(format!(
                "(?:(?:{h16}:){{0,2}}{h16})?::(?:{h16}:){{2}}{ls32}"
            ));
            alts.push(format!("(?:(?:{h16}:){{0,3}}{h16})?::{h16}:{ls32}"));
            alts.push(format!("(?:(?:{h16}:){{0,4}}{h16})?::{ls32}"));
            alts.push(format!("(?:(?:{h16}:){{0,5}}{h16})?::{h16}"));
            alts.push(format!("(?:(?:{h16}:){{0,6}}{h16})?::"));
            format!("(?:{})", alts.join("|"))
        }
        "uuid" => {
            r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".into()
        }
        "uri" => format!(r"[A-Za-z][A-Za-z0-9+\-.]*:{URI_CHAR}*"),
        "uri-reference" => {
            // A URI, or a relative reference whose first segment has no `:`.
            let nc = r"(?:[A-Za-z0-9\-._~@!$&'()*+,;=]|%[0-9A-Fa-f]{2})";
            format!(r"[A-Za-z][A-Za-z0-9+\-.]*:{URI_CHAR}*|{nc}*(?:[/?#]{URI_CHAR}*)?")
        }
        _ => return None,
    })
}

/// Formats defined by the JSON Schema specification that are not enforced here (validators
/// that assert formats check them, so ignoring them is a reported superset).
pub(crate) fn is_spec_format(name: &str) -> bool {
    matches!(
        name,
        "regex"
            | "iri"
            | "iri-reference"
            | "idn-email"
            | "idn-hostname"
            | "json-pointer"
            | "relative-json-pointer"
            | "uri-template"
    )
}
