//! Shared helpers of the integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

use crane_bench::{BenchOptions, Detector};
use crane_llm::{LlmConfig, ModelSpec};

/// The JunoBench cases (`crane_runtime::junobench::default_cases_dir`), which must exist.
pub fn junobench_cases() -> PathBuf {
    let cases = crane_runtime::junobench::default_cases_dir();
    assert!(
        cases.is_dir(),
        "JunoBench cases not found at {} (set {})",
        cases.display(),
        crane_runtime::junobench::CASES_DIR_VAR
    );
    cases
}

pub fn replay(model: &str) -> LlmConfig {
    let mut config = LlmConfig::new(ModelSpec::parse(&format!("replay:{model}")).unwrap());
    config.cache_dir = None;
    config
}

pub fn llm_options(model: &str, configs: &str) -> BenchOptions {
    let mut options = BenchOptions::new(junobench_cases(), Detector::Llm);
    options.llm = Some(replay(model));
    options.configs = crane_bench::parse_configs(configs).unwrap();
    options
}
