//! Errors of the LLM client, each with a hint at the usual cause.

use std::path::PathBuf;
use std::time::Duration;

use crate::answer::AnswerError;
use crate::config::ConfigError;
use crate::model::Provider;
use crate::replay::ReplayError;

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("{provider} needs an API key: set {}", variables.join(" or "))]
    MissingApiKey {
        provider: Provider,
        variables: Vec<String>,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("cannot open the answer cache at {path}: {source}")]
    Cache {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{endpoint} answered HTTP {status} ({attempts} attempt(s)): {body}\nhint: {}", http_hint(*provider, *status))]
    Http {
        provider: Provider,
        endpoint: String,
        status: u16,
        /// The response body, shortened, with the API key removed if the server echoed it.
        body: String,
        attempts: u32,
    },
    #[error("no answer from {endpoint} within {timeout:?} ({attempts} attempt(s))\nhint: raise the LLM timeout (timeout_secs under [llm] in crane.toml, or CRANE_LLM_TIMEOUT; --timeout is the per-cell limit) for slow or local models")]
    Timeout {
        endpoint: String,
        timeout: Duration,
        attempts: u32,
    },
    #[error("cannot reach {endpoint} ({attempts} attempt(s)): {message}\nhint: {}", connect_hint(*provider))]
    Connect {
        provider: Provider,
        endpoint: String,
        message: String,
        attempts: u32,
    },
    #[error("{endpoint} answered HTTP {status} and asked to wait {wait:?} before retrying, longer than the {limit:?} crane waits")]
    RetryAfterTooLong {
        endpoint: String,
        status: u16,
        wait: Duration,
        limit: Duration,
    },
    #[error("malformed response from {endpoint}: {message}\nhint: the server does not speak the {provider} protocol as expected; check the provider prefix and base URL")]
    MalformedResponse {
        provider: Provider,
        endpoint: String,
        message: String,
    },
    #[error("none of the {} answer(s) could be read; first: {}", errors.len(), errors.first().map(ToString::to_string).unwrap_or_default())]
    Unreadable { errors: Vec<AnswerError> },
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error("LLM client error: {0}")]
    Client(String),
}

fn http_hint(provider: Provider, status: u16) -> String {
    let key = provider.key_variables().join(" or ");
    match status {
        401 => format!("the API key was rejected; check {}", if key.is_empty() { "the server's key".to_string() } else { key }),
        403 => "the key is valid but not allowed to use this model or endpoint".to_string(),
        404 => "unknown model or wrong base URL (OpenAI-compatible servers usually end in /v1)".to_string(),
        400 | 422 => "the request was refused; the model may not support structured output (set structured_output = false) or a parameter such as temperature or reasoning_effort".to_string(),
        429 => "rate limit or quota exhausted; lower concurrency or requests_per_minute, or check the account's quota".to_string(),
        500..=599 => "the provider failed; retry later".to_string(),
        _ => "see the response body".to_string(),
    }
}

fn connect_hint(provider: Provider) -> &'static str {
    match provider {
        Provider::Ollama => "is Ollama running (`ollama serve`), and is OLLAMA_HOST right?",
        Provider::OpenAiCompatible => {
            "is the server running at that address, and does the URL end in /v1?"
        }
        _ => "check the network connection and any proxy settings",
    }
}
