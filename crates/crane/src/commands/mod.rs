//! One module per command; `kernel` holds what several commands share: starting or attaching
//! to a kernel and replaying earlier cells into it.

pub mod bench;
pub mod check;
pub mod exec;
pub mod inspect;
pub mod jupyter;
pub mod kernel;
pub mod llm;
pub mod pipeline;
pub mod rules;
pub mod run;
