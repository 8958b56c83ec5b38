//! How long crane takes to decide which statements of a held cell run before its hold
//! (`crane_analysis::out_of_order` and `not_run_alone`, each judging the cell once), on
//! generated cells of N statements before the crash, half of them left out (a method call on an
//! object from before the cell) and half slices of an array that run past them.
//!
//!     cargo run --release -p crane-analysis --example held_cell_bench [-- 40 150 400]

use std::time::Instant;

use crane_analysis::Prior;

fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|arg| arg.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![40, 150, 400]
    } else {
        sizes
    };
    let prior = |name: &str| match name {
        "model" | "y" => Prior::Bound,
        "X" => Prior::Data,
        _ => Prior::NotBound,
    };
    let alone = |_: &str| Some(vec!["X".to_owned()]);
    println!("| statements before the crash | out_of_order ms | not_run_alone ms | ran |");
    println!("|---:|---:|---:|---:|");
    for size in sizes {
        let pairs = size / 2;
        let mut source = String::new();
        for i in 0..pairs {
            source.push_str(&format!("model.step{i}(a={i})\nX{i} = X[:, :{i}]\n"));
        }
        source.push_str("model.fit(X, y)\n");
        let line = u32::try_from(2 * pairs + 1).unwrap_or(u32::MAX);
        // The fastest of 5 runs: the machine's other work only adds.
        let mut best = (f64::MAX, f64::MAX);
        let mut ran = 0;
        for _ in 0..5 {
            let started = Instant::now();
            let out = crane_analysis::out_of_order(&source, line, &prior, &alone);
            let judged = started.elapsed().as_secs_f64() * 1000.0;
            let started = Instant::now();
            let why = crane_analysis::not_run_alone(&source, line, &prior, &alone);
            let said = started.elapsed().as_secs_f64() * 1000.0;
            assert!(why.is_empty(), "every slice runs");
            ran = out.map_or(0, |out| out.names.len());
            best = (best.0.min(judged), best.1.min(said));
        }
        println!("| {} | {:.1} | {:.1} | {ran} |", 2 * pairs, best.0, best.1);
    }
}
