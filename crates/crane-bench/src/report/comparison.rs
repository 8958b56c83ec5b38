//! Several configurations of one detector side by side: each one's metrics against the first's,
//! and the cases one judges rightly and the other wrongly.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Detector, RunReport};
use crate::metrics::Metrics;

/// Metric changes of a configuration against the baseline (the first configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub baseline: String,
    pub config: String,
    pub overall: Delta,
    pub by_group: BTreeMap<String, Delta>,
    pub by_root_cause: BTreeMap<String, Delta>,
    /// Cases judged wrongly by the baseline and rightly here.
    pub fixed: Vec<String>,
    /// Cases judged rightly by the baseline and wrongly here.
    pub broken: Vec<String>,
}

/// `config - baseline` per metric; `None` where either side is undefined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub f1: Option<f64>,
    pub accuracy: Option<f64>,
}

impl Delta {
    pub fn between(baseline: &Metrics, other: &Metrics) -> Delta {
        let minus = |a: Option<f64>, b: Option<f64>| Some(a? - b?);
        Delta {
            precision: minus(other.precision, baseline.precision),
            recall: minus(other.recall, baseline.recall),
            f1: minus(other.f1, baseline.f1),
            accuracy: minus(other.accuracy, baseline.accuracy),
        }
    }
}

impl Difference {
    pub fn between(baseline: &RunReport, other: &RunReport) -> Difference {
        let deltas = |base: &BTreeMap<String, Metrics>, other: &BTreeMap<String, Metrics>| {
            base.iter()
                .filter_map(|(name, metrics)| {
                    Some((name.clone(), Delta::between(metrics, other.get(name)?)))
                })
                .collect()
        };
        let baseline_correct: BTreeMap<&str, bool> = baseline
            .cases
            .iter()
            .filter_map(|case| Some((case.id.as_str(), case.is_correct()?)))
            .collect();
        let mut fixed = Vec::new();
        let mut broken = Vec::new();
        for case in &other.cases {
            match (baseline_correct.get(case.id.as_str()), case.is_correct()) {
                (Some(false), Some(true)) => fixed.push(case.id.clone()),
                (Some(true), Some(false)) => broken.push(case.id.clone()),
                _ => {}
            }
        }
        Difference {
            baseline: baseline.info.config.clone(),
            config: other.info.config.clone(),
            overall: Delta::between(&baseline.overall, &other.overall),
            by_group: deltas(&baseline.by_group, &other.by_group),
            by_root_cause: deltas(&baseline.by_root_cause, &other.by_root_cause),
            fixed,
            broken,
        }
    }
}

/// Several configurations of one detector side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub dataset: String,
    pub detector: Detector,
    pub model: Option<String>,
    /// In the order given; the first is the baseline of the differences.
    pub configs: Vec<String>,
    pub reports: Vec<RunReport>,
    pub differences: Vec<Difference>,
}

impl Comparison {
    /// `reports` must be non-empty and share dataset and detector.
    pub fn new(reports: Vec<RunReport>) -> Comparison {
        let first = &reports[0];
        let differences = reports[1..]
            .iter()
            .map(|other| Difference::between(first, other))
            .collect();
        Comparison {
            dataset: first.info.dataset.clone(),
            detector: first.info.detector,
            model: first.info.model.clone(),
            configs: reports.iter().map(|r| r.info.config.clone()).collect(),
            differences,
            reports,
        }
    }
}

/// The result of `crane bench`: one configuration's report, or several side by side. Its JSON
/// is the [`RunReport`] itself for one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Report {
    Comparison(Comparison),
    Single(Box<RunReport>),
}

impl Report {
    pub fn from_reports(mut reports: Vec<RunReport>) -> Option<Report> {
        match reports.len() {
            0 => None,
            1 => reports.pop().map(|report| Report::Single(Box::new(report))),
            _ => Some(Report::Comparison(Comparison::new(reports))),
        }
    }

    pub fn reports(&self) -> &[RunReport] {
        match self {
            Report::Single(report) => std::slice::from_ref(report),
            Report::Comparison(comparison) => &comparison.reports,
        }
    }

    /// Records the command line and commit that produced the report, in every configuration.
    pub fn set_provenance(&mut self, command_line: &str, commit: Option<&str>) {
        let reports: &mut [RunReport] = match self {
            Report::Single(report) => std::slice::from_mut(report.as_mut()),
            Report::Comparison(comparison) => &mut comparison.reports,
        };
        for report in reports {
            report.info.command_line = Some(command_line.to_owned());
            report.info.commit = commit.map(str::to_owned);
        }
    }

    pub fn into_reports(self) -> Vec<RunReport> {
        match self {
            Report::Single(report) => vec![*report],
            Report::Comparison(comparison) => comparison.reports,
        }
    }

    pub fn differences(&self) -> &[Difference] {
        match self {
            Report::Single(_) => &[],
            Report::Comparison(comparison) => &comparison.differences,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{case, info};

    #[test]
    fn groups_errors_and_deltas() {
        let base = RunReport::new(
            info("code_only"),
            vec![
                case("a1", "pandas", true, Some(false)),
                case("a2", "pandas", false, Some(false)),
                case("b1x", "numpy", true, Some(true)),
                case("b2", "numpy", false, None),
            ],
        );
        assert_eq!(base.overall.n, 3);
        assert_eq!(base.overall.errors, 1);
        assert_eq!(base.by_group["pandas"].confusion.fn_, 1);
        assert_eq!(base.by_group["pandas"].f1, Some(0.0));
        assert_eq!(base.by_group["numpy"].errors, 1);
        assert_eq!(base.by_root_cause["API misuse"].n, 1);

        let other = RunReport::new(
            info("with_runtime"),
            vec![
                case("a1", "pandas", true, Some(true)),
                case("a2", "pandas", false, Some(false)),
                case("b1x", "numpy", true, Some(false)),
                case("b2", "numpy", false, Some(false)),
            ],
        );
        let difference = Difference::between(&base, &other);
        assert_eq!(difference.fixed, ["a1"]);
        assert_eq!(difference.broken, ["b1x"]);
        assert_eq!(difference.by_group["pandas"].f1, Some(1.0));
        let accuracy = difference.overall.accuracy.unwrap();
        assert!((accuracy - (0.75 - 2.0 / 3.0)).abs() < 1e-12);
    }

    #[test]
    fn single_report_json_has_the_documented_shape() {
        let report = Report::from_reports(vec![RunReport::new(
            info("with_runtime"),
            vec![case("a1", "pandas", true, Some(true))],
        )])
        .unwrap();
        let json = serde_json::to_value(&report).unwrap();
        for key in [
            "dataset",
            "detector",
            "config",
            "overall",
            "by_group",
            "by_root_cause",
            "cases",
            "cost",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        for key in [
            "n",
            "tp",
            "fp",
            "fn",
            "tn",
            "precision",
            "recall",
            "f1",
            "accuracy",
        ] {
            assert!(json["overall"].get(key).is_some(), "missing overall.{key}");
        }
        for key in ["id", "expected", "predicted", "exception"] {
            assert!(json["cases"][0].get(key).is_some(), "missing cases[].{key}");
        }
        let back: Report = serde_json::from_value(json).unwrap();
        assert_eq!(back, report);
    }

    #[test]
    fn comparison_round_trips() {
        let report = Report::from_reports(vec![
            RunReport::new(info("code_only"), vec![case("a", "g", true, Some(false))]),
            RunReport::new(info("with_runtime"), vec![case("a", "g", true, Some(true))]),
        ])
        .unwrap();
        let json = serde_json::to_string(&report).unwrap();
        let back: Report = serde_json::from_str(&json).unwrap();
        assert_eq!(back, report);
        assert_eq!(back.differences()[0].fixed, ["a"]);
    }
}
