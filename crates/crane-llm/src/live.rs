//! Calls to providers over HTTP, through the `genai` crate: OpenAI's chat-completions protocol
//! (OpenAI, Ollama's and any other OpenAI-compatible endpoint), Gemini's `generateContent` and
//! Anthropic's Messages API. Each call targets an explicit endpoint, key and adapter, so
//! nothing is guessed from the model name. genai reports a failed call's HTTP status and
//! headers, which the retry loop reads (`Retry-After`, `retry-after-ms`, `x-should-retry`).

use std::time::Duration;

use genai::adapter::AdapterKind;
use genai::chat::{ChatMessage, ChatOptions, ChatRequest, JsonSpec};
use genai::resolver::{AuthData, Endpoint};
use genai::{ModelIden, ServiceTarget, WebConfig};

use crate::config::{ApiKey, LlmConfig, ReasoningEffort};
use crate::error::LlmError;
use crate::model::{Provider, RemoteModel};
use crate::prompt::Prompt;
use crate::retry::{is_retriable_status, RetryHints};
use crate::secrets::{without_url_credentials, Secrets};
use crate::usage::Usage;

/// What one successful call returned.
#[derive(Debug, Clone)]
pub(crate) struct Completion {
    /// The answer text ("" when the model returned none).
    pub raw: String,
    /// The provider's token counts, when it reported them.
    pub usage: Option<Usage>,
}

/// Why one attempt failed.
#[derive(Debug, Clone)]
pub(crate) enum AttemptError {
    Status {
        status: u16,
        body: String,
        hints: RetryHints,
    },
    Timeout,
    Connect(String),
    Malformed(String),
    Other(String),
}

impl AttemptError {
    pub fn is_retriable(&self) -> bool {
        match self {
            AttemptError::Status { status, hints, .. } => hints
                .should_retry
                .unwrap_or_else(|| is_retriable_status(*status)),
            AttemptError::Timeout | AttemptError::Connect(_) => true,
            AttemptError::Malformed(_) | AttemptError::Other(_) => false,
        }
    }

    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            AttemptError::Status { hints, .. } => hints.retry_after,
            _ => None,
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            AttemptError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// One line for the call's retry record.
    pub fn summary(&self) -> String {
        match self {
            AttemptError::Status { status, body, .. } => {
                format!("HTTP {status}: {}", shorten(body, 200))
            }
            AttemptError::Timeout => "timed out".to_string(),
            AttemptError::Connect(message) => format!("connection failed: {message}"),
            AttemptError::Malformed(message) => format!("malformed response: {message}"),
            AttemptError::Other(message) => message.clone(),
        }
    }
}

pub(crate) struct LiveBackend {
    client: genai::Client,
    remote: RemoteModel,
    endpoint: String,
    /// `endpoint` without `user:password@`: what messages and reports show.
    shown_endpoint: String,
    /// The key and the endpoint's URL credentials, scrubbed from every message.
    secrets: Secrets,
    adapter: AdapterKind,
    key: Option<ApiKey>,
    options: ChatOptions,
    structured_output: bool,
}

impl LiveBackend {
    pub fn new(remote: &RemoteModel, config: &LlmConfig) -> Result<LiveBackend, LlmError> {
        let endpoint = remote.endpoint().ok_or_else(|| {
            LlmError::Config(crate::config::ConfigError::MissingBaseUrl {
                model: remote.name.clone(),
            })
        })?;
        if remote.provider.requires_key() && config.api_key.is_none() {
            return Err(LlmError::MissingApiKey {
                provider: remote.provider,
                variables: config.api_key_variables.clone(),
            });
        }
        let web_config = WebConfig::default()
            .with_timeout(config.timeout)
            .with_connect_timeout(config.timeout.min(Duration::from_secs(30)));
        let http = web_config
            .apply_to_builder(reqwest::Client::builder())
            .redirect(same_origin_redirects())
            .build()
            .map_err(|err| LlmError::Client(err.to_string()))?;
        let client = genai::Client::builder()
            .with_reqwest(http)
            .build()
            .map_err(|err| LlmError::Client(err.to_string()))?;
        let adapter = match remote.provider {
            Provider::OpenAi | Provider::OpenAiCompatible | Provider::Ollama => AdapterKind::OpenAI,
            Provider::Gemini => AdapterKind::Gemini,
            Provider::Anthropic => AdapterKind::Anthropic,
        };
        let mut options = ChatOptions::default().with_capture_usage(true);
        if let Some(effort) = config.reasoning_effort {
            options = options.with_reasoning_effort(match effort {
                ReasoningEffort::None => genai::chat::ReasoningEffort::Zero,
                ReasoningEffort::Minimal => genai::chat::ReasoningEffort::Minimal,
                ReasoningEffort::Low => genai::chat::ReasoningEffort::Low,
                ReasoningEffort::Medium => genai::chat::ReasoningEffort::Medium,
                ReasoningEffort::High => genai::chat::ReasoningEffort::High,
            });
        }
        if let Some(temperature) = config.temperature {
            options = options.with_temperature(temperature);
        }
        if let Some(max_tokens) = config.max_output_tokens {
            options = options.with_max_tokens(max_tokens);
        }
        let shown_endpoint = without_url_credentials(&endpoint);
        Ok(LiveBackend {
            client,
            remote: remote.clone(),
            endpoint,
            shown_endpoint,
            secrets: Secrets::of(config),
            adapter,
            key: config.api_key.clone(),
            options,
            structured_output: config.structured_output,
        })
    }

    /// The endpoint as messages show it: without credentials.
    pub fn shown_endpoint(&self) -> &str {
        &self.shown_endpoint
    }

    pub fn provider(&self) -> Provider {
        self.remote.provider
    }

    pub fn structured_output(&self) -> bool {
        self.structured_output
    }

    /// `text` without the key or the endpoint's URL credentials, in any form (servers and
    /// HTTP errors sometimes echo them).
    pub fn scrub(&self, text: &str) -> String {
        self.secrets.scrub(text)
    }

    pub async fn complete(&self, prompt: &Prompt) -> Result<Completion, AttemptError> {
        // genai's OpenAI adapter insists on a key; local servers ignore this placeholder.
        let key = self
            .key
            .as_ref()
            .map_or("no-key", |key| key.expose())
            .to_string();
        let target = ServiceTarget {
            endpoint: Endpoint::from_owned(self.endpoint.clone()),
            auth: AuthData::from_single(key),
            model: ModelIden::new(self.adapter, self.remote.name.as_str()),
        };
        let request = ChatRequest::new(vec![
            ChatMessage::system(prompt.system.as_str()),
            ChatMessage::user(prompt.user.as_str()),
        ]);
        let options = if self.structured_output {
            self.options.clone().with_response_format(JsonSpec::new(
                prompt.schema.name(),
                prompt.schema.json_schema(),
            ))
        } else {
            self.options.clone()
        };
        let response = self
            .client
            .exec_chat(target, request, Some(&options))
            .await
            .map_err(|err| self.attempt_error(err))?;
        let usage = match (
            response.usage.prompt_tokens,
            response.usage.completion_tokens,
        ) {
            (None, None) => None,
            (input, output) => Some(Usage {
                input_tokens: input.unwrap_or(0).max(0) as u64,
                output_tokens: output.unwrap_or(0).max(0) as u64,
                estimated: false,
            }),
        };
        let raw = response.into_texts().concat();
        Ok(Completion { raw, usage })
    }

    fn attempt_error(&self, err: genai::Error) -> AttemptError {
        if let Some(status) = err.status() {
            let headers = err.headers();
            let header = |name: &str| {
                headers
                    .and_then(|headers| headers.get(name))
                    .and_then(|value| value.to_str().ok())
                    .map(str::to_string)
            };
            let body = match &err {
                genai::Error::HttpError { body, .. } => body.clone(),
                genai::Error::WebModelCall { webc_error, .. }
                | genai::Error::WebAdapterCall { webc_error, .. } => match webc_error {
                    genai::webc::Error::ResponseFailedStatus { body, .. } => body.clone(),
                    other => other.to_string(),
                },
                other => other.to_string(),
            };
            let hints = RetryHints::read(header, &body);
            return AttemptError::Status {
                status: status.as_u16(),
                body: self.scrub(&body),
                hints,
            };
        }
        match &err {
            genai::Error::WebModelCall { webc_error, .. }
            | genai::Error::WebAdapterCall { webc_error, .. } => match webc_error {
                genai::webc::Error::Reqwest(reqwest_error) if reqwest_error.is_timeout() => {
                    AttemptError::Timeout
                }
                genai::webc::Error::Reqwest(reqwest_error) if reqwest_error.is_connect() => {
                    AttemptError::Connect(self.scrub(&error_chain(reqwest_error)))
                }
                genai::webc::Error::Reqwest(reqwest_error) => {
                    AttemptError::Connect(self.scrub(&error_chain(reqwest_error)))
                }
                genai::webc::Error::ResponseFailedNotJson { content_type, body } => {
                    AttemptError::Malformed(format!(
                        "content type `{content_type}` instead of JSON: {}",
                        shorten(&self.scrub(body), 200)
                    ))
                }
                genai::webc::Error::ResponseFailedInvalidJson { body, cause } => {
                    AttemptError::Malformed(format!(
                        "invalid JSON ({cause}): {}",
                        shorten(&self.scrub(body), 200)
                    ))
                }
                other => AttemptError::Other(self.scrub(&other.to_string())),
            },
            genai::Error::ChatResponseGeneration { cause, .. } => {
                AttemptError::Malformed(self.scrub(cause))
            }
            genai::Error::NoChatResponse { .. } => {
                AttemptError::Malformed("the response holds no answer".to_string())
            }
            other => AttemptError::Other(self.scrub(&other.to_string())),
        }
    }
}

/// Redirects are followed only within the endpoint's origin: a `307`/`308` re-sends the
/// prompt, which must not reach a host the user did not configure.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if same_origin && attempt.previous().len() < 5 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// An error with its sources ("error sending request: connection refused").
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(crate) fn shorten(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
