//! Why a kernel process died, in words a user can act on.
//!
//! `wait` gives a dead kernel's exit code or signal number and nothing else; the cause is gone
//! with the process. This module owns turning that into an explanation: the signal's usual
//! reason (a segfault in native code, an `abort()`, `os._exit`), and for a SIGKILL whether the
//! out-of-memory killer sent it. That is read from the kernel's outside, never from the kernel:
//! the OOM kill counters of the kernel's memory cgroup (v1 `memory.oom_control`, v2
//! `memory.events.local` or `memory.events`), or the machine's (`/proc/vmstat`) where the
//! cgroup's cannot be read, taken when a cell starts ([`MemoryWatch::mark`]) and again at the
//! death; the kernel's peak resident memory, sampled while it lived
//! ([`MemoryWatch::sample`], a read of `/proc/PID/status`); and the limit that applied: the
//! machine's memory or the smallest memory cgroup limit above the kernel, whichever is lower.
//!
//! Both `crane run`/`crane check` (through [`crate::KernelError::KernelDied`]) and the crane
//! kernel word a death with [`Death`]'s `Display`, so a death reads the same everywhere.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A kernel's death, with what crane could learn about its cause.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Death {
    pub status: ExitStatus,
    /// Set when the out-of-memory killer ended the kernel.
    pub oom: Option<OomKill>,
}

/// An out-of-memory kill: how much the kernel held, against what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OomKill {
    /// The kernel's peak resident memory when last sampled (it may have grown since).
    pub peak_bytes: Option<u64>,
    pub limit: Option<MemoryLimit>,
}

/// The memory limit that applied to a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryLimit {
    pub bytes: u64,
    /// `None`: the machine's memory (`MemTotal`); else the cgroup directory whose limit it is.
    pub cgroup: Option<PathBuf>,
}

impl Death {
    /// A death whose cause nothing but its status tells (no watch, or none could be read).
    pub fn from_status(status: ExitStatus) -> Death {
        Death { status, oom: None }
    }

    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// The signal's name and what usually sends it, or the exit code's meaning.
    fn cause(&self) -> String {
        if let Some(oom) = &self.oom {
            let held = match oom.peak_bytes {
                Some(bytes) => format!("the kernel held at least {}", gigabytes(bytes)),
                None => "the kernel's memory could not be read".to_owned(),
            };
            let limit = match &oom.limit {
                Some(MemoryLimit {
                    bytes,
                    cgroup: Some(dir),
                }) => format!(
                    ", against the {} limit of its memory cgroup ({})",
                    gigabytes(*bytes),
                    dir.display()
                ),
                Some(MemoryLimit {
                    bytes,
                    cgroup: None,
                }) => format!(", against the machine's {}", gigabytes(*bytes)),
                None => String::new(),
            };
            return format!(
                "killed by the out-of-memory killer (SIGKILL): memory ran out; {held}{limit}"
            );
        }
        match self.status.signal() {
            Some(signal) => {
                let (name, usual) = signal_cause(signal);
                format!("killed by {name} (signal {signal}): {usual}")
            }
            None => match self.status.code() {
                Some(0) => "exited with code 0 without being asked to: a call of `os._exit(0)` or `sys.exit()` outside a cell's error handling, or a library ending the process".to_owned(),
                Some(code) => format!(
                    "exited with code {code} without being asked to: a call of `os._exit({code})`, or a library ending the process"
                ),
                None => format!("ended ({})", self.status),
            },
        }
    }
}

impl std::fmt::Display for Death {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the kernel process was {}", self.cause())
    }
}

/// A signal's name and the usual reason a notebook's kernel gets it.
fn signal_cause(signal: i32) -> (&'static str, &'static str) {
    match signal {
        4 => ("SIGILL", "an illegal instruction: native code built for another processor, or a corrupted library"),
        6 => ("SIGABRT", "an abort: native code (C or C++) stopped the process on a failed assertion or an error it could not recover from"),
        7 => ("SIGBUS", "a bus error: native code touched memory that cannot be backed, often a memory-mapped file that shrank or a full /dev/shm"),
        8 => ("SIGFPE", "an arithmetic fault in native code, such as an integer division by zero"),
        9 => ("SIGKILL", "killed outright by another process (`kill -9`, `os.kill(pid, 9)`) or by the system; the out-of-memory killer was not seen to act"),
        11 => ("SIGSEGV", "a segmentation fault: native code (a C extension, `ctypes`, a library's bug) read or wrote memory it does not own"),
        13 => ("SIGPIPE", "it wrote to a pipe or socket nobody reads any more"),
        15 => ("SIGTERM", "another process asked it to stop"),
        24 => ("SIGXCPU", "it used up its CPU time limit"),
        25 => ("SIGXFSZ", "it wrote a file past its size limit"),
        _ => ("a signal", "sent by another process or by the system"),
    }
}

/// Bytes as gigabytes with one decimal, or megabytes below one gigabyte.
fn gigabytes(bytes: u64) -> String {
    const GB: f64 = (1u64 << 30) as f64;
    const MB: f64 = (1u64 << 20) as f64;
    let bytes = bytes as f64;
    if bytes >= GB {
        format!("{:.1} GB", bytes / GB)
    } else {
        format!("{:.0} MB", bytes / MB)
    }
}

/// Watches one kernel process's memory from outside, to explain its death.
#[derive(Debug, Clone)]
pub struct MemoryWatch {
    pid: u32,
    cgroup: Option<Cgroup>,
    /// The OOM kill counters when the watch was made or last marked.
    counts_at_mark: OomCounts,
    /// The highest peak resident size sampled, in bytes (0: none yet).
    peak: Arc<AtomicU64>,
}

impl MemoryWatch {
    /// A watch of the running process `pid`: finds its memory cgroup now, while it lives.
    pub fn new(pid: u32) -> MemoryWatch {
        let mut watch = MemoryWatch {
            pid,
            counts_at_mark: OomCounts::default(),
            cgroup: None,
            peak: Arc::new(AtomicU64::new(0)),
        };
        watch.mark();
        watch.sample();
        watch
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Find the process's memory cgroup again (it may have been moved) and take the OOM kill
    /// counters as they are now: a kill counted later is the kernel's. Called as a cell
    /// starts, so that an earlier kill elsewhere is not blamed on it.
    pub fn mark(&mut self) {
        self.cgroup = Cgroup::of(self.pid);
        self.counts_at_mark = self.counts();
    }

    /// Read the process's peak resident size (`VmHWM`) and keep the highest seen. Cheap (one
    /// small `/proc` read); a process that is gone leaves the last value.
    pub fn sample(&self) {
        if let Some(bytes) = peak_resident(self.pid) {
            self.peak.fetch_max(bytes, Ordering::Relaxed);
        }
    }

    /// The highest peak resident size sampled, if any.
    pub fn peak_bytes(&self) -> Option<u64> {
        Some(self.peak.load(Ordering::Relaxed)).filter(|bytes| *bytes > 0)
    }

    /// The limit that applies to the process: the lower of the machine's memory and its
    /// cgroup's limit (and those above it).
    pub fn limit(&self) -> Option<MemoryLimit> {
        let machine = machine_memory().map(|bytes| MemoryLimit {
            bytes,
            cgroup: None,
        });
        let cgroup = self.cgroup.as_ref().and_then(Cgroup::limit);
        match (machine, cgroup) {
            (Some(machine), Some(cgroup)) if cgroup.bytes < machine.bytes => Some(cgroup),
            (machine, None) => machine,
            (machine, cgroup) => machine.or(cgroup),
        }
    }

    /// The death of the watched process, which exited with `status`.
    pub fn death(&self, status: ExitStatus) -> Death {
        let oom =
            (status.signal() == Some(9) && self.counts().above(&self.counts_at_mark)).then(|| {
                OomKill {
                    peak_bytes: self.peak_bytes(),
                    limit: self.limit(),
                }
            });
        Death { status, oom }
    }

    fn counts(&self) -> OomCounts {
        OomCounts {
            machine: read_key_value(Path::new("/proc/vmstat"), "oom_kill"),
            cgroup: self.cgroup.as_ref().and_then(Cgroup::oom_kills),
        }
    }
}

/// OOM kill counters: the machine's and the kernel's cgroup's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct OomCounts {
    machine: Option<u64>,
    cgroup: Option<u64>,
}

impl OomCounts {
    /// Whether the OOM killer killed a process of the kernel's since `before`: the cgroup's
    /// counter grew where it was read both times (it counts only the cgroup's processes, and
    /// its descendants' under cgroup v1), else the machine's (any process of the machine: the
    /// best there is without a cgroup).
    fn above(&self, before: &OomCounts) -> bool {
        let grew = |now: Option<u64>, then: Option<u64>| matches!((now, then), (Some(now), Some(then)) if now > then);
        match (self.cgroup, before.cgroup) {
            (Some(_), Some(_)) => grew(self.cgroup, before.cgroup),
            _ => grew(self.machine, before.machine),
        }
    }
}

/// A process's memory cgroup: its directory and the interface version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cgroup {
    dir: PathBuf,
    /// The root of its hierarchy: limits are looked for from `dir` up to here.
    root: PathBuf,
    v2: bool,
}

impl Cgroup {
    /// The memory cgroup of `pid`, from `/proc/PID/cgroup` and the mounts.
    fn of(pid: u32) -> Option<Cgroup> {
        let membership = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        for line in membership.lines() {
            // "ID:CONTROLLERS:PATH"; v1's memory controller, or v2's single hierarchy ("0::").
            let mut fields = line.splitn(3, ':');
            let (Some(id), Some(controllers), Some(path)) =
                (fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            let v1 = controllers.split(',').any(|name| name == "memory");
            let v2 = id == "0" && controllers.is_empty();
            if !v1 && !v2 {
                continue;
            }
            let Some(root) = mount_point(&mounts, v2) else {
                continue;
            };
            let dir = root.join(path.trim_start_matches('/'));
            // A v2 hierarchy without the memory controller enabled has no memory files.
            if v1 || dir.join("memory.max").exists() {
                return Some(Cgroup { dir, root, v2 });
            }
        }
        None
    }

    /// The smallest limit on the path from this cgroup up to its hierarchy's root.
    fn limit(&self) -> Option<MemoryLimit> {
        let file = if self.v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        let mut best: Option<MemoryLimit> = None;
        let mut dir = Some(self.dir.as_path());
        while let Some(current) = dir {
            if let Some(bytes) = std::fs::read_to_string(current.join(file))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
            {
                // v1 writes "no limit" as a huge page-aligned number; v2 as "max" (no parse).
                if bytes < (1u64 << 62) && best.as_ref().is_none_or(|best| bytes < best.bytes) {
                    best = Some(MemoryLimit {
                        bytes,
                        cgroup: Some(current.to_path_buf()),
                    });
                }
            }
            if current == self.root {
                break;
            }
            dir = current.parent();
        }
        best
    }

    /// How many processes the OOM killer has killed in this cgroup (v2: in it alone where the
    /// kernel says, `memory.events.local`; else with its descendants).
    fn oom_kills(&self) -> Option<u64> {
        if self.v2 {
            read_key_value(&self.dir.join("memory.events.local"), "oom_kill")
                .or_else(|| read_key_value(&self.dir.join("memory.events"), "oom_kill"))
        } else {
            read_key_value(&self.dir.join("memory.oom_control"), "oom_kill")
        }
    }
}

/// Where the memory hierarchy is mounted: v1's `memory` controller, or the v2 hierarchy.
fn mount_point(mountinfo: &str, v2: bool) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        // "... MOUNTPOINT OPTIONS - FSTYPE SOURCE SUPEROPTIONS"
        let (before, after) = line.split_once(" - ")?;
        let mut after = after.split_whitespace();
        let fstype = after.next()?;
        let super_options = after.nth(1).unwrap_or_default();
        let mount = before.split_whitespace().nth(4)?;
        let fits = if v2 {
            fstype == "cgroup2"
        } else {
            fstype == "cgroup" && super_options.split(',').any(|option| option == "memory")
        };
        fits.then(|| PathBuf::from(mount))
    })
}

/// The value of `key` in a file of "key value" lines.
fn read_key_value(file: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(char::is_whitespace)?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

/// The machine's memory, from `/proc/meminfo`.
fn machine_memory() -> Option<u64> {
    read_kibibytes(Path::new("/proc/meminfo"), "MemTotal:")
}

/// A process's peak resident size, from `/proc/PID/status`.
fn peak_resident(pid: u32) -> Option<u64> {
    read_kibibytes(Path::new(&format!("/proc/{pid}/status")), "VmHWM:")
}

/// A "Key:   N kB" line's value in bytes.
fn read_kibibytes(file: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(key)?;
        let kib: u64 = rest.split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signalled(signal: i32) -> ExitStatus {
        ExitStatus::from_raw(signal)
    }

    #[test]
    fn a_signal_is_named_with_its_usual_cause() {
        let death = Death::from_status(signalled(11));
        let text = death.to_string();
        assert!(text.contains("SIGSEGV (signal 11)"), "{text}");
        assert!(text.contains("segmentation fault"), "{text}");
        let text = Death::from_status(signalled(6)).to_string();
        assert!(text.contains("SIGABRT") && text.contains("abort"), "{text}");
    }

    #[test]
    fn an_exit_code_names_os_exit() {
        let text = Death::from_status(ExitStatus::from_raw(3 << 8)).to_string();
        assert!(text.contains("exited with code 3"), "{text}");
        assert!(text.contains("os._exit(3)"), "{text}");
    }

    #[test]
    fn an_oom_kill_gives_memory_against_the_limit() {
        let death = Death {
            status: signalled(9),
            oom: Some(OomKill {
                peak_bytes: Some(3 << 30),
                limit: Some(MemoryLimit {
                    bytes: 4 << 30,
                    cgroup: Some(PathBuf::from("/sys/fs/cgroup/memory/nb")),
                }),
            }),
        };
        let text = death.to_string();
        assert!(text.contains("out-of-memory killer"), "{text}");
        assert!(text.contains("at least 3.0 GB"), "{text}");
        assert!(
            text.contains("4.0 GB limit of its memory cgroup (/sys/fs/cgroup/memory/nb)"),
            "{text}"
        );
    }

    #[test]
    fn counters_grew_only_when_a_counter_rose() {
        let before = OomCounts {
            machine: Some(2),
            cgroup: None,
        };
        let same = before;
        let rose = OomCounts {
            machine: Some(3),
            cgroup: None,
        };
        assert!(!same.above(&before));
        assert!(rose.above(&before));
        // Where the kernel's cgroup counts its kills, another process's kill elsewhere on the
        // machine is not the kernel's.
        let before = OomCounts {
            machine: Some(2),
            cgroup: Some(0),
        };
        let elsewhere = OomCounts {
            machine: Some(3),
            cgroup: Some(0),
        };
        let here = OomCounts {
            machine: Some(3),
            cgroup: Some(1),
        };
        assert!(!elsewhere.above(&before));
        assert!(here.above(&before));
        // A cgroup counter read only once decides nothing: the machine's does.
        let lost = OomCounts {
            machine: Some(3),
            cgroup: None,
        };
        assert!(lost.above(&before));
    }

    #[test]
    fn mount_points_are_read_from_mountinfo() {
        let mountinfo = "\
30 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
31 25 0:27 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
32 25 0:28 / /sys/fs/cgroup/cpu rw,relatime shared:11 - cgroup cgroup rw,cpu";
        assert_eq!(
            mount_point(mountinfo, false),
            Some(PathBuf::from("/sys/fs/cgroup/memory"))
        );
        assert_eq!(
            mount_point(mountinfo, true),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
    }

    #[test]
    fn a_live_process_has_a_peak_and_a_limit() {
        let watch = MemoryWatch::new(std::process::id());
        assert!(watch.peak_bytes().is_some_and(|bytes| bytes > 1 << 20));
        let limit = watch.limit().expect("the machine's memory at least");
        assert!(limit.bytes > 1 << 26);
    }
}
