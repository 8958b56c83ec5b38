//! The replica: judging a cell by execution where the kernel cannot be forked (a started
//! TensorFlow runtime, CUDA, worker pools: the dry run's refusals).
//!
//! A replica is a warm interpreter of the kernel's environment that crane keeps beside it
//! (`python/crane_replica.py`'s `serve`, in the same module as the dry run), started by the
//! first check that needs it: it imports what the kernel imported, and from then on what the
//! kernel imports as the kernel goes ([`Replica::warm`], unwaited), and never runs a line of
//! the user's itself. To judge a cell, the kernel's module exports what the cell reads into a
//! private directory (`python/crane_replica_export.py`: values pickled exactly up to a bound,
//! stand-ins of large data above it, the notebook's functions and classes as their definitions;
//! nothing of the user's runs in the kernel), and the replica forks a child that seals itself as
//! a dry run's does, rebuilds the namespace and runs the cell, abridged when it is long: the
//! fork's mechanism, not a copy.
//!
//! The verdict is only as good as the copy: a crash whose failing statement reads a stand-in is
//! approximate and one that reads a name the replica could not rebuild decides nothing
//! ([`ReplicaReport::faithfulness`]).
//!
//! Hand-written process plumbing over tokio's: no crate drives a line protocol with a child
//! whose replies may be owed to requests not waited for.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crane_analysis::ParsedCell;
use crane_kernel::KernelSession;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::cell_run::{Abridging, DryRunOptions, Next};
use crate::run_answer::read_run_answer;
use crate::run_module::{self, DRY_RUN_MODULE, DRY_RUN_SOURCE};
use crate::run_report::{DryRunError, DryRunOutcome};
pub use crate::run_report::{Faithfulness, ReplicaReport};

/// What the replica may copy exactly from the kernel: per value, and for one cell in all.
pub const EXACT_BYTES: u64 = 64 << 20;
pub const EXACT_TOTAL_BYTES: u64 = 256 << 20;

/// How long the replica may take to answer a request sent without waiting (its start, an
/// import of libraries) once an answer is awaited.
const IMPORT_TIMEOUT: Duration = Duration::from_secs(180);
/// How long the kernel may take to export what a cell reads.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the replica's child may rebuild the cell's objects before the cell's own time
/// starts (`REBUILD_TIMEOUT_S` in the Python module).
const REBUILD_TIMEOUT: Duration = Duration::from_secs(60);
/// Time beyond the rebuilding and the run for the fork and its teardown.
const RUN_GRACE: Duration = Duration::from_secs(30);
/// What is kept of the replica's stderr, for the message when it dies.
const STDERR_TAIL: usize = 4_000;

/// How the replica's process loads crane's module (its source follows on stdin, after its
/// length) and serves requests. It runs isolated (`-I`: no notebook folder or `''`, no user
/// site, no `PYTHON*` variable on its import path) in a private working directory; the
/// kernel's library entries of its import path, given as arguments, come first.
const BOOT: &str = "import sys, types, builtins\n\
kernel = sys.argv[1:]\n\
sys.path[:] = kernel + [entry for entry in sys.path if entry not in kernel]\n\
del kernel\n\
n = int(sys.stdin.buffer.readline())\n\
source = sys.stdin.buffer.read(n).decode('utf-8')\n\
module = types.ModuleType(MODULE)\n\
module.__builtins__ = dict(builtins.__dict__)\n\
exec(compile(source, '<crane-dryrun-module>', 'exec'), module.__dict__)\n\
sys.modules[MODULE] = module\n\
del n, source\n\
module.serve()\n";

/// Why the replica could not judge a cell.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    #[error("the replica could not be started with {}: {error}", .python.display())]
    Start {
        python: PathBuf,
        error: std::io::Error,
    },
    #[error("the kernel did not say which interpreter runs it")]
    NoInterpreter,
    #[error("the replica ended{}", tail_suffix(.0))]
    Ended(String),
    #[error("the replica did not answer within {0:?}")]
    TimedOut(Duration),
    #[error("the replica's answer is not what crane expects: {0}")]
    Malformed(String),
    #[error("the replica failed: {0}")]
    Failed(String),
    #[error("the kernel could not export what the cell reads: {0}")]
    Export(String),
    #[error(transparent)]
    DryRun(#[from] DryRunError),
}

fn tail_suffix(tail: &str) -> String {
    let tail = tail.trim();
    match tail.lines().last() {
        Some(last) if !last.is_empty() => format!(" ({last})"),
        _ => String::new(),
    }
}

/// The replica's state, for `%crane status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplicaState {
    /// Not started yet: it starts with the first check that needs it.
    Idle,
    /// Serving: its process, its resident memory and the libraries asked of it.
    Ready {
        pid: u32,
        resident_bytes: u64,
        libraries: usize,
    },
    /// Its last process ended or failed; the next check starts a new one.
    Failed(String),
}

/// A warm interpreter beside the kernel where cells the kernel cannot fork for are run.
pub struct Replica {
    /// The kernel's interpreter; learnt from the kernel's first export when not given.
    python: Option<PathBuf>,
    process: Option<Process>,
    /// Libraries asked of the replica, asked again of a new process after a restart.
    libraries: Vec<String>,
    /// The entries of the kernel's import path that hold only libraries (the standard library,
    /// site-packages), from its first export: the replica's own import path.
    library_path: Vec<String>,
    last_failure: Option<String>,
    /// Processes started, the first included.
    pub starts: u32,
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    pid: u32,
    /// The id of the next request: an answer is matched to its request by id, so answers to
    /// requests nobody waits for (imports, a check abandoned) are passed over.
    next_id: u64,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// IPython's directory for the replica's shell, so that nothing is written to the user's.
    _ipython_dir: tempfile::TempDir,
}

impl Replica {
    /// A replica of the environment `python` (the kernel's interpreter) runs, or of the one
    /// the kernel names at its first check when `None`; nothing starts until it is used.
    pub fn new(python: Option<PathBuf>) -> Self {
        Replica {
            python,
            process: None,
            libraries: Vec::new(),
            library_path: Vec::new(),
            last_failure: None,
            starts: 0,
        }
    }

    pub fn python(&self) -> Option<&Path> {
        self.python.as_deref()
    }

    /// Start the process if none is running, without waiting for it to be ready.
    pub async fn start(&mut self) -> Result<(), ReplicaError> {
        if self.process.as_mut().is_some_and(Process::is_alive) {
            return Ok(());
        }
        self.process = None;
        let result = self.spawn().await;
        match &result {
            Ok(()) => self.last_failure = None,
            Err(error) => self.last_failure = Some(error.to_string()),
        }
        result
    }

    async fn spawn(&mut self) -> Result<(), ReplicaError> {
        let python = self.python.clone().ok_or(ReplicaError::NoInterpreter)?;
        let start_error = |error| ReplicaError::Start {
            python: python.clone(),
            error,
        };
        // Private (0700): its working directory and IPython's.
        let ipython_dir = tempfile::Builder::new()
            .prefix("crane-replica-")
            .tempdir()
            .map_err(start_error)?;
        let mut command = Command::new(&python);
        command
            // Isolated, and writing no bytecode into the libraries it imports.
            .args(["-I", "-B", "-c"])
            .arg(BOOT.replace("MODULE", &format!("{DRY_RUN_MODULE:?}")))
            .args(&self.library_path)
            .current_dir(ipython_dir.path())
            .env("IPYTHONDIR", ipython_dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group: an interrupt of the kernel's does not reach it, and its
            // forks go with it.
            .process_group(0)
            .kill_on_drop(true);
        if std::env::var_os("MPLBACKEND").is_none() {
            command.env("MPLBACKEND", "Agg");
        }
        let mut child = command.spawn().map_err(start_error)?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ReplicaError::Failed("its pipes were not made".into()));
        };
        let pid = child.id().unwrap_or(0);
        let stderr_tail = Arc::new(Mutex::new(Vec::new()));
        tokio::spawn(keep_tail(stderr, Arc::clone(&stderr_tail)));
        let mut boot = format!("{}\n", DRY_RUN_SOURCE.len()).into_bytes();
        boot.extend_from_slice(DRY_RUN_SOURCE.as_bytes());
        stdin
            .write_all(&boot)
            .await
            .map_err(|error| ReplicaError::Ended(error.to_string()))?;
        let mut process = Process {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            pid,
            next_id: 0,
            stderr: stderr_tail,
            _ipython_dir: ipython_dir,
        };
        // Its answer is read before the first one awaited: starting waits for nothing.
        process.tell(&json!({"op": "hello"})).await?;
        self.starts += 1;
        self.process = Some(process);
        if !self.libraries.is_empty() {
            let libraries = self.libraries.clone();
            if let Some(process) = self.process.as_mut() {
                process
                    .tell(&json!({"op": "import", "modules": libraries}))
                    .await?;
            }
        }
        Ok(())
    }

    /// Whether its process was started (it may have ended since).
    pub fn started(&self) -> bool {
        self.process.is_some()
    }

    /// Have the replica import these libraries (those it has not been asked for), without
    /// waiting: once it runs, it imports in its own process while the kernel goes on; until
    /// then they are noted, and its start (at the first check that needs it) imports them.
    /// An import never starts it: a replica warmed at the kernel's own import of TensorFlow
    /// would import it on the same cores at the same time (measured: a third of a second
    /// more on each Keras notebook's import cell, `docs/benchmarks.md`) and hold hundreds of
    /// MB for a kernel that may never need it.
    pub async fn warm(&mut self, libraries: &[String]) -> Result<(), ReplicaError> {
        let new: Vec<String> = libraries
            .iter()
            .filter(|library| !self.libraries.contains(library))
            .cloned()
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        self.libraries.extend(new.iter().cloned());
        if self.python.is_none() || !self.started() {
            return Ok(());
        }
        // Started again if it ended; its start asks for every library noted so far.
        if !self.process.as_mut().is_some_and(Process::is_alive) {
            return self.start().await;
        }
        match self.process.as_mut() {
            Some(process) => process.tell(&json!({"op": "import", "modules": new})).await,
            None => Ok(()),
        }
    }

    /// The replica's state, its memory read from `/proc`.
    pub fn state(&mut self) -> ReplicaState {
        match self.process.as_mut() {
            Some(process) => match process.is_alive() {
                true => ReplicaState::Ready {
                    pid: process.pid,
                    resident_bytes: resident_bytes(process.pid).unwrap_or(0),
                    libraries: self.libraries.len(),
                },
                false => ReplicaState::Failed(format!("it ended{}", tail_suffix(&process.tail()))),
            },
            None => match &self.last_failure {
                Some(failure) => ReplicaState::Failed(failure.clone()),
                None => ReplicaState::Idle,
            },
        }
    }

    /// End the replica's process (and the forks it made).
    pub async fn shutdown(&mut self) {
        if let Some(mut process) = self.process.take() {
            process.end().await;
        }
    }

    /// Run `code` in the replica, on objects rebuilt from the kernel's, sealed, and abridged
    /// as a dry run is when it is long. `fork_refused` are the reasons the kernel could not
    /// be forked, kept in the report.
    pub async fn run(
        &mut self,
        session: &mut KernelSession,
        code: &str,
        options: &DryRunOptions,
        fork_refused: Vec<String>,
    ) -> Result<DryRunOutcome, ReplicaError> {
        let directory = tempfile::Builder::new()
            .prefix("crane-export-")
            .tempdir()
            .map_err(|error| ReplicaError::Export(error.to_string()))?;
        let limit = options
            .memory_limit_bytes
            .unwrap_or_else(default_memory_limit);
        let exported = Instant::now();
        let manifest = run_module::call(
            session,
            "export",
            &json!({
                "code": code,
                "directory": directory.path(),
                "exact_bytes": EXACT_BYTES,
                "total_bytes": EXACT_TOTAL_BYTES,
                "standin_bytes": limit / 4,
            }),
            EXPORT_TIMEOUT,
        )
        .await?;
        let export = exported.elapsed();
        if manifest.get("status").and_then(Value::as_str) != Some("exported") {
            let reason = manifest
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            return Err(ReplicaError::Export(reason.to_owned()));
        }
        if self.python.is_none() {
            self.python = manifest
                .get("python")
                .and_then(Value::as_str)
                .filter(|python| !python.is_empty())
                .map(PathBuf::from);
        }
        if self.library_path.is_empty() {
            self.library_path = manifest
                .get("library_path")
                .and_then(Value::as_array)
                .map(|entries| {
                    entries
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
        }
        self.start().await?;
        let (mut abridging, mut next) = Abridging::start(options);
        let mut outcome = loop {
            let (timeout, abridge) = match next {
                Next::Run { timeout, abridge } => (timeout, abridge),
                Next::Done(outcome) => break *outcome,
            };
            let request = json!({
                "op": "run",
                "manifest": manifest,
                "code": code,
                "timeout_s": timeout.as_secs_f64(),
                "memory_limit_bytes": limit,
                "abridge": abridge,
            });
            let answer = match self.process.as_mut() {
                // A run blocked while importing runs once more after the replica imported.
                Some(process) => {
                    let most = 2 * (REBUILD_TIMEOUT + timeout) + RUN_GRACE;
                    process.ask(&request, most).await
                }
                None => Err(ReplicaError::Ended(String::new())),
            };
            let answer = match answer {
                Ok(answer) => answer,
                Err(error) => {
                    self.last_failure = Some(error.to_string());
                    self.process = None;
                    return Err(error);
                }
            };
            let ran = match answer.get("status").and_then(Value::as_str) {
                Some("not_abridgeable") => None,
                _ => Some(read_run_answer(answer)?),
            };
            next = abridging.after(ran)?;
        };
        if let DryRunOutcome::Ran(report) = &mut outcome {
            if let Some(replica) = report.replica.as_mut() {
                replica.export = export;
                replica.fork_refused = fork_refused;
            }
        }
        Ok(outcome)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(process) = self.process.as_mut() {
            process.kill_group();
        }
    }
}

impl Process {
    fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn tail(&self) -> String {
        let tail = self
            .stderr
            .lock()
            .map(|tail| tail.clone())
            .unwrap_or_default();
        String::from_utf8_lossy(&tail).into_owned()
    }

    /// Send a request whose answer nobody waits for.
    async fn tell(&mut self, request: &Value) -> Result<(), ReplicaError> {
        self.send(request).await.map(|_| ())
    }

    /// Send a request and read its answer, passing over the answers to earlier requests (for
    /// which the replica may take [`IMPORT_TIMEOUT`] more).
    async fn ask(&mut self, request: &Value, timeout: Duration) -> Result<Value, ReplicaError> {
        let id = self.send(request).await?;
        let answer = loop {
            let answer = self.answer(timeout + IMPORT_TIMEOUT).await?;
            if answer.get("id").and_then(Value::as_u64) == Some(id) {
                break answer;
            }
        };
        if answer.get("status").and_then(Value::as_str) == Some("failed") {
            let reason = answer
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given");
            return Err(ReplicaError::Failed(reason.to_owned()));
        }
        Ok(answer)
    }

    /// Send a request; its id.
    async fn send(&mut self, request: &Value) -> Result<u64, ReplicaError> {
        let id = self.next_id;
        self.next_id += 1;
        let mut request = request.clone();
        if let Some(fields) = request.as_object_mut() {
            fields.insert("id".into(), id.into());
        }
        let mut line =
            serde_json::to_vec(&request).map_err(|e| ReplicaError::Malformed(e.to_string()))?;
        line.push(b'\n');
        let written = async {
            self.stdin.write_all(&line).await?;
            self.stdin.flush().await
        }
        .await;
        written.map_err(|_| ReplicaError::Ended(self.tail()))?;
        Ok(id)
    }

    async fn answer(&mut self, timeout: Duration) -> Result<Value, ReplicaError> {
        let mut line = String::new();
        match tokio::time::timeout(timeout, self.stdout.read_line(&mut line)).await {
            Err(_) => {
                self.kill_group();
                Err(ReplicaError::TimedOut(timeout))
            }
            Ok(Err(_)) | Ok(Ok(0)) => Err(ReplicaError::Ended(self.tail())),
            Ok(Ok(_)) => {
                let answer: Value = serde_json::from_str(&line)
                    .map_err(|error| ReplicaError::Malformed(error.to_string()))?;
                match answer.get("protocol").and_then(Value::as_u64) {
                    Some(1) => Ok(answer),
                    found => Err(ReplicaError::Malformed(format!(
                        "protocol {}",
                        found.unwrap_or(0)
                    ))),
                }
            }
        }
    }

    fn kill_group(&mut self) {
        if let Some(pid) = rustix::process::Pid::from_raw(self.pid as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
        let _ = self.child.start_kill();
    }

    async fn end(&mut self) {
        // Its input closed, the replica ends; its forks die with it.
        let _ = self.stdin.shutdown().await;
        if tokio::time::timeout(Duration::from_secs(2), self.child.wait())
            .await
            .is_err()
        {
            self.kill_group();
            let _ = self.child.wait().await;
        }
    }
}

async fn keep_tail(mut stderr: tokio::process::ChildStderr, tail: Arc<Mutex<Vec<u8>>>) {
    let mut buffer = [0u8; 4096];
    while let Ok(read) = stderr.read(&mut buffer).await {
        if read == 0 {
            break;
        }
        if let Ok(mut tail) = tail.lock() {
            tail.extend_from_slice(&buffer[..read]);
            let excess = tail.len().saturating_sub(STDERR_TAIL);
            tail.drain(..excess);
        }
    }
}

/// The replica's child may make this much of its own: half of what is available, at most a
/// quarter of the machine.
pub fn default_memory_limit() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| {
        meminfo
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    match (field("MemAvailable:"), field("MemTotal:")) {
        (Some(available), Some(total)) => (available / 2).min(total / 4),
        _ => 2 << 30,
    }
}

fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

/// The modules a cell imports (`import a.b`, `from a.b import c`; not relative imports), at
/// any depth of its statements: what the replica imports as the kernel goes.
pub fn imported_modules(source: &str) -> Vec<String> {
    imported_modules_parsed(&ParsedCell::parse(source))
}

/// [`imported_modules`] of a cell already parsed.
pub fn imported_modules_parsed(cell: &ParsedCell) -> Vec<String> {
    use ruff_python_ast::visitor::{walk_stmt, Visitor};
    use ruff_python_ast::Stmt;

    struct Imports(Vec<String>);
    impl<'a> Visitor<'a> for Imports {
        fn visit_stmt(&mut self, statement: &'a Stmt) {
            match statement {
                Stmt::Import(import) => self
                    .0
                    .extend(import.names.iter().map(|alias| alias.name.id.to_string())),
                Stmt::ImportFrom(import) if import.level == 0 => {
                    if let Some(module) = &import.module {
                        self.0.push(module.id.to_string());
                    }
                }
                _ => walk_stmt(self, statement),
            }
        }
    }
    let Some(module) = cell.module() else {
        return Vec::new();
    };
    let mut imports = Imports(Vec::new());
    for statement in &module.body {
        imports.visit_stmt(statement);
    }
    let mut modules = imports.0;
    modules.dedup();
    modules
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cells_imports_are_read_at_any_depth_and_magics_do_not_hide_them() {
        let cell = "%matplotlib inline\nimport numpy as np, tensorflow.keras\nfrom sklearn.ensemble import RandomForestClassifier\n\
                    from . import local\ntry:\n    import torch\nexcept ImportError:\n    pass\n";
        assert_eq!(
            imported_modules(cell),
            ["numpy", "tensorflow.keras", "sklearn.ensemble", "torch"]
        );
        assert!(imported_modules("def (").is_empty());
    }
}
