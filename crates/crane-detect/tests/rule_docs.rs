//! The rule modules' headers name the rules they report: each file under `src/rules/models/`
//! and `src/rules/core/` that reports a rule (`RuleCode::Variant` in its code) names that
//! rule's code in its module doc (`//!`), one by one or in a range such as `SK001-SK014`, and
//! every code a header names is in the catalogue.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crane_detect::RuleCode;

/// The catalogue's codes by the name of their `RuleCode` variant.
fn codes_by_variant() -> BTreeMap<String, &'static str> {
    RuleCode::ALL
        .iter()
        .map(|code| (format!("{code:?}"), code.code()))
        .collect()
}

/// The rule files: every `.rs` file of the folders whose modules report rules, and of the
/// folders within them (a module split into submodules).
fn rule_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/rules");
    let mut files = Vec::new();
    let mut folders = vec![root.join("models"), root.join("core")];
    while let Some(folder) = folders.pop() {
        let entries = fs::read_dir(&folder).expect("the rules folder is readable");
        for entry in entries {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() > 10, "too few rule files found: {files:?}");
    assert!(
        files
            .iter()
            .any(|path| path.ends_with("core/interp/mod.rs")),
        "the files of a module folder are found: {files:?}"
    );
    files
}

/// The module doc: the file's leading `//!` lines, without the marker.
fn header(source: &str) -> String {
    source
        .lines()
        .take_while(|line| line.starts_with("//!"))
        .map(|line| line.trim_start_matches("//!"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The variants of `RuleCode` the file's code (not its comments) names.
fn reported_variants(source: &str) -> BTreeSet<String> {
    let mut variants = BTreeSet::new();
    for line in source.lines() {
        let code = line.split("//").next().unwrap_or_default();
        for (at, _) in code.match_indices("RuleCode::") {
            let rest = &code[at + "RuleCode::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != "ALL" {
                variants.insert(name);
            }
        }
    }
    variants
}

/// A rule code at the start of `text`: two capital letters and three digits.
fn code_at(text: &str) -> Option<(&str, u32)> {
    let bytes = text.as_bytes();
    let is_code = bytes.len() >= 5
        && bytes[..2].iter().all(u8::is_ascii_uppercase)
        && bytes[2..5].iter().all(u8::is_ascii_digit)
        && bytes.get(5).is_none_or(|b| !b.is_ascii_alphanumeric());
    is_code.then(|| (&text[..2], text[2..5].parse().expect("three digits")))
}

/// The codes a header names: each code, and each code within a range `AB001-AB004` of one
/// prefix.
fn named_codes(header: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let mut rest = header;
    while let Some((at, _)) = rest.char_indices().find(|(at, _)| {
        code_at(&rest[*at..]).is_some()
            && rest[..*at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_ascii_alphanumeric())
    }) {
        let (prefix, first) = code_at(&rest[at..]).expect("found above");
        named.insert(format!("{prefix}{first:03}"));
        rest = &rest[at + 5..];
        let after_dash = rest.strip_prefix('-').or_else(|| rest.strip_prefix('–'));
        if let Some((end_prefix, last)) = after_dash.and_then(code_at) {
            if end_prefix == prefix && last > first {
                for number in first..=last {
                    named.insert(format!("{prefix}{number:03}"));
                }
                rest = &after_dash.expect("checked")[5..];
            }
        }
    }
    named
}

#[test]
fn each_rule_files_header_names_every_code_the_file_reports() {
    let catalogue = codes_by_variant();
    let known: BTreeSet<&str> = catalogue.values().copied().collect();
    let mut problems = Vec::new();
    for path in rule_files() {
        let source = fs::read_to_string(&path).expect("a rule file is readable");
        let name = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap_or(&path);
        let named = named_codes(&header(&source));
        let mut reported = BTreeSet::new();
        for variant in reported_variants(&source) {
            match catalogue.get(&variant) {
                Some(code) => {
                    reported.insert(code.to_string());
                }
                None => problems.push(format!(
                    "{}: RuleCode::{variant} is not in the catalogue",
                    name.display()
                )),
            }
        }
        let missing: Vec<&String> = reported.difference(&named).collect();
        if !missing.is_empty() {
            problems.push(format!(
                "{}: its `//!` header does not name {missing:?}",
                name.display()
            ));
        }
        let unknown: Vec<&String> = named
            .iter()
            .filter(|code| !known.contains(code.as_str()))
            .collect();
        if !unknown.is_empty() {
            problems.push(format!(
                "{}: its header names {unknown:?}, which the catalogue does not have",
                name.display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn codes_and_ranges_are_read_from_a_header() {
    let named = named_codes(" pandas: PD001, PD003-PD005 (not XPD006), and SK01 or NB0099.");
    let expected: BTreeSet<String> = ["PD001", "PD003", "PD004", "PD005"]
        .iter()
        .map(|code| code.to_string())
        .collect();
    assert_eq!(named, expected);
    let reported = reported_variants(
        "report(RuleCode::MissingColumn, 1);\n// RuleCode::UndefinedName in a comment\nRuleCode::ALL",
    );
    assert_eq!(reported, BTreeSet::from(["MissingColumn".to_string()]));
}
