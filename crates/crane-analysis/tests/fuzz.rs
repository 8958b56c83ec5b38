//! Cell analysis never panics or overflows: random token soup in Python and IPython syntax,
//! and cells nested or chained far past what real code does, are analysed or refused.
//! `PROPTEST_CASES` sets the number of inputs per property (docs/benchmarks.md has the longer
//! runs).

use crane_analysis::{analyze_cell, bindings, targets_for_probe};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "a",
    "df",
    "x",
    "1",
    "0.5",
    "'s'",
    "\"t\"",
    "f'{a}'",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ".",
    ",",
    ":",
    "=",
    "+",
    "-",
    "*",
    "**",
    "//",
    "%",
    "@",
    "==",
    "<",
    "not ",
    " and ",
    " or ",
    " if ",
    " else ",
    "lambda ",
    "def ",
    "class ",
    "return ",
    "for ",
    " in ",
    "while ",
    "try:",
    "except",
    "with ",
    " as ",
    "import ",
    "from ",
    "yield ",
    "await ",
    "async ",
    "del ",
    "global ",
    "nonlocal ",
    "%time ",
    "%%capture out\n",
    "!ls ",
    "?",
    "\n",
    "\n    ",
    " ",
    "\\\n",
    "#c\n",
    ";",
    "...",
    "*a",
    "**k",
    ":=",
    "match ",
    "case ",
    "_",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..120).prop_map(|tokens| tokens.concat())
}

fn deep_cell() -> impl Strategy<Value = String> {
    (
        prop::sample::select(&["(", "[", "-", "not ", "a.", "f(", "lambda: ", "a + "][..]),
        1usize..3_000,
    )
        .prop_map(|(opener, depth)| {
            let closer = match opener {
                "(" | "f(" => ")",
                "[" => "]",
                _ => "",
            };
            format!("x = {}1{}", opener.repeat(depth), closer.repeat(depth))
        })
}

proptest! {
    #[test]
    fn token_soup_is_analysed_or_refused(source in token_soup()) {
        if let Ok(analysis) = analyze_cell(&source) {
            let _ = targets_for_probe(&analysis);
        }
        let _ = bindings(&[source.as_str()]);
    }

    #[test]
    fn deep_cells_are_analysed_or_refused(source in deep_cell()) {
        let _ = analyze_cell(&source);
    }

    #[test]
    fn arbitrary_text_is_analysed_or_refused(source in "\\PC{0,200}") {
        let _ = analyze_cell(&source);
    }
}
