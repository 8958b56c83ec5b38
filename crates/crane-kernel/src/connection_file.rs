//! Jupyter connection files: finding an existing kernel's file (`--existing`), reading it, and
//! writing a fresh one (free loopback ports, random HMAC key) for a kernel crane starts.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use jupyter_protocol::{ConnectionInfo, Transport};

use crate::error::{ConnectionFileError, KernelError};

/// The Jupyter runtime directory: `$JUPYTER_RUNTIME_DIR`, else `<user data dir>/runtime`
/// (`~/.local/share/jupyter/runtime`).
pub fn jupyter_runtime_dir() -> PathBuf {
    std::env::var_os("JUPYTER_RUNTIME_DIR")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::resolve::jupyter_user_data_dir().map(|dir| dir.join("runtime")))
        .unwrap_or_else(|| std::env::temp_dir().join("jupyter").join("runtime"))
}

/// Resolve an `--existing` value: a path to a connection file, or a file name (such as
/// `kernel-1234.json`, or just `1234`) in `runtime_dir`.
pub fn find_connection_file(
    existing: &str,
    runtime_dir: &Path,
) -> Result<PathBuf, ConnectionFileError> {
    let as_path = Path::new(existing);
    if as_path.exists() {
        return Ok(as_path.to_path_buf());
    }
    let is_bare_name = as_path.components().count() == 1 && !existing.is_empty();
    if is_bare_name {
        let candidates = [
            existing.to_string(),
            format!("{existing}.json"),
            format!("kernel-{existing}.json"),
        ];
        if let Some(found) = candidates
            .iter()
            .map(|name| runtime_dir.join(name))
            .find(|path| path.is_file())
        {
            return Ok(found);
        }
    }
    Err(ConnectionFileError::NotFound {
        existing: existing.to_string(),
        runtime_dir: runtime_dir.to_path_buf(),
    })
}

/// Read and check a connection file.
pub fn read_connection_file(path: &Path) -> Result<ConnectionInfo, ConnectionFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConnectionFileError::Unreadable {
        path: path.to_path_buf(),
        source,
    })?;
    let info: ConnectionInfo =
        serde_json::from_str(&text).map_err(|source| ConnectionFileError::Malformed {
            path: path.to_path_buf(),
            source,
        })?;
    if !info.key.is_empty() && info.signature_scheme != "hmac-sha256" {
        return Err(ConnectionFileError::Unsupported {
            path: path.to_path_buf(),
            reason: format!(
                "signature scheme `{}` (only hmac-sha256 is supported)",
                info.signature_scheme
            ),
        });
    }
    Ok(info)
}

/// A connection file written for a kernel crane starts; the directory (private to this
/// user) and the file are removed when this is dropped.
pub(crate) struct OwnedConnectionFile {
    pub(crate) info: ConnectionInfo,
    pub(crate) path: PathBuf,
    _dir: tempfile::TempDir,
}

/// Listeners that hold the chosen ports until the kernel process exists, so no other
/// process can take them in between; drop right after spawning.
pub(crate) type PortReservation = Vec<tokio::net::TcpListener>;

/// Choose five free loopback ports and a key (`key`, else a random one), and write them to a
/// fresh file.
pub(crate) async fn write_connection_file(
    kernel_name: Option<String>,
    key: Option<&str>,
) -> Result<(OwnedConnectionFile, PortReservation), KernelError> {
    let ip = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let (ports, listeners) = jupyter_zmq_client::peek_ports_with_listeners(ip, 5)
        .await
        .map_err(|source| KernelError::Io {
            context: "cannot reserve local ports for the kernel".into(),
            source: std::io::Error::other(source),
        })?;
    let info = ConnectionInfo {
        transport: Transport::TCP,
        ip: ip.to_string(),
        shell_port: ports[0],
        iopub_port: ports[1],
        stdin_port: ports[2],
        control_port: ports[3],
        hb_port: ports[4],
        signature_scheme: "hmac-sha256".into(),
        key: key
            .map(str::to_owned)
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()),
        kernel_name,
    };
    let dir = tempfile::Builder::new()
        .prefix("crane-kernel-")
        .tempdir()
        .map_err(|source| KernelError::Io {
            context: "cannot create a directory for the connection file".into(),
            source,
        })?;
    let path = dir
        .path()
        .join(format!("kernel-{}.json", uuid::Uuid::new_v4()));
    let json = serde_json::to_string_pretty(&info).map_err(|e| KernelError::Io {
        context: "cannot encode the connection file".into(),
        source: std::io::Error::other(e),
    })?;
    crane_fs::write_private(&path, json.as_bytes()).map_err(|source| KernelError::Io {
        context: format!("cannot write connection file {}", path.display()),
        source,
    })?;
    Ok((
        OwnedConnectionFile {
            info,
            path,
            _dir: dir,
        },
        listeners,
    ))
}
