//! The answer parser never panics: arbitrary text, and near-JSON answers with fields of the
//! wrong type, are read (possibly repaired) or refused with an error. `PROPTEST_CASES` sets the
//! number of inputs per property (docs/benchmarks.md has the longer runs).

use crane_llm::parse_answer;
use proptest::prelude::*;

const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    "\"",
    "'",
    ":",
    ",",
    "\"detection\"",
    "\"reasoning\"",
    "\"exception\"",
    "\"line\"",
    "\"confidence\"",
    "\"evidence\"",
    "true",
    "false",
    "null",
    "True",
    "None",
    "1",
    "-3",
    "0.7",
    "1e999",
    "\"KeyError\"",
    "```json\n",
    "```",
    "\n",
    " ",
    "\\",
    "\\u00e9",
    "\\ud800",
    "NaN",
    "Infinity",
    "// c\n",
    "/* c */",
    "yes",
    "Answer:",
    "\u{feff}",
];

fn near_json() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(PIECES), 0..60).prop_map(|pieces| pieces.concat())
}

proptest! {
    #[test]
    fn near_json_is_read_or_refused(raw in near_json()) {
        let _ = parse_answer(&raw);
    }

    #[test]
    fn arbitrary_text_is_read_or_refused(raw in "\\PC{0,300}") {
        let _ = parse_answer(&raw);
    }
}
