//! Silencing rule findings, in the manner of Ruff's `# noqa`: `# crane: ignore[CODES]` on the
//! finding's line, `# crane: ignore-cell[CODES]` as a comment line of its own for the whole
//! cell (both bare for every rule), and rule sets given from outside the cell (`--ignore`, the
//! `ignore` key of the configuration). A silenced finding is kept, with what silenced it, so
//! nothing disappears without trace. Only rule findings carry a code; the LLM's and a dry run's
//! are never silenced.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::rules::RuleCode;
use crate::Finding;

/// The rules a directive or a setting names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every rule (a bare `# crane: ignore`).
    All,
    Rules(BTreeSet<RuleCode>),
}

impl Selection {
    pub fn covers(&self, rule: RuleCode) -> bool {
        match self {
            Selection::All => true,
            Selection::Rules(rules) => rules.contains(&rule),
        }
    }
}

/// Where a directive applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `ignore`: findings reported on the comment's line.
    Line,
    /// `ignore-cell`: every finding of the cell.
    Cell,
}

/// One `# crane: ...` directive as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    pub scope: Scope,
    pub selection: Selection,
    /// Problems with it (unknown codes are left out of the selection, and said so here).
    pub warnings: Vec<String>,
}

/// Reads the directive in one comment (`# text`), if it holds one. A comment may hold other
/// text before it (`# set below  # crane: ignore[PD001]`) and after the code list. `crane`,
/// `ignore` and codes are read in any case, with any blanks around `#`, `:` and the codes;
/// codes are separated by commas or blanks and may be rule names (`missing-column`). A
/// comment that starts a directive but is not one is `Err` with the reason.
pub fn parse_directive(comment: &str) -> Option<Result<Directive, String>> {
    comment
        .split('#')
        .skip(1)
        .find_map(|segment| directive_in(segment.trim_start()))
}

/// The directive `text` starts with (the text after a `#`).
fn directive_in(text: &str) -> Option<Result<Directive, String>> {
    let head = text.get(..5)?;
    if !head.eq_ignore_ascii_case("crane") {
        return None;
    }
    let rest = text[5..].trim_start().strip_prefix(':')?.trim_start();
    let expected = "expected `# crane: ignore[CODES]`, `# crane: ignore-cell[CODES]`, or either without the brackets for every rule";
    let word_end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(rest.len());
    let scope = match rest[..word_end].to_ascii_lowercase().as_str() {
        "ignore" => Scope::Line,
        "ignore-cell" => Scope::Cell,
        _ => {
            return Some(Err(format!(
                "`{}` is not a crane directive: {expected}",
                comment_text(text)
            )))
        }
    };
    let after = rest[word_end..].trim_start();
    let Some(list) = after.strip_prefix('[') else {
        return Some(Ok(Directive {
            scope,
            selection: Selection::All,
            warnings: Vec::new(),
        }));
    };
    let Some(end) = list.find(']') else {
        return Some(Err(format!(
            "`{}` has no closing `]`: it silences nothing",
            comment_text(text)
        )));
    };
    let mut rules = BTreeSet::new();
    let mut warnings = Vec::new();
    for item in list[..end]
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
    {
        match item.to_ascii_lowercase().parse::<RuleCode>() {
            Ok(rule) => {
                rules.insert(rule);
            }
            Err(_) => warnings.push(format!(
                "unknown rule `{item}` in `{}` (see `crane rules`): it silences nothing",
                comment_text(text)
            )),
        }
    }
    if rules.is_empty() && warnings.is_empty() {
        warnings.push(format!(
            "`{}` names no rule: it silences nothing",
            comment_text(text)
        ));
    }
    Some(Ok(Directive {
        scope,
        selection: Selection::Rules(rules),
        warnings,
    }))
}

fn comment_text(text: &str) -> String {
    format!("# {}", text.trim_end())
}

/// What silenced a finding (the most specific, when several would).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SilencedBy {
    /// `# crane: ignore[...]` on the finding's line.
    Line,
    /// `# crane: ignore-cell[...]` in the cell.
    Cell,
    /// `--ignore` (or `%crane ignore` in a notebook).
    Flag,
    /// The `ignore` key of `crane.toml` or `pyproject.toml`'s `[tool.crane]`.
    Config,
}

/// A rule finding that was silenced: not a crash prediction, but reported as such.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Silenced {
    #[serde(flatten)]
    pub finding: Finding,
    pub by: SilencedBy,
}

/// Rules silenced from outside the cell.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ignored {
    /// `--ignore`, `%crane ignore`.
    pub flag: BTreeSet<RuleCode>,
    /// The configuration file's `ignore`.
    pub config: BTreeSet<RuleCode>,
}

/// A problem with a directive of the cell, on this 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectiveWarning {
    pub line: u32,
    pub message: String,
}

/// The findings after silencing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Suppressed {
    pub kept: Vec<Finding>,
    pub silenced: Vec<Silenced>,
    pub warnings: Vec<DirectiveWarning>,
}

/// The directives of a cell, with the problems found in them.
#[derive(Debug, Clone, Default)]
pub struct CellDirectives {
    lines: Vec<(u32, Selection)>,
    cell: Vec<Selection>,
    pub warnings: Vec<DirectiveWarning>,
}

impl CellDirectives {
    /// Reads every `# crane:` comment of the cell.
    pub fn of_cell(source: &str) -> CellDirectives {
        let mut directives = CellDirectives::default();
        if !source.to_ascii_lowercase().contains("crane") {
            return directives;
        }
        for comment in crane_analysis::comments(source) {
            let warn = |message: String| DirectiveWarning {
                line: comment.line,
                message,
            };
            match parse_directive(&comment.text) {
                None => {}
                Some(Err(message)) => directives.warnings.push(warn(message)),
                Some(Ok(directive)) => {
                    directives
                        .warnings
                        .extend(directive.warnings.into_iter().map(warn));
                    match directive.scope {
                        Scope::Line => directives.lines.push((comment.line, directive.selection)),
                        Scope::Cell if comment.own_line => directives.cell.push(directive.selection),
                        Scope::Cell => directives.warnings.push(warn(
                            "`# crane: ignore-cell` must be a comment line of its own: it silences nothing here (for this line, write `# crane: ignore[...]`)".to_owned(),
                        )),
                    }
                }
            }
        }
        directives
    }

    fn silencer(&self, finding: &Finding, ignored: &Ignored) -> Option<SilencedBy> {
        let rule = finding.rule?;
        let on_line = finding.line.is_some_and(|line| {
            self.lines
                .iter()
                .any(|(at, selection)| *at == line && selection.covers(rule))
        });
        if on_line {
            Some(SilencedBy::Line)
        } else if self.cell.iter().any(|selection| selection.covers(rule)) {
            Some(SilencedBy::Cell)
        } else if ignored.flag.contains(&rule) {
            Some(SilencedBy::Flag)
        } else if ignored.config.contains(&rule) {
            Some(SilencedBy::Config)
        } else {
            None
        }
    }
}

/// Splits the findings on the cell `source` into those that stand and those silenced by its
/// directives or by `ignored`.
pub fn suppress(findings: Vec<Finding>, source: &str, ignored: &Ignored) -> Suppressed {
    let directives = if findings.iter().any(|finding| finding.rule.is_some()) {
        CellDirectives::of_cell(source)
    } else {
        CellDirectives::default()
    };
    let mut suppressed = Suppressed::default();
    for finding in findings {
        match directives.silencer(&finding, ignored) {
            Some(by) => suppressed.silenced.push(Silenced { finding, by }),
            None => suppressed.kept.push(finding),
        }
    }
    suppressed.warnings = directives.warnings;
    suppressed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(codes: &[RuleCode]) -> Selection {
        Selection::Rules(codes.iter().copied().collect())
    }

    fn directive(comment: &str) -> Directive {
        match parse_directive(comment) {
            Some(Ok(directive)) => directive,
            other => panic!("{comment:?}: {other:?}"),
        }
    }

    #[test]
    fn line_directives_name_codes_or_every_rule() {
        let one = directive("# crane: ignore[NP004]");
        assert_eq!(one.scope, Scope::Line);
        assert_eq!(one.selection, rules(&[RuleCode::IndexOutOfBounds]));
        assert!(one.warnings.is_empty());
        assert_eq!(
            directive("# crane: ignore[NP004, PD001]").selection,
            rules(&[RuleCode::IndexOutOfBounds, RuleCode::MissingColumn])
        );
        assert_eq!(directive("# crane: ignore").selection, Selection::All);
        assert_eq!(
            directive("# crane: ignore  column added later").selection,
            Selection::All
        );
    }

    #[test]
    fn spacing_and_case_do_not_matter() {
        for comment in [
            "#crane:ignore[PD001]",
            "#   crane :  ignore [ pd001 ]",
            "# CRANE: IGNORE[Pd001]",
            "# Crane: Ignore[PD001,]",
            "# crane: ignore[PD001] the column is added by a later cell",
        ] {
            assert_eq!(
                directive(comment).selection,
                rules(&[RuleCode::MissingColumn]),
                "{comment}"
            );
        }
        assert_eq!(
            directive("# crane: ignore[PD001 NP004]").selection,
            rules(&[RuleCode::MissingColumn, RuleCode::IndexOutOfBounds])
        );
    }

    #[test]
    fn rule_names_count_as_codes() {
        assert_eq!(
            directive("# crane: ignore[missing-column, NB004]").selection,
            rules(&[RuleCode::MissingColumn, RuleCode::MissingKey])
        );
        assert_eq!(
            directive("# crane: ignore[Missing-Column]").selection,
            rules(&[RuleCode::MissingColumn])
        );
    }

    #[test]
    fn cell_directives() {
        let cell = directive("# crane: ignore-cell[PD001]");
        assert_eq!(cell.scope, Scope::Cell);
        assert_eq!(cell.selection, rules(&[RuleCode::MissingColumn]));
        let bare = directive("# crane: ignore-cell");
        assert_eq!((bare.scope, bare.selection), (Scope::Cell, Selection::All));
    }

    #[test]
    fn a_directive_may_follow_other_comment_text() {
        assert_eq!(
            directive("# set by the loader  # crane: ignore[PD001]").selection,
            rules(&[RuleCode::MissingColumn])
        );
    }

    #[test]
    fn other_comments_are_not_directives() {
        for comment in [
            "# plain",
            "# crane the data",
            "# cranes: ignore",
            "# see crane docs",
            "# noqa: F401",
        ] {
            assert_eq!(parse_directive(comment), None, "{comment}");
        }
    }

    #[test]
    fn bad_codes_warn_and_silence_nothing_else() {
        let mixed = directive("# crane: ignore[PD999, PD001]");
        assert_eq!(mixed.selection, rules(&[RuleCode::MissingColumn]));
        assert_eq!(mixed.warnings.len(), 1);
        assert!(
            mixed.warnings[0].contains("`PD999`"),
            "{:?}",
            mixed.warnings
        );
        let unknown = directive("# crane: ignore[nonsense]");
        assert_eq!(unknown.selection, rules(&[]));
        assert!(unknown.warnings[0].contains("`nonsense`"));
        let empty = directive("# crane: ignore[]");
        assert_eq!(empty.selection, rules(&[]));
        assert!(empty.warnings[0].contains("names no rule"));
    }

    #[test]
    fn malformed_directives_are_errors_not_silencing_everything() {
        for comment in [
            "# crane: ignore[PD001",
            "# crane: ignored",
            "# crane: noqa",
            "# crane: ignore_cell",
        ] {
            assert!(
                matches!(parse_directive(comment), Some(Err(_))),
                "{comment}: {:?}",
                parse_directive(comment)
            );
        }
    }

    fn finding(rule: RuleCode, line: u32) -> Finding {
        crate::rules::proven(rule, line, String::new(), Vec::new())
    }

    #[test]
    fn findings_are_silenced_by_the_most_specific_directive() {
        let source = "# crane: ignore-cell[NB004]\nx = df['a']  # crane: ignore[PD001, NB004]\ny = d['k']\nz = df['b']\n";
        let ignored = Ignored {
            flag: [RuleCode::MissingColumn].into(),
            config: BTreeSet::new(),
        };
        let result = suppress(
            vec![
                finding(RuleCode::MissingColumn, 2),
                finding(RuleCode::MissingKey, 3),
                finding(RuleCode::MissingColumn, 4),
                finding(RuleCode::UndefinedName, 4),
            ],
            source,
            &ignored,
        );
        let by: Vec<(RuleCode, u32, SilencedBy)> = result
            .silenced
            .iter()
            .map(|s| {
                (
                    s.finding.rule.unwrap_or(RuleCode::UndefinedName),
                    s.finding.line.unwrap_or(0),
                    s.by,
                )
            })
            .collect();
        assert_eq!(
            by,
            vec![
                (RuleCode::MissingColumn, 2, SilencedBy::Line),
                (RuleCode::MissingKey, 3, SilencedBy::Cell),
                (RuleCode::MissingColumn, 4, SilencedBy::Flag),
            ]
        );
        assert_eq!(result.kept.len(), 1);
        assert_eq!(result.kept[0].rule, Some(RuleCode::UndefinedName));
    }

    #[test]
    fn a_directive_inside_a_string_or_trailing_code_is_not_a_cell_directive() {
        let source = "s = '# crane: ignore'\nx = df['a']  # crane: ignore-cell\n";
        let result = suppress(
            vec![finding(RuleCode::MissingColumn, 2)],
            source,
            &Ignored::default(),
        );
        assert!(result.silenced.is_empty());
        assert_eq!(result.warnings.len(), 1);
        assert_eq!(result.warnings[0].line, 2);
        assert!(result.warnings[0].message.contains("line of its own"));
    }

    #[test]
    fn findings_without_a_rule_are_never_silenced() {
        let mut llm = finding(RuleCode::MissingColumn, 1);
        llm.rule = None;
        llm.detector = crate::DetectorKind::Llm;
        let result = suppress(vec![llm], "df['a']  # crane: ignore\n", &Ignored::default());
        assert_eq!(result.kept.len(), 1);
        assert!(result.silenced.is_empty());
    }
}
