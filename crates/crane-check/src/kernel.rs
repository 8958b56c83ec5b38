//! The checks of the checking kernel (`crane kernel serve`): the engine's pipeline run against
//! the live kernel before each user cell, with a dry run of the budget's length when the rules
//! are silent, a long cell's dry run beside its real run instead where a snapshot undoes it, and
//! the kernel's history kept across checks ([`KernelHistory`]). crane-proxy calls it through
//! its `Checker` trait and decides what to do with the verdict (see the crate's "Where a cell
//! is held").

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crane_analysis::ParsedCell;
use crane_detect::rules::RuleCode;
use crane_detect::suppress::Ignored;
use crane_detect::{Finding, FindingStatus, Verdict};
use crane_kernel::KernelSession;
use crane_llm::{LlmConfig, Secrets};

use crate::{
    gather_analysed, judge, AutoDryRun, Cell, CheckOptions, Detector, DryRunWhen, Judged,
    KernelHistory, Target,
};

/// A cell the checking kernel is about to run, with the settings that apply to it (the
/// `%crane` settings of the kernel).
#[derive(Debug, Clone)]
pub struct CellRequest<'a> {
    pub code: &'a str,
    /// The LLM model string, when one judges cells too; it may hold its endpoint's
    /// credentials, which nothing the check says may repeat.
    pub llm: Option<&'a str>,
    /// Rules whose findings are silenced.
    pub ignore: &'a BTreeSet<RuleCode>,
    pub dry_run: DryRunWhen,
    /// How long a dry run may run the cell in the fork.
    pub dry_run_budget: Duration,
    /// The kernel keeps snapshots from before its state-changing cells: what such a cell
    /// does to the kernel can be taken back, as can a cell that cannot change the kernel's
    /// state (read from the cell's one parse); a crash then costs only the time it ran.
    pub snapshots: bool,
}

/// Something that changed the kernel's state, as the proxy tells the checker.
#[derive(Debug, Clone)]
pub enum KernelEvent {
    /// The kernel ran this cell (it was not aborted), given with its one parse (the check's,
    /// [`Checked::cell`], or the proxy's of code no check read), which the history takes;
    /// `execution_count` is its reply's.
    Ran {
        cell: Arc<ParsedCell>,
        execution_count: Option<usize>,
        /// Its reply was an error.
        raised: bool,
    },
    /// The kernel was returned to the state before the cell numbered `next_count` (a
    /// rollback, an undo, a fresh start): the cells numbered from it on are taken back.
    Returned { next_count: usize },
    /// crane held this cell before it ran (all of it, or what followed the statements that
    /// ran first, which come as a `Ran` of their own): what it would have bound is unbound,
    /// and a later hold on such a name says so.
    Held { cell: Arc<ParsedCell> },
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct Checked {
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
    /// Things the user may want to know that do not change the verdict (a dry run refused).
    pub notes: Vec<String>,
    /// What the cell tried outside the kernel in its dry run that the seal blocked (`open
    /// '/data/out.csv' for writing`): named if the cell raises and is rolled back, since the
    /// real run did it.
    pub outside_effects: Vec<String>,
    pub elapsed: Duration,
    pub timings: Timings,
    /// Dry-run the cell beside its real run, from the snapshot taken before it (a long cell a
    /// snapshot undoes): the real run is not held up, and a crash the dry run sees first stops
    /// it and rolls it back.
    pub beside: bool,
    /// The cell's one parse, which every later reading of it takes (the proxy's snapshot
    /// decision and effects, the history's reading once it ran: [`KernelEvent::Ran`]).
    pub cell: Arc<ParsedCell>,
}

/// Where the time of a check went, phase by phase (`%crane status`, `kernel serve --timings`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Timings {
    /// Reading the cell: what it reads, and where the cells before bound it.
    pub analysis: Duration,
    /// The probe's request, from sending it to the kernel's reply; `None` when it was not sent.
    pub probe: Option<Duration>,
    /// The part of `probe` the probe spent in the kernel, as it reports it.
    pub probe_in_kernel: Option<Duration>,
    /// The rules (and the LLM, when one is asked).
    pub detect: Duration,
    pub dry_run: Option<Duration>,
}

impl Timings {
    /// One line: each phase in milliseconds.
    pub fn describe(&self) -> String {
        let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1000.0);
        let mut parts = vec![format!("analysis {} ms", ms(self.analysis))];
        match (self.probe, self.probe_in_kernel) {
            (Some(probe), Some(inside)) => parts.push(format!(
                "probe {} ms ({} ms of it in the kernel's probe)",
                ms(probe),
                ms(inside)
            )),
            (Some(probe), None) => parts.push(format!("probe {} ms", ms(probe))),
            (None, _) => parts.push("no probe".into()),
        }
        parts.push(format!("detectors {} ms", ms(self.detect)));
        if let Some(dry_run) = self.dry_run {
            parts.push(format!("dry run {} ms", ms(dry_run)));
        }
        parts.join(", ")
    }
}

/// Resolves a model string into the LLM's configuration (with the environment's and the
/// configuration file's settings); `None` when it names no model.
pub type ResolveLlm = Box<dyn Fn(&str) -> Result<Option<LlmConfig>, String>>;

/// The checker of the checking kernel: what the checks of one kernel share.
pub struct KernelChecker {
    resolve_llm: ResolveLlm,
    /// The rules the configuration file silences.
    configured: BTreeSet<RuleCode>,
    /// The cells the kernel ran, each read once (a check adds those run since the last one),
    /// less those a rollback took back.
    history: KernelHistory,
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

impl KernelChecker {
    /// A checker whose replica, when one is needed, runs `python` (the kernel's interpreter).
    pub fn new(
        resolve_llm: ResolveLlm,
        configured: BTreeSet<RuleCode>,
        python: Option<PathBuf>,
    ) -> Self {
        KernelChecker {
            resolve_llm,
            configured,
            history: KernelHistory::default(),
            looping_functions: BTreeSet::new(),
            unread: Vec::new(),
            replica: crane_probe::replica::Replica::new(python),
            to_import: Vec::new(),
        }
    }

    /// Ready what every check needs once the kernel is up: crane's module in the kernel, the
    /// signature snapshot the rules read on first use.
    pub async fn prepare(&mut self, session: &mut KernelSession) -> Result<(), String> {
        // The signature snapshot is read on a rule's first use: read it meanwhile.
        let snapshot = tokio::task::spawn_blocking(|| {
            crane_detect::snapshot::snapshot();
        });
        let injected = crane_probe::inject(session).await;
        let _ = snapshot.await;
        injected.map_err(|error| error.to_string())
    }

    /// What happened to the kernel's state since the last check, read when the next begins.
    pub fn executed(&mut self, events: Vec<KernelEvent>) {
        self.unread.extend(events);
    }

    /// What the cells the kernel ran say of `name`.
    pub fn prior(&mut self, name: &str) -> crane_analysis::Prior {
        self.read_unread();
        self.history.prior(name)
    }

    /// Lines for `%crane status` about the replica.
    pub fn status(&mut self) -> Vec<String> {
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

    /// Checks `request`'s cell against the kernel's current state; the error is why the check
    /// could not be made. Nothing it says holds the LLM's credentials.
    pub async fn check(
        &mut self,
        session: &mut KernelSession,
        request: &CellRequest<'_>,
    ) -> Result<Checked, String> {
        // Whatever the check says reaches the notebook or the kernel's log: nothing of the
        // LLM's credentials may be in it.
        let mut secrets = Secrets::default();
        if let Some(model) = request.llm {
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

    /// Take in what the kernel ran (and the rollbacks) since the last check, on one
    /// deep-stack thread.
    fn read_unread(&mut self) {
        let unread = std::mem::take(&mut self.unread);
        if unread.is_empty() {
            return;
        }
        let history = &mut self.history;
        let looping = &mut self.looping_functions;
        let to_import = &mut self.to_import;
        crane_analysis::bounds::with_deep_stack(|| {
            for event in unread {
                // Each cell the kernel ran comes with its one parse: what it imports, the
                // functions it defines with a loop, and the history's reading of it take it.
                if let KernelEvent::Ran { cell, .. } = &event {
                    to_import.extend(crane_probe::replica::imported_modules_parsed(cell));
                    looping.extend(crane_probe::abridge::looping_functions_parsed(cell));
                }
                history.apply(event);
            }
        });
    }

    /// The check, adding the LLM configuration's secrets to `secrets` once it is resolved.
    async fn check_scrubbed(
        &mut self,
        session: &mut KernelSession,
        request: &CellRequest<'_>,
        secrets: &mut Secrets,
    ) -> Result<Checked, String> {
        let started = Instant::now();
        let target = Target::code(request.code.to_owned());
        // The history grows by the cells run since the last check (a restart is a new proxy
        // and checker). One deep-stack thread reads the new cells; the target is parsed once,
        // and every reading of it below (its analysis, imports, length, the dry run's) takes
        // that parse.
        let reading = Instant::now();
        self.read_unread();
        let (parsed, analysis) = crane_analysis::parse_and_analyze(request.code);
        let read = reading.elapsed();
        // Where the earlier cells bound each name is for the LLM's prompt only (the rules read
        // the cells themselves): without an LLM, the facts do not say it.
        let no_cells = crane_detect::ExecutedCells::default();
        let origin_cells = match request.llm {
            Some(_) => self.history.executed(),
            None => &no_cells,
        };
        let prior_indices: Vec<usize> = (0..origin_cells.len()).collect();
        let gathered = gather_analysed(
            session,
            parsed,
            analysis,
            origin_cells,
            &prior_indices,
            false,
            None,
        )
        .await
        .map_err(|error| error.message())?;
        let ignored = Ignored {
            flag: request.ignore.clone(),
            config: self.configured.clone(),
        };
        let mut notes = Vec::new();
        // What the kernel's cells imported since the last check: a replica that runs imports
        // it in its own process meanwhile (one that does not yet imports it when it starts).
        let mut to_import = std::mem::take(&mut self.to_import);
        // The cell's own imports too: the replica imports while the kernel runs the cell.
        to_import.extend(crane_probe::replica::imported_modules_parsed(
            &gathered.target,
        ));
        if let Err(error) = self.replica.warm(&to_import).await {
            notes.push(format!(
                "the replica could not import what the kernel imported: {error}"
            ));
        }
        let mut outside_effects = Vec::new();
        let llm = match request.llm {
            Some(model) => (self.resolve_llm)(model)?,
            None => None,
        };
        if let Some(config) = &llm {
            secrets.extend(&Secrets::of(config));
        }
        // The rules, and the LLM when one is set; the dry run is this checker's own, below.
        let mut judging = CheckOptions {
            detector: Detector::Auto,
            llm,
            prompt: None,
            redact: None,
            show_prompt: false,
            dry_run: DryRunWhen::Off,
            allow_side_effects: false,
        };
        let cell = Cell {
            target: &target,
            prior: self.history.executed(),
            gathered: &gathered,
            ignored: &ignored,
        };
        let judged = match judge(session, &judging, cell, AutoDryRun::Target, None).await {
            Err(error) if judging.llm.is_some() => {
                notes.push(format!(
                    "the LLM could not judge the cell: {}",
                    error.message()
                ));
                judging.llm = None;
                judge(session, &judging, cell, AutoDryRun::Target, None).await
            }
            judged => judged,
        };
        let mut detection = match judged.map_err(|error| error.message())? {
            Judged::Detection(detection) => *detection,
            Judged::PromptShown(_) => return Err("no prompt is shown here".into()),
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
        let undoable = request.snapshots
            || crane_probe::snapshot::cannot_change_state_parsed(&gathered.target);
        let long =
            crane_probe::abridge::looks_long_parsed(&gathered.target, &self.looping_functions);
        let worth_a_dry_run = match request.dry_run {
            DryRunWhen::Off => false,
            DryRunWhen::On => true,
            DryRunWhen::Auto => !undoable || long,
        };
        // A run in the replica costs the cell's own run again plus rebuilding what it reads (a
        // Keras model: seconds), where a fork costs milliseconds: under `auto` only a cell that
        // looks long, whose late crash would cost minutes, is worth it; not a fit bounded
        // within the dry-run budget.
        let brief_training = (long && request.dry_run == DryRunWhen::Auto)
            .then(|| {
                crane_probe::training_time::training_time_bound(
                    &gathered.target,
                    &self.looping_functions,
                    &gathered.runtime,
                )
            })
            .flatten()
            .filter(|bound| *bound <= request.dry_run_budget);
        let worth_the_replica = match request.dry_run {
            DryRunWhen::Off => false,
            DryRunWhen::On => true,
            DryRunWhen::Auto => long && brief_training.is_none(),
        };
        // A long cell a snapshot undoes runs for real at once, its abridged dry run beside it
        // from the snapshot taken before it: a fast cell is not run twice in a row, and a late
        // crash the abridged run reaches first stops the real run and rolls it back. Only
        // where the kernel can be forked and sealed (no snapshot otherwise); else as below.
        let mut beside = false;
        if !proven && long && request.dry_run == DryRunWhen::Auto && request.snapshots {
            match crane_probe::dry_run::fork_refusals(session, request.code).await {
                Ok(refusals) => beside = refusals.is_empty(),
                Err(error) => notes.push(format!("the dry run failed: {error}")),
            }
        }
        if worth_a_dry_run && !proven && !beside {
            let dry_run_started = Instant::now();
            // A cell still running at the budget gets an abridged run of its own, short
            // enough for a user waiting on the cell.
            let options = crane_probe::dry_run::DryRunOptions {
                timeout: request.dry_run_budget,
                abridge: Some(crane_probe::dry_run::AbridgeOptions {
                    after: request.dry_run_budget,
                    timeout: KERNEL_ABRIDGED_TIMEOUT,
                }),
                ..Default::default()
            };
            // Where the kernel cannot be forked, the cell runs in the replica.
            match crane_probe::ahead::execute_ahead_analysed(
                session,
                worth_the_replica.then_some(&mut self.replica),
                request.code,
                &gathered.analysis,
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
        // A NameError says where its name was last bound, or that a rollback took it; a
        // missing attribute where its object was bound, and a cell taken back that used it.
        self.history.explain_names(&mut detection.findings);
        let verdict = crane_detect::combine(&detection.findings);
        Ok(Checked {
            findings: detection.findings,
            verdict,
            notes,
            outside_effects,
            elapsed: started.elapsed(),
            timings,
            beside,
            cell: Arc::new(gathered.target),
        })
    }
}

/// The abridged run's own budget in the crane kernel, after the dry run's budget ran out.
const KERNEL_ABRIDGED_TIMEOUT: Duration = Duration::from_secs(8);
