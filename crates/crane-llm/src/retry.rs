//! When to try a failed request again and how long to wait: exponential backoff with jitter,
//! overridden by the provider's own hints (`Retry-After` in seconds or as an HTTP date,
//! OpenAI's `retry-after-ms`, `x-should-retry`, Gemini's `RetryInfo.retryDelay`).

use std::time::{Duration, SystemTime};

use serde_json::Value;

/// How failed requests are retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// The first backoff; each further retry doubles it.
    pub base_delay: Duration,
    /// Upper bound of a computed backoff.
    pub max_delay: Duration,
    /// A provider asking to wait longer than this is not retried: the call fails with the
    /// requested wait in the error.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// The backoff before retry number `retry` (0-based) when the provider gave no hint:
    /// half of `base * 2^retry` (capped) plus a random share of the other half.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponential = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(retry.min(30)))
            .min(self.max_delay);
        let half = exponential / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// The wait before retry number `retry`: the provider's hint when it gave one (plus up to
    /// 10% jitter, never less than the hint), else the backoff.
    pub fn delay(&self, retry: u32, hint: Option<Duration>) -> Duration {
        match hint {
            Some(hint) => hint + hint.mul_f64(0.1 * fastrand::f64()),
            None => self.backoff(retry),
        }
    }
}

/// What a failed response says about retrying.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RetryHints {
    pub retry_after: Option<Duration>,
    /// `x-should-retry`, when the provider sent it.
    pub should_retry: Option<bool>,
}

impl RetryHints {
    /// Reads the hints from a failed response's headers (looked up by lower-case name) and body.
    pub fn read(header: impl Fn(&str) -> Option<String>, body: &str) -> RetryHints {
        let retry_after = header("retry-after-ms")
            .and_then(|ms| ms.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .or_else(|| header("retry-after").and_then(|value| parse_retry_after(&value)))
            .or_else(|| gemini_retry_delay(body));
        let should_retry = header("x-should-retry").and_then(|value| match value.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
        RetryHints {
            retry_after,
            should_retry,
        }
    }
}

/// `Retry-After`: delay-seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Gemini's `error.details[] {"@type": ".../google.rpc.RetryInfo", "retryDelay": "37s"}`.
fn gemini_retry_delay(body: &str) -> Option<Duration> {
    let body: Value = serde_json::from_str(body).ok()?;
    body.pointer("/error/details")?
        .as_array()?
        .iter()
        .filter(|detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kind.ends_with("google.rpc.RetryInfo"))
        })
        .find_map(|detail| {
            let delay = detail.get("retryDelay")?.as_str()?;
            let seconds: f64 = delay.strip_suffix('s')?.parse().ok()?;
            (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
        })
}

/// Statuses worth retrying: timeouts, rate limits, overload and transient server errors.
pub(crate) fn is_retriable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 425 | 429 | 500 | 502 | 503 | 504 | 529)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn headers(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn backoff_grows_exponentially_within_bounds() {
        let policy = RetryPolicy::default();
        for retry in 0..10 {
            let nominal = Duration::from_secs(1 << retry.min(6)).min(policy.max_delay);
            for _ in 0..20 {
                let wait = policy.backoff(retry);
                assert!(wait >= nominal / 2 && wait <= nominal, "{retry}: {wait:?}");
            }
        }
    }

    #[test]
    fn hints_override_the_backoff_and_are_never_shortened() {
        let policy = RetryPolicy::default();
        let hint = Duration::from_secs(7);
        for _ in 0..20 {
            let wait = policy.delay(0, Some(hint));
            assert!(wait >= hint && wait <= hint.mul_f64(1.1));
        }
    }

    #[test]
    fn reads_every_kind_of_hint() {
        let seconds = RetryHints::read(headers(&[("retry-after", "3")]), "");
        assert_eq!(seconds.retry_after, Some(Duration::from_secs(3)));

        let millis = RetryHints::read(
            headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
            "",
        );
        assert_eq!(millis.retry_after, Some(Duration::from_millis(1500)));

        let future = SystemTime::now() + Duration::from_secs(120);
        let date = RetryHints::read(
            headers(&[("retry-after", &httpdate::fmt_http_date(future))]),
            "",
        );
        let wait = date.retry_after.unwrap();
        assert!(wait > Duration::from_secs(115) && wait <= Duration::from_secs(120));

        let gemini = r#"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure"},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}"#;
        assert_eq!(
            RetryHints::read(headers(&[]), gemini).retry_after,
            Some(Duration::from_secs(37))
        );

        let refuse = RetryHints::read(headers(&[("x-should-retry", "false")]), "");
        assert_eq!(refuse.should_retry, Some(false));
        assert_eq!(
            RetryHints::read(headers(&[]), "not json"),
            RetryHints::default()
        );
    }
}
