//! Prompt snapshots for each configuration: the layout around the runtime section is fixed
//! text, and the S/R/V ablations change exactly the runtime section, which is crane-runtime's
//! rendering of the filtered facts.

use crane_llm::{
    AnswerSchema, ApiDoc, Prompt, PromptBuilder, PromptConfig, PromptError, PromptInput,
    PromptStyle, Redact, Sections,
};
use crane_runtime::{render, RenderOptions, RuntimeInfo};
use serde_json::json;

const RUNTIME_HEADER: &str = "# Current relevant runtime information:\n";
const DOCS_HEADER: &str = "# Relevant API documentation:\n";
const TARGET_HEADER: &str = "# Target Cell:\n";

fn cells() -> Vec<String> {
    vec![
        "import pandas as pd\n\n".to_string(),
        "df = pd.read_csv('titanic.csv')\n".to_string(),
    ]
}

const TARGET: &str = "df['Fare'].mean()\n";

fn runtime() -> RuntimeInfo {
    serde_json::from_value(json!({
        "variables": {
            "df": {
                "type": "pandas.core.frame.DataFrame",
                "kind": "dataframe",
                "origin": {"cell": 1, "line": 1},
                "S": {"shape": [3, 2]},
                "R": {"columns": [{"name": "Age", "dtype": "float64"}, {"name": "Name", "dtype": "object"}]},
                "V": {"columns": {
                    "Age": {"nulls": 1, "min": 22.0, "max": 38.0},
                    "Name": {"nulls": 0, "n_unique": 3, "examples": ["Braund", "Cumings"]}
                }}
            },
            "df['Fare']": {"type": "builtins.NoneType", "kind": "absent", "S": {}, "R": {"key": "Fare"}, "V": {}}
        },
        "missing": []
    }))
    .expect("the hand-written runtime information follows the vocabulary")
}

fn build(builder: PromptBuilder, docs: Option<&[ApiDoc]>) -> Result<Prompt, PromptError> {
    let cells = cells();
    let info = runtime();
    builder.build(&PromptInput {
        executed_cells: &cells,
        target_cell: TARGET,
        runtime: Some(&info),
        api_docs: docs,
    })
}

/// The user message with the runtime section's body replaced by a placeholder, after
/// checking that the body is crane-runtime's rendering of the facts under `sections`.
fn layout(prompt: &Prompt, sections: Sections, redact: Redact) -> String {
    let Some(start) = prompt.user.find(RUNTIME_HEADER) else {
        return prompt.user.clone();
    };
    let body_start = start + RUNTIME_HEADER.len();
    let body_end = prompt.user[body_start..]
        .find("\n\n# ")
        .map(|i| body_start + i)
        .expect("a section follows the runtime section");
    let expected = render(
        &runtime().filtered(sections),
        &RenderOptions {
            budget_tokens: None,
            redact,
        },
    );
    assert_eq!(&prompt.user[body_start..body_end], expected.text.trim_end());
    format!(
        "{}<runtime {sections}>{}",
        &prompt.user[..body_start],
        &prompt.user[body_end..]
    )
}

const CODE_ONLY_SNAPSHOT: &str = "# Executed Cells:
## Cell 1:
import pandas as pd

## Cell 2:
df = pd.read_csv('titanic.csv')

# Target Cell:
df['Fare'].mean()
";

#[test]
fn code_only_prompt_snapshot() {
    let prompt = build(PromptBuilder::new(PromptConfig::CodeOnly), None).unwrap();
    assert_eq!(prompt.user, CODE_ONLY_SNAPSHOT);
    assert_eq!(prompt.schema, AnswerSchema::Crane);
    assert!(!prompt.system.contains("runtime"));
    for field in [
        "\"reasoning\"",
        "\"detection\"",
        "\"exception\"",
        "\"line\"",
        "\"confidence\"",
        "\"evidence\"",
    ] {
        assert!(prompt.system.contains(field), "instruction names {field}");
    }
}

#[test]
fn with_runtime_prompt_snapshot() {
    let prompt = build(PromptBuilder::default(), None).unwrap();
    assert_eq!(
        layout(&prompt, Sections::ALL, Redact::None),
        "# Executed Cells:
## Cell 1:
import pandas as pd

## Cell 2:
df = pd.read_csv('titanic.csv')

# Current relevant runtime information:
<runtime full>

# Target Cell:
df['Fare'].mean()
"
    );
    assert!(prompt.system.contains("runtime state"));
    assert!(
        prompt.user.contains("Braund"),
        "examples are shown without redaction"
    );
}

#[test]
fn ablations_change_exactly_the_runtime_section() {
    let full = build(PromptBuilder::default(), None).unwrap();
    let full_layout = layout(&full, Sections::ALL, Redact::None);
    let mut bodies = vec![full.user.clone()];
    for removed in ["-S", "-R", "-V", "-S-R", "-R-V", "-S-V"] {
        let sections: Sections = removed.parse().unwrap();
        let prompt = build(
            PromptBuilder::new(PromptConfig::WithRuntime(sections)),
            None,
        )
        .unwrap();
        assert_eq!(prompt.system, full.system, "{removed}: same instruction");
        assert_eq!(
            layout(&prompt, sections, Redact::None),
            full_layout.replace("<runtime full>", &format!("<runtime {sections}>")),
            "{removed}: only the runtime section differs"
        );
        bodies.push(prompt.user.clone());
    }
    // Every ablation shows different facts.
    let distinct: std::collections::BTreeSet<_> = bodies.iter().collect();
    assert_eq!(distinct.len(), bodies.len());
    let without_v = build(PromptBuilder::new("-V".parse().unwrap()), None).unwrap();
    assert!(!without_v.user.contains("Braund"));
    assert!(without_v.user.contains("Age"));
}

#[test]
fn api_docs_are_added_within_their_budget_or_left_out_offline() {
    let docs = vec![
        ApiDoc {
            name: "pandas.Series.mean".into(),
            doc: "Return the mean of the values over the requested axis.".into(),
        },
        ApiDoc {
            name: "pandas.DataFrame.__getitem__".into(),
            doc: "Select columns.\n".repeat(500),
        },
    ];
    let builder = PromptBuilder::new(PromptConfig::WithApiDocs(Sections::ALL)).api_docs_budget(120);
    let prompt = build(builder, Some(&docs)).unwrap();
    assert_eq!(prompt.api_docs_included, Some(2));
    let docs_start = prompt.user.find(DOCS_HEADER).expect("a docs section");
    let target_start = prompt.user.find(TARGET_HEADER).unwrap();
    assert!(prompt.user.find(RUNTIME_HEADER).unwrap() < docs_start && docs_start < target_start);
    let section = &prompt.user[docs_start + DOCS_HEADER.len()..target_start];
    assert!(section.starts_with("## pandas.Series.mean\nReturn the mean"));
    assert!(section.contains("[...]"));
    assert!(crane_runtime::token_count(section) <= 125);
    assert!(prompt.system.contains("documentation"));

    let offline = build(builder, None).unwrap();
    let with_runtime = build(PromptBuilder::default(), None).unwrap();
    assert_eq!(offline.api_docs_included, None);
    assert_eq!(
        (offline.system, offline.user),
        (with_runtime.system, with_runtime.user)
    );
}

#[test]
fn redaction_hides_values_and_the_paper_text_refuses_it() {
    for redact in [Redact::Strings, Redact::Values] {
        let prompt = build(PromptBuilder::default().redact(redact), None).unwrap();
        layout(&prompt, Sections::ALL, redact);
        assert!(!prompt.user.contains("Braund"), "{redact:?}");
    }
    let paper = PromptBuilder::default()
        .style(PromptStyle::Paper)
        .redact(Redact::Strings);
    assert!(matches!(
        build(paper, None),
        Err(PromptError::PaperTextNotRedactable(Redact::Strings))
    ));
}

#[test]
fn prompts_are_deterministic_and_need_runtime_when_configured() {
    assert_eq!(
        build(PromptBuilder::default(), None).unwrap(),
        build(PromptBuilder::default(), None).unwrap()
    );
    let cells = cells();
    let missing = PromptBuilder::default().build(&PromptInput {
        executed_cells: &cells,
        target_cell: TARGET,
        runtime: None,
        api_docs: None,
    });
    assert!(matches!(missing, Err(PromptError::MissingRuntime(_))));
}

#[test]
fn the_paper_style_uses_the_papers_wording_and_schema() {
    let prompt = build(PromptBuilder::default().style(PromptStyle::Paper), None).unwrap();
    assert_eq!(prompt.schema, AnswerSchema::Paper);
    assert!(prompt
        .user
        .contains("# Current relevent runtime information:\n"));
    assert!(prompt.system.contains("\"reasoning\"") && prompt.system.contains("\"detection\""));
    assert!(!prompt.system.contains("\"confidence\""));
    let shown = prompt.to_display_string();
    assert!(shown.contains(&prompt.system) && shown.contains(&prompt.user));
}
