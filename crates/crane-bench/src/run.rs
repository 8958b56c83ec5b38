//! A benchmark run: every case of a dataset (or of one shard of it) judged by one detector in
//! each configuration, `jobs` cases at a time, with per-case results cached for resuming.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crane_detect::suppress::{suppress, Ignored};
use crane_detect::{
    combine, dry_run_finding, hybrid_in_context, llm_finding, rules, CheckContext, ExecutedCells,
};
use crane_llm::{
    ApiDoc, Client, Judgement, LlmConfig, LlmError, ModelSpec, ParsePromptConfigError, Prompt,
    PromptBuilder, PromptConfig, PromptInput, PromptStyle, ReplayModel, ReplayProvider, Usage,
};
use crane_probe::dry_run::DryRunOutcome;
use crane_runtime::junobench::Case;
use crane_runtime::RuntimeInfo;
use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::cache::{CacheError, ResultCache};
use crate::charts::{self, ChartError};
use crate::dataset::{self, BenchCase, CaseSource, DatasetError, DatasetKind};
use crate::judge::{self, Judge, JudgeInput};
use crate::live::{self, Extras, LiveError, LiveOptions};
use crate::progress::Progress;
use crate::render;
use crate::report::{
    CaseCost, CaseResult, Detector, DiagnosisGrade, DiagnosisMethod, Report, RunInfo, RunReport,
    Shard,
};

/// Recorded answers per case and configuration in JunoBench: the paper's protocol votes over
/// all of them.
pub const RECORDED_RUNS: u32 = 5;

/// What to run. [`BenchOptions::new`] gives the defaults.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub dataset: PathBuf,
    pub detector: Detector,
    /// The LLM of the llm and hybrid detectors (`replay:<model>` answers offline cases from
    /// their recorded answers).
    pub llm: Option<LlmConfig>,
    /// Configurations measured side by side; the first is the baseline of the differences.
    pub configs: Vec<PromptConfig>,
    /// LLM answers per case (majority vote). Default: 5 for replay (all recorded answers, as
    /// in the paper), else the LLM configuration's `runs`.
    pub runs: Option<u32>,
    /// Grade diagnoses with this LLM and the paper's rubric; `None`: exception-class check.
    pub judge: Option<LlmConfig>,
    /// Cases judged at the same time (each live case runs its own kernel).
    pub jobs: usize,
    pub shard: Option<Shard>,
    /// The report directory: the result cache goes to `<out>/cache` unless `cache_dir` is set.
    pub out: Option<PathBuf>,
    /// Per-case result cache; default `<out>/cache` when `out` is set, else no cache.
    pub cache_dir: Option<PathBuf>,
    /// How to start kernels for runnable pairs.
    pub kernel: Option<LiveOptions>,
    /// Rules silenced in every case, as `--ignore` silences them.
    pub ignore: std::collections::BTreeSet<rules::RuleCode>,
    /// Count where the rules gave up on the crashes they were silent on.
    pub explain_silence: bool,
}

impl BenchOptions {
    pub fn new(dataset: impl Into<PathBuf>, detector: Detector) -> BenchOptions {
        BenchOptions {
            dataset: dataset.into(),
            detector,
            llm: None,
            configs: vec![PromptConfig::default()],
            runs: None,
            judge: None,
            jobs: 1,
            shard: None,
            out: None,
            cache_dir: None,
            kernel: None,
            ignore: std::collections::BTreeSet::new(),
            explain_silence: false,
        }
    }
}

/// Configurations as written on the command line: comma-separated, e.g.
/// `code_only,with_runtime,-S,-R,-V`.
pub fn parse_configs(text: &str) -> Result<Vec<PromptConfig>, ParsePromptConfigError> {
    text.split(',')
        .filter(|part| !part.trim().is_empty())
        .map(str::parse)
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    #[error("the {0} detector needs an LLM: give one with --llm (e.g. replay:gpt_5)")]
    NeedsModel(Detector),
    #[error("replay models answer JunoBench cases only; {0} is a runnable-pairs dataset: use a live model")]
    ReplayNeedsCases(PathBuf),
    #[error("the dry-run detector executes the cell, and offline cases cannot be re-executed: use a runnable-pairs dataset")]
    DryRunOffline,
    #[error("runnable pairs are executed live: a kernel to start them with is needed")]
    NeedsKernel,
    #[error("no configuration given")]
    NoConfig,
    #[error("JunoBench records {RECORDED_RUNS} answers per case and configuration; --runs {0} asks for more")]
    TooManyRuns(u32),
    #[error(transparent)]
    Llm(#[from] LlmError),
    #[error(transparent)]
    Cache(#[from] CacheError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Chart(#[from] ChartError),
    #[error("a benchmark task failed: {0}")]
    Task(String),
}

/// The detector's LLM and how it is asked.
struct LlmSetup {
    client: Client,
    builder: PromptBuilder,
    /// Prices the tokens; for replay, the recorded model's list price.
    priced_as: Option<ModelSpec>,
    prices: crane_llm::PriceTable,
}

struct Context {
    detector: Detector,
    ignored: Ignored,
    configs: Vec<PromptConfig>,
    runs: u32,
    llm: Option<LlmSetup>,
    judge: Option<Judge>,
    caches: Vec<Option<ResultCache>>,
    live: Option<LiveOptions>,
}

/// Run the benchmark. Reports are written by [`write_outputs`].
pub async fn run(options: &BenchOptions, progress: &dyn Progress) -> Result<Report, BenchError> {
    if options.configs.is_empty() {
        return Err(BenchError::NoConfig);
    }
    let dataset = dataset::load(&options.dataset)?;
    match (dataset.kind, options.detector) {
        (DatasetKind::OfflineCases, Detector::DryRun) => return Err(BenchError::DryRunOffline),
        (DatasetKind::RunnablePairs, _) if options.kernel.is_none() => {
            return Err(BenchError::NeedsKernel)
        }
        _ => {}
    }
    if options.detector.uses_llm() && options.llm.is_none() {
        return Err(BenchError::NeedsModel(options.detector));
    }
    let llm = match &options.llm {
        Some(config) if options.detector.uses_llm() => Some(llm_setup(config, &dataset)?),
        _ => None,
    };
    let runs = options.runs.unwrap_or(match &options.llm {
        Some(config) if matches!(config.model, ModelSpec::Replay(_)) => RECORDED_RUNS,
        Some(config) => config.runs,
        None => 1,
    });
    let replaying = matches!(
        options.llm.as_ref().map(|config| &config.model),
        Some(ModelSpec::Replay(_))
    );
    if replaying && runs > RECORDED_RUNS {
        return Err(BenchError::TooManyRuns(runs));
    }
    let judge = match &options.judge {
        Some(config) => Some(Judge::new(Client::new(config.clone())?)),
        None => None,
    };
    let diagnosis_method = match &judge {
        Some(judge) => DiagnosisMethod::Judge {
            model: judge.model(),
        },
        None => DiagnosisMethod::ExceptionClass,
    };
    let model = llm
        .as_ref()
        .map(|setup| setup.client.config().model.to_string());
    let infos: Vec<RunInfo> = options
        .configs
        .iter()
        .map(|config| RunInfo {
            dataset: options.dataset.display().to_string(),
            dataset_kind: dataset.kind,
            detector: options.detector,
            model: model.clone(),
            config: config.to_string(),
            runs,
            diagnosis_method: diagnosis_method.clone(),
            shard: options.shard,
            crane_version: env!("CARGO_PKG_VERSION").to_owned(),
            command_line: None,
            commit: None,
            ignore: options
                .ignore
                .iter()
                .map(|rule| rule.code().to_owned())
                .collect(),
            explain_silence: options.explain_silence,
        })
        .collect();
    let cache_root = options
        .cache_dir
        .clone()
        .or_else(|| options.out.as_ref().map(|out| out.join("cache")));
    let caches = infos
        .iter()
        .map(|info| {
            cache_root
                .as_deref()
                .map(|root| open_cache(root, info))
                .transpose()
        })
        .collect::<Result<Vec<_>, _>>()?;

    let mut cases = dataset.cases;
    if let Some(shard) = options.shard {
        let range = shard.range(cases.len());
        cases.truncate(range.end);
        cases.drain(..range.start);
    }
    let context = Arc::new(Context {
        detector: options.detector,
        ignored: Ignored {
            flag: options.ignore.clone(),
            config: Default::default(),
        },
        configs: options.configs.clone(),
        runs,
        llm,
        judge,
        caches,
        live: options.kernel.clone(),
    });

    progress.start(cases.len() as u64);
    let per_config = judge_cases(context, cases, options.jobs, progress).await;
    progress.finish();
    let per_config = per_config?;
    let reports = infos
        .into_iter()
        .zip(per_config)
        .map(|(info, results)| RunReport::new(info, results))
        .collect();
    Report::from_reports(reports).ok_or(BenchError::NoConfig)
}

async fn judge_cases(
    context: Arc<Context>,
    cases: Vec<BenchCase>,
    jobs: usize,
    progress: &dyn Progress,
) -> Result<Vec<Vec<CaseResult>>, BenchError> {
    let slots = Arc::new(Semaphore::new(jobs.max(1)));
    let mut tasks = JoinSet::new();
    for case in cases {
        let (context, slots) = (context.clone(), slots.clone());
        tasks.spawn(async move {
            let _slot = slots.acquire().await;
            judge_case_all_configs(&context, &case).await
        });
    }
    let mut per_config: Vec<Vec<CaseResult>> = vec![Vec::new(); context.configs.len()];
    while let Some(joined) = tasks.join_next().await {
        let done = match joined.map_err(|error| BenchError::Task(error.to_string())) {
            Ok(Ok(done)) => done,
            Ok(Err(error)) | Err(error) => {
                // An aborted task drops its kernel only when next polled: wait for that, so no
                // kernel outlives the run.
                tasks.shutdown().await;
                return Err(error);
            }
        };
        progress.case_done(&done.id, done.cached);
        for (results, result) in per_config.iter_mut().zip(done.results) {
            results.push(result);
        }
    }
    Ok(per_config)
}

fn llm_setup(config: &LlmConfig, dataset: &dataset::Dataset) -> Result<LlmSetup, BenchError> {
    let (client, style, priced_as) = match config.model {
        ModelSpec::Replay(model) => {
            if dataset.kind != DatasetKind::OfflineCases {
                return Err(BenchError::ReplayNeedsCases(dataset.root.clone()));
            }
            let cases = dataset.cases.iter().filter_map(|case| match &case.source {
                CaseSource::Offline(case) => Some(&**case),
                CaseSource::Runnable(_) => None,
            });
            let replay = ReplayProvider::from_cases(model, cases);
            // The paper's prompts, so token counts are those of the recorded runs.
            (
                Client::with_replay(config.clone(), replay)?,
                PromptStyle::Paper,
                replay_list_price_model(model),
            )
        }
        ModelSpec::Remote(_) => (
            Client::new(config.clone())?,
            config.prompt.style,
            Some(config.model.clone()),
        ),
    };
    Ok(LlmSetup {
        client,
        builder: config.prompt.style(style),
        priced_as,
        prices: config.prices.clone(),
    })
}

/// The provider model a recorded model was, for a list-price cost estimate of its tokens
/// (none for the self-hosted Qwen).
fn replay_list_price_model(model: ReplayModel) -> Option<ModelSpec> {
    let spec = match model {
        ReplayModel::Gpt5 => "openai:gpt-5",
        ReplayModel::Gemini25Flash => "gemini:gemini-2.5-flash",
        ReplayModel::Qwen25_32BInstruct => return None,
    };
    ModelSpec::parse(spec).ok()
}

/// Everything that changes a case's result: results are reused only for the same setup.
#[derive(Serialize)]
struct CacheSetup<'a> {
    crane_version: &'a str,
    detector: Detector,
    model: Option<&'a str>,
    config: &'a str,
    runs: u32,
    diagnosis: &'a DiagnosisMethod,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    ignore: &'a [String],
    /// Results cached before cases recorded where the rules gave up lack it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    explain_silence: bool,
}

fn open_cache(root: &Path, info: &RunInfo) -> Result<ResultCache, CacheError> {
    let setup = CacheSetup {
        crane_version: &info.crane_version,
        detector: info.detector,
        model: info.model.as_deref(),
        config: &info.config,
        runs: info.runs,
        diagnosis: &info.diagnosis_method,
        ignore: &info.ignore,
        explain_silence: info.explain_silence,
    };
    let label = format!("{}-{}", info.detector, info.config);
    ResultCache::open(root, &label, &setup)
}

struct CaseDone {
    id: String,
    cached: bool,
    /// One per configuration, in order.
    results: Vec<CaseResult>,
}

/// What a detector is shown about a case, whichever way it was obtained.
struct Evidence<'a> {
    executed_cells: Vec<String>,
    target_cell: String,
    runtime: RuntimeInfo,
    /// The recorded case, for prompts in the paper's exact text and for replay.
    recorded: Option<&'a Case>,
    /// Live runs: time spent extracting runtime information.
    runtime_ms: Option<f64>,
    /// Live runs of the dry-run detector: what running the target in a fork did.
    dry_run: Option<DryRunOutcome>,
    /// Live runs with `with_api_docs`: docstrings of what the target calls.
    api_docs: Option<Vec<ApiDoc>>,
}

async fn judge_case_all_configs(
    context: &Context,
    case: &BenchCase,
) -> Result<CaseDone, BenchError> {
    let mut results: Vec<Option<CaseResult>> = context
        .caches
        .iter()
        .map(|cache| cache.as_ref().and_then(|cache| cache.get(case)))
        .collect();
    let cached = results.iter().all(Option::is_some);
    if !cached {
        let started = Instant::now();
        let evidence = gather(context, case).await;
        let setup_ms = started.elapsed().as_secs_f64() * 1000.0;
        for (position, slot) in results.iter_mut().enumerate() {
            if slot.is_some() {
                continue;
            }
            let config = context.configs[position];
            let config_started = Instant::now();
            let mut result = match &evidence {
                Ok(evidence) => judge_one(context, case, config, evidence).await,
                Err(error) => failed(case, error.to_string()),
            };
            result.cost.total_ms = setup_ms + config_started.elapsed().as_secs_f64() * 1000.0;
            if let Some(cache) = &context.caches[position] {
                cache.put(case, &result)?;
            }
            *slot = Some(result);
        }
    }
    Ok(CaseDone {
        id: case.id.clone(),
        cached,
        results: results.into_iter().flatten().collect(),
    })
}

#[derive(Debug, thiserror::Error)]
enum GatherError {
    #[error("no kernel to execute the notebook with")]
    NoKernel,
    #[error(transparent)]
    Live(#[from] LiveError),
}

async fn gather<'a>(context: &Context, case: &'a BenchCase) -> Result<Evidence<'a>, GatherError> {
    match &case.source {
        CaseSource::Offline(recorded) => Ok(Evidence {
            executed_cells: recorded.executed_cells.clone(),
            target_cell: recorded.target_cell.clone(),
            runtime: recorded.runtime_info(),
            recorded: Some(recorded),
            runtime_ms: None,
            dry_run: None,
            api_docs: None,
        }),
        CaseSource::Runnable(notebook) => {
            let Some(options) = &context.live else {
                return Err(GatherError::NoKernel);
            };
            let extras = Extras {
                dry_run: context.detector == Detector::DryRun,
                api_docs: context.llm.is_some()
                    && context
                        .configs
                        .iter()
                        .any(|config| matches!(config, PromptConfig::WithApiDocs(_))),
            };
            let evidence = live::execute_to_target(notebook, options, extras).await?;
            Ok(Evidence {
                executed_cells: evidence.executed_cells,
                target_cell: evidence.target_cell,
                runtime: evidence.runtime,
                recorded: None,
                runtime_ms: Some(evidence.runtime_ms),
                dry_run: evidence.dry_run,
                api_docs: evidence.api_docs,
            })
        }
    }
}

fn blank_result(case: &BenchCase) -> CaseResult {
    CaseResult {
        id: case.id.clone(),
        pair: case.pair.clone(),
        variant: case.variant,
        group: case.labels.group.clone(),
        library: case.labels.library.clone(),
        root_cause: case.labels.root_cause.clone(),
        needs_runtime: case.labels.needs_runtime,
        expected: case.labels.crash,
        predicted: None,
        exception: case.labels.exception.clone(),
        predicted_exception: None,
        reasoning: None,
        diagnosis: None,
        votes: Vec::new(),
        cost: CaseCost::default(),
        error: None,
        gave_up: None,
    }
}

fn failed(case: &BenchCase, error: String) -> CaseResult {
    CaseResult {
        error: Some(error),
        ..blank_result(case)
    }
}

async fn judge_one(
    context: &Context,
    case: &BenchCase,
    config: PromptConfig,
    evidence: &Evidence<'_>,
) -> CaseResult {
    let mut result = blank_result(case);
    result.cost.runtime_ms = evidence.runtime_ms;
    let facts = match config.sections() {
        Some(sections) => evidence.runtime.filtered(sections),
        None => RuntimeInfo::default(),
    };
    let parsed_target = crane_analysis::ParsedCell::parse(&evidence.target_cell);
    let analysis = crane_analysis::analyze_parsed(&parsed_target);
    let executed = ExecutedCells::new(&evidence.executed_cells);
    let check = CheckContext {
        target: &parsed_target,
        analysis: analysis.as_ref(),
        runtime: &facts,
        executed_cells: &executed,
    };
    let rule_findings = match context.detector {
        Detector::Rules | Detector::Hybrid => {
            let interpretation =
                crane_analysis::bounds::with_deep_stack(|| rules::interpret(&check));
            let kept = suppress(
                interpretation.findings,
                &evidence.target_cell,
                &context.ignored,
            )
            .kept;
            if !kept.iter().any(|finding| finding.crash) {
                result.gave_up = Some(
                    interpretation
                        .gave_up
                        .into_iter()
                        .map(|(reason, count)| (reason.to_owned(), count))
                        .collect(),
                );
            }
            kept
        }
        Detector::Llm | Detector::DryRun => Vec::new(),
    };
    let llm_finding = match &context.llm {
        Some(setup) => match ask_llm(setup, config, context.runs, evidence).await {
            Ok(judgement) => {
                record_llm_cost(setup, &judgement, &mut result.cost);
                result.votes = judgement
                    .answers
                    .iter()
                    .map(|answer| Some(answer.detection))
                    .chain(judgement.unreadable.iter().map(|_| None))
                    .collect();
                Some(llm_finding(&judgement))
            }
            Err(error) => return failed(case, error.to_string()),
        },
        None => None,
    };
    let verdict = match (context.detector, &llm_finding) {
        (Detector::Hybrid, Some(llm)) => hybrid_in_context(&rule_findings, llm, &check).verdict,
        (Detector::Llm, Some(llm)) => combine(std::slice::from_ref(llm)),
        (Detector::DryRun, _) => match &evidence.dry_run {
            Some(outcome) => combine(&[dry_run_finding(outcome)]),
            None => return failed(case, "no dry run was made".to_owned()),
        },
        _ => combine(&rule_findings),
    };
    result.predicted = Some(verdict.crash);
    result.predicted_exception = verdict
        .crash
        .then(|| judge::predicted_exception(verdict.exception.as_deref(), &verdict.diagnosis))
        .flatten();
    result.reasoning = Some(verdict.diagnosis);
    if case.labels.crash && verdict.crash {
        result.diagnosis = grade_diagnosis(context, case, evidence, &mut result).await;
    }
    result
}

async fn ask_llm(
    setup: &LlmSetup,
    config: PromptConfig,
    runs: u32,
    evidence: &Evidence<'_>,
) -> Result<Judgement, String> {
    let builder = PromptBuilder {
        config,
        ..setup.builder
    };
    let prompt: Prompt = match evidence.recorded {
        Some(case) => builder.build_for_case(case),
        None => builder.build(&PromptInput {
            executed_cells: &evidence.executed_cells,
            target_cell: &evidence.target_cell,
            runtime: Some(&evidence.runtime),
            api_docs: evidence.api_docs.as_deref(),
        }),
    }
    .map_err(|error| error.to_string())?;
    setup
        .client
        .ask(&prompt, runs)
        .await
        .map_err(|error| error.to_string())
}

/// Tokens of every call, cache hits included: the cost of the method, not of this run.
fn record_llm_cost(setup: &LlmSetup, judgement: &Judgement, cost: &mut CaseCost) {
    let usage = judgement
        .calls
        .iter()
        .fold(Usage::default(), |total, call| total + call.usage);
    cost.tokens_in = usage.input_tokens;
    cost.tokens_out = usage.output_tokens;
    cost.llm_ms = Some(judgement.latency.as_secs_f64() * 1000.0);
    cost.usd = setup
        .priced_as
        .as_ref()
        .and_then(|model| setup.prices.cost(model, &usage));
}

async fn grade_diagnosis(
    context: &Context,
    case: &BenchCase,
    evidence: &Evidence<'_>,
    result: &mut CaseResult,
) -> Option<DiagnosisGrade> {
    let reasoning = result.reasoning.as_deref().unwrap_or_default();
    match (&context.judge, &case.labels.diagnosis) {
        (Some(judge), Some(ground_truth)) => {
            let input = JudgeInput {
                target_cell: &evidence.target_cell,
                exception: case.labels.exception.as_deref(),
                ground_truth,
                predicted: reasoning,
            };
            match judge.grade(&input).await {
                Ok(graded) => Some(DiagnosisGrade::Rubric(graded.grade)),
                Err(error) => {
                    result.error = Some(format!("diagnosis not graded: {error}"));
                    None
                }
            }
        }
        (Some(_), None) => None,
        (None, _) => Some(DiagnosisGrade::ExceptionClass(judge::check_exception(
            case.labels.exception.as_deref(),
            result.predicted_exception.as_deref(),
        ))),
    }
}

/// The files `write_outputs` writes.
#[derive(Debug, Clone)]
pub struct Written {
    pub markdown: PathBuf,
    pub json: PathBuf,
    pub charts: Vec<PathBuf>,
}

/// Write `report.md`, `report.json` and the SVG charts into `dir` (created if needed). A shard's
/// files are suffixed with it (`report.shard-2-of-4.json`), so shards can share a directory.
pub fn write_outputs(report: &Report, dir: &Path) -> Result<Written, BenchError> {
    let write = |name: &str, bytes: &[u8]| -> Result<PathBuf, BenchError> {
        let path = dir.join(name);
        std::fs::write(&path, bytes).map_err(|source| BenchError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    };
    std::fs::create_dir_all(dir).map_err(|source| BenchError::Write {
        path: dir.to_owned(),
        source,
    })?;
    let suffix = report.reports()[0]
        .info
        .shard
        .map(|shard| format!(".shard-{}-of-{}", shard.index, shard.count))
        .unwrap_or_default();
    let chart_files = [
        (
            format!("metrics-by-group{suffix}.svg"),
            "F1 and accuracy per group and configuration",
            charts::metrics_by_group(report)?,
        ),
        (
            format!("metrics-by-root-cause{suffix}.svg"),
            "F1 and accuracy per root cause and configuration",
            charts::metrics_by_root_cause(report)?,
        ),
        (
            format!("confusion{suffix}.svg"),
            "Confusion matrix per configuration",
            charts::confusion_matrices(report)?,
        ),
    ];
    let mut charts = Vec::new();
    let mut captions = Vec::new();
    for (name, caption, svg) in &chart_files {
        charts.push(write(name, svg.as_bytes())?);
        captions.push((name.clone(), (*caption).to_owned()));
    }
    let json = serde_json::to_vec_pretty(report).unwrap_or_default();
    let json = write(&format!("report{suffix}.json"), &json)?;
    let markdown = write(
        &format!("report{suffix}.md"),
        render::markdown(report, &captions).as_bytes(),
    )?;
    Ok(Written {
        markdown,
        json,
        charts,
    })
}
