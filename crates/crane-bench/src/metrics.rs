//! Confusion counts and the detection metrics derived from them.
//!
//! "Positive" means "the cell crashes". A ratio whose denominator is zero is undefined and is
//! reported as `None` (JSON `null`, "n/a" in text): precision with no crash predicted, recall with
//! no crashing case, F1 when there is neither a predicted nor an actual crash, accuracy of an empty
//! set. Undefined is never silently turned into 0 or 1, so a group of two fixed cases does not
//! show a perfect or a zero F1.

use serde::{Deserialize, Serialize};

/// Counts of a binary crash/no-crash classification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Confusion {
    pub tp: u64,
    pub fp: u64,
    #[serde(rename = "fn")]
    pub fn_: u64,
    pub tn: u64,
}

impl Confusion {
    pub fn record(&mut self, expected: bool, predicted: bool) {
        match (expected, predicted) {
            (true, true) => self.tp += 1,
            (false, true) => self.fp += 1,
            (true, false) => self.fn_ += 1,
            (false, false) => self.tn += 1,
        }
    }

    pub fn n(&self) -> u64 {
        self.tp + self.fp + self.fn_ + self.tn
    }

    /// TP / (TP + FP).
    pub fn precision(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fp)
    }

    /// TP / (TP + FN).
    pub fn recall(&self) -> Option<f64> {
        ratio(self.tp, self.tp + self.fn_)
    }

    /// 2·TP / (2·TP + FP + FN): the harmonic mean of precision and recall, and 0 (not undefined)
    /// when one of them is 0 and the other undefined, e.g. no crash predicted among crashing cells.
    pub fn f1(&self) -> Option<f64> {
        ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn_)
    }

    /// (TP + TN) / n.
    pub fn accuracy(&self) -> Option<f64> {
        ratio(self.tp + self.tn, self.n())
    }

    pub fn metrics(&self, errors: u64) -> Metrics {
        Metrics {
            n: self.n(),
            confusion: *self,
            precision: self.precision(),
            recall: self.recall(),
            f1: self.f1(),
            accuracy: self.accuracy(),
            errors,
        }
    }
}

impl std::ops::AddAssign for Confusion {
    fn add_assign(&mut self, other: Confusion) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
        self.tn += other.tn;
    }
}

fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator != 0).then(|| numerator as f64 / denominator as f64)
}

/// The metrics of one set of cases. `n` counts the judged cases; `errors` the cases the detector
/// could not judge (they are in no cell of the confusion matrix).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub n: u64,
    #[serde(flatten)]
    pub confusion: Confusion,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub f1: Option<f64>,
    pub accuracy: Option<f64>,
    #[serde(default)]
    pub errors: u64,
}

/// `metric` to 3 decimals, or `n/a` when undefined.
pub fn format_ratio(metric: Option<f64>) -> String {
    metric.map_or_else(|| "n/a".to_owned(), |value| format!("{value:.3}"))
}

/// `after - before` to 3 decimals with a sign, or `n/a`.
pub fn format_delta(delta: Option<f64>) -> String {
    delta.map_or_else(|| "n/a".to_owned(), |value| format!("{value:+.3}"))
}

/// Nearest-rank percentile (`p` in `(0, 100]`) of unsorted values; `None` for no values.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confusion(pairs: &[(bool, bool)]) -> Confusion {
        let mut confusion = Confusion::default();
        for &(expected, predicted) in pairs {
            confusion.record(expected, predicted);
        }
        confusion
    }

    #[test]
    fn counts_each_cell_of_the_matrix() {
        let c = confusion(&[
            (true, true),
            (true, true),
            (true, false),
            (false, true),
            (false, false),
            (false, false),
            (false, false),
        ]);
        assert_eq!((c.tp, c.fp, c.fn_, c.tn, c.n()), (2, 1, 1, 3, 7));
        assert_eq!(c.precision(), Some(2.0 / 3.0));
        assert_eq!(c.recall(), Some(2.0 / 3.0));
        assert_eq!(c.f1(), Some(2.0 / 3.0));
        assert_eq!(c.accuracy(), Some(5.0 / 7.0));
    }

    #[test]
    fn f1_is_the_harmonic_mean_of_precision_and_recall() {
        let c = confusion(&[(true, true), (true, false), (true, false), (false, false)]);
        let (p, r) = (c.precision().unwrap(), c.recall().unwrap());
        assert_eq!((p, r), (1.0, 1.0 / 3.0));
        assert!((c.f1().unwrap() - 2.0 * p * r / (p + r)).abs() < 1e-12);
        assert_eq!(c.accuracy(), Some(0.5));
    }

    #[test]
    fn zero_denominators_are_undefined_not_zero() {
        let only_fixed_and_silent = confusion(&[(false, false), (false, false)]);
        assert_eq!(only_fixed_and_silent.precision(), None);
        assert_eq!(only_fixed_and_silent.recall(), None);
        assert_eq!(only_fixed_and_silent.f1(), None);
        assert_eq!(only_fixed_and_silent.accuracy(), Some(1.0));

        let silent_on_crashes = confusion(&[(true, false), (true, false)]);
        assert_eq!(silent_on_crashes.precision(), None);
        assert_eq!(silent_on_crashes.recall(), Some(0.0));
        assert_eq!(silent_on_crashes.f1(), Some(0.0));

        let empty = Confusion::default();
        assert_eq!(empty.accuracy(), None);
        let json = serde_json::to_value(empty.metrics(0)).unwrap();
        assert!(json["precision"].is_null() && json["accuracy"].is_null());
        assert_eq!(json["fn"], 0);
    }

    #[test]
    fn metrics_round_trip_through_json() {
        let metrics = confusion(&[(true, true), (false, true), (true, false)]).metrics(2);
        let json = serde_json::to_string(&metrics).unwrap();
        assert!(json.contains(r#""tp":1,"fp":1,"fn":1,"tn":0"#), "{json}");
        assert_eq!(serde_json::from_str::<Metrics>(&json).unwrap(), metrics);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let values = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(percentile(&values, 50.0), Some(3.0));
        assert_eq!(percentile(&values, 95.0), Some(5.0));
        assert_eq!(percentile(&values, 20.0), Some(1.0));
        assert_eq!(percentile(&[], 50.0), None);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 95.0), Some(95.0));
    }

    #[test]
    fn formatting() {
        assert_eq!(format_ratio(Some(0.7794)), "0.779");
        assert_eq!(format_ratio(None), "n/a");
        assert_eq!(format_delta(Some(0.032)), "+0.032");
        assert_eq!(format_delta(Some(-0.01)), "-0.010");
    }
}
