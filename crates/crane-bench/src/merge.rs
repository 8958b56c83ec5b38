//! `crane bench merge`: join the reports of the shards of one run into the report of the whole.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::report::{Report, RunInfo, RunReport};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("nothing to merge: give the shard reports (JSON) of one run")]
    NoParts,
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a crane bench report: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("part {part} is not a shard (it was run without --shard)")]
    NotAShard { part: usize },
    #[error("the parts come from different runs: {0}")]
    Mismatch(String),
    #[error("shards {missing} of {count} are missing")]
    MissingShards { missing: String, count: u32 },
    #[error("shard {0} is given twice")]
    DuplicateShard(String),
    #[error("case {0} is in more than one part")]
    DuplicateCase(String),
}

/// Read shard reports from JSON files and merge them.
pub fn merge_files(paths: &[impl AsRef<Path>]) -> Result<Report, MergeError> {
    let parts = paths
        .iter()
        .map(|path| {
            let path = path.as_ref();
            let text = std::fs::read_to_string(path).map_err(|source| MergeError::Read {
                path: path.to_owned(),
                source,
            })?;
            serde_json::from_str(&text).map_err(|source| MergeError::Parse {
                path: path.to_owned(),
                source,
            })
        })
        .collect::<Result<Vec<Report>, _>>()?;
    merge(parts)
}

/// Merge the reports of all shards of one run (same dataset, detector, model, configurations,
/// runs and diagnosis method; every shard exactly once) into the report of the whole run, which
/// equals the report an unsharded run gives.
pub fn merge(parts: Vec<Report>) -> Result<Report, MergeError> {
    let parts: Vec<Vec<RunReport>> = parts.into_iter().map(Report::into_reports).collect();
    let first = parts.first().ok_or(MergeError::NoParts)?;
    let configs: Vec<String> = first.iter().map(|r| r.info.config.clone()).collect();
    let count = first
        .first()
        .and_then(|report| report.info.shard)
        .ok_or(MergeError::NotAShard { part: 1 })?
        .count;

    let mut seen_shards = BTreeSet::new();
    for (number, part) in parts.iter().enumerate() {
        let part_configs: Vec<&str> = part.iter().map(|r| r.info.config.as_str()).collect();
        if part_configs != configs {
            return Err(MergeError::Mismatch(format!(
                "configurations {configs:?} vs {part_configs:?}"
            )));
        }
        let mut part_shard = None;
        for (report, reference) in part.iter().zip(first) {
            let shard = report
                .info
                .shard
                .ok_or(MergeError::NotAShard { part: number + 1 })?;
            if shard.count != count {
                return Err(MergeError::Mismatch(format!(
                    "split into {count} and into {} shards",
                    shard.count
                )));
            }
            if *part_shard.get_or_insert(shard) != shard {
                return Err(MergeError::Mismatch(format!(
                    "part {} mixes shards",
                    number + 1
                )));
            }
            same_run(&reference.info, &report.info)?;
        }
        if let Some(shard) = part_shard {
            if !seen_shards.insert(shard.index) {
                return Err(MergeError::DuplicateShard(shard.to_string()));
            }
        }
    }
    let missing: Vec<String> = (1..=count)
        .filter(|index| !seen_shards.contains(index))
        .map(|index| index.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(MergeError::MissingShards {
            missing: missing.join(", "),
            count,
        });
    }

    let mut merged = Vec::with_capacity(configs.len());
    for position in 0..configs.len() {
        let mut info = parts[0][position].info.clone();
        info.shard = None;
        let mut ids = BTreeSet::new();
        let mut cases = Vec::new();
        for part in &parts {
            for case in &part[position].cases {
                if !ids.insert(case.id.clone()) {
                    return Err(MergeError::DuplicateCase(case.id.clone()));
                }
                cases.push(case.clone());
            }
        }
        merged.push(RunReport::new(info, cases));
    }
    Report::from_reports(merged).ok_or(MergeError::NoParts)
}

fn same_run(a: &RunInfo, b: &RunInfo) -> Result<(), MergeError> {
    let mismatch = |what: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
        Err(MergeError::Mismatch(format!("{what} {x:?} vs {y:?}")))
    };
    if a.dataset_kind != b.dataset_kind {
        return mismatch("dataset", &a.dataset_kind, &b.dataset_kind);
    }
    if a.detector != b.detector {
        return mismatch("detector", &a.detector, &b.detector);
    }
    if a.model != b.model {
        return mismatch("model", &a.model, &b.model);
    }
    if a.runs != b.runs {
        return mismatch("runs", &a.runs, &b.runs);
    }
    if a.diagnosis_method != b.diagnosis_method {
        return mismatch("diagnosis", &a.diagnosis_method, &b.diagnosis_method);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::{case, info};
    use crate::report::Shard;

    fn part(index: u32, ids: &[&str]) -> Report {
        let mut info = info("with_runtime");
        info.shard = Some(Shard { index, count: 2 });
        let cases = ids
            .iter()
            .map(|id| case(id, "g", true, Some(true)))
            .collect();
        Report::from_reports(vec![RunReport::new(info, cases)]).unwrap()
    }

    #[test]
    fn refuses_incomplete_or_overlapping_parts() {
        assert!(matches!(merge(vec![]), Err(MergeError::NoParts)));
        assert!(matches!(
            merge(vec![part(1, &["a"])]),
            Err(MergeError::MissingShards { .. })
        ));
        assert!(matches!(
            merge(vec![part(1, &["a"]), part(1, &["b"])]),
            Err(MergeError::DuplicateShard(_))
        ));
        assert!(matches!(
            merge(vec![part(1, &["a"]), part(2, &["a"])]),
            Err(MergeError::DuplicateCase(_))
        ));
        let mut other_model = part(2, &["b"]);
        if let Report::Single(report) = &mut other_model {
            report.info.model = Some("replay:gemini_2_5_flash".to_owned());
        }
        assert!(matches!(
            merge(vec![part(1, &["a"]), other_model]),
            Err(MergeError::Mismatch(_))
        ));
        let merged = merge(vec![part(2, &["b"]), part(1, &["a"])]).unwrap();
        assert_eq!(merged.reports()[0].info.shard, None);
        assert_eq!(merged.reports()[0].overall.n, 2);
        assert_eq!(merged.reports()[0].cases[0].id, "a");
    }
}
