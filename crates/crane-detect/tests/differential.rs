//! Differential soundness tests: seeded generated programs run in CPython and in crane's
//! interpreter; wherever crane claims to know a value (or a shape) when the cell ends, it must be
//! the one Python computed, and a statement Python fails on must not get a value. Unknown is
//! always allowed. A proven finding must be a crash Python really raises, with that class, and
//! a statement crane says certainly raises must be the one Python failed on, with that class.
//!
//! The suite runs a bounded number of programs per test; `scripts/differential.sh` runs many
//! more (`CRANE_DIFFERENTIAL_CASES`, `CRANE_DIFFERENTIAL_SEED`).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use crane_detect::rules::{self, CheckContext, ExecutedCells, KnownValue};
use crane_runtime::RuntimeInfo;
use serde_json::{json, Value};

const EVALUATE: &str = include_str!("differential/evaluate.py");

fn python() -> String {
    std::env::var("CRANE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn cases(default: usize) -> usize {
    std::env::var("CRANE_DIFFERENTIAL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn seed() -> u64 {
    std::env::var("CRANE_DIFFERENTIAL_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(13)
}

/// One generated program: setup run in Python only (its objects are given to crane as facts),
/// then the statements, which form the target cell.
struct Program {
    /// Every value crane computes comes from known inputs (arrays of known shape): a value
    /// claimed for a statement Python fails on is wrong. Otherwise (plain values, where an
    /// unknown part may be what raises) a claim holds on condition that its statement
    /// completes, and only a statement crane knew entirely must not fail.
    strict: bool,
    setup: String,
    executed: Vec<String>,
    facts: Value,
    statements: Vec<String>,
}

/// Python's outcome of a program.
struct Outcome {
    values: BTreeMap<String, Value>,
    error: Option<(usize, String)>,
}

fn run_python(programs: &[Program]) -> Vec<Outcome> {
    let input: Vec<Value> = programs
        .iter()
        .map(|p| json!({"setup": p.setup, "statements": p.statements}))
        .collect();
    let mut child = Command::new(python())
        .arg("-c")
        .arg(EVALUATE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python starts");
    let text = serde_json::to_vec(&input).unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&text));
    let output = child.wait_with_output().expect("python runs");
    writer.join().unwrap().expect("programs written");
    assert!(output.status.success(), "the evaluator failed");
    let results: Vec<Value> = serde_json::from_slice(&output.stdout).expect("evaluator output");
    results
        .into_iter()
        .map(|result| Outcome {
            values: result["values"]
                .as_object()
                .map(|values| values.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
            error: result["error"].as_array().map(|error| {
                (
                    error[0].as_u64().unwrap_or(u64::MAX) as usize,
                    error[1].as_str().unwrap_or_default().to_owned(),
                )
            }),
        })
        .collect()
}

/// Names a generated statement binds: its targets are `v<digits>`, `x<digits>`, `t<digits>`.
fn bound_names(statement: &str) -> Vec<String> {
    statement
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("for ").unwrap_or(line);
            let end = line
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(line.len());
            let name = &line[..end];
            (name.len() > 1 && name[1..].bytes().all(|b| b.is_ascii_digit()))
                .then(|| name.to_owned())
        })
        .collect()
}

/// Check crane against Python on every program; returns the mismatches, described, how many
/// values crane claimed, and how many raises.
fn mismatches(programs: &[Program]) -> (Vec<String>, usize, usize) {
    let outcomes = run_python(programs);
    if std::env::var_os("CRANE_DIFFERENTIAL_SHOW_ERRORS").is_some() {
        for (program, outcome) in programs.iter().zip(&outcomes) {
            eprintln!("{:?}: {}", outcome.error, program.statements.join("; "));
        }
    }
    let mut wrong = Vec::new();
    let mut claimed = 0;
    let mut raises = 0;
    for (program, outcome) in programs.iter().zip(&outcomes) {
        if outcome
            .error
            .as_ref()
            // crane parses the newest syntax; the running Python may be older.
            .is_some_and(|(at, class)| {
                *at == usize::MAX || class == "Timeout" || class == "SyntaxError"
            })
        {
            continue;
        }
        // crane judges the cell up to the statement Python failed on: what it claims for the
        // statements before must hold, and the failing one must not look certain to complete.
        let run = match &outcome.error {
            Some((at, _)) => &program.statements[..=*at],
            None => &program.statements[..],
        };
        let source = run.join("\n");
        let runtime: RuntimeInfo =
            serde_json::from_value(json!({ "variables": program.facts })).expect("facts parse");
        let parsed_target = crane_analysis::ParsedCell::parse(&source);
        let analysis = crane_analysis::analyze_parsed(&parsed_target);
        let interpretation = rules::interpret(&CheckContext {
            target: &parsed_target,
            analysis: analysis.as_ref(),
            runtime: &runtime,
            executed_cells: &ExecutedCells::new(&program.executed),
        });
        // A statement whose every expression crane knew cannot raise.
        if let Some((at, class)) = &outcome.error {
            let target = program.statements[*at]
                .split_once(" = ")
                .map(|(target, _)| target.trim());
            if program.strict && target.is_some_and(|t| interpretation.values.contains_key(t)) {
                wrong.push(format!(
                    "{source}\n  -- crane claims {target:?} of statement {at}, python raised {class}"
                ));
            }
            if !program.strict && interpretation.closed.get(*at) == Some(&true) {
                wrong.push(format!(
                    "{source}\n  -- statement {at} fully known to crane, python raised {class}"
                ));
            }
        }
        if std::env::var_os("CRANE_DIFFERENTIAL_SHOW_SILENCE").is_some() {
            for (name, value) in &outcome.values {
                if !interpretation.values.contains_key(name) && value.get("type").is_none() {
                    eprintln!("silent on {name} = {value}:\n{source}\n");
                }
            }
        }
        // Names the failing statement binds hold what Python had when it stopped, part-way.
        let partial: Vec<String> = match &outcome.error {
            Some((at, _)) if !program.strict => bound_names(&program.statements[*at]),
            _ => Vec::new(),
        };
        for (name, known) in &interpretation.values {
            if partial.contains(name) {
                continue;
            }
            let python = outcome.values.get(name);
            let agrees = match (known, python) {
                (KnownValue::Python(text), Some(value)) => value["repr"].as_str() == Some(text),
                (KnownValue::Shape(shape), Some(value)) => {
                    value["shape"].as_array().is_some_and(|dims| {
                        dims.len() == shape.len()
                            && dims.iter().zip(shape).all(|(d, s)| d.as_u64() == Some(*s))
                    })
                }
                // Bound at or after the statement Python failed on: Python never bound it (a
                // value is claimed on condition that its statement completes).
                (_, None) => true,
            };
            claimed += 1;
            if !agrees {
                wrong.push(format!(
                    "{source}\n  -- {name}: crane {known:?}, python {python:?} (error {:?})",
                    outcome.error
                ));
            }
        }
        if let Some((at, class)) = &interpretation.raised {
            raises += 1;
            let agrees = outcome.error.as_ref().is_some_and(|(failed, raised)| {
                failed == at && class.as_ref().is_none_or(|class| class == raised)
            });
            if !agrees {
                wrong.push(format!(
                    "{source}\n  -- crane: statement {at} raises {class:?}, python {:?}",
                    outcome.error
                ));
            }
        }
        for finding in &interpretation.findings {
            let raised = outcome.error.as_ref().map(|(_, class)| class.as_str());
            let expected = finding.exception.as_deref();
            let real = match (raised, expected) {
                (Some(raised), Some(expected)) => {
                    raised == expected || expected.ends_with(&format!(".{raised}"))
                }
                _ => false,
            };
            if !real {
                wrong.push(format!(
                    "{source}\n  -- finding {:?} at line {:?}, python raised {raised:?}",
                    finding.rule, finding.line
                ));
            }
        }
    }
    (wrong, claimed, raises)
}

/// Every claim crane makes agrees with CPython, and it makes at least so many claims of values
/// and of raising statements.
#[track_caller]
fn assert_sound(programs: &[Program], min_claimed: usize, min_raises: usize) {
    let (wrong, claimed, raises) = mismatches(programs);
    eprintln!(
        "{} programs, {claimed} values and {raises} raising statements claimed by crane",
        programs.len()
    );
    assert!(
        wrong.is_empty(),
        "{} of {} programs disagree with CPython:\n{}",
        wrong.len(),
        programs.len(),
        wrong
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // The generator must exercise the evaluator, not only its silence.
    assert!(
        claimed >= min_claimed,
        "crane claimed only {claimed} values over {} programs",
        programs.len()
    );
    assert!(
        raises >= min_raises,
        "crane claimed only {raises} raising statements over {} programs",
        programs.len()
    );
}

// Plain Python values

struct Values {
    rng: fastrand::Rng,
    names: Vec<String>,
    next_loop: usize,
}

const STRINGS: &[&str] = &[
    "",
    "a",
    "ab",
    "a b",
    " x ",
    "A,b,,c",
    "abc",
    "Hello World",
    "x\ty",
    "42",
    "-7",
    "3.5",
    "ü",
    "naïve",
    "a'b",
    "\\n",
    "\u{1c}a",
    "Ab1",
];

const STR_METHODS: &[&str] = &[
    "upper()",
    "lower()",
    "strip()",
    "lstrip()",
    "rstrip()",
    "strip('a')",
    "split()",
    "split(',')",
    "split('b')",
    "replace('a', 'xy')",
    "replace('', '-')",
    "startswith('a')",
    "endswith('c')",
    "find('b')",
    "index('b')",
    "count('a')",
    "count('')",
    "isdigit()",
    "isalpha()",
    "isupper()",
    "islower()",
    "zfill(5)",
];

impl Values {
    fn new(seed: u64) -> Values {
        Values {
            rng: fastrand::Rng::with_seed(seed),
            names: Vec::new(),
            next_loop: 0,
        }
    }

    fn pick<'s>(&mut self, items: &[&'s str]) -> &'s str {
        items[self.rng.usize(..items.len())]
    }

    fn int(&mut self) -> String {
        match self.rng.u8(..10) {
            0 => self
                .pick(&[
                    "9223372036854775807",
                    "4611686018427387904",
                    "-9223372036854775807",
                ])
                .to_owned(),
            1 => "0".to_owned(),
            2..=5 => self.rng.i64(-9..10).to_string(),
            _ => self.rng.i64(-200..200).to_string(),
        }
    }

    fn float(&mut self) -> String {
        self.pick(&[
            "0.5",
            "-2.25",
            "0.1",
            "1e300",
            "-0.0",
            "0.0",
            "3.0",
            "-7.5",
            "2.5",
            "1.5",
            "1e-5",
            "123.456",
            "float('nan')",
            "float('inf')",
        ])
        .to_owned()
    }

    fn atom(&mut self) -> String {
        match self.rng.u8(..12) {
            0..=3 => self.int(),
            4 => self.float(),
            5 => self.pick(&["True", "False"]).to_owned(),
            6 => "None".to_owned(),
            7 | 8 => format!("{:?}", self.pick(STRINGS)).replace("\\u{1c}", "\\x1c"),
            _ if !self.names.is_empty() => {
                let index = self.rng.usize(..self.names.len());
                self.names[index].clone()
            }
            _ => self.int(),
        }
    }

    fn expr(&mut self, depth: u32) -> String {
        if depth == 0 {
            return self.atom();
        }
        let d = depth - 1;
        match self.rng.u8(..30) {
            0..=4 => self.atom(),
            5..=8 => {
                let op = self.pick(&[
                    "+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<<", ">>", "//", "%",
                ]);
                let right = if op == "**" || op == "<<" {
                    self.rng.i64(-3..8).to_string()
                } else {
                    self.expr(d)
                };
                format!("({} {op} {right})", self.expr(d))
            }
            9 => format!("({}{})", self.pick(&["-", "+", "not ", "~"]), self.expr(d)),
            10 | 11 => {
                let mut text = self.expr(d);
                for _ in 0..self.rng.usize(1..4) {
                    let op = self.pick(&[
                        "<", "<=", ">", ">=", "==", "!=", "in", "not in", "is", "is not",
                    ]);
                    text = format!("{text} {op} {}", self.expr(d));
                }
                format!("({text})")
            }
            12 => format!(
                "({} {} {})",
                self.expr(d),
                self.pick(&["and", "or"]),
                self.expr(d)
            ),
            13 => format!(
                "({} if {} else {})",
                self.expr(d),
                self.expr(d),
                self.expr(d)
            ),
            14 | 15 => {
                let n = self.rng.usize(..4);
                let items: Vec<String> = (0..n).map(|_| self.expr(d)).collect();
                if self.rng.bool() {
                    format!("[{}]", items.join(", "))
                } else if n == 1 {
                    format!("({},)", items[0])
                } else {
                    format!("({})", items.join(", "))
                }
            }
            16 => format!("{}[{}]", self.expr(d), self.expr(d)),
            17 => {
                let mut bound = || match self.rng.u8(..4) {
                    0 => String::new(),
                    1 => "None".to_owned(),
                    _ => self.rng.i64(-6..7).to_string(),
                };
                let (a, b, c) = (bound(), bound(), bound());
                let base = self.expr(d);
                if c.is_empty() {
                    format!("{base}[{a}:{b}]")
                } else {
                    format!("{base}[{a}:{b}:{c}]")
                }
            }
            18 => {
                let inner = self.expr(d);
                match self.rng.u8(..4) {
                    0 => format!("f'{{{inner}}}'"),
                    1 => format!("f'<{{{inner}!r}}>'"),
                    2 => format!("f'{{{inner}!s}} and {{{}}}'", self.expr(d)),
                    _ => format!("f'{{{inner}:>4}}'"),
                }
            }
            19 | 20 => format!("{}.{}", self.expr(d), self.pick(STR_METHODS)),
            21 => format!("{:?}.join({})", self.pick(&[",", "", " - "]), self.expr(d)),
            22 | 23 => {
                let function = self.pick(&[
                    "len", "abs", "bool", "str", "repr", "int", "float", "list", "tuple", "min",
                    "max", "sum", "sorted", "round",
                ]);
                format!("{function}({})", self.expr(d))
            }
            24 => format!(
                "{}({}, {})",
                self.pick(&["min", "max", "divmod"]),
                self.expr(d),
                self.expr(d)
            ),
            25 | 26 => {
                let variable = format!("x{}", self.next_loop);
                self.next_loop += 1;
                let iterable = match self.rng.u8(..3) {
                    0 => format!("range({})", self.rng.i64(-2..8)),
                    1 => format!("range({}, {})", self.rng.i64(-5..5), self.rng.i64(-5..8)),
                    _ => self.expr(d),
                };
                self.names.push(variable.clone());
                let element = self.expr(d);
                let condition = if self.rng.bool() {
                    format!(" if {}", self.expr(d))
                } else {
                    String::new()
                };
                self.names.pop();
                format!("[{element} for {variable} in {iterable}{condition}]")
            }
            27 => format!(
                "{{{}: {}, {}: {}}}[{}]",
                self.atom(),
                self.atom(),
                self.atom(),
                self.atom(),
                self.atom()
            ),
            _ => format!("len({})", self.expr(d)),
        }
    }

    /// An expression of a given type, so most programs run (and crane has values to claim).
    fn typed(&mut self, ty: u8, depth: u32) -> String {
        let d = depth.saturating_sub(1);
        if depth == 0 || self.rng.u8(..4) == 0 {
            return match ty {
                0 => self.int(),
                1 => self.float(),
                2 => format!("{:?}", self.pick(STRINGS)).replace("\\u{1c}", "\\x1c"),
                3 => format!("[{}, {}]", self.int(), self.int()),
                _ => self.pick(&["True", "False"]).to_owned(),
            };
        }
        match ty {
            0 => match self.rng.u8(..8) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*", "//", "%", "//", "%", "&", "|", "^"]);
                    format!("({} {op} {})", self.typed(0, d), self.typed(0, d))
                }
                3 => format!("(-{})", self.typed(0, d)),
                4 => format!("len({})", {
                    let t = 2 + self.rng.u8(..2);
                    self.typed(t, d)
                }),
                5 => format!("({} ** {})", self.typed(0, d), self.rng.i64(0..4)),
                6 => format!(
                    "{}.{}",
                    self.typed(2, d),
                    self.pick(&["find('b')", "count('a')"])
                ),
                _ => format!(
                    "{}({})",
                    self.pick(&["abs", "int", "round", "sum", "max", "min"]),
                    if self.rng.bool() {
                        self.typed(0, d)
                    } else {
                        self.typed(3, d)
                    }
                ),
            },
            1 => {
                let op = self.pick(&["+", "-", "*", "/", "//", "%", "**"]);
                let left = {
                    let t = self.rng.u8(..2);
                    self.typed(t, d)
                };
                let right = if op == "**" {
                    self.rng.i64(-2..4).to_string()
                } else {
                    {
                        let t = self.rng.u8(..2);
                        self.typed(t, d)
                    }
                };
                format!("({left} {op} {right})")
            }
            2 => match self.rng.u8(..6) {
                0 => format!("({} + {})", self.typed(2, d), self.typed(2, d)),
                1 => format!("({} * {})", self.typed(2, d), self.rng.i64(-1..4)),
                2 => format!("{}.{}", self.typed(2, d), self.pick(STR_METHODS)),
                3 => format!("f'{{{}}}-{{{}!r}}'", self.typed(0, d), self.typed(1, d)),
                4 => {
                    let (a, b) = (self.rng.i64(-4..5), self.rng.i64(-4..5));
                    format!(
                        "{}[{a}:{b}:{}]",
                        self.typed(2, d),
                        self.pick(&["1", "-1", "2", "-2"])
                    )
                }
                _ => format!("str({})", {
                    let t = self.rng.u8(..4);
                    self.typed(t, d)
                }),
            },
            3 => match self.rng.u8(..5) {
                0 => format!("({} + {})", self.typed(3, d), self.typed(3, d)),
                1 => format!(
                    "{}.split({})",
                    self.typed(2, d),
                    self.pick(&["", "','", "' '"])
                ),
                2 => {
                    let variable = format!("x{}", self.next_loop);
                    self.next_loop += 1;
                    let source = self.typed(3, d);
                    self.names.push(variable.clone());
                    let element = self.typed(0, d);
                    let condition = self.typed(4, d);
                    self.names.pop();
                    format!("[{element} for {variable} in {source} if {condition}]")
                }
                3 => format!("sorted({})", self.typed(3, d)),
                _ => format!(
                    "{}[::{}]",
                    self.typed(3, d),
                    self.pick(&["1", "-1", "2", "-3"])
                ),
            },
            _ => match self.rng.u8(..4) {
                0 => format!(
                    "({} {} {} {} {})",
                    self.typed(0, d),
                    self.pick(&["<", "<=", "==", "!="]),
                    self.typed(0, d),
                    self.pick(&["<", ">=", "!="]),
                    self.typed(1, d)
                ),
                1 => format!("({} in {})", self.typed(2, d), self.typed(2, d)),
                2 => format!(
                    "({} {} {})",
                    self.typed(4, d),
                    self.pick(&["and", "or"]),
                    self.typed(0, d)
                ),
                _ => format!("(not {})", {
                    let t = self.rng.u8(..4);
                    self.typed(t, d)
                }),
            },
        }
    }

    fn statement(&mut self, index: usize) -> String {
        let name = format!("v{index}");
        let statement = match self.rng.u8(..13) {
            0 if !self.names.is_empty() => {
                let target = self.names[self.rng.usize(..self.names.len())].clone();
                // Changes in place, which every alias of a list sees.
                return match self.rng.u8(..6) {
                    0 => format!("{target}.append({})", self.expr(1)),
                    1 => format!("{target}[0] = {}", self.expr(1)),
                    2 => format!("{target}.sort()"),
                    3 => format!("{target}.extend({})", self.typed(3, 1)),
                    _ => {
                        let op = self.pick(&["+=", "-=", "*=", "//=", "%="]);
                        format!("{target} {op} {}", self.expr(2))
                    }
                };
            }
            1 => format!(
                "if {}:\n    {name} = {}\nelif {}:\n    {name} = {}\nelse:\n    {name} = {}",
                self.expr(2),
                self.expr(2),
                self.expr(1),
                self.expr(2),
                self.expr(2)
            ),
            9 | 10 => {
                // A loop over known items carrying state from pass to pass.
                let variable = format!("x{}", self.next_loop);
                self.next_loop += 1;
                let iterable = match self.rng.u8(..4) {
                    0 => format!("range({})", self.rng.i64(-1..6)),
                    1 => format!("enumerate({})", self.typed(3, 1)),
                    2 => format!("zip({}, {})", self.typed(3, 1), self.typed(2, 0)),
                    _ => self.typed(3, 2),
                };
                let start = self.typed(0, 1);
                self.names.push(variable.clone());
                let element = if iterable.starts_with("enumerate") || iterable.starts_with("zip") {
                    format!("{variable}[{}]", self.rng.i64(-2..2))
                } else {
                    variable.clone()
                };
                let op = self.pick(&["+", "-", "*", "//", "%", "^"]);
                let jump = match self.rng.u8(..4) {
                    0 => format!(
                        "\n    if {} {} {}:\n        break",
                        element,
                        self.pick(&["<", "==", ">"]),
                        self.typed(0, 0)
                    ),
                    1 => format!("\n    if {}:\n        continue", self.typed(4, 1)),
                    _ => String::new(),
                };
                let update = format!("{name} = {name} {op} {element}");
                let extra = if self.rng.bool() {
                    format!("\n    {name} += 1")
                } else {
                    String::new()
                };
                self.names.pop();
                let orelse = if self.rng.u8(..4) == 0 {
                    format!("\nelse:\n    {name} = -{name}")
                } else {
                    String::new()
                };
                format!("{name} = {start}\nfor {variable} in {iterable}:{jump}\n    {update}{extra}{orelse}")
            }
            2..=8 => {
                let ty = self.rng.u8(..5);
                format!("{name} = {}", self.typed(ty, 4))
            }
            _ => format!("{name} = {}", self.expr(3)),
        };
        self.names.push(name);
        statement
    }

    fn program(&mut self) -> Program {
        self.names.clear();
        // One entry per top-level statement (a loop comes with its initialization).
        let statements = (0..self.rng.usize(1..6))
            .flat_map(|i| {
                let statement = self.statement(i);
                match statement.split_once("\nfor ") {
                    Some((init, rest)) => vec![init.to_owned(), format!("for {rest}")],
                    None => vec![statement],
                }
            })
            .collect();
        Program {
            strict: false,
            setup: String::new(),
            executed: Vec::new(),
            facts: json!({}),
            statements,
        }
    }
}

#[test]
fn plain_values_agree_with_cpython() {
    let mut generator = Values::new(seed());
    let programs: Vec<Program> = (0..cases(600)).map(|_| generator.program()).collect();
    assert_sound(&programs, 300, 50);
}

/// The known case: a subplot grid sized by a ceiling division of a length.
#[test]
fn ceiling_division_of_a_length_agrees_with_cpython() {
    let statements = [
        "v0 = len([1, 2, 3, 4, 5, 6, 7])",
        "v1 = -(-v0 // 3)",
        "v2 = v0 // -2",
        "v3 = -v0 % 3",
        "v4 = (-v0) // 2",
        "v5 = -(v0 // 2)",
    ];
    let program = Program {
        strict: false,
        setup: String::new(),
        executed: Vec::new(),
        facts: json!({}),
        statements: statements.iter().map(|s| s.to_string()).collect(),
    };
    assert_sound(&[program], 6, 0);
}

// numpy shapes

struct Shapes {
    rng: fastrand::Rng,
}

impl Shapes {
    fn shape(&mut self) -> Vec<u64> {
        let rank = self.rng.usize(1..5);
        (0..rank)
            .map(|_| {
                if self.rng.u8(..12) == 0 {
                    0
                } else {
                    self.rng.u64(1..6)
                }
            })
            .collect()
    }

    fn dims(&mut self, shape: &[u64]) -> String {
        let size: u64 = shape.iter().product();
        let mut dims: Vec<String> = if self.rng.bool() && size > 0 {
            // A factorization of the size, maybe with one -1.
            let mut rest = size;
            let mut dims = Vec::new();
            for factor in [2, 3, 5, 4] {
                if rest.is_multiple_of(factor) && self.rng.bool() {
                    dims.push(factor.to_string());
                    rest /= factor;
                }
            }
            dims.push(rest.to_string());
            dims
        } else {
            (0..self.rng.usize(1..4))
                .map(|_| self.rng.u64(0..7).to_string())
                .collect()
        };
        if self.rng.bool() {
            let at = self.rng.usize(..dims.len());
            dims[at] = "-1".to_owned();
        }
        if self.rng.u8(..8) == 0 {
            dims.push("-1".to_owned());
        }
        if self.rng.bool() {
            format!("({},)", dims.join(", "))
        } else {
            dims.join(", ")
        }
    }

    fn index(&mut self) -> String {
        const INDICES: &[&str] = &[
            "0",
            "-1",
            "1:3",
            "::-1",
            "::2",
            ":, 0",
            "None",
            ":, None",
            "1:-1, ::2",
            "5",
            "-7",
            ":, :, 0",
            "-2:",
            ":-2:3",
            "2, 1",
            "0, :, None",
            "None, None",
            ":, -1",
            "3:1",
            "::-2, 1:",
            "1, 2, 3, 4, 5",
            ":, np.newaxis",
            "np.newaxis, :, 0",
            "0, np.newaxis, np.newaxis",
            "..., 0",
            "..., np.newaxis",
            "0, ...",
            "np.newaxis, 1, 2, 3",
        ];
        INDICES[self.rng.usize(..INDICES.len())].to_owned()
    }

    fn program(&mut self) -> Program {
        let a = self.shape();
        let b = if self.rng.bool() {
            a.clone()
        } else {
            self.shape()
        };
        let mut arrays = vec!["a".to_owned(), "b".to_owned()];
        let mut statements = Vec::new();
        for index in 0..self.rng.usize(1..5) {
            let x = arrays[self.rng.usize(..arrays.len())].clone();
            let y = arrays[self.rng.usize(..arrays.len())].clone();
            let base = if x == "b" { &b } else { &a };
            let axis = self.rng.i64(-3..4);
            let expr = match self.rng.u8(..22) {
                0..=3 => format!("{x}.reshape({})", self.dims(base)),
                4 => format!("{x}.T"),
                5 => format!("{x}.transpose()"),
                6 => format!(
                    "{x}.{}()",
                    ["flatten", "ravel", "squeeze", "copy"][self.rng.usize(..4)]
                ),
                7..=10 => format!("{x}[{}]", self.index()),
                11 => format!("np.concatenate([{x}, {y}], axis={axis})"),
                12 => format!("np.stack([{x}, {y}], axis={axis})"),
                13 => format!(
                    "np.{}([{x}, {y}])",
                    ["vstack", "hstack", "column_stack"][self.rng.usize(..3)]
                ),
                14 => format!("{x} + {y}"),
                15 => format!("({x} * 2 - 1)"),
                16 => format!("{x} @ {y}"),
                17 => format!("np.dot({x}, {y})"),
                18 => format!(
                    "{x}.{}(axis={axis})",
                    ["sum", "mean", "max", "argmax"][self.rng.usize(..4)]
                ),
                19 => format!(
                    "np.{}(({}, {}))",
                    ["zeros", "ones", "empty"][self.rng.usize(..3)],
                    self.rng.u64(0..5),
                    self.rng.u64(1..5)
                ),
                20 => format!("np.arange({})", self.rng.u64(0..9)),
                _ => {
                    let what = [
                        format!("{x}.shape[{axis}]"),
                        format!("len({x})"),
                        format!("{x}.ndim"),
                        format!("{x}.size"),
                        format!("{x}.shape"),
                    ];
                    what[self.rng.usize(..what.len())].clone()
                }
            };
            let name = format!("v{index}");
            statements.push(format!("{name} = {expr}"));
            arrays.push(name);
        }
        let facts = json!({
            "a": {"type": "numpy.ndarray", "kind": "ndarray", "S": {"shape": a}, "R": {"dtype": "float64"}, "V": {}},
            "b": {"type": "numpy.ndarray", "kind": "ndarray", "S": {"shape": b}, "R": {"dtype": "float64"}, "V": {}},
        });
        let setup = format!(
            "import numpy as np\na = np.zeros({a:?})\nb = np.zeros({b:?})",
            a = a,
            b = b
        )
        .replace('[', "(")
        .replace(']', ",)");
        Program {
            strict: true,
            executed: vec![setup.clone()],
            setup,
            facts,
            statements,
        }
    }
}

#[test]
fn numpy_shapes_agree_with_real_arrays() {
    let mut generator = Shapes {
        rng: fastrand::Rng::with_seed(seed()),
    };
    let programs: Vec<Program> = (0..cases(400)).map(|_| generator.program()).collect();
    assert_sound(&programs, 200, 0);
}

// Functions defined in executed cells

/// A function of plain values defined in an earlier cell, called by the target cell with
/// arguments that may or may not bind (Python raises TypeError when they do not).
fn function_program(rng: &mut fastrand::Rng) -> Program {
    let mut values = Values::new(rng.u64(..));
    let signatures: &[(&str, &[&str])] = &[
        ("a, b=2", &["a", "b"]),
        ("a, /, b, *, c=3", &["a", "b", "c"]),
        ("*args", &["args"]),
        ("a, *rest, k=1, **options", &["a", "rest", "k", "options"]),
        ("a=0, b='x'", &["a", "b"]),
    ];
    let (signature, parameters) = signatures[rng.usize(..signatures.len())];
    values.names = parameters.iter().map(|p| p.to_string()).collect();
    let mut body = Vec::new();
    for index in 0..rng.usize(1..4) {
        let ty = rng.u8(..5);
        body.push(format!("    t{index} = {}", values.typed(ty, 2)));
        values.names.push(format!("t{index}"));
    }
    let returned = values.typed(rng.u8(..5), 2);
    let definition = format!(
        "def f({signature}):\n{}\n    return {returned}",
        body.join("\n")
    );
    values.names.clear();
    let calls: &[&str] = &[
        "f(1)",
        "f(1, 2)",
        "f(1, 2, 3)",
        "f(b=1, a=2)",
        "f(1, b=5)",
        "f(1, c=4)",
        "f()",
        "f('ab', 'cd', k=2)",
        "f(1, a=1)",
        "f(a=3, z=1)",
        "f(2, 3, c=1, d=2)",
    ];
    let statements = (0..rng.usize(1..4))
        .map(|index| format!("v{index} = {}", calls[rng.usize(..calls.len())]))
        .collect();
    Program {
        strict: false,
        executed: vec![definition.clone()],
        setup: definition,
        facts: json!({"f": {"type": "builtins.function", "kind": "function"}}),
        statements,
    }
}

#[test]
fn calls_of_functions_from_executed_cells_agree_with_cpython() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let programs: Vec<Program> = (0..cases(400))
        .map(|_| function_program(&mut rng))
        .collect();
    assert_sound(&programs, 100, 5);
}

// torch shapes

fn torch_program(rng: &mut fastrand::Rng) -> Program {
    let mut shapes = Shapes { rng: rng.clone() };
    rng.u64(..);
    let a = shapes.shape();
    let mut tensors = vec!["a".to_owned()];
    let mut statements = Vec::new();
    for index in 0..rng.usize(1..4) {
        let x = tensors[rng.usize(..tensors.len())].clone();
        let dims = shapes.dims(&a);
        let k = rng.i64(-3..4);
        let d = rng.u64(0..5);
        let expr = match rng.u8(..19) {
            16 => format!("{x}.size()"),
            17 => format!("{x}.size({k})"),
            18 => format!("{x}.flatten()"),
            0 => format!("{x}.float()"),
            1 => format!("{x}.long()"),
            2 => format!("{x}.double()"),
            3 => format!("{x}.cpu()"),
            4 => format!("{x}.shape"),
            5 => format!("{x}.shape[{k}]"),
            6 => format!("torch.zeros({d}, {})", rng.u64(1..4)),
            7 => format!("torch.randn(({d},))"),
            8 => format!("torch.ones({d})"),
            9 => format!("{x}.view({dims})"),
            10 => format!("{x}.reshape({dims})"),
            11 => format!("{x}.unsqueeze({k})"),
            12 => format!("{x} + {x}"),
            13 => format!("len({x})"),
            14 => format!("{x}.to('cpu')"),
            _ => format!("{x}[{}]", shapes.index()),
        };
        let name = format!("v{index}");
        statements.push(format!("{name} = {expr}"));
        tensors.push(name);
    }
    let setup = format!("import torch\na = torch.zeros({a:?})")
        .replace('[', "(")
        .replace(']', ",)");
    Program {
        strict: true,
        executed: vec![setup.clone()],
        setup,
        facts: json!({
            "a": {"type": "torch.Tensor", "kind": "tensor", "S": {"shape": a},
                  "R": {"dtype": "torch.float32", "device": "cpu"}, "V": {}},
        }),
        statements,
    }
}

#[test]
fn torch_shapes_agree_with_real_tensors() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let programs: Vec<Program> = (0..cases(200)).map(|_| torch_program(&mut rng)).collect();
    assert_sound(&programs, 50, 0);
}

// Classes defined in executed cells

fn class_program(rng: &mut fastrand::Rng) -> Program {
    let mut values = Values::new(rng.u64(..));
    values.names = vec!["a".to_owned(), "b".to_owned()];
    let init_value = values.typed(rng.u8(..5), 2);
    values.names = vec!["self.a".to_owned(), "self.t".to_owned(), "k".to_owned()];
    let method_value = values.typed(rng.u8(..5), 2);
    let definition = format!(
        "class C:\n    def __init__(self, a, b=2):\n        self.a = a\n        self.t = {init_value}\n\n    def m(self, k=1):\n        self.a = {method_value}\n        return self.a\n\n    def __call__(self, k):\n        return self.m(k)"
    );
    values.names.clear();
    let mut statements = vec![format!(
        "v0 = C({})",
        ["1", "'ab'", "[1, 2]", "2.5, 3", "b=1", "", "1, 2, 3"][rng.usize(..7)]
    )];
    for index in 1..rng.usize(2..6) {
        let statement = match rng.u8(..6) {
            0 => format!("v{index} = v0.m({})", values.typed(0, 1)),
            1 => format!("v{index} = v0.t"),
            2 => format!("v{index} = v0.a"),
            3 => format!("v0.a = {}", values.typed(rng.u8(..5), 1)),
            4 => format!("v{index} = v0({})", values.typed(0, 1)),
            _ => format!("v{index} = v0.missing"),
        };
        statements.push(statement);
    }
    Program {
        strict: false,
        executed: vec![definition.clone()],
        setup: definition,
        facts: json!({"C": {"type": "builtins.type", "kind": "class"}}),
        statements,
    }
}

#[test]
fn instances_of_classes_from_executed_cells_agree_with_cpython() {
    let mut rng = fastrand::Rng::with_seed(seed());
    let programs: Vec<Program> = (0..cases(300)).map(|_| class_program(&mut rng)).collect();
    assert_sound(&programs, 100, 5);
}
