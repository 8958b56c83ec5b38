//! `crane bench`: measure a detector on a dataset, or merge the results of sharded runs.

use std::path::Path;

use anyhow::anyhow;
use crane_bench::{BenchOptions, Detector, LiveOptions, Progress, Report, Shard};
use crane_llm::{LlmConfig, LlmSettings};

use crate::cli::{BenchArgs, BenchDetector, OutputFormat};
use crate::commands::kernel;
use crate::exit::{Failure, Outcome};
use crate::ui::{out, outln, Ui};

pub async fn run(args: BenchArgs, ui: &Ui) -> Result<Outcome, Failure> {
    if args.dataset == Path::new("merge") && !args.dataset.exists() {
        return merge(&args, ui);
    }
    if !args.parts.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "unexpected arguments after the dataset: {:?} (only `crane bench merge PART...` takes several)",
            args.parts
        )));
    }
    let detector = match args.detector {
        BenchDetector::Rules => Detector::Rules,
        BenchDetector::Llm => Detector::Llm,
        BenchDetector::Hybrid => Detector::Hybrid,
        BenchDetector::DryRun => Detector::DryRun,
    };
    let mut options = BenchOptions::new(&args.dataset, detector);
    options.llm = llm(args.llm.as_deref())?;
    if let (true, Some(config)) = (args.paper_prompt, options.llm.as_mut()) {
        config.prompt.style = crane_llm::PromptStyle::Paper;
    }
    if matches!(detector, Detector::Llm | Detector::Hybrid) && options.llm.is_none() {
        return Err(Failure::bad_input(anyhow!(
            "--detector {} needs --llm MODEL (offline: replay:gpt_5, replay:gemini_2_5_flash or replay:Qwen_2_5_32B_Instruct)",
            detector.as_str()
        )));
    }
    if let Some(configs) = &args.config {
        options.configs = crane_bench::parse_configs(configs).map_err(Failure::bad_input)?;
    }
    // Recorded answers exist for the paper's two configurations only: any other would fail on
    // every case, so it is refused before the first.
    let replayed = options
        .llm
        .as_ref()
        .is_some_and(|config| matches!(config.model, crane_llm::ModelSpec::Replay(_)));
    if replayed && matches!(detector, Detector::Llm | Detector::Hybrid) {
        if let Some(config) = options
            .configs
            .iter()
            .map(ToString::to_string)
            .find(|config| config != "code_only" && config != "with_runtime")
        {
            return Err(Failure::bad_input(anyhow!(
                "replayed answers were recorded for code_only and with_runtime only, not for `{config}`: measure it with a live --llm MODEL"
            )));
        }
    }
    options.runs = args.runs;
    options.judge = llm(args.judge.as_deref())?;
    options.jobs = args.jobs.max(1);
    options.shard = args
        .shard
        .as_deref()
        .map(str::parse::<Shard>)
        .transpose()
        .map_err(|err| Failure::bad_input(anyhow!(err)))?;
    options.out = args.out.clone();
    options.ignore = args.ignore.iter().copied().collect();
    options.explain_silence = args.explain_silence;
    if args.explain_silence && matches!(detector, Detector::Llm | Detector::DryRun) {
        return Err(Failure::bad_input(anyhow!(
            "--explain-silence counts where the rules gave up: use --detector rules or hybrid"
        )));
    }
    if args.dataset.join("manifest.json").is_file() {
        options.kernel = Some(LiveOptions {
            launch: kernel::resolve_launch(&args.kernel, None).await?,
            cell_timeout: kernel::timeout(&args.kernel)?,
        });
    }

    let bar = progress_bar(ui);
    let report = crane_bench::run(&options, &bar as &dyn Progress)
        .await
        .map_err(|err| match err {
            crane_bench::BenchError::Llm(_) => Failure::detector(err),
            other => Failure::bad_input(other),
        })?;
    bar.finish_and_clear();
    finish(report, &args, ui)
}

fn merge(args: &BenchArgs, ui: &Ui) -> Result<Outcome, Failure> {
    if args.parts.is_empty() {
        return Err(Failure::bad_input(anyhow!(
            "crane bench merge needs the shard result files: crane bench merge OUT/report.shard-1-of-2.json ..."
        )));
    }
    let report = crane_bench::merge_files(&args.parts).map_err(Failure::bad_input)?;
    finish(report, args, ui)
}

fn finish(mut report: Report, args: &BenchArgs, ui: &Ui) -> Result<Outcome, Failure> {
    report.set_provenance(&command_line(), source_commit().as_deref());
    let report = &report;
    match args.format {
        OutputFormat::Json => outln!(
            "{}",
            serde_json::to_string_pretty(report).map_err(Failure::bad_input)?
        ),
        OutputFormat::Text => out!("{}", crane_bench::render::text(report)),
    }
    if let Some(dir) = &args.out {
        let written = crane_bench::write_outputs(report, dir).map_err(Failure::bad_input)?;
        ui.status(&format!(
            "wrote {}, {} and {} charts",
            written.markdown.display(),
            written.json.display(),
            written.charts.len()
        ));
    }
    Ok(Outcome::Success)
}

/// The command as typed, each argument shell-quoted when it needs to be.
fn command_line() -> String {
    std::env::args()
        .enumerate()
        .map(|(index, arg)| {
            let arg = if index == 0 { "crane".to_owned() } else { arg };
            let plain = !arg.is_empty()
                && arg
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
            if plain {
                arg
            } else {
                format!("'{}'", arg.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The commit of the source tree this binary was built from, `+dirty` when tracked files have
/// changed since; `None` outside a git checkout (e.g. an installed binary whose source is gone).
fn source_commit() -> Option<String> {
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(source)
            .args(args)
            .stderr(std::process::Stdio::null())
            .output()
            .ok()
            .filter(|output| output.status.success())
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).filter(|c| !c.is_empty())?;
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    Some(if dirty {
        format!("{commit}+dirty")
    } else {
        commit
    })
}

fn llm(model: Option<&str>) -> Result<Option<LlmConfig>, Failure> {
    let Some(model) = model else {
        return Ok(None);
    };
    let flags = LlmSettings {
        model: Some(model.to_owned()),
        ..LlmSettings::default()
    };
    let crane_toml = std::env::current_dir()
        .ok()
        .and_then(|dir| crane_llm::find_crane_toml(&dir));
    LlmConfig::load(flags, crane_toml.as_deref())
        .map(Some)
        .map_err(Failure::bad_input)
}

fn progress_bar(ui: &Ui) -> indicatif::ProgressBar {
    if ui.shows_progress() {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} bench [{bar:24}] {pos}/{len} {eta} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar
    } else {
        indicatif::ProgressBar::hidden()
    }
}
