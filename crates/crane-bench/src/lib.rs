//! `crane bench`: measure crane's detectors on a dataset.
//!
//! Two dataset formats are recognized by their layout ([`dataset`]): JunoBench case files
//! (offline: recorded code, runtime information and LLM answers) and runnable notebook pairs
//! (live: executed in a fresh kernel up to the target cell). A run judges every case with one
//! detector in one or more configurations and reports precision, recall, F1 and accuracy overall,
//! per group, library and root cause ([`metrics`], [`report`]), diagnosis quality, and cost.
//! Reports are JSON, text, or a Markdown page with SVG charts; runs are resumable through a
//! per-case cache and can be split into shards and merged.

pub mod cache;
pub mod charts;
pub mod dataset;
pub mod judge;
pub mod live;
pub mod merge;
pub mod metrics;
pub mod paper;
pub mod progress;
pub mod render;
pub mod report;
mod run;
pub mod silence;

pub use dataset::{BenchCase, Dataset, DatasetKind};
pub use live::LiveOptions;
pub use merge::{merge, merge_files, MergeError};
pub use metrics::{Confusion, Metrics};
pub use progress::{Progress, Silent};
pub use report::{CaseResult, Comparison, Detector, Report, RunReport, Shard};
pub use run::{
    parse_configs, run, write_outputs, BenchError, BenchOptions, Written, RECORDED_RUNS,
};
