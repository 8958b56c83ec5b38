//! What reading the compiled-in signature snapshot costs a check: time and resident memory.
//!
//! `cargo run -p crane-detect --release --example snapshot_cost`

use std::time::Instant;

fn resident_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn main() {
    let started = Instant::now();
    let libraries = crane_detect::snapshot::versions().len();
    let header = started.elapsed();
    let before = resident_kib();
    let started = Instant::now();
    let Some(snapshot) = crane_detect::snapshot::snapshot() else {
        eprintln!("the snapshot does not read");
        std::process::exit(1);
    };
    let elapsed = started.elapsed();
    let after = resident_kib();
    println!(
        "versions of {libraries} libraries read in {:.2} ms",
        header.as_secs_f64() * 1000.0
    );
    println!(
        "{} signatures indexed in {:.1} ms; resident memory {} -> {} KiB",
        snapshot.len(),
        elapsed.as_secs_f64() * 1000.0,
        before.map_or("?".into(), |kib| kib.to_string()),
        after.map_or("?".into(), |kib| kib.to_string()),
    );
}
