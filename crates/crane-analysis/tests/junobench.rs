//! Every cell of the JunoBench cases goes through the analysis without a panic, and nearly all
//! of them parse.

use std::path::PathBuf;

use crane_analysis::{analyze_cell, bindings, targets_for_probe};

fn cases_dir() -> PathBuf {
    std::env::var_os("CRANE_JUNOBENCH_CASES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/junobench/cases"),
        PathBuf::from,
    )
}

#[test]
fn junobench_cells_are_analyzed_without_panics() {
    let dir = cases_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| {
            panic!(
                "JunoBench cases not found at {} (set CRANE_JUNOBENCH_CASES): {error}",
                dir.display()
            )
        })
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 100,
        "expected the JunoBench cases in {}",
        dir.display()
    );

    let mut cells = 0;
    let mut failures = Vec::new();
    let mut target_failures = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("case file");
        let case: serde_json::Value = serde_json::from_str(&text).expect("case JSON");
        let target = case["target_cell"].as_str().expect("target_cell");
        let executed: Vec<&str> = case["executed_cells"]
            .as_array()
            .expect("executed_cells")
            .iter()
            .map(|cell| cell.as_str().expect("cell source"))
            .collect();

        let name = file
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match analyze_cell(target) {
            Ok(analysis) => {
                let targets = targets_for_probe(&analysis);
                let json = serde_json::to_string(&analysis).expect("serializable analysis");
                assert!(
                    targets.iter().all(|target| !target.is_empty()),
                    "{name}: {json}"
                );
            }
            Err(error) => {
                target_failures += 1;
                failures.push(format!("{name} target: {error}"));
            }
        }
        cells += 1;
        for (index, cell) in executed.iter().enumerate() {
            if let Err(error) = analyze_cell(cell) {
                failures.push(format!("{name} executed[{index}]: {error}"));
            }
            cells += 1;
        }
        let bound = bindings(&executed);
        assert!(bound.unparsed_cells.len() <= executed.len());
    }

    for failure in &failures {
        eprintln!("{failure}");
    }
    let parsed = cells - failures.len();
    eprintln!("{parsed}/{cells} cells parse; {target_failures} target cells fail");
    assert!(
        parsed * 100 >= cells * 95,
        "only {parsed} of {cells} cells parse"
    );
}
