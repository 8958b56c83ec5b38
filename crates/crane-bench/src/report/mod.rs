//! Per-case results and the report of one configuration built from them: metrics overall, per
//! group, library and root cause, diagnosis quality, cost (several configurations side by side
//! with their differences: [`comparison`]). A report holds every case result, so merged shards recompute exactly what an
//! unsharded run computes.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crane_runtime::junobench::Variant;
use serde::{Deserialize, Serialize};

use crate::dataset::DatasetKind;
use crate::metrics::{percentile, Confusion, Metrics};

/// The detector measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Detector {
    Rules,
    Llm,
    Hybrid,
    DryRun,
}

impl Detector {
    pub fn as_str(self) -> &'static str {
        match self {
            Detector::Rules => "rules",
            Detector::Llm => "llm",
            Detector::Hybrid => "hybrid",
            Detector::DryRun => "dry-run",
        }
    }

    /// The detector asks an LLM.
    pub fn uses_llm(self) -> bool {
        matches!(self, Detector::Llm | Detector::Hybrid)
    }
}

impl fmt::Display for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Detector {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "rules" => Ok(Detector::Rules),
            "llm" => Ok(Detector::Llm),
            "hybrid" => Ok(Detector::Hybrid),
            "dry-run" | "dry_run" => Ok(Detector::DryRun),
            other => Err(format!(
                "unknown detector {other:?}: expected rules, llm, hybrid or dry-run"
            )),
        }
    }
}

/// The paper's rubric for a predicted diagnosis against the ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RubricGrade {
    /// Names the crash and its cause as the ground truth does.
    Correct,
    /// Names the crash or part of its cause.
    PartiallyCorrect,
    /// Predicts the crash for a wrong reason.
    ReasoningWrong,
    /// Unrelated to the actual crash.
    Wrong,
}

impl RubricGrade {
    pub const ALL: [RubricGrade; 4] = [
        RubricGrade::Correct,
        RubricGrade::PartiallyCorrect,
        RubricGrade::ReasoningWrong,
        RubricGrade::Wrong,
    ];

    pub fn label(self) -> &'static str {
        match self {
            RubricGrade::Correct => "Correct",
            RubricGrade::PartiallyCorrect => "Partially correct",
            RubricGrade::ReasoningWrong => "Reasoning wrong",
            RubricGrade::Wrong => "Wrong",
        }
    }

    fn key(self) -> &'static str {
        match self {
            RubricGrade::Correct => "correct",
            RubricGrade::PartiallyCorrect => "partially_correct",
            RubricGrade::ReasoningWrong => "reasoning_wrong",
            RubricGrade::Wrong => "wrong",
        }
    }
}

/// The deterministic diagnosis check: the predicted exception class against the labelled one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExceptionCheck {
    Match,
    Mismatch,
    /// The detector named no exception class.
    NotStated,
}

impl ExceptionCheck {
    pub const ALL: [ExceptionCheck; 3] = [
        ExceptionCheck::Match,
        ExceptionCheck::Mismatch,
        ExceptionCheck::NotStated,
    ];

    fn key(self) -> &'static str {
        match self {
            ExceptionCheck::Match => "match",
            ExceptionCheck::Mismatch => "mismatch",
            ExceptionCheck::NotStated => "not_stated",
        }
    }
}

/// How a correctly detected crash's diagnosis was graded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisGrade {
    Rubric(RubricGrade),
    ExceptionClass(ExceptionCheck),
}

/// Which diagnosis check a report used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DiagnosisMethod {
    /// An LLM judge with the paper's rubric.
    Judge { model: String },
    /// Predicted exception class compared with the labelled one (no judge).
    ExceptionClass,
}

impl fmt::Display for DiagnosisMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiagnosisMethod::Judge { model } => {
                write!(f, "LLM judge {model} with the paper's rubric")
            }
            DiagnosisMethod::ExceptionClass => f.write_str(
                "deterministic check: predicted exception class vs the labelled one (no judge)",
            ),
        }
    }
}

/// What judging one case cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CaseCost {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// Time spent waiting for LLM answers (all runs of the case).
    pub llm_ms: Option<f64>,
    /// Estimated price in US dollars, when the model's price is known.
    pub usd: Option<f64>,
    /// Time spent extracting runtime information from the kernel (live runs only).
    pub runtime_ms: Option<f64>,
    /// Wall time of the whole case (execution, extraction, detection).
    pub total_ms: f64,
}

/// The outcome for one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseResult {
    pub id: String,
    pub pair: String,
    pub variant: Variant,
    pub group: String,
    pub library: String,
    pub root_cause: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_runtime: Option<bool>,
    /// Ground truth: the cell crashes.
    pub expected: bool,
    /// The detector's verdict; `None` when it could not judge the case (see `error`).
    pub predicted: Option<bool>,
    /// The labelled exception class (crashing cases).
    pub exception: Option<String>,
    pub predicted_exception: Option<String>,
    /// The detector's explanation.
    pub reasoning: Option<String>,
    /// The grade of the diagnosis, for correctly detected crashes.
    pub diagnosis: Option<DiagnosisGrade>,
    /// Individual answers' votes (LLM detectors), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Option<bool>>,
    pub cost: CaseCost,
    /// Why the case could not be judged (then `predicted` is `None`) or its diagnosis not
    /// graded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the rules judged the case and proved no crash: where their interpreter gave up,
    /// by reason and how often (empty: nowhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gave_up: Option<BTreeMap<String, usize>>,
}

impl CaseResult {
    pub fn is_correct(&self) -> Option<bool> {
        self.predicted.map(|predicted| predicted == self.expected)
    }
}

/// A shard `index` of `count` (1-based), as written on the command line: `2/4`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The positions of this shard's cases in the id-sorted list of `total` cases: contiguous
    /// runs of equal size (±1), so the two variants of a pair stay together.
    pub fn range(self, total: usize) -> std::ops::Range<usize> {
        let bound = |index: u32| index as usize * total / self.count as usize;
        bound(self.index - 1)..bound(self.index)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || format!("invalid shard {text:?}: expected I/N with 1 <= I <= N");
        let (index, count) = text.split_once('/').ok_or_else(invalid)?;
        let index: u32 = index.trim().parse().map_err(|_| invalid())?;
        let count: u32 = count.trim().parse().map_err(|_| invalid())?;
        if index == 0 || index > count {
            return Err(invalid());
        }
        Ok(Shard { index, count })
    }
}

/// What was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// The dataset path as given.
    pub dataset: String,
    pub dataset_kind: DatasetKind,
    pub detector: Detector,
    /// The LLM (llm and hybrid detectors).
    pub model: Option<String>,
    /// The configuration: which information the detector is given.
    pub config: String,
    /// LLM answers per case (majority vote).
    pub runs: u32,
    pub diagnosis_method: DiagnosisMethod,
    /// Set on the part of a sharded run; `None` on whole and merged runs.
    pub shard: Option<Shard>,
    pub crane_version: String,
    /// The command that produced the report, as typed (arguments shell-quoted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_line: Option<String>,
    /// The commit of crane's source the binary was built from (`+dirty` with local changes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Rules silenced in every case (`--ignore`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ignore: Vec<String>,
    /// `--explain-silence`: the report counts where the rules gave up.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub explain_silence: bool,
}

/// Diagnosis quality over the correctly detected crashes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagnosisSummary {
    pub method: DiagnosisMethod,
    /// Correctly detected crashes that were graded.
    pub graded: u64,
    /// Count per grade (`correct`, `partially_correct`, ... or `match`, `mismatch`,
    /// `not_stated`).
    pub grades: BTreeMap<String, u64>,
    /// Share of graded diagnoses that are `correct` (rubric) or `match` (exception class).
    pub correct_rate: Option<f64>,
}

/// Latency distribution in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p95: f64,
    pub total: f64,
}

impl Latency {
    fn of(values: &[f64]) -> Option<Latency> {
        Some(Latency {
            p50: percentile(values, 50.0)?,
            p95: percentile(values, 95.0)?,
            total: values.iter().sum(),
        })
    }
}

/// What the run cost. Latencies are per case (all of a case's LLM calls together).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostSummary {
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub llm_latency_ms: Option<Latency>,
    /// Estimated price in US dollars; `None` when no case's price is known.
    pub usd: Option<f64>,
    pub runtime_extraction_ms: Option<Latency>,
    pub case_ms: Option<Latency>,
}

/// The report of one detector in one configuration over a dataset (or a shard of it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    #[serde(flatten)]
    pub info: RunInfo,
    pub overall: Metrics,
    pub by_group: BTreeMap<String, Metrics>,
    pub by_library: BTreeMap<String, Metrics>,
    pub by_root_cause: BTreeMap<String, Metrics>,
    pub diagnosis: DiagnosisSummary,
    pub cases: Vec<CaseResult>,
    pub cost: CostSummary,
    /// With `--explain-silence`: where the rules gave up on the crashes they were silent on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub silence: Option<crate::silence::Silence>,
}

impl RunReport {
    /// Compute every aggregate from the case results (sorted here by id).
    pub fn new(info: RunInfo, mut cases: Vec<CaseResult>) -> RunReport {
        cases.sort_by(|a, b| a.id.cmp(&b.id));
        let overall = metrics_of(cases.iter());
        let grouped = |key: fn(&CaseResult) -> &str| {
            let mut groups: BTreeMap<String, Vec<&CaseResult>> = BTreeMap::new();
            for case in &cases {
                groups.entry(key(case).to_owned()).or_default().push(case);
            }
            groups
                .into_iter()
                .map(|(name, members)| (name, metrics_of(members.into_iter())))
                .collect()
        };
        let by_group = grouped(|case| &case.group);
        let by_library = grouped(|case| &case.library);
        let by_root_cause = grouped(|case| &case.root_cause);
        let diagnosis = diagnosis_summary(&info.diagnosis_method, &cases);
        let cost = cost_summary(&cases);
        let silence = info
            .explain_silence
            .then(|| crate::silence::Silence::of(&cases));
        RunReport {
            info,
            overall,
            by_group,
            by_library,
            by_root_cause,
            diagnosis,
            cases,
            cost,
            silence,
        }
    }
}

/// How much a metric moves over the individual recorded answers taken one at a time (answer 1
/// of every case, then answer 2, ...), beside the majority vote the report scores.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Answers per case.
    pub runs: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Population standard deviation.
    pub sd: f64,
}

impl RunReport {
    /// The spread of F1 over the recorded answers taken one at a time; `None` with fewer than
    /// two answers per case, or when F1 is undefined for one of them.
    pub fn f1_spread(&self) -> Option<Spread> {
        let runs = self.cases.iter().map(|case| case.votes.len()).max()?;
        if runs < 2 {
            return None;
        }
        let values: Vec<f64> = (0..runs)
            .map(|run| {
                let mut confusion = Confusion::default();
                for case in &self.cases {
                    if let Some(Some(vote)) = case.votes.get(run) {
                        confusion.record(case.expected, *vote);
                    }
                }
                confusion.metrics(0).f1
            })
            .collect::<Option<_>>()?;
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
        Some(Spread {
            runs,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            mean,
            sd: variance.sqrt(),
        })
    }
}

fn metrics_of<'a>(cases: impl Iterator<Item = &'a CaseResult>) -> Metrics {
    let mut confusion = Confusion::default();
    let mut errors = 0;
    for case in cases {
        match case.predicted {
            Some(predicted) => confusion.record(case.expected, predicted),
            None => errors += 1,
        }
    }
    confusion.metrics(errors)
}

fn diagnosis_summary(method: &DiagnosisMethod, cases: &[CaseResult]) -> DiagnosisSummary {
    let mut grades: BTreeMap<String, u64> = match method {
        DiagnosisMethod::Judge { .. } => RubricGrade::ALL
            .iter()
            .map(|grade| (grade.key().to_owned(), 0))
            .collect(),
        DiagnosisMethod::ExceptionClass => ExceptionCheck::ALL
            .iter()
            .map(|check| (check.key().to_owned(), 0))
            .collect(),
    };
    let mut graded = 0;
    let mut correct = 0;
    for grade in cases.iter().filter_map(|case| case.diagnosis) {
        graded += 1;
        let (key, is_correct) = match grade {
            DiagnosisGrade::Rubric(grade) => (grade.key(), grade == RubricGrade::Correct),
            DiagnosisGrade::ExceptionClass(check) => (check.key(), check == ExceptionCheck::Match),
        };
        *grades.entry(key.to_owned()).or_default() += 1;
        correct += u64::from(is_correct);
    }
    DiagnosisSummary {
        method: method.clone(),
        graded,
        grades,
        correct_rate: (graded != 0).then(|| correct as f64 / graded as f64),
    }
}

fn cost_summary(cases: &[CaseResult]) -> CostSummary {
    let llm: Vec<f64> = cases.iter().filter_map(|case| case.cost.llm_ms).collect();
    let runtime: Vec<f64> = cases
        .iter()
        .filter_map(|case| case.cost.runtime_ms)
        .collect();
    let total: Vec<f64> = cases.iter().map(|case| case.cost.total_ms).collect();
    let prices: Vec<f64> = cases.iter().filter_map(|case| case.cost.usd).collect();
    CostSummary {
        tokens_in: cases.iter().map(|case| case.cost.tokens_in).sum(),
        tokens_out: cases.iter().map(|case| case.cost.tokens_out).sum(),
        llm_latency_ms: Latency::of(&llm),
        usd: (!prices.is_empty()).then(|| prices.iter().sum()),
        runtime_extraction_ms: Latency::of(&runtime),
        case_ms: Latency::of(&total),
    }
}

mod comparison;

pub use comparison::{Comparison, Delta, Difference, Report};

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn case(
        id: &str,
        group: &str,
        expected: bool,
        predicted: Option<bool>,
    ) -> CaseResult {
        CaseResult {
            id: id.to_owned(),
            pair: id.to_owned(),
            variant: if expected {
                Variant::Buggy
            } else {
                Variant::Fixed
            },
            group: group.to_owned(),
            library: group.to_owned(),
            root_cause: if id.contains('x') {
                "API misuse"
            } else {
                "data confusion"
            }
            .to_owned(),
            needs_runtime: None,
            expected,
            predicted,
            exception: expected.then(|| "KeyError".to_owned()),
            predicted_exception: None,
            reasoning: None,
            diagnosis: None,
            votes: Vec::new(),
            cost: CaseCost {
                total_ms: 1.0,
                ..CaseCost::default()
            },
            error: predicted.is_none().then(|| "failed".to_owned()),
            gave_up: None,
        }
    }

    pub(crate) fn info(config: &str) -> RunInfo {
        RunInfo {
            dataset: "cases".to_owned(),
            dataset_kind: DatasetKind::OfflineCases,
            detector: Detector::Llm,
            model: Some("replay:gpt_5".to_owned()),
            config: config.to_owned(),
            runs: 5,
            diagnosis_method: DiagnosisMethod::ExceptionClass,
            shard: None,
            crane_version: "test".to_owned(),
            command_line: None,
            commit: None,
            ignore: Vec::new(),
            explain_silence: false,
        }
    }

    #[test]
    fn shards() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        assert!("0/4".parse::<Shard>().is_err());
        assert!("5/4".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        for total in [0, 1, 10, 148] {
            let ranges: Vec<_> = (1..=3)
                .map(|index| Shard { index, count: 3 }.range(total))
                .collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[2].end, total);
            assert!(ranges.windows(2).all(|pair| pair[0].end == pair[1].start));
            assert!(ranges.iter().all(|range| range.len() + 1 >= total / 3));
        }
        assert_eq!(Shard { index: 2, count: 4 }.range(148), 37..74);
    }
}
