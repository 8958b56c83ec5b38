//! The report of one check as `crane check --format json` writes it (documented in
//! docs/cli.md; fields are only ever added), and as the other output formats read it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crane_detect::suppress::Silenced;
use crane_detect::{Finding, Verdict};
use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::{DetectorFailure, LlmUse, Target};

#[derive(Debug, Serialize)]
pub struct CheckReport {
    pub notebook: Option<PathBuf>,
    pub target_cell: Target,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// Rule findings silenced (by a `# crane:` comment, `--ignore` or the configuration): not
    /// crash predictions, listed so that nothing disappears without trace.
    pub silenced: Vec<Silenced>,
    /// With `--explain-silence`: where the rules' interpreter gave up, by reason.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gave_up: Option<BTreeMap<&'static str, usize>>,
    pub runtime_info: RuntimeInfo,
    pub timings_ms: ReportTimings,
    pub llm: Option<LlmUse>,
    /// Detectors that failed; the verdict comes from the others.
    pub detector_failures: Vec<DetectorFailure>,
}

/// Where a check's time went, in milliseconds.
#[derive(Debug, Serialize)]
pub struct ReportTimings {
    pub execute_prior: u64,
    pub extract: u64,
    pub detect: u64,
    /// Everything, including starting the kernel and executing earlier cells.
    pub total: u64,
}
