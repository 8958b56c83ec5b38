//! What crane shows a person: notes and errors on stderr, progress bars, and colour only when
//! the stream is a terminal (or `--color always`).

use std::time::Duration;

use console::{Style, Term};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::ColorChoice;

/// Writes a command's result to stdout. A reader that went away (`crane ... | head`) ends
/// crane quietly, as it would end any Unix filter, instead of a panic from `println!`.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    if let Err(err) = written {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {err}");
        std::process::exit(2);
    }
}

/// `println!` for results on stdout, through [`print_out`].
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::ui::print_out(&format!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` for results on stdout, through [`print_out`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::ui::print_out(&format!($($arg)*))
    };
}

pub(crate) use {out, outln};

pub struct Ui {
    color_stdout: bool,
    color_stderr: bool,
    quiet: bool,
}

impl Ui {
    pub fn new(choice: ColorChoice, quiet: bool) -> Self {
        let (color_stdout, color_stderr) = match choice {
            ColorChoice::Always => (true, true),
            ColorChoice::Never => (false, false),
            ColorChoice::Auto => {
                let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
                (
                    !no_color && Term::stdout().is_term(),
                    !no_color && Term::stderr().is_term(),
                )
            }
        };
        Self {
            color_stdout,
            color_stderr,
            quiet,
        }
    }

    /// Whether progress bars are drawn (stderr is a terminal and not --quiet).
    pub fn shows_progress(&self) -> bool {
        !self.quiet && Term::stderr().is_term()
    }

    /// An error line on stderr, always shown.
    pub fn error(&self, message: &str) {
        eprintln!(
            "{} {message}",
            self.paint_err(&Style::new().red().bold(), "error:")
        );
    }

    /// A problem with the user's input that did not stop the command, on stderr, always shown.
    pub fn warning(&self, message: &str) {
        eprintln!(
            "{} {message}",
            self.paint_err(&Style::new().yellow().bold(), "warning:")
        );
    }

    /// A short note on stderr (hidden with --quiet).
    pub fn note(&self, message: &str) {
        if !self.quiet {
            eprintln!(
                "{} {message}",
                self.paint_err(&Style::new().cyan(), "note:")
            );
        }
    }

    /// A status line on stderr (hidden with --quiet).
    pub fn status(&self, message: &str) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }

    /// Colours text for stdout when colour is on.
    pub fn paint(&self, style: &Style, text: &str) -> String {
        if self.color_stdout {
            style.apply_to(text).to_string()
        } else {
            text.to_owned()
        }
    }

    fn paint_err(&self, style: &Style, text: &str) -> String {
        if self.color_stderr {
            style.apply_to(text).to_string()
        } else {
            text.to_owned()
        }
    }

    /// A progress bar over `len` steps on stderr; drawn only on a terminal and without --quiet,
    /// otherwise each step's message is printed as a plain line so logs still show progress.
    pub fn progress(&self, len: u64, what: &str) -> Progress {
        let bar = if !self.shows_progress() {
            None
        } else {
            let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template(
                "{spinner} {prefix} [{bar:24}] {pos}/{len} {wide_msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
            bar.set_style(style);
            bar.set_prefix(what.to_owned());
            bar.enable_steady_tick(Duration::from_millis(120));
            Some(bar)
        };
        Progress {
            bar,
            len,
            plain: !self.quiet,
            position: 0,
        }
    }
}

pub struct Progress {
    bar: Option<ProgressBar>,
    len: u64,
    plain: bool,
    position: u64,
}

impl Progress {
    /// Announces the step about to run.
    pub fn start(&mut self, message: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(message.to_owned()),
            None if self.plain => eprintln!("[{}/{}] {message}", self.position + 1, self.len),
            None => {}
        }
    }

    /// Marks the current step done.
    pub fn advance(&mut self) {
        self.position += 1;
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Prints a line above the bar.
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}
