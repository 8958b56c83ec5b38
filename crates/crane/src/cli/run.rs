//! The arguments of `crane run`: guarded execution of a whole notebook.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnPredictedCrash {
    /// Halt before the cell, leaving the kernel state intact.
    Stop,
    /// Run the cell anyway and record whether the prediction was right.
    Warn,
    /// Skip the cell and go on.
    Skip,
}

/// Which detectors judge each cell of `crane run` (a dry run is `--dry-run`'s, beside them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunDetectorChoice {
    /// Rules; plus the LLM (hybrid) when one is configured.
    Auto,
    /// Deterministic rules over the code and the runtime facts (offline, milliseconds).
    Rules,
    /// The LLM alone (CRANE-LLM).
    Llm,
    /// Rules and LLM combined: proven rule crashes stand, contradicted LLM claims are refuted.
    Hybrid,
}

/// The detector options `crane run` offers.
#[derive(Debug, Clone, Args)]
pub struct RunDetectArgs {
    /// Which detector judges each cell.
    #[arg(long, value_enum, default_value_t = RunDetectorChoice::Auto)]
    pub detector: RunDetectorChoice,

    /// LLM to use, e.g. openai:gpt-5, gemini:gemini-2.5-flash, anthropic:MODEL,
    /// ollama:qwen2.5-coder:32b, openai-compat:MODEL@http://host:port/v1. Also from crane.toml.
    #[arg(long, value_name = "MODEL", env = "CRANE_LLM")]
    pub llm: Option<String>,

    /// Prompt configuration: with_runtime (default), code_only, with_api_docs, or ablations
    /// removing runtime sections such as -S, -R, -V, -S-R.
    #[arg(long, value_name = "CONFIG", allow_hyphen_values = true)]
    pub config: Option<String>,

    /// Ask the LLM N times and take the majority verdict (ties count as no crash).
    #[arg(long, value_name = "N")]
    pub runs: Option<u32>,

    /// Do not read or write the LLM answer cache.
    #[arg(long)]
    pub no_cache: bool,

    /// What data values may appear in a prompt sent to an LLM.
    #[arg(long, value_enum)]
    pub redact: Option<RedactChoice>,

    #[command(flatten)]
    pub dry: DryRunArgs,
}

impl RunDetectArgs {
    /// The same choices in the form the check pipeline takes.
    pub fn detect_args(&self) -> DetectArgs {
        DetectArgs {
            detector: match self.detector {
                RunDetectorChoice::Auto => DetectorChoice::Auto,
                RunDetectorChoice::Rules => DetectorChoice::Rules,
                RunDetectorChoice::Llm => DetectorChoice::Llm,
                RunDetectorChoice::Hybrid => DetectorChoice::Hybrid,
            },
            llm: self.llm.clone(),
            config: self.config.clone(),
            runs: self.runs,
            no_cache: self.no_cache,
            redact: self.redact,
            show_prompt: false,
            dry: self.dry,
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The notebook (.ipynb); `-` reads it from standard input.
    #[arg(value_name = "NOTEBOOK")]
    pub notebook: PathBuf,

    /// Where to write the executed notebook, as papermill's OUTPUT_PATH (same as -o; `-` writes
    /// it to standard output and the summary to standard error).
    #[arg(value_name = "OUTPUT", conflicts_with = "output")]
    pub output_path: Option<PathBuf>,

    /// Where to write the executed notebook (outputs plus crane's diagnoses).
    #[arg(long, short, value_name = "OUTPUT.ipynb")]
    pub output: Option<PathBuf>,

    /// A parameter, as papermill's `-p`: the value becomes a bool, None, int or float when it
    /// reads as one, else a string.
    #[arg(long = "parameters", short = 'p', num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub parameters: Vec<String>,

    /// A parameter whose value stays a string (papermill's `-r`).
    #[arg(long = "parameters-raw", alias = "parameters_raw", short = 'r', num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub parameters_raw: Vec<String>,

    /// A YAML file of parameters (papermill's `-f`).
    #[arg(
        long = "parameters-file",
        alias = "parameters_file",
        short = 'f',
        value_name = "FILE"
    )]
    pub parameters_file: Vec<PathBuf>,

    /// A base64-encoded YAML mapping of parameters (papermill's `-b`).
    #[arg(
        long = "parameters-base64",
        alias = "parameters_base64",
        short = 'b',
        value_name = "BASE64"
    )]
    pub parameters_base64: Vec<String>,

    /// A YAML mapping of parameters (papermill's `-y`).
    #[arg(
        long = "parameters-yaml",
        alias = "parameters_yaml",
        short = 'y',
        value_name = "YAML"
    )]
    pub parameters_yaml: Vec<String>,

    /// Write the notebook with its parameters injected, without running it (papermill's
    /// `--prepare-only`).
    #[arg(long)]
    pub prepare_only: bool,

    /// Working directory of the kernel (default: the notebook's folder, as in Jupyter).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,

    /// What to do before a cell predicted to crash.
    #[arg(long, value_enum, default_value_t = OnPredictedCrash::Stop)]
    pub on_predicted_crash: OnPredictedCrash,

    /// Order in which cells are executed. Default: recorded when the notebook records
    /// execution counts, else visual.
    #[arg(long, value_enum)]
    pub order: Option<Order>,

    /// Keep at most this many bytes of each cell's outputs (each stream is cut there, a rich
    /// output over it is left out; both marked in the notebook). Default: keep everything,
    /// as Jupyter and papermill do.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_bytes: Option<u64>,

    #[command(flatten)]
    pub kernel: KernelArgs,

    #[command(flatten)]
    pub detect: RunDetectArgs,

    #[command(flatten)]
    pub suppress: SuppressArgs,

    /// Output format of the final summary.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}
