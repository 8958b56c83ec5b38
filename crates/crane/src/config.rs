//! crane's configuration file: `crane.toml`, or the `[tool.crane]` table of `pyproject.toml`,
//! found as Ruff finds its own: walking up from the notebook's folder, the closest file wins,
//! and in one folder `crane.toml` comes before a `pyproject.toml` (which counts only when it
//! has a `[tool.crane]` table). `--config-file` names the file instead; `--isolated` reads none.
//! Of it, this module reads the rules' settings (`ignore`); the `[llm]` table of `crane.toml`
//! belongs to crane-llm.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use crane_detect::rules::RuleCode;
use crane_detect::suppress::Ignored;

use crate::cli::SuppressArgs;
use crate::exit::Failure;

/// Which configuration file applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigFile {
    /// `--isolated`, or no file found.
    None,
    /// A `crane.toml`: crane's settings at its top level.
    Crane(PathBuf),
    /// A `pyproject.toml`: crane's settings under `[tool.crane]`.
    Pyproject(PathBuf),
}

impl ConfigFile {
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigFile::None => None,
            ConfigFile::Crane(path) | ConfigFile::Pyproject(path) => Some(path),
        }
    }

    /// The file named on the command line (by its name: `pyproject.toml` or crane's own).
    fn named(path: &Path) -> ConfigFile {
        if path
            .file_name()
            .is_some_and(|name| name == "pyproject.toml")
        {
            ConfigFile::Pyproject(path.to_owned())
        } else {
            ConfigFile::Crane(path.to_owned())
        }
    }
}

/// The configuration file for a notebook in `start` (its folder), as `args` choose it.
pub fn choose(args: &SuppressArgs, start: &Path) -> Result<ConfigFile, Failure> {
    if args.isolated {
        return Ok(ConfigFile::None);
    }
    if let Some(path) = &args.config_file {
        if !path.is_file() {
            return Err(Failure::bad_input(anyhow!(
                "--config-file {}: no such file",
                path.display()
            )));
        }
        return Ok(ConfigFile::named(path));
    }
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
    for dir in start.ancestors() {
        let crane = dir.join("crane.toml");
        if crane.is_file() {
            return Ok(ConfigFile::Crane(crane));
        }
        let pyproject = dir.join("pyproject.toml");
        if pyproject.is_file() && read_table(&ConfigFile::Pyproject(pyproject.clone()))?.is_some() {
            return Ok(ConfigFile::Pyproject(pyproject));
        }
    }
    Ok(ConfigFile::None)
}

/// crane's table in `file`: the whole of a `crane.toml`, `[tool.crane]` of a `pyproject.toml`
/// (`None` when it has none).
fn read_table(file: &ConfigFile) -> Result<Option<toml::Table>, Failure> {
    let Some(path) = file.path() else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|err| Failure::bad_input(anyhow!("cannot read {}: {err}", path.display())))?;
    let mut document: toml::Table = toml::from_str(&text).map_err(|err| {
        Failure::bad_input(anyhow!("{} is not valid TOML: {err}", path.display()))
    })?;
    Ok(match file {
        ConfigFile::None => None,
        ConfigFile::Crane(_) => Some(document),
        ConfigFile::Pyproject(_) => match document.remove("tool") {
            Some(toml::Value::Table(mut tool)) => match tool.remove("crane") {
                Some(toml::Value::Table(crane)) => Some(crane),
                Some(_) => {
                    return Err(Failure::bad_input(anyhow!(
                        "{}: `tool.crane` must be a table ([tool.crane])",
                        path.display()
                    )))
                }
                None => None,
            },
            _ => None,
        },
    })
}

/// The keys of crane's table; any other is a typo to report, as under `[llm]`.
const KEYS: &[&str] = &["ignore", "llm"];

/// The rules `file` silences (its `ignore` key); an unknown code or key is an error naming the
/// file and the key.
pub fn ignored_rules(file: &ConfigFile) -> Result<BTreeSet<RuleCode>, Failure> {
    let Some(mut table) = read_table(file)? else {
        return Ok(BTreeSet::new());
    };
    let path = file
        .path()
        .map(|path| path.display().to_string())
        .unwrap_or_default();
    let prefix = match file {
        ConfigFile::Pyproject(_) => "tool.crane.",
        _ => "",
    };
    let error = |message: String| Failure::bad_input(anyhow!("{path}: {message}"));
    if let Some(unknown) = table.keys().find(|key| !KEYS.contains(&key.as_str())) {
        return Err(error(format!(
            "unknown key `{prefix}{unknown}` (crane reads `{prefix}ignore` and `[{prefix}llm]`)"
        )));
    }
    let key = format!("{prefix}ignore");
    let items = match table.remove("ignore") {
        None => return Ok(BTreeSet::new()),
        Some(toml::Value::Array(items)) => items,
        Some(_) => {
            return Err(error(format!(
                "`{key}` must be a list of rule codes, e.g. ignore = [\"PD001\"]"
            )))
        }
    };
    items
        .iter()
        .map(|item| {
            let text = item.as_str().ok_or_else(|| {
                error(format!(
                    "`{key}` must be a list of rule codes (strings), found {item}"
                ))
            })?;
            parse_rule(text).map_err(|reason| error(format!("`{key}`: {reason}")))
        })
        .collect()
}

/// The `[llm]` table of `file` (`[tool.crane.llm]` of a `pyproject.toml`), when it has one.
pub fn llm_settings(file: &ConfigFile) -> Result<Option<crane_llm::LlmSettings>, Failure> {
    match file {
        ConfigFile::None => Ok(None),
        ConfigFile::Crane(path) => crane_llm::LlmSettings::from_crane_toml(path)
            .map(Some)
            .map_err(Failure::bad_input),
        ConfigFile::Pyproject(path) => match read_table(file)?.and_then(|mut t| t.remove("llm")) {
            None => Ok(None),
            Some(table) => table.try_into().map(Some).map_err(|err| {
                Failure::bad_input(anyhow!("{}: [tool.crane.llm]: {err}", path.display()))
            }),
        },
    }
}

/// What the command line and the configuration file silence, for a notebook in `start`.
pub fn ignored(args: &SuppressArgs, start: &Path) -> Result<(Ignored, ConfigFile), Failure> {
    let file = choose(args, start)?;
    let ignored = Ignored {
        flag: args.ignore.iter().copied().collect(),
        config: ignored_rules(&file)?,
    };
    Ok((ignored, file))
}

/// `--ignore`'s value parser: a code (`PD001`, any case) or a rule name (`missing-column`).
pub fn parse_rule(text: &str) -> Result<RuleCode, String> {
    text.trim()
        .to_ascii_lowercase()
        .parse::<RuleCode>()
        .map_err(|_| format!("unknown rule {text:?}: expected a code like `PD001` or a name like `missing-column` (see `crane rules`)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> SuppressArgs {
        SuppressArgs {
            ignore: Vec::new(),
            config_file: None,
            isolated: false,
        }
    }

    #[test]
    fn the_closest_file_wins_and_crane_toml_before_pyproject() {
        let root = tempfile::tempdir().unwrap();
        let inner = root.path().join("a/b");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(root.path().join("crane.toml"), "ignore = [\"PD001\"]\n").unwrap();
        std::fs::write(
            root.path().join("a/pyproject.toml"),
            "[project]\nname = \"x\"\n",
        )
        .unwrap();
        // A pyproject.toml without [tool.crane] does not count.
        assert_eq!(
            choose(&args(), &inner).unwrap(),
            ConfigFile::Crane(root.path().join("crane.toml"))
        );
        std::fs::write(
            root.path().join("a/pyproject.toml"),
            "[tool.crane]\nignore = [\"missing-key\"]\n",
        )
        .unwrap();
        let file = choose(&args(), &inner).unwrap();
        assert_eq!(
            file,
            ConfigFile::Pyproject(root.path().join("a/pyproject.toml"))
        );
        assert_eq!(ignored_rules(&file).unwrap(), [RuleCode::MissingKey].into());
        std::fs::write(root.path().join("a/crane.toml"), "ignore = [\"NP004\"]\n").unwrap();
        let file = choose(&args(), &inner).unwrap();
        assert_eq!(file, ConfigFile::Crane(root.path().join("a/crane.toml")));
        assert_eq!(
            ignored_rules(&file).unwrap(),
            [RuleCode::IndexOutOfBounds].into()
        );
        let isolated = SuppressArgs {
            isolated: true,
            ..args()
        };
        assert_eq!(choose(&isolated, &inner).unwrap(), ConfigFile::None);
    }

    #[test]
    fn bad_settings_name_the_file_and_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crane.toml");
        for (text, expected) in [
            ("ignore = [\"PD999\"]", "`ignore`: unknown rule \"PD999\""),
            ("ignore = \"PD001\"", "`ignore` must be a list"),
            ("ignore = [1]", "must be a list of rule codes (strings)"),
            ("ignore = [", "is not valid TOML"),
            ("ignores = [\"PD001\"]", "unknown key `ignores`"),
        ] {
            std::fs::write(&path, text).unwrap();
            let failure = ignored_rules(&ConfigFile::Crane(path.clone())).unwrap_err();
            let message = failure.message();
            assert_eq!(failure.code, 2);
            assert!(message.contains(&path.display().to_string()), "{message}");
            assert!(message.contains(expected), "{text}: {message}");
        }
        let pyproject = dir.path().join("pyproject.toml");
        std::fs::write(&pyproject, "[tool.crane]\nignore = [\"XX1\"]\n").unwrap();
        let message = ignored_rules(&ConfigFile::Pyproject(pyproject))
            .unwrap_err()
            .message();
        assert!(message.contains("`tool.crane.ignore`"), "{message}");
    }
}
