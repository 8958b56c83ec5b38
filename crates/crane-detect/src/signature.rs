//! Binding a call's arguments to a signature exactly as Python does, to prove the `TypeError`
//! a call raises before the callee runs: a missing required argument, an unexpected keyword,
//! too many positional arguments, a parameter given twice.
//!
//! Two binders, because two pieces of code do it and their messages differ: the interpreter
//! calling a `def` (CPython's `initialize_locals`: positional arguments first, then keywords in
//! call order, then the counts), and `inspect.Signature.bind`, which some library wrappers call
//! before the function. Only calls whose arguments are all spelled out are bound: a `*x` or
//! `**x` in the call is for the caller to refuse. `tests/signature_binding.rs` holds both
//! binders to a real Python on generated (signature, call) pairs.

use crane_runtime::{Binder, CallSignature, Parameter, ParameterKind, Signature};

/// A call's arguments as far as binding needs them: how many positional ones (not counting a
/// bound `self`) and the keywords' names in call order (Python's syntax makes them distinct).
#[derive(Debug, Clone, Copy)]
pub struct CallShape<'a> {
    pub positional: usize,
    pub keywords: &'a [&'a str],
}

/// The `TypeError` message Python raises for this call, or `None` when the arguments bind.
pub fn type_error(callee: &CallSignature, call: CallShape) -> Option<String> {
    let given = call.positional + usize::from(callee.bound);
    match callee.binder {
        Binder::Interpreter => interpreter(&callee.parameters, given, call.keywords)
            .map(|message| format!("{}() {message}", callee.name)),
        Binder::SignatureBind => signature_bind(&callee.parameters, given, call.keywords),
    }
}

/// CPython's binding of a call to a `def` (`initialize_locals` in `ceval.c`), `given`
/// positional arguments (a bound `self` included) and `keywords` in call order.
pub fn interpreter(signature: &Signature, given: usize, keywords: &[&str]) -> Option<String> {
    let parameters = signature.parameters();
    let positional: Vec<&Parameter> = parameters
        .iter()
        .filter(|p| p.kind.is_positional())
        .collect();
    let positional_only = positional
        .iter()
        .filter(|p| p.kind == ParameterKind::PositionalOnly)
        .count();
    let keyword_only: Vec<&Parameter> = parameters
        .iter()
        .filter(|p| p.kind == ParameterKind::KeywordOnly)
        .collect();
    let var_positional = parameters
        .iter()
        .any(|p| p.kind == ParameterKind::VarPositional);
    let var_keyword = parameters
        .iter()
        .any(|p| p.kind == ParameterKind::VarKeyword);
    // Positional parameters, then keyword-only ones: the order of the code's local names.
    let named: Vec<&Parameter> = positional.iter().chain(&keyword_only).copied().collect();
    let mut filled = vec![false; named.len()];
    for slot in filled.iter_mut().take(given.min(positional.len())) {
        *slot = true;
    }
    for keyword in keywords {
        let found = named
            .iter()
            .enumerate()
            .skip(positional_only)
            .find(|(_, p)| p.name == *keyword)
            .map(|(index, _)| index);
        match found {
            Some(index) if filled[index] => {
                return Some(format!("got multiple values for argument '{keyword}'"));
            }
            Some(index) => filled[index] = true,
            None if var_keyword => {}
            None => {
                let conflicts: Vec<&str> = positional[..positional_only]
                    .iter()
                    .flat_map(|p| keywords.iter().filter(move |k| **k == p.name))
                    .copied()
                    .collect();
                if !conflicts.is_empty() {
                    return Some(format!(
                        "got some positional-only arguments passed as keyword arguments: '{}'",
                        conflicts.join(", ")
                    ));
                }
                return Some(format!("got an unexpected keyword argument '{keyword}'"));
            }
        }
    }
    let defaults = positional.iter().filter(|p| p.default).count();
    if given > positional.len() && !var_positional {
        let takes = if defaults > 0 {
            format!(
                "from {} to {} positional arguments",
                positional.len() - defaults,
                positional.len()
            )
        } else {
            format!(
                "{} positional argument{}",
                positional.len(),
                plural(positional.len())
            )
        };
        let keyword_only_given = filled[positional.len()..].iter().filter(|f| **f).count();
        let also = if keyword_only_given > 0 {
            format!(
                " positional argument{} (and {keyword_only_given} keyword-only argument{})",
                plural(given),
                plural(keyword_only_given)
            )
        } else {
            String::new()
        };
        let verb = if given == 1 && keyword_only_given == 0 {
            "was"
        } else {
            "were"
        };
        return Some(format!("takes {takes} but {given}{also} {verb} given"));
    }
    let required = positional.len() - defaults;
    let missing: Vec<&str> = (given.min(required)..required)
        .filter(|index| !filled[*index])
        .map(|index| named[index].name.as_str())
        .collect();
    if !missing.is_empty() {
        return Some(missing_message("positional", &missing));
    }
    let missing: Vec<&str> = keyword_only
        .iter()
        .enumerate()
        .filter(|(index, p)| !filled[positional.len() + index] && !p.default)
        .map(|(_, p)| p.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Some(missing_message("keyword-only", &missing));
    }
    None
}

fn plural(count: usize) -> &'static str {
    if count == 1 {
        ""
    } else {
        "s"
    }
}

/// CPython's `format_missing`: `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
fn missing_message(kind: &str, names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("'{name}'")).collect();
    let list = match quoted.as_slice() {
        [one] => one.clone(),
        [first, second] => format!("{first} and {second}"),
        [rest @ .., second_last, last] => {
            format!("{}, {second_last}, and {last}", rest.join(", "))
        }
        [] => String::new(),
    };
    format!(
        "missing {} required {kind} argument{}: {list}",
        names.len(),
        plural(names.len())
    )
}

/// `inspect.Signature.bind` (`Signature._bind`), `given` positional arguments and `keywords`
/// in call order.
pub fn signature_bind(signature: &Signature, given: usize, keywords: &[&str]) -> Option<String> {
    let parameters = signature.parameters();
    let mut remaining: Vec<&str> = keywords.to_vec();
    let mut next = 0;
    let mut resume = None;
    let mut args_left = given;
    loop {
        if args_left == 0 {
            let Some(parameter) = parameters.get(next) else {
                break;
            };
            next += 1;
            if parameter.kind == ParameterKind::VarPositional {
                break;
            }
            if remaining.contains(&parameter.name.as_str()) {
                if parameter.kind == ParameterKind::PositionalOnly {
                    return Some(format!(
                        "'{}' parameter is positional only, but was passed as a keyword",
                        parameter.name
                    ));
                }
                resume = Some(next - 1);
                break;
            }
            if parameter.kind == ParameterKind::VarKeyword || parameter.default {
                resume = Some(next - 1);
                break;
            }
            return Some(format!("missing a required argument: '{}'", parameter.name));
        }
        let Some(parameter) = parameters.get(next) else {
            return Some("too many positional arguments".to_owned());
        };
        next += 1;
        match parameter.kind {
            ParameterKind::VarKeyword | ParameterKind::KeywordOnly => {
                return Some("too many positional arguments".to_owned());
            }
            ParameterKind::VarPositional => break,
            kind => {
                if remaining.contains(&parameter.name.as_str())
                    && kind != ParameterKind::PositionalOnly
                {
                    return Some(format!("multiple values for argument '{}'", parameter.name));
                }
                args_left -= 1;
            }
        }
    }
    let start = resume.unwrap_or(next);
    let mut var_keyword = false;
    for parameter in &parameters[start.min(parameters.len())..] {
        match parameter.kind {
            ParameterKind::VarKeyword => {
                var_keyword = true;
                continue;
            }
            ParameterKind::VarPositional => continue,
            _ => {}
        }
        match remaining.iter().position(|k| *k == parameter.name) {
            None if !parameter.default => {
                return Some(format!("missing a required argument: '{}'", parameter.name));
            }
            None => {}
            Some(_) if parameter.kind == ParameterKind::PositionalOnly => {
                return Some(format!(
                    "'{}' parameter is positional only, but was passed as a keyword",
                    parameter.name
                ));
            }
            Some(at) => {
                remaining.remove(at);
            }
        }
    }
    match remaining.first() {
        Some(keyword) if !var_keyword => {
            Some(format!("got an unexpected keyword argument '{keyword}'"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(signature: &str, bound: bool, binder: Binder) -> CallSignature {
        CallSignature {
            callable: "m.f".to_owned(),
            name: "f".to_owned(),
            parameters: Signature::parse(signature).unwrap(),
            bound,
            binder,
        }
    }

    fn error(signature: &str, positional: usize, keywords: &[&str]) -> Option<String> {
        type_error(
            &call(signature, false, Binder::Interpreter),
            CallShape {
                positional,
                keywords,
            },
        )
    }

    #[test]
    fn the_interpreters_messages() {
        assert_eq!(
            error("(a, b=)", 0, &["c"]).as_deref(),
            Some("f() got an unexpected keyword argument 'c'")
        );
        assert_eq!(
            error("(a, b=)", 3, &[]).as_deref(),
            Some("f() takes from 1 to 2 positional arguments but 3 were given")
        );
        assert_eq!(
            error("(a, b, c)", 0, &[]).as_deref(),
            Some("f() missing 3 required positional arguments: 'a', 'b', and 'c'")
        );
        assert_eq!(
            error("(a, *, k)", 1, &[]).as_deref(),
            Some("f() missing 1 required keyword-only argument: 'k'")
        );
        assert_eq!(
            error("(a, /, b)", 1, &["a", "b"]).as_deref(),
            Some("f() got some positional-only arguments passed as keyword arguments: 'a'")
        );
        assert_eq!(
            error("(a)", 1, &["a"]).as_deref(),
            Some("f() got multiple values for argument 'a'")
        );
        assert_eq!(error("(a, /, **kw)", 1, &["a"]), None);
        let method = call("(self, x)", true, Binder::Interpreter);
        let shape = CallShape {
            positional: 2,
            keywords: &[],
        };
        assert_eq!(
            type_error(&method, shape).as_deref(),
            Some("f() takes 2 positional arguments but 3 were given")
        );
    }

    #[test]
    fn signature_bind_messages() {
        let bind = call("(a, b=, *, c=)", false, Binder::SignatureBind);
        let shape = CallShape {
            positional: 1,
            keywords: &["d"],
        };
        assert_eq!(
            type_error(&bind, shape).as_deref(),
            Some("got an unexpected keyword argument 'd'")
        );
    }
}
