//! One module per command, glue over the check engine (crane-check); `kernel` holds what
//! several commands share: starting or attaching to a kernel and replaying earlier cells into
//! it; `prepare`, the notebook and target read and the kernel brought to the state before the
//! target.

pub mod bench;
pub mod check;
pub mod exec;
pub mod inspect;
pub mod jupyter;
pub mod kernel;
pub mod llm;
pub mod prepare;
pub mod rules;
pub mod run;
