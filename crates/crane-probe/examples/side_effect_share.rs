//! How many cells of a corpus the side-effect table would refuse to dry-run: the refusal every
//! dry run made before the fork was sealed, and the one it still makes where the seal cannot
//! hold (`docs/dry-run.md`).
//!
//! `cargo run -p crane-probe --release --example side_effect_share -- NOTEBOOK_OR_DIR...`
//!
//! Every code cell of every `.ipynb` named (directories are searched) is read with
//! [`side_effects`]; names are qualified from the notebook's own `import` statements, as the
//! kernel's module bindings would qualify them (what the cells bind to other objects is not
//! known here, so only method names and module functions are recognized).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crane_analysis::analyze_cell;
use crane_analysis::effects::side_effects;
use ruff_python_ast::Stmt;

fn notebooks(path: &Path, found: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.flatten().map(|entry| entry.path()).collect();
        entries.sort();
        for entry in entries {
            notebooks(&entry, found);
        }
    } else if path
        .extension()
        .is_some_and(|extension| extension == "ipynb")
    {
        found.push(path.to_owned());
    }
}

fn code_cells(path: &Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let notebook: serde_json::Value =
        serde_json::from_str(&text).map_err(|error| error.to_string())?;
    let cells = notebook["cells"].as_array().cloned().unwrap_or_default();
    Ok(cells
        .iter()
        .filter(|cell| cell["cell_type"] == "code")
        .map(|cell| match &cell["source"] {
            serde_json::Value::Array(lines) => lines.iter().filter_map(|l| l.as_str()).collect(),
            other => other.as_str().unwrap_or_default().to_owned(),
        })
        .collect())
}

/// `import numpy as np` binds `np` to `numpy`; `from os import system` binds `system` to
/// `os.system`.
fn imports(source: &str, origins: &mut BTreeMap<String, String>) {
    let cell = crane_analysis::ParsedCell::parse(source);
    let Some(module) = cell.plain_python() else {
        return;
    };
    for statement in &module.body {
        match statement {
            Stmt::Import(import) => {
                for alias in &import.names {
                    let module = alias.name.id.to_string();
                    let bound = match &alias.asname {
                        Some(name) => name.id.to_string(),
                        None => module.split('.').next().unwrap_or(&module).to_owned(),
                    };
                    let target = if alias.asname.is_some() {
                        module.clone()
                    } else {
                        bound.clone()
                    };
                    origins.insert(bound, target);
                }
            }
            Stmt::ImportFrom(import) => {
                let Some(module) = &import.module else {
                    continue;
                };
                for alias in &import.names {
                    let name = alias.asname.as_ref().unwrap_or(&alias.name);
                    origins.insert(
                        name.id.to_string(),
                        format!("{}.{}", module.id, alias.name.id),
                    );
                }
            }
            _ => {}
        }
    }
}

fn main() {
    let mut paths = Vec::new();
    for argument in std::env::args_os().skip(1) {
        notebooks(Path::new(&argument), &mut paths);
    }
    if paths.is_empty() {
        eprintln!("usage: side_effect_share NOTEBOOK_OR_DIR...");
        std::process::exit(2);
    }
    let (mut cells, mut refused, mut unreadable, mut unparsed) = (0usize, 0usize, 0usize, 0usize);
    let mut notebooks_with = BTreeSet::new();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for path in &paths {
        let sources = match code_cells(path) {
            Ok(sources) => sources,
            Err(error) => {
                eprintln!("{}: {error}", path.display());
                unreadable += 1;
                continue;
            }
        };
        let mut origins = BTreeMap::new();
        for source in &sources {
            imports(source, &mut origins);
        }
        for source in sources.iter().filter(|source| !source.trim().is_empty()) {
            cells += 1;
            let Ok(analysis) = analyze_cell(source) else {
                unparsed += 1;
                continue;
            };
            let effects = side_effects(&analysis, &origins);
            if !effects.is_empty() {
                refused += 1;
                notebooks_with.insert(path.clone());
                let cell_kinds: BTreeSet<String> = effects
                    .iter()
                    .map(|effect| effect.kind.to_string())
                    .collect();
                for kind in cell_kinds {
                    *kinds.entry(kind).or_default() += 1;
                }
            }
        }
    }
    println!(
        "{} notebooks ({unreadable} unreadable), {cells} code cells ({unparsed} not Python crane parses): {refused} ({:.1}%) have a side effect the table names, in {} notebooks",
        paths.len(),
        100.0 * refused as f64 / cells.max(1) as f64,
        notebooks_with.len()
    );
    for (kind, count) in kinds {
        println!("  {count} cells: {kind}");
    }
}
