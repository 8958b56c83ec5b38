//! Shared helpers of the integration tests.

use std::path::PathBuf;

use crane_bench::{BenchOptions, Detector};
use crane_llm::{LlmConfig, ModelSpec};

/// The JunoBench cases: `$CRANE_JUNOBENCH`, else `shared/junobench/cases` beside the repository.
pub fn junobench_cases() -> PathBuf {
    if let Some(dir) = std::env::var_os("CRANE_JUNOBENCH") {
        return PathBuf::from(dir);
    }
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cases = repo.join("../shared/junobench/cases");
    assert!(
        cases.is_dir(),
        "JunoBench cases not found at {} (set CRANE_JUNOBENCH)",
        cases.display()
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
