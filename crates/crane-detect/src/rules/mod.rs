//! The rule engine: deterministic checks over the target cell's code and the runtime facts.
//!
//! Each rule is the general statement of one crash condition. A rule fires only when the facts
//! it needs are present and exact; when a fact is missing, sampled or uncertain (unknown type,
//! the object rebound earlier in the cell by something crane cannot follow) it stays silent.
//! Precision comes first: a rule finding is reported as [`FindingStatus::Proven`].
//!
//! Layers, each depending only on those before it: `core` is Python's semantics (the abstract
//! interpreter, plain values, functions and classes from the cells) and knows no library; it
//! asks a [`core::Library`] what library objects do. `contracts` holds what the libraries
//! promise as data tables (accepted arguments, input shapes and dtypes, fitted attributes).
//! `models` implements the library side: objects described by runtime facts, the contract
//! tables applied to them, and the rules that prove a broken contract. `catalogue` names
//! every rule. [`ExecutedCells`] holds the cells executed before the target with what the
//! rules draw from each, worked out once per cell.

use crane_analysis::{AnalysisError, CellAnalysis};
use crane_runtime::RuntimeInfo;
use serde::Serialize;

use crate::{DetectorKind, Finding, FindingStatus};

mod catalogue;
mod contracts;
mod core;
mod executed;
mod models;

pub use catalogue::{catalogue, RuleCode, RuleInfo, UnknownRule};
pub use executed::ExecutedCells;

/// The id of every row of the contract tables (argument domains, metric target families,
/// torch losses and layers), each of which has fixtures run against the real library.
pub fn contract_ids() -> Vec<&'static str> {
    contracts::domains()
        .map(|row| row.id)
        .chain(contracts::size_relations().map(|row| row.id))
        .chain(contracts::dimensions().map(|row| row.id))
        .chain([
            "sklearn.metrics.labels",
            "sklearn.metrics.values",
            "sklearn.tags.allow_nan",
        ])
        .chain(contracts::keras::LOSSES.iter().map(|row| row.id))
        .chain(contracts::torch::LOSSES.iter().map(|row| row.id))
        .chain(contracts::torch::LAYERS.iter().map(|row| row.id))
        .collect()
}

/// The scikit-learn (module, class, method) triples the contract table says raise
/// `NotFittedError` when the estimator is not fitted, each run unfitted by the contract tests.
pub fn raise_unfitted() -> Vec<(&'static str, &'static str, &'static str)> {
    contracts::sklearn::RAISE_UNFITTED
        .iter()
        .flat_map(|(module, class, methods)| methods.iter().map(move |m| (*module, *class, *m)))
        .collect()
}

/// Whether an estimator class accepts NaN in X in every version in use (the contract table).
pub(crate) fn accepts_nan(class: &str) -> bool {
    contracts::sklearn::ACCEPTS_NAN.contains(&class)
}

/// What the rules look at.
#[derive(Debug, Clone, Copy)]
pub struct CheckContext<'a> {
    /// The target cell and its one parse, which the rules walk.
    pub target: &'a crane_analysis::ParsedCell,
    /// The target cell's analysis, or why it does not parse.
    pub analysis: Result<&'a CellAnalysis, &'a AnalysisError>,
    /// Facts about the objects the target cell reads.
    pub runtime: &'a RuntimeInfo,
    /// The cells executed before the target, in execution order.
    pub executed_cells: &'a ExecutedCells,
}

/// Run every rule over the target cell. The result is the first proven crash in execution order
/// (a cell stops at its first exception), or nothing.
pub fn check(context: &CheckContext) -> Vec<Finding> {
    // The interpreter recurses once per level of nesting (at most the bound of
    // `crane_analysis::bounds`): on a deep stack, whatever thread the caller is on.
    crane_analysis::bounds::with_deep_stack(|| interpret(context).findings)
}

/// What the interpreter holds about a name after the cell ran, in Python's own terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum KnownValue {
    /// A plain Python value, as `repr` prints it.
    Python(String),
    /// An array or tensor of this shape.
    Shape(Vec<u64>),
}

/// The rules' findings, and the values the interpreter claims to know when the cell ends.
#[derive(Debug, Clone, Default)]
pub struct Interpretation {
    pub findings: Vec<Finding>,
    /// Global names the cell bound whose value is known; a name absent here is unknown.
    pub values: std::collections::BTreeMap<String, KnownValue>,
    /// Per top-level statement of the cell (in order, up to where interpretation ended): every
    /// expression in it had a known value, so it completes without an exception.
    pub closed: Vec<bool>,
    /// Where the interpreter gave up, by reason, and how often: a call of code it does not
    /// follow, a test the facts do not decide, a loop over unknown items, ...
    pub gave_up: std::collections::BTreeMap<&'static str, usize>,
    /// The top-level statement (its position) at which Python certainly raises and the
    /// interpreter stopped without a finding, with the exception's class when crane names it
    /// (a `raise` of another class is `None`).
    pub raised: Option<(usize, Option<String>)>,
}

/// Interpret the target cell as [`check`] does, and also report what it knows each name holds
/// at the end. Every claimed value must be the one Python computes (the differential tests
/// hold the interpreter to that).
pub fn interpret(context: &CheckContext) -> Interpretation {
    let Ok(analysis) = context.analysis else {
        return Interpretation::default();
    };
    let Some(cell) = core::cell::Cell::from_parsed(context.target) else {
        return Interpretation::default();
    };
    let kernel = context.executed_cells.kernel(context.target.source());
    let executed = context.executed_cells.parsed();
    let rebuilt = rebuilt_from_executed_cells(context, &kernel);
    let mut interp = core::interp::Interp::new(
        &models::Libraries,
        context.runtime,
        &kernel,
        &cell,
        analysis,
        executed.definitions(),
        executed.classes(),
    );
    interp.seed(rebuilt);
    let run = interp.run_with_values();
    let values = run
        .values
        .into_iter()
        .filter_map(|(name, value)| {
            let known = match &value {
                core::value::Value::Object(obj)
                    if matches!(
                        obj.kind(),
                        crane_runtime::Kind::Ndarray | crane_runtime::Kind::Tensor
                    ) =>
                {
                    KnownValue::Shape(models::facts::full_shape(&obj.var)?)
                }
                other => KnownValue::Python(core::python::repr(&other.python()?)?),
            };
            Some((name, known))
        })
        .collect();
    Interpretation {
        findings: run.findings,
        values,
        closed: run.closed,
        gave_up: run.gave_up,
        raised: run.raised,
    }
}

/// How much executed code is interpreted again to rebuild objects the facts do not describe.
const MAX_REBUILT_CELLS: usize = 200;
const MAX_REBUILT_BYTES: usize = 256 * 1024;

/// The values the executed cells leave in names the runtime facts do not describe (recorded
/// facts list only some names, or only their type): the executed cells interpreted in order,
/// each starting from what the ones before left, with the functions and classes defined before
/// it. A name is rebuilt only when every step that bound or changed it was followed, and it
/// shares no object with a name the facts describe (the two would be one object in the kernel).
fn rebuilt_from_executed_cells(
    context: &CheckContext,
    kernel: &core::kernel::Kernel,
) -> Vec<(String, core::value::Value)> {
    // Facts from crane's probe describe the live kernel, which may have run code no executed
    // cell shows: there the facts alone are trusted.
    if context.runtime.cost.is_some() {
        return Vec::new();
    }
    let executed = context.executed_cells;
    let Some(cells) = executed.parsed().cells() else {
        return Vec::new();
    };
    if cells.is_empty() || cells.len() > MAX_REBUILT_CELLS || executed.bytes() > MAX_REBUILT_BYTES {
        return Vec::new();
    }
    let nothing = RuntimeInfo::default();
    let mut state: Vec<(String, core::value::Value)> = Vec::new();
    let mut history = executed.parsed().history();
    for (cell, analysis) in cells.iter().zip(executed.analyses()) {
        let Ok(analysis) = analysis else {
            return Vec::new();
        };
        let mut interp = core::interp::Interp::new(
            &models::Libraries,
            &nothing,
            kernel,
            cell,
            analysis,
            history.definitions(),
            history.classes(),
        );
        interp.seed(std::mem::take(&mut state));
        state = interp.run_with_values().values;
        history.advance();
    }
    let described = |name: &str, value: &core::value::Value| match context.runtime.get(name) {
        None => false,
        // Facts of the type alone say less than the rebuilt object of that type.
        Some(var) => {
            !(var.s.is_empty()
                && var.r.is_empty()
                && value.obj().is_some_and(|obj| obj.kind() == var.kind))
        }
    };
    let mut shared_with_described = std::collections::HashSet::new();
    for (name, value) in &state {
        if described(name, value) || context.runtime.missing.iter().any(|m| m == name) {
            shared_with_described.extend(core::value::object_ids(value));
        }
    }
    state
        .into_iter()
        .filter(|(name, value)| {
            !described(name, value)
                && !context.runtime.missing.iter().any(|m| m == name)
                && core::value::object_ids(value)
                    .iter()
                    .all(|id| !shared_with_described.contains(id))
        })
        .collect()
}

/// Names whose objects the cell changes in place: roots of subscript and attribute
/// assignments, receivers of `inplace=True` calls.
pub(crate) fn changed_in_place(source: &str) -> Vec<String> {
    core::kernel::parse_cell(source)
        .map_or_else(Vec::new, |body| core::kernel::changed_in_place(&body))
}

/// Whether the library type a word names (`DataFrame`, `Series`, `ndarray`, `Categorical`) has
/// this public attribute in some version in use; `None` for other words.
pub(crate) fn library_type_has(type_word: &str, attr: &str) -> Option<bool> {
    let attributes = match type_word {
        "DataFrame" => models::attributes::FRAME_ATTRIBUTES,
        "Series" => models::attributes::SERIES_ATTRIBUTES,
        "ndarray" => models::attributes::NDARRAY_ATTRIBUTES,
        "Categorical" => models::attributes::CATEGORICAL_ATTRIBUTES,
        _ => return None,
    };
    Some(attributes.contains(&attr))
}

/// The column names of a frame when all are known and plain (as text).
pub(crate) fn plain_column_names(var: &crane_runtime::Variable) -> Option<Vec<String>> {
    Some(
        models::pandas::plain_columns(var)?
            .into_iter()
            .map(|column| column.name.to_string())
            .collect(),
    )
}

/// A proven finding of `rule` at `line`.
pub(crate) fn proven(
    rule: RuleCode,
    line: u32,
    diagnosis: String,
    evidence: Vec<String>,
) -> Finding {
    Finding {
        detector: DetectorKind::Rules,
        rule: Some(rule),
        crash: true,
        exception: Some(rule.info().exception.to_owned()),
        line: Some(line),
        diagnosis,
        evidence,
        confidence: 0.95,
        status: FindingStatus::Proven,
    }
}
