//! Heartbeat monitor for attached kernels, whose process crane cannot watch: a background
//! task pings the kernel's heartbeat socket and declares it dead after a stretch of silence.

use std::time::{Duration, Instant};

use jupyter_protocol::ConnectionInfo;
use jupyter_zmq_client::ClientHeartbeatConnection;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Time between pings.
const PING_INTERVAL: Duration = Duration::from_millis(500);
/// How long one ping (or reconnect) may take before it counts as missed.
const PING_TIMEOUT: Duration = Duration::from_secs(1);
/// Silence after which the kernel is considered dead.
const DEAD_AFTER: Duration = Duration::from_secs(5);

pub(crate) struct HeartbeatMonitor {
    task: JoinHandle<()>,
    dead: watch::Receiver<Option<Duration>>,
}

impl HeartbeatMonitor {
    pub(crate) fn spawn(info: ConnectionInfo) -> HeartbeatMonitor {
        let (report, dead) = watch::channel(None);
        let task = tokio::spawn(async move {
            let mut socket: Option<ClientHeartbeatConnection> = None;
            let mut last_answer = Instant::now();
            loop {
                if ping(&info, &mut socket).await {
                    last_answer = Instant::now();
                } else {
                    // A REQ socket that missed its reply cannot send again: start afresh.
                    socket = None;
                    let silence = last_answer.elapsed();
                    if silence >= DEAD_AFTER {
                        let _ = report.send(Some(silence));
                        return;
                    }
                }
                tokio::time::sleep(PING_INTERVAL).await;
            }
        });
        HeartbeatMonitor { task, dead }
    }

    /// How long the kernel has been silent, once it is considered dead.
    pub(crate) fn silence(&self) -> Option<Duration> {
        *self.dead.borrow()
    }

    /// Resolves when the kernel is considered dead; cancel-safe.
    pub(crate) async fn died(&mut self) -> Duration {
        let verdict = self
            .dead
            .wait_for(Option::is_some)
            .await
            .map(|silence| silence.unwrap_or(DEAD_AFTER));
        match verdict {
            Ok(silence) => silence,
            // The task ended without a verdict (it never does): treat as alive forever.
            Err(_) => std::future::pending().await,
        }
    }
}

impl Drop for HeartbeatMonitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn ping(info: &ConnectionInfo, socket: &mut Option<ClientHeartbeatConnection>) -> bool {
    let attempt = async {
        if socket.is_none() {
            *socket = Some(jupyter_zmq_client::create_client_heartbeat_connection(info).await?);
        }
        match socket.as_mut() {
            Some(connection) => connection.single_heartbeat().await,
            None => Ok(()),
        }
    };
    matches!(
        tokio::time::timeout(PING_TIMEOUT, attempt).await,
        Ok(Ok(()))
    )
}
