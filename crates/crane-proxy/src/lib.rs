//! crane as a Jupyter kernel: `crane kernel serve` owns the channels a frontend (JupyterLab,
//! Notebook, VS Code, nbclient, papermill) connects to, starts the real ipykernel behind them on
//! private ports, relays every message both ways unchanged, and checks each user cell before
//! relaying it.
//!
//! - [`relay`]: the relay, one module per job under `relay/` (its doc lists them): the
//!   sockets and signing, the ordered shell queue where every cell waits its turn
//!   (`relay/queue.rs`, a state machine without I/O), a cell's way through the check, iopub
//!   filtering, crane's answers and magics, snapshots taken, rollbacks and takeovers, the dry
//!   run beside a long cell, interrupts, and the kernels started, switched and reaped;
//! - [`check`]: the [`Checker`] (crane-check's engine, [`crane_check::KernelChecker`]), the
//!   policy's [`Decision`], and the held-cell (`CranePredictedCrash`) and warning outputs;
//! - [`failed`]: a cell that raised: the line it raised at, whether its state is kept or
//!   rolled back, and `%tb`/`%debug` after a rollback;
//! - [`partial`]: a held cell whose statements before the predicted crash only bind new
//!   names: they run first, as without crane, and the cell ends with crane's error;
//! - [`stopped`]: crane's error for a cell stopped by its dry run beside it, in place of the
//!   kernel's interrupt;
//! - [`death`]: a kernel that died: the words of its death, the return to the snapshot before
//!   the cell (or a fresh kernel), the hold of that cell run again, the OOM killer's order;
//! - [`effects`]: what a cell does outside the kernel, named when it is taken back;
//! - [`settings`]: the per-kernel [`Settings`] and the `%crane ...` magics that change them;
//! - [`snapshots`]: the snapshots of the kernel kept from before its cells, and their memory
//!   watch (a takeover, in [`relay`], makes one the kernel).
//!
//! A cell waits its turn in the relay's shell queue (`relay/queue.rs`); it is held before it
//! runs ([`check::decide`], acted on in `relay/cell.rs`), while it runs (`beside_ended` in
//! `relay/beside.rs`) and when it killed the kernel ([`death`]), and may run in part first
//! ([`partial`]): crane-check's crate doc, "Where a cell is held", says when and why.

pub mod check;
pub mod death;
pub mod effects;
pub mod failed;
pub mod partial;
pub mod relay;
pub mod settings;
pub mod snapshots;
pub mod stopped;

pub use check::{CheckRequest, Checked, Checker, Decision, KernelEvent, Timings, HELD_ENAME};
pub use relay::{serve, ProxyError, ServeEnd, ServeOptions};
pub use settings::{DryRunMode, Policy, Settings};
