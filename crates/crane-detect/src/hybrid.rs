//! The hybrid detector: rule findings joined with an LLM's answer (policy in `docs/rules.md`).
//!
//! - A proven rule crash stands, whatever the LLM says.
//! - An LLM crash claim whose stated reason the runtime facts contradict (a column said to be
//!   missing that the frame has, a name said to be undefined that the kernel holds, an
//!   estimator said to be unfitted that is fitted) is refuted: its confidence drops and it no
//!   longer decides the verdict.
//! - Otherwise the LLM's verdict holds, including a crash no rule found.

use std::collections::HashSet;

use crane_runtime::{Kind, RuntimeInfo, Variable};
use serde::Serialize;

use crate::rules::CheckContext;
use crate::{combine, Finding, FindingStatus, Verdict};

/// What a refuted claim's confidence is multiplied by.
const REFUTED_WEIGHT: f32 = 0.25;

/// The findings of the hybrid detector and the verdict they give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hybrid {
    pub findings: Vec<Finding>,
    pub verdict: Verdict,
}

/// Join rule findings with the LLM's finding, knowing only the runtime facts: the claims
/// checked are those the cell cannot change (a name the kernel holds said to be undefined).
/// [`hybrid_in_context`] also checks claims about columns and fitted state.
pub fn hybrid(rule_findings: &[Finding], llm: &Finding, runtime: &RuntimeInfo) -> Hybrid {
    join(rule_findings, llm, runtime, None)
}

/// Join rule findings with the LLM's finding, checking its claims against the runtime facts and
/// what the target cell itself changes.
pub fn hybrid_in_context(
    rule_findings: &[Finding],
    llm: &Finding,
    context: &CheckContext,
) -> Hybrid {
    let scope = CellScope::of(context);
    join(rule_findings, llm, context.runtime, Some(&scope))
}

fn join(
    rule_findings: &[Finding],
    llm: &Finding,
    runtime: &RuntimeInfo,
    scope: Option<&CellScope>,
) -> Hybrid {
    let mut findings = rule_findings.to_vec();
    let mut llm = llm.clone();
    if llm.crash && llm.status == FindingStatus::Predicted {
        let text = std::iter::once(llm.diagnosis.as_str())
            .chain(llm.evidence.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        if let Some(contradiction) = contradiction(&text, runtime, scope) {
            llm.status = FindingStatus::Refuted;
            llm.confidence *= REFUTED_WEIGHT;
            llm.evidence.push(format!(
                "contradicted by the runtime facts: {contradiction}"
            ));
        }
    }
    findings.push(llm);
    let verdict = combine(&findings);
    Hybrid { findings, verdict }
}

/// What the target cell does that could make pre-cell facts stale.
struct CellScope {
    /// Names the cell binds, deletes, or changes in place (subscript or attribute assignment,
    /// `inplace=True`).
    rebound: HashSet<String>,
    /// The cell uses operations that add, remove or rename columns.
    reshapes_frames: bool,
}

const FRAME_RESHAPING: &[&str] = &[
    "drop",
    "del ",
    "pop(",
    "rename",
    ".columns",
    "inplace",
    "set_index",
    "reset_index",
    "pivot",
    "melt",
    "stack",
    "merge",
    "join",
    "concat",
    "get_dummies",
    "select_dtypes",
    "filter(",
    "groupby",
    "agg",
    "value_counts",
    "describe",
    ".T",
    "transpose",
    "insert(",
    "assign(",
    "apply(",
    "crosstab",
    "resample",
    "explode",
    "to_frame",
    "DataFrame(",
    "read_",
];

impl CellScope {
    fn of(context: &CheckContext) -> CellScope {
        let mut rebound = HashSet::new();
        if let Ok(analysis) = context.analysis {
            rebound.extend(analysis.bindings.iter().map(|b| b.name.clone()));
            rebound.extend(analysis.deletions.iter().map(|d| d.name.clone()));
        }
        rebound.extend(crate::rules::changed_in_place(context.target.source()));
        CellScope {
            rebound,
            reshapes_frames: FRAME_RESHAPING
                .iter()
                .any(|op| context.target.source().contains(op)),
        }
    }
}

/// The first claim of `text` that the facts contradict, described.
fn contradiction(text: &str, runtime: &RuntimeInfo, scope: Option<&CellScope>) -> Option<String> {
    sentences(text).into_iter().find_map(|sentence| {
        undefined_name_claim(&sentence, runtime)
            .or_else(|| nan_intolerance_claim(&sentence, runtime))
            .or_else(|| missing_method_claim(&sentence))
            .or_else(|| scope.and_then(|scope| missing_column_claim(&sentence, runtime, scope)))
            .or_else(|| scope.and_then(|scope| unfitted_claim(&sentence, runtime, scope)))
            .or_else(|| scope.and_then(|scope| nan_claim(&sentence, runtime, scope)))
    })
}

/// "`x` is not defined" where the kernel holds `x`.
fn undefined_name_claim(sentence: &str, runtime: &RuntimeInfo) -> Option<String> {
    let lower = sentence.to_lowercase();
    const PREDICATES: &[&str] = &[
        "not defined",
        "undefined",
        "nameerror",
        "never defined",
        "not been defined",
    ];
    if !PREDICATES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let mut names: Vec<String> = quoted(sentence)
        .into_iter()
        .filter(|token| is_identifier(token))
        .collect();
    for predicate in [" is not defined", " are not defined", " is undefined"] {
        if let Some(position) = sentence.find(predicate) {
            if let Some(word) = sentence[..position].split_whitespace().last() {
                let word = word.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
                if is_identifier(word) {
                    names.push(word.to_owned());
                }
            }
        }
    }
    names.dedup();
    if names.is_empty() {
        return None;
    }
    let held = |name: &String| {
        runtime
            .get(name)
            .is_some_and(|variable| !variable.is_absent() && variable.error.is_none())
    };
    if !names.iter().all(held) {
        return None;
    }
    Some(format!("the kernel holds {}", names.join(", ")))
}

/// "column 'c' is missing" where every frame the sentence names (or every frame, when it names
/// none) has the column, and the cell does not change frames' columns.
fn missing_column_claim(
    sentence: &str,
    runtime: &RuntimeInfo,
    scope: &CellScope,
) -> Option<String> {
    if scope.reshapes_frames {
        return None;
    }
    let lower = sentence.to_lowercase();
    const PREDICATES: &[&str] = &[
        "not found",
        "does not exist",
        "doesn't exist",
        "not exist",
        "no column",
        "not present",
        "not in the",
        "keyerror",
        "missing column",
        "is missing",
        "are missing",
        "absent",
        "not a column",
        "no such column",
        "lacks",
        "nonexistent",
        "non-existent",
        "does not contain",
        "doesn't contain",
        "does not have",
        "doesn't have",
    ];
    if !PREDICATES.iter().any(|p| lower.contains(p))
        || lower.contains("missing value")
        || lower.contains("nan")
        || lower.contains("null")
    {
        return None;
    }
    let frames: Vec<(&String, &Variable)> = runtime
        .variables
        .iter()
        .filter(|(name, variable)| {
            variable.kind == Kind::Dataframe
                && is_identifier(name)
                && !scope.rebound.contains(*name)
        })
        .collect();
    let named: Vec<(&String, &Variable)> = frames
        .iter()
        .copied()
        .filter(|(name, _)| mentions(sentence, name))
        .collect();
    let relevant = if named.is_empty() { frames } else { named };
    if relevant.is_empty() {
        return None;
    }
    let tokens: Vec<String> = quoted(sentence)
        .into_iter()
        .filter(|token| runtime.get(token).is_none() && !token.contains('['))
        .collect();
    if tokens.is_empty() {
        return None;
    }
    for (_, frame) in &relevant {
        let columns = crate::rules::plain_column_names(frame)?;
        if !tokens
            .iter()
            .all(|token| columns.iter().any(|c| c == token))
        {
            return None;
        }
    }
    let frames: Vec<&str> = relevant.iter().map(|(name, _)| name.as_str()).collect();
    Some(format!(
        "{} {} column{} {}",
        frames.join(", "),
        if frames.len() == 1 { "has" } else { "have" },
        if tokens.len() == 1 { "" } else { "s" },
        tokens.join(", ")
    ))
}

/// "`model` is not fitted" where the kernel's `model` is fitted and the cell does not rebind it.
fn unfitted_claim(sentence: &str, runtime: &RuntimeInfo, scope: &CellScope) -> Option<String> {
    let lower = sentence.to_lowercase();
    const PREDICATES: &[&str] = &[
        "not fitted",
        "notfittederror",
        "not been fitted",
        "hasn't been fitted",
        "unfitted",
        "not yet fitted",
        "not trained",
        "before fitting",
    ];
    if !PREDICATES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let estimators: Vec<&String> = runtime
        .variables
        .iter()
        .filter(|(name, variable)| {
            variable.kind == Kind::Estimator
                && is_identifier(name)
                && mentions(sentence, name)
                && !scope.rebound.contains(*name)
        })
        .map(|(name, _)| name)
        .collect();
    if estimators.is_empty() {
        return None;
    }
    let all_fitted = estimators
        .iter()
        .all(|name| runtime.get(name).and_then(Variable::fitted) == Some(true));
    all_fitted.then(|| {
        let names: Vec<&str> = estimators.iter().map(|n| n.as_str()).collect();
        format!("{} fitted", names.join(", "))
    })
}

/// "a Categorical has no method `rename_categories`" where the one library type the sentence
/// names has every attribute it quotes.
fn missing_method_claim(sentence: &str) -> Option<String> {
    let lower = sentence.to_lowercase();
    const PREDICATES: &[&str] = &[
        "no attribute",
        "does not have",
        "doesn't have",
        "has no method",
        "no such method",
        "not have a",
        "not a method",
        "attributeerror",
    ];
    if !PREDICATES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    let words: Vec<&str> = sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| crate::rules::library_type_has(w, "").is_some())
        .collect();
    let types = dedup(words);
    let [type_word] = types.as_slice() else {
        return None;
    };
    let attributes: Vec<String> = quoted(sentence)
        .into_iter()
        .map(|token| {
            token
                .trim_start_matches('.')
                .trim_end_matches("()")
                .to_owned()
        })
        .filter(|token| is_identifier(token) && token != type_word)
        .collect();
    if attributes.is_empty()
        || !attributes
            .iter()
            .all(|attr| crate::rules::library_type_has(type_word, attr) == Some(true))
    {
        return None;
    }
    Some(format!("{type_word} has {}", attributes.join(", ")))
}

fn dedup(mut words: Vec<&str>) -> Vec<&str> {
    words.sort_unstable();
    words.dedup();
    words
}

const NAN_WORDS: &[&str] = &["nan", "missing value", "null value", "missing data"];

/// "`StandardScaler` cannot handle NaN": every estimator the sentence names accepts NaN.
fn nan_intolerance_claim(sentence: &str, runtime: &RuntimeInfo) -> Option<String> {
    let lower = sentence.to_lowercase();
    const REJECTS: &[&str] = &[
        "cannot handle",
        "can't handle",
        "does not accept",
        "doesn't accept",
        "not support",
        "does not support",
        "doesn't support",
        "cannot process",
        "can't process",
        "does not handle",
        "doesn't handle",
        "not handle",
        "cannot accept",
        "rejects",
    ];
    if !NAN_WORDS.iter().any(|w| lower.contains(w)) || !REJECTS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let named: Vec<&str> = sentence
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| {
            word.starts_with(|c: char| c.is_ascii_uppercase())
                && (crate::rules::accepts_nan(word) || estimator_like(word))
        })
        .collect();
    if named.is_empty()
        || !named
            .iter()
            .all(|name| crate::rules::accepts_nan(name) || tags_allow_nan(runtime, name))
    {
        return None;
    }
    Some(format!("{} accept NaN", named.join(", ")))
}

/// Whether the kernel holds an estimator of this class whose own tags say it accepts NaN.
fn tags_allow_nan(runtime: &RuntimeInfo, class: &str) -> bool {
    runtime.variables.values().any(|variable| {
        variable.r.get("estimator").and_then(|e| e.as_str()) == Some(class)
            && variable
                .r
                .get("tags")
                .and_then(|tags| tags.get("allow_nan"))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
    })
}

/// A word that names an estimator class (`LogisticRegression`, `SVC`, `KMeans`).
fn estimator_like(word: &str) -> bool {
    [
        "Classifier",
        "Regressor",
        "Regression",
        "Scaler",
        "Imputer",
        "Transformer",
        "Encoder",
        "SVC",
        "SVR",
        "Means",
        "PCA",
        "NB",
        "Ridge",
        "Lasso",
        "Net",
        "Forest",
        "Tree",
        "Boost",
    ]
    .iter()
    .any(|suffix| word.ends_with(suffix))
}

/// "`X` contains NaN" where the facts say `X` has none, and the cell does not change `X`.
fn nan_claim(sentence: &str, runtime: &RuntimeInfo, scope: &CellScope) -> Option<String> {
    let lower = sentence.to_lowercase();
    if !NAN_WORDS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    const NEGATIONS: &[&str] = &[
        "no ",
        "not",
        "n't",
        "without",
        "false",
        "free",
        "neither",
        "nor ",
        "none",
        "if ",
        "may ",
        "might",
        "could",
        "after",
        "introduce",
        "produce",
        "create",
        "result",
    ];
    if NEGATIONS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let data: Vec<(&String, &Variable)> = runtime
        .variables
        .iter()
        .filter(|(name, variable)| {
            matches!(
                variable.kind,
                Kind::Dataframe | Kind::Ndarray | Kind::Series | Kind::Tensor
            ) && is_identifier(name)
                && mentions(sentence, name)
        })
        .collect();
    if data.is_empty() {
        return None;
    }
    let refuted = data.iter().all(|(name, variable)| {
        !scope.rebound.contains(*name)
            && variable.has_nan() == Some(false)
            && variable.certainty(crane_runtime::Section::V) == crane_runtime::Certainty::Exact
    });
    refuted.then(|| {
        let names: Vec<&str> = data.iter().map(|(name, _)| name.as_str()).collect();
        format!("{}: has_nan = false", names.join(", "))
    })
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// Whether `name` appears in the text as a whole word.
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(start, _)| {
        let before = text[..start].chars().next_back();
        let after = text[start + name.len()..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        boundary(before) && boundary(after)
    })
}

/// Split into sentences at `.`, `!`, `?`, `;` followed by a space or the end, and at line
/// breaks, never inside quotes.
fn sentences(text: &str) -> Vec<String> {
    let mut result = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        current.push(c);
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => {
                let previous = i.checked_sub(1).map(|p| chars[p]);
                let opens =
                    matches!(c, '\'' | '"' | '`') && previous.is_none_or(|p| !p.is_alphanumeric());
                if opens {
                    quote = Some(c);
                } else if c == '\n'
                    || (matches!(c, '.' | '!' | '?' | ';')
                        && chars.get(i + 1).is_none_or(|n| n.is_whitespace()))
                {
                    result.push(std::mem::take(&mut current));
                }
            }
        }
        if c == '\n' {
            quote = None;
        }
    }
    result.push(current);
    result.retain(|s| !s.trim().is_empty());
    result
}

/// Tokens between quotes (`'x'`, `"x"`, `` `x` ``) that open after a non-word character and
/// close before one (so apostrophes in words do not count).
fn quoted(sentence: &str) -> Vec<String> {
    let chars: Vec<char> = sentence.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let opens = matches!(c, '\'' | '"' | '`') && (i == 0 || !chars[i - 1].is_alphanumeric());
        if opens {
            if let Some(end) = (i + 1..chars.len())
                .find(|&j| chars[j] == c && chars.get(j + 1).is_none_or(|n| !n.is_alphanumeric()))
            {
                let token: String = chars[i + 1..end].iter().collect();
                if !token.is_empty() && !token.contains('\n') {
                    tokens.push(token);
                }
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_tokens_skip_apostrophes() {
        assert_eq!(
            quoted("The column 'Age' doesn't exist in `df`, nor \"Fare\"."),
            vec!["Age", "df", "Fare"]
        );
    }

    #[test]
    fn sentences_do_not_split_inside_quotes() {
        let parts = sentences("Column 'a.b' is missing. Then it fails!\nNext line");
        assert_eq!(parts.len(), 3);
        assert!(parts[0].contains("'a.b'"));
    }

    #[test]
    fn whole_word_mentions() {
        assert!(mentions("df has no column", "df"));
        assert!(!mentions("df2 has no column", "df"));
    }
}
