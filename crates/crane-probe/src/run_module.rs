//! The dry-run module in the kernel, the one module the fork's roles share (the dry run, kernel
//! snapshots, the replica's export): its source, its private name, and crane's calls into it
//! (injected first when the kernel lacks this version), answered in the protocol both sides
//! speak.

use std::sync::OnceLock;
use std::time::Duration;

use crane_kernel::KernelSession;
use serde_json::Value;

use crate::fork::forked_module_source;
use crate::module::KernelModule;
use crate::run_report::DryRunError;

/// The dry-run module's Python source: the fork's part (behind the guard against user code it
/// shares with the probe), what the module's parts share (`python/crane_common.py`), the run of
/// a cell in a fork and its report (`python/crane_cell_run.py`), the dry run's calls
/// (`python/crane_dryrun.py`), the abridged run, its padding and the verdict on its crash,
/// the memory argument. Kernel snapshots (`python/crane_snapshot.py`, `crane_takeover.py`,
/// `crane_snapshot_files.py`, [`crate::snapshot`]) are a second role in the same module, and
/// the replica (`python/crane_replica*.py`, [`crate::replica`]) a third: its export runs in the
/// kernel, the rest in the replica's process, which runs a cell as the dry run does through the
/// shared files, not the dry run's own.
pub const DRY_RUN_SOURCE: &str = concat!(
    forked_module_source!(
        "../python/crane_common.py",
        "../python/crane_cell_run.py",
        "../python/crane_overlay.py",
        "../python/crane_dryrun.py"
    ),
    include_str!("../python/crane_abridge.py"),
    include_str!("../python/crane_abridge_libraries.py"),
    include_str!("../python/crane_padding.py"),
    include_str!("../python/crane_steps.py"),
    include_str!("../python/crane_steady.py"),
    include_str!("../python/crane_dependence.py"),
    include_str!("../python/crane_contracts.py"),
    include_str!("../python/crane_columns.py"),
    include_str!("../python/crane_driven.py"),
    include_str!("../python/crane_memory.py"),
    include_str!("../python/crane_snapshot.py"),
    include_str!("../python/crane_takeover.py"),
    include_str!("../python/crane_snapshot_files.py"),
    include_str!("../python/crane_fingerprint.py"),
    include_str!("../python/crane_alone.py"),
    include_str!("../python/crane_replica.py"),
    include_str!("../python/crane_replica_export.py"),
    include_str!("../python/crane_replica_pickle.py"),
    include_str!("../python/crane_replica_standin.py"),
    include_str!("../python/crane_replica_rebuild.py")
);

/// The private name of the dry-run module in the kernel's `sys.modules`.
pub const DRY_RUN_MODULE: &str = "_crane_dryrun";

/// The protocol version both sides speak (`PROTOCOL` in the Python module).
pub(crate) const PROTOCOL: u64 = 1;

/// The digest of [`DRY_RUN_SOURCE`], shared by its roles' handles ([`KernelModule::digest`]).
pub(crate) static DRY_RUN_DIGEST: OnceLock<String> = OnceLock::new();

const DRY_RUN: KernelModule = KernelModule {
    name: DRY_RUN_MODULE,
    source: DRY_RUN_SOURCE,
    digest: &DRY_RUN_DIGEST,
    filename: "<crane-dryrun-module>",
    key: "crane_dry_run",
};

/// Call `function(request)` of the dry-run module, injecting it first when the kernel lacks
/// this version.
pub(crate) async fn call(
    session: &mut KernelSession,
    function: &str,
    request: &Value,
    timeout: Duration,
) -> Result<Value, DryRunError> {
    let text = DRY_RUN.call(session, function, request, timeout).await?;
    let answer: Value = serde_json::from_str(&text).map_err(DryRunError::Malformed)?;
    match answer.get("protocol").and_then(Value::as_u64) {
        Some(PROTOCOL) => Ok(answer),
        found => Err(DryRunError::Protocol {
            found: found.unwrap_or(0),
        }),
    }
}
