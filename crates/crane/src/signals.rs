//! The signals that ask crane to stop (SIGINT from Ctrl-C, SIGTERM, SIGHUP), seen as one
//! event: a command that owns a kernel finishes what it can (writes what ran, shuts its kernels
//! down through the session's normal close path) and exits with 128 + the signal's number.

use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::watch;

/// Which signal asked crane to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    Interrupt,
    Terminate,
    Hangup,
}

impl StopSignal {
    /// The shell's exit code for a process ended by this signal.
    pub fn exit_code(self) -> u8 {
        128 + match self {
            StopSignal::Hangup => 1,
            StopSignal::Interrupt => 2,
            StopSignal::Terminate => 15,
        }
    }

    /// How messages name it.
    pub fn describe(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "interrupted (Ctrl-C)",
            StopSignal::Terminate => "terminated (SIGTERM)",
            StopSignal::Hangup => "hung up (SIGHUP)",
        }
    }
}

/// Whether this process started with SIGHUP ignored (`SigIgn` in `/proc/self/status`, a hex
/// mask whose bit 0 is SIGHUP).
fn hangup_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let mask = status
                .lines()
                .find_map(|line| line.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .is_some_and(|mask| mask & 1 == 1)
}

/// A handle on the first stop signal; clones see the same signal.
#[derive(Debug, Clone)]
pub struct Stop(watch::Receiver<Option<StopSignal>>);

impl Stop {
    /// Starts listening; from now on these signals no longer end the process by themselves.
    /// Must be called inside the Tokio runtime.
    pub fn listen() -> std::io::Result<Self> {
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        // Under `nohup` SIGHUP is ignored, and must stay so.
        let mut hangup = if hangup_ignored() {
            None
        } else {
            Some(signal(SignalKind::hangup())?)
        };
        let (sender, receiver) = watch::channel(None);
        tokio::spawn(async move {
            let hung_up = async {
                match &mut hangup {
                    Some(hangup) => hangup.recv().await,
                    None => std::future::pending().await,
                }
            };
            let received = tokio::select! {
                _ = interrupt.recv() => StopSignal::Interrupt,
                _ = terminate.recv() => StopSignal::Terminate,
                _ = hung_up => StopSignal::Hangup,
            };
            let _ = sender.send(Some(received));
            // Keep the handlers installed: a second signal must not kill crane half-way
            // through writing its results.
            let _installed = (interrupt, terminate, hangup);
            std::future::pending::<()>().await;
        });
        Ok(Stop(receiver))
    }

    /// Resolves when a stop signal has arrived (at once if one already has).
    pub async fn signalled(&mut self) -> StopSignal {
        match self.0.wait_for(Option::is_some).await {
            Ok(signal) => signal.unwrap_or(StopSignal::Interrupt),
            // The listener is gone only when the runtime shuts down.
            Err(_) => std::future::pending().await,
        }
    }

    /// The signal that arrived, if any.
    pub fn received(&self) -> Option<StopSignal> {
        *self.0.borrow()
    }
}
