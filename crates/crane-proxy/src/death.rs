//! A kernel that dies loses nothing: what the proxy does and says when the real kernel dies
//! without being asked to (a segfault, an abort, `os._exit`, a kill, the OOM killer).
//!
//! A snapshot outlives the kernel (it dies with the proxy, `crane_fork.py` `_die_with`), so a
//! cell with a fork snapshot before it returns to that snapshot; without one the kernel is
//! started afresh. Either way the frontend keeps its session and gets an answer. This module
//! owns the words of that answer (the death as [`crane_kernel::Death`] words it, everywhere
//! crane speaks of one), the hold of the unchanged cell run again against the same state, and
//! the OOM killer's order: the proxy raises the kernel's `oom_score_adj` by [`OOM_MARGIN`]
//! above its own, and each snapshot writes its own back down to the proxy's, so that memory
//! running out takes the kernel, which a snapshot can replace, never the snapshot.

use crane_kernel::{Death, MemoryWatch};

/// How far above the proxy's own `oom_score_adj` the kernel's is raised (the dry run's forks
/// write the most, 1000: they still go first).
pub const OOM_MARGIN: i32 = 500;

/// The exception name of a cell during which the kernel died.
pub const DIED_ENAME: &str = "CraneKernelDied";

/// Raise `pid`'s `oom_score_adj` by [`OOM_MARGIN`] above the proxy's own (at most 1000): a
/// process may raise a same-user child's value without privilege.
pub fn raise_oom_score(pid: u32) -> std::io::Result<()> {
    let own: i32 = read_oom_score("/proc/self/oom_score_adj")?;
    let path = format!("/proc/{pid}/oom_score_adj");
    let current = read_oom_score(&path)?;
    let raised = (own + OOM_MARGIN).min(1000);
    if raised > current {
        std::fs::write(&path, raised.to_string())?;
    }
    Ok(())
}

fn read_oom_score(path: &str) -> std::io::Result<i32> {
    std::fs::read_to_string(path)?
        .trim()
        .parse()
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidData))
}

/// The watch of the current kernel's memory, to word its death.
pub struct KernelWatch {
    watch: MemoryWatch,
    /// Sampled by the proxy (a kernel a takeover made); else its session samples it.
    sampled_here: bool,
}

impl KernelWatch {
    /// The watch a kernel the proxy started keeps (sampled by its session).
    pub fn owned(watch: MemoryWatch) -> KernelWatch {
        KernelWatch {
            watch,
            sampled_here: false,
        }
    }

    /// A watch of a kernel a takeover made, which the proxy samples.
    pub fn adopted(pid: u32) -> KernelWatch {
        KernelWatch {
            watch: MemoryWatch::new(pid),
            sampled_here: true,
        }
    }

    /// A cell starts: a later OOM kill is the kernel's.
    pub fn mark(&mut self) {
        self.watch.mark();
    }

    pub fn sample(&self) {
        if self.sampled_here {
            self.watch.sample();
        }
    }

    pub fn death(&self, status: std::process::ExitStatus) -> Death {
        self.watch.death(status)
    }
}

/// Where the kernel is after a death.
pub enum Recovered {
    /// The fork snapshot taken before the cell became the kernel.
    Snapshot,
    /// The cell was the kernel's first: its fresh start is the state before it.
    FreshStart,
    /// No state from before the cell was kept (why): a fresh kernel serves from now on.
    Afresh(String),
    /// Not even a fresh kernel started (why): the proxy ends.
    Nothing(String),
}

/// The `evalue` of the cell the kernel died in (and the log line of an idle death).
pub fn words(death: &Death, recovered: &Recovered) -> String {
    let after = match recovered {
        Recovered::Snapshot => "crane returned it to the snapshot taken before this cell: the next cell sees the state from before it".to_owned(),
        Recovered::FreshStart => "crane started a fresh kernel, the state before this cell (the kernel's first): the next cell sees a fresh kernel's state".to_owned(),
        Recovered::Afresh(why) => format!(
            "crane kept no state from before this cell ({why}), so it started a fresh kernel: the next cell sees a fresh kernel's state, with none of the names defined before"
        ),
        Recovered::Nothing(why) => format!("crane could not start a fresh kernel: {why}"),
    };
    format!("{death}; {after}")
}

/// The traceback of the cell the kernel died in: its error line, and what to do.
pub fn traceback(evalue: &str, recovered: &Recovered) -> Vec<String> {
    let mut lines = vec![format!("\u{1b}[0;31m{DIED_ENAME}\u{1b}[0m: {evalue}")];
    if matches!(recovered, Recovered::Snapshot | Recovered::FreshStart) {
        lines.push(
            "Run unchanged against that state, this cell is held as a certain crash; `%%crane run` on its first line runs it anyway.".to_owned(),
        );
    }
    lines
}

/// The line the next cell shows after the kernel died while no cell ran.
pub fn restarted_note(death: &Death, recovered: &Recovered) -> String {
    format!(
        "crane: the kernel died while no cell ran and was restarted: {}",
        words(death, recovered)
    )
}

/// The cell that killed the kernel, whose unchanged re-run against the state it returned to
/// is a certain crash: held until another cell runs or the state changes.
pub struct Killer {
    pub code: String,
    pub death: String,
}

impl Killer {
    /// Whether `code` is this cell again.
    pub fn is(&self, code: &str) -> bool {
        self.code.trim_end() == code.trim_end()
    }

    /// The held cell's `evalue`, as crane's other holds word theirs.
    pub fn evalue(&self) -> String {
        format!("the kernel would die again: {}", self.death)
    }

    /// The held cell's traceback.
    pub fn traceback(&self) -> Vec<String> {
        vec![
            crate::check::held_first_line(),
            format!(
                "  this cell, unchanged, killed the kernel when it last ran against this same state: {}",
                self.death
            ),
            "Run it anyway: put %%crane run on its first line.".to_owned(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn a_death_says_what_killed_the_kernel_and_where_the_state_is() {
        let death = Death::from_status(std::process::ExitStatus::from_raw(11));
        let text = words(&death, &Recovered::Snapshot);
        assert!(
            text.starts_with(
                "the kernel process was killed by SIGSEGV (signal 11): a segmentation fault"
            ),
            "{text}"
        );
        assert!(
            text.ends_with("the next cell sees the state from before it"),
            "{text}"
        );
        let text = words(
            &death,
            &Recovered::Afresh("its snapshot was dropped".into()),
        );
        assert!(text.contains("(its snapshot was dropped)"), "{text}");
    }

    #[test]
    fn only_the_same_cell_is_held() {
        let killer = Killer {
            code: "import os\nos.abort()".into(),
            death: "words".into(),
        };
        assert!(killer.is("import os\nos.abort()\n"));
        assert!(!killer.is("import os\nprint(1)\nos.abort()"));
    }

    #[test]
    fn the_kernel_is_raised_above_its_parent() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let own = read_oom_score("/proc/self/oom_score_adj").expect("own");
        raise_oom_score(child.id()).expect("raised");
        let raised = read_oom_score(&format!("/proc/{}/oom_score_adj", child.id())).expect("read");
        assert_eq!(raised, (own + OOM_MARGIN).min(1000));
        let _ = child.kill();
        let _ = child.wait();
    }
}
