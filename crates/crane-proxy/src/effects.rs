//! What a cell did outside the kernel that a rollback cannot take back, as far as crane sees it
//! without asking the kernel anything, in words: the cell's own syntax, through the table of side
//! effects ([`crane_analysis::effects`]: files written, the network, other programs),
//! and what the seal blocked when the cell was dry-run before it ran
//! ([`crane_probe::dry_run::DryRunResult::Blocked`], handed over in [`crate::Checked`]).
//!
//! Read on the error path only, in the proxy, from the cell's one parse the relay keeps with it:
//! nothing runs in the kernel for it, nothing is parsed again, and a cell that succeeds pays
//! nothing. It sees only the code the cell runs itself (not the bodies of functions defined in
//! earlier cells), and names by what they are written as.

use std::collections::BTreeMap;

use crane_analysis::{Call, ParsedCell};

/// How long one effect's call may be shown.
const SHOWN_CHARS: usize = 80;

/// The outside effects crane sees in `cell`, one phrase each (`line 2 `df.to_csv('out.csv')`
/// writes or removes files`), in line order, read from its parse.
pub fn in_parsed(cell: &ParsedCell) -> Vec<String> {
    crane_analysis::bounds::with_deep_stack(|| {
        let Ok(analysis) = crane_analysis::analyze_parsed(cell) else {
            return Vec::new();
        };
        crane_analysis::effects::side_effects(&analysis, &BTreeMap::new())
            .into_iter()
            .map(|effect| {
                let callee = effect.what.strip_suffix("(...)");
                let call = callee.and_then(|callee| {
                    analysis
                        .calls
                        .iter()
                        .find(|call| call.line == effect.line && call.callee == callee)
                });
                let shown = call.map_or_else(|| effect.what.clone(), written);
                format!("line {} `{}` {}", effect.line, shown, effect.kind)
            })
            .collect()
    })
}

/// The call as written, shortened.
fn written(call: &Call) -> String {
    let mut arguments: Vec<String> = call.args.iter().map(|arg| arg.text.clone()).collect();
    arguments.extend(call.keywords.iter().map(|keyword| match &keyword.name {
        Some(name) => format!("{name}={}", keyword.value.text),
        None => format!("**{}", keyword.value.text),
    }));
    let text = format!("{}({})", call.callee, arguments.join(", "));
    if text.chars().count() <= SHOWN_CHARS {
        return text;
    }
    let cut: String = text.chars().take(SHOWN_CHARS).collect();
    format!("{cut}...")
}

/// The sentence under a rollback or an undo: what the undone cells did outside the kernel,
/// which stays done; empty when crane sees nothing.
pub fn sentence(effects: &[String]) -> String {
    if effects.is_empty() {
        return String::new();
    }
    format!(
        " A rollback does not undo what was done outside the kernel; crane sees: {}.",
        effects.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_code(code: &str) -> Vec<String> {
        in_parsed(&ParsedCell::parse(code))
    }

    #[test]
    fn files_connections_and_programs_are_named_with_their_line() {
        let effects = in_code(
            "df['a'] *= 10\ndf.to_csv('out.csv', index=False)\nimport sqlite3\ncon = sqlite3.connect('runs.db')\n!ls\nraise ValueError('x')",
        );
        assert_eq!(
            effects,
            vec![
                "line 2 `df.to_csv('out.csv', index=False)` writes or removes files",
                "line 4 `sqlite3.connect('runs.db')` writes or removes files",
                "line 5 `!ls` runs or signals other programs",
            ],
        );
        let open = in_code("with open('log.txt', 'w') as f:\n    f.write('x')");
        assert!(
            open[0].starts_with("line 1 `open('log.txt', 'w')` writes"),
            "{open:?}"
        );
        assert!(sentence(&open).contains("A rollback does not undo"));
    }

    #[test]
    fn a_cell_that_only_computes_has_none() {
        assert!(in_code("df['a'] *= 10\nx = df.to_csv()\nraise ValueError('x')").is_empty());
        assert!(in_code("df[").is_empty());
        assert_eq!(sentence(&[]), "");
    }
}
