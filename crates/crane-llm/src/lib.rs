//! crane's LLM detection client (the CRANE-LLM method): deterministic prompts in the paper's
//! layout and configurations, a structured answer schema read with repair of near-JSON,
//! providers (OpenAI, OpenAI-compatible servers, Ollama, Gemini, Anthropic) through `genai`,
//! retries that honour the providers' hints, concurrency and rate limits, an on-disk answer
//! cache, token/latency/cost accounting, majority voting over repeated runs, and a replay
//! provider answering JunoBench cases with the answers recorded by the paper's authors.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use crane_llm::{Client, LlmConfig, LlmSettings, PromptInput};
//! let config = LlmConfig::load(LlmSettings { model: Some("ollama:qwen2.5-coder:32b".into()), ..Default::default() }, None)?;
//! let prompt = config.prompt.build(&PromptInput {
//!     executed_cells: &["import pandas as pd".to_string()],
//!     target_cell: "pd.read_csv('missing.csv')",
//!     runtime: Some(&Default::default()),
//!     api_docs: None,
//! })?;
//! let judgement = Client::new(config.clone())?.ask(&prompt, config.runs).await?;
//! println!("crash: {} ({} tokens)", judgement.verdict.crash, judgement.usage.total_tokens());
//! # Ok(()) }
//! ```

mod answer;
mod cache;
mod client;
mod config;
mod error;
mod live;
mod model;
mod prompt;
mod replay;
mod retry;
mod secrets;
mod throttle;
mod usage;

#[cfg(feature = "test-server")]
pub mod test_server;

pub use answer::{parse_answer, Answer, AnswerError, AnswerErrorKind, AnswerSchema, Repair};
pub use cache::{Cache, CacheEntry};
pub use client::{
    describe_request, CallRecord, Client, ConnectionReport, Judgement, RetryRecord, Totals, Verdict,
};
pub use config::{
    find_crane_toml, ApiKey, ConfigError, LlmConfig, LlmSettings, ReasoningEffort,
    DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT, ENVIRONMENT_VARIABLES,
};
pub use crane_runtime::{Redact, Sections};
pub use error::LlmError;
pub use model::{ModelSpec, ModelSpecError, Provider, RemoteModel, ReplayModel};
pub use prompt::{
    ApiDoc, ParsePromptConfigError, Prompt, PromptBuilder, PromptConfig, PromptError, PromptInput,
    PromptStyle, DEFAULT_API_DOCS_BUDGET,
};
pub use replay::{ReplayError, ReplayProvider};
pub use retry::RetryPolicy;
pub use secrets::{
    url_credentials, with_url_credentials, without_url_credentials, Secrets, REDACTED,
};
pub use usage::{estimate_tokens, Price, PriceTable, PriceTableError, Usage};
