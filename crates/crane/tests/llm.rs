//! `crane check --llm openai-compat:MODEL@URL` end to end against a local server speaking the
//! OpenAI-compatible chat protocol: prompt sent, answer read, tokens and latency reported,
//! hybrid policy applied, no API key leaked.

mod common;

use common::{repo_root, stderr, stdout};
use crane_llm::test_server::{Reply, TestServer};
use serde_json::Value;

fn crane_with(args: &[&str], cache: &std::path::Path) -> std::process::Output {
    common::crane_command(args)
        .env("XDG_CACHE_HOME", cache)
        .env("OPENAI_API_KEY", "sk-test-secret-123")
        .output()
        .expect("run crane")
}

#[test]
fn check_with_an_openai_compatible_server_reports_tokens_latency_and_hybrid_verdict() {
    let answer = r#"{"detection": true, "reasoning": "df has no column 'Cabin': it was dropped in cell 2.", "exception": "KeyError", "line": 2, "confidence": 0.9, "evidence": ["df columns lack Cabin"]}"#;
    let server = TestServer::start([Reply::answer(answer)]).expect("server");
    let cache = tempfile::tempdir().unwrap();
    let model = format!("openai-compat:tiny-model@{}", server.base_url());
    let example = repo_root().join("examples/titanic_like.ipynb");
    let output = crane_with(
        &[
            "check",
            example.to_str().unwrap(),
            "--llm",
            &model,
            "--format",
            "json",
            "--quiet",
        ],
        cache.path(),
    );
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(report["verdict"]["crash"], true);
    assert_eq!(report["verdict"]["detector"], "hybrid");
    let llm = &report["llm"];
    assert_eq!(llm["input_tokens"], 120);
    assert_eq!(llm["output_tokens"], 30);
    assert!(llm["latency_ms"].is_u64());
    let detectors: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["detector"].as_str().unwrap())
        .collect();
    assert!(
        detectors.contains(&"rules") && detectors.contains(&"llm"),
        "{detectors:?}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = requests[0].json().expect("JSON request");
    let prompt = body.to_string();
    assert!(
        prompt.contains("# Target Cell") && prompt.contains("df['Cabin']"),
        "{prompt}"
    );
    assert!(
        prompt.contains("runtime information"),
        "the +RT prompt carries runtime facts"
    );

    assert!(!stderr(&output).contains("sk-test-secret-123"));
}

#[test]
fn a_repeated_check_is_answered_from_the_cache_which_holds_no_key() {
    let answer = r#"{"detection": false, "reasoning": "x is an int, so x + 1 works."}"#;
    let server = TestServer::start([Reply::answer(answer)]).expect("server");
    let cache = tempfile::tempdir().unwrap();
    let model = format!("openai-compat:tiny-model@{}", server.base_url());
    let dir = tempfile::tempdir().unwrap();
    let nb = dir.path().join("nb.ipynb");
    common::write_notebook(&nb, &[("x = 1", Some(1)), ("y = x + 1", None)]);
    let args = [
        "check",
        nb.to_str().unwrap(),
        "--llm",
        &model,
        "--format",
        "json",
        "--quiet",
    ];
    let first = crane_with(&args, cache.path());
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let again = crane_with(&args, cache.path());
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let report: Value = serde_json::from_str(&stdout(&again)).unwrap();
    assert_eq!(report["llm"]["cached"], true);
    assert_eq!(
        server.requests().len(),
        1,
        "a cached answer costs no request"
    );
    let files = walk(cache.path());
    assert!(!files.is_empty(), "the answer was cached");
    for entry in files {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("sk-test-secret-123"),
            "key leaked into {}",
            entry.display()
        );
    }
}

#[test]
fn show_prompt_prints_the_prompt_and_sends_nothing() {
    let server = TestServer::start([]).expect("server");
    let cache = tempfile::tempdir().unwrap();
    let model = format!("openai-compat:tiny-model@{}", server.base_url());
    let example = repo_root().join("examples/titanic_like.ipynb");
    let output = crane_with(
        &[
            "check",
            example.to_str().unwrap(),
            "--llm",
            &model,
            "--show-prompt",
            "--redact",
            "values",
            "--quiet",
        ],
        cache.path(),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("# Executed Cells") && text.contains("# Target Cell"),
        "{text}"
    );
    assert!(server.requests().is_empty());
}

#[test]
fn an_unreadable_answer_is_a_detector_failure_not_a_silent_no() {
    let server = TestServer::start([])
        .expect("server")
        .with_fallback(Reply::answer("I think it might be fine, hard to say."));
    let cache = tempfile::tempdir().unwrap();
    let model = format!("openai-compat:tiny-model@{}", server.base_url());
    let dir = tempfile::tempdir().unwrap();
    let nb = dir.path().join("nb.ipynb");
    common::write_notebook(&nb, &[("x = 1", Some(1)), ("y = x + 1", None)]);
    let output = crane_with(
        &[
            "check",
            nb.to_str().unwrap(),
            "--llm",
            &model,
            "--detector",
            "llm",
        ],
        cache.path(),
    );
    assert_eq!(
        output.status.code(),
        Some(4),
        "{}{}",
        stdout(&output),
        stderr(&output)
    );
    assert!(stderr(&output).contains("error:"));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// An LLM that fails (503, then an off-schema answer) degrades the verdict, not the check: the
/// rules' proven crash is reported, the failure is a warning and a JSON field, and the exit
/// code says "crash predicted".
#[test]
fn a_failing_llm_leaves_the_rules_verdict_standing() {
    let example = repo_root().join("examples/titanic_like.ipynb");
    for reply in [
        Reply::status(503, "overloaded"),
        Reply::answer("not json at all"),
        Reply::answer(r#"{"verdict": "maybe"}"#),
    ] {
        let server = TestServer::start([]).expect("server").with_fallback(reply);
        let cache = tempfile::tempdir().unwrap();
        let model = format!("openai-compat:tiny-model@{}", server.base_url());
        let output = crane_with(
            &[
                "check",
                example.to_str().unwrap(),
                "--llm",
                &model,
                "--format",
                "json",
            ],
            cache.path(),
        );
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["verdict"]["crash"], true);
        assert_eq!(report["verdict"]["detector"], "rules");
        let failures = report["detector_failures"].as_array().unwrap();
        assert_eq!(failures.len(), 1, "{failures:?}");
        assert_eq!(failures[0]["detector"], "llm");
        assert!(
            stderr(&output).contains("the llm detector failed"),
            "{}",
            stderr(&output)
        );
    }
}

/// A server that echoes the request's URL, authorization headers and decoded basic-auth
/// credentials in its error: no form of the endpoint's `user:password` or of the key is in
/// `crane check`'s stderr or its JSON `detector_failures`.
#[test]
fn an_echoed_server_error_shows_no_form_of_the_credentials() {
    use base64::Engine;
    let server = TestServer::start([])
        .expect("server")
        .with_fallback(Reply::Echo { status: 401 });
    let cache = tempfile::tempdir().unwrap();
    let url = server
        .base_url()
        .replacen("http://", "http://crane-user:p%40ss-S3CRET@", 1);
    let model = format!("openai-compat:tiny-model@{url}");
    let example = repo_root().join("examples/titanic_like.ipynb");
    let output = common::crane_command(&[
        "check",
        example.to_str().unwrap(),
        "--llm",
        &model,
        "--format",
        "json",
    ])
    .env("XDG_CACHE_HOME", cache.path())
    .env("CRANE_LLM_API_KEY", "sk-compat-K3Y-0123456789")
    .output()
    .expect("run crane");
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let failure = report["detector_failures"][0]["error"].as_str().unwrap();
    assert!(
        failure.contains("denied: url http://127.0.0.1"),
        "{failure}"
    );
    let basic = base64::engine::general_purpose::STANDARD.encode("crane-user:p@ss-S3CRET");
    let shown = format!("{}\n{}", stdout(&output), stderr(&output));
    for form in [
        "p%40ss-S3CRET",
        "p@ss-S3CRET",
        "crane-user:p",
        basic.trim_end_matches('='),
        "sk-compat-K3Y",
    ] {
        assert!(!shown.contains(form), "{form} in {shown}");
    }
}
