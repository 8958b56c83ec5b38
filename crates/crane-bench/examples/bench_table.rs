//! The detector comparison table: every detector on the JunoBench offline cases and on the
//! runnable pairs, with precision, recall, F1, accuracy and cost, as Markdown.
//!
//! ```text
//! cargo run --release -p crane-bench --example bench_table -- \
//!     --offline ../shared/junobench/cases --runnable bench/notebooks --out crates/crane-bench/BENCHMARKS.md
//! ```
//!
//! `--skip-live` leaves the runnable pairs out (they start a kernel per notebook and detector).

use std::fmt::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;
use crane_bench::metrics::format_ratio;
use crane_bench::{run, BenchOptions, Detector, LiveOptions, Report, RunReport, Silent};
use crane_kernel::{KernelLaunch, KernelOrigin};
use crane_llm::{LlmConfig, ModelSpec, ReplayModel};

#[derive(Parser)]
struct Args {
    /// JunoBench case files.
    #[arg(long, default_value = "../shared/junobench/cases")]
    offline: PathBuf,
    /// Runnable pairs (manifest.json and case folders).
    #[arg(long, default_value = "bench/notebooks")]
    runnable: PathBuf,
    /// Python with ipykernel for the runnable pairs.
    #[arg(long, env = "CRANE_PYTHON", default_value = ".venv/bin/python")]
    python: PathBuf,
    /// Leave the runnable pairs out.
    #[arg(long)]
    skip_live: bool,
    /// Cases judged in parallel on the runnable pairs.
    #[arg(long, default_value_t = 2)]
    jobs: usize,
    /// Write the Markdown here instead of standard output.
    #[arg(long)]
    out: Option<PathBuf>,
}

struct Row {
    dataset: &'static str,
    report: RunReport,
}

fn replay(model: ReplayModel) -> LlmConfig {
    let mut config = LlmConfig::new(ModelSpec::Replay(model));
    config.cache_dir = None;
    config
}

async fn measure(options: BenchOptions, dataset: &'static str, rows: &mut Vec<Row>) {
    let label = format!(
        "{} {:?}",
        options.detector,
        options.llm.as_ref().map(|l| l.model.to_string())
    );
    let report: Report = run(&options, &Silent)
        .await
        .unwrap_or_else(|error| panic!("{label} on {dataset}: {error}"));
    for report in report.into_reports() {
        eprintln!(
            "{dataset}: {} {} {}: F1 {}",
            report.info.detector,
            report.info.model.as_deref().unwrap_or("-"),
            report.info.config,
            format_ratio(report.overall.f1)
        );
        rows.push(Row { dataset, report });
    }
}

fn offline_runs(args: &Args) -> Vec<BenchOptions> {
    let configs = crane_bench::parse_configs("code_only,with_runtime").unwrap_or_default();
    let with = |detector: Detector, llm: Option<LlmConfig>| {
        let mut options = BenchOptions::new(&args.offline, detector);
        options.configs = configs.clone();
        options.llm = llm;
        options
    };
    let mut runs = vec![with(Detector::Rules, None)];
    for model in ReplayModel::ALL {
        runs.push(with(Detector::Llm, Some(replay(model))));
    }
    for model in ReplayModel::ALL {
        runs.push(with(Detector::Hybrid, Some(replay(model))));
    }
    runs
}

fn live_runs(args: &Args) -> Vec<BenchOptions> {
    let with = |detector: Detector, configs: &str| {
        let mut options = BenchOptions::new(&args.runnable, detector);
        options.configs = crane_bench::parse_configs(configs).unwrap_or_default();
        options.kernel = Some(LiveOptions {
            launch: KernelLaunch::python(&args.python, KernelOrigin::PythonFlag),
            cell_timeout: Duration::from_secs(300),
        });
        options.jobs = args.jobs;
        options
    };
    vec![
        with(Detector::Rules, "code_only,with_runtime"),
        with(Detector::DryRun, "with_runtime"),
    ]
}

fn markdown(rows: &[Row], offline_time: Duration, live_time: Option<Duration>) -> String {
    let mut out = String::new();
    out.push_str(
        "| dataset | detector | model | config | n | precision | recall | F1 | accuracy | \
         errors | tokens in | tokens out | est. USD | runtime extraction p50 | case p50 |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let report = &row.report;
        let info = &report.info;
        let overall = &report.overall;
        let cost = &report.cost;
        let ms = |latency: Option<crane_bench::report::Latency>| {
            latency.map_or_else(|| "–".to_owned(), |l| format!("{:.0} ms", l.p50))
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            row.dataset,
            info.detector,
            info.model.as_deref().unwrap_or("–"),
            info.config,
            overall.n,
            format_ratio(overall.precision),
            format_ratio(overall.recall),
            format_ratio(overall.f1),
            format_ratio(overall.accuracy),
            overall.errors,
            cost.tokens_in,
            cost.tokens_out,
            cost.usd
                .map_or_else(|| "–".to_owned(), |usd| format!("{usd:.2}")),
            ms(cost.runtime_extraction_ms),
            ms(cost.case_ms),
        );
    }
    let _ = writeln!(
        out,
        "\nOffline table computed in {:.1} s{}.",
        offline_time.as_secs_f64(),
        live_time
            .map(|time| format!("; runnable pairs in {:.0} s", time.as_secs_f64()))
            .unwrap_or_default()
    );
    out
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    let mut rows = Vec::new();
    let started = Instant::now();
    for options in offline_runs(&args) {
        measure(options, "JunoBench (offline)", &mut rows).await;
    }
    let offline_time = started.elapsed();
    let live_time = if args.skip_live {
        None
    } else {
        let started = Instant::now();
        for options in live_runs(&args) {
            measure(options, "runnable pairs (live)", &mut rows).await;
        }
        Some(started.elapsed())
    };
    let table = markdown(&rows, offline_time, live_time);
    match &args.out {
        Some(path) => std::fs::write(path, table).expect("cannot write the table"),
        None => print!("{table}"),
    }
}
