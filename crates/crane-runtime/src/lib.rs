//! The runtime-information model of crane: typed S/R/V facts about the live objects a cell
//! reads (the vocabulary of `docs/runtime-facts.md`), ablation filters over the sections, a
//! compact token-budgeted rendering for prompts, the paper's `pprint` rendering for comparison,
//! JunoBench case files, and the adapter from CRANE-LLM's recorded runtime information.

mod crane;
mod filter;
pub mod junobench;
mod model;
mod pprint;
mod render;
mod signature;

pub use crane::{from_crane, from_crane_with_source, to_crane};
pub use filter::{ParseSectionsError, Sections};
pub use model::{
    number, AttrPresence, Certainty, Column, ColumnName, Cost, Facts, Kind, Origin, RuntimeInfo,
    Section, Variable,
};
pub use pprint::{pformat, pformat_crane, render_paper};
pub use render::{render, token_count, Redact, RenderOptions, Rendered};
pub use signature::{Binder, CallSignature, Parameter, ParameterKind, Signature, SignatureError};
