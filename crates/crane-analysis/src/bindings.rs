//! Where names were last bound across the executed cells.

use crate::analyzer::{analyze_parsed, NameEvent};
use crate::model::{
    AnalysisError, Bindings, CellAnalysis, CellStarImport, Location, NameState, UnparsedCell,
};
use crate::parsed::ParsedCell;

/// Where each name was last bound (or deleted) by the executed cells, given in execution order.
/// Cells that do not parse are skipped and listed.
pub fn bindings<S: AsRef<str>>(executed_cells: &[S]) -> Bindings {
    let mut result = Bindings::default();
    for (cell, source) in executed_cells.iter().enumerate() {
        let _ = result.add_cell(cell, source.as_ref());
    }
    result
}

impl Bindings {
    /// Adds the executed cell `cell` (0-based, run after every cell added before) and returns
    /// its analysis, as [`crate::analyze_cell`] gives it; a cell that does not parse is listed
    /// in `unparsed_cells`. Adding cells one by one gives what [`bindings`] gives for all.
    pub fn add_cell(&mut self, cell: usize, source: &str) -> Result<CellAnalysis, AnalysisError> {
        self.add_parsed_cell(cell, &ParsedCell::parse(source))
    }

    /// [`Bindings::add_cell`] of a cell already parsed.
    pub fn add_parsed_cell(
        &mut self,
        cell: usize,
        parsed: &ParsedCell,
    ) -> Result<CellAnalysis, AnalysisError> {
        let analysis = match analyze_parsed(parsed) {
            Ok(analysis) => analysis,
            Err(error) => {
                self.unparsed_cells.push(UnparsedCell {
                    cell,
                    error: error.clone(),
                });
                return Err(error);
            }
        };
        self.star_imports.extend(
            analysis
                .cell
                .star_imports
                .iter()
                .map(|star| CellStarImport {
                    cell,
                    module: star.module.clone(),
                    line: star.line,
                }),
        );
        for event in analysis.events {
            match event {
                NameEvent::Bound { name, line, kind } => {
                    let at = Location { cell, line };
                    self.names.insert(name, NameState::Bound { at, kind });
                }
                NameEvent::Deleted { name, line } => {
                    let previously_bound = match self.names.get(&name) {
                        Some(NameState::Bound { at, .. }) => Some(*at),
                        Some(NameState::Deleted {
                            previously_bound, ..
                        }) => *previously_bound,
                        None => None,
                    };
                    let at = Location { cell, line };
                    self.names.insert(
                        name,
                        NameState::Deleted {
                            at,
                            previously_bound,
                        },
                    );
                }
            }
        }
        Ok(analysis.cell)
    }
}
