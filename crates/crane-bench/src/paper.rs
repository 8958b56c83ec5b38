//! The CRANE-LLM paper's figures on the JunoBench development cases (the majority of the five
//! answers its authors recorded per case, model and configuration), shown beside the figures a
//! report reproduces for the same model and configuration.

use crate::dataset::DatasetKind;
use crate::report::{Detector, RunInfo};

/// Precision, recall, F1 and accuracy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperFigures {
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub accuracy: f64,
}

const fn figures(precision: f64, recall: f64, f1: f64, accuracy: f64) -> PaperFigures {
    PaperFigures {
        precision,
        recall,
        f1,
        accuracy,
    }
}

/// (model, configuration, figures) over the 148 development cases.
const FIGURES: [(&str, &str, PaperFigures); 6] = [
    ("gpt_5", "code_only", figures(0.815, 0.716, 0.763, 0.777)),
    ("gpt_5", "with_runtime", figures(0.779, 0.811, 0.795, 0.791)),
    (
        "gemini_2_5_flash",
        "code_only",
        figures(0.648, 0.797, 0.715, 0.682),
    ),
    (
        "gemini_2_5_flash",
        "with_runtime",
        figures(0.688, 0.892, 0.776, 0.743),
    ),
    (
        "Qwen_2_5_32B_Instruct",
        "code_only",
        figures(0.719, 0.622, 0.667, 0.689),
    ),
    (
        "Qwen_2_5_32B_Instruct",
        "with_runtime",
        figures(0.857, 0.649, 0.738, 0.770),
    ),
];

/// The paper's figures for this run: the llm detector on JunoBench cases, with one of the
/// paper's models (recorded or live under its usual name) and configurations.
pub fn figures_for(info: &RunInfo) -> Option<PaperFigures> {
    if info.detector != Detector::Llm || info.dataset_kind != DatasetKind::OfflineCases {
        return None;
    }
    let model = paper_model(info.model.as_deref()?)?;
    FIGURES
        .iter()
        .find(|(name, config, _)| *name == model && *config == info.config)
        .map(|(_, _, figures)| *figures)
}

fn paper_model(model: &str) -> Option<&'static str> {
    // `provider:name`, the name possibly with a `:tag` of its own (`ollama:qwen2.5:32b`).
    let name = model
        .split_once(':')
        .map_or(model, |(_, name)| name)
        .to_ascii_lowercase()
        .replace(['-', '.', ':'], "_");
    if name.starts_with("gpt_5") {
        Some("gpt_5")
    } else if name.starts_with("gemini_2_5_flash") {
        Some("gemini_2_5_flash")
    } else if name.starts_with("qwen_2_5_32b") || name.starts_with("qwen2_5_32b") {
        Some("Qwen_2_5_32B_Instruct")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::info;

    #[test]
    fn figures_are_found_for_the_papers_models_and_configurations_only() {
        let mut run = info("with_runtime");
        assert_eq!(figures_for(&run).map(|f| f.f1), Some(0.795));
        run.model = Some("openai:gpt-5".into());
        assert_eq!(figures_for(&run).map(|f| f.accuracy), Some(0.791));
        run.model = Some("ollama:qwen2.5:32b".into());
        assert_eq!(figures_for(&run).map(|f| f.recall), Some(0.649));
        run.model = Some("openai:gpt-4o".into());
        assert_eq!(figures_for(&run), None);
        run.model = Some("replay:Qwen_2_5_32B_Instruct".into());
        run.config = "-S".into();
        assert_eq!(figures_for(&run), None);
        run.config = "code_only".into();
        run.detector = Detector::Hybrid;
        assert_eq!(figures_for(&run), None);
    }
}
