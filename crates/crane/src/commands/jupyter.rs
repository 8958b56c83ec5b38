//! `crane kernel ...`: crane as a Jupyter kernel. `serve` runs the proxy (crane-proxy) with the
//! check engine's kernel checker (crane-check's `KernelChecker`), resolving its LLM as `check`
//! does; `install`, `list` and `uninstall` manage the kernelspec that lets frontends start it.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use crane_check::KernelChecker;
use crane_kernel::{KernelLaunch, KernelOrigin};
use crane_llm::LlmSettings;
use crane_proxy::{DryRunMode, Policy, ServeEnd, Settings};
use serde_json::{json, Value};

use crate::cli::{
    DryRunChoice, InstallArgs, KernelArgs, KernelCommand, PolicyChoice, ProxyArgs, ServeArgs,
    UninstallArgs,
};
use crate::commands::kernel;
use crate::exit::{Failure, Outcome};
use crate::ui::{outln, Ui};

pub async fn run(command: KernelCommand, ui: &Ui) -> Result<Outcome, Failure> {
    match command {
        KernelCommand::Serve(args) => serve(args).await,
        KernelCommand::Install(args) => install(args, ui),
        KernelCommand::List => list(),
        KernelCommand::Uninstall(args) => uninstall(args, ui),
    }
}

fn settings(args: &ProxyArgs) -> Result<Settings, Failure> {
    let seconds = |value: f64, flag: &str| {
        crane_proxy::settings::parse_seconds(&value.to_string())
            .map_err(|reason| Failure::bad_input(anyhow!("{flag}: {reason}")))
    };
    Ok(Settings {
        policy: match args.policy {
            PolicyChoice::Stop => Policy::Stop,
            PolicyChoice::Warn => Policy::Warn,
            PolicyChoice::Off => Policy::Off,
        },
        dry_run: match args.dry_run {
            DryRunChoice::Auto => DryRunMode::Auto,
            DryRunChoice::On => DryRunMode::On,
            DryRunChoice::Off => DryRunMode::Off,
        },
        dry_run_budget: seconds(args.dry_run_budget, "--dry-run-budget")?,
        check_timeout: match seconds(args.check_timeout, "--check-timeout")? {
            timeout if timeout <= crane_proxy::settings::MAX_CHECK_TIMEOUT => timeout,
            _ => {
                return Err(Failure::bad_input(anyhow!(
                    "--check-timeout: at most {} s, so that a check is always abandoned before the probe's own timeout would interrupt the kernel",
                    crane_proxy::settings::MAX_CHECK_TIMEOUT.as_secs()
                )))
            }
        },
        llm: args.llm.clone(),
        ignore: args.ignore.iter().copied().collect(),
        ..Settings::default()
    })
}

async fn serve(args: ServeArgs) -> Result<Outcome, Failure> {
    let mut settings = settings(&args.proxy)?;
    if let Some(file) = &args.llm_credentials {
        let userinfo = read_credentials(file)?;
        settings.llm = settings
            .llm
            .map(|model| crane_llm::with_url_credentials(&model, &userinfo));
    }
    let launch = match &args.python {
        Some(python) => KernelLaunch::python(python, KernelOrigin::PythonFlag),
        None => {
            kernel::resolve_launch(
                &KernelArgs {
                    python: None,
                    kernel: None,
                    timeout: 600.0,
                },
                None,
            )
            .await?
        }
    };
    if launch.argv.iter().any(|arg| arg == "serve") {
        return Err(Failure::bad_input(anyhow!(
            "the kernel behind crane would be crane itself ({}); pass --python",
            launch.argv.join(" ")
        )));
    }
    // Jupyter starts a kernel in the notebook's folder: its configuration is found from there.
    let start_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let no_flags = crate::cli::SuppressArgs {
        ignore: Vec::new(),
        config_file: None,
        isolated: false,
    };
    let (configured, config_file) = crate::config::ignored(&no_flags, &start_dir)?;
    // The model of `%crane llm` or `--llm`, with the environment's and the configuration
    // file's settings, read again at each check that asks one.
    let resolve_llm = move |model: &str| {
        let flags = LlmSettings {
            model: Some(model.to_owned()),
            ..LlmSettings::default()
        };
        crate::settings::llm_config(flags, &config_file).map_err(|failure| failure.message())
    };
    let checker = KernelChecker::new(
        Box::new(resolve_llm),
        configured.config,
        launch.interpreter().map(Path::to_path_buf),
    );
    let options = crane_proxy::ServeOptions {
        connection_file: args.connection_file,
        launch,
        working_dir: None,
        env: Vec::new(),
        settings,
        timings: args.timings,
        // Jupyter's kernel managers name themselves to the kernels they start.
        die_with_parent: std::env::var_os("JPY_PARENT_PID").is_some(),
    };
    match crane_proxy::serve(options, checker).await {
        Ok(ServeEnd::Shutdown | ServeEnd::Terminated | ServeEnd::ParentGone) => {
            Ok(Outcome::Success)
        }
        Ok(ServeEnd::KernelDied { death, stderr_tail }) => Err(Failure::kernel(anyhow!(
            "the kernel died and no fresh kernel started: {death}{}",
            if stderr_tail.trim().is_empty() {
                String::new()
            } else {
                format!("; its last words:\n{}", stderr_tail.trim_end())
            }
        ))),
        Err(error @ crane_proxy::ProxyError::ConnectionFile(_)) => Err(Failure::bad_input(error)),
        Err(error) => Err(Failure::kernel(error)),
    }
}

/// The file a kernelspec keeps its LLM endpoint's credentials in, beside its kernel.json.
const CREDENTIALS_FILE: &str = "llm-credentials";

/// The `user:password` of a credentials file, which must be private.
fn read_credentials(file: &Path) -> Result<String, Failure> {
    let bytes = crane_fs::read_private(file).ok_or_else(|| {
        Failure::bad_input(anyhow!(
            "--llm-credentials {}: not a private file of yours (it must exist, be owned by you and readable by you alone: chmod 600)",
            file.display()
        ))
    })?;
    Ok(String::from_utf8_lossy(&bytes).trim().to_owned())
}

// Kernelspecs.

/// The interpreter of the active environment: `$VIRTUAL_ENV`, then `$CONDA_PREFIX`, then
/// `python3` on PATH.
fn default_python() -> Result<PathBuf, Failure> {
    for variable in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(variable).filter(|value| !value.is_empty()) {
            let python = Path::new(&prefix).join("bin/python");
            if python.is_file() {
                return Ok(python);
            }
        }
    }
    which::which("python3").map_err(|_| {
        Failure::bad_input(anyhow!(
            "no Python found: activate the environment of your notebooks, or pass --python PATH"
        ))
    })
}

/// `sys.prefix` of `python`, which must be able to run ipykernel.
fn python_prefix(python: &Path) -> Result<PathBuf, Failure> {
    let output = std::process::Command::new(python)
        .args(["-c", "import sys, ipykernel; print(sys.prefix)"])
        .output()
        .with_context(|| format!("cannot run {}", python.display()))
        .map_err(Failure::bad_input)?;
    if !output.status.success() {
        return Err(Failure::bad_input(anyhow!(
            "{} cannot import ipykernel; install it with `{} -m pip install ipykernel`",
            python.display(),
            python.display()
        )));
    }
    Ok(PathBuf::from(
        String::from_utf8_lossy(&output.stdout).trim().to_owned(),
    ))
}

fn user_data_dir() -> Result<PathBuf, Failure> {
    std::env::var_os("JUPYTER_DATA_DIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::data_dir().map(|dir| dir.join("jupyter")))
        .ok_or_else(|| Failure::bad_input(anyhow!("no user data directory; pass --prefix DIR")))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Whether a kernel.json runs crane's proxy.
fn is_crane_spec(spec: &Value) -> bool {
    let argv: Vec<&str> = spec
        .get("argv")
        .and_then(Value::as_array)
        .map(|argv| argv.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    argv.windows(2).any(|pair| pair == ["kernel", "serve"])
}

fn proxy_flags(args: &ProxyArgs) -> Vec<String> {
    let mut flags = Vec::new();
    let mut push = |flag: &str, value: String, default: &str| {
        if value != default {
            flags.extend([flag.to_owned(), value]);
        }
    };
    push(
        "--policy",
        format!("{:?}", args.policy).to_lowercase(),
        "stop",
    );
    push(
        "--dry-run",
        format!("{:?}", args.dry_run).to_lowercase(),
        "auto",
    );
    push("--dry-run-budget", args.dry_run_budget.to_string(), "2");
    push("--check-timeout", args.check_timeout.to_string(), "10");
    if let Some(llm) = &args.llm {
        flags.extend(["--llm".to_owned(), llm.clone()]);
    }
    if !args.ignore.is_empty() {
        let codes: Vec<&str> = args.ignore.iter().map(|rule| rule.code()).collect();
        flags.extend(["--ignore".to_owned(), codes.join(",")]);
    }
    flags
}

fn install(args: InstallArgs, ui: &Ui) -> Result<Outcome, Failure> {
    if !valid_name(&args.name) {
        return Err(Failure::bad_input(anyhow!(
            "kernelspec name `{}`: use letters, digits, `.`, `_` and `-` only",
            args.name
        )));
    }
    settings(&args.proxy)?;
    let python = match &args.python {
        Some(python) => python.clone(),
        None => default_python()?,
    };
    let python = std::path::absolute(&python)
        .with_context(|| format!("cannot resolve {}", python.display()))
        .map_err(Failure::bad_input)?;
    let prefix = python_prefix(&python)?;
    let data_dir = match (&args.prefix, args.sys_prefix) {
        (Some(dir), _) => dir.join("share/jupyter"),
        (None, true) => prefix.join("share/jupyter"),
        (None, false) => user_data_dir()?,
    };
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context("cannot tell where the crane executable is")
        .map_err(Failure::kernel)?;
    let mut argv = vec![
        exe.to_string_lossy().into_owned(),
        "kernel".into(),
        "serve".into(),
        "-f".into(),
        "{connection_file}".into(),
        "--python".into(),
        python.to_string_lossy().into_owned(),
    ];
    let dir = data_dir.join("kernels").join(&args.name);
    // The endpoint's credentials go to a private file beside kernel.json, never into it.
    let credentials = args
        .proxy
        .llm
        .as_deref()
        .and_then(crane_llm::url_credentials);
    let mut proxy = args.proxy.clone();
    proxy.llm = proxy.llm.as_deref().map(crane_llm::without_url_credentials);
    argv.extend(proxy_flags(&proxy));
    if args.timings {
        argv.push("--timings".into());
    }
    let credentials_file = dir.join(CREDENTIALS_FILE);
    if credentials.is_some() {
        argv.extend([
            "--llm-credentials".into(),
            credentials_file.to_string_lossy().into_owned(),
        ]);
    }
    let spec = json!({
        "argv": argv,
        "display_name": args.display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": { "debugger": true, "crane": { "version": env!("CARGO_PKG_VERSION") } },
    });
    std::fs::create_dir_all(&dir)
        .and_then(|()| match &credentials {
            Some(userinfo) => crane_fs::write_private(
                &credentials_file,
                userinfo.trim_end_matches('@').as_bytes(),
            ),
            None => match std::fs::remove_file(&credentials_file) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => Err(error),
                _ => Ok(()),
            },
        })
        .and_then(|()| {
            let text = serde_json::to_string_pretty(&spec).map_err(std::io::Error::other)?;
            std::fs::write(dir.join("kernel.json"), text + "\n")
        })
        .with_context(|| format!("cannot write the kernelspec in {}", dir.display()))
        .map_err(Failure::bad_input)?;
    outln!("{}", dir.display());
    if credentials.is_some() {
        ui.note(&format!(
            "the LLM endpoint's credentials are in {} (readable by you alone), not in kernel.json",
            credentials_file.display()
        ));
    }
    ui.note(&format!(
        "installed kernelspec {} (\"{}\"), real kernel {}",
        args.name,
        args.display_name,
        python.display()
    ));
    Ok(Outcome::Success)
}

/// The Jupyter data directories, with the active environment's and crane's own prefix (a
/// crane installed with pip lives in `<prefix>/bin`), as `jupyter kernelspec list` reads them.
fn data_dirs(extra_prefix: Option<&Path>) -> Vec<PathBuf> {
    let mut dirs = crane_kernel::jupyter_data_dirs();
    let mut prefixes: Vec<PathBuf> = extra_prefix.into_iter().map(Path::to_path_buf).collect();
    for variable in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(variable).filter(|value| !value.is_empty()) {
            prefixes.push(PathBuf::from(prefix));
        }
    }
    if let Some(prefix) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent()?.parent().map(Path::to_path_buf))
    {
        prefixes.push(prefix);
    }
    for prefix in prefixes {
        let dir = prefix.join("share/jupyter");
        if !dirs.contains(&dir) {
            dirs.insert(dirs.len().saturating_sub(2), dir);
        }
    }
    dirs
}

fn read_spec(dir: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join("kernel.json")).ok()?;
    serde_json::from_str(&text).ok()
}

fn list() -> Result<Outcome, Failure> {
    for (name, dir) in crane_kernel::list_kernelspecs(&data_dirs(None)) {
        let spec = read_spec(&dir);
        let crane = spec.as_ref().is_some_and(is_crane_spec);
        let display = spec
            .as_ref()
            .and_then(|spec| spec.get("display_name")?.as_str().map(str::to_owned))
            .unwrap_or_default();
        outln!(
            "{name:<20} {:<6} {display:<24} {}",
            if crane { "crane" } else { "" },
            dir.display()
        );
    }
    Ok(Outcome::Success)
}

fn uninstall(args: UninstallArgs, ui: &Ui) -> Result<Outcome, Failure> {
    let found = crane_kernel::list_kernelspecs(&data_dirs(args.prefix.as_deref()))
        .into_iter()
        .find(|(name, _)| *name == args.name);
    let Some((_, dir)) = found else {
        return Err(Failure::bad_input(anyhow!(
            "no kernelspec named `{}` (see `crane kernel list`)",
            args.name
        )));
    };
    if !read_spec(&dir).as_ref().is_some_and(is_crane_spec) {
        return Err(Failure::bad_input(anyhow!(
            "kernelspec `{}` in {} is not crane's; remove it with `jupyter kernelspec uninstall`",
            args.name,
            dir.display()
        )));
    }
    std::fs::remove_dir_all(&dir)
        .with_context(|| format!("cannot remove {}", dir.display()))
        .map_err(Failure::bad_input)?;
    ui.note(&format!(
        "removed kernelspec {} ({})",
        args.name,
        dir.display()
    ));
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernelspec_names_follow_jupyter() {
        assert!(valid_name("crane-python3"));
        assert!(!valid_name("a b"));
        assert!(!valid_name("../x"));
        assert!(!valid_name(""));
    }

    #[test]
    fn crane_specs_are_told_apart() {
        assert!(is_crane_spec(
            &json!({"argv": ["/x/crane", "kernel", "serve", "-f", "{connection_file}"]})
        ));
        assert!(!is_crane_spec(
            &json!({"argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"]})
        ));
    }

    #[test]
    fn only_changed_settings_reach_the_kernelspec() {
        let defaults = ProxyArgs {
            policy: PolicyChoice::Stop,
            dry_run: DryRunChoice::Auto,
            dry_run_budget: 2.0,
            check_timeout: 10.0,
            llm: None,
            ignore: Vec::new(),
        };
        assert!(proxy_flags(&defaults).is_empty());
        let changed = ProxyArgs {
            policy: PolicyChoice::Warn,
            dry_run_budget: 0.5,
            ignore: vec![
                crane_detect::rules::RuleCode::MissingColumn,
                crane_detect::rules::RuleCode::MissingKey,
            ],
            ..defaults.clone()
        };
        assert_eq!(
            proxy_flags(&changed),
            [
                "--policy",
                "warn",
                "--dry-run-budget",
                "0.5",
                "--ignore",
                "PD001,NB004"
            ]
        );
    }
}
