//! The client: asks a model about a prompt `runs` times (concurrently, within the concurrency
//! and rate limits), answers repeated questions from the cache, retries failed calls, reads
//! each answer, and decides by majority.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::answer::{parse_answer, Answer, AnswerError, AnswerSchema};
use crate::cache::{Cache, CacheEntry, CacheKey};
use crate::config::LlmConfig;
use crate::error::LlmError;
use crate::live::{shorten, AttemptError, Completion, LiveBackend};
use crate::model::ModelSpec;
use crate::prompt::{Prompt, PromptConfig, PromptStyle};
use crate::replay::ReplayProvider;
use crate::secrets::without_url_credentials;
use crate::usage::{estimate_tokens, Usage};

/// The majority verdict over readable answers; a tie counts as no crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub crash: bool,
    pub crash_votes: u32,
    pub no_crash_votes: u32,
}

impl Verdict {
    pub fn from_answers(answers: &[Answer]) -> Verdict {
        let crash_votes = answers.iter().filter(|answer| answer.detection).count() as u32;
        let no_crash_votes = answers.len() as u32 - crash_votes;
        Verdict {
            crash: crash_votes > no_crash_votes,
            crash_votes,
            no_crash_votes,
        }
    }
}

/// A retried attempt of a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RetryRecord {
    pub status: Option<u16>,
    /// What went wrong (API key removed).
    pub error: String,
    /// How long the client waited before the next attempt.
    #[serde(with = "duration_ms")]
    pub wait: Duration,
}

/// One of the `runs` calls of a question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub run: u32,
    /// Served from the cache: nothing was sent and nothing spent.
    pub cached: bool,
    /// Tokens of the answer (for a cache hit, those of the original call).
    pub usage: Usage,
    /// US dollars spent by this call (0 for a cache hit); `None` when the price is unknown.
    pub cost: Option<f64>,
    /// Time this call took now, retries included.
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    pub retries: Vec<RetryRecord>,
}

/// The result of asking one question.
#[derive(Debug, Clone, Serialize)]
pub struct Judgement {
    pub verdict: Verdict,
    /// The readable answers, in run order.
    pub answers: Vec<Answer>,
    /// The answers that could not be read, with their raw text; they do not vote.
    #[serde(serialize_with = "answer_errors")]
    pub unreadable: Vec<AnswerError>,
    pub calls: Vec<CallRecord>,
    /// Tokens spent now (cache hits excluded).
    pub usage: Usage,
    /// US dollars spent now; `None` when the model's price is unknown.
    pub cost: Option<f64>,
    /// Wall time of the whole question.
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    /// Every answer came from the cache.
    pub cached: bool,
    /// Problems that did not stop the question (e.g. an answer that could not be cached).
    pub warnings: Vec<String>,
}

impl Judgement {
    /// The first answer that agrees with the verdict: its reasoning explains the verdict.
    pub fn representative(&self) -> Option<&Answer> {
        self.answers
            .iter()
            .find(|answer| answer.detection == self.verdict.crash)
    }
}

/// Calls and spending of a client since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Totals {
    pub calls: u64,
    pub cached_calls: u64,
    /// Tokens spent (cache hits excluded).
    pub usage: Usage,
    /// US dollars spent on calls whose price is known.
    pub cost: f64,
    /// Calls whose price is unknown (their cost is not in `cost`).
    pub unpriced_calls: u64,
    /// Summed latency of all calls.
    #[serde(with = "duration_ms")]
    pub latency: Duration,
}

/// What `test_connection` found.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectionReport {
    pub model: String,
    pub endpoint: Option<String>,
    pub structured_output: bool,
    #[serde(with = "duration_ms")]
    pub latency: Duration,
    pub usage: Usage,
    /// The model's answer to a one-line question (`None` for replay, which needs a case).
    pub answer: Option<Answer>,
    /// Whether the answer was right (`1 / 0` crashes).
    pub answer_correct: Option<bool>,
}

enum Backend {
    Live(Box<LiveBackend>),
    Replay(ReplayProvider),
}

struct Inner {
    config: LlmConfig,
    backend: Backend,
    cache: Option<Cache>,
    throttle: crate::throttle::Throttle,
    /// The model string stored in cache entries: canonical, without URL credentials.
    model_key: String,
    totals: Mutex<Totals>,
}

/// The LLM client. Cheap to clone; clones share limits, cache and totals.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct RunOutcome {
    record: CallRecord,
    answer: Result<Answer, AnswerError>,
    warning: Option<String>,
}

impl Client {
    /// A client for a provider's model. Fails when the provider needs a key and none is set,
    /// or when the cache directory cannot be made. Replay models need their cases: use
    /// [`Client::with_replay`].
    pub fn new(config: LlmConfig) -> Result<Client, LlmError> {
        let backend = match &config.model {
            ModelSpec::Remote(remote) => {
                Backend::Live(Box::new(LiveBackend::new(remote, &config)?))
            }
            ModelSpec::Replay(model) => Backend::Replay(ReplayProvider::new(*model)),
        };
        Client::build(config, backend)
    }

    /// A client answering from recorded JunoBench answers.
    pub fn with_replay(mut config: LlmConfig, replay: ReplayProvider) -> Result<Client, LlmError> {
        config.model = ModelSpec::Replay(replay.model());
        Client::build(config, Backend::Replay(replay))
    }

    fn build(config: LlmConfig, backend: Backend) -> Result<Client, LlmError> {
        // Replayed answers cost nothing: caching them would only add files.
        let cache = match (&backend, &config.cache_dir) {
            (Backend::Live(_), Some(dir)) => {
                Some(Cache::open(dir).map_err(|source| LlmError::Cache {
                    path: dir.clone(),
                    source,
                })?)
            }
            _ => None,
        };
        Ok(Client {
            inner: Arc::new(Inner {
                throttle: crate::throttle::Throttle::new(
                    config.concurrency,
                    config.requests_per_minute,
                ),
                model_key: config.model.to_string(),
                config,
                backend,
                cache,
                totals: Mutex::new(Totals::default()),
            }),
        })
    }

    pub fn config(&self) -> &LlmConfig {
        &self.inner.config
    }

    /// Calls and spending so far.
    pub fn totals(&self) -> Totals {
        self.inner
            .totals
            .lock()
            .map(|totals| *totals)
            .unwrap_or_default()
    }

    /// Asks `runs` times (at least once) and decides by majority. Fails when a call fails
    /// after its retries, or when no answer at all can be read.
    pub async fn ask(&self, prompt: &Prompt, runs: u32) -> Result<Judgement, LlmError> {
        let started = Instant::now();
        let prompt = Arc::new(prompt.clone());
        let input_tokens = Arc::new(OnceLock::new());
        let mut tasks = JoinSet::new();
        for run in 0..runs.max(1) {
            let (client, prompt, input_tokens) =
                (self.clone(), prompt.clone(), input_tokens.clone());
            tasks.spawn(async move { client.run_once(&prompt, run, &input_tokens).await });
        }
        let mut outcomes = Vec::new();
        let mut first_error = None;
        while let Some(joined) = tasks.join_next().await {
            match joined {
                Ok(Ok(outcome)) => outcomes.push(outcome),
                Ok(Err(err)) => {
                    first_error.get_or_insert(err);
                }
                Err(join_error) => {
                    first_error.get_or_insert(LlmError::Client(join_error.to_string()));
                }
            }
        }
        if let Some(err) = first_error {
            return Err(err);
        }
        outcomes.sort_by_key(|outcome| outcome.record.run);

        let mut judgement = Judgement {
            verdict: Verdict::from_answers(&[]),
            answers: Vec::new(),
            unreadable: Vec::new(),
            calls: Vec::new(),
            usage: Usage::default(),
            cost: Some(0.0),
            latency: Duration::ZERO,
            cached: outcomes.iter().all(|outcome| outcome.record.cached),
            warnings: Vec::new(),
        };
        for outcome in outcomes {
            if !outcome.record.cached {
                judgement.usage += outcome.record.usage;
            }
            judgement.cost = match (judgement.cost, outcome.record.cost) {
                (Some(total), Some(cost)) => Some(total + cost),
                _ => None,
            };
            match outcome.answer {
                Ok(answer) => judgement.answers.push(answer),
                Err(err) => judgement.unreadable.push(err),
            }
            judgement.warnings.extend(outcome.warning);
            judgement.calls.push(outcome.record);
        }
        if judgement.answers.is_empty() {
            return Err(LlmError::Unreadable {
                errors: judgement.unreadable,
            });
        }
        judgement.verdict = Verdict::from_answers(&judgement.answers);
        judgement.latency = started.elapsed();
        Ok(judgement)
    }

    async fn run_once(
        &self,
        prompt: &Prompt,
        run: u32,
        input_tokens: &OnceLock<u64>,
    ) -> Result<RunOutcome, LlmError> {
        let started = Instant::now();
        let estimate = |raw: &str| Usage {
            input_tokens: *input_tokens
                .get_or_init(|| estimate_tokens(&prompt.system) + estimate_tokens(&prompt.user)),
            output_tokens: estimate_tokens(raw),
            estimated: true,
        };
        let outcome = match &self.inner.backend {
            Backend::Replay(replay) => {
                let raw = replay.raw_answer(prompt, run)?;
                RunOutcome {
                    record: CallRecord {
                        run,
                        cached: false,
                        usage: estimate(&raw),
                        cost: Some(0.0),
                        latency: started.elapsed(),
                        retries: Vec::new(),
                    },
                    answer: parse_answer(&raw),
                    warning: None,
                }
            }
            Backend::Live(live) => {
                let params = self.params(prompt.schema);
                let key = CacheKey {
                    model: &self.inner.model_key,
                    params: &params,
                    system: &prompt.system,
                    user: &prompt.user,
                    run,
                };
                let hit = self.inner.cache.as_ref().and_then(|cache| cache.get(&key));
                match hit {
                    Some(entry) => RunOutcome {
                        record: CallRecord {
                            run,
                            cached: true,
                            usage: entry.usage,
                            cost: Some(0.0),
                            latency: started.elapsed(),
                            retries: Vec::new(),
                        },
                        answer: parse_answer(&entry.raw),
                        warning: None,
                    },
                    None => {
                        let (completion, retries) = self.call_with_retries(live, prompt).await?;
                        let usage = completion
                            .usage
                            .unwrap_or_else(|| estimate(&completion.raw));
                        let latency = started.elapsed();
                        let answer = parse_answer(&completion.raw);
                        // Only readable answers are kept, so a rerun can do better than an
                        // unreadable one.
                        let warning = match (&self.inner.cache, &answer) {
                            (Some(cache), Ok(_)) => {
                                let entry = CacheEntry::new(
                                    &key,
                                    completion.raw.clone(),
                                    usage,
                                    latency.as_millis() as u64,
                                );
                                cache.put(&key, &entry).err().map(|err| {
                                    format!(
                                        "could not cache an answer in {}: {err}",
                                        cache.dir().display()
                                    )
                                })
                            }
                            _ => None,
                        };
                        RunOutcome {
                            record: CallRecord {
                                run,
                                cached: false,
                                usage,
                                cost: self
                                    .inner
                                    .config
                                    .prices
                                    .cost(&self.inner.config.model, &usage),
                                latency,
                                retries,
                            },
                            answer,
                            warning,
                        }
                    }
                }
            }
        };
        self.account(&outcome.record);
        Ok(outcome)
    }

    fn account(&self, record: &CallRecord) {
        if let Ok(mut totals) = self.inner.totals.lock() {
            totals.calls += 1;
            totals.latency += record.latency;
            if record.cached {
                totals.cached_calls += 1;
                return;
            }
            totals.usage += record.usage;
            match record.cost {
                Some(cost) => totals.cost += cost,
                None => totals.unpriced_calls += 1,
            }
        }
    }

    /// The generation parameters that change answers (part of the cache key).
    fn params(&self, schema: AnswerSchema) -> Value {
        let config = &self.inner.config;
        json!({
            "reasoning_effort": config.reasoning_effort,
            "temperature": config.temperature,
            "max_output_tokens": config.max_output_tokens,
            "structured_output": config.structured_output,
            "schema": schema,
        })
    }

    async fn call_with_retries(
        &self,
        live: &LiveBackend,
        prompt: &Prompt,
    ) -> Result<(Completion, Vec<RetryRecord>), LlmError> {
        let policy = self.inner.config.retry;
        let mut retries = Vec::new();
        loop {
            let result = {
                let _permit = self.inner.throttle.acquire().await;
                live.complete(prompt).await
            };
            let failure = match result {
                Ok(completion) => return Ok((completion, retries)),
                Err(failure) => failure,
            };
            let attempts = retries.len() as u32 + 1;
            if !failure.is_retriable() || retries.len() as u32 >= policy.max_retries {
                return Err(self.error_of(live, failure, attempts));
            }
            let hint = failure.retry_after();
            if let (Some(wait), Some(status)) = (hint, failure.status()) {
                if wait > policy.max_retry_after {
                    return Err(LlmError::RetryAfterTooLong {
                        endpoint: live.shown_endpoint().to_string(),
                        status,
                        wait,
                        limit: policy.max_retry_after,
                    });
                }
            }
            let wait = policy.delay(retries.len() as u32, hint);
            retries.push(RetryRecord {
                status: failure.status(),
                error: failure.summary(),
                wait,
            });
            tokio::time::sleep(wait).await;
        }
    }

    fn error_of(&self, live: &LiveBackend, failure: AttemptError, attempts: u32) -> LlmError {
        let endpoint = live.shown_endpoint().to_string();
        match failure {
            AttemptError::Status { status, body, .. } => LlmError::Http {
                provider: live.provider(),
                endpoint,
                status,
                body: shorten(&body, 500),
                attempts,
            },
            AttemptError::Timeout => LlmError::Timeout {
                endpoint,
                timeout: self.inner.config.timeout,
                attempts,
            },
            AttemptError::Connect(message) => LlmError::Connect {
                provider: live.provider(),
                endpoint,
                message,
                attempts,
            },
            AttemptError::Malformed(message) => LlmError::MalformedResponse {
                provider: live.provider(),
                endpoint,
                message,
            },
            AttemptError::Other(message) => LlmError::Client(message),
        }
    }

    /// Checks the configuration with one tiny call (no retries, no cache) and reports what
    /// happened; errors explain the usual causes. Replay makes no call.
    pub async fn test_connection(&self) -> Result<ConnectionReport, LlmError> {
        let config = &self.inner.config;
        let live = match &self.inner.backend {
            Backend::Replay(_) => {
                return Ok(ConnectionReport {
                    model: config.model.to_string(),
                    endpoint: None,
                    structured_output: false,
                    latency: Duration::ZERO,
                    usage: Usage::default(),
                    answer: None,
                    answer_correct: None,
                })
            }
            Backend::Live(live) => live,
        };
        let prompt = connection_test_prompt();
        let started = Instant::now();
        let result = {
            let _permit = self.inner.throttle.acquire().await;
            live.complete(&prompt).await
        };
        let completion = result.map_err(|failure| self.error_of(live, failure, 1))?;
        let latency = started.elapsed();
        let usage = completion.usage.unwrap_or_else(|| {
            Usage::estimate(
                &format!("{}{}", prompt.system, prompt.user),
                &completion.raw,
            )
        });
        let answer = parse_answer(&completion.raw)
            .map_err(|err| LlmError::Unreadable { errors: vec![err] })?;
        Ok(ConnectionReport {
            model: config.model.to_string(),
            endpoint: Some(live.shown_endpoint().to_string()),
            structured_output: live.structured_output(),
            latency,
            usage,
            answer_correct: Some(answer.detection),
            answer: Some(answer),
        })
    }
}

fn connection_test_prompt() -> Prompt {
    Prompt {
        system: "You predict whether Python code crashes. Answer with one JSON object: \
{\"reasoning\": \"<one short sentence>\", \"detection\": <true if it crashes, else false>}"
            .to_string(),
        user: "# Target Cell:\nx = 1 / 0\n".to_string(),
        schema: AnswerSchema::Paper,
        config: PromptConfig::CodeOnly,
        style: PromptStyle::Paper,
        case_id: None,
        runtime_truncated: false,
        api_docs_included: None,
    }
}

/// What `--show-prompt` prints: the request's model, endpoint and parameters (never the key),
/// then the messages exactly as they would be sent.
pub fn describe_request(config: &LlmConfig, prompt: &Prompt) -> String {
    let endpoint = config
        .model
        .as_remote()
        .and_then(|remote| remote.endpoint())
        .map(|url| without_url_credentials(&url))
        .unwrap_or_else(|| "(offline: recorded answers)".to_string());
    let mut text = format!(
        "model: {}\nendpoint: {endpoint}\nprompt: {} ({} style)\nstructured output: {}\n",
        config.model,
        prompt.config,
        match prompt.style {
            PromptStyle::Crane => "crane",
            PromptStyle::Paper => "paper",
        },
        config.structured_output,
    );
    if let Some(effort) = config.reasoning_effort {
        text.push_str(&format!("reasoning effort: {effort}\n"));
    }
    text.push_str(&prompt.to_display_string());
    text
}

fn answer_errors<S: serde::Serializer>(
    errors: &[AnswerError],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = serializer.serialize_seq(Some(errors.len()))?;
    for err in errors {
        seq.serialize_element(&json!({"error": err.kind.to_string(), "raw": err.raw}))?;
    }
    seq.end()
}

mod duration_ms {
    use std::time::Duration;

    pub fn serialize<S: serde::Serializer>(
        duration: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(detection: bool) -> Answer {
        Answer {
            detection,
            reasoning: String::new(),
            exception: None,
            line: None,
            confidence: None,
            evidence: Vec::new(),
            repairs: Vec::new(),
        }
    }

    #[test]
    fn majority_decides_and_ties_are_no_crash() {
        let votes = |pattern: &[bool]| {
            Verdict::from_answers(&pattern.iter().map(|d| answer(*d)).collect::<Vec<_>>())
        };
        assert!(votes(&[true, true, false, true, false]).crash);
        assert!(!votes(&[true, false, false, true, false]).crash);
        assert!(!votes(&[true, false]).crash);
        assert!(!votes(&[true, true, false, false]).crash);
        assert!(votes(&[true]).crash);
        let five = votes(&[true, true, true, false, false]);
        assert_eq!((five.crash_votes, five.no_crash_votes), (3, 2));
    }
}
