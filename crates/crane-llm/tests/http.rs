//! The real client (genai over HTTP) against a local server on 127.0.0.1 that speaks the
//! OpenAI-compatible chat protocol and the Gemini and Anthropic request shapes: success,
//! rate limits with Retry-After, server errors, timeouts, malformed and schema-violating
//! answers, empty answers, the cache, majority voting, and keys kept out of logs and caches.

use std::path::Path;
use std::time::Duration;

use crane_llm::test_server::{Reply, TestServer};
use crane_llm::{
    describe_request, AnswerErrorKind, Client, LlmConfig, LlmError, LlmSettings, Prompt,
    PromptBuilder, PromptConfig, PromptInput, ReasoningEffort, RetryPolicy,
};
use serde_json::{json, Value};

const KEY: &str = "sk-test-0123456789-SECRET";

const CRASH: &str = r#"{"reasoning": "df has no column 'Fare'", "detection": true, "exception": "KeyError", "line": 1, "confidence": 0.9, "evidence": ["df columns: Age, Name"]}"#;
const NO_CRASH: &str = r#"{"reasoning": "all names are defined", "detection": false, "exception": null, "line": null, "confidence": 0.8, "evidence": []}"#;

fn env(name: &str) -> Option<String> {
    match name {
        "CRANE_LLM_API_KEY" | "GEMINI_API_KEY" | "ANTHROPIC_API_KEY" | "OPENAI_API_KEY" => {
            Some(KEY.to_string())
        }
        _ => None,
    }
}

fn settings(model: String, cache_dir: Option<&Path>) -> LlmSettings {
    LlmSettings {
        model: Some(model),
        cache: Some(cache_dir.is_some()),
        cache_dir: cache_dir.map(Path::to_path_buf),
        ..LlmSettings::default()
    }
}

fn fast_retries(mut config: LlmConfig) -> LlmConfig {
    config.retry = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(200),
        max_retry_after: Duration::from_secs(30),
    };
    config
}

/// An OpenAI-compatible configuration for the server.
fn compat(server: &TestServer, cache_dir: Option<&Path>) -> LlmConfig {
    let model = format!("openai-compat:test-model@{}", server.base_url());
    fast_retries(LlmConfig::resolve(settings(model, cache_dir), env, None).unwrap())
}

fn prompt(target: &str) -> Prompt {
    let cells = vec![
        "import pandas as pd".to_string(),
        "df = pd.DataFrame({'Age': [1.0]})".to_string(),
    ];
    PromptBuilder::new(PromptConfig::CodeOnly)
        .build(&PromptInput {
            executed_cells: &cells,
            target_cell: target,
            runtime: None,
            api_docs: None,
        })
        .unwrap()
}

fn body(server: &TestServer, index: usize) -> Value {
    server.requests()[index]
        .json()
        .expect("a JSON request body")
}

#[tokio::test]
async fn a_successful_call_sends_the_schema_and_reports_tokens_and_latency() {
    let server = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let prompt = prompt("df['Fare'].mean()");
    let judgement = client.ask(&prompt, 1).await.unwrap();

    assert!(judgement.verdict.crash);
    let answer = &judgement.answers[0];
    assert_eq!(answer.exception.as_deref(), Some("KeyError"));
    assert_eq!(answer.line, Some(1));
    assert_eq!(answer.evidence, vec!["df columns: Age, Name".to_string()]);
    assert_eq!(
        (
            judgement.usage.input_tokens,
            judgement.usage.output_tokens,
            judgement.usage.estimated
        ),
        (120, 30, false)
    );
    assert!(judgement.latency > Duration::ZERO);
    assert_eq!(
        judgement.cost, None,
        "an unknown model on a custom server has no price"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["messages"][0]["role"], "system");
    assert_eq!(sent["messages"][0]["content"], prompt.system);
    assert_eq!(sent["messages"][1]["content"], prompt.user);
    assert_eq!(sent["response_format"]["type"], "json_schema");
    assert_eq!(sent["response_format"]["json_schema"]["strict"], true);
    assert_eq!(
        sent["response_format"]["json_schema"]["schema"]["required"],
        json!([
            "reasoning",
            "detection",
            "exception",
            "line",
            "confidence",
            "evidence"
        ])
    );
}

#[tokio::test]
async fn a_429_waits_as_long_as_retry_after_says() {
    let server = TestServer::start([
        Reply::status(429, r#"{"error": {"message": "Rate limit reached"}}"#)
            .with_header("retry-after", "1"),
        Reply::answer(NO_CRASH),
    ])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    assert!(!judgement.verdict.crash);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].received - requests[0].received;
    assert!(gap >= Duration::from_secs(1), "waited only {gap:?}");
    assert!(gap < Duration::from_secs(3), "waited {gap:?}");
    let retries = &judgement.calls[0].retries;
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0].status, Some(429));
    assert!(
        retries[0].wait >= Duration::from_secs(1) && retries[0].wait <= Duration::from_millis(1100)
    );
}

#[tokio::test]
async fn a_server_error_is_retried_with_backoff() {
    let server = TestServer::start([
        Reply::status(500, r#"{"error": "boom"}"#),
        Reply::status(503, r#"{"error": "overloaded"}"#),
        Reply::answer(CRASH),
    ])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    assert!(judgement.verdict.crash);
    let retries = &judgement.calls[0].retries;
    assert_eq!(
        retries.iter().map(|r| r.status).collect::<Vec<_>>(),
        vec![Some(500), Some(503)]
    );
    // Backoff of 20 ms then 40 ms, each between half and all of it.
    assert!(
        retries[0].wait >= Duration::from_millis(10)
            && retries[0].wait <= Duration::from_millis(20)
    );
    assert!(
        retries[1].wait >= Duration::from_millis(20)
            && retries[1].wait <= Duration::from_millis(40)
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn errors_that_retrying_cannot_fix_fail_at_once() {
    let server = TestServer::start([
        Reply::status(400, r#"{"error": "bad request"}"#),
        Reply::status(500, "{}").with_header("x-should-retry", "false"),
        Reply::status(429, "{}").with_header("retry-after", "3600"),
    ])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let err = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Http {
                status: 400,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    let err = client.ask(&prompt("x = 2"), 1).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Http {
                status: 500,
                attempts: 1,
                ..
            }
        ),
        "{err}"
    );
    let err = client.ask(&prompt("x = 3"), 1).await.unwrap_err();
    assert!(
        matches!(err, LlmError::RetryAfterTooLong { status: 429, .. }),
        "{err}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn retries_give_up_after_the_limit() {
    let server = TestServer::start([])
        .unwrap()
        .with_fallback(Reply::status(502, "bad gateway"));
    let client = Client::new(compat(&server, None)).unwrap();
    let err = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(
        matches!(
            err,
            LlmError::Http {
                status: 502,
                attempts: 4,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(server.requests().len(), 4);
    assert!(err.to_string().contains("hint:"));
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let server = TestServer::start([])
        .unwrap()
        .with_fallback(Reply::answer(CRASH).delayed(Duration::from_secs(3)));
    let mut config = compat(&server, None);
    config.timeout = Duration::from_millis(300);
    config.retry.max_retries = 1;
    let client = Client::new(config).unwrap();
    let started = std::time::Instant::now();
    let err = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout { attempts: 2, .. }),
        "{err}"
    );
    // The hint names the LLM's own timeout, not `--timeout` (the per-cell limit).
    let message = err.to_string();
    assert!(
        message.contains("timeout_secs") && message.contains("CRANE_LLM_TIMEOUT"),
        "{message}"
    );
    assert!(
        message.contains("--timeout is the per-cell limit"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_malformed_response_body_is_an_error() {
    let server = TestServer::start([Reply::Raw {
        content_type: "application/json".into(),
        body: "{\"choices\": [ this is not json".into(),
    }])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let err = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(matches!(err, LlmError::MalformedResponse { .. }), "{err}");
    assert_eq!(server.requests().len(), 1, "not retried");
}

#[tokio::test]
async fn unreadable_answers_are_errors_that_keep_the_raw_text() {
    let cases = [
        (
            "The cell will crash because Fare is missing.",
            "no JSON object",
        ),
        (
            r#"{"reasoning": "x", "detection": "perhaps"}"#,
            "not a boolean",
        ),
        (r#"{"reasoning": "x"}"#, "`detection` is missing"),
        ("", "empty"),
    ];
    for (content, message) in cases {
        let server = TestServer::start([Reply::answer(content)]).unwrap();
        let client = Client::new(compat(&server, None)).unwrap();
        match client.ask(&prompt("x = 1"), 1).await {
            Err(LlmError::Unreadable { errors }) => {
                assert_eq!(errors.len(), 1);
                assert_eq!(errors[0].raw, content);
                assert!(errors[0].to_string().contains(message), "{}", errors[0]);
                if content.is_empty() {
                    assert_eq!(errors[0].kind, AnswerErrorKind::Empty);
                }
            }
            other => panic!("{content:?} gave {other:?}"),
        }
    }
}

#[tokio::test]
async fn near_json_answers_are_repaired() {
    let server = TestServer::start([Reply::answer(
        "```json\n{'reasoning': 'Fare is missing', 'detection': True,}\n```",
    )])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    assert!(judgement.verdict.crash);
    assert!(!judgement.answers[0].repairs.is_empty());
}

#[tokio::test]
async fn the_cache_answers_repeated_questions_for_free() {
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start([])
        .unwrap()
        .with_fallback(Reply::answer(CRASH));
    let client = Client::new(compat(&server, Some(cache.path()))).unwrap();
    let question = prompt("df['Fare'].mean()");

    let first = client.ask(&question, 3).await.unwrap();
    assert!(!first.cached);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(first.usage.input_tokens, 360);

    let second = client.ask(&question, 3).await.unwrap();
    assert!(second.cached);
    assert_eq!(server.requests().len(), 3, "nothing sent");
    assert_eq!(second.answers, first.answers);
    assert_eq!(second.verdict, first.verdict);
    assert_eq!(second.usage.total_tokens(), 0);
    assert_eq!(second.cost, Some(0.0));
    assert!(second
        .calls
        .iter()
        .all(|call| call.cached && call.usage.input_tokens == 120));

    // Two more runs cost two more calls; a new client on the same cache hits too.
    let more = Client::new(compat(&server, Some(cache.path())))
        .unwrap()
        .ask(&question, 5)
        .await
        .unwrap();
    assert!(!more.cached);
    assert_eq!(more.calls.iter().filter(|call| call.cached).count(), 3);
    assert_eq!(server.requests().len(), 5);

    // A different prompt, or different parameters, miss.
    client.ask(&prompt("df['Age'].mean()"), 1).await.unwrap();
    assert_eq!(server.requests().len(), 6);
    let mut low_effort = compat(&server, Some(cache.path()));
    low_effort.reasoning_effort = Some(ReasoningEffort::Low);
    Client::new(low_effort)
        .unwrap()
        .ask(&question, 1)
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 7);

    let totals = client.totals();
    assert_eq!((totals.calls, totals.cached_calls), (7, 3));

    // Without the cache every question is sent.
    let uncached = Client::new(compat(&server, None)).unwrap();
    uncached.ask(&question, 1).await.unwrap();
    uncached.ask(&question, 1).await.unwrap();
    assert_eq!(server.requests().len(), 9);
}

#[tokio::test]
async fn unreadable_answers_are_not_cached() {
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start([Reply::answer("no idea"), Reply::answer(CRASH)]).unwrap();
    let client = Client::new(compat(&server, Some(cache.path()))).unwrap();
    let question = prompt("x = 1");
    assert!(client.ask(&question, 1).await.is_err());
    assert!(client.ask(&question, 1).await.unwrap().verdict.crash);
    assert!(client.ask(&question, 1).await.unwrap().cached);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn the_majority_of_runs_decides() {
    let server = TestServer::start([
        Reply::answer(CRASH),
        Reply::answer(NO_CRASH),
        Reply::answer(CRASH),
        Reply::answer(NO_CRASH),
        Reply::answer(CRASH),
    ])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 5).await.unwrap();
    assert_eq!(
        (
            judgement.verdict.crash,
            judgement.verdict.crash_votes,
            judgement.verdict.no_crash_votes
        ),
        (true, 3, 2)
    );
    assert_eq!(
        judgement.calls.iter().map(|c| c.run).collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert!(judgement.representative().unwrap().detection);
    assert_eq!(judgement.usage.input_tokens, 5 * 120);

    // A tie, with one unreadable answer that does not vote, is no crash.
    for reply in [CRASH, NO_CRASH, "garbage"] {
        server.push(Reply::answer(reply));
    }
    let tie = client.ask(&prompt("x = 2"), 3).await.unwrap();
    assert_eq!(tie.unreadable.len(), 1);
    assert_eq!(tie.unreadable[0].raw, "garbage");
    assert_eq!(
        (
            tie.verdict.crash,
            tie.verdict.crash_votes,
            tie.verdict.no_crash_votes
        ),
        (false, 1, 1)
    );
}

#[tokio::test]
async fn the_api_key_stays_out_of_errors_logs_and_cache_files() {
    let cache = tempfile::tempdir().unwrap();
    let echo = format!(r#"{{"error": {{"message": "Incorrect API key provided: {KEY}"}}}}"#);
    let server = TestServer::start([
        Reply::status(401, echo.clone()),
        Reply::status(500, echo.clone()),
        Reply::answer(CRASH),
    ])
    .unwrap();
    let config = compat(&server, Some(cache.path()));
    assert!(!format!("{config:?}").contains(KEY));
    let client = Client::new(config.clone()).unwrap();

    let err = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 401, .. }));
    assert!(err.to_string().contains("rejected"), "{err}");
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(!format!("{err:?}").contains(KEY));

    let judgement = client.ask(&prompt("x = 2"), 1).await.unwrap();
    let log = serde_json::to_string(&judgement).unwrap() + &format!("{judgement:?}");
    assert!(
        log.contains("Incorrect API key provided: <redacted>"),
        "the retry was recorded"
    );
    assert!(!log.contains(KEY));
    assert!(!describe_request(&config, &prompt("x = 2")).contains(KEY));

    let mut files = 0;
    let mut pending = vec![cache.path().to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains(KEY), "{}", path.display());
                assert!(!text.contains("SECRET"), "{}", path.display());
            }
        }
    }
    assert_eq!(files, 1);
    // The key was really sent, in the header only.
    for request in server.requests() {
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
        assert!(!request.body.contains(KEY));
    }
}

#[tokio::test]
async fn credentials_in_the_base_url_stay_out_of_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let url = server
        .base_url()
        .replace("http://", "http://user:url-password@");
    let model = format!("openai-compat:test-model@{url}");
    let config =
        fast_retries(LlmConfig::resolve(settings(model, Some(cache.path())), env, None).unwrap());
    Client::new(config)
        .unwrap()
        .ask(&prompt("x = 1"), 1)
        .await
        .unwrap();
    let entry = std::fs::read_dir(cache.path())
        .unwrap()
        .flat_map(|dir| std::fs::read_dir(dir.unwrap().path()).unwrap())
        .map(|file| std::fs::read_to_string(file.unwrap().path()).unwrap())
        .next()
        .unwrap();
    assert!(!entry.contains("url-password"));
    assert!(entry.contains(&server.base_url()));
}

#[tokio::test]
async fn gemini_requests_have_gemini_shape() {
    let server = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let settings = LlmSettings {
        base_url: Some(server.root_url()),
        ..settings("gemini:gemini-2.5-flash".into(), None)
    };
    let client = Client::new(fast_retries(
        LlmConfig::resolve(settings, env, None).unwrap(),
    ))
    .unwrap();
    let question = prompt("x = 1");
    let judgement = client.ask(&question, 1).await.unwrap();
    assert!(judgement.verdict.crash);
    assert_eq!(
        (judgement.usage.input_tokens, judgement.usage.output_tokens),
        (120, 30)
    );
    assert!(
        judgement.cost.unwrap() > 0.0,
        "gemini-2.5-flash is in the price table"
    );

    let request = &server.requests()[0];
    assert_eq!(request.path, "/models/gemini-2.5-flash:generateContent");
    assert_eq!(request.header("x-goog-api-key"), Some(KEY));
    let sent = request.json().unwrap();
    assert_eq!(
        sent["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(
        sent["generationConfig"]["responseJsonSchema"]["required"][1],
        "detection"
    );
    assert!(sent["systemInstruction"].to_string().contains("notebook"));
    assert!(sent["contents"].to_string().contains("# Target Cell"));
}

#[tokio::test]
async fn anthropic_requests_have_anthropic_shape() {
    let server = TestServer::start([Reply::answer(NO_CRASH)]).unwrap();
    let settings = LlmSettings {
        base_url: Some(server.root_url()),
        max_output_tokens: Some(512),
        ..settings("anthropic:claude-sonnet-4-5".into(), None)
    };
    let client = Client::new(fast_retries(
        LlmConfig::resolve(settings, env, None).unwrap(),
    ))
    .unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    assert!(!judgement.verdict.crash);
    assert_eq!(
        (judgement.usage.input_tokens, judgement.usage.output_tokens),
        (120, 30)
    );

    let request = &server.requests()[0];
    assert_eq!(request.path, "/messages");
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert!(request.header("anthropic-version").is_some());
    let sent = request.json().unwrap();
    assert_eq!(sent["max_tokens"], 512);
    assert_eq!(sent["output_config"]["format"]["type"], "json_schema");
    assert!(sent["system"].to_string().contains("notebook"));
}

#[tokio::test]
async fn openai_gpt5_requests_carry_the_reasoning_effort() {
    let server = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let settings = LlmSettings {
        base_url: Some(server.base_url()),
        reasoning_effort: Some(ReasoningEffort::Minimal),
        max_output_tokens: Some(2000),
        ..settings("openai:gpt-5".into(), None)
    };
    let client = Client::new(fast_retries(
        LlmConfig::resolve(settings, env, None).unwrap(),
    ))
    .unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    let expected_cost = (120.0 * 1.25 + 30.0 * 10.0) / 1e6;
    assert!((judgement.cost.unwrap() - expected_cost).abs() < 1e-12);
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "gpt-5");
    assert_eq!(sent["reasoning_effort"], "minimal");
    assert_eq!(sent["max_completion_tokens"], 2000);
}

#[tokio::test]
async fn structured_output_can_be_turned_off() {
    let server = TestServer::start([Reply::answer(format!("Sure! {CRASH}"))]).unwrap();
    let mut config = compat(&server, None);
    config.structured_output = false;
    let judgement = Client::new(config)
        .unwrap()
        .ask(&prompt("x = 1"), 1)
        .await
        .unwrap();
    assert!(judgement.verdict.crash);
    assert!(body(&server, 0).get("response_format").is_none());
}

#[tokio::test]
async fn answers_without_usage_get_estimated_tokens() {
    let server = TestServer::start([Reply::Answer {
        content: CRASH.into(),
        usage: None,
    }])
    .unwrap();
    let judgement = Client::new(compat(&server, None))
        .unwrap()
        .ask(&prompt("x = 1"), 1)
        .await
        .unwrap();
    assert!(judgement.usage.estimated);
    assert!(judgement.usage.input_tokens > 100, "{:?}", judgement.usage);
    assert!(judgement.usage.output_tokens > 20 && judgement.usage.output_tokens < 80);
}

#[tokio::test]
async fn the_connection_test_explains_failures() {
    let server = TestServer::start([
        Reply::answer(r#"{"reasoning": "division by zero", "detection": true}"#),
        Reply::status(401, r#"{"error": "invalid key"}"#),
        Reply::status(404, r#"{"error": "model not found"}"#),
    ])
    .unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let report = client.test_connection().await.unwrap();
    assert_eq!(report.answer_correct, Some(true));
    assert_eq!(report.usage.input_tokens, 120);
    assert!(report.structured_output);

    let err = client.test_connection().await.unwrap_err();
    assert!(err.to_string().contains("CRANE_LLM_API_KEY"), "{err}");
    let err = client.test_connection().await.unwrap_err();
    assert!(err.to_string().contains("/v1"), "{err}");

    // Nothing listens on a port that was just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let model = format!("openai-compat:m@http://127.0.0.1:{port}/v1");
    let mut config = LlmConfig::resolve(settings(model, None), env, None).unwrap();
    config.retry.max_retries = 0;
    let err = Client::new(config)
        .unwrap()
        .test_connection()
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Connect { .. }), "{err}");
    assert!(err.to_string().contains("is the server running"), "{err}");
}

#[test]
fn cloud_providers_need_their_keys() {
    for (model, variable) in [
        ("openai:gpt-5", "OPENAI_API_KEY"),
        ("gemini:gemini-2.5-flash", "GEMINI_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
    ] {
        let config = LlmConfig::resolve(settings(model.into(), None), |_| None, None).unwrap();
        match Client::new(config) {
            Err(err @ LlmError::MissingApiKey { .. }) => {
                assert!(err.to_string().contains(variable), "{err}")
            }
            other => panic!("{model}: {:?}", other.err()),
        }
    }
    let local = LlmConfig::resolve(
        settings("ollama:qwen2.5-coder:32b".into(), None),
        |_| None,
        None,
    )
    .unwrap();
    assert!(Client::new(local).is_ok());
}

#[tokio::test]
async fn requests_per_minute_spaces_a_batch() {
    let server = TestServer::start([])
        .unwrap()
        .with_fallback(Reply::answer(CRASH));
    let mut config = compat(&server, None);
    config.requests_per_minute = Some(300);
    config.concurrency = 2;
    let client = Client::new(config).unwrap();
    client.ask(&prompt("x = 1"), 4).await.unwrap();
    // Starts are 200 ms apart; arrivals can jitter by a connection set-up.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let span = requests[3].received - requests[0].received;
    assert!(span >= Duration::from_millis(500), "{span:?}");
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed() {
    let elsewhere = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let redirect = Reply::status(307, "").with_header(
        "location",
        &format!("{}/chat/completions", elsewhere.base_url()),
    );
    let server = TestServer::start([redirect]).unwrap();
    let client = Client::new(compat(&server, None)).unwrap();
    let error = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(error.to_string().contains("307"), "{error}");
    assert!(
        elsewhere.requests().is_empty(),
        "the prompt must not be re-sent to another origin"
    );
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed() {
    let server = TestServer::start([]).unwrap();
    let moved = format!("{}/moved/chat/completions", server.base_url());
    server.push(Reply::status(307, "").with_header("location", &moved));
    server.push(Reply::answer(CRASH));
    let client = Client::new(compat(&server, None)).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    assert!(judgement.verdict.crash);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].path, "/v1/moved/chat/completions");
    assert!(
        requests[1].json().is_some(),
        "the prompt is re-sent to the same origin"
    );
}

#[tokio::test]
async fn credentials_in_the_endpoint_url_are_never_shown() {
    let server = TestServer::start([Reply::status(503, "down"), Reply::answer(CRASH)]).unwrap();
    let root = server.base_url();
    let with_credentials = root.replacen("http://", "http://user:URLSECRET99@", 1);
    let model = format!("openai-compat:test-model@{with_credentials}");
    let mut config = fast_retries(LlmConfig::resolve(settings(model, None), env, None).unwrap());
    config.retry.max_retries = 0;
    assert!(!config.model.to_string().contains("URLSECRET99"));
    assert!(!describe_request(&config, &prompt("x = 1")).contains("URLSECRET99"));
    let client = Client::new(config.clone()).unwrap();
    let error = client.ask(&prompt("x = 1"), 1).await.unwrap_err();
    assert!(
        !format!("{error} {error:?}").contains("URLSECRET99"),
        "{error}"
    );
    let client = Client::new(config).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    let shown = serde_json::to_string(&judgement.calls).unwrap();
    assert!(!shown.contains("URLSECRET99"), "{shown}");
    assert!(!format!("{judgement:?}").contains("URLSECRET99"));
}

/// A server that echoes the request's URL, its authorization headers and the decoded
/// basic-auth credentials: no form of the URL's `user:password` or of the key reaches an
/// error, a retry record or the cache.
#[tokio::test]
async fn an_echoing_server_gets_no_form_of_the_credentials_into_errors_or_records() {
    use base64::Engine;
    let cache = tempfile::tempdir().unwrap();
    let server = TestServer::start([
        Reply::Echo { status: 503 },
        Reply::answer(CRASH),
        Reply::Echo { status: 401 },
    ])
    .unwrap();
    let url = server
        .base_url()
        .replacen("http://", "http://crane-user:p%40ss-S3CRET@", 1);
    let model = format!("openai-compat:test-model@{url}");
    let config =
        fast_retries(LlmConfig::resolve(settings(model, Some(cache.path())), env, None).unwrap());
    let basic = base64::engine::general_purpose::STANDARD.encode("crane-user:p@ss-S3CRET");
    let forms = [
        "p%40ss-S3CRET",
        "p@ss-S3CRET",
        "crane-user:p%40ss",
        basic.trim_end_matches('='),
        KEY,
    ];
    let leaks = |text: &str| -> Vec<&str> {
        forms
            .iter()
            .copied()
            .filter(|form| text.contains(form))
            .collect()
    };
    let client = Client::new(config.clone()).unwrap();
    let judgement = client.ask(&prompt("x = 1"), 1).await.unwrap();
    let records = serde_json::to_string(&judgement).unwrap() + &format!("{judgement:?}");
    assert!(
        records.contains("denied: url http://127.0.0.1"),
        "{records}"
    );
    assert!(
        leaks(&records).is_empty(),
        "{:?} in {records}",
        leaks(&records)
    );

    let error = client.ask(&prompt("x = 2"), 1).await.unwrap_err();
    let shown = format!("{error}\n{error:?}\n{config:?}");
    assert!(shown.contains("authorization: Basic <redacted>"), "{shown}");
    assert!(shown.contains("credentials <redacted>"), "{shown}");
    assert!(leaks(&shown).is_empty(), "{:?} in {shown}", leaks(&shown));
    for file in walk_files(cache.path()) {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(leaks(&text).is_empty(), "{}", file.display());
    }
    // The credentials were really sent, as basic authentication.
    let sent: Vec<String> = server
        .requests()
        .iter()
        .flat_map(|request| request.headers.clone())
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value)
        .collect();
    assert!(
        sent.iter().any(|value| *value == format!("Basic {basic}")),
        "{sent:?}"
    );
}

fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn cache_entries_are_private_files_in_private_directories() {
    use std::os::unix::fs::MetadataExt;
    let server = TestServer::start([Reply::answer(CRASH)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("llm");
    let client = Client::new(compat(&server, Some(&cache))).unwrap();
    client.ask(&prompt("x = 1"), 1).await.unwrap();
    let mut files = 0;
    let mut pending = vec![cache.clone()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::metadata(&path).unwrap();
        if meta.is_dir() {
            assert_eq!(meta.mode() & 0o777, 0o700, "{}", path.display());
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            assert_eq!(meta.mode() & 0o777, 0o600, "{}", path.display());
            files += 1;
        }
    }
    assert!(files >= 1, "the answer was cached");
}
