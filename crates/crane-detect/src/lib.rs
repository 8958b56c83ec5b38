//! crane's detectors and their combination into one verdict.
//!
//! A detector looks at a target cell and yields [`Finding`]s: the rule engine ([`rules`]) proves
//! crashes from the cell's code and the runtime facts, the LLM predicts them, a dry run observes
//! them. [`combine`] turns the findings into one [`Verdict`]; [`hybrid`] applies the policy that
//! joins rule findings with an LLM's answer (documented in `docs/rules.md`).

mod finding;
mod hybrid;
pub mod junobench;
mod observed;
pub mod rules;
pub mod signature;
pub mod silence;
pub mod snapshot;
pub mod suppress;

pub use finding::{combine, DetectorKind, Finding, FindingStatus, Overridden, Verdict};
pub use hybrid::{hybrid, hybrid_in_context, Hybrid};
pub use observed::{dry_run_finding, llm_finding};
pub use rules::{CheckContext, ExecutedCells, RuleCode, RuleInfo};
