//! Fork and teardown overhead of dry runs with kernels holding more and more data.
//!
//! `cargo run -p crane-probe --release --example dry_run_bench -- [--runs N] [--sizes 100M,2G,8G]`
//!
//! For each size, a fresh kernel (the project's Python: `$CRANE_PYTHON`, else
//! `<repo>/.venv/bin/python`) allocates that much numpy data and touches every page
//! (`np.ones`), then dry-runs a trivial cell N times. The table gives medians and 90th
//! percentiles of the `fork()` call, of the kill-and-reap teardown, of both together, and of the
//! whole dry run as crane sees it (two round trips to the kernel included).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crane_kernel::{
    ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession, OwnedKernel, ReplyStatus,
    StartOptions,
};
use crane_probe::dry_run::{dry_run, DryRunOptions, DryRunOutcome};

struct Arguments {
    runs: usize,
    sizes: Vec<(String, u64)>,
}

fn parse_size(text: &str) -> Result<u64, String> {
    let (number, unit) =
        text.split_at(text.find(|c: char| c.is_alphabetic()).unwrap_or(text.len()));
    let number: u64 = number.parse().map_err(|_| format!("bad size `{text}`"))?;
    let unit = match unit.to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return Err(format!("bad unit in `{text}`")),
    };
    Ok(number * unit)
}

fn parse_arguments() -> Result<Arguments, String> {
    let mut arguments = Arguments {
        runs: 20,
        sizes: ["100M", "2G", "8G"]
            .iter()
            .map(|size| (size.to_string(), parse_size(size).expect("valid default")))
            .collect(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--runs" => {
                arguments.runs = value.parse().map_err(|_| format!("bad count `{value}`"))?
            }
            "--sizes" => {
                arguments.sizes = value
                    .split(',')
                    .map(|size| parse_size(size).map(|bytes| (size.to_owned(), bytes)))
                    .collect::<Result<_, _>>()?
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(arguments)
}

fn project_python() -> PathBuf {
    match std::env::var_os("CRANE_PYTHON").filter(|v| !v.is_empty()) {
        Some(python) => PathBuf::from(python),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"),
    }
}

/// A `kB` field of a `/proc/<pid>` file, in bytes.
fn proc_bytes(pid: u32, file: &str, field: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Resident memory, and the part of it in transparent huge pages (whose page tables `fork`
/// copies 512 times faster than those of 4 kB pages).
struct Memory {
    resident: u64,
    huge: u64,
}

struct Sample {
    fork: Duration,
    teardown: Duration,
    total: Duration,
}

fn quantile(values: &mut [Duration], q: f64) -> Duration {
    values.sort();
    values[((values.len() - 1) as f64 * q).round() as usize]
}

fn ms(duration: Duration) -> String {
    format!("{:.1}", duration.as_secs_f64() * 1000.0)
}

async fn measure(
    size: u64,
    runs: usize,
) -> Result<(Memory, Vec<Sample>), Box<dyn std::error::Error>> {
    let launch = KernelLaunch::python(project_python(), KernelOrigin::PythonFlag);
    let kernel = OwnedKernel::start(&launch, &StartOptions::default()).await?;
    let pid = kernel.pid();
    let mut session = KernelSession::from(kernel);
    let setup = format!("import numpy as np\ndata = np.ones({})", size / 8);
    let execution = session
        .execute(
            &setup,
            &ExecuteOptions::silent().with_timeout(Duration::from_secs(600)),
        )
        .await?;
    if execution.reply().map(|reply| &reply.status) != Some(&ReplyStatus::Ok) {
        return Err(format!("allocation failed: {:?}", execution.error()).into());
    }
    let memory = Memory {
        resident: proc_bytes(pid, "status", "VmRSS"),
        huge: proc_bytes(pid, "smaps_rollup", "AnonHugePages"),
    };
    let options = DryRunOptions::default();
    let mut samples = Vec::with_capacity(runs);
    // The first run injects the module.
    for run in 0..=runs {
        let started = Instant::now();
        let outcome = dry_run(&mut session, "total = 1 + 1", &options).await?;
        let total = started.elapsed();
        let DryRunOutcome::Ran(report) = outcome else {
            return Err(format!("unsupported: {outcome:?}").into());
        };
        if !report.is_ok() {
            return Err(format!("the cell failed: {report:?}").into());
        }
        if run > 0 {
            samples.push(Sample {
                fork: report.timings.fork,
                teardown: report.timings.teardown,
                total,
            });
        }
    }
    session.close().await?;
    Ok((memory, samples))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let arguments = parse_arguments()?;
    println!(
        "{:>6} {:>9} {:>11} {:>15} {:>15} {:>20} {:>15}",
        "data", "RSS MB", "huge pages", "fork ms", "teardown ms", "fork+teardown ms", "dry run ms"
    );
    println!(
        "{:>6} {:>9} {:>11} {:>15} {:>15} {:>20} {:>15}",
        "", "", "", "median/p90", "median/p90", "median/p90", "median/p90"
    );
    for (label, size) in &arguments.sizes {
        let (memory, samples) = measure(*size, arguments.runs).await?;
        let mut fork: Vec<Duration> = samples.iter().map(|s| s.fork).collect();
        let mut teardown: Vec<Duration> = samples.iter().map(|s| s.teardown).collect();
        let mut both: Vec<Duration> = samples.iter().map(|s| s.fork + s.teardown).collect();
        let mut total: Vec<Duration> = samples.iter().map(|s| s.total).collect();
        let pair = |values: &mut Vec<Duration>| {
            format!(
                "{}/{}",
                ms(quantile(values, 0.5)),
                ms(quantile(values, 0.9))
            )
        };
        println!(
            "{:>6} {:>9} {:>10.0}% {:>15} {:>15} {:>20} {:>15}",
            label,
            memory.resident >> 20,
            memory.huge as f64 * 100.0 / memory.resident.max(1) as f64,
            pair(&mut fork),
            pair(&mut teardown),
            pair(&mut both),
            pair(&mut total),
        );
    }
    Ok(())
}
