//! The cell being judged and its facts: what the target reads, summarized by the probe in the
//! live kernel without running user code, each fact marked with where the cells before bound
//! its name.

use std::time::{Duration, Instant};

use crane_analysis::{AnalysisError, CellAnalysis, ParsedCell};
use crane_detect::ExecutedCells;
use crane_kernel::KernelSession;
use crane_notebook::CodeCell;
use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::CheckError;

/// The cell being judged.
#[derive(Debug, Clone, Serialize)]
pub struct Target {
    /// 0-based index among code cells; `None` for code that is no notebook cell.
    pub index: Option<usize>,
    pub id: Option<String>,
    pub source: String,
    /// 0-based place among all the notebook's cells, and the recorded execution count (for the
    /// label only).
    #[serde(skip)]
    pub position: Option<usize>,
    #[serde(skip)]
    pub execution_count: Option<u64>,
    /// The file line on which the cell's source starts, when known (for CI annotations).
    #[serde(skip)]
    pub source_line: Option<usize>,
}

impl Target {
    pub fn from_cell(cell: &CodeCell) -> Self {
        Self {
            index: Some(cell.index),
            id: cell.id.clone(),
            source: cell.source.clone(),
            position: Some(cell.position),
            execution_count: cell.execution_count,
            source_line: cell.source_line,
        }
    }

    /// Code that is no notebook cell (`--code`, a cell the checking kernel is sent).
    pub fn code(source: String) -> Self {
        Self {
            index: None,
            id: None,
            source,
            position: None,
            execution_count: None,
            source_line: None,
        }
    }

    pub fn label(&self) -> String {
        match self.index {
            Some(index) => crane_notebook::cell_label(
                index,
                self.position,
                self.execution_count,
                self.id.as_deref(),
            ),
            None => "the given code".into(),
        }
    }
}

/// The target's analysis and runtime facts.
pub struct Gathered {
    /// The target's one parse, which its analysis, the rules and its dry run take.
    pub target: ParsedCell,
    /// Built from `target`.
    pub analysis: Result<CellAnalysis, AnalysisError>,
    pub runtime: RuntimeInfo,
    /// Docstrings of the library callables the cell calls (for `with_api_docs` prompts).
    pub api_docs: Option<Vec<crane_llm::ApiDoc>>,
    pub extract: Duration,
    /// Of `extract`, the probe's round trip to the kernel; `None` when no probe was sent.
    pub probe: Option<Duration>,
}

/// Analyzes the target and reads the facts of what it reads from the kernel, invisibly;
/// `prefetched` facts, when the caller already has them for this kernel state, save the call.
/// The facts say where the `prior` cells (at `prior_indices` in the notebook) bound each name.
pub async fn gather(
    session: &mut KernelSession,
    target: &Target,
    prior: &ExecutedCells,
    prior_indices: &[usize],
    want_api_docs: bool,
    prefetched: Option<RuntimeInfo>,
) -> Result<Gathered, CheckError> {
    let started = Instant::now();
    let (parsed, analysis) = crane_analysis::parse_and_analyze(&target.source);
    let mut gathered = gather_analysed(
        session,
        parsed,
        analysis,
        prior,
        prior_indices,
        want_api_docs,
        prefetched,
    )
    .await?;
    gathered.extract = started.elapsed();
    Ok(gathered)
}

/// [`gather`] for a target the caller has parsed and analysed (`analysis` is `target`'s);
/// `extract` leaves that analysis out.
pub async fn gather_analysed(
    session: &mut KernelSession,
    target: ParsedCell,
    analysis: Result<CellAnalysis, AnalysisError>,
    prior: &ExecutedCells,
    prior_indices: &[usize],
    want_api_docs: bool,
    prefetched: Option<RuntimeInfo>,
) -> Result<Gathered, CheckError> {
    let started = Instant::now();
    let bindings = prior.bindings();
    let mut probe = None;
    let mut runtime = match (&analysis, prefetched) {
        (Ok(_), Some(runtime)) => runtime,
        (Ok(analysis), None) => {
            let expressions = crane_analysis::targets_for_probe(analysis);
            if expressions.is_empty() {
                RuntimeInfo::default()
            } else {
                let sent = Instant::now();
                let runtime =
                    crane_probe::summarize(session, &expressions, &crane_probe::Budget::default())
                        .await
                        .map_err(CheckError::probe)?;
                probe = Some(sent.elapsed());
                runtime
            }
        }
        (Err(_), _) => RuntimeInfo::default(),
    };
    for (expression, variable) in runtime.variables.iter_mut() {
        let name = expression
            .split(['.', '['])
            .next()
            .unwrap_or(expression.as_str());
        if let Some(crane_analysis::NameState::Bound { at, .. }) = bindings.names.get(name) {
            variable.origin = Some(crane_runtime::Origin {
                cell: prior_indices.get(at.cell).copied().unwrap_or(at.cell) as u32,
                line: at.line,
            });
        }
    }
    let api_docs = match (&analysis, want_api_docs) {
        (Ok(analysis), true) => {
            let mut callees: Vec<String> = analysis
                .calls
                .iter()
                .map(|call| call.callee.clone())
                .collect();
            callees.dedup();
            let docs =
                crane_probe::api_docs(session, &callees, crane_llm::DEFAULT_API_DOCS_BUDGET * 4)
                    .await
                    .map_err(CheckError::probe)?;
            Some(
                docs.into_iter()
                    .map(|doc| crane_llm::ApiDoc {
                        name: match doc.signature {
                            Some(signature) => format!("{}{signature}", doc.name),
                            None => doc.name,
                        },
                        doc: doc.doc,
                    })
                    .collect(),
            )
        }
        _ => None,
    };
    Ok(Gathered {
        target,
        analysis,
        runtime,
        api_docs,
        extract: started.elapsed(),
        probe,
    })
}
