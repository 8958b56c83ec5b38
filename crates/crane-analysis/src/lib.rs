//! Static analysis of notebook cells (Python with IPython syntax, parsed by Ruff's parser):
//! what a cell reads from the kernel, binds, calls and computes, and where names were last bound
//! across the executed cells.
//!
//! A cell is parsed once: [`ParsedCell`] holds its parse within the [`bounds`] (the only place
//! that calls the parser), and every reader takes it, the analysis ([`analyze_parsed`]) and, in
//! other crates, the rules, the dry run, the replica's imports and the abridged run's shapes.
//! What a cell does outside its process, read from its analysis, is [`effects`].
//!
//! # Expression strings
//!
//! Names, attribute chains, subscripts and callees are printed as canonical expression strings.
//! They are the keys of the runtime facts, so they are stable, valid Python, and evaluate to the
//! same object as the code they were taken from:
//!
//! - names and attributes as written: `df`, `model.fit`, `a.b.c`;
//! - strings as Python's `repr` prints them: single quotes unless the text holds a `'` and no
//!   `"`: `df['price']`, `d['k']['j']`; bytes likewise with a `b` prefix;
//! - integers in decimal (`0x10` is `16`), floats as Python's `repr` (`1.50` is `1.5`, `1e16` is
//!   `1e+16`), `True`, `False`, `None`, `...`, negative numbers as `-1`;
//! - lists `[a, b]`, tuples in brackets without parentheses (`x[:, 0]`, `x[1, 2]`, one-element
//!   tuples `x[1,]`), other tuples `(a, b)` / `(a,)`, items joined by `, `;
//! - slices as Python's `ast.unparse` prints them: `x[1:3]`, `x[:, 0]`, `x[::2]`, `x[1:]`;
//! - calls with their arguments: `df.groupby('a').mean`, keywords as `name=value`;
//! - any other expression as its source text, parenthesized when it is part of a larger one.
//!
//! For references and constant keys these strings equal what Python's `ast.unparse` prints.
//! A *reference* (what the probe may summarize) is a name, an attribute of a reference, or a
//! subscript of a reference with a constant key (constants, lists/tuples of constants, slices
//! of constants), e.g. `df.loc[:, 'a']`, `df['a'].str`.
//!
//! # Scope rules
//!
//! The cell is walked in execution order. A read is a dependency on the kernel (`reads`) unless
//! the cell bound the name before (`local_reads`); parameters and locals of functions, lambdas,
//! comprehensions and class bodies are never dependencies. The body of a function, lambda or
//! class defined in the cell is walked where the cell calls it (or passes it to a call, or
//! decorates with it), once, with the cell's bindings at that point; calling a class runs its
//! `__new__`/`__init__`/`__post_init__`, and `obj.m(...)` runs the methods named `m` of the
//! cell's classes. Calls, attribute chains, subscripts and binary operations inside such bodies
//! carry `called_from`. Augmented assignments appear as binary operations with operator `+=`,
//! `@=`, etc. After `from m import *`, `%run` or `%pylab`, reads carry `after_star_import`.
//! `!cmd {var}` interpolation is not analyzed: IPython leaves a failing expansion as text.

mod analyzer;
mod bindings;
pub mod bounds;
mod builtins;
mod comments;
pub mod effects;
mod magics;
mod model;
mod parsed;
mod position;
mod prefix;
mod reads;
mod render;
mod repr;

pub use bindings::bindings;
pub use builtins::is_builtin;
pub use comments::{comments, Comment};
pub use model::*;
pub use parsed::ParsedCell;
pub use prefix::{
    bound_only_prefix, failed_prefix, failed_prefix_watching, not_run_alone, out_of_order,
    statements_before, watched_prefix, FailedPrefix, NotRunAlone, OutOfOrder, Prior,
};
pub use reads::built_from_reads;
pub use repr::{python_float_repr, python_repr};

/// Analyze one cell. IPython syntax (`%magic`, `!shell`, `?help`, `%%cell_magic`) is accepted.
/// Cells larger or nested deeper than `bounds` allows are refused, not analysed.
pub fn analyze_cell(source: &str) -> Result<CellAnalysis, AnalysisError> {
    analyzer::analyze(source).map(|analysis| analysis.cell)
}

/// [`analyze_cell`] of a cell already parsed: the analysis walks its one parse.
pub fn analyze_parsed(cell: &ParsedCell) -> Result<CellAnalysis, AnalysisError> {
    analyzer::analyze_parsed(cell).map(|analysis| analysis.cell)
}

/// A cell's one parse and the analysis built from it, on one deep-stack thread.
pub fn parse_and_analyze(source: &str) -> (ParsedCell, Result<CellAnalysis, AnalysisError>) {
    bounds::with_deep_stack(|| {
        let parsed = ParsedCell::parse(source);
        let analysis = analyze_parsed(&parsed);
        (parsed, analysis)
    })
}

/// The distinct expressions (names, attribute chains, constant subscripts) the probe should
/// summarize for this cell, in order of first use, leaving out what the cell binds before use.
/// Builtin names (`print`, `len`, `list`) are included because a kernel may shadow them; the
/// probe summarizes them only when the kernel's namespace binds them (`NameRead::builtin`).
pub fn targets_for_probe(analysis: &CellAnalysis) -> Vec<String> {
    let mut located: Vec<(u32, u32, &str)> = Vec::new();
    located.extend(
        analysis
            .reads
            .iter()
            .map(|r| (r.line, r.column, r.name.as_str())),
    );
    located.extend(
        analysis
            .attributes
            .iter()
            .map(|a| (a.line, a.column, a.expr.as_str())),
    );
    located.extend(
        analysis
            .subscripts
            .iter()
            .map(|s| (s.line, s.column, s.expr.as_str())),
    );
    located.sort_by_key(|&(line, column, expr)| (line, column, expr.len()));
    let mut seen = std::collections::HashSet::new();
    located
        .into_iter()
        .filter(|(_, _, expr)| seen.insert(*expr))
        .map(|(_, _, expr)| expr.to_owned())
        .collect()
}
