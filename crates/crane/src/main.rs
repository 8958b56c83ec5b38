//! The `crane` binary: parses the command line and hands each command to its module.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod config;
mod exit;
mod formats;
mod parameters;
mod settings;
mod signals;
mod ui;

use cli::{Cli, Command};
use exit::Outcome;

fn main() -> ExitCode {
    let cli = Cli::parse_from(cli::with_bare_dry_run(std::env::args_os()));
    let ui = ui::Ui::new(cli.color, cli.quiet);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            ui.error(&format!("cannot start the async runtime: {err}"));
            return ExitCode::from(exit::KERNEL_FAILED);
        }
    };
    let result = runtime.block_on(async {
        // The kernel proxy answers signals itself: a SIGINT goes on to its kernel, and a
        // SIGTERM from the frontend ends it as it would end any kernel.
        let command = match cli.command {
            Command::Kernel(command) => return commands::jupyter::run(command, &ui).await,
            command => command,
        };
        let stop = match signals::Stop::listen() {
            Ok(stop) => stop,
            Err(err) => {
                return Err(exit::Failure::kernel(anyhow::anyhow!(
                    "cannot listen for signals: {err}"
                )))
            }
        };
        // Commands that start kernels answer a stop signal themselves (they write what ran and
        // close their sessions); every other command just stops.
        let handles_stop = matches!(
            command,
            Command::Run(_) | Command::Check(_) | Command::Exec(_) | Command::Inspect(_)
        );
        if handles_stop {
            return run(command, &ui, stop).await;
        }
        let mut watch = stop.clone();
        tokio::select! {
            result = run(command, &ui, stop) => result,
            signal = watch.signalled() => Err(exit::Failure::stopped(signal)),
        }
    });
    // Dropping the runtime drops every session future, which shuts owned kernels down.
    drop(runtime);
    match result {
        Ok(outcome) => ExitCode::from(outcome.code()),
        Err(failure) => {
            ui.error(&failure.message());
            ExitCode::from(failure.code)
        }
    }
}

async fn run(command: Command, ui: &ui::Ui, stop: signals::Stop) -> Result<Outcome, exit::Failure> {
    match command {
        Command::Exec(args) => commands::exec::run(args, ui, stop).await,
        Command::Check(args) => commands::check::run(args, ui, stop).await,
        Command::Inspect(args) => commands::inspect::run(args, ui, stop).await,
        Command::Run(args) => commands::run::run(args, ui, stop).await,
        Command::Bench(args) => commands::bench::run(args, ui).await,
        Command::Rules(args) => commands::rules::run(args, ui),
        Command::Llm(command) => commands::llm::run(command, ui).await,
        Command::Kernel(command) => commands::jupyter::run(command, ui).await,
    }
}
