//! Live evidence for runnable pairs: a fresh kernel in the case folder executes the cells that
//! ran before the target (in the notebook's recorded order), then crane's probe summarizes what
//! the target cell reads, exactly as `crane check` would see it; the dry-run detector then runs
//! the target in a fork of that kernel.

use std::time::{Duration, Instant};

use crane_kernel::{
    ExecuteOptions, KernelError, KernelLaunch, KernelSession, OwnedKernel, StartOptions,
};
use crane_notebook::{ExecutionOrder, Notebook, NotebookError, TargetSelector};
use crane_probe::dry_run::{dry_run, DryRunError, DryRunOptions, DryRunOutcome};
use crane_probe::{api_docs, Budget, ProbeError};
use crane_runtime::{Origin, RuntimeInfo};

use crate::dataset::RunnableNotebook;

/// How runnable pairs are executed.
#[derive(Debug, Clone)]
pub struct LiveOptions {
    pub launch: KernelLaunch,
    /// Time limit of each executed cell.
    pub cell_timeout: Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Notebook(#[from] NotebookError),
    #[error("cannot start a kernel: {0}")]
    Start(#[source] KernelError),
    #[error(transparent)]
    Kernel(#[from] KernelError),
    #[error("code cell {cell}, executed before the target, raised {ename}: {evalue}")]
    CellFailed {
        cell: usize,
        ename: String,
        evalue: String,
    },
    #[error("code cell {cell}, executed before the target, ran longer than {after:?}")]
    CellTimedOut { cell: usize, after: Duration },
    #[error("runtime extraction failed: {0}")]
    Probe(#[from] ProbeError),
    #[error("dry run failed: {0}")]
    DryRun(#[from] DryRunError),
}

/// What to gather besides the runtime information.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extras {
    /// Dry-run the target in a fork of the kernel.
    pub dry_run: bool,
    /// Read the docstrings of the library callables the target calls.
    pub api_docs: bool,
}

/// What the kernel showed before the target cell.
#[derive(Debug, Clone)]
pub struct LiveEvidence {
    pub executed_cells: Vec<String>,
    pub target_cell: String,
    pub runtime: RuntimeInfo,
    /// Time spent extracting runtime information.
    pub runtime_ms: f64,
    /// What a dry run of the target cell found, when one was asked for.
    pub dry_run: Option<DryRunOutcome>,
    /// Docstrings of the library callables the target calls, when asked for.
    pub api_docs: Option<Vec<crane_llm::ApiDoc>>,
}

/// Execute a notebook up to its target in a fresh kernel, extract the target's runtime
/// information and the `extras`. The kernel is shut down before returning (killed with its
/// process group if this future is dropped).
pub async fn execute_to_target(
    notebook: &RunnableNotebook,
    options: &LiveOptions,
    extras: Extras,
) -> Result<LiveEvidence, LiveError> {
    let document = Notebook::read(&notebook.notebook)?;
    let target = document.target(&TargetSelector::Index(notebook.target_cell))?;
    let before = document.cells_before(target, ExecutionOrder::Recorded);
    let start = StartOptions {
        working_dir: Some(notebook.dir.clone()),
        ..StartOptions::default()
    };
    let kernel = OwnedKernel::start(&options.launch, &start)
        .await
        .map_err(LiveError::Start)?;
    let mut session = KernelSession::from(kernel);
    let outcome = async {
        let (runtime, runtime_ms) =
            run_and_probe(&mut session, &before, &target.source, options).await?;
        let api_docs = match extras.api_docs {
            true => Some(read_api_docs(&mut session, &target.source).await?),
            false => None,
        };
        let dry_run = match extras.dry_run {
            true => {
                let dry_run_options = DryRunOptions {
                    timeout: options.cell_timeout,
                    ..DryRunOptions::default()
                };
                Some(dry_run(&mut session, &target.source, &dry_run_options).await?)
            }
            false => None,
        };
        Ok::<_, LiveError>((runtime, runtime_ms, dry_run, api_docs))
    }
    .await;
    // A kernel that does not shut down cleanly is killed when dropped; the evidence stands.
    let _ = session.close().await;
    let (runtime, runtime_ms, dry_run, api_docs) = outcome?;
    Ok(LiveEvidence {
        executed_cells: before.iter().map(|cell| cell.source.clone()).collect(),
        target_cell: target.source.clone(),
        runtime,
        runtime_ms,
        dry_run,
        api_docs,
    })
}

/// Docstrings of what the cell calls, as `crane check` gives them to `with_api_docs` prompts.
async fn read_api_docs(
    session: &mut KernelSession,
    target_source: &str,
) -> Result<Vec<crane_llm::ApiDoc>, LiveError> {
    let Ok(analysis) = crane_analysis::analyze_cell(target_source) else {
        return Ok(Vec::new());
    };
    let mut seen = std::collections::HashSet::new();
    let callees: Vec<String> = analysis
        .calls
        .iter()
        .map(|call| call.callee.clone())
        .filter(|callee| seen.insert(callee.clone()))
        .collect();
    let docs = api_docs(session, &callees, crane_llm::DEFAULT_API_DOCS_BUDGET * 4).await?;
    Ok(docs
        .into_iter()
        .map(|doc| crane_llm::ApiDoc {
            name: match doc.signature {
                Some(signature) => format!("{}{signature}", doc.name),
                None => doc.name,
            },
            doc: doc.doc,
        })
        .collect())
}

async fn run_and_probe(
    session: &mut KernelSession,
    before: &[&crane_notebook::CodeCell],
    target_source: &str,
    options: &LiveOptions,
) -> Result<(RuntimeInfo, f64), LiveError> {
    let execute = ExecuteOptions::cell().with_timeout(options.cell_timeout);
    for cell in before {
        let execution = session.execute(&cell.source, &execute).await?;
        if execution.timed_out() {
            return Err(LiveError::CellTimedOut {
                cell: cell.index,
                after: options.cell_timeout,
            });
        }
        if let Some(error) = execution.error() {
            return Err(LiveError::CellFailed {
                cell: cell.index,
                ename: error.ename.clone(),
                evalue: error.evalue.clone(),
            });
        }
    }
    let started = Instant::now();
    let mut runtime = match crane_analysis::analyze_cell(target_source) {
        Ok(analysis) => {
            let expressions = crane_analysis::targets_for_probe(&analysis);
            crane_probe::summarize(session, &expressions, &Budget::default()).await?
        }
        Err(_) => RuntimeInfo::default(),
    };
    let runtime_ms = started.elapsed().as_secs_f64() * 1000.0;
    let sources: Vec<&str> = before.iter().map(|cell| cell.source.as_str()).collect();
    let bindings = crane_analysis::bindings(&sources);
    for (expression, variable) in runtime.variables.iter_mut() {
        let name = expression
            .split(['.', '['])
            .next()
            .unwrap_or(expression.as_str());
        if let Some(crane_analysis::NameState::Bound { at, .. }) = bindings.names.get(name) {
            variable.origin = Some(Origin {
                cell: before.get(at.cell).map_or(at.cell, |cell| cell.index) as u32,
                line: at.line,
            });
        }
    }
    Ok((runtime, runtime_ms))
}
