//! Choosing which kernel to start from the CLI inputs.
//!
//! Priority: `--python`, `$CRANE_PYTHON`, `--kernel NAME`, the project venv, the `python3`
//! kernelspec, `python3` on PATH. An explicit choice that does not work is an error (crane
//! never silently runs another interpreter than the one the user named); only the defaults
//! fall through to the next candidate.

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

/// What the CLI knows when it has to pick a kernel.
#[derive(Debug, Clone, Default)]
pub struct KernelInputs {
    /// `--python PATH`.
    pub python: Option<PathBuf>,
    /// `$CRANE_PYTHON`.
    pub crane_python: Option<PathBuf>,
    /// `--kernel NAME`.
    pub kernel: Option<String>,
    /// The project's own interpreter (`<repo>/.venv/bin/python`) when it exists.
    pub project_venv_python: Option<PathBuf>,
    /// The one command that (re)creates the project's Python environment, such as
    /// `bash scripts/setup-python.sh`; suggested as the fix when nothing works.
    pub setup_command: Option<String>,
    /// Jupyter data directories searched for `kernels/<name>/kernel.json`, in order; the
    /// `share/jupyter` directory of each interpreter crane inspects is searched after them.
    pub data_dirs: Vec<PathBuf>,
}

impl KernelInputs {
    /// Inputs with `$CRANE_PYTHON` and the standard Jupyter data directories filled in.
    pub fn from_env() -> Self {
        KernelInputs {
            crane_python: std::env::var_os("CRANE_PYTHON")
                .filter(|value| !value.is_empty())
                .map(PathBuf::from),
            data_dirs: jupyter_data_dirs(),
            ..KernelInputs::default()
        }
    }
}

/// Which input decided the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelOrigin {
    PythonFlag,
    CranePythonEnv,
    KernelFlag,
    ProjectVenv,
    DefaultKernelspec,
    PythonOnPath,
}

impl fmt::Display for KernelOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            KernelOrigin::PythonFlag => "--python",
            KernelOrigin::CranePythonEnv => "$CRANE_PYTHON",
            KernelOrigin::KernelFlag => "--kernel",
            KernelOrigin::ProjectVenv => "project venv",
            KernelOrigin::DefaultKernelspec => "default python3 kernelspec",
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
}

impl KernelLaunch {
    /// Launch `python -m ipykernel_launcher` with the given interpreter.
    pub fn python(python: impl Into<PathBuf>, origin: KernelOrigin) -> Self {
        let python = python.into();
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
        })
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

/// The standard Jupyter data directories: `$JUPYTER_PATH` entries, the user data directory
/// (`$JUPYTER_DATA_DIR`, else `~/.local/share/jupyter` honouring `$XDG_DATA_HOME`), then
/// `/usr/local/share/jupyter` and `/usr/share/jupyter`.
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
    dirs.push(PathBuf::from("/usr/local/share/jupyter"));
    dirs.push(PathBuf::from("/usr/share/jupyter"));
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
    for (python, origin) in [
        (&inputs.python, KernelOrigin::PythonFlag),
        (&inputs.crane_python, KernelOrigin::CranePythonEnv),
    ] {
        if let Some(python) = python {
            check_explicit_python(python, origin, None).await?;
            return Ok(KernelLaunch::python(python, origin));
        }
    }

    if inputs.kernel.is_none() {
        if let Some(venv) = &inputs.project_venv_python {
            let setup = inputs.setup_command.as_deref();
            check_explicit_python(venv, KernelOrigin::ProjectVenv, setup).await?;
            return Ok(KernelLaunch::python(venv, KernelOrigin::ProjectVenv));
        }
    }

    // Kernelspecs installed in an interpreter's prefix count too, as for Jupyter run there.
    let mut interpreters: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let Some(venv) = &inputs.project_venv_python {
        if let Ok(PythonCheck {
            prefix: Some(prefix),
            ..
        }) = check_python(venv).await
        {
            interpreters.push((venv.clone(), prefix));
        }
    }
    let path_python = which::which("python3").ok();
    let path_check = match &path_python {
        Some(python) => Some(check_python(python).await),
        None => None,
    };
    if let (
        Some(python),
        Some(Ok(PythonCheck {
            prefix: Some(prefix),
            ..
        })),
    ) = (&path_python, &path_check)
    {
        interpreters.push((python.clone(), prefix.clone()));
    }
    let search = search_dirs(&inputs.data_dirs, &interpreters);
    let specs = list_kernelspecs(&search);

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

    if let Some((name, dir)) = specs.iter().find(|(name, _)| name == "python3") {
        let launch = KernelLaunch::from_kernelspec(name, dir, KernelOrigin::DefaultKernelspec)?;
        return Ok(bind_bare_python(launch, &interpreters));
    }
    let mut tried = vec![format!(
        "no python3 kernelspec in {}",
        search
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )];

    match (&path_python, path_check) {
        (Some(python), Some(Ok(check))) if check.has_ipykernel => {
            return Ok(KernelLaunch::python(python, KernelOrigin::PythonOnPath));
        }
        (Some(python), Some(Ok(_))) => tried.push(format!(
            "python3 on PATH ({}) cannot import ipykernel",
            python.display()
        )),
        (Some(python), Some(Err(reason))) => tried.push(format!(
            "python3 on PATH ({}) cannot be run: {reason}",
            python.display()
        )),
        _ => tried.push("no python3 on PATH".to_string()),
    }

    let fix = match (&inputs.setup_command, &path_python) {
        (Some(setup), _) => setup.clone(),
        (None, Some(_)) => "python3 -m pip install ipykernel".to_string(),
        (None, None) => "install Python 3, then run `python3 -m pip install ipykernel`".to_string(),
    };
    Err(ResolveError::NothingFound { tried, fix })
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

async fn check_explicit_python(
    python: &Path,
    origin: KernelOrigin,
    setup_command: Option<&str>,
) -> Result<(), ResolveError> {
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
        fix: setup_command
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} -m pip install ipykernel", shell_quote(python))),
    })
}

fn search_dirs(data_dirs: &[PathBuf], interpreters: &[(PathBuf, PathBuf)]) -> Vec<PathBuf> {
    let mut dirs = data_dirs.to_vec();
    dirs.extend(
        interpreters
            .iter()
            .map(|(_, prefix)| prefix.join("share").join("jupyter")),
    );
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
