//! The recorded JunoBench cases: the paper's exact prompts, reading every recorded answer, and
//! replay of the recorded answers through the client's voting path, which must give the
//! figures of `shared/junobench/README.md`.

use std::sync::OnceLock;

use crane_llm::{
    parse_answer, Client, LlmConfig, LlmError, ModelSpec, PromptBuilder, PromptConfig, PromptInput,
    PromptStyle, ReplayError, ReplayModel, ReplayProvider,
};
use crane_runtime::junobench::{default_cases_dir, load_cases, Case};

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| load_cases(&default_cases_dir()).expect("JunoBench cases load"))
}

fn case(id: &str) -> &'static Case {
    cases()
        .iter()
        .find(|case| case.id == id)
        .unwrap_or_else(|| panic!("case {id}"))
}

#[test]
fn the_paper_flag_gives_the_recorded_prompt_text() {
    for case in cases() {
        for (config, recorded) in [
            (PromptConfig::CodeOnly, &case.crane_prompt_code_only),
            (PromptConfig::default(), &case.crane_prompt_with_runtime),
        ] {
            let prompt = PromptBuilder::new(config)
                .style(PromptStyle::Paper)
                .build_for_case(case)
                .unwrap();
            assert_eq!(&prompt.user, recorded, "{} {config}", case.id);
            assert_eq!(prompt.case_id.as_deref(), Some(case.id.as_str()));
        }
    }
}

/// The paper's layout rebuilt from a case's cells reproduces its recorded prompt byte for
/// byte wherever the case file kept the cells exactly as prompted (the case files strip some
/// blank lines from the cells of the others).
#[test]
fn the_paper_layout_is_reproduced_from_the_cells() {
    let builder = PromptBuilder::new(PromptConfig::CodeOnly).style(PromptStyle::Paper);
    let rebuild = |case: &Case| {
        builder
            .build(&PromptInput {
                executed_cells: &case.executed_cells,
                target_cell: &case.target_cell,
                runtime: None,
                api_docs: None,
            })
            .unwrap()
            .user
    };
    for id in [
        "NBspecific_4_reproduced",
        "sklearn_1_reproduced",
        "sklearn_1_fixed",
        "torch_1_reproduced",
        "torch_1_fixed",
    ] {
        assert_eq!(rebuild(case(id)), case(id).crane_prompt_code_only, "{id}");
    }
    let squash = |text: &str| text.split_whitespace().collect::<String>();
    let mut exact = 0;
    let mut same_but_whitespace = 0;
    for case in cases() {
        let ours = rebuild(case);
        if ours == case.crane_prompt_code_only {
            exact += 1;
        } else if squash(&ours) == squash(&case.crane_prompt_code_only) {
            same_but_whitespace += 1;
        }
    }
    assert!(exact >= 102, "{exact} exact");
    assert!(
        exact + same_but_whitespace >= 145,
        "{same_but_whitespace} differ in whitespace only"
    );
}

#[test]
fn every_recorded_answer_is_read() {
    let mut answers = 0;
    let mut repaired = 0;
    for model in ReplayModel::ALL {
        let replay = ReplayProvider::from_cases(model, cases());
        assert_eq!(replay.len(), cases().len());
        for case in cases() {
            for config in [PromptConfig::CodeOnly, PromptConfig::default()] {
                let prompt = PromptBuilder::new(config).build_for_case(case).unwrap();
                let outputs = &case.recorded_llm_outputs[model.case_key()];
                let recorded = match config {
                    PromptConfig::CodeOnly => &outputs.code_only,
                    _ => &outputs.with_runtime,
                };
                for (run, recorded) in recorded.iter().enumerate() {
                    let raw = replay.raw_answer(&prompt, run as u32).unwrap();
                    let answer = parse_answer(&raw)
                        .unwrap_or_else(|err| panic!("{} {model} {config} #{run}: {err}", case.id));
                    assert_eq!(Some(answer.detection), recorded.detection());
                    answers += 1;
                    repaired += usize::from(!answer.repairs.is_empty());
                }
            }
        }
    }
    assert_eq!(answers, 148 * 3 * 2 * 5);
    // The case files hold every answer as a JSON object, so none needs repair.
    assert_eq!(repaired, 0, "answers needing repair");
}

#[derive(Debug, Default)]
struct Confusion {
    tp: u32,
    fp: u32,
    tn: u32,
    fn_: u32,
}

impl Confusion {
    fn figures(&self) -> [f64; 4] {
        let (tp, fp, tn, fn_) = (
            self.tp as f64,
            self.fp as f64,
            self.tn as f64,
            self.fn_ as f64,
        );
        let precision = tp / (tp + fp);
        let recall = tp / (tp + fn_);
        let f1 = 2.0 * precision * recall / (precision + recall);
        let accuracy = (tp + tn) / (tp + fp + tn + fn_);
        [precision, recall, f1, accuracy]
    }
}

/// precision / recall / F1 / accuracy over the 148 cases, from `shared/junobench/README.md`.
const README_FIGURES: [(ReplayModel, &str, [f64; 4]); 6] = [
    (ReplayModel::Gpt5, "code_only", [0.815, 0.716, 0.763, 0.777]),
    (
        ReplayModel::Gpt5,
        "with_runtime",
        [0.779, 0.811, 0.795, 0.791],
    ),
    (
        ReplayModel::Gemini25Flash,
        "code_only",
        [0.648, 0.797, 0.715, 0.682],
    ),
    (
        ReplayModel::Gemini25Flash,
        "with_runtime",
        [0.688, 0.892, 0.776, 0.743],
    ),
    (
        ReplayModel::Qwen25_32BInstruct,
        "code_only",
        [0.719, 0.622, 0.667, 0.689],
    ),
    (
        ReplayModel::Qwen25_32BInstruct,
        "with_runtime",
        [0.857, 0.649, 0.738, 0.770],
    ),
];

#[tokio::test]
async fn replay_gives_the_papers_figures() {
    for (model, config_name, expected) in README_FIGURES {
        let config: PromptConfig = config_name.parse().unwrap();
        let replay = ReplayProvider::from_cases(model, cases());
        let client = Client::with_replay(LlmConfig::new(ModelSpec::Replay(model)), replay).unwrap();
        let builder = PromptBuilder::new(config);
        let mut confusion = Confusion::default();
        for case in cases() {
            let prompt = builder.build_for_case(case).unwrap();
            let judgement = client.ask(&prompt, 5).await.unwrap();
            assert_eq!(judgement.answers.len(), 5);
            assert!(judgement.unreadable.is_empty());
            assert!(judgement.usage.estimated && judgement.usage.input_tokens > 0);
            assert_eq!(judgement.cost, Some(0.0));
            match (judgement.verdict.crash, case.crash) {
                (true, true) => confusion.tp += 1,
                (true, false) => confusion.fp += 1,
                (false, false) => confusion.tn += 1,
                (false, true) => confusion.fn_ += 1,
            }
        }
        let figures = confusion.figures();
        for (ours, paper) in figures.iter().zip(expected) {
            assert!(
                (ours - paper).abs() < 0.0005,
                "{model} {config_name}: {figures:?} vs {expected:?}"
            );
        }
        assert_eq!(client.totals().calls, 148 * 5);
    }
}

#[tokio::test]
async fn replay_refuses_what_was_not_recorded() {
    let model = ReplayModel::Gpt5;
    let case = case("pandas_1_reproduced");
    let client = Client::with_replay(
        LlmConfig::new(ModelSpec::Replay(model)),
        ReplayProvider::from_cases(model, [case]),
    )
    .unwrap();
    let ablation = PromptBuilder::new("-V".parse().unwrap())
        .build_for_case(case)
        .unwrap();
    assert!(matches!(
        client.ask(&ablation, 1).await,
        Err(LlmError::Replay(ReplayError::ConfigNotRecorded(_)))
    ));
    let prompt = PromptBuilder::default().build_for_case(case).unwrap();
    assert!(matches!(
        client.ask(&prompt, 6).await,
        Err(LlmError::Replay(ReplayError::NotEnoughRuns {
            recorded: 5,
            ..
        }))
    ));
    let other = PromptBuilder::default()
        .build_for_case(self::case("pandas_1_fixed"))
        .unwrap();
    assert!(matches!(
        client.ask(&other, 1).await,
        Err(LlmError::Replay(ReplayError::UnknownCase(_)))
    ));
    let mut not_a_case = prompt.clone();
    not_a_case.case_id = None;
    assert!(matches!(
        client.ask(&not_a_case, 1).await,
        Err(LlmError::Replay(ReplayError::NotACase))
    ));
    let three = client.ask(&prompt, 3).await.unwrap();
    assert_eq!(three.answers.len(), 3);
    assert_eq!(
        three.calls.iter().map(|c| c.run).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
}
