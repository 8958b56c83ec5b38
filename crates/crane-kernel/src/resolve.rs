//! Choosing which kernel to start from the CLI inputs.
//!
//! Priority: `--python`, `--kernel NAME`, `$CRANE_PYTHON` (how crane's own tests and examples
//! name the project's environment), the notebook's kernelspec when it is installed, the active
//! environment (`$VIRTUAL_ENV`, then `$CONDA_PREFIX`), `python3` on PATH. An explicit choice
//! that does not work is an error (crane never silently runs another interpreter than the one
//! the user named); a notebook's kernelspec that is not installed falls through to the next
//! candidate, and the launch says so. Kernelspecs are looked up as Jupyter run from the active
//! environment would: `$JUPYTER_PATH`, the user data directory, the environment's
//! `share/jupyter`, then the system directories.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jupyter_protocol::JupyterKernelspec;

use crate::error::ResolveError;

/// How long an interpreter may take to report its prefix and whether it has ipykernel
/// (pyenv shims and cold disks can be slow).
const PYTHON_CHECK_TIMEOUT: Duration = Duration::from_secs(20);

/// Exit code of the check script when ipykernel is not importable.
const NO_IPYKERNEL_EXIT: i32 = 3;

const PYTHON_CHECK_SCRIPT: &str = "import sys, importlib.util\n\
print(sys.prefix)\n\
sys.exit(0 if importlib.util.find_spec('ipykernel') else 3)\n";

/// The kernelspec names ipykernel gives its own kernel; a notebook naming one of them just
/// asks for "this environment's Python".
const NATIVE_KERNEL_NAMES: [&str; 2] = ["python3", "python"];

/// The Jupyter data directories searched after every environment's own.
const SYSTEM_DATA_DIRS: [&str; 2] = ["/usr/local/share/jupyter", "/usr/share/jupyter"];

/// What the CLI knows when it has to pick a kernel.
#[derive(Debug, Clone, Default)]
pub struct KernelInputs {
    /// `--python PATH`.
    pub python: Option<PathBuf>,
    /// `--kernel NAME`.
    pub kernel: Option<String>,
    /// `$CRANE_PYTHON`.
    pub crane_python: Option<PathBuf>,
    /// The notebook's `metadata.kernelspec.name`.
    pub notebook_kernel: Option<String>,
    /// The active virtual or conda environment.
    pub active_env: Option<ActiveEnv>,
    /// Jupyter data directories searched first for `kernels/<name>/kernel.json`
    /// (`$JUPYTER_PATH`, the user data directory).
    pub data_dirs: Vec<PathBuf>,
    /// Searched after the environments' own `share/jupyter` (the system directories).
    pub system_data_dirs: Vec<PathBuf>,
}

impl KernelInputs {
    /// Inputs with `$CRANE_PYTHON`, the active environment and the standard Jupyter data
    /// directories filled in.
    pub fn from_env() -> Self {
        KernelInputs {
            crane_python: non_empty_var("CRANE_PYTHON").map(PathBuf::from),
            active_env: ActiveEnv::from_env(),
            data_dirs: jupyter_data_dirs(),
            system_data_dirs: SYSTEM_DATA_DIRS.iter().map(PathBuf::from).collect(),
            ..KernelInputs::default()
        }
    }
}

fn non_empty_var(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|value| !value.is_empty())
}

/// The environment the user activated (`source .venv/bin/activate`, `conda activate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveEnv {
    pub kind: EnvKind,
    /// The environment's prefix (`$VIRTUAL_ENV` or `$CONDA_PREFIX`).
    pub prefix: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvKind {
    Virtualenv,
    Conda,
}

impl ActiveEnv {
    /// `$VIRTUAL_ENV`, else `$CONDA_PREFIX` (a venv made inside a conda env is the inner one).
    pub fn from_env() -> Option<Self> {
        non_empty_var("VIRTUAL_ENV")
            .map(|prefix| ActiveEnv {
                kind: EnvKind::Virtualenv,
                prefix: prefix.into(),
            })
            .or_else(|| {
                non_empty_var("CONDA_PREFIX").map(|prefix| ActiveEnv {
                    kind: EnvKind::Conda,
                    prefix: prefix.into(),
                })
            })
    }

    /// The environment's interpreter.
    pub fn python(&self) -> PathBuf {
        self.prefix.join("bin").join("python")
    }
}

/// Which input decided the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelOrigin {
    PythonFlag,
    KernelFlag,
    CranePythonEnv,
    NotebookKernelspec,
    ActiveEnv(EnvKind),
    PythonOnPath,
}

impl fmt::Display for KernelOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelOrigin::PythonFlag => "--python",
            KernelOrigin::KernelFlag => "--kernel",
            KernelOrigin::CranePythonEnv => "$CRANE_PYTHON",
            KernelOrigin::NotebookKernelspec => "the notebook's kernelspec",
            KernelOrigin::ActiveEnv(EnvKind::Virtualenv) => "$VIRTUAL_ENV",
            KernelOrigin::ActiveEnv(EnvKind::Conda) => "$CONDA_PREFIX",
            KernelOrigin::PythonOnPath => "python3 on PATH",
        })
    }
}

/// What kind of kernel was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelChoice {
    /// An interpreter launched as `PYTHON -m ipykernel_launcher -f {connection_file}`.
    Python(PathBuf),
    /// A kernelspec directory (holding `kernel.json`).
    Kernelspec { name: String, dir: PathBuf },
}

/// How a kernel's interrupt is delivered (the kernelspec's `interrupt_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterruptMode {
    /// SIGINT to the kernel's process group.
    Signal,
    /// `interrupt_request` on the control channel.
    Message,
}

/// A fully resolved way to launch a kernel.
#[derive(Debug, Clone)]
pub struct KernelLaunch {
    /// What was chosen.
    pub choice: KernelChoice,
    /// Which input chose it.
    pub origin: KernelOrigin,
    /// Command line; `{connection_file}` and `{resource_dir}` are substituted at start.
    pub argv: Vec<String>,
    /// Environment the kernelspec adds.
    pub env: BTreeMap<String, String>,
    /// How to interrupt it on timeout.
    pub interrupt_mode: InterruptMode,
    /// Why a candidate ranked higher was passed over (e.g. the notebook's kernelspec is not
    /// installed), for the user to see.
    pub note: Option<String>,
}

impl KernelLaunch {
    fn with_note(mut self, note: Option<String>) -> Self {
        self.note = note;
        self
    }

    /// Launch `python -m ipykernel_launcher` with the given interpreter.
    pub fn python(python: impl Into<PathBuf>, origin: KernelOrigin) -> Self {
        let python = anchored(python.into());
        KernelLaunch {
            argv: vec![
                python.to_string_lossy().into_owned(),
                "-m".into(),
                "ipykernel_launcher".into(),
                "-f".into(),
                "{connection_file}".into(),
            ],
            choice: KernelChoice::Python(python),
            origin,
            env: BTreeMap::new(),
            interrupt_mode: InterruptMode::Signal,
            note: None,
        }
    }

    /// Read `dir/kernel.json` of the kernelspec `name`.
    pub fn from_kernelspec(
        name: &str,
        dir: &Path,
        origin: KernelOrigin,
    ) -> Result<Self, ResolveError> {
        let path = dir.join("kernel.json");
        let invalid = |reason: String| ResolveError::KernelspecInvalid {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| invalid(e.to_string()))?;
        let spec: JupyterKernelspec =
            serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        if spec.argv.is_empty() {
            return Err(invalid("its argv is empty".into()));
        }
        let interrupt_mode = match spec.interrupt_mode.as_deref() {
            None | Some("signal") => InterruptMode::Signal,
            Some("message") => InterruptMode::Message,
            Some(other) => return Err(invalid(format!("unknown interrupt_mode `{other}`"))),
        };
        Ok(KernelLaunch {
            choice: KernelChoice::Kernelspec {
                name: name.to_string(),
                dir: dir.to_path_buf(),
            },
            origin,
            argv: spec.argv,
            env: spec.env.unwrap_or_default().into_iter().collect(),
            interrupt_mode,
            note: None,
        })
    }

    /// The Python interpreter the kernel runs in, when its command line says it
    /// (`PYTHON -m ipykernel_launcher ...`).
    pub fn interpreter(&self) -> Option<&Path> {
        match &self.choice {
            KernelChoice::Python(python) => Some(python),
            KernelChoice::Kernelspec { .. } => match self.argv.as_slice() {
                [python, flag, module, ..]
                    if flag == "-m"
                        && (module == "ipykernel_launcher" || module == "ipykernel") =>
                {
                    Some(Path::new(python))
                }
                _ => None,
            },
        }
    }

    /// The kernelspec directory, substituted for `{resource_dir}`.
    pub fn resource_dir(&self) -> Option<&Path> {
        match &self.choice {
            KernelChoice::Kernelspec { dir, .. } => Some(dir),
            KernelChoice::Python(_) => None,
        }
    }
}

impl fmt::Display for KernelLaunch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.choice {
            KernelChoice::Python(python) => {
                write!(f, "{} ({})", python.display(), self.origin)
            }
            KernelChoice::Kernelspec { name, dir } => {
                write!(
                    f,
                    "kernelspec {name} in {} ({})",
                    dir.display(),
                    self.origin
                )
            }
        }
    }
}

/// The Jupyter data directories searched before any environment's: `$JUPYTER_PATH` entries,
/// then the user data directory (`$JUPYTER_DATA_DIR`, else `~/.local/share/jupyter` honouring
/// `$XDG_DATA_HOME`).
pub fn jupyter_data_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("JUPYTER_PATH")
        .map(|value| {
            std::env::split_paths(&value)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if let Some(user) = jupyter_user_data_dir() {
        dirs.push(user);
    }
    dedup_paths(dirs)
}

/// `$JUPYTER_DATA_DIR`, else `<XDG data dir>/jupyter` (`~/.local/share/jupyter`).
pub(crate) fn jupyter_user_data_dir() -> Option<PathBuf> {
    std::env::var_os("JUPYTER_DATA_DIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|d| d.join("jupyter")))
}

/// Names of the kernelspecs found in `data_dirs` (first occurrence wins, as in Jupyter).
pub fn list_kernelspecs(data_dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for data_dir in data_dirs {
        let Ok(entries) = std::fs::read_dir(data_dir.join("kernels")) else {
            continue;
        };
        let mut here: Vec<(String, PathBuf)> = entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().join("kernel.json").is_file())
            .filter_map(|entry| Some((entry.file_name().into_string().ok()?, entry.path())))
            .filter(|(name, _)| !found.iter().any(|(seen, _)| seen == name))
            .collect();
        here.sort();
        found.extend(here);
    }
    found
}

/// Pick the kernel for these inputs, in the documented priority order.
pub async fn resolve_kernel(inputs: &KernelInputs) -> Result<KernelLaunch, ResolveError> {
    if let Some(python) = &inputs.python {
        check_explicit_python(python, KernelOrigin::PythonFlag).await?;
        return Ok(KernelLaunch::python(python, KernelOrigin::PythonFlag));
    }

    // Kernelspecs installed in an interpreter's prefix count too, as for Jupyter run there.
    let mut interpreters: Vec<(PathBuf, PathBuf)> = Vec::new();
    let env_python = inputs.active_env.as_ref().map(ActiveEnv::python);
    let path_python = which::which("python3").ok();
    let mut path_check = None;
    let needs_specs = inputs.kernel.is_some()
        || (inputs.crane_python.is_none() && inputs.notebook_kernel.is_some());
    if needs_specs {
        if let Some(env) = &inputs.active_env {
            interpreters.push((env.python(), env.prefix.clone()));
        }
        if let Some(python) = &path_python {
            let check = check_python(python).await;
            if let Ok(PythonCheck {
                prefix: Some(prefix),
                ..
            }) = &check
            {
                interpreters.push((python.clone(), prefix.clone()));
            }
            path_check = Some(check);
        }
    }
    let search = search_dirs(inputs, &interpreters);
    let specs = if needs_specs {
        list_kernelspecs(&search)
    } else {
        Vec::new()
    };

    if let Some(name) = &inputs.kernel {
        let Some((_, dir)) = specs.iter().find(|(found, _)| found == name) else {
            return Err(ResolveError::KernelspecNotFound {
                name: name.clone(),
                available: specs.into_iter().map(|(name, _)| name).collect(),
                searched: search,
            });
        };
        let launch = KernelLaunch::from_kernelspec(name, dir, KernelOrigin::KernelFlag)?;
        return Ok(bind_bare_python(launch, &interpreters));
    }

    if let Some(python) = &inputs.crane_python {
        check_explicit_python(python, KernelOrigin::CranePythonEnv).await?;
        return Ok(KernelLaunch::python(python, KernelOrigin::CranePythonEnv));
    }

    let mut note = None;
    if let Some(name) = &inputs.notebook_kernel {
        if let Some((_, dir)) = specs.iter().find(|(found, _)| found == name) {
            let launch =
                KernelLaunch::from_kernelspec(name, dir, KernelOrigin::NotebookKernelspec)?;
            return Ok(bind_bare_python(launch, &interpreters));
        }
        if !NATIVE_KERNEL_NAMES.contains(&name.as_str()) {
            note = Some(format!(
                "the notebook's kernelspec `{name}` is not installed (searched {})",
                search
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }

    if let (Some(env), Some(python)) = (&inputs.active_env, &env_python) {
        let origin = KernelOrigin::ActiveEnv(env.kind);
        check_explicit_python(python, origin).await?;
        return Ok(KernelLaunch::python(python, origin).with_note(note));
    }

    let path_check = match (&path_python, path_check) {
        (Some(_), Some(check)) => Some(check),
        (Some(python), None) => Some(check_python(python).await),
        (None, _) => None,
    };
    match (&path_python, path_check) {
        (Some(python), Some(Ok(check))) if check.has_ipykernel => {
            Ok(KernelLaunch::python(python, KernelOrigin::PythonOnPath).with_note(note))
        }
        (Some(python), Some(Ok(_))) => Err(ResolveError::NothingFound {
            tried: vec![format!(
                "python3 on PATH ({}) cannot import ipykernel",
                python.display()
            )],
            fix: format!("{} -m pip install ipykernel", shell_quote(python)),
        }),
        (Some(python), Some(Err(reason))) => Err(ResolveError::NothingFound {
            tried: vec![format!(
                "python3 on PATH ({}) cannot be run: {reason}",
                python.display()
            )],
            fix: "install Python 3, then run `python3 -m pip install ipykernel`".into(),
        }),
        _ => Err(ResolveError::NothingFound {
            tried: vec![
                "no --python, --kernel, installed notebook kernelspec or active environment".into(),
                "no python3 on PATH".into(),
            ],
            fix: "install Python 3, then run `python3 -m pip install ipykernel`".into(),
        }),
    }
}

/// What one interpreter said about itself.
struct PythonCheck {
    prefix: Option<PathBuf>,
    has_ipykernel: bool,
}

async fn check_python(python: &Path) -> Result<PythonCheck, String> {
    let mut command = tokio::process::Command::new(python);
    command
        .args(["-c", PYTHON_CHECK_SCRIPT])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let output = tokio::time::timeout(PYTHON_CHECK_TIMEOUT, command.output())
        .await
        .map_err(|_| {
            format!(
                "it did not answer within {} s",
                PYTHON_CHECK_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| e.to_string())?;
    let prefix = String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .filter(|line| !line.is_empty())
        .map(PathBuf::from);
    match output.status.code() {
        Some(0) => Ok(PythonCheck {
            prefix,
            has_ipykernel: true,
        }),
        Some(NO_IPYKERNEL_EXIT) => Ok(PythonCheck {
            prefix,
            has_ipykernel: false,
        }),
        _ => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let last = stderr.lines().last().unwrap_or("").trim();
            Err(format!("it exited with {} {last}", output.status)
                .trim_end()
                .to_string())
        }
    }
}

async fn check_explicit_python(python: &Path, origin: KernelOrigin) -> Result<(), ResolveError> {
    if !python.exists() {
        return Err(ResolveError::PythonUnusable {
            python: python.to_path_buf(),
            origin,
            reason: "no such file".into(),
        });
    }
    let check = check_python(python)
        .await
        .map_err(|reason| ResolveError::PythonUnusable {
            python: python.to_path_buf(),
            origin,
            reason,
        })?;
    if check.has_ipykernel {
        return Ok(());
    }
    Err(ResolveError::IpykernelMissing {
        python: python.to_path_buf(),
        origin,
        fix: format!("{} -m pip install ipykernel", shell_quote(python)),
    })
}

fn search_dirs(inputs: &KernelInputs, interpreters: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut dirs = inputs.data_dirs.clone();
    dirs.extend(
        interpreters
            .iter()
            .map(|(_, prefix)| prefix.join("share").join("jupyter")),
    );
    dirs.extend(inputs.system_data_dirs.iter().cloned());
    dedup_paths(dirs)
}

/// A kernelspec installed inside an interpreter's prefix usually says just `python`; like
/// Jupyter run from that environment, run it with that interpreter rather than whatever
/// `python` happens to be first on PATH.
fn bind_bare_python(mut launch: KernelLaunch, interpreters: &[(PathBuf, PathBuf)]) -> KernelLaunch {
    let KernelChoice::Kernelspec { dir, .. } = &launch.choice else {
        return launch;
    };
    let bare_python = launch
        .argv
        .first()
        .is_some_and(|program| program == "python" || program == "python3");
    if !bare_python {
        return launch;
    }
    let owner = interpreters
        .iter()
        .find(|(_, prefix)| dir.starts_with(prefix.join("share").join("jupyter")));
    if let Some((python, _)) = owner {
        launch.argv[0] = python.to_string_lossy().into_owned();
    }
    launch
}

fn dedup_paths(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut unique: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        if !unique.contains(&path) {
            unique.push(path);
        }
    }
    unique
}

fn shell_quote(path: &Path) -> String {
    let text = path.to_string_lossy();
    if text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c))
    {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// A relative interpreter path with a folder in it (`.venv/bin/python`) is taken from the
/// current directory, since the kernel starts in the notebook's folder; a bare name
/// (`python3`) is left for the PATH lookup.
fn anchored(python: PathBuf) -> PathBuf {
    if python.is_relative() && python.components().count() > 1 {
        std::path::absolute(&python).unwrap_or(python)
    } else {
        python
    }
}
