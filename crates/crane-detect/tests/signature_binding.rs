//! Differential test of the signature binders against CPython: seeded generated signatures and
//! calls; for each, a real `def` is called with the arguments and `inspect.Signature.bind` is
//! asked to bind them. crane must never claim a `TypeError` Python does not raise, and its
//! message must be Python's. `CRANE_DIFFERENTIAL_CASES` and `CRANE_DIFFERENTIAL_SEED` run more
//! (as `scripts/differential.sh` passes them).

use std::io::Write;
use std::process::{Command, Stdio};

use crane_detect::signature::{type_error, CallShape};
use crane_runtime::{Binder, CallSignature, Parameter, ParameterKind, Signature};
use serde_json::{json, Value};

const BIND: &str = include_str!("signature_binding/bind.py");

fn cases() -> usize {
    std::env::var("CRANE_DIFFERENTIAL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4_000)
}

fn seed() -> u64 {
    std::env::var("CRANE_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(14)
}

fn python() -> String {
    std::env::var("CRANE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

struct Case {
    signature: Signature,
    bound: bool,
    positional: usize,
    keywords: Vec<String>,
}

fn generate(rng: &mut fastrand::Rng) -> Case {
    let mut parameters = Vec::new();
    let mut names = (0..).map(|i| format!("p{i}"));
    let bound = rng.bool();
    if bound {
        parameters.push(Parameter {
            name: "self".to_owned(),
            kind: ParameterKind::PositionalOrKeyword,
            default: false,
        });
    }
    let positional_only = if bound { 0 } else { rng.usize(0..3) };
    let positional_or_keyword = rng.usize(0..4);
    let positional = positional_only + positional_or_keyword;
    let defaults = rng.usize(0..=positional);
    for index in 0..positional {
        parameters.push(Parameter {
            name: names.next().unwrap(),
            kind: if index < positional_only {
                ParameterKind::PositionalOnly
            } else {
                ParameterKind::PositionalOrKeyword
            },
            default: index >= positional - defaults,
        });
    }
    if rng.u8(0..3) == 0 {
        parameters.push(Parameter {
            name: "args".to_owned(),
            kind: ParameterKind::VarPositional,
            default: false,
        });
    }
    for _ in 0..rng.usize(0..3) {
        parameters.push(Parameter {
            name: names.next().unwrap(),
            kind: ParameterKind::KeywordOnly,
            default: rng.bool(),
        });
    }
    if rng.u8(0..3) == 0 {
        parameters.push(Parameter {
            name: "kwargs".to_owned(),
            kind: ParameterKind::VarKeyword,
            default: false,
        });
    }
    let mut pool: Vec<String> = parameters
        .iter()
        .filter(|p| p.name != "self")
        .map(|p| p.name.clone())
        .collect();
    if rng.u8(0..4) == 0 {
        pool.push("zz".to_owned());
    }
    rng.shuffle(&mut pool);
    let keywords = pool.into_iter().filter(|_| rng.u8(0..3) == 0).collect();
    Case {
        signature: Signature::new(parameters).expect("generated signatures are valid"),
        bound,
        positional: rng.usize(0..positional + 2),
        keywords,
    }
}

fn run_python(cases: &[Case]) -> Vec<Value> {
    let input: Vec<Value> = cases
        .iter()
        .map(|case| {
            // Python's own text, defaults written out.
            let text = case.signature.to_string().replace('=', "=0");
            json!({"def": text, "bound": case.bound, "positional": case.positional, "keywords": case.keywords})
        })
        .collect();
    let mut child = Command::new(python())
        .args(["-c", BIND])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&input).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "python failed");
    serde_json::from_slice(&output.stdout).expect("python's answer")
}

#[test]
fn binding_is_pythons_on_generated_calls() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let cases: Vec<Case> = (0..cases()).map(|_| generate(&mut rng)).collect();
    let answers = run_python(&cases);
    let mut raised = [0usize; 2];
    let mut agreed = [0usize; 2];
    for (case, answer) in cases.iter().zip(&answers) {
        let keywords: Vec<&str> = case.keywords.iter().map(String::as_str).collect();
        let shape = CallShape {
            positional: case.positional,
            keywords: &keywords,
        };
        for (index, (binder, key, name)) in [
            (
                Binder::Interpreter,
                "interpreter",
                if case.bound { "C.f" } else { "f" },
            ),
            (Binder::SignatureBind, "bind", "f"),
        ]
        .into_iter()
        .enumerate()
        {
            let callee = CallSignature {
                callable: "m.f".to_owned(),
                name: name.to_owned(),
                parameters: case.signature.clone(),
                bound: case.bound,
                binder,
            };
            let crane = type_error(&callee, shape);
            let python = answer[key].as_str();
            let call = format!(
                "{name}{} bound={} positional={} keywords={:?}",
                case.signature, case.bound, case.positional, case.keywords
            );
            assert!(
                crane.is_none() || python.is_some(),
                "{key}: crane claims `{}` for {call}; Python binds it",
                crane.as_deref().unwrap_or_default()
            );
            if python.is_some() {
                raised[index] += 1;
                assert_eq!(crane.as_deref(), python, "{key}: {call}");
                agreed[index] += 1;
            }
        }
    }
    eprintln!(
        "{} cases: the interpreter raised {} times (crane agreed {}), Signature.bind {} times (agreed {})",
        cases.len(),
        raised[0],
        agreed[0],
        raised[1],
        agreed[1]
    );
    assert!(raised.iter().all(|n| *n > cases.len() / 4));
}
