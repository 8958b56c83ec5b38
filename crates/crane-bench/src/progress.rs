//! Progress of a run, reported case by case.

/// Told about a run's progress. Implemented for indicatif's progress bar; [`Silent`] ignores it.
pub trait Progress: Send + Sync {
    /// The run judges `cases` cases.
    fn start(&self, cases: u64);
    /// A case is done (`cached`: its results came from the result cache).
    fn case_done(&self, id: &str, cached: bool);
    fn finish(&self);
}

/// No progress display.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _cases: u64) {}
    fn case_done(&self, _id: &str, _cached: bool) {}
    fn finish(&self) {}
}

impl Progress for indicatif::ProgressBar {
    fn start(&self, cases: u64) {
        self.set_length(cases);
        self.set_position(0);
    }

    fn case_done(&self, id: &str, cached: bool) {
        self.set_message(if cached {
            format!("{id} (cached)")
        } else {
            id.to_owned()
        });
        self.inc(1);
    }

    fn finish(&self) {
        self.finish_and_clear();
    }
}
