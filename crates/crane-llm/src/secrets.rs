//! The secrets of a configured provider, and the one scrubber that every message, report, log
//! and cache entry crane makes from an LLM call goes through. A secret is scrubbed in each form
//! it can travel in: the API key as set and percent-encoded; the `user:password` of an endpoint
//! URL as written, percent-decoded, alone (the password, or a lone user name, which is then the
//! token) and base64-encoded as HTTP basic authentication sends it.

use std::fmt;

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use base64::Engine;
use percent_encoding::{percent_decode_str, utf8_percent_encode, NON_ALPHANUMERIC};

use crate::config::LlmConfig;

/// What a scrubbed secret is replaced by.
pub const REDACTED: &str = "<redacted>";

/// The secrets to scrub. Its `Debug` shows none of them.
#[derive(Clone, Default)]
pub struct Secrets {
    /// `user:password@` as written in a URL: removed, so the URL reads as if it had none.
    userinfo: Vec<String>,
    /// Every other form, replaced by [`REDACTED`]; longest first, so no form is left half
    /// replaced by a shorter one.
    forms: Vec<String>,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Secrets(<{} forms redacted>)",
            self.userinfo.len() + self.forms.len()
        )
    }
}

impl Secrets {
    /// The API key and the endpoint's URL credentials of `config`.
    pub fn of(config: &LlmConfig) -> Secrets {
        let mut secrets = Secrets::default();
        if let Some(key) = &config.api_key {
            secrets.add_key(key.expose());
        }
        if let Some(remote) = config.model.as_remote() {
            if let Some(url) = &remote.base_url {
                secrets.add_url(url);
            }
        }
        secrets
    }

    /// The URL credentials in `text` (a URL or a model string holding one).
    pub fn of_url(text: &str) -> Secrets {
        let mut secrets = Secrets::default();
        secrets.add_url(text);
        secrets
    }

    /// Adds a key (sent as set, e.g. in a header).
    pub fn add_key(&mut self, key: &str) {
        let key = key.trim();
        if key.is_empty() {
            return;
        }
        let encoded = utf8_percent_encode(key, NON_ALPHANUMERIC).to_string();
        self.add_forms([key.to_owned(), encoded]);
    }

    /// Adds the `user:password@` of the URL in `text`, if it has one.
    pub fn add_url(&mut self, text: &str) {
        let Some(userinfo) = url_credentials(text) else {
            return;
        };
        let written = userinfo.trim_end_matches('@').to_owned();
        let (user, password) = match written.split_once(':') {
            Some((user, password)) => (user.to_owned(), password.to_owned()),
            None => (written.clone(), String::new()),
        };
        let decode = |part: &str| percent_decode_str(part).decode_utf8_lossy().into_owned();
        let (plain_user, plain_password) = (decode(&user), decode(&password));
        let mut forms = vec![written.clone(), format!("{plain_user}:{plain_password}")];
        // A URL with a user name only carries its token there.
        if password.is_empty() {
            forms.extend([user.clone(), plain_user.clone()]);
        } else {
            forms.extend([password.clone(), plain_password.clone()]);
        }
        // HTTP basic authentication sends base64 of the decoded `user:password`; the unpadded
        // form scrubs what a server quotes without the padding.
        for pair in [format!("{plain_user}:{plain_password}"), written.clone()] {
            forms.push(STANDARD.encode(&pair));
            forms.push(STANDARD_NO_PAD.encode(&pair));
            forms.push(URL_SAFE_NO_PAD.encode(&pair));
        }
        self.add_forms(forms);
        if !self.userinfo.contains(&userinfo) {
            self.userinfo.push(userinfo);
        }
    }

    /// Adds every secret of `other`.
    pub fn extend(&mut self, other: &Secrets) {
        self.add_forms(other.forms.iter().cloned());
        for userinfo in &other.userinfo {
            if !self.userinfo.contains(userinfo) {
                self.userinfo.push(userinfo.clone());
            }
        }
    }

    fn add_forms(&mut self, forms: impl IntoIterator<Item = String>) {
        for form in forms {
            if !form.is_empty() && !self.forms.contains(&form) {
                self.forms.push(form);
            }
        }
        self.forms
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    }

    /// `text` with every form of every secret removed.
    pub fn scrub(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for userinfo in &self.userinfo {
            text = text.replace(userinfo.as_str(), "");
        }
        for form in &self.forms {
            text = text.replace(form.as_str(), REDACTED);
        }
        text
    }
}

/// The `user:password@` part of the URL in `text`, if it has one.
pub fn url_credentials(text: &str) -> Option<String> {
    let shown = without_url_credentials(text);
    (shown.len() < text.len()).then(|| {
        let start = text.find("://").map_or(0, |i| i + 3);
        text[start..start + text.len() - shown.len()].to_string()
    })
}

/// `text` (a URL, or a model string holding one) without the URL's `user:password@`.
pub fn without_url_credentials(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_string();
    };
    let authority_start = scheme_end + 3;
    let authority_end = text[authority_start..]
        .find('/')
        .map_or(text.len(), |i| authority_start + i);
    match text[authority_start..authority_end].rfind('@') {
        Some(at) => format!(
            "{}{}",
            &text[..authority_start],
            &text[authority_start + at + 1..]
        ),
        None => text.to_string(),
    }
}

/// `text` (a URL, or a model string holding one) with `userinfo` (`user:password`, as written
/// in a URL) as its URL's credentials; unchanged when it holds no URL.
pub fn with_url_credentials(text: &str, userinfo: &str) -> String {
    let bare = without_url_credentials(text);
    match bare.find("://") {
        Some(scheme_end) if !userinfo.is_empty() => format!(
            "{}{userinfo}@{}",
            &bare[..scheme_end + 3],
            &bare[scheme_end + 3..]
        ),
        _ => bare,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_are_removed_and_put_back() {
        assert_eq!(
            without_url_credentials("openai-compat:m@https://user:secret@host:8000/v1"),
            "openai-compat:m@https://host:8000/v1"
        );
        assert_eq!(
            without_url_credentials("openai-compat:m@http://127.0.0.1:9/v1"),
            "openai-compat:m@http://127.0.0.1:9/v1"
        );
        assert_eq!(
            url_credentials("http://user:secret@host:8000/v1").as_deref(),
            Some("user:secret@")
        );
        assert_eq!(url_credentials("http://host:8000/v1"), None);
        assert_eq!(
            with_url_credentials("openai-compat:m@http://old@host/v1", "u:p%40ss"),
            "openai-compat:m@http://u:p%40ss@host/v1"
        );
        assert_eq!(with_url_credentials("openai:gpt-5", "u:p"), "openai:gpt-5");
    }

    #[test]
    fn every_form_of_the_url_credentials_and_key_is_scrubbed() {
        let mut secrets = Secrets::of_url("openai-compat:m@http://crane-user:p%40ss-S3CRET@h/v1");
        secrets.add_key("sk-key/42");
        let basic = base64::engine::general_purpose::STANDARD.encode("crane-user:p@ss-S3CRET");
        let text = format!(
            "openai-compat:m@http://crane-user:p%40ss-S3CRET@h/v1 Basic {basic} \
             crane-user:p@ss-S3CRET p%40ss-S3CRET p@ss-S3CRET Bearer sk-key/42 key=sk%2Dkey%2F42"
        );
        let scrubbed = secrets.scrub(&text);
        for secret in ["S3CRET", "sk-key", &basic[..basic.len() - 2], "sk%2Dkey"] {
            assert!(!scrubbed.contains(secret), "{secret} in {scrubbed}");
        }
        assert!(scrubbed.starts_with("openai-compat:m@http://h/v1 Basic <redacted>"));
        assert!(!format!("{secrets:?}").contains("S3CRET"));

        let token = Secrets::of_url("https://tok3n@h/v1");
        assert_eq!(
            token.scrub("https://tok3n@h/v1 tok3n"),
            "https://h/v1 <redacted>"
        );
    }
}
