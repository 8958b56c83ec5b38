//! Configuration of the LLM detector, from command-line flags, environment variables and the
//! `[llm]` table of `crane.toml`. Precedence, highest first: flags, environment, `crane.toml`,
//! built-in defaults. API keys come only from environment variables (never from `crane.toml`,
//! which may be committed): the provider's usual variable, or the one `api_key_env` names.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use crane_runtime::Redact;
use serde::{Deserialize, Serialize};

use crate::cache::Cache;
use crate::model::{validate_base_url, ModelSpec, ModelSpecError, Provider};
use crate::prompt::{PromptBuilder, PromptConfig, PromptStyle, DEFAULT_API_DOCS_BUDGET};
use crate::retry::RetryPolicy;
use crate::usage::{Price, PriceTable};

/// How hard a reasoning model thinks before answering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No reasoning, where the model allows it.
    None,
    /// GPT-5's lowest effort.
    Minimal,
    Low,
    Medium,
    High,
}

impl FromStr for ReasoningEffort {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ReasoningEffort::None),
            "minimal" => Ok(ReasoningEffort::Minimal),
            "low" => Ok(ReasoningEffort::Low),
            "medium" => Ok(ReasoningEffort::Medium),
            "high" => Ok(ReasoningEffort::High),
            _ => Err(ConfigError::Invalid {
                setting: "reasoning_effort",
                value: text.to_string(),
                expected: "none, minimal, low, medium or high",
            }),
        }
    }
}

impl fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        })
    }
}

/// An API key. Its `Debug` never shows the key, and nothing in this crate prints, logs or
/// caches it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// One layer of settings (flags, environment, or `crane.toml`); unset fields fall through to
/// the next layer. This is also the `[llm]` table of `crane.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSettings {
    /// Model string, e.g. `openai:gpt-5`.
    pub model: Option<String>,
    /// Endpoint override for the provider.
    pub base_url: Option<String>,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u32>,
    /// Send the answer's JSON schema to providers with structured output (default true).
    pub structured_output: Option<bool>,
    pub timeout_secs: Option<f64>,
    pub max_retries: Option<u32>,
    /// Requests in flight at once.
    pub concurrency: Option<usize>,
    pub requests_per_minute: Option<u32>,
    /// Answers per question, decided by majority.
    pub runs: Option<u32>,
    /// Use the answer cache (default true).
    pub cache: Option<bool>,
    pub cache_dir: Option<PathBuf>,
    /// Prompt configuration: `code_only`, `with_runtime`, `with_runtime-S`, `with_api_docs`, ...
    pub prompt: Option<PromptConfig>,
    /// Prompt wording: `crane` or `paper`.
    pub style: Option<PromptStyle>,
    /// What data values may appear in a prompt: `none`, `strings` or `values`.
    pub redact: Option<Redact>,
    /// Token budget of the runtime-information section.
    pub runtime_budget: Option<usize>,
    /// Token budget of the API-documentation section.
    pub api_docs_budget: Option<usize>,
    /// Price overrides, keyed `provider:model`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub prices: BTreeMap<String, Price>,
}

/// Environment variables read as settings, with the setting each one sets (a later variable
/// wins over an earlier one for the same setting).
pub const ENVIRONMENT_VARIABLES: &[(&str, &str)] = &[
    ("CRANE_LLM", "model"),
    ("CRANE_LLM_MODEL", "model"),
    ("CRANE_LLM_BASE_URL", "base_url"),
    ("CRANE_LLM_API_KEY_ENV", "api_key_env"),
    ("CRANE_LLM_REASONING_EFFORT", "reasoning_effort"),
    ("CRANE_LLM_TEMPERATURE", "temperature"),
    ("CRANE_LLM_MAX_OUTPUT_TOKENS", "max_output_tokens"),
    ("CRANE_LLM_STRUCTURED_OUTPUT", "structured_output"),
    ("CRANE_LLM_TIMEOUT", "timeout_secs"),
    ("CRANE_LLM_MAX_RETRIES", "max_retries"),
    ("CRANE_LLM_CONCURRENCY", "concurrency"),
    ("CRANE_LLM_RPM", "requests_per_minute"),
    ("CRANE_LLM_RUNS", "runs"),
    ("CRANE_LLM_CACHE", "cache"),
    ("CRANE_LLM_CACHE_DIR", "cache_dir"),
    ("CRANE_LLM_PROMPT", "prompt"),
    ("CRANE_LLM_STYLE", "style"),
    ("CRANE_LLM_REDACT", "redact"),
];

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no model configured: pass --llm, set CRANE_LLM, or set `model` under [llm] in crane.toml (e.g. `openai:gpt-5`, `ollama:qwen2.5-coder:32b`)")]
    NoModel,
    #[error(transparent)]
    Model(#[from] ModelSpecError),
    #[error("`{model}` needs an endpoint: write `openai-compat:<model>@http://host:port/v1`, or set base_url (--base-url, CRANE_LLM_BASE_URL, or base_url in crane.toml)")]
    MissingBaseUrl { model: String },
    #[error("invalid {setting} `{value}`: expected {expected}")]
    Invalid {
        setting: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("invalid value of {variable}: {message}")]
    Environment { variable: String, message: String },
    #[error("cannot read {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    ParseFile { path: PathBuf, message: String },
}

impl LlmSettings {
    /// Settings from the environment, read through `get` (which returns a variable's value).
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<LlmSettings, ConfigError> {
        let mut table = toml::Table::new();
        for (variable, setting) in ENVIRONMENT_VARIABLES {
            let Some(text) = get(variable).filter(|text| !text.trim().is_empty()) else {
                continue;
            };
            let value = match *setting {
                "temperature" | "timeout_secs" => text
                    .trim()
                    .parse::<f64>()
                    .map(toml::Value::Float)
                    .map_err(|err| env_error(variable, err))?,
                "max_output_tokens"
                | "max_retries"
                | "concurrency"
                | "requests_per_minute"
                | "runs" => text
                    .trim()
                    .parse::<i64>()
                    .map(toml::Value::Integer)
                    .map_err(|err| env_error(variable, err))?,
                "structured_output" | "cache" => toml::Value::Boolean(
                    parse_flag(&text)
                        .ok_or_else(|| env_error(variable, "expected true or false"))?,
                ),
                _ => toml::Value::String(text.trim().to_string()),
            };
            table.insert(setting.to_string(), value);
        }
        toml::Value::Table(table)
            .try_into::<LlmSettings>()
            .map_err(|err| ConfigError::Environment {
                variable: "CRANE_LLM_*".to_string(),
                message: err.to_string(),
            })
    }

    /// The `[llm]` table of a `crane.toml` file (other tables are left to their owners).
    pub fn from_crane_toml(path: &Path) -> Result<LlmSettings, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        LlmSettings::from_crane_toml_str(&text).map_err(|message| ConfigError::ParseFile {
            path: path.to_path_buf(),
            message,
        })
    }

    pub fn from_crane_toml_str(text: &str) -> Result<LlmSettings, String> {
        let mut document: toml::Table = toml::from_str(text).map_err(|err| err.to_string())?;
        match document.remove("llm") {
            None => Ok(LlmSettings::default()),
            Some(table) => table
                .try_into::<LlmSettings>()
                .map_err(|err| format!("[llm]: {err}")),
        }
    }

    /// These settings, with unset fields taken from `lower`.
    pub fn or(self, lower: LlmSettings) -> LlmSettings {
        let mut prices = lower.prices;
        prices.extend(self.prices);
        LlmSettings {
            model: self.model.or(lower.model),
            base_url: self.base_url.or(lower.base_url),
            api_key_env: self.api_key_env.or(lower.api_key_env),
            reasoning_effort: self.reasoning_effort.or(lower.reasoning_effort),
            temperature: self.temperature.or(lower.temperature),
            max_output_tokens: self.max_output_tokens.or(lower.max_output_tokens),
            structured_output: self.structured_output.or(lower.structured_output),
            timeout_secs: self.timeout_secs.or(lower.timeout_secs),
            max_retries: self.max_retries.or(lower.max_retries),
            concurrency: self.concurrency.or(lower.concurrency),
            requests_per_minute: self.requests_per_minute.or(lower.requests_per_minute),
            runs: self.runs.or(lower.runs),
            cache: self.cache.or(lower.cache),
            cache_dir: self.cache_dir.or(lower.cache_dir),
            prompt: self.prompt.or(lower.prompt),
            style: self.style.or(lower.style),
            redact: self.redact.or(lower.redact),
            runtime_budget: self.runtime_budget.or(lower.runtime_budget),
            api_docs_budget: self.api_docs_budget.or(lower.api_docs_budget),
            prices,
        }
    }
}

fn env_error(variable: &str, err: impl fmt::Display) -> ConfigError {
    ConfigError::Environment {
        variable: variable.to_string(),
        message: err.to_string(),
    }
}

fn parse_flag(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The nearest `crane.toml` in `start` or one of its parents.
pub fn find_crane_toml(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join("crane.toml"))
        .find(|candidate| candidate.is_file())
}

/// The resolved configuration of the LLM detector.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    pub model: ModelSpec,
    /// The API key, when the provider's variable is set.
    pub api_key: Option<ApiKey>,
    /// The variables the key is read from (for messages when it is missing).
    pub api_key_variables: Vec<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u32>,
    pub structured_output: bool,
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub concurrency: usize,
    pub requests_per_minute: Option<u32>,
    pub runs: u32,
    /// Cache directory; `None` disables the cache.
    pub cache_dir: Option<PathBuf>,
    pub prompt: PromptBuilder,
    pub prices: PriceTable,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(180);
pub const DEFAULT_CONCURRENCY: usize = 4;

impl LlmConfig {
    /// Defaults for `model`, with no key (tests, replay).
    pub fn new(model: ModelSpec) -> LlmConfig {
        LlmConfig {
            model,
            api_key: None,
            api_key_variables: Vec::new(),
            reasoning_effort: None,
            temperature: None,
            max_output_tokens: None,
            structured_output: true,
            timeout: DEFAULT_TIMEOUT,
            retry: RetryPolicy::default(),
            concurrency: DEFAULT_CONCURRENCY,
            requests_per_minute: None,
            runs: 1,
            cache_dir: Some(Cache::default_dir()),
            prompt: PromptBuilder::default(),
            prices: PriceTable::default(),
        }
    }

    /// Resolves the layers: `flags` over the environment (read through `env`) over `file`.
    pub fn resolve(
        flags: LlmSettings,
        env: impl Fn(&str) -> Option<String>,
        file: Option<LlmSettings>,
    ) -> Result<LlmConfig, ConfigError> {
        let settings = flags
            .or(LlmSettings::from_env(&env)?)
            .or(file.unwrap_or_default());
        let model_text = settings.model.as_deref().ok_or(ConfigError::NoModel)?;
        let mut model = ModelSpec::parse(model_text)?;
        if let ModelSpec::Remote(remote) = &mut model {
            if remote.base_url.is_none() {
                remote.base_url = match &settings.base_url {
                    Some(url) => Some(url.clone()),
                    None => provider_env_base_url(remote.provider, &env),
                };
            }
            if let Some(url) = &remote.base_url {
                validate_base_url(model_text, url)?;
            }
            if remote.endpoint().is_none() {
                return Err(ConfigError::MissingBaseUrl {
                    model: model_text.to_string(),
                });
            }
        }
        let api_key_variables: Vec<String> = match (&model, &settings.api_key_env) {
            (ModelSpec::Replay(_), _) => Vec::new(),
            (_, Some(variable)) => vec![variable.clone()],
            (ModelSpec::Remote(remote), None) => remote
                .provider
                .key_variables()
                .iter()
                .map(|v| v.to_string())
                .collect(),
        };
        let api_key = api_key_variables
            .iter()
            .find_map(|variable| env(variable).filter(|key| !key.trim().is_empty()))
            .map(|key| ApiKey::new(key.trim()));

        let positive =
            |setting: &'static str, value: Option<f64>| -> Result<Option<f64>, ConfigError> {
                match value {
                    Some(v) if !(v.is_finite() && v > 0.0) => Err(ConfigError::Invalid {
                        setting,
                        value: v.to_string(),
                        expected: "a positive number",
                    }),
                    other => Ok(other),
                }
            };
        let timeout = positive("timeout_secs", settings.timeout_secs)?
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        let concurrency = settings.concurrency.unwrap_or(DEFAULT_CONCURRENCY);
        if concurrency == 0 {
            return Err(ConfigError::Invalid {
                setting: "concurrency",
                value: "0".to_string(),
                expected: "at least 1",
            });
        }
        let runs = settings.runs.unwrap_or(1);
        if runs == 0 {
            return Err(ConfigError::Invalid {
                setting: "runs",
                value: "0".to_string(),
                expected: "at least 1",
            });
        }
        if settings.requests_per_minute == Some(0) {
            return Err(ConfigError::Invalid {
                setting: "requests_per_minute",
                value: "0".to_string(),
                expected: "at least 1 (leave it unset for no limit)",
            });
        }
        let retry = RetryPolicy {
            max_retries: settings
                .max_retries
                .unwrap_or(RetryPolicy::default().max_retries),
            ..RetryPolicy::default()
        };
        let cache_dir = match settings.cache {
            Some(false) => None,
            _ => Some(settings.cache_dir.unwrap_or_else(Cache::default_dir)),
        };
        let prompt = PromptBuilder::new(settings.prompt.unwrap_or_default())
            .style(settings.style.unwrap_or_default())
            .redact(settings.redact.unwrap_or_default())
            .runtime_budget(settings.runtime_budget)
            .api_docs_budget(settings.api_docs_budget.unwrap_or(DEFAULT_API_DOCS_BUDGET));
        Ok(LlmConfig {
            model,
            api_key,
            api_key_variables,
            reasoning_effort: settings.reasoning_effort,
            temperature: settings.temperature,
            max_output_tokens: settings.max_output_tokens,
            structured_output: settings.structured_output.unwrap_or(true),
            timeout,
            retry,
            concurrency,
            requests_per_minute: settings.requests_per_minute,
            runs,
            cache_dir,
            prompt,
            prices: PriceTable::default().with_overrides(&settings.prices),
        })
    }

    /// Resolves `flags` over the process environment over `crane_toml` (when given; otherwise
    /// the nearest `crane.toml` from the current directory, if any).
    pub fn load(flags: LlmSettings, crane_toml: Option<&Path>) -> Result<LlmConfig, ConfigError> {
        let path = match crane_toml {
            Some(path) => Some(path.to_path_buf()),
            None => std::env::current_dir()
                .ok()
                .and_then(|dir| find_crane_toml(&dir)),
        };
        let file = path
            .as_deref()
            .map(LlmSettings::from_crane_toml)
            .transpose()?;
        LlmConfig::resolve(flags, |name| std::env::var(name).ok(), file)
    }
}

/// Provider-specific endpoint variables: `OPENAI_BASE_URL` for OpenAI, `OLLAMA_HOST` for Ollama.
fn provider_env_base_url(
    provider: Provider,
    env: &impl Fn(&str) -> Option<String>,
) -> Option<String> {
    match provider {
        Provider::OpenAi => env("OPENAI_BASE_URL").filter(|url| !url.trim().is_empty()),
        Provider::Ollama => env("OLLAMA_HOST")
            .filter(|host| !host.trim().is_empty())
            .map(|host| {
                let host = host.trim().trim_end_matches('/');
                let with_scheme = if host.contains("://") {
                    host.to_string()
                } else {
                    format!("http://{host}")
                };
                format!("{with_scheme}/v1/")
            }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn flags_beat_environment_beat_file() {
        let file = LlmSettings::from_crane_toml_str(
            r#"
            [kernel]
            python = "/usr/bin/python3"

            [llm]
            model = "gemini:gemini-2.5-flash"
            runs = 5
            timeout_secs = 30
            concurrency = 2
            redact = "strings"
            prompt = "with_runtime-S"

            [llm.prices."openai-compat:my-model"]
            input = 1.0
            output = 2.0
            "#,
        )
        .unwrap();
        let env = env_of(&[
            ("CRANE_LLM_MODEL", "anthropic:claude-sonnet-4-5"),
            ("CRANE_LLM_RUNS", "3"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("OPENAI_API_KEY", "sk-openai-secret"),
        ]);
        let config = LlmConfig::resolve(LlmSettings::default(), &env, Some(file.clone())).unwrap();
        assert_eq!(config.model.to_string(), "anthropic:claude-sonnet-4-5");
        assert_eq!(config.runs, 3);
        assert_eq!(config.timeout, Duration::from_secs(30));
        assert_eq!(config.concurrency, 2);
        assert_eq!(config.prompt.redact, Redact::Strings);
        assert_eq!(config.prompt.config.to_string(), "with_runtime-S");
        assert_eq!(
            config.api_key.as_ref().map(ApiKey::expose),
            Some("sk-ant-secret")
        );
        assert!(!format!("{config:?}").contains("secret"));

        let flags = LlmSettings {
            model: Some("openai:gpt-5".into()),
            runs: Some(1),
            reasoning_effort: Some(ReasoningEffort::Low),
            ..LlmSettings::default()
        };
        let config = LlmConfig::resolve(flags, &env, Some(file)).unwrap();
        assert_eq!(config.model.to_string(), "openai:gpt-5");
        assert_eq!(config.runs, 1);
        assert_eq!(config.reasoning_effort, Some(ReasoningEffort::Low));
        assert_eq!(
            config.api_key.as_ref().map(ApiKey::expose),
            Some("sk-openai-secret")
        );
        assert_eq!(config.api_key_variables, vec!["OPENAI_API_KEY".to_string()]);
    }

    #[test]
    fn endpoints_come_from_the_model_string_settings_or_provider_variables() {
        let env = env_of(&[("OLLAMA_HOST", "10.1.2.3:11434")]);
        let flags = |model: &str| LlmSettings {
            model: Some(model.into()),
            ..LlmSettings::default()
        };
        let ollama = LlmConfig::resolve(flags("ollama:qwen2.5-coder:32b"), &env, None).unwrap();
        assert_eq!(
            ollama.model.as_remote().unwrap().endpoint().as_deref(),
            Some("http://10.1.2.3:11434/v1/")
        );
        assert!(matches!(
            LlmConfig::resolve(flags("openai-compat:m"), &env, None),
            Err(ConfigError::MissingBaseUrl { .. })
        ));
        let compat = LlmConfig::resolve(
            LlmSettings {
                base_url: Some("http://127.0.0.1:8000/v1".into()),
                ..flags("openai-compat:m")
            },
            &env,
            None,
        )
        .unwrap();
        assert_eq!(
            compat.model.as_remote().unwrap().endpoint().as_deref(),
            Some("http://127.0.0.1:8000/v1/")
        );
        assert_eq!(
            compat.api_key_variables,
            vec!["CRANE_LLM_API_KEY".to_string()]
        );
    }

    #[test]
    fn bad_values_are_explained() {
        let env = env_of(&[("CRANE_LLM_RUNS", "five")]);
        let err = LlmConfig::resolve(LlmSettings::default(), &env, None).unwrap_err();
        assert!(err.to_string().contains("CRANE_LLM_RUNS"), "{err}");

        assert!(matches!(
            LlmConfig::resolve(LlmSettings::default(), env_of(&[]), None),
            Err(ConfigError::NoModel)
        ));
        let err = LlmSettings::from_crane_toml_str("[llm]\napi_key = \"sk-123\"\n").unwrap_err();
        assert!(err.contains("api_key"), "{err}");
        let cache_off = LlmConfig::resolve(
            LlmSettings::default(),
            env_of(&[
                ("CRANE_LLM_MODEL", "replay:gpt_5"),
                ("CRANE_LLM_CACHE", "0"),
            ]),
            None,
        )
        .unwrap();
        assert_eq!(cache_off.cache_dir, None);
    }
}
