//! Which cells ran before a target, in which order, and which cell is the target.

use crate::{CodeCell, Notebook, NotebookError};

/// The order in which a notebook's code cells are (re)executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionOrder {
    /// The executed cells in ascending `execution_count`, as the notebook recorded them;
    /// cells that were never executed do not count as having run.
    #[default]
    Recorded,
    /// All code cells top to bottom.
    Visual,
}

/// How the user named the cell to check.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TargetSelector {
    /// 0-based index among code cells (`--cell N`).
    Index(usize),
    /// Position from the end among code cells, 1 being the last (`--cell -N`).
    FromEnd(usize),
    /// nbformat cell id (`--cell-id ID`).
    Id(String),
    /// The first code cell that has no execution count.
    #[default]
    FirstUnexecuted,
}

impl Notebook {
    /// The order `check`, `inspect`, `run` and `exec` use unless told otherwise: recorded when
    /// the notebook records execution counts, else visual (a notebook saved after "Clear All
    /// Outputs" records none, and its recorded history would be empty).
    pub fn default_order(&self) -> ExecutionOrder {
        if self.has_execution_counts() {
            ExecutionOrder::Recorded
        } else {
            ExecutionOrder::Visual
        }
    }

    /// The code cell selected as target.
    pub fn target(&self, selector: &TargetSelector) -> Result<&CodeCell, NotebookError> {
        let cells = self.code_cells();
        if cells.is_empty() {
            return Err(NotebookError::NoCodeCells);
        }
        match selector {
            TargetSelector::Index(index) => {
                cells.get(*index).ok_or(NotebookError::CellOutOfRange {
                    requested: *index,
                    count: cells.len(),
                })
            }
            TargetSelector::FromEnd(back) => cells
                .len()
                .checked_sub(*back)
                .filter(|_| *back > 0)
                .and_then(|index| cells.get(index))
                .ok_or(NotebookError::CellFromEndOutOfRange {
                    requested: *back,
                    count: cells.len(),
                }),
            TargetSelector::Id(id) => cells
                .iter()
                .find(|cell| cell.id.as_deref() == Some(id))
                .ok_or_else(|| NotebookError::CellIdNotFound(id.clone())),
            TargetSelector::FirstUnexecuted => cells
                .iter()
                .find(|cell| cell.execution_count.is_none())
                .ok_or(NotebookError::NoUnexecutedCell),
        }
    }

    /// The cells that ran before `target`, in the order they ran.
    ///
    /// Recorded order: the executed cells whose count is below the target's (all executed
    /// cells when the target never ran), ascending; visual order: every code cell above it.
    pub fn cells_before(&self, target: &CodeCell, order: ExecutionOrder) -> Vec<&CodeCell> {
        match order {
            ExecutionOrder::Visual => self
                .code_cells()
                .iter()
                .take_while(|cell| cell.index != target.index)
                .collect(),
            ExecutionOrder::Recorded => self
                .recorded_history()
                .into_iter()
                .filter(|cell| cell.index != target.index)
                .filter(
                    |cell| match (cell.execution_count, target.execution_count) {
                        (Some(count), Some(target_count)) => count < target_count,
                        _ => true,
                    },
                )
                .collect(),
        }
    }

    /// Every code cell in the order a whole-notebook run executes them. Recorded order runs
    /// the recorded history first and then the never-executed cells top to bottom.
    pub fn execution_plan(&self, order: ExecutionOrder) -> Vec<&CodeCell> {
        match order {
            ExecutionOrder::Visual => self.code_cells().iter().collect(),
            ExecutionOrder::Recorded => {
                let mut plan = self.recorded_history();
                plan.extend(
                    self.code_cells()
                        .iter()
                        .filter(|cell| cell.execution_count.is_none()),
                );
                plan
            }
        }
    }

    /// Executed cells by ascending execution count; ties keep visual order.
    fn recorded_history(&self) -> Vec<&CodeCell> {
        let mut executed: Vec<&CodeCell> = self
            .code_cells()
            .iter()
            .filter(|cell| cell.execution_count.is_some())
            .collect();
        executed.sort_by_key(|cell| (cell.execution_count, cell.index));
        executed
    }
}
