//! `crane check` results in the formats programs and CI systems read: a JSON list (several
//! notebooks), SARIF 2.1.0, GitHub Actions workflow commands and JUnit XML. Each predicted
//! crash is one result; a notebook crane could not check is a tool error, not a pass.

use std::collections::BTreeMap;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
use serde_json::{json, Value};

use crane_detect::rules::RuleCode;
use crane_detect::suppress::SilencedBy;

use crane_check::CheckReport;

use crate::commands::check::{display, Checked};
use crate::exit::Failure;

/// The id a predicted crash is reported under: the rule that proved it, else the detector.
fn rule_id(report: &CheckReport) -> String {
    report
        .findings
        .iter()
        .filter(|finding| finding.crash)
        .find_map(|finding| finding.rule)
        .map(|rule| rule.code().to_owned())
        .unwrap_or_else(|| {
            match report.verdict.exception.as_deref() {
                Some("SyntaxError") => "syntax-error",
                _ => "predicted-crash",
            }
            .to_owned()
        })
}

/// How to silence a rule's finding, said wherever crane shows one: the comment for its line
/// (for its cell when the line is not known) or the command-line flag.
pub fn silence_hint(rule: RuleCode, line: Option<u32>) -> String {
    let code = rule.code();
    match line {
        Some(line) => {
            format!(
                "silence it with `# crane: ignore[{code}]` on line {line}, or `--ignore {code}`"
            )
        }
        None => format!(
            "silence it with `# crane: ignore-cell[{code}]` in the cell, or `--ignore {code}`"
        ),
    }
}

/// The line of the `.ipynb` file that holds `line` of the target cell.
fn file_line(report: &CheckReport, line: Option<u32>) -> Option<usize> {
    let start = report.target_cell.source_line?;
    let line = line? as usize;
    (line >= 1).then(|| start + line - 1)
}

/// One line for a predicted crash: where, what, why.
fn message(report: &CheckReport) -> String {
    let verdict = &report.verdict;
    let line = verdict
        .line
        .map(|line| format!(" line {line}"))
        .unwrap_or_default();
    format!(
        "{}{line} will raise {}: {}",
        report.target_cell.label(),
        verdict.exception.as_deref().unwrap_or("an exception"),
        verdict.diagnosis
    )
}

/// `--output-format json` with several notebooks: one item per notebook, the check report
/// or `{"notebook", "error": {"code", "message"}}`.
pub fn json_item(checked: &Checked) -> Value {
    match &checked.result {
        Ok(report) => serde_json::to_value(report).unwrap_or(Value::Null),
        Err(failure) => json!({
            "notebook": checked.notebook,
            "error": {"code": failure.code, "message": failure.message()},
        }),
    }
}

/// A SARIF 2.1.0 log: one run of crane, one result per predicted crash and per silenced rule
/// finding (with its `suppressions`: `inSource` for a comment, `external` for `--ignore` and the
/// configuration), the rules of both in the driver, and one notification per notebook that
/// could not be checked.
pub fn sarif(checked: &[Checked]) -> Value {
    let mut rules: BTreeMap<String, Value> = BTreeMap::new();
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for one in checked {
        let uri = display(one.notebook.as_deref());
        let report = match &one.result {
            Ok(report) => report,
            Err(failure) => {
                notifications.push(json!({
                    "level": "error",
                    "message": {"text": format!("{uri}: {}", failure.message())},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}}}],
                }));
                continue;
            }
        };
        for silenced in &report.silenced {
            let Some(rule) = silenced.finding.rule else {
                continue;
            };
            let id = rule.code().to_owned();
            rules.entry(id.clone()).or_insert_with(|| sarif_rule(&id));
            let (kind, justification) = match silenced.by {
                SilencedBy::Line => ("inSource", "a `# crane: ignore` comment on its line"),
                SilencedBy::Cell => ("inSource", "a `# crane: ignore-cell` comment"),
                SilencedBy::Flag => ("external", "--ignore"),
                SilencedBy::Config => ("external", "the configuration file's `ignore`"),
            };
            let finding = &silenced.finding;
            let mut result = sarif_result(
                report,
                &uri,
                &id,
                finding.line,
                finding.exception.as_deref(),
                &finding.diagnosis,
            );
            result["suppressions"] = json!([{"kind": kind, "justification": justification}]);
            results.push(result);
        }
        if !report.verdict.crash {
            continue;
        }
        let id = rule_id(report);
        rules.entry(id.clone()).or_insert_with(|| sarif_rule(&id));
        let verdict = &report.verdict;
        let mut result = sarif_result(
            report,
            &uri,
            &id,
            verdict.line,
            verdict.exception.as_deref(),
            &verdict.diagnosis,
        );
        result["properties"]["detector"] = json!(verdict.detector);
        result["properties"]["confidence"] = json!(verdict.confidence);
        results.push(result);
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "crane",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rules.into_values().collect::<Vec<_>>(),
            }},
            "results": results,
            "invocations": [{
                "executionSuccessful": notifications.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
        }],
    })
}

/// One SARIF result: the crash `line` of the cell will raise `exception` (`diagnosis`).
fn sarif_result(
    report: &CheckReport,
    uri: &str,
    id: &str,
    line: Option<u32>,
    exception: Option<&str>,
    diagnosis: &str,
) -> Value {
    let mut properties = json!({"cell": report.target_cell.index});
    if let Some(exception) = exception {
        properties["exception"] = json!(exception);
    }
    if let Some(line) = line {
        properties["cell_line"] = json!(line);
    }
    if let Some(id) = &report.target_cell.id {
        properties["cell_id"] = json!(id);
    }
    let mut physical = json!({"artifactLocation": {"uri": uri}});
    if let Some(line) = file_line(report, line) {
        physical["region"] = json!({"startLine": line});
    }
    let at = line.map(|line| format!(" line {line}")).unwrap_or_default();
    json!({
        "ruleId": id,
        "level": "error",
        "message": {"text": format!(
            "{}{at} will raise {}: {diagnosis}",
            report.target_cell.label(),
            exception.unwrap_or("an exception"),
        )},
        "locations": [{
            "physicalLocation": physical,
            "logicalLocations": [{
                "name": report.target_cell.label(),
                "fullyQualifiedName": format!("{uri}#{}", report.target_cell.label()),
            }],
        }],
        "properties": properties,
    })
}

fn sarif_rule(id: &str) -> Value {
    let catalogue = crane_detect::rules::catalogue();
    match catalogue.iter().find(|rule| rule.code == id) {
        Some(rule) => json!({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.explanation},
            "help": {"text": format!("{}\n\nExample:\n{}", rule.explanation, rule.example)},
            "properties": {"library": rule.library, "exception": rule.exception},
        }),
        None => json!({
            "id": id,
            "shortDescription": {"text": match id {
                "syntax-error" => "The cell does not parse.",
                _ => "A detector predicts that the cell raises.",
            }},
        }),
    }
}

/// GitHub Actions workflow commands: `::error file=PATH,line=N,title=TITLE::MESSAGE`, one per
/// predicted crash or unchecked notebook, escaped as GitHub documents; `line` is the line of
/// the `.ipynb` file when the file's layout shows it.
pub fn github(checked: &[Checked]) -> String {
    let mut out = String::new();
    for one in checked {
        let file = display(one.notebook.as_deref());
        let (title, text, line) = match &one.result {
            Ok(report) if report.verdict.crash => (
                format!("crane {}", rule_id(report)),
                message(report),
                file_line(report, report.verdict.line),
            ),
            Ok(_) => continue,
            Err(failure) => ("crane could not check".to_owned(), failure.message(), None),
        };
        let line = line.map(|line| format!(",line={line}")).unwrap_or_default();
        out.push_str(&format!(
            "::error file={}{line},title={}::{}\n",
            escape_property(&file),
            escape_property(&title),
            escape_data(&text)
        ));
    }
    out
}

fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// JUnit XML: one test case per checked cell; a predicted crash is a failure, a notebook
/// crane could not check an error.
pub fn junit(checked: &[Checked]) -> Result<String, Failure> {
    let mut suite = TestSuite::new("crane check");
    for one in checked {
        let file = display(one.notebook.as_deref());
        let case = match &one.result {
            Ok(report) => {
                let name = format!("{file} {}", report.target_cell.label());
                let status = if report.verdict.crash {
                    let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                    status
                        .set_message(message(report))
                        .set_type(report.verdict.exception.as_deref().unwrap_or("crash"))
                        .set_description(report.verdict.diagnosis.as_str());
                    status
                } else {
                    TestCaseStatus::success()
                };
                let mut case = TestCase::new(name, status);
                case.set_time(std::time::Duration::from_millis(report.timings_ms.total));
                case
            }
            Err(failure) => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
                status.set_message(failure.message());
                TestCase::new(file.clone(), status)
            }
        };
        let mut case = case;
        case.set_classname(file);
        suite.add_test_case(case);
    }
    let mut report = Report::new("crane");
    report.add_test_suite(suite);
    report
        .to_string()
        .map_err(|err| Failure::bad_input(anyhow::anyhow!("cannot write JUnit XML: {err}")))
}
