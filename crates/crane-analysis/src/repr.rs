use unicode_general_category::{get_general_category, GeneralCategory};

/// Python's `repr` of a `str`: single quotes unless the text holds a `'` and no `"`; the quote,
/// `\`, `\t`, `\n` and `\r` escaped; other characters that are not printable as `\xhh`,
/// `\uhhhh` or `\Uhhhhhhhh`.
///
/// Printability follows Python's `str.isprintable` on Unicode 16 categories, so a Python on an
/// older Unicode version escapes the characters assigned since then, which this prints as is.
pub fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c => {
                let code = u32::from(c);
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable` for one character: everything but the space in the categories
/// Other (controls, format characters, surrogates, private use, unassigned) and Separator.
fn is_printable(c: char) -> bool {
    use GeneralCategory::*;
    c == ' '
        || !matches!(
            get_general_category(c),
            Control
                | Format
                | Surrogate
                | PrivateUse
                | Unassigned
                | SpaceSeparator
                | LineSeparator
                | ParagraphSeparator
        )
}

/// Python's `repr` of a `float`: the shortest round-trip digits, positional for exponents in
/// `-4..16`, else scientific with a signed two-digit exponent (`1e+16`); `nan`, `inf`, `-inf`.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.into();
    }
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits = mantissa.replace('.', "");
    let sign = if value.is_sign_negative() { "-" } else { "" };
    let body = if (-4..16).contains(&exponent) {
        if exponent >= 0 {
            let integer_len = exponent.unsigned_abs() as usize + 1;
            if digits.len() <= integer_len {
                format!("{digits}{}.0", "0".repeat(integer_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..integer_len], &digits[integer_len..])
            }
        } else {
            let zeros = (exponent.unsigned_abs() - 1) as usize;
            format!("0.{}{digits}", "0".repeat(zeros))
        }
    } else {
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{exponent_sign}{:02}", exponent.abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;

    use super::{python_float_repr, python_repr};

    #[test]
    fn floats_print_like_python() {
        let cases = [
            (0.0, "0.0"),
            (80.0, "80.0"),
            (0.42, "0.42"),
            (-5.48891652, "-5.48891652"),
            (1720.2008799963187, "1720.2008799963187"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (-2.5e20, "-2.5e+20"),
            (0.9999999999999999, "0.9999999999999999"),
            (-0.0, "-0.0"),
            (f64::NAN, "nan"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_float_repr(value), expected, "{value}");
        }
    }

    /// Each expected string is what CPython 3.11's `repr` printed for the text.
    #[test]
    fn strings_print_like_python_repr() {
        let cases = [
            ("", "''"),
            ("price", "'price'"),
            ("it's", "\"it's\""),
            ("say \"hi\"", "'say \"hi\"'"),
            ("it's \"both\"", "'it\\'s \"both\"'"),
            ("'\"'\"", "'\\'\"\\'\"'"),
            ("back\\slash", "'back\\\\slash'"),
            ("tab\there\nnew\rret", "'tab\\there\\nnew\\rret'"),
            ("\u{0}\u{7}\u{1b}\u{7f}", "'\\x00\\x07\\x1b\\x7f'"),
            ("\u{85}\u{9f}", "'\\x85\\x9f'"),
            ("é ñ 日本 😀", "'é ñ 日本 😀'"),
            ("\u{301}combining", "'\u{301}combining'"),
            ("\u{a0}nbsp\u{2007}\u{3000}", "'\\xa0nbsp\\u2007\\u3000'"),
            ("\u{2028}\u{2029}", "'\\u2028\\u2029'"),
            (
                "\u{ad}\u{200b}\u{200e}\u{202e}\u{2066}\u{61c}\u{feff}",
                "'\\xad\\u200b\\u200e\\u202e\\u2066\\u061c\\ufeff'",
            ),
            ("\u{e0041}", "'\\U000e0041'"),
            ("\u{e000}\u{f0000}", "'\\ue000\\U000f0000'"),
            ("\u{378}\u{fffe}\u{10ffff}", "'\\u0378\\ufffe\\U0010ffff'"),
        ];
        for (text, expected) in cases {
            assert_eq!(python_repr(text), expected, "{text:?}");
        }
    }

    /// For every character the project's Python has a category for: escaped exactly when that
    /// Python's `repr` escapes it.
    #[test]
    fn every_assigned_character_is_escaped_as_python_escapes_it() {
        let python = std::env::var_os("CRANE_PYTHON").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
            PathBuf::from,
        );
        let script = "import sys, unicodedata\n\
            sys.stdout.write(''.join(\n\
                '-' if unicodedata.category(chr(c)) in ('Cn', 'Cs')\n\
                else 'k' if repr(chr(c)) == \"'\" + chr(c) + \"'\" else 'e'\n\
                for c in range(0x110000)))";
        let output = Command::new(&python)
            .args(["-c", script])
            .output()
            .unwrap_or_else(|error| panic!("{} runs: {error}", python.display()));
        assert!(output.status.success(), "the Python check failed");
        let verdicts = String::from_utf8(output.stdout).expect("ASCII from Python");
        assert_eq!(verdicts.len(), 0x110000);
        let mut compared = 0;
        for (code, verdict) in (0u32..).zip(verdicts.chars()) {
            let Some(c) = char::from_u32(code).filter(|_| verdict != '-') else {
                continue;
            };
            if matches!(c, '\'' | '\\') {
                continue;
            }
            let kept = python_repr(&c.to_string()) == format!("'{c}'");
            assert_eq!(kept, verdict == 'k', "U+{code:04X}");
            compared += 1;
        }
        assert!(compared > 280_000, "{compared} characters compared");
    }
}
