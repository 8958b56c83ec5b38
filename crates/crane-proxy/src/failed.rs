//! A cell that raised: the line its traceback names, whether what ran of it can have changed
//! the state a re-run would read (if not, the kernel keeps it, as a plain kernel does, instead
//! of rolling back; when it read objects from before the cell, the relay compares them with
//! the snapshot's first), and the post-mortem magics (`%tb`, `%debug`) after a rollback took the
//! failed state away, which crane answers from the error it saw.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crane_analysis::{FailedPrefix, ParsedCell, Prior};
use crane_kernel::ReplyStatus;
use crane_kernel::{ExecuteOptions, KernelSession};
use serde::Deserialize;

use crate::check::{Checker, KernelEvent};

/// The error a cell ended with, as its reply carried it.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Failure {
    #[serde(default)]
    pub ename: String,
    #[serde(default)]
    pub evalue: String,
    #[serde(default)]
    pub traceback: Vec<String>,
}

impl Failure {
    /// The line of the cell's top-level statement that raised: the first frame of the cell in
    /// IPython's traceback (`Cell In[3], line 5`; IPython before 8: `<ipython-input-3-...>`
    /// and its `---->` line), colours removed. `None` for a traceback without such a frame
    /// (an error IPython raised before the cell ran, a traceback IPython did not format).
    pub fn line(&self) -> Option<u32> {
        crane_kernel::ErrorInfo {
            ename: self.ename.clone(),
            evalue: self.evalue.clone(),
            traceback: self.traceback.clone(),
        }
        .cell_line()
    }
}

/// What becomes of the state a cell that raised left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterFailure {
    /// The part of it that ran only bound new names (`crane_analysis::failed_prefix`): kept,
    /// as a plain kernel keeps it.
    Kept {
        names: Vec<String>,
        /// Objects from before the cell it read, found as the snapshot before it holds them.
        compared: Vec<String>,
    },
    /// The part of it that ran only bound new names and read the objects `watched` names from
    /// before the cell (`crane_analysis::failed_prefix_watching`): kept when those objects are
    /// as the snapshot before the cell holds them, else rolled back as `otherwise` says.
    KeptIfUnchanged {
        names: Vec<String>,
        watched: Vec<String>,
        otherwise: Option<Replay>,
    },
    /// Rolled back; then `replay` (the statements before the first one that may have changed
    /// the state before the cell, when they bind new names), run again in the state restored.
    RolledBack { replay: Option<Replay> },
}

/// Statements of a rolled-back cell to run again after the rollback.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    pub code: String,
    pub names: Vec<String>,
}

/// What becomes of the state `cell`, which raised at `line`, left, judged with what the checker
/// knows of the kernel's earlier cells. `events` are those not yet handed to the checker, the
/// failed cell's own last: the others are handed over now, and the failed cell's stays for the
/// next check.
pub fn after_failure(
    cell: &ParsedCell,
    line: Option<u32>,
    checker: &mut impl Checker,
    events: &mut Vec<KernelEvent>,
) -> AfterFailure {
    let Some(line) = line else {
        return AfterFailure::RolledBack { replay: None };
    };
    if let Some(own) = events.pop_if(|event| matches!(event, KernelEvent::Ran { raised: true, .. }))
    {
        checker.executed(std::mem::take(events));
        events.push(own);
    }
    let priors = priors(cell, checker);
    let prior = |name: &str| priors.get(name).copied().unwrap_or(Prior::Bound);
    let code = cell.source();
    match crane_analysis::failed_prefix_watching(code, line, &prior) {
        FailedPrefix::BoundOnly { names } => AfterFailure::Kept {
            names,
            compared: Vec::new(),
        },
        FailedPrefix::BoundIfUnchanged { names, watched } => AfterFailure::KeptIfUnchanged {
            names,
            watched,
            otherwise: replay_of(code, line, &prior),
        },
        FailedPrefix::MayHaveChanged { .. } => AfterFailure::RolledBack {
            replay: replay_of(code, line, &prior),
        },
    }
}

/// What of a cell that raised at `line` runs again after its rollback: its statements before
/// the first that may change the state before it, when they bind new names, and before the
/// first that reaches outside the kernel, which run again would do so twice.
fn replay_of(code: &str, line: u32, prior: &(dyn Fn(&str) -> Prior + Sync)) -> Option<Replay> {
    let mut replayed = crane_analysis::bound_only_prefix(code, line, prior);
    if let Some(effect) = replayed
        .as_ref()
        .and_then(|(prefix, _)| first_outside_effect(prefix))
    {
        replayed = crane_analysis::bound_only_prefix(code, effect, prior);
    }
    replayed.map(|(code, names)| Replay {
        code: code.to_owned(),
        names,
    })
}

/// The line of the first effect of `code` outside the kernel that crane sees in its syntax
/// (files written, the network, other programs, code it cannot analyze).
fn first_outside_effect(code: &str) -> Option<u32> {
    let code = code.to_owned();
    crane_analysis::bounds::with_deep_stack(move || {
        let analysis = crane_analysis::analyze_cell(&code).ok()?;
        crane_analysis::effects::side_effects(&analysis, &std::collections::BTreeMap::new())
            .iter()
            .map(|effect| effect.line)
            .min()
    })
}

/// What the checker's history says of each name `cell` reads before binding it.
pub fn priors(cell: &ParsedCell, checker: &mut impl Checker) -> HashMap<String, Prior> {
    let reads = crane_analysis::analyze_parsed(cell)
        .map(|analysis| analysis.reads)
        .unwrap_or_default();
    reads
        .into_iter()
        .map(|read| {
            let prior = checker.prior(&read.name);
            (read.name, prior)
        })
        .collect()
}

/// How long a rolled-back cell's statements may take to run again.
const REPLAY_TIMEOUT: Duration = Duration::from_secs(60);

/// Run `replay` again in the kernel just restored, its outputs captured (they were shown the
/// first time): the kernel then holds what a plain kernel held after those statements, and
/// none of the rest of the cell. The event for the checker, with the statements' one parse;
/// `None` when they did not run cleanly.
pub async fn replay(session: &mut KernelSession, replay: &Replay) -> Option<KernelEvent> {
    let source = serde_json::to_string(&replay.code).ok()?;
    // IPython's own transform (magics), run in the user's namespace, outputs captured; nothing
    // is bound but what the statements bind.
    let code = format!(
        "with __import__('IPython').utils.capture.capture_output():\n    __import__('builtins').exec(__import__('builtins').compile(__import__('IPython').get_ipython().transform_cell({source}), '<crane replay>', 'exec'), __import__('IPython').get_ipython().user_ns)\n"
    );
    let options = ExecuteOptions {
        silent: true,
        store_history: false,
        timeout: Some(REPLAY_TIMEOUT),
        ..ExecuteOptions::cell()
    };
    let execution = session.execute(&code, &options).await.ok()?;
    let ran = execution
        .reply()
        .is_some_and(|reply| reply.status == ReplyStatus::Ok);
    ran.then(|| KernelEvent::Ran {
        cell: Arc::new(ParsedCell::parse(&replay.code)),
        execution_count: None,
        raised: false,
    })
}

/// The words under a rolled-back cell whose first statements ran again.
pub fn replayed_sentence(replay: &Replay) -> String {
    let listed = names_listed(&replay.names);
    let lines = replay.code.lines().count();
    let what = match lines {
        1 => "Its line 1, which only binds new names".to_owned(),
        n => format!("Its lines 1-{n}, which only bind new names"),
    };
    format!(" {what} ({listed}), ran again after the rollback, as they ran before the error.")
}

/// Names as crane lists them in a line: the first eight, then "...".
pub fn names_listed(names: &[String]) -> String {
    let mut listed = names.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 8 {
        listed.push_str(", ...");
    }
    listed
}

/// The line under a failed cell whose state crane kept; `compared`: the objects from before
/// the cell it read, which crane found as the snapshot before it holds them.
pub fn kept_line(names: &[String], compared: &[String]) -> String {
    let what = match names {
        [] => "changed nothing that existed before it".to_owned(),
        names => format!("only bound new names ({})", names_listed(names)),
    };
    let compared = match compared {
        [] => String::new(),
        [one] => format!(" and left `{one}` as it was (compared with the snapshot before it)"),
        many => format!(
            " and left {} as they were (compared with the snapshot before it)",
            names_listed(many)
        ),
    };
    format!(
        "crane: kept the state as without crane: the part of this cell that ran {what}{compared}; `%crane rollback` returns to the state before it."
    )
}

/// A post-mortem magic in a cell of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PostMortem {
    /// `%tb`: the last traceback.
    Traceback,
    /// `%debug` without a statement: the debugger on the last traceback.
    Debug,
}

/// The post-mortem magic a cell consists of (blank and comment lines aside), if any.
pub fn post_mortem(code: &str) -> Option<PostMortem> {
    let mut lines = code
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'));
    let only = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    match only {
        "%tb" => Some(PostMortem::Traceback),
        "%debug" => Some(PostMortem::Debug),
        _ => None,
    }
}

/// What `%debug` gets after a rollback took the failed cell's state away.
pub const DEBUG_AFTER_ROLLBACK: &str = "crane: the failed cell's state went with the rollback, so there is no traceback to debug here. To debug it: `%crane rollback off`, run the cell again, then `%debug`.\n";

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(traceback: &[&str]) -> Failure {
        Failure {
            traceback: traceback.iter().map(|frame| (*frame).to_owned()).collect(),
            ..Failure::default()
        }
    }

    #[test]
    fn the_line_is_the_first_frame_of_the_cell() {
        // As IPython 9 prints it in a kernel (colours included).
        let frames = [
            "\u{1b}[31m---------------------------------------------------------------------------\u{1b}[39m",
            "\u{1b}[31mValueError\u{1b}[39m                                Traceback (most recent call last)",
            "\u{1b}[36mCell\u{1b}[39m\u{1b}[36m \u{1b}[39m\u{1b}[32mIn[1]\u{1b}[39m\u{1b}[32m, line 5\u{1b}[39m\n\u{1b}[32m      1\u{1b}[39m x = \u{1b}[32m1\u{1b}[39m\n\u{1b}[32m----> \u{1b}[39m\u{1b}[32m5\u{1b}[39m f()\n",
            "\u{1b}[36mCell\u{1b}[39m\u{1b}[36m \u{1b}[39m\u{1b}[32mIn[1]\u{1b}[39m\u{1b}[32m, line 4\u{1b}[39m, in \u{1b}[36mf\u{1b}[39m\u{1b}[34m()\u{1b}[39m\n",
            "\u{1b}[31mValueError\u{1b}[39m: v",
        ];
        assert_eq!(failure(&frames).line(), Some(5));
        assert_eq!(
            failure(&["Cell In[12], line 3\n----> 3 1/0"]).line(),
            Some(3)
        );
        // IPython 7.
        let old = "<ipython-input-3-0a5b1b2c>  in <module>\n      1 x = 1\n----> 2 x[0]\n";
        assert_eq!(
            failure(&["----", "TypeError    Traceback", old]).line(),
            Some(2)
        );
        assert_eq!(failure(&["KeyboardInterrupt: "]).line(), None);
        assert_eq!(failure(&[]).line(), None);
    }

    #[test]
    fn a_replay_ends_before_what_reaches_outside_the_kernel() {
        let prior = |name: &str| match name {
            "np" => Prior::Imported,
            "df" => Prior::Bound,
            _ => Prior::NotBound,
        };
        let code = "import json\nn = 3\nwith open('log.txt', 'w') as f:\n    f.write('x')\nk = 1\ndf.drop(columns='a', inplace=True)\n1 / 0";
        let replay = replay_of(code, 7, &prior).unwrap();
        assert_eq!(replay.code, "import json\nn = 3");
        assert_eq!(replay.names, ["json", "n"]);
        // Without an effect: up to the first possible change.
        let code = "import json\nn = 3\ndf.drop(columns='a', inplace=True)\n1 / 0";
        assert_eq!(replay_of(code, 4, &prior).unwrap().names, ["json", "n"]);
        assert_eq!(
            replay_of(
                "with open('log.txt', 'w') as f:\n    f.write('x')\ndf.x = 1\n1 / 0",
                4,
                &prior
            ),
            None
        );
    }

    #[test]
    fn post_mortem_magics_alone_in_a_cell() {
        assert_eq!(post_mortem("%tb"), Some(PostMortem::Traceback));
        assert_eq!(post_mortem("# look\n%debug\n"), Some(PostMortem::Debug));
        assert_eq!(post_mortem("%debug f(1)"), None);
        assert_eq!(post_mortem("%tb\nx = 1"), None);
        assert_eq!(post_mortem("x = 1"), None);
    }

    #[test]
    fn the_kept_line_names_what_was_bound() {
        let line = kept_line(&["plt".into(), "np".into()], &[]);
        assert_eq!(
            line,
            "crane: kept the state as without crane: the part of this cell that ran only bound new names (plt, np); `%crane rollback` returns to the state before it."
        );
        let line = kept_line(&["full".into()], &["prep".into()]);
        assert_eq!(
            line,
            "crane: kept the state as without crane: the part of this cell that ran only bound new names (full) and left `prep` as it was (compared with the snapshot before it); `%crane rollback` returns to the state before it."
        );
    }
}
