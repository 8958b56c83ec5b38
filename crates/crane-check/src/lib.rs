//! The check engine: how crane judges a cell against a live kernel, for every caller. It owns
//!
//! - [`options`]: [`CheckOptions`], the resolved options a check runs with (detector, LLM,
//!   prompt configuration, redaction, dry-run mode): plain values, no command-line parser;
//! - [`gather`](mod@gather): the [`Target`] and its facts ([`Gathered`]): what the cell reads, summarized by
//!   the probe in the kernel, marked with where the cells before bound each name;
//! - [`judge`](mod@judge): the detectors (rules, LLM, dry run in a fork or the replica) and
//!   their one verdict ([`Detection`]);
//! - [`report`]: [`CheckReport`], one check as `crane check` reports it;
//! - [`kernel`]: [`KernelChecker`], the checks of the checking kernel, cell after cell, with
//!   the kernel's history ([`history`], [`KernelHistory`]) kept across them.
//!
//! The engine prints nothing and reads no flags or files: the command line (crate `crane`)
//! resolves its flags, the environment and the configuration file into [`CheckOptions`], reads
//! the notebook, starts or attaches to the kernel, and reports; crane-proxy hands each cell a
//! frontend sends to [`KernelChecker`] with its `%crane` settings.
//!
//! Layers: crane-proxy depends on this crate, not the other way round. The proxy owns what is
//! done with a verdict (the policy, holding, relaying, snapshots) and its `Checker` trait, the
//! seam through which the relay calls a checker, implemented there for [`KernelChecker`] by
//! converting the `%crane` settings into a [`CellRequest`]; the engine knows no socket, magic
//! or policy, so the command line uses it without the proxy.
//!
//! # Where a cell is held
//!
//! The engine only judges; what is done with a verdict is its caller's. `crane run` holds a
//! cell on any crash verdict unless `--on-predicted-crash warn` (the binary's
//! `commands/run/`). In the checking kernel the holding is crane-proxy's, in two places,
//! each only on a certain crash: a rule's proof, or a crash a dry run observed in a fork,
//! abridged or in a replica ([`crane_detect::FindingStatus::is_certain`]).
//!
//! 1. Before the cell runs: `crane_proxy::check::decide` on the [`Checked`] verdict of
//!    [`KernelChecker::check`]. Under the `stop` policy a certain crash holds the cell with a
//!    `CranePredictedCrash` error and the kernel untouched; an LLM's prediction alone, or an
//!    abridged run's crash that may be its artefact, only warns, and so does everything under
//!    `warn`.
//! 2. While the cell runs: `beside_ended` in crane-proxy's `relay` module. A long cell a
//!    snapshot undoes runs for real at once, its abridged dry run beside it from the snapshot
//!    ([`Checked::beside`]); when that dry run crashes first and certainly, under `stop`, the
//!    real run is stopped and rolled back to the snapshot, and the cell ends with crane's
//!    error (`crane_proxy::stopped`).
//!
//! A held cell may still run in part: `crane_proxy::partial` runs its statements before the
//! predicted crash first when they only bind new names (as a kernel without crane would), then
//! ends the cell with the same error. Beside these, a cell during which the kernel died is held
//! when it is sent again unchanged against the state it died from (`crane_proxy::death`,
//! `Killer`): that is no prediction, it already killed the kernel once.

pub mod error;
pub mod gather;
pub mod history;
pub mod judge;
pub mod kernel;
pub mod options;
pub mod report;

pub use error::{CheckError, ErrorKind};
pub use gather::{gather, gather_analysed, Gathered, Target};
pub use history::KernelHistory;
pub use judge::{
    judge, uncertain_only, AutoDryRun, Cell, Detection, DetectorFailure, Judged, LlmUse,
};
pub use kernel::{CellRequest, Checked, KernelChecker, KernelEvent, ResolveLlm, Timings};
pub use options::{CheckOptions, Detector, DryRunWhen};
pub use report::{CheckReport, ReportTimings};
