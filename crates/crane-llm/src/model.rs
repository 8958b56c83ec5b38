//! Model strings (`openai:gpt-5`, `ollama:qwen2.5-coder:32b`,
//! `openai-compat:<model>@http://host:port/v1`, `replay:gpt_5`, ...): which provider answers,
//! with which model, at which endpoint.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::secrets::without_url_credentials;

/// A provider reached over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI's API (chat completions; GPT-5 family with reasoning effort, and chat models).
    OpenAi,
    /// Any server speaking OpenAI's chat-completions protocol (vLLM, llama.cpp server,
    /// LM Studio, OpenRouter, ...).
    OpenAiCompatible,
    /// A local Ollama, through its OpenAI-compatible endpoint.
    Ollama,
    /// Google Gemini (native `generateContent` protocol).
    Gemini,
    /// Anthropic (Messages API).
    Anthropic,
}

impl Provider {
    /// The prefix of model strings naming this provider.
    pub fn prefix(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::OpenAiCompatible => "openai-compat",
            Provider::Ollama => "ollama",
            Provider::Gemini => "gemini",
            Provider::Anthropic => "anthropic",
        }
    }

    /// The endpoint used when neither the model string nor the configuration names one.
    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Provider::OpenAi => Some("https://api.openai.com/v1/"),
            Provider::OpenAiCompatible => None,
            Provider::Ollama => Some("http://localhost:11434/v1/"),
            Provider::Gemini => Some("https://generativelanguage.googleapis.com/v1beta/"),
            Provider::Anthropic => Some("https://api.anthropic.com/v1/"),
        }
    }

    /// Environment variables holding the API key, in the order they are tried.
    pub fn key_variables(self) -> &'static [&'static str] {
        match self {
            Provider::OpenAi => &["OPENAI_API_KEY"],
            // Never OPENAI_API_KEY: that key must not be sent to a third-party server by accident.
            Provider::OpenAiCompatible => &["CRANE_LLM_API_KEY"],
            Provider::Ollama => &[],
            Provider::Gemini => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
            Provider::Anthropic => &["ANTHROPIC_API_KEY"],
        }
    }

    /// Whether a call without an API key is refused before it is sent.
    pub fn requires_key(self) -> bool {
        matches!(
            self,
            Provider::OpenAi | Provider::Gemini | Provider::Anthropic
        )
    }

    /// Whether this provider runs on the user's machine (no price, no data leaving it).
    pub fn is_local(self) -> bool {
        matches!(self, Provider::Ollama)
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.prefix())
    }
}

/// The models whose answers the JunoBench case files record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ReplayModel {
    #[serde(rename = "gpt_5")]
    Gpt5,
    #[serde(rename = "gemini_2_5_flash")]
    Gemini25Flash,
    #[serde(rename = "Qwen_2_5_32B_Instruct")]
    Qwen25_32BInstruct,
}

impl ReplayModel {
    pub const ALL: [ReplayModel; 3] = [
        ReplayModel::Gpt5,
        ReplayModel::Gemini25Flash,
        ReplayModel::Qwen25_32BInstruct,
    ];

    /// The key of this model in a case file's `recorded_llm_outputs`.
    pub fn case_key(self) -> &'static str {
        match self {
            ReplayModel::Gpt5 => "gpt_5",
            ReplayModel::Gemini25Flash => "gemini_2_5_flash",
            ReplayModel::Qwen25_32BInstruct => "Qwen_2_5_32B_Instruct",
        }
    }
}

impl fmt::Display for ReplayModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.case_key())
    }
}

/// A remote (or local-server) model: provider, model name and an optional endpoint override.
/// Its `Debug` shows the endpoint without credentials.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct RemoteModel {
    pub provider: Provider,
    /// The provider's model name, e.g. `gpt-5`, `qwen2.5-coder:32b`.
    pub name: String,
    /// Endpoint override (from `@url` for `openai-compat`, or the configuration); the
    /// provider's default endpoint when absent.
    pub base_url: Option<String>,
}

impl fmt::Debug for RemoteModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteModel")
            .field("provider", &self.provider)
            .field("name", &self.name)
            .field(
                "base_url",
                &self.base_url.as_deref().map(without_url_credentials),
            )
            .finish()
    }
}

impl RemoteModel {
    /// The endpoint requests go to, normalised to end with `/`.
    pub fn endpoint(&self) -> Option<String> {
        let url = self
            .base_url
            .as_deref()
            .or(self.provider.default_base_url())?;
        Some(if url.ends_with('/') {
            url.to_string()
        } else {
            format!("{url}/")
        })
    }
}

/// What answers: a provider's model, or the answers recorded in JunoBench case files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ModelSpec {
    Remote(RemoteModel),
    Replay(ReplayModel),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelSpecError {
    #[error("model `{0}` names no provider; write it as `provider:model`, e.g. `openai:gpt-5`, `gemini:gemini-2.5-flash`, `anthropic:claude-sonnet-4-5`, `ollama:qwen2.5-coder:32b`, `openai-compat:<model>@http://host:port/v1` or `replay:gpt_5`")]
    MissingProvider(String),
    #[error(
        "unknown provider `{0}`; known: openai, openai-compat, ollama, gemini, anthropic, replay"
    )]
    UnknownProvider(String),
    #[error("model string `{0}` has an empty model name")]
    EmptyModel(String),
    #[error("unknown replay model `{0}`; recorded answers exist for gpt_5, gemini_2_5_flash and Qwen_2_5_32B_Instruct")]
    UnknownReplayModel(String),
    #[error("`{url}` is not an http(s) URL (in model string `{spec}`)")]
    BadBaseUrl { spec: String, url: String },
    #[error("`@url` is only accepted for `openai-compat` models (in `{0}`); use the `base_url` setting for other providers")]
    UnexpectedBaseUrl(String),
}

impl ModelSpec {
    /// Parses `provider:model`; for `openai-compat` the model may be followed by `@<base url>`.
    /// Everything after the first `:` is the model name, so `ollama:qwen2.5-coder:32b` works.
    /// Errors quote the string without its URL's credentials.
    pub fn parse(spec: &str) -> Result<ModelSpec, ModelSpecError> {
        let spec = spec.trim();
        let shown = || without_url_credentials(spec);
        let (prefix, rest) = spec
            .split_once(':')
            .ok_or_else(|| ModelSpecError::MissingProvider(shown()))?;
        let is_compat = prefix.eq_ignore_ascii_case("openai-compat");
        let at = rest
            .find("@http://")
            .or_else(|| rest.find("@https://"))
            // An `openai-compat` endpoint without a scheme is a mistake worth naming.
            .or_else(|| is_compat.then(|| rest.rfind('@')).flatten());
        let (name, base_url) = match at {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        if name.is_empty() {
            return Err(ModelSpecError::EmptyModel(shown()));
        }
        let provider = match prefix.to_ascii_lowercase().as_str() {
            "replay" => {
                return ReplayModel::ALL
                    .into_iter()
                    .find(|m| m.case_key().eq_ignore_ascii_case(name))
                    .map(ModelSpec::Replay)
                    .ok_or_else(|| ModelSpecError::UnknownReplayModel(name.to_string()));
            }
            "openai" => Provider::OpenAi,
            "openai-compat" | "openai_compat" => Provider::OpenAiCompatible,
            "ollama" => Provider::Ollama,
            "gemini" | "google" => Provider::Gemini,
            "anthropic" | "claude" => Provider::Anthropic,
            other => return Err(ModelSpecError::UnknownProvider(other.to_string())),
        };
        if base_url.is_some() && provider != Provider::OpenAiCompatible {
            return Err(ModelSpecError::UnexpectedBaseUrl(shown()));
        }
        if let Some(url) = base_url {
            validate_base_url(spec, url)?;
        }
        Ok(ModelSpec::Remote(RemoteModel {
            provider,
            name: name.to_string(),
            base_url: base_url.map(str::to_string),
        }))
    }

    pub fn as_remote(&self) -> Option<&RemoteModel> {
        match self {
            ModelSpec::Remote(remote) => Some(remote),
            ModelSpec::Replay(_) => None,
        }
    }

    /// The model's name as its provider knows it.
    pub fn model_name(&self) -> &str {
        match self {
            ModelSpec::Remote(remote) => &remote.name,
            ModelSpec::Replay(model) => model.case_key(),
        }
    }
}

pub(crate) fn validate_base_url(spec: &str, url: &str) -> Result<(), ModelSpecError> {
    let valid = ["http://", "https://"]
        .iter()
        .any(|scheme| url.len() > scheme.len() && url[..scheme.len()].eq_ignore_ascii_case(scheme));
    if valid {
        Ok(())
    } else {
        Err(ModelSpecError::BadBaseUrl {
            spec: without_url_credentials(spec),
            url: without_url_credentials(url),
        })
    }
}

impl FromStr for ModelSpec {
    type Err = ModelSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ModelSpec::parse(s)
    }
}

/// The canonical model string; parsing it gives the same spec back, except that credentials in
/// an endpoint URL (`http://user:KEY@host/v1`) are never shown.
impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::Replay(model) => write!(f, "replay:{model}"),
            ModelSpec::Remote(RemoteModel {
                provider: Provider::OpenAiCompatible,
                name,
                base_url: Some(url),
            }) => write!(f, "openai-compat:{name}@{}", without_url_credentials(url)),
            ModelSpec::Remote(remote) => write!(f, "{}:{}", remote.provider, remote.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn remote(spec: &str) -> RemoteModel {
        ModelSpec::parse(spec).unwrap().as_remote().unwrap().clone()
    }

    #[test]
    fn parses_every_documented_form() {
        assert_eq!(remote("openai:gpt-5").provider, Provider::OpenAi);
        assert_eq!(remote("openai:gpt-5").name, "gpt-5");
        assert_eq!(remote("gemini:gemini-2.5-flash").provider, Provider::Gemini);
        assert_eq!(
            remote("anthropic:claude-sonnet-4-5").provider,
            Provider::Anthropic
        );
        let ollama = remote("ollama:qwen2.5-coder:32b");
        assert_eq!(ollama.provider, Provider::Ollama);
        assert_eq!(ollama.name, "qwen2.5-coder:32b");
        assert_eq!(
            ollama.endpoint().as_deref(),
            Some("http://localhost:11434/v1/")
        );
        let compat = remote("openai-compat:qwen2.5-coder:32b@http://127.0.0.1:8080/v1");
        assert_eq!(compat.provider, Provider::OpenAiCompatible);
        assert_eq!(compat.name, "qwen2.5-coder:32b");
        assert_eq!(
            compat.endpoint().as_deref(),
            Some("http://127.0.0.1:8080/v1/")
        );
        assert_eq!(
            ModelSpec::parse("replay:gpt_5").unwrap(),
            ModelSpec::Replay(ReplayModel::Gpt5)
        );
        assert_eq!(
            ModelSpec::parse("replay:Qwen_2_5_32B_Instruct").unwrap(),
            ModelSpec::Replay(ReplayModel::Qwen25_32BInstruct)
        );
    }

    #[test]
    fn display_round_trips() {
        for spec in [
            "openai:gpt-5",
            "gemini:gemini-2.5-flash",
            "anthropic:claude-sonnet-4-5",
            "ollama:qwen2.5-coder:32b",
            "openai-compat:m@https://openrouter.ai/api/v1",
            "openai-compat:local-model",
            "replay:gemini_2_5_flash",
        ] {
            assert_eq!(ModelSpec::parse(spec).unwrap().to_string(), spec);
        }
    }

    #[test]
    fn rejects_malformed_strings() {
        assert!(matches!(
            ModelSpec::parse("gpt-5"),
            Err(ModelSpecError::MissingProvider(_))
        ));
        assert!(matches!(
            ModelSpec::parse("mistral:large"),
            Err(ModelSpecError::UnknownProvider(_))
        ));
        assert!(matches!(
            ModelSpec::parse("openai:"),
            Err(ModelSpecError::EmptyModel(_))
        ));
        assert!(matches!(
            ModelSpec::parse("replay:gpt_4"),
            Err(ModelSpecError::UnknownReplayModel(_))
        ));
        assert!(matches!(
            ModelSpec::parse("openai:gpt-5@http://x/v1"),
            Err(ModelSpecError::UnexpectedBaseUrl(_))
        ));
        assert!(matches!(
            ModelSpec::parse("openai-compat:m@https://"),
            Err(ModelSpecError::BadBaseUrl { .. })
        ));
        assert!(matches!(
            ModelSpec::parse("openai-compat:m@localhost:8000/v1"),
            Err(ModelSpecError::BadBaseUrl { .. })
        ));
    }
}
