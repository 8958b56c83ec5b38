//! What Python's `json` module (and so nbformat) reads but a strict JSON parser refuses: a
//! UTF-8 byte-order mark before the document, and escapes of lone UTF-16 surrogates
//! (`"\ud800"` without its pair). crane reads both, as nbformat does; a lone surrogate, which
//! no UTF-8 text can hold, becomes U+FFFD (the replacement character).

use std::borrow::Cow;

const BOM: &str = "\u{feff}";

/// `text` without a leading byte-order mark and with every lone surrogate escape replaced by
/// `\ufffd`; borrowed when there is nothing to change.
pub(crate) fn normalize(text: &str) -> Cow<'_, str> {
    let text = text.strip_prefix(BOM).unwrap_or(text);
    if !has_surrogate_escape(text) {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escaped_unit(bytes, i) {
            Some(0xD800..=0xDBFF) => {
                let paired = escaped_unit(bytes, i + 6).is_some_and(is_low);
                if paired {
                    i += 12;
                } else {
                    out.push_str(&text[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                }
            }
            Some(unit) if is_low(unit) => {
                out.push_str(&text[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            // `\\`, `\"`, `\n`, ...: two bytes; the escaped byte is never the start of another.
            None => i += 2,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    Cow::Owned(out)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

/// The code unit of a `\uXXXX` escape starting at `at`.
fn escaped_unit(bytes: &[u8], at: usize) -> Option<u16> {
    let escape = bytes.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let hex = std::str::from_utf8(&escape[2..]).ok()?;
    u16::from_str_radix(hex, 16).ok()
}

/// A quick scan for `\uD8..`-`\uDF..` so ordinary notebooks are not copied.
fn has_surrogate_escape(text: &str) -> bool {
    text.as_bytes().windows(3).any(|window| {
        window[0] == b'u'
            && matches!(window[1], b'd' | b'D')
            && matches!(window[2], b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
    })
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        assert_eq!(normalize(r#""a\ud800b""#), r#""a\ufffdb""#);
        assert_eq!(normalize(r#""\udc00""#), r#""\ufffd""#);
        assert_eq!(normalize(r#""\ud83d\ude00""#), r#""\ud83d\ude00""#);
        assert_eq!(normalize(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(normalize(r#""\ud800\n""#), r#""\ufffd\n""#);
        assert_eq!(normalize("\u{feff}{}"), "{}");
    }
}
