//! `crane kernel ...`: crane as a Jupyter kernel. `serve` runs the proxy (crane-proxy) with the
//! check pipeline of `check` as its checker; `install`, `list` and `uninstall` manage the
//! kernelspec that lets frontends start it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use crane_detect::FindingStatus;
use crane_kernel::{KernelLaunch, KernelOrigin, KernelSession};
use crane_llm::Secrets;
use crane_proxy::{
    CheckRequest, Checked, Checker, DryRunMode, KernelEvent, Policy, ServeEnd, Settings, Timings,
};
use serde_json::{json, Value};

use crate::cli::{
    DetectArgs, DetectorChoice, DryRunChoice, InstallArgs, KernelArgs, KernelCommand, PolicyChoice,
    ProxyArgs, ServeArgs, UninstallArgs,
};
use crate::commands::{kernel, pipeline};
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
    let checker = PipelineChecker {
        config_file,
        configured: configured.config,
        history: crane_proxy::KernelHistory::default(),
        looping_functions: BTreeSet::new(),
        unread: Vec::new(),
        replica: crane_probe::replica::Replica::new(launch.interpreter().map(Path::to_path_buf)),
        to_import: Vec::new(),
    };
    let options = crane_proxy::ServeOptions {
        connection_file: args.connection_file,
        launch,
        working_dir: None,
        env: Vec::new(),
        settings,
        timings: args.timings,
    };
    match crane_proxy::serve(options, checker).await {
        Ok(ServeEnd::Shutdown | ServeEnd::Terminated) => Ok(Outcome::Success),
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

/// The checks of `crane check`, with a dry run of the budget's length when the rules are
/// silent, run against the proxy's kernel.
struct PipelineChecker {
    config_file: crate::config::ConfigFile,
    /// The rules the configuration file silences.
    configured: std::collections::BTreeSet<crane_detect::rules::RuleCode>,
    /// The cells the kernel ran, each read once (a check adds those run since the last one),
    /// less those a rollback took back.
    history: crane_proxy::KernelHistory,
    /// The functions and methods the executed cells defined with a loop in them: a cell that
    /// calls one looks long ([`crane_probe::abridge::looks_long`]).
    looping_functions: BTreeSet<String>,
    /// The cells run (and the rollbacks) since the last check, read when the next one begins.
    unread: Vec<KernelEvent>,
    /// Where cells run ahead when the kernel cannot be forked; it imports what the kernel's
    /// cells import (`to_import`, handed to it when the next check begins) as they run.
    replica: crane_probe::replica::Replica,
    to_import: Vec<String>,
}

impl Checker for PipelineChecker {
    async fn prepare(&mut self, session: &mut KernelSession) -> Result<(), String> {
        // The signature snapshot is read on a rule's first use: read it meanwhile.
        let snapshot = tokio::task::spawn_blocking(|| {
            crane_detect::snapshot::snapshot();
        });
        let injected = crane_probe::inject(session).await;
        let _ = snapshot.await;
        injected.map_err(|error| error.to_string())
    }

    fn executed(&mut self, events: Vec<KernelEvent>) {
        for event in &events {
            if let KernelEvent::Ran { code, .. } = event {
                self.to_import
                    .extend(crane_probe::replica::imported_modules(code));
            }
        }
        self.unread.extend(events);
    }

    fn prior(&mut self, name: &str) -> crane_analysis::Prior {
        self.read_unread();
        self.history.prior(name)
    }

    fn status(&mut self) -> Vec<String> {
        use crane_probe::replica::ReplicaState;
        vec![match self.replica.state() {
            ReplicaState::Idle => "the replica (where cells run ahead when the kernel cannot be forked) has not started: it starts at the first check that needs it (a long-looking cell in a kernel that cannot be forked)".to_owned(),
            ReplicaState::Ready {
                pid,
                resident_bytes,
                libraries,
            } => format!(
                "the replica (where cells run ahead when the kernel cannot be forked) is ready: process {pid}, {:.0} MB resident, {libraries} libraries asked of it",
                resident_bytes as f64 / 1e6
            ),
            ReplicaState::Failed(why) => format!(
                "the replica (where cells run ahead when the kernel cannot be forked) is down, started again at the next check that needs it: {why}"
            ),
        }]
    }

    async fn check(
        &mut self,
        session: &mut KernelSession,
        request: &CheckRequest,
    ) -> Result<Checked, String> {
        // Whatever the check says reaches the notebook or the kernel's log: nothing of the
        // LLM's credentials may be in it.
        let mut secrets = Secrets::default();
        if let Some(model) = &request.settings.llm {
            secrets.add_url(model);
        }
        match self.check_scrubbed(session, request, &mut secrets).await {
            Ok(mut checked) => {
                for note in checked
                    .notes
                    .iter_mut()
                    .chain(checked.outside_effects.iter_mut())
                {
                    *note = secrets.scrub(note);
                }
                Ok(checked)
            }
            Err(reason) => Err(secrets.scrub(&reason)),
        }
    }
}

impl PipelineChecker {
    /// Take in what the kernel ran (and the rollbacks) since the last check, on one
    /// deep-stack thread.
    fn read_unread(&mut self) {
        let unread = std::mem::take(&mut self.unread);
        if unread.is_empty() {
            return;
        }
        let history = &mut self.history;
        let looping = &mut self.looping_functions;
        crane_analysis::bounds::with_deep_stack(|| {
            for event in unread {
                if let KernelEvent::Ran { code, .. } = &event {
                    looping.extend(crane_probe::abridge::looping_functions(code));
                }
                history.apply(event);
            }
        });
    }

    /// The check, adding the LLM configuration's secrets to `secrets` once it is resolved.
    async fn check_scrubbed(
        &mut self,
        session: &mut KernelSession,
        request: &CheckRequest,
        secrets: &mut Secrets,
    ) -> Result<Checked, String> {
        let started = Instant::now();
        let target = pipeline::Target {
            index: None,
            id: None,
            position: None,
            execution_count: None,
            source: request.code.clone(),
            source_line: None,
        };
        // The history grows by the cells run since the last check (a restart is a new proxy
        // and checker). One deep-stack thread reads the new cells and the target.
        let reading = Instant::now();
        self.read_unread();
        let analysis = crane_analysis::analyze_cell(&request.code);
        let read = reading.elapsed();
        // Where the earlier cells bound each name is for the LLM's prompt only (the rules read
        // the cells themselves): without an LLM, the facts do not say it.
        let no_cells = crane_detect::ExecutedCells::default();
        let origin_cells = match request.settings.llm {
            Some(_) => self.history.executed(),
            None => &no_cells,
        };
        let prior_indices: Vec<usize> = (0..origin_cells.len()).collect();
        let gathered =
            pipeline::gather_analysed(session, analysis, origin_cells, &prior_indices, false, None)
                .await
                .map_err(|failure| failure.message())?;
        let mut args = DetectArgs {
            detector: DetectorChoice::Auto,
            llm: request.settings.llm.clone(),
            config: None,
            runs: None,
            no_cache: false,
            redact: None,
            show_prompt: false,
            dry: crate::cli::DryRunArgs {
                dry_run: crate::cli::DryRunWhen::Off,
                allow_side_effects: false,
            },
        };
        let ignored = crane_detect::suppress::Ignored {
            flag: request.settings.ignore.clone(),
            config: self.configured.clone(),
        };
        let mut notes = Vec::new();
        // What the kernel's cells imported since the last check: a replica that runs imports
        // it in its own process meanwhile (one that does not yet imports it when it starts).
        let mut to_import = std::mem::take(&mut self.to_import);
        // The cell's own imports too: the replica imports while the kernel runs the cell.
        to_import.extend(crane_probe::replica::imported_modules(&request.code));
        if let Err(error) = self.replica.warm(&to_import).await {
            notes.push(format!(
                "the replica could not import what the kernel imported: {error}"
            ));
        }
        let mut outside_effects = Vec::new();
        let llm = match &args.llm {
            Some(_) => pipeline::llm_config(&args, &self.config_file).map_err(|f| f.message())?,
            None => None,
        };
        if let Some(config) = &llm {
            secrets.extend(&Secrets::of(config));
        }
        let judged = match pipeline::judge(
            session,
            &args,
            llm.as_ref(),
            &target,
            self.history.executed(),
            &gathered,
            &ignored,
            pipeline::AutoDryRun::Target,
            None,
        )
        .await
        {
            Err(failure) if llm.is_some() => {
                notes.push(format!(
                    "the LLM could not judge the cell: {}",
                    failure.message()
                ));
                args.llm = None;
                pipeline::judge(
                    session,
                    &args,
                    None,
                    &target,
                    self.history.executed(),
                    &gathered,
                    &ignored,
                    pipeline::AutoDryRun::Target,
                    None,
                )
                .await
            }
            judged => judged,
        };
        let mut detection = match judged.map_err(|failure| failure.message())? {
            pipeline::Judged::Detection(detection) => *detection,
            pipeline::Judged::PromptShown(_) => return Err("no prompt is shown here".into()),
        };
        notes.append(&mut detection.directive_warnings);
        notes.append(&mut detection.warnings);
        let proven = detection
            .findings
            .iter()
            .any(|finding| finding.crash && finding.status == FindingStatus::Proven);
        let probe = gathered.probe;
        let mut timings = Timings {
            analysis: read + gathered.extract.saturating_sub(probe.unwrap_or_default()),
            probe,
            probe_in_kernel: gathered
                .runtime
                .cost
                .filter(|_| probe.is_some())
                .map(|cost| Duration::from_secs_f64(cost.ms.max(0.0) / 1000.0)),
            detect: detection.detect,
            dry_run: None,
        };
        // A cell whose effects on the kernel can be taken back only gains from a dry run
        // what a snapshot cannot give back: the minutes of a long cell that crashes late.
        let long = crane_probe::abridge::looks_long(&request.code, &self.looping_functions);
        let worth_a_dry_run = match request.settings.dry_run {
            DryRunMode::Off => false,
            DryRunMode::On => true,
            DryRunMode::Auto => !request.undoable || long,
        };
        // A run in the replica costs the cell's own run again plus rebuilding what it reads (a
        // Keras model: seconds), where a fork costs milliseconds: under `auto` only a cell that
        // looks long, whose late crash would cost minutes, is worth it; not a fit bounded
        // within the dry-run budget.
        let brief_training = (long && request.settings.dry_run == DryRunMode::Auto)
            .then(|| {
                crane_probe::training_time::training_time_bound(
                    &request.code,
                    &self.looping_functions,
                    &gathered.runtime,
                )
            })
            .flatten()
            .filter(|bound| *bound <= request.settings.dry_run_budget);
        let worth_the_replica = match request.settings.dry_run {
            DryRunMode::Off => false,
            DryRunMode::On => true,
            DryRunMode::Auto => long && brief_training.is_none(),
        };
        // A long cell a snapshot undoes runs for real at once, its abridged dry run beside it
        // from the snapshot taken before it: a fast cell is not run twice in a row, and a late
        // crash the abridged run reaches first stops the real run and rolls it back. Only
        // where the kernel can be forked and sealed (no snapshot otherwise); else as below.
        let mut beside = false;
        if !proven
            && long
            && request.settings.dry_run == DryRunMode::Auto
            && request.settings.snapshot_keep > 0
        {
            match crane_probe::dry_run::fork_refusals(session, &request.code).await {
                Ok(refusals) => beside = refusals.is_empty(),
                Err(error) => notes.push(format!("the dry run failed: {error}")),
            }
        }
        if worth_a_dry_run && !proven && !beside {
            let dry_run_started = Instant::now();
            // A cell still running at the budget gets an abridged run of its own, short
            // enough for a user waiting on the cell.
            let options = crane_probe::dry_run::DryRunOptions {
                timeout: request.settings.dry_run_budget,
                abridge: Some(crane_probe::dry_run::AbridgeOptions {
                    after: request.settings.dry_run_budget,
                    timeout: KERNEL_ABRIDGED_TIMEOUT,
                }),
                ..Default::default()
            };
            // Where the kernel cannot be forked, the cell runs in the replica.
            match crane_probe::replica::execute_ahead(
                session,
                worth_the_replica.then_some(&mut self.replica),
                &request.code,
                &options,
            )
            .await
            {
                Ok(outcome) => {
                    if let crane_probe::dry_run::DryRunOutcome::Ran(report) = &outcome {
                        if let crane_probe::dry_run::DryRunResult::Blocked { attempts, .. } =
                            &report.result
                        {
                            outside_effects.extend(attempts.iter().map(
                                |attempt| match attempt.line {
                                    Some(line) => format!(
                                        "its dry run tried to {} (line {line})",
                                        attempt.what
                                    ),
                                    None => format!("its dry run tried to {}", attempt.what),
                                },
                            ));
                        }
                    }
                    let finding = crane_detect::dry_run_finding(&outcome);
                    if let (Some(bound), crane_probe::dry_run::DryRunOutcome::Unsupported { .. }) =
                        (brief_training, &outcome)
                    {
                        notes.push(format!(
                            "its training takes at most {:.1} s by the model's and the data's sizes: not run ahead in the replica",
                            bound.as_secs_f64()
                        ));
                    }
                    if outcome.reads_closed_stdin() {
                        notes.push(
                            "the cell reads input, which only the frontend can give: not dry-run"
                                .into(),
                        );
                    } else if finding.status.is_undecided() {
                        notes.push(finding.diagnosis);
                    } else {
                        detection.findings.push(finding);
                    }
                }
                Err(error) => notes.push(format!("the dry run failed: {error}")),
            }
            timings.dry_run = Some(dry_run_started.elapsed());
        }
        // A NameError says where its name was last bound, or that a rollback took it.
        self.history.explain_name_errors(&mut detection.findings);
        let verdict = crane_detect::combine(&detection.findings);
        Ok(Checked {
            findings: detection.findings,
            verdict,
            notes,
            outside_effects,
            elapsed: started.elapsed(),
            timings,
            beside,
        })
    }
}

/// The abridged run's own budget in the crane kernel, after the dry run's budget ran out.
const KERNEL_ABRIDGED_TIMEOUT: Duration = Duration::from_secs(8);

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
