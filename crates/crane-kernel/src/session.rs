//! Kernel sessions. [`OwnedKernel`] is a kernel crane started: it can be shut down or killed,
//! and dropping it kills it. [`AttachedKernel`] is someone else's running kernel: crane only
//! talks to it, and the type has no way to stop it. [`KernelSession`] holds either.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jupyter_protocol::{ConnectionInfo, Transport};

use crate::channels::{
    Channels, CustomOutcome, CustomRequest, DeathWatch, InterruptVia, KernelInfo,
};
use crate::connection_file::{
    find_connection_file, jupyter_runtime_dir, read_connection_file, write_connection_file,
    OwnedConnectionFile,
};
use crate::error::{DeathCause, KernelError};
use crate::execute::{ExecuteOptions, Execution};
use crate::handshake::Handshake;
use crate::heartbeat::HeartbeatMonitor;
use crate::process::KernelProcess;
use crate::resolve::{InterruptMode, KernelChoice, KernelLaunch};

/// How long a kernel may take to exit after `shutdown_request` before it is killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Starts tried when the kernel found one of its ports taken.
const PORT_RACE_ATTEMPTS: u32 = 3;

/// How long iopub is read, after an execute was cancelled, to learn whether crane's request
/// is running in someone else's kernel.
const OWN_REQUEST_SETTLE: Duration = Duration::from_millis(300);

/// Pause between attempts to reach a starting kernel.
const BIND_POLL: Duration = Duration::from_millis(20);

/// How a kernel is started.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// Working directory of the kernel (the notebook's directory, usually).
    pub working_dir: Option<PathBuf>,
    /// Environment added to the kernel's (after the kernelspec's own).
    pub env: Vec<(OsString, OsString)>,
    /// How long the kernel may take to answer `kernel_info_request`.
    pub start_timeout: Duration,
    /// The HMAC key of the kernel's connection file (default: a fresh random one). A proxy
    /// that relays signed messages unchanged gives the key its own clients use.
    pub key: Option<String>,
}

impl Default for StartOptions {
    fn default() -> Self {
        StartOptions {
            working_dir: None,
            env: Vec::new(),
            start_timeout: Duration::from_secs(60),
            key: None,
        }
    }
}

/// How to attach to a running kernel.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// How long the kernel may take to answer `kernel_info_request`.
    pub timeout: Duration,
    /// Where bare `--existing` names are looked up.
    pub runtime_dir: PathBuf,
}

impl Default for AttachOptions {
    fn default() -> Self {
        AttachOptions {
            timeout: Duration::from_secs(10),
            runtime_dir: jupyter_runtime_dir(),
        }
    }
}

/// A kernel process crane started and owns.
pub struct OwnedKernel {
    // Field order is drop order: sockets close before the process is killed, and the
    // connection file goes last.
    channels: Channels,
    process: KernelProcess,
    connection: OwnedConnectionFile,
    launch: KernelLaunch,
    info: KernelInfo,
}

impl OwnedKernel {
    /// Start a kernel and wait until it answers `kernel_info_request`.
    pub async fn start(
        launch: &KernelLaunch,
        options: &StartOptions,
    ) -> Result<OwnedKernel, KernelError> {
        // The ports are free when crane picks them, but another process can take one in the
        // moment between releasing it and the kernel binding it: start again on fresh ports.
        // ipykernel then exits, or (its other threads already started) hangs until the start
        // timeout with the bind error on stderr.
        let mut attempts = 0;
        loop {
            attempts += 1;
            match Self::start_once(launch, options).await {
                Err(
                    KernelError::StartExited { stderr_tail, .. }
                    | KernelError::StartTimeout { stderr_tail, .. },
                ) if attempts < PORT_RACE_ATTEMPTS
                    && stderr_tail.contains("Address already in use") => {}
                outcome => return outcome,
            }
        }
    }

    async fn start_once(
        launch: &KernelLaunch,
        options: &StartOptions,
    ) -> Result<OwnedKernel, KernelError> {
        let kernel_name = match &launch.choice {
            KernelChoice::Kernelspec { name, .. } => Some(name.clone()),
            KernelChoice::Python(_) => None,
        };
        let (connection, reserved_ports) =
            write_connection_file(kernel_name, options.key.as_deref()).await?;
        let spawned = KernelProcess::spawn(
            launch,
            &connection.path,
            options.working_dir.as_deref(),
            &options.env,
        );
        // The kernel binds these ports as its first act; hold them until it exists.
        drop(reserved_ports);
        let mut process = spawned?;

        let outcome = tokio::select! {
            ready = connect_when_ready(&connection.info) => ready,
            status = process.wait_exit() => Err(KernelError::StartExited {
                status,
                hint: start_failure_hint(launch, &process.stderr_tail()),
                stderr_tail: process.stderr_tail(),
            }),
            _ = tokio::time::sleep(options.start_timeout) => Err(KernelError::StartTimeout {
                after: options.start_timeout,
                stderr_tail: process.stderr_tail(),
            }),
        };
        match outcome {
            Ok((channels, info)) => Ok(OwnedKernel {
                channels,
                process,
                connection,
                launch: launch.clone(),
                info,
            }),
            Err(error) => {
                process.kill().await;
                Err(error)
            }
        }
    }

    /// Run code; see [`ExecuteOptions`]. A timeout interrupts the kernel and still returns
    /// `Ok` (with [`crate::ExecutionOutcome::TimedOut`]); the kernel's death is
    /// [`KernelError::KernelDied`].
    pub async fn execute(
        &mut self,
        code: &str,
        options: &ExecuteOptions,
    ) -> Result<Execution, KernelError> {
        self.ensure_alive()?;
        self.process.memory().mark();
        let via = self.interrupt_via();
        let mut watch = ProcessWatch(&mut self.process);
        self.channels.execute(code, options, via, &mut watch).await
    }

    /// Send a request only a handler crane installed answers; see [`CustomRequest`]. A
    /// timeout interrupts it, as for [`OwnedKernel::execute`].
    pub async fn request(&mut self, request: &CustomRequest) -> Result<CustomOutcome, KernelError> {
        self.ensure_alive()?;
        let via = self.interrupt_via();
        let mut watch = ProcessWatch(&mut self.process);
        self.channels.request(request, via, &mut watch).await
    }

    /// Interrupt the running code (SIGINT to the kernel's process group, or
    /// `interrupt_request` when the kernelspec asks for message interrupts).
    pub async fn interrupt(&mut self) -> Result<(), KernelError> {
        self.ensure_alive()?;
        let via = self.interrupt_via();
        self.channels.interrupt(via).await
    }

    /// Ask the kernel to shut down, wait for it, kill it if it does not exit, and remove
    /// the connection file.
    pub async fn shutdown(mut self) -> Result<(), KernelError> {
        if self.process.try_exit_status().is_none() {
            // A kernel that does not answer is killed below all the same.
            let _ = self.channels.request_shutdown().await;
        }
        self.process.wait_or_kill(SHUTDOWN_GRACE).await;
        Ok(())
    }

    /// Kill the kernel's process group at once and remove the connection file.
    pub async fn kill(mut self) {
        self.process.kill().await;
    }

    /// What the kernel said about itself at start.
    pub fn kernel_info(&self) -> &KernelInfo {
        &self.info
    }

    /// Wait until the kernel process exits, however it ends; cancel-safe.
    pub async fn wait_exit(&mut self) -> std::process::ExitStatus {
        self.process.wait_exit().await
    }

    /// The last lines the kernel wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        self.process.stderr_tail()
    }

    /// The watch of the kernel's memory, to mark as a cell the caller relays starts.
    pub fn memory_watch(&mut self) -> &mut crate::MemoryWatch {
        self.process.memory()
    }

    /// The kernel's death, once it exited with `status` ([`OwnedKernel::wait_exit`]).
    pub fn death(&self, status: std::process::ExitStatus) -> crate::Death {
        self.process.death(status)
    }

    /// How the kernel was launched.
    pub fn launch(&self) -> &KernelLaunch {
        &self.launch
    }

    /// Pid of the kernel process (also its process group id).
    pub fn pid(&self) -> u32 {
        self.process.pid().unsigned_abs()
    }

    /// The connection file (in a private temporary directory removed with the session);
    /// other Jupyter clients can attach to the kernel with it meanwhile.
    pub fn connection_file(&self) -> &Path {
        &self.connection.path
    }

    fn interrupt_via(&self) -> InterruptVia {
        match self.launch.interrupt_mode {
            InterruptMode::Signal => InterruptVia::Signal(self.process.pid()),
            InterruptMode::Message => InterruptVia::Message,
        }
    }

    fn ensure_alive(&mut self) -> Result<(), KernelError> {
        match self.process.try_exit_status() {
            Some(status) => Err(KernelError::KernelDied {
                cause: DeathCause::Exited(self.process.death(status)),
                stderr_tail: self.process.stderr_tail(),
            }),
            None => Ok(()),
        }
    }
}

struct ProcessWatch<'a>(&'a mut KernelProcess);

impl DeathWatch for ProcessWatch<'_> {
    async fn died(&mut self) -> DeathCause {
        let status = self.0.wait_exit().await;
        DeathCause::Exited(self.0.death(status))
    }

    fn stderr_tail(&self) -> String {
        self.0.stderr_tail()
    }
}

/// A running kernel crane did not start. Crane interrupts it only while crane's own request is
/// the one running there (on an execute timeout, an explicit [`AttachedKernel::interrupt`],
/// or [`AttachedKernel::detach`] after a cancelled execute), never asks for `kernel_info`, and
/// never restarts, shuts down or kills it: dropping this only closes crane's sockets.
pub struct AttachedKernel {
    channels: Channels,
    heartbeat: HeartbeatMonitor,
    path: PathBuf,
}

impl AttachedKernel {
    /// Attach by an `--existing` value: a connection file path, or a name in
    /// `options.runtime_dir`.
    pub async fn attach(
        existing: &str,
        options: &AttachOptions,
    ) -> Result<AttachedKernel, KernelError> {
        let path = find_connection_file(existing, &options.runtime_dir)?;
        Self::attach_file(&path, options).await
    }

    /// Attach with the connection file at `path`.
    pub async fn attach_file(
        path: &Path,
        options: &AttachOptions,
    ) -> Result<AttachedKernel, KernelError> {
        let connection = read_connection_file(path)?;
        if let Some(address) = refused_address(&connection).await {
            return Err(KernelError::NotListening {
                path: path.to_path_buf(),
                address,
            });
        }
        let ready = async {
            let mut channels = Channels::connect(&connection).await?;
            channels.handshake(Handshake::CommInfo).await?;
            Ok::<_, KernelError>(channels)
        };
        let channels = match tokio::time::timeout(options.timeout, ready).await {
            Ok(ready) => ready?,
            Err(_) => {
                return Err(KernelError::AttachTimeout {
                    path: path.to_path_buf(),
                    after: options.timeout,
                })
            }
        };
        Ok(AttachedKernel {
            channels,
            heartbeat: HeartbeatMonitor::spawn(connection),
            path: path.to_path_buf(),
        })
    }

    /// Run code; see [`OwnedKernel::execute`]. Death is detected by heartbeat.
    pub async fn execute(
        &mut self,
        code: &str,
        options: &ExecuteOptions,
    ) -> Result<Execution, KernelError> {
        self.ensure_alive()?;
        let mut watch = HeartbeatWatch(&mut self.heartbeat);
        self.channels
            .execute(
                code,
                options,
                InterruptVia::MessageWhileOwnRequestRuns,
                &mut watch,
            )
            .await
    }

    /// Send a request only a handler crane installed answers; see [`AttachedKernel::execute`]
    /// for timeouts.
    pub async fn request(&mut self, request: &CustomRequest) -> Result<CustomOutcome, KernelError> {
        self.ensure_alive()?;
        let mut watch = HeartbeatWatch(&mut self.heartbeat);
        self.channels
            .request(
                request,
                InterruptVia::MessageWhileOwnRequestRuns,
                &mut watch,
            )
            .await
    }

    /// Interrupt crane's own request if it is the one running (with `interrupt_request`: crane
    /// does not know the process of a kernel it did not start); the user's cells are never
    /// interrupted. True when it interrupted.
    pub async fn interrupt(&mut self) -> Result<bool, KernelError> {
        self.ensure_alive()?;
        Ok(self.channels.stop_own_request(OWN_REQUEST_SETTLE).await)
    }

    /// Disconnect, first stopping crane's own request if it is still running (its execute
    /// was cancelled, e.g. by Ctrl-C). The kernel itself keeps running.
    pub async fn detach(mut self) {
        if self.ensure_alive().is_ok() {
            self.channels.stop_own_request(OWN_REQUEST_SETTLE).await;
        }
    }

    /// The connection file crane attached through.
    pub fn connection_file(&self) -> &Path {
        &self.path
    }

    fn ensure_alive(&self) -> Result<(), KernelError> {
        match self.heartbeat.silence() {
            Some(silence) => Err(KernelError::KernelDied {
                cause: DeathCause::HeartbeatLost(silence),
                stderr_tail: String::new(),
            }),
            None => Ok(()),
        }
    }
}

struct HeartbeatWatch<'a>(&'a mut HeartbeatMonitor);

impl DeathWatch for HeartbeatWatch<'_> {
    async fn died(&mut self) -> DeathCause {
        DeathCause::HeartbeatLost(self.0.died().await)
    }

    fn stderr_tail(&self) -> String {
        String::new()
    }
}

/// Either kind of session, for callers that treat them alike.
// One or two sessions live per run, so their size is irrelevant; boxing would only add noise.
#[allow(clippy::large_enum_variant)]
pub enum KernelSession {
    Owned(OwnedKernel),
    Attached(AttachedKernel),
}

impl KernelSession {
    /// Run code; see [`OwnedKernel::execute`].
    pub async fn execute(
        &mut self,
        code: &str,
        options: &ExecuteOptions,
    ) -> Result<Execution, KernelError> {
        match self {
            KernelSession::Owned(kernel) => kernel.execute(code, options).await,
            KernelSession::Attached(kernel) => kernel.execute(code, options).await,
        }
    }

    /// Send a request only a handler crane installed answers; see [`CustomRequest`]. When the
    /// kernel turns out to have no handler for it, the type is no longer counted as handled.
    pub async fn request(&mut self, request: &CustomRequest) -> Result<CustomOutcome, KernelError> {
        let outcome = match self {
            KernelSession::Owned(kernel) => kernel.request(request).await,
            KernelSession::Attached(kernel) => kernel.request(request).await,
        };
        if matches!(outcome, Ok(CustomOutcome::Unhandled)) {
            let channels = self.channels_mut();
            channels.handled.remove(&request.msg_type);
            channels.unhandled.insert(request.msg_type.clone());
        }
        outcome
    }

    /// Whether a handler crane installed in this kernel answers requests of `msg_type`, as
    /// far as this session knows (see [`KernelSession::note_handled`]).
    pub fn handles(&self, msg_type: &str) -> bool {
        self.channels().handled.contains(msg_type)
    }

    /// Whether this session has yet to see the kernel leave a request of `msg_type`
    /// unanswered (since its handler was last noted installed): worth asking first, for a
    /// kernel another session prepared may answer it.
    pub fn may_handle(&self, msg_type: &str) -> bool {
        !self.channels().unhandled.contains(msg_type)
    }

    /// Remember that this kernel answers requests of `msg_type` (its handler was installed).
    pub fn note_handled(&mut self, msg_type: &str) {
        let channels = self.channels_mut();
        channels.unhandled.remove(msg_type);
        channels.handled.insert(msg_type.to_owned());
    }

    fn channels(&self) -> &Channels {
        match self {
            KernelSession::Owned(kernel) => &kernel.channels,
            KernelSession::Attached(kernel) => &kernel.channels,
        }
    }

    fn channels_mut(&mut self) -> &mut Channels {
        match self {
            KernelSession::Owned(kernel) => &mut kernel.channels,
            KernelSession::Attached(kernel) => &mut kernel.channels,
        }
    }

    /// Interrupt the running code of an owned kernel, or crane's own running request in an
    /// attached one; see [`OwnedKernel::interrupt`], [`AttachedKernel::interrupt`].
    pub async fn interrupt(&mut self) -> Result<(), KernelError> {
        match self {
            KernelSession::Owned(kernel) => kernel.interrupt().await,
            KernelSession::Attached(kernel) => kernel.interrupt().await.map(drop),
        }
    }

    /// What the kernel said about itself: known for kernels crane started (an attached kernel
    /// is not asked, since asking changes its random state).
    pub fn kernel_info(&self) -> Option<&KernelInfo> {
        match self {
            KernelSession::Owned(kernel) => Some(kernel.kernel_info()),
            KernelSession::Attached(_) => None,
        }
    }

    /// The kernel's connection file.
    pub fn connection_file(&self) -> &Path {
        match self {
            KernelSession::Owned(kernel) => kernel.connection_file(),
            KernelSession::Attached(kernel) => kernel.connection_file(),
        }
    }

    /// End the session: shut down an owned kernel; just disconnect from an attached one.
    pub async fn close(self) -> Result<(), KernelError> {
        match self {
            KernelSession::Owned(kernel) => kernel.shutdown().await,
            KernelSession::Attached(kernel) => {
                kernel.detach().await;
                Ok(())
            }
        }
    }
}

impl From<OwnedKernel> for KernelSession {
    fn from(kernel: OwnedKernel) -> Self {
        KernelSession::Owned(kernel)
    }
}

impl From<AttachedKernel> for KernelSession {
    fn from(kernel: AttachedKernel) -> Self {
        KernelSession::Attached(kernel)
    }
}

/// Connect and handshake, starting over when a connection breaks: right after spawn, a
/// port can briefly accept and then reset connections before the kernel owns it.
async fn connect_when_ready(info: &ConnectionInfo) -> Result<(Channels, KernelInfo), KernelError> {
    loop {
        wait_until_bound(info).await;
        let attempt = async {
            let mut channels = Channels::connect(info).await?;
            let kernel_info = channels
                .handshake(Handshake::KernelInfo)
                .await?
                .unwrap_or_default();
            Ok::<_, KernelError>((channels, kernel_info))
        };
        match attempt.await {
            Err(KernelError::Channel { .. }) => tokio::time::sleep(BIND_POLL).await,
            ready => return ready,
        }
    }
}

/// Poll the heartbeat port (ipykernel binds it after the others) until the kernel listens,
/// so the ZeroMQ connects that follow succeed at once instead of backing off.
async fn wait_until_bound(info: &ConnectionInfo) {
    if info.transport != Transport::TCP {
        return;
    }
    let address = format!("{}:{}", info.ip, info.hb_port);
    loop {
        if let Ok(stream) = tokio::net::TcpStream::connect(&address).await {
            if stream.peer_addr().is_ok() {
                return;
            }
        }
        tokio::time::sleep(BIND_POLL).await;
    }
}

/// The shell address of an existing kernel when nothing listens there.
async fn refused_address(info: &ConnectionInfo) -> Option<String> {
    if info.transport != Transport::TCP {
        return None;
    }
    let address = format!("{}:{}", info.ip, info.shell_port);
    let probe = tokio::time::timeout(
        Duration::from_secs(2),
        tokio::net::TcpStream::connect(&address),
    )
    .await;
    match probe {
        Ok(Err(error)) if error.kind() == std::io::ErrorKind::ConnectionRefused => Some(address),
        _ => None,
    }
}

/// The one command that fixes a well-known start failure.
fn start_failure_hint(launch: &KernelLaunch, stderr: &str) -> Option<String> {
    let missing_ipykernel = stderr.contains("No module named ipykernel")
        || stderr.contains("No module named 'ipykernel");
    missing_ipykernel.then(|| format!("{} -m pip install ipykernel", launch.argv[0]))
}
