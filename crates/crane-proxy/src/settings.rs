//! What the proxy does with a cell, per kernel: the policy, the dry-run mode and budget, the
//! LLM, and the `%crane ...` magics that change them from the notebook.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crane_detect::rules::RuleCode;

/// What happens to a cell a check predicts to crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Certain predictions (a rule's proof, a crash in a dry run) hold the cell; predictions of
    /// an LLM alone are shown as a warning and the cell runs.
    Stop,
    /// Every prediction is shown as a warning and the cell runs.
    Warn,
    /// Cells are not checked.
    Off,
}

/// When a cell is also run in a fork of the kernel before it runs for real.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DryRunMode {
    /// When the rules are silent and a fork is safe, and for a cell the kernel can undo (a
    /// snapshot, or no change to its state) only when it looks long, and then beside its real
    /// run from its snapshot, abridged; a refused fork is not mentioned.
    Auto,
    /// Every cell the rules are silent about, when a fork is safe; one that could not be
    /// dry-run says why in its output.
    On,
    Off,
}

/// The proxy's settings for one kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub policy: Policy,
    pub dry_run: DryRunMode,
    /// How long a dry run may run the cell in the fork.
    pub dry_run_budget: Duration,
    /// How long a whole check may take before it is abandoned and the cell runs.
    pub check_timeout: Duration,
    /// The LLM model string, when one judges cells too. It may hold its endpoint's
    /// credentials: it is shown only through [`Settings::shown_llm`].
    pub llm: Option<String>,
    /// Rules whose findings are silenced (`--ignore`, `%crane ignore`).
    pub ignore: BTreeSet<RuleCode>,
    /// How many snapshots of the kernel (from before its latest state-changing cells) are
    /// kept; 0 takes none.
    pub snapshot_keep: usize,
    /// The most private memory the snapshots may hold together; `None`: a quarter of the
    /// machine's memory.
    pub snapshot_budget_bytes: Option<u64>,
    /// `%crane rollback auto`: a cell with a snapshot that raised within this long after it
    /// was relayed is rolled back without asking (unless it was interrupted); `None`: a
    /// rollback is only offered.
    pub rollback_auto: Option<Duration>,
}

/// How long a cell may have run before it raised for `%crane rollback auto` to take it back
/// by itself: what a cell that ran this long changed costs nothing to compute again.
pub const ROLLBACK_AUTO_WITHIN: Duration = Duration::from_secs(3);

impl Default for Settings {
    fn default() -> Self {
        Settings {
            policy: Policy::Stop,
            dry_run: DryRunMode::Auto,
            dry_run_budget: Duration::from_secs(2),
            check_timeout: Duration::from_secs(10),
            llm: None,
            ignore: BTreeSet::new(),
            snapshot_keep: 3,
            snapshot_budget_bytes: None,
            rollback_auto: Some(ROLLBACK_AUTO_WITHIN),
        }
    }
}

macro_rules! word_enum {
    ($type:ident { $($variant:ident = $word:literal),+ $(,)? }) => {
        impl $type {
            pub const WORDS: &'static [&'static str] = &[$($word),+];

            pub fn word(self) -> &'static str {
                match self { $($type::$variant => $word),+ }
            }
        }

        impl FromStr for $type {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, String> {
                match text {
                    $($word => Ok($type::$variant),)+
                    other => Err(format!(
                        "`{other}` is not one of {}",
                        $type::WORDS.join(", ")
                    )),
                }
            }
        }

        impl fmt::Display for $type {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.word())
            }
        }
    };
}

word_enum!(Policy { Stop = "stop", Warn = "warn", Off = "off" });
word_enum!(DryRunMode { Auto = "auto", On = "on", Off = "off" });

/// What a cell asks of crane itself.
#[derive(Debug, Clone, PartialEq)]
pub enum CellKind {
    /// An ordinary cell: checked, then run.
    Code,
    /// `%%crane run` on the first line: run the rest of the cell unchecked, once.
    Bypass { code: String },
    /// A cell of `%crane ...` lines only: handled by crane, never sent to the kernel.
    Magics(Vec<Magic>),
    /// A `%crane` line among code, or a magic crane does not know.
    Misused(String),
}

/// One `%crane ...` line.
#[derive(Debug, Clone, PartialEq)]
pub enum Magic {
    Policy(Policy),
    DryRun(DryRunMode),
    DryRunBudget(Duration),
    CheckTimeout(Duration),
    Llm(Option<String>),
    /// The rules silenced from now on (empty: none).
    Ignore(BTreeSet<RuleCode>),
    Explain,
    Status,
    /// List the kernel's snapshots.
    Snapshots,
    SnapshotKeep(usize),
    SnapshotBudget(Option<u64>),
    /// Return to the state before the last cell that raised with a snapshot.
    Rollback,
    /// `%crane rollback auto [SECONDS]` (`Some`) or `%crane rollback off` (`None`).
    RollbackAuto(Option<Duration>),
    /// Return to the state before the last N state-changing cells.
    Undo(usize),
}

pub const MAGIC_HELP: &str = "\
%%crane run                     first line of a cell: run it once without a check
%crane policy stop|warn|off     stop: hold cells that certainly crash; warn: show and run; off: no checks
%crane dry-run auto|on|off      run the cell in a fork of the kernel first (auto: when safe; a cell crane
                                can undo, only when it looks long, and then beside its real run, abridged)
%crane dry-run-budget SECONDS   how long a dry run may take (default 2)
%crane check-timeout SECONDS    how long a check may take before the cell runs unchecked (default 10, at most 25)
%crane llm MODEL|off            also ask this LLM (its claims alone only warn)
%crane ignore CODES|off         silence these rules (codes or names, comma-separated)
%crane rollback                 return to the state before the last cell that raised
%crane rollback auto [SECONDS]  roll back by itself after a cell that raised within SECONDS (default 3;
                                never an interrupted one); longer cells are only offered a rollback
%crane rollback off             only offer a rollback, never roll back by itself
%crane undo [N]                 return to the state before the last N cells that could change it
%crane snapshots                the snapshots of the kernel kept from before its last cells
%crane snapshot-keep N          how many snapshots to keep (default 3; 0: none)
%crane snapshot-budget MB|auto  the memory the snapshots may hold (auto: a quarter of the machine's)
%crane explain                  why the last cell was held or warned about
%crane status                   the settings of this kernel";

/// A magic's name and arguments, split as IPython splits them: at the first space (only a
/// space: `%crane\tstatus` names a magic `crane\tstatus`), trailing whitespace dropped.
fn split_magic(escaped: &str) -> (&str, &str) {
    let escaped = escaped.trim_end();
    escaped.split_once(' ').unwrap_or((escaped, ""))
}

/// Which magic a name IPython split is, for crane.
enum Named {
    Crane,
    /// `crane` and other whitespace than a space: the user meant crane's magic, IPython would
    /// not find it.
    Misspelt,
    Other,
}

fn named(name: &str) -> Named {
    match name.strip_prefix("crane") {
        Some("") => Named::Crane,
        Some(rest) if rest.starts_with(char::is_whitespace) => Named::Misspelt,
        _ => Named::Other,
    }
}

fn misspelt(line: &str) -> CellKind {
    CellKind::Misused(format!(
        "`{}`: IPython separates a magic's name from its arguments by a space, so this names no magic\n{MAGIC_HELP}",
        line.trim().escape_debug()
    ))
}

/// How crane reads a cell's source.
pub fn classify(source: &str) -> CellKind {
    let first = source.lines().position(|line| !line.trim().is_empty());
    let lines: Vec<&str> = source.lines().collect();
    if let Some(first) = first {
        if let Some(escaped) = lines[first].trim_start().strip_prefix("%%") {
            let (name, args) = split_magic(escaped);
            let words: Vec<&str> = args.split_whitespace().collect();
            match named(name) {
                Named::Other => {}
                Named::Misspelt => return misspelt(lines[first]),
                Named::Crane if words == ["run"] => {
                    return CellKind::Bypass {
                        // Blank lines keep the cell's line numbers in tracebacks.
                        code: lines
                            .iter()
                            .enumerate()
                            .map(|(index, line)| if index <= first { "" } else { line })
                            .collect::<Vec<_>>()
                            .join("\n"),
                    };
                }
                Named::Crane => {
                    return CellKind::Misused(format!(
                        "`{}`: the only cell magic is `%%crane run`\n{MAGIC_HELP}",
                        lines[first].trim()
                    ))
                }
            }
        }
    }
    let line_magic = |line: &str| {
        let escaped = line.trim_start().strip_prefix('%')?;
        (!escaped.starts_with('%')).then(|| named(split_magic(escaped).0))
    };
    if let Some(line) = lines
        .iter()
        .find(|line| matches!(line_magic(line), Some(Named::Misspelt)))
    {
        return misspelt(line);
    }
    let is_magic = |line: &&str| matches!(line_magic(line), Some(Named::Crane));
    let magic_lines: Vec<&str> = lines.iter().copied().filter(is_magic).collect();
    if magic_lines.is_empty() {
        return CellKind::Code;
    }
    let only_magics = lines
        .iter()
        .all(|line| is_magic(line) || line.trim().is_empty() || line.trim().starts_with('#'));
    if !only_magics {
        return CellKind::Misused(
            "`%crane` lines configure crane and must be in a cell of their own".into(),
        );
    }
    let mut magics = Vec::new();
    for line in magic_lines {
        match parse_magic(line.trim()) {
            Ok(magic) => magics.push(magic),
            Err(message) => return CellKind::Misused(format!("{message}\n{MAGIC_HELP}")),
        }
    }
    CellKind::Magics(magics)
}

fn parse_magic(line: &str) -> Result<Magic, String> {
    let escaped = line.trim_start().strip_prefix('%').unwrap_or(line);
    let words: Vec<&str> = split_magic(escaped).1.split_whitespace().collect();
    let wrong = |what: &str| format!("`{line}`: {what}");
    match words.as_slice() {
        [] | ["status"] => Ok(Magic::Status),
        ["explain"] => Ok(Magic::Explain),
        ["rollback"] => Ok(Magic::Rollback),
        ["rollback", "auto"] => Ok(Magic::RollbackAuto(Some(ROLLBACK_AUTO_WITHIN))),
        ["rollback", "auto", seconds] => parse_seconds(seconds)
            .map(|within| Magic::RollbackAuto(Some(within)))
            .map_err(|e| wrong(&e)),
        ["rollback", "off"] => Ok(Magic::RollbackAuto(None)),
        ["undo"] => Ok(Magic::Undo(1)),
        ["undo", count] => match count.parse::<usize>() {
            Ok(count) if count > 0 => Ok(Magic::Undo(count)),
            _ => Err(wrong("not a number of cells (1 or more)")),
        },
        ["snapshots"] => Ok(Magic::Snapshots),
        ["snapshot-keep", count] => count
            .parse::<usize>()
            .map(Magic::SnapshotKeep)
            .map_err(|_| wrong("not a number of snapshots")),
        ["snapshot-budget", "auto"] => Ok(Magic::SnapshotBudget(None)),
        ["snapshot-budget", megabytes] => match megabytes.parse::<f64>() {
            Ok(mb) if mb.is_finite() && mb >= 0.0 => {
                Ok(Magic::SnapshotBudget(Some((mb * 1e6) as u64)))
            }
            _ => Err(wrong("not a number of megabytes, or auto")),
        },
        ["policy", word] => word.parse().map(Magic::Policy).map_err(|e| wrong(&e)),
        ["dry-run", word] => word.parse().map(Magic::DryRun).map_err(|e| wrong(&e)),
        ["dry-run-budget", seconds] => parse_seconds(seconds)
            .map(Magic::DryRunBudget)
            .map_err(|e| wrong(&e)),
        ["check-timeout", seconds] => match parse_seconds(seconds) {
            Ok(timeout) if timeout <= MAX_CHECK_TIMEOUT => Ok(Magic::CheckTimeout(timeout)),
            Ok(_) => Err(wrong(&format!(
                "at most {} s, so that a check is always abandoned before the probe's own timeout would interrupt the kernel",
                MAX_CHECK_TIMEOUT.as_secs()
            ))),
            Err(error) => Err(wrong(&error)),
        },
        ["llm", "off"] => Ok(Magic::Llm(None)),
        ["llm", model] => Ok(Magic::Llm(Some((*model).to_owned()))),
        ["ignore", "off"] => Ok(Magic::Ignore(BTreeSet::new())),
        ["ignore", codes @ ..] if !codes.is_empty() => codes
            .iter()
            .flat_map(|word| word.split(','))
            .filter(|code| !code.is_empty())
            .map(|code| {
                code.to_ascii_lowercase()
                    .parse::<RuleCode>()
                    .map_err(|_| wrong(&format!("unknown rule `{code}` (see `crane rules`)")))
            })
            .collect::<Result<BTreeSet<_>, _>>()
            .map(Magic::Ignore),
        _ => Err(wrong("not a crane magic")),
    }
}

/// The longest a check may take: below the probe's and the dry run's own reply timeouts (30 s
/// and budget + 15 s), which would interrupt the kernel, so that the proxy gives up first.
pub const MAX_CHECK_TIMEOUT: Duration = Duration::from_secs(25);

/// A positive, finite number of seconds.
pub fn parse_seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>() {
        Ok(seconds) if seconds.is_finite() && seconds > 0.0 && seconds < 86_400.0 => {
            Ok(Duration::from_secs_f64(seconds))
        }
        _ => Err(format!(
            "`{text}` is not a positive number of seconds (under a day)"
        )),
    }
}

impl Settings {
    /// Apply one magic; returns the line that confirms it.
    pub fn apply(&mut self, magic: &Magic) -> Option<String> {
        match magic {
            Magic::Policy(policy) => {
                self.policy = *policy;
                Some(format!("crane: policy {policy}"))
            }
            Magic::DryRun(mode) => {
                self.dry_run = *mode;
                Some(format!("crane: dry-run {mode}"))
            }
            Magic::DryRunBudget(budget) => {
                self.dry_run_budget = *budget;
                Some(format!("crane: dry-run budget {} s", budget.as_secs_f64()))
            }
            Magic::CheckTimeout(timeout) => {
                self.check_timeout = *timeout;
                Some(format!("crane: check timeout {} s", timeout.as_secs_f64()))
            }
            Magic::Llm(model) => {
                self.llm.clone_from(model);
                Some(format!("crane: llm {}", self.shown_llm()))
            }
            Magic::Ignore(rules) => {
                self.ignore.clone_from(rules);
                Some(format!("crane: ignore {}", self.ignored()))
            }
            Magic::SnapshotKeep(keep) => {
                self.snapshot_keep = *keep;
                Some(format!("crane: snapshot-keep {keep}"))
            }
            Magic::SnapshotBudget(budget) => {
                self.snapshot_budget_bytes = *budget;
                Some(match budget {
                    Some(bytes) => format!("crane: snapshot-budget {:.1} MB", *bytes as f64 / 1e6),
                    None => "crane: snapshot-budget auto".into(),
                })
            }
            Magic::RollbackAuto(within) => {
                self.rollback_auto = *within;
                Some(format!("crane: {}", self.shown_rollback()))
            }
            Magic::Explain
            | Magic::Status
            | Magic::Snapshots
            | Magic::Rollback
            | Magic::Undo(_) => None,
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "crane: policy {}, dry-run {} (budget {} s), llm {}, ignore {}, check timeout {} s, snapshot-keep {}, {}\n{MAGIC_HELP}",
            self.policy,
            self.dry_run,
            self.dry_run_budget.as_secs_f64(),
            self.shown_llm(),
            self.ignored(),
            self.check_timeout.as_secs_f64(),
            self.snapshot_keep,
            self.shown_rollback(),
        )
    }

    /// `rollback auto (within 3 s)` or `rollback off (offered only)`.
    pub fn shown_rollback(&self) -> String {
        match self.rollback_auto {
            Some(within) => format!(
                "rollback auto (cells that raised within {} s)",
                within.as_secs_f64()
            ),
            None => "rollback off (offered only)".into(),
        }
    }

    /// The LLM as messages show it: without its URL's credentials, or `off`.
    pub fn shown_llm(&self) -> String {
        self.llm
            .as_deref()
            .map_or_else(|| "off".into(), crane_llm::without_url_credentials)
    }

    fn ignored(&self) -> String {
        if self.ignore.is_empty() {
            return "off".into();
        }
        let codes: Vec<&str> = self.ignore.iter().map(|rule| rule.code()).collect();
        codes.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ordinary_cell_is_code() {
        assert_eq!(classify("x = 1\nprint(x)"), CellKind::Code);
        assert_eq!(classify(""), CellKind::Code);
        assert_eq!(classify("%matplotlib inline\nx = 1"), CellKind::Code);
        // A name that only starts like the magic is not it.
        assert_eq!(classify("%cranes"), CellKind::Code);
    }

    #[test]
    fn bypass_keeps_line_numbers_and_drops_the_magic() {
        assert_eq!(
            classify("\n%%crane run\nx = 1\ny = x[3]"),
            CellKind::Bypass {
                code: "\n\nx = 1\ny = x[3]".into()
            }
        );
        assert!(matches!(classify("%%crane check"), CellKind::Misused(_)));
    }

    #[test]
    fn magic_names_are_split_from_their_arguments_as_ipython_splits_them() {
        // IPython: `name, _, args = line.partition(" ")`.
        assert_eq!(
            classify("%crane  policy   warn  "),
            CellKind::Magics(vec![Magic::Policy(Policy::Warn)])
        );
        for source in [
            "%crane\tstatus",
            "%crane\tpolicy off",
            "%%crane\trun\nx = 1",
        ] {
            let CellKind::Misused(message) = classify(source) else {
                panic!("{source:?} should be refused");
            };
            assert!(message.contains("by a space"), "{message}");
        }
        assert_eq!(classify("%%cranes\nx = 1"), CellKind::Code);
    }

    #[test]
    fn magic_cells_configure() {
        assert_eq!(
            classify("%crane policy warn\n# comment\n%crane dry-run off\n"),
            CellKind::Magics(vec![
                Magic::Policy(Policy::Warn),
                Magic::DryRun(DryRunMode::Off)
            ])
        );
        assert_eq!(
            classify("%crane llm replay:gpt_5"),
            CellKind::Magics(vec![Magic::Llm(Some("replay:gpt_5".into()))])
        );
        assert_eq!(classify("%crane"), CellKind::Magics(vec![Magic::Status]));
        assert_eq!(
            classify("%crane snapshots\n%crane snapshot-keep 5\n%crane snapshot-budget 0.5"),
            CellKind::Magics(vec![
                Magic::Snapshots,
                Magic::SnapshotKeep(5),
                Magic::SnapshotBudget(Some(500_000))
            ])
        );
        assert_eq!(
            classify("%crane rollback\n%crane undo\n%crane undo 2"),
            CellKind::Magics(vec![Magic::Rollback, Magic::Undo(1), Magic::Undo(2)])
        );
        assert!(matches!(classify("%crane undo 0"), CellKind::Misused(_)));
        assert_eq!(
            classify("%crane rollback auto\n%crane rollback auto 0.5\n%crane rollback off"),
            CellKind::Magics(vec![
                Magic::RollbackAuto(Some(ROLLBACK_AUTO_WITHIN)),
                Magic::RollbackAuto(Some(Duration::from_millis(500))),
                Magic::RollbackAuto(None)
            ])
        );
        assert!(matches!(
            classify("%crane rollback auto -2"),
            CellKind::Misused(_)
        ));
        assert!(matches!(
            classify("%crane rollback sometimes"),
            CellKind::Misused(_)
        ));
        assert_eq!(
            classify("%crane dry-run-budget 0.5"),
            CellKind::Magics(vec![Magic::DryRunBudget(Duration::from_millis(500))])
        );
        assert_eq!(
            classify("%crane check-timeout 25"),
            CellKind::Magics(vec![Magic::CheckTimeout(MAX_CHECK_TIMEOUT)])
        );
        let mut settings = Settings::default();
        assert_eq!(
            settings.apply(&Magic::CheckTimeout(Duration::from_secs(20))),
            Some("crane: check timeout 20 s".into())
        );
        assert_eq!(settings.check_timeout, Duration::from_secs(20));
        assert_eq!(
            classify("%crane ignore PD001,missing-key np004"),
            CellKind::Magics(vec![Magic::Ignore(
                [
                    RuleCode::MissingColumn,
                    RuleCode::MissingKey,
                    RuleCode::IndexOutOfBounds
                ]
                .into()
            )])
        );
        assert_eq!(
            classify("%crane ignore off"),
            CellKind::Magics(vec![Magic::Ignore(BTreeSet::new())])
        );
    }

    #[test]
    fn misused_magics_are_explained() {
        for source in [
            "%crane policy maybe",
            "%crane dry-run-budget -1",
            "%crane check-timeout 30",
            "%crane check-timeout 0",
            "%crane frobnicate",
            "%crane ignore",
            "%crane ignore PD999",
            "x = 1\n%crane policy off",
        ] {
            assert!(
                matches!(classify(source), CellKind::Misused(_)),
                "{source:?} should be refused"
            );
        }
    }

    #[test]
    fn applying_magics_changes_the_settings() {
        let mut settings = Settings::default();
        settings.apply(&Magic::Policy(Policy::Off));
        settings.apply(&Magic::Llm(Some("replay:gpt_5".into())));
        assert_eq!(settings.policy, Policy::Off);
        assert_eq!(settings.llm.as_deref(), Some("replay:gpt_5"));
        assert!(settings.describe().contains("policy off"));
        assert!(settings.describe().contains("ignore off"));
        let with_credentials = "openai-compat:m@http://user:pa%40ss@127.0.0.1:9/v1";
        let confirmed = settings.apply(&Magic::Llm(Some(with_credentials.into())));
        assert_eq!(
            confirmed.as_deref(),
            Some("crane: llm openai-compat:m@http://127.0.0.1:9/v1")
        );
        assert!(!settings.describe().contains("pa%40ss"));
        assert_eq!(settings.llm.as_deref(), Some(with_credentials));
        let confirmed = settings.apply(&Magic::Ignore([RuleCode::MissingColumn].into()));
        assert_eq!(confirmed.as_deref(), Some("crane: ignore PD001"));
        assert!(settings.ignore.contains(&RuleCode::MissingColumn));
    }
}
