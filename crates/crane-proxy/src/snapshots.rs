//! The proxy's bookkeeping of kernel snapshots (copy-on-write forks of the kernel taken before
//! a cell, `crane_probe::snapshot`): which live, where each listens, of which cell, how old,
//! how much memory each holds, and the watch that drops the oldest before the machine runs
//! short of memory. Before a kernel's first cell the snapshot is the fresh start
//! ([`SnapshotId::FreshStart`]): no process holds it, a restart returns to it. Each snapshot
//! keeps the parse of its cell, from which an undo reads what the cells it takes back did
//! outside the kernel, without parsing them again.
//!
//! Every private directory crane made for a snapshot (its socket, then the connection file of
//! the kernel it may become, `crane_probe::snapshot`) is remembered with the process that uses
//! it, from the moment the proxy names it for a take or hears of it, until it is removed: by
//! its process as it ends, by the kernel as it reaps a snapshot, and otherwise here, once the
//! process is gone (killed by a signal, it removes nothing itself) or killed by the proxy,
//! never while it lives ([`Snapshots::remove_unused_directories`], when the proxy reaps, learns
//! that a kernel died or switches kernels, and when it ends).
//!
//! The watch runs on a thread of the proxy, never in the busy kernel: every
//! [`WATCH_INTERVAL`] it reads the machine's `MemAvailable` and each snapshot's private memory
//! (`Private_Dirty + Private_Clean` of `/proc/PID/smaps_rollup`: the pages the kernel changed
//! since the fork, which only the snapshot still maps), and kills the oldest snapshot (through
//! a pidfd, so a reused pid is never hit) while the snapshots hold more than the budget or the
//! machine has less than [`RESERVE_FRACTION`] of its memory available. The kernel reaps what
//! was killed at its next snapshot call. Reading `smaps_rollup` walks the snapshot's page
//! tables (milliseconds for a kernel that imported the data libraries, beside the busy kernel
//! on the same cores), so the watch reads it only when the snapshots' resident sizes (`VmRSS`
//! of `/proc/PID/status`, an upper bound of their private memory that costs nothing) exceed
//! the budget.

use std::fs;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use crane_analysis::ParsedCell;

use rustix::process::{pidfd_open, pidfd_send_signal, Pid, PidfdFlags, Signal};

/// How often the watch reads the snapshots' memory.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// The share of the machine's memory that must stay available: below it, snapshots go.
const RESERVE_FRACTION: f64 = 0.10;

/// How many dropped snapshots `%crane snapshots` still mentions.
const DROPS_KEPT: usize = 10;

/// A state the kernel can return to: a fork of the kernel taken before a cell, or, before the
/// kernel's first cell, the fresh kernel a restart behind the proxy makes again (a kernel that
/// has run nothing is the state before its first cell: no fork needs to hold it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotId {
    Fork(u32),
    FreshStart,
}

/// How to return to a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Return {
    /// Make the fork listening at this socket the kernel.
    TakeOver(PathBuf),
    /// Start a fresh kernel.
    Restart,
}

/// A live fork's process.
struct Process {
    pid: u32,
    pidfd: OwnedFd,
    socket: PathBuf,
}

/// One live snapshot.
struct Entry {
    /// `None`: the fresh start.
    process: Option<Process>,
    /// The cell it was taken before: its execution count once run, and its first line.
    execution_count: usize,
    cell: String,
    /// The whole cell's parse, for what an undo cannot take back.
    code: Arc<ParsedCell>,
    taken: Instant,
}

impl Entry {
    fn id(&self) -> SnapshotId {
        match &self.process {
            Some(process) => SnapshotId::Fork(process.pid),
            None => SnapshotId::FreshStart,
        }
    }

    fn pid(&self) -> Option<u32> {
        self.process.as_ref().map(|process| process.pid)
    }
}

/// A private directory crane made for a snapshot (the parent of its socket), and the process
/// that uses it: the snapshot, then the kernel it became; `None` while the take the proxy named
/// it for is unanswered.
struct Directory {
    socket: PathBuf,
    user: Option<OwnedFd>,
}

impl Directory {
    fn path(&self) -> &Path {
        self.socket.parent().unwrap_or(&self.socket)
    }

    /// Whether no process can use it any more: its user is gone.
    fn unused(&self) -> bool {
        self.user.as_ref().is_some_and(exited)
    }
}

/// Whether the process of `pidfd` has exited (a pidfd is readable from then on).
fn exited(pidfd: &OwnedFd) -> bool {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    poll(&mut fds, Some(&now)).is_ok_and(|ready| ready > 0)
}

/// A snapshot the watch dropped, and why.
struct Dropped {
    pid: u32,
    execution_count: usize,
    cell: String,
    at: Instant,
    reason: String,
}

#[derive(Default)]
struct Registry {
    live: Vec<Entry>,
    dropped: Vec<Dropped>,
    /// The most the snapshots may hold together; `None`: a quarter of the machine's memory.
    budget_bytes: Option<u64>,
    /// Every private directory of a snapshot not removed yet, live or not.
    directories: Vec<Directory>,
}

impl Registry {
    /// The snapshot `process` was killed: its directory goes at once (no code of its will run
    /// again).
    fn killed(&mut self, process: &Process) {
        let _ = pidfd_send_signal(&process.pidfd, Signal::KILL);
        if let Some(directory) = process.socket.parent() {
            self.remove_directory(directory);
        }
    }

    fn remove_directory(&mut self, directory: &Path) {
        crane_probe::snapshot::remove_snapshot_directory(directory);
        self.directories.retain(|known| known.path() != directory);
    }

    fn remove_unused_directories(&mut self) {
        self.directories.retain(|directory| {
            let unused = directory.unused();
            if unused {
                crane_probe::snapshot::remove_snapshot_directory(directory.path());
            }
            !unused
        });
    }
}

/// The snapshots of one kernel, oldest first.
pub struct Snapshots {
    registry: Arc<Mutex<Registry>>,
}

impl Snapshots {
    /// An empty list, and its memory watch (which ends with the list).
    pub fn new(budget_bytes: Option<u64>) -> Snapshots {
        let registry = Arc::new(Mutex::new(Registry {
            budget_bytes,
            ..Registry::default()
        }));
        let weak = Arc::downgrade(&registry);
        let spawned = std::thread::Builder::new()
            .name("crane-snapshot-watch".into())
            .spawn(move || watch(weak));
        if let Err(error) = spawned {
            eprintln!("crane kernel: snapshots are not watched for memory: {error}");
        }
        Snapshots { registry }
    }

    fn lock(&self) -> MutexGuard<'_, Registry> {
        self.registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub fn set_budget(&self, budget_bytes: Option<u64>) {
        self.lock().budget_bytes = budget_bytes;
    }

    /// Make room for a new snapshot so that at most `keep` stay (oldest first): the fresh
    /// start goes from the list at once if it is beyond them; the pids of the forks beyond
    /// them, for the kernel to end.
    pub fn make_room(&self, keep: usize) -> Vec<u32> {
        let mut registry = self.lock();
        let excess = (registry.live.len() + 1).saturating_sub(keep);
        let beyond = &registry.live[..excess.min(registry.live.len())];
        let pids = beyond.iter().filter_map(Entry::pid).collect();
        if beyond.iter().any(|entry| entry.process.is_none()) {
            registry.live.retain(|entry| entry.process.is_some());
        }
        pids
    }

    pub fn count(&self) -> usize {
        self.lock().live.len()
    }

    /// Record the snapshot `pid`, listening at `socket`, taken before the cell that will have
    /// `execution_count`, and its directory as used by it. A snapshot already gone is not
    /// recorded, and its directory is removed.
    pub fn add(
        &self,
        pid: u32,
        socket: PathBuf,
        execution_count: usize,
        code: &Arc<ParsedCell>,
    ) -> std::io::Result<()> {
        let directory = socket.parent().unwrap_or(&socket).to_path_buf();
        let raw = Pid::from_raw(pid as i32).ok_or(std::io::ErrorKind::InvalidInput)?;
        let pidfd = match pidfd_open(raw, PidfdFlags::empty()) {
            Ok(pidfd) => pidfd,
            Err(error) => {
                if error == rustix::io::Errno::SRCH {
                    self.lock().remove_directory(&directory);
                }
                return Err(error.into());
            }
        };
        let user = pidfd.try_clone()?;
        {
            let mut registry = self.lock();
            registry
                .directories
                .retain(|known| known.path() != directory);
            registry.directories.push(Directory {
                socket: socket.clone(),
                user: Some(user),
            });
        }
        self.push(Some(Process { pid, pidfd, socket }), execution_count, code);
        Ok(())
    }

    /// The proxy named `socket` for a take whose answer has not come: its directory is
    /// remembered until the answer says which process uses it ([`Snapshots::add`]) or that
    /// none does ([`Snapshots::refused`], [`Snapshots::nothing_at`]).
    pub fn named(&self, socket: &Path) {
        self.lock().directories.push(Directory {
            socket: socket.to_path_buf(),
            user: None,
        });
    }

    /// The take asked for at `socket` was refused: the kernel removed what it made there, and
    /// a directory it found there is not crane's.
    pub fn refused(&self, socket: &Path) {
        (self.lock().directories).retain(|known| known.user.is_some() || known.socket != socket);
    }

    /// No snapshot listens at `socket`, where a take was asked for: its directory goes.
    pub fn nothing_at(&self, socket: &Path) {
        if let Some(directory) = socket.parent() {
            self.lock().remove_directory(directory);
        }
    }

    /// Remove the directories whose process is gone (a snapshot or a kernel a takeover made,
    /// killed by a signal, or ended otherwise without removing its own).
    pub fn remove_unused_directories(&self) {
        self.lock().remove_unused_directories();
    }

    /// Record the fresh start as the state before the kernel's first cell, `code`.
    pub fn add_fresh_start(&self, code: &Arc<ParsedCell>) {
        self.push(None, 1, code);
    }

    fn push(&self, process: Option<Process>, execution_count: usize, code: &Arc<ParsedCell>) {
        let cell = code
            .source()
            .lines()
            .find(|line| !line.trim().is_empty())
            .unwrap_or_default()
            .trim()
            .chars()
            .take(60)
            .collect();
        self.lock().live.push(Entry {
            process,
            execution_count,
            cell,
            code: Arc::clone(code),
            taken: Instant::now(),
        });
    }

    /// The `back`-th newest live snapshot (1: the newest).
    pub fn nth_newest(&self, back: usize) -> Option<SnapshotId> {
        let registry = self.lock();
        let index = registry.live.len().checked_sub(back)?;
        registry.live.get(index).map(Entry::id)
    }

    /// How to return to the live snapshot `id`, and the execution count of its cell.
    pub fn get(&self, id: SnapshotId) -> Option<(Return, usize)> {
        let registry = self.lock();
        let entry = registry.live.iter().find(|entry| entry.id() == id)?;
        let how = match &entry.process {
            Some(process) => Return::TakeOver(process.socket.clone()),
            None => Return::Restart,
        };
        Some((how, entry.execution_count))
    }

    /// The socket of the live fork `pid`.
    pub fn socket(&self, pid: u32) -> Option<PathBuf> {
        match self.get(SnapshotId::Fork(pid))? {
            (Return::TakeOver(socket), _) => Some(socket),
            (Return::Restart, _) => None,
        }
    }

    /// The cells of the snapshot `id` and of those taken after it, oldest first, as they were
    /// parsed when relayed: the cells an undo to `id` takes back.
    pub fn cells_from(&self, id: SnapshotId) -> Vec<Arc<ParsedCell>> {
        let registry = self.lock();
        let Some(index) = registry.live.iter().position(|entry| entry.id() == id) else {
            return Vec::new();
        };
        registry.live[index..]
            .iter()
            .map(|entry| Arc::clone(&entry.code))
            .collect()
    }

    /// Whether the watch dropped `id` (for memory).
    pub fn dropped_for_memory(&self, id: SnapshotId) -> Option<String> {
        let SnapshotId::Fork(pid) = id else {
            return None;
        };
        let registry = self.lock();
        registry
            .dropped
            .iter()
            .find(|dropped| dropped.pid == pid)
            .map(|dropped| dropped.reason.clone())
    }

    /// End every snapshot but `kept` (the one a takeover made the kernel), through its pidfd:
    /// a takeover or a restart ended the kernel they were forks of, and a snapshot outlives its
    /// kernel (it dies with the proxy). Their private directories go too; that of the snapshot
    /// that took over holds its kernel's connection file, and goes once that kernel is gone.
    pub fn clear(&self, kept: Option<u32>) {
        let mut registry = self.lock();
        for entry in std::mem::take(&mut registry.live) {
            match entry.process {
                Some(process) if Some(process.pid) != kept => registry.killed(&process),
                _ => {}
            }
        }
        registry.remove_unused_directories();
    }

    /// As the proxy ends: every snapshot is ended and every directory of one removed, but where
    /// a snapshot the proxy does not know of (its take unanswered) still listens: it removes its
    /// own as it sees the proxy end.
    pub fn end(&self) {
        self.clear(None);
        let mut registry = self.lock();
        registry.directories.retain(|directory| {
            let gone = match &directory.user {
                Some(_) => directory.unused(),
                None => crane_probe::snapshot::nobody_listens(&directory.socket),
            };
            if gone {
                crane_probe::snapshot::remove_snapshot_directory(directory.path());
            }
            !gone
        });
    }

    /// Forget snapshots the kernel ended or reaped.
    pub fn forget(&self, pids: &[u32]) {
        self.lock()
            .live
            .retain(|entry| entry.pid().is_none_or(|pid| !pids.contains(&pid)));
    }

    /// `%crane snapshots`.
    pub fn describe(&self, keep: usize) -> String {
        let registry = self.lock();
        let budget = budget_of(&registry);
        let mut lines = vec![format!(
            "crane: {} snapshot(s) kept (at most {keep}, within {} of private memory)",
            registry.live.len(),
            megabytes(budget)
        )];
        for entry in registry.live.iter().rev() {
            let held = match entry.pid() {
                Some(pid) => format!("{} private", megabytes(private_memory(pid))),
                None => "a fresh start of the kernel, which had run no cell: no memory held, a restart returns to it".into(),
            };
            lines.push(format!(
                "  before cell [{}] `{}`: {} s old, {held}",
                entry.execution_count,
                entry.cell,
                entry.taken.elapsed().as_secs(),
            ));
        }
        for dropped in registry.dropped.iter().rev() {
            lines.push(format!(
                "  dropped {} s ago: the snapshot before cell [{}] `{}` ({})",
                dropped.at.elapsed().as_secs(),
                dropped.execution_count,
                dropped.cell,
                dropped.reason
            ));
        }
        lines.join("\n")
    }
}

impl Drop for Snapshots {
    fn drop(&mut self) {
        // A snapshot outlives the kernel: it is ended here (not waited for).
        self.end();
    }
}

fn watch(registry: Weak<Mutex<Registry>>) {
    loop {
        std::thread::sleep(WATCH_INTERVAL);
        let Some(registry) = registry.upgrade() else {
            return;
        };
        let mut registry = registry
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // Only forks hold memory; the fresh start stays.
        let forks: Vec<u32> = registry.live.iter().filter_map(Entry::pid).collect();
        if forks.is_empty() {
            continue;
        }
        let budget = budget_of(&registry);
        let mut held: Vec<u64> = forks.iter().map(|&pid| resident_memory(pid)).collect();
        if held.iter().sum::<u64>() > budget {
            held = forks.iter().map(|&pid| private_memory(pid)).collect();
        }
        let total_memory = meminfo("MemTotal").unwrap_or(0);
        let reserve = (total_memory as f64 * RESERVE_FRACTION) as u64;
        loop {
            let held_total: u64 = held.iter().sum();
            let available = meminfo("MemAvailable").unwrap_or(u64::MAX);
            let reason = if held_total > budget {
                format!(
                    "the snapshots held {}, over the budget of {}",
                    megabytes(held_total),
                    megabytes(budget)
                )
            } else if available < reserve {
                format!(
                    "the machine had {} available, under the reserve of {}",
                    megabytes(available),
                    megabytes(reserve)
                )
            } else {
                break;
            };
            let Some(index) = registry
                .live
                .iter()
                .position(|entry| entry.process.is_some())
            else {
                break;
            };
            let oldest = registry.live.remove(index);
            if !held.is_empty() {
                held.remove(0);
            }
            let Some(process) = oldest.process else {
                continue;
            };
            // The kernel removes a snapshot's directory when it reaps it, which a kernel that
            // takes no further snapshot never does.
            registry.killed(&process);
            registry.dropped.push(Dropped {
                pid: process.pid,
                execution_count: oldest.execution_count,
                cell: oldest.cell,
                at: Instant::now(),
                reason,
            });
            if registry.dropped.len() > DROPS_KEPT {
                registry.dropped.remove(0);
            }
        }
    }
}

fn budget_of(registry: &Registry) -> u64 {
    registry
        .budget_bytes
        .unwrap_or_else(|| meminfo("MemTotal").unwrap_or(0) / 4)
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// A field of a `/proc` file in kB, in bytes.
fn field_kb(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

fn meminfo(field: &str) -> Option<u64> {
    field_kb(&fs::read_to_string("/proc/meminfo").ok()?, field)
}

/// The memory `pid` has resident, shared or not (`VmRSS`, from the process's counters).
fn resident_memory(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| field_kb(&status, "VmRSS"))
        .unwrap_or(0)
}

/// The memory only `pid` maps: for a snapshot, the pages the kernel changed since the fork.
fn private_memory(pid: u32) -> u64 {
    let Ok(rollup) = fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
        return 0;
    };
    field_kb(&rollup, "Private_Dirty").unwrap_or(0)
        + field_kb(&rollup, "Private_Clean").unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_fields_are_read_in_bytes() {
        let text = "Rss:  2048 kB\nPrivate_Clean:  4 kB\nPrivate_Dirty:   12 kB\n";
        assert_eq!(field_kb(text, "Private_Dirty"), Some(12 * 1024));
        assert_eq!(field_kb(text, "Private_Clean"), Some(4096));
        assert_eq!(field_kb(text, "Swap"), None);
        assert!(meminfo("MemTotal").is_some_and(|total| total > 0));
    }

    #[test]
    fn the_fresh_start_is_a_snapshot_no_process_holds() {
        let snapshots = Snapshots::new(None);
        let parsed = |code| Arc::new(ParsedCell::parse(code));
        snapshots.add_fresh_start(&parsed("import pandas as pd"));
        assert_eq!(
            snapshots.get(SnapshotId::FreshStart),
            Some((Return::Restart, 1))
        );
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("a child to stand for a fork");
        let socket = PathBuf::from("/nonexistent/crane-snapshot/control");
        snapshots
            .add(child.id(), socket.clone(), 2, &parsed("df['a'] = 0"))
            .expect("recorded");
        assert_eq!(
            snapshots.get(SnapshotId::Fork(child.id())),
            Some((Return::TakeOver(socket), 2))
        );
        assert_eq!(snapshots.nth_newest(1), Some(SnapshotId::Fork(child.id())));
        assert_eq!(snapshots.nth_newest(2), Some(SnapshotId::FreshStart));
        assert_eq!(snapshots.nth_newest(3), None);
        let cells = snapshots.cells_from(SnapshotId::FreshStart);
        assert_eq!(
            cells.iter().map(|cell| cell.source()).collect::<Vec<_>>(),
            ["import pandas as pd", "df['a'] = 0"]
        );
        let listing = snapshots.describe(3);
        assert!(
            listing.contains("before cell [1] `import pandas as pd`: 0 s old, a fresh start"),
            "{listing}"
        );
        // The fresh start holds no memory and is never dropped for it.
        assert_eq!(snapshots.dropped_for_memory(SnapshotId::FreshStart), None);
        // Room for a third: nothing goes. For a second: the fresh start goes from the list
        // (no process to end). For the only one: the fork, for the kernel to end.
        assert!(snapshots.make_room(3).is_empty());
        assert_eq!(snapshots.count(), 2);
        assert!(snapshots.make_room(2).is_empty());
        assert_eq!(snapshots.count(), 1);
        assert_eq!(snapshots.get(SnapshotId::FreshStart), None);
        assert_eq!(snapshots.make_room(1), [child.id()]);
        snapshots.forget(&[child.id()]);
        assert_eq!(snapshots.count(), 0);
        let _ = child.kill();
        let _ = child.wait();
    }

    /// A private directory as the kernel makes one for a snapshot, under a parent of the
    /// test's own: `(parent, directory)`.
    fn snapshot_directory(name: &str) -> (PathBuf, PathBuf) {
        use std::os::unix::fs::DirBuilderExt;
        let parent =
            std::env::temp_dir().join(format!("crane-proxy-test-{}-{name}", std::process::id()));
        let directory = parent.join("crane-snapshot-test");
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&directory)
            .expect("a private directory");
        (parent, directory)
    }

    #[test]
    fn a_snapshot_directory_goes_once_its_process_is_gone() {
        let (parent, directory) = snapshot_directory("gone");
        let socket = directory.join("control");
        let parsed = |code| Arc::new(ParsedCell::parse(code));
        let snapshots = Snapshots::new(None);
        snapshots.named(&socket);
        let mut child = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .expect("a child to stand for a snapshot");
        snapshots
            .add(child.id(), socket, 2, &parsed("x = 1"))
            .expect("recorded");
        // It took over: the kernel it became keeps its directory, with the connection file.
        snapshots.clear(Some(child.id()));
        fs::write(directory.join("kernel.json"), "{}").expect("a connection file");
        snapshots.remove_unused_directories();
        assert!(
            directory.join("kernel.json").exists(),
            "removed while in use"
        );
        // Killed by a signal, it removes nothing: the list does.
        let _ = child.kill();
        let _ = child.wait();
        snapshots.remove_unused_directories();
        assert!(!directory.exists(), "left once its process was gone");

        // A take refused: a directory found at the name it asked for is not crane's.
        fs::create_dir(&directory).expect("someone's directory");
        fs::write(directory.join("kept"), "theirs").expect("their file");
        snapshots.named(&directory.join("control"));
        snapshots.refused(&directory.join("control"));
        snapshots.end();
        assert!(directory.join("kept").exists());
        // A take unanswered where nothing listens: its directory goes as the proxy ends.
        fs::remove_dir_all(&directory).expect("removed");
        let (_, unanswered) = snapshot_directory("gone");
        snapshots.named(&unanswered.join("control"));
        drop(snapshots);
        assert!(!unanswered.exists(), "an unanswered take's directory left");
        fs::remove_dir_all(&parent).expect("the test's directory");
    }

    #[test]
    fn resident_memory_bounds_private_memory() {
        let own = std::process::id();
        let resident = resident_memory(own);
        assert!(resident > 0);
        assert!(private_memory(own) <= resident);
    }
}
