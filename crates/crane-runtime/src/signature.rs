//! Call signatures of library callables: the parameters Python binds a call's arguments to
//! (`R.call_signature` of the runtime facts, and the entries of the signature snapshot).
//!
//! Parameters are written in Python's own signature syntax without default values, so a
//! signature costs a few bytes per parameter: `(self, right, how=, on=, *, sort=, **kwargs)`
//! (`=` marks a parameter with a default, `/` ends the positional-only ones, a bare `*` starts
//! the keyword-only ones). [`Signature::parse`] accepts only what a `def` could declare.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a parameter takes its argument (`inspect.Parameter.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParameterKind {
    PositionalOnly,
    PositionalOrKeyword,
    /// `*args`
    VarPositional,
    KeywordOnly,
    /// `**kwargs`
    VarKeyword,
}

impl ParameterKind {
    /// Whether a positional argument can fill it.
    pub fn is_positional(self) -> bool {
        matches!(
            self,
            ParameterKind::PositionalOnly | ParameterKind::PositionalOrKeyword
        )
    }
}

/// One parameter of a signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Parameter {
    pub name: String,
    pub kind: ParameterKind,
    /// Has a default value (never true for `*args` and `**kwargs`).
    pub default: bool,
}

/// The parameters of a callable in declaration order, as a `def` could declare them: the
/// positional-only ones, then the positional-or-keyword ones, at most one `*args`, the
/// keyword-only ones, at most one `**kwargs`; no positional parameter without a default after
/// one with a default; no name twice.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature {
    parameters: Vec<Parameter>,
}

/// Why a signature text does not describe a Python signature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Python signature: {0}")]
pub struct SignatureError(&'static str);

impl Signature {
    /// A signature from parameters in declaration order, checked as a `def` would check them.
    pub fn new(parameters: Vec<Parameter>) -> Result<Signature, SignatureError> {
        let rank = |kind: ParameterKind| match kind {
            ParameterKind::PositionalOnly => 0,
            ParameterKind::PositionalOrKeyword => 1,
            ParameterKind::VarPositional => 2,
            ParameterKind::KeywordOnly => 3,
            ParameterKind::VarKeyword => 4,
        };
        let mut last = 0;
        let mut positional_default = false;
        for (index, parameter) in parameters.iter().enumerate() {
            let current = rank(parameter.kind);
            if current < last
                || (current == last && matches!(current, 2 | 4) && index > 0)
                || (last == 4 && index > 0)
            {
                return Err(SignatureError("parameters out of order"));
            }
            last = current;
            if !is_identifier(&parameter.name) {
                return Err(SignatureError("a parameter name is not an identifier"));
            }
            if parameters[..index].iter().any(|p| p.name == parameter.name) {
                return Err(SignatureError("a parameter name appears twice"));
            }
            match parameter.kind {
                ParameterKind::VarPositional | ParameterKind::VarKeyword if parameter.default => {
                    return Err(SignatureError("*args and **kwargs have no default"));
                }
                kind if kind.is_positional() => {
                    if positional_default && !parameter.default {
                        return Err(SignatureError(
                            "a positional parameter without a default follows one with a default",
                        ));
                    }
                    positional_default |= parameter.default;
                }
                _ => {}
            }
        }
        Ok(Signature { parameters })
    }

    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// Parse `(a, b=, /, c, *args, d=, **kw)`.
    pub fn parse(text: &str) -> Result<Signature, SignatureError> {
        let inner = text
            .trim()
            .strip_prefix('(')
            .and_then(|rest| rest.strip_suffix(')'))
            .ok_or(SignatureError("not in parentheses"))?;
        let items: Vec<&str> = if inner.trim().is_empty() {
            Vec::new()
        } else {
            inner.split(',').map(str::trim).collect()
        };
        let slash = items.iter().position(|item| *item == "/");
        if slash.is_some_and(|at| at == 0 || items[at + 1..].contains(&"/")) {
            return Err(SignatureError("misplaced `/`"));
        }
        let mut parameters = Vec::with_capacity(items.len());
        let mut keyword_only = false;
        let mut bare_star = false;
        for (index, item) in items.iter().enumerate() {
            if *item == "/" {
                continue;
            }
            if *item == "*" {
                if keyword_only {
                    return Err(SignatureError("two `*`"));
                }
                keyword_only = true;
                bare_star = true;
                continue;
            }
            let (kind, name) = if let Some(name) = item.strip_prefix("**") {
                (ParameterKind::VarKeyword, name)
            } else if let Some(name) = item.strip_prefix('*') {
                if keyword_only {
                    return Err(SignatureError("two `*`"));
                }
                keyword_only = true;
                (ParameterKind::VarPositional, name)
            } else if keyword_only {
                (ParameterKind::KeywordOnly, *item)
            } else if slash.is_some_and(|at| index < at) {
                (ParameterKind::PositionalOnly, *item)
            } else {
                (ParameterKind::PositionalOrKeyword, *item)
            };
            let (name, default) = match name.strip_suffix('=') {
                Some(name) => (name, true),
                None => (name, false),
            };
            parameters.push(Parameter {
                name: name.to_owned(),
                kind,
                default,
            });
        }
        if bare_star
            && !parameters
                .iter()
                .any(|p| p.kind == ParameterKind::KeywordOnly)
        {
            return Err(SignatureError("a bare `*` without keyword-only parameters"));
        }
        Signature::new(parameters)
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut items = Vec::with_capacity(self.parameters.len() + 2);
        let has_var_positional = self
            .parameters
            .iter()
            .any(|p| p.kind == ParameterKind::VarPositional);
        for (index, parameter) in self.parameters.iter().enumerate() {
            let previous = index.checked_sub(1).map(|i| self.parameters[i].kind);
            if previous == Some(ParameterKind::PositionalOnly)
                && parameter.kind != ParameterKind::PositionalOnly
            {
                items.push("/".to_owned());
            }
            if parameter.kind == ParameterKind::KeywordOnly
                && !has_var_positional
                && previous != Some(ParameterKind::KeywordOnly)
            {
                items.push("*".to_owned());
            }
            let prefix = match parameter.kind {
                ParameterKind::VarPositional => "*",
                ParameterKind::VarKeyword => "**",
                _ => "",
            };
            let suffix = if parameter.default { "=" } else { "" };
            items.push(format!("{prefix}{}{suffix}", parameter.name));
        }
        if self.parameters.last().map(|p| p.kind) == Some(ParameterKind::PositionalOnly) {
            items.push("/".to_owned());
        }
        write!(f, "({})", items.join(", "))
    }
}

impl Serialize for Signature {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Signature::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Whose code turns a call's arguments into parameters: it decides the `TypeError`'s message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Binder {
    /// The interpreter itself, calling a plain `def` (`f() got an unexpected keyword ...`).
    Interpreter,
    /// A library wrapper that checks the arguments with `inspect.Signature.bind` before it
    /// calls the function (`got an unexpected keyword ...`): scikit-learn's `validate_params`.
    SignatureBind,
}

/// What a call of a library callable binds its arguments to (`R.call_signature`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallSignature {
    /// The callable's identity, `module.qualname` (`pandas.io.parsers.readers.read_csv`).
    pub callable: String,
    /// The name Python's messages give it (the function's `__qualname__`: `read_csv`,
    /// `DataFrame.merge`, `LogisticRegression.__init__`).
    pub name: String,
    /// The parameters of the function that runs, `self` included for methods.
    pub parameters: Signature,
    /// The first positional parameter is filled before the call's own arguments: a bound
    /// method's `self` or `cls`, a constructor's new instance.
    #[serde(default)]
    pub bound: bool,
    pub binder: Binder,
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_round_trip_through_their_text() {
        for text in [
            "()",
            "(a, b=, /, c=, *args, d, e=, **kw)",
            "(self, right, how=, *, sort=)",
            "(a, /)",
            "(*, key)",
            "(**kwargs)",
            "(x, *args)",
        ] {
            let signature = Signature::parse(text).unwrap();
            assert_eq!(signature.to_string(), text);
        }
        let signature = Signature::parse("(a, b=, /, c=, *args, d, **kw)").unwrap();
        let kinds: Vec<_> = signature.parameters().iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [
                ParameterKind::PositionalOnly,
                ParameterKind::PositionalOnly,
                ParameterKind::PositionalOrKeyword,
                ParameterKind::VarPositional,
                ParameterKind::KeywordOnly,
                ParameterKind::VarKeyword
            ]
        );
        assert!(signature.parameters()[1].default && !signature.parameters()[3].default);
    }

    #[test]
    fn what_no_def_could_declare_is_refused() {
        for text in [
            "a, b",
            "(a=, b)",
            "(a, a)",
            "(*a, *b)",
            "(**kw, a)",
            "(/, a)",
            "(*)",
            "(a, *, *b)",
            "(*args=)",
            "(1a)",
            "(a, /, b, /)",
        ] {
            assert!(Signature::parse(text).is_err(), "{text}");
        }
    }
}
