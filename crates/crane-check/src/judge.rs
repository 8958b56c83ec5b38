//! The judgement of one cell: the rules (their findings silenced as the cell's comments and
//! the options say), the LLM, a dry run in a fork of the kernel or its replica, combined into
//! one verdict by crane-detect's policy.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::anyhow;
use crane_analysis::{AnalysisError, SyntaxError};
use crane_detect::suppress::{Ignored, Silenced};
use crane_detect::{combine, DetectorKind, ExecutedCells, Finding, FindingStatus, Verdict};
use crane_kernel::KernelSession;
use crane_llm::{Client, LlmConfig, PromptInput};
use serde::Serialize;

use crate::{CheckError, CheckOptions, Detector, DryRunWhen, Gathered, Target};

/// How an LLM was used for a check.
#[derive(Debug, Clone, Serialize)]
pub struct LlmUse {
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub tokens_estimated: bool,
    pub latency_ms: u64,
    pub cost_usd: Option<f64>,
    pub cached: bool,
}

pub struct Detection {
    pub findings: Vec<Finding>,
    /// Rule findings silenced by the cell's comments or from outside it ([`Ignored`]): they
    /// do not count towards the verdict.
    pub silenced: Vec<Silenced>,
    /// Problems with the cell's `# crane:` comments, naming the cell and line.
    pub directive_warnings: Vec<String>,
    /// Where the rules' interpreter gave up on the cell, by reason (empty when the rules did
    /// not run).
    pub gave_up: BTreeMap<&'static str, usize>,
    pub verdict: Verdict,
    pub llm: Option<LlmUse>,
    /// Problems that did not stop the check (e.g. an LLM answer that could not be cached).
    pub warnings: Vec<String>,
    /// Detectors that failed; the verdict comes from the others.
    pub failures: Vec<DetectorFailure>,
    pub detect: Duration,
}

/// A detector that could not judge the cell (an LLM unreachable or answering unreadably after
/// retries, a dry run the kernel could not complete).
#[derive(Debug, Clone, Serialize)]
pub struct DetectorFailure {
    pub detector: DetectorKind,
    pub error: String,
}

/// A judgement, or the prompt [`CheckOptions::show_prompt`] stops at.
pub enum Judged {
    Detection(Box<Detection>),
    PromptShown(String),
}

/// Which cells [`DryRunWhen::Auto`] dry-runs, by the cost model of the command (docs/cli.md, "Dry
/// runs: auto, on, off"); never a cell whose crash a rule proved, nor an unsealed fork.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AutoDryRun {
    /// `check` of one target: its dry run costs at most the budget (and an abridged run), once.
    Target,
    /// A walk that executes every cell (`run`, `check --every-unexecuted`), where a dry run of
    /// every cell doubles the walk: only a cell that looks long
    /// ([`crane_probe::abridge::looks_long`], as the caller read it).
    IfLong(bool),
}

/// The cell to judge: the target, the cells that ran before it, its facts, and the rules
/// silenced from outside the cell.
#[derive(Clone, Copy)]
pub struct Cell<'a> {
    pub target: &'a Target,
    pub prior: &'a ExecutedCells,
    pub gathered: &'a Gathered,
    pub ignored: &'a Ignored,
}

/// Runs the chosen detectors and combines their findings; rule findings that `cell.ignored`
/// or the cell's `# crane:` comments silence are set apart before the verdict. `auto` says
/// which cells [`DryRunWhen::Auto`] dry-runs; where the kernel cannot be forked, a dry run
/// runs in `replica`.
pub async fn judge(
    session: &mut KernelSession,
    options: &CheckOptions,
    cell: Cell<'_>,
    auto: AutoDryRun,
    replica: Option<&mut crane_probe::replica::Replica>,
) -> Result<Judged, CheckError> {
    let Cell {
        target,
        prior,
        gathered,
        ignored,
    } = cell;
    let started = Instant::now();
    let use_rules = options.uses_rules();
    let use_llm = match options.detector {
        Detector::Llm | Detector::Hybrid => {
            if options.llm.is_none() {
                return Err(CheckError::bad_input(anyhow!(
                    "--detector {} needs a model: pass --llm MODEL (e.g. openai:gpt-5), set CRANE_LLM, or add [llm] model to crane.toml",
                    if options.detector == Detector::Llm { "llm" } else { "hybrid" }
                )));
            }
            true
        }
        Detector::Auto => options.llm.is_some(),
        Detector::Rules | Detector::DryRun => false,
    };

    let mut findings = Vec::new();
    let mut warnings = Vec::new();
    let mut failures = Vec::new();
    match &gathered.analysis {
        Err(AnalysisError::Syntax(error)) => findings.push(syntax_error_finding(error)),
        Err(AnalysisError::Unanalysable(reason)) => {
            warnings.push(format!("{reason}: the rules did not judge it"))
        }
        Ok(_) => {}
    }
    let context = crane_detect::CheckContext {
        target: &gathered.target,
        analysis: gathered.analysis.as_ref(),
        runtime: &gathered.runtime,
        executed_cells: prior,
    };
    let mut silenced = Vec::new();
    let mut directive_warnings = Vec::new();
    let mut gave_up = BTreeMap::new();
    if use_rules {
        let interpretation =
            crane_analysis::bounds::with_deep_stack(|| crane_detect::rules::interpret(&context));
        gave_up = interpretation.gave_up;
        let suppressed =
            crane_detect::suppress::suppress(interpretation.findings, &target.source, ignored);
        findings.extend(suppressed.kept);
        silenced = suppressed.silenced;
        directive_warnings = suppressed
            .warnings
            .into_iter()
            .map(|warning| {
                format!(
                    "{}, line {}: {}",
                    target.label(),
                    warning.line,
                    warning.message
                )
            })
            .collect();
    }

    let mut llm_use = None;
    if let (true, Some(config)) = (use_llm, &options.llm) {
        let mut builder = config.prompt;
        if let Some(prompt) = options.prompt {
            builder.config = prompt;
        }
        if let Some(redact) = options.redact {
            builder.redact = redact;
        }
        let prompt = builder
            .build(&PromptInput {
                executed_cells: prior.sources(),
                target_cell: &target.source,
                runtime: Some(&gathered.runtime),
                api_docs: gathered.api_docs.as_deref(),
            })
            .map_err(CheckError::bad_input)?;
        if options.show_prompt {
            return Ok(Judged::PromptShown(crane_llm::describe_request(
                config, &prompt,
            )));
        }
        let client = Client::new(config.clone()).map_err(CheckError::detector)?;
        match client.ask(&prompt, config.runs).await {
            Ok(judgement) => {
                llm_use = Some(judge_with_llm(
                    &judgement,
                    config,
                    &mut findings,
                    &mut warnings,
                    use_rules,
                    &context,
                ));
            }
            Err(error) => failures.push(DetectorFailure {
                detector: DetectorKind::Llm,
                error: crane_llm::Secrets::of(config).scrub(&error.to_string()),
            }),
        }
    } else if options.show_prompt {
        return Err(CheckError::bad_input(anyhow!(
            "--show-prompt needs an LLM: pass --llm MODEL"
        )));
    }

    let asked = options.dry_run_asked();
    // As in the crane kernel, a crash a rule proved needs no second opinion unasked; nor does
    // one the user silenced, which a dry run would only report again.
    let proven = findings
        .iter()
        .chain(silenced.iter().map(|silenced| &silenced.finding))
        .any(|finding| finding.crash && finding.status == FindingStatus::Proven);
    let chosen = options.detector == Detector::Auto
        && options.dry_run == DryRunWhen::Auto
        && !proven
        && match auto {
            AutoDryRun::Target => true,
            AutoDryRun::IfLong(long) => long,
        };
    if asked || chosen {
        let options = crane_probe::dry_run::DryRunOptions {
            allow_side_effects: options.allow_side_effects,
            sealed_only: !asked,
            ..Default::default()
        };
        // Where the kernel cannot be forked, the cell runs in the replica.
        match crane_probe::ahead::execute_ahead_analysed(
            session,
            replica,
            &target.source,
            &gathered.analysis,
            &options,
        )
        .await
        {
            Ok(outcome) => {
                // A fork stopped at its timeout is a check that could not complete (exit 4),
                // not a verdict that the cell runs; a dry run nobody asked for by name says so
                // in its finding and fails nothing.
                if let crane_probe::dry_run::DryRunOutcome::Ran(report) = &outcome {
                    if let crane_probe::dry_run::DryRunResult::TimedOut { after } = report.result {
                        if asked {
                            failures.push(DetectorFailure {
                                detector: DetectorKind::DryRun,
                                error: format!(
                                    "the dry run was still running after {:.0} s and was stopped",
                                    after.as_secs_f64()
                                ),
                            });
                        }
                    }
                }
                findings.push(crane_detect::dry_run_finding(&outcome));
            }
            Err(crane_probe::dry_run::DryRunError::Kernel(error)) => {
                return Err(CheckError::kernel(error))
            }
            Err(error) if asked => failures.push(DetectorFailure {
                detector: DetectorKind::DryRun,
                error: error.to_string(),
            }),
            Err(error) => findings.push(Finding {
                detector: DetectorKind::DryRun,
                rule: None,
                crash: false,
                exception: None,
                line: None,
                diagnosis: format!("The dry run could not complete: {error}."),
                evidence: Vec::new(),
                confidence: 0.0,
                status: FindingStatus::Unsupported,
            }),
        }
    }
    for failure in &failures {
        warnings.push(format!(
            "the {} detector failed, so the verdict comes from the others: {}",
            failure.detector.label(),
            failure.error
        ));
    }

    let mut verdict = combine(&findings);
    if use_rules && llm_use.is_some() && verdict.detector != DetectorKind::DryRun {
        verdict.detector = DetectorKind::Hybrid;
    }
    Ok(Judged::Detection(Box::new(Detection {
        findings,
        silenced,
        directive_warnings,
        gave_up,
        verdict,
        llm: llm_use,
        warnings,
        failures,
        detect: started.elapsed(),
    })))
}

/// A crash seen only in an abridged run, through a value the abridgement changed, may be its
/// artefact: the verdict is no crash, as in the crane kernel, and the crash's diagnosis is
/// returned to be said.
pub fn uncertain_only(verdict: &mut Verdict, findings: &[Finding]) -> Option<String> {
    let crashes = || findings.iter().filter(|finding| finding.crash);
    let uncertain = verdict.crash
        && crashes().next().is_some()
        && crashes().all(|finding| finding.status.may_be_artefact());
    if !uncertain {
        return None;
    }
    verdict.crash = false;
    verdict.exception = None;
    verdict.line = None;
    Some(verdict.diagnosis.clone())
}

/// Adds the LLM's judgement to `findings` (through the hybrid policy when the rules ran too).
fn judge_with_llm(
    judgement: &crane_llm::Judgement,
    config: &LlmConfig,
    findings: &mut Vec<Finding>,
    warnings: &mut Vec<String>,
    use_rules: bool,
    context: &crane_detect::CheckContext,
) -> LlmUse {
    let llm_finding = crane_detect::llm_finding(judgement);
    warnings.extend(judgement.warnings.iter().cloned());
    warnings.extend(judgement.unreadable.iter().map(|unreadable| {
        format!(
            "an LLM answer could not be read and did not vote: {}",
            unreadable.kind
        )
    }));
    if use_rules {
        *findings = crane_detect::hybrid_in_context(findings, &llm_finding, context).findings;
    } else {
        findings.push(llm_finding);
    }
    LlmUse {
        model: config.model.to_string(),
        input_tokens: judgement.usage.input_tokens,
        output_tokens: judgement.usage.output_tokens,
        tokens_estimated: judgement.usage.estimated,
        latency_ms: judgement.latency.as_millis() as u64,
        cost_usd: judgement.cost,
        cached: judgement.cached,
    }
}

/// A cell that does not parse raises SyntaxError before any of it runs.
fn syntax_error_finding(error: &SyntaxError) -> Finding {
    Finding {
        detector: DetectorKind::Rules,
        rule: None,
        crash: true,
        exception: Some("SyntaxError".into()),
        line: Some(error.line),
        diagnosis: format!(
            "The cell does not parse ({}, line {} column {}), so Python raises SyntaxError before running any of it.",
            error.message, error.line, error.column
        ),
        evidence: Vec::new(),
        confidence: 1.0,
        status: FindingStatus::Proven,
    }
}
