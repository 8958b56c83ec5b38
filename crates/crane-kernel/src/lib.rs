//! crane's kernel layer: real Jupyter kernel sessions over the Jupyter messaging protocol
//! (ZeroMQ, HMAC-signed, protocol 5.x).
//!
//! - [`resolve_kernel`] picks what to start from the CLI inputs ([`KernelInputs`]).
//! - [`OwnedKernel::start`] starts it; [`AttachedKernel::attach`] connects to a kernel
//!   somebody else started (`--existing`). Only an owned kernel can be shut down or killed,
//!   and dropping one kills its whole process group.
//! - `execute` runs code with [`ExecuteOptions`] (silent or counted, user expressions,
//!   timeout) and returns an [`Execution`]: bounded outputs plus the `execute_reply`, or a
//!   timed-out outcome after interrupting the kernel. A kernel that dies mid-way gives
//!   [`KernelError::KernelDied`].
//! - [`handshake()`] meets a kernel: a harmless request repeated until the kernel answers and
//!   iopub delivers ([`Handshake::CommInfo`] where the kernel's random state is the user's).
//!   crane's sessions and crane-proxy's relay meet every kernel this way.
//! - `request` sends a message of a type only a handler crane installed in the kernel answers
//!   ([`CustomRequest`]), and returns its reply without waiting for the kernel's idle.

mod channels;
mod connection_file;
mod death;
mod error;
mod execute;
mod handshake;
mod heartbeat;
mod process;
mod resolve;
mod session;
mod traceback;

pub use channels::{CustomOutcome, CustomRequest, KernelInfo};
pub use connection_file::{find_connection_file, jupyter_runtime_dir, read_connection_file};
pub use death::{Death, MemoryLimit, MemoryWatch, OomKill};
pub use error::{ConnectionFileError, DeathCause, KernelError, ResolveError};
pub use execute::{
    Dropped, ErrorInfo, ExecuteOptions, ExecuteReply, Execution, ExecutionOutcome, MimeBundle,
    Output, OutputLimits, ReplyStatus, StreamName, UserExpression,
};
pub use handshake::{handshake, Handshake, Met};
pub use jupyter_protocol::ConnectionInfo;
pub use resolve::{
    jupyter_data_dirs, list_kernelspecs, resolve_kernel, ActiveEnv, EnvKind, InterruptMode,
    KernelChoice, KernelInputs, KernelLaunch, KernelOrigin,
};
pub use session::{AttachOptions, AttachedKernel, KernelSession, OwnedKernel, StartOptions};
