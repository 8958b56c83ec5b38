//! Where names were last bound across the executed cells.

use crate::analyzer::{analyze, NameEvent};
use crate::model::{Bindings, CellStarImport, Location, NameState, UnparsedCell};

/// Where each name was last bound (or deleted) by the executed cells, given in execution order.
/// Cells that do not parse are skipped and listed.
pub fn bindings<S: AsRef<str>>(executed_cells: &[S]) -> Bindings {
    let mut result = Bindings::default();
    for (cell, source) in executed_cells.iter().enumerate() {
        let analysis = match analyze(source.as_ref()) {
            Ok(analysis) => analysis,
            Err(error) => {
                result.unparsed_cells.push(UnparsedCell { cell, error });
                continue;
            }
        };
        result
            .star_imports
            .extend(
                analysis
                    .cell
                    .star_imports
                    .into_iter()
                    .map(|star| CellStarImport {
                        cell,
                        module: star.module,
                        line: star.line,
                    }),
            );
        for event in analysis.events {
            match event {
                NameEvent::Bound { name, line, kind } => {
                    let at = Location { cell, line };
                    result.names.insert(name, NameState::Bound { at, kind });
                }
                NameEvent::Deleted { name, line } => {
                    let previously_bound = match result.names.get(&name) {
                        Some(NameState::Bound { at, .. }) => Some(*at),
                        Some(NameState::Deleted {
                            previously_bound, ..
                        }) => *previously_bound,
                        None => None,
                    };
                    let at = Location { cell, line };
                    result.names.insert(
                        name,
                        NameState::Deleted {
                            at,
                            previously_bound,
                        },
                    );
                }
            }
        }
    }
    result
}
