//! The `crane` binary: parses the command line and hands each command to its module.

use std::process::ExitCode;

use clap::Parser;

mod cli;
mod commands;
mod exit;
mod ui;

use cli::{Cli, Command};
use exit::Outcome;

fn main() -> ExitCode {
    let cli = Cli::parse();
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
    // `run` answers Ctrl-C itself (it writes what ran), and the kernel proxy forwards it to its
    // kernel; every other command just stops.
    let handles_interrupt = matches!(
        cli.command,
        Command::Run(_) | Command::Kernel(cli::KernelCommand::Serve(_))
    );
    let result = runtime.block_on(async {
        if handles_interrupt {
            return run(cli.command, &ui).await;
        }
        tokio::select! {
            result = run(cli.command, &ui) => result,
            _ = tokio::signal::ctrl_c() => Err(exit::Failure::interrupted()),
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

async fn run(command: Command, ui: &ui::Ui) -> Result<Outcome, exit::Failure> {
    match command {
        Command::Exec(args) => commands::exec::run(args, ui).await,
        Command::Check(args) => commands::check::run(args, ui).await,
        Command::Inspect(args) => commands::inspect::run(args, ui).await,
        Command::Run(args) => commands::run::run(args, ui).await,
        Command::Bench(args) => commands::bench::run(args, ui).await,
        Command::Rules(args) => commands::rules::run(args, ui),
        Command::Llm(command) => commands::llm::run(command, ui).await,
        Command::Kernel(command) => commands::jupyter::run(command, ui).await,
    }
}
