//! The static side-effect table: what a cell does outside its own process (writes or removes
//! files, talks to the network, runs other programs, runs code crane cannot see), read from its
//! analysis, beside the parsed cell it walks. The dry run refuses a cell it finds effects in
//! where the fork cannot be sealed; the checking kernel names them when a rollback cannot take
//! them back.
//!
//! `origins` maps a cell's root names to what the kernel binds them to, when the kernel was
//! asked ([`names_to_resolve`]); without it names are taken as written.

use std::collections::BTreeMap;
use std::fmt;

use crate::{BindingKind, Call, CellAnalysis, Constant, MagicKind, Operand};

/// An effect of the cell outside its own process, found in its syntax.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideEffect {
    pub kind: SideEffectKind,
    /// 1-based line in the cell.
    pub line: u32,
    /// What does it, as written (`df.to_csv(...)`, `!pip install x`).
    pub what: String,
}

impl fmt::Display for SideEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}` {}", self.line, self.what, self.kind)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideEffectKind {
    WritesFiles,
    Network,
    RunsPrograms,
    /// Runs code crane does not see (`%run script.py`).
    UnanalyzedCode,
}

impl fmt::Display for SideEffectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SideEffectKind::WritesFiles => "writes or removes files",
            SideEffectKind::Network => "talks to the network",
            SideEffectKind::RunsPrograms => "runs or signals other programs",
            SideEffectKind::UnanalyzedCode => "runs code crane cannot analyze",
        })
    }
}

/// Root names of the callees (and of `print(file=...)` targets) whose binding in the kernel
/// tells what a call really is (`rq.get` with `import requests as rq` in an earlier cell).
pub fn names_to_resolve(analysis: &CellAnalysis) -> Vec<String> {
    let mut names: Vec<String> = analysis
        .calls
        .iter()
        .map(|call| root_name(&call.callee).to_owned())
        .chain(
            analysis
                .calls
                .iter()
                .filter_map(|call| keyword(call, "file"))
                .filter_map(|operand| operand.expr.as_deref())
                .map(|expr| root_name(expr).to_owned()),
        )
        .filter(|name| !name.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn root_name(expr: &str) -> &str {
    let end = expr
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(expr.len());
    &expr[..end]
}

/// The effects of a cell outside its own process (files, network, other programs), found in
/// its calls and IPython escapes. `origins` maps root names to what the kernel binds them to
/// (`{"rq": "requests", "df": "pandas.DataFrame", "open": "io.open"}`), so that aliases and
/// names imported in earlier cells are recognized; names absent from it are taken as written.
///
/// Only code the cell runs is seen: the bodies of functions defined in earlier cells, and
/// callbacks created in earlier cells, are not.
pub fn side_effects(
    analysis: &CellAnalysis,
    origins: &BTreeMap<String, String>,
) -> Vec<SideEffect> {
    let mut effects = Vec::new();
    for magic in &analysis.magics {
        if let Some(kind) = magic_effect(magic.kind, &magic.name) {
            let what = match magic.kind {
                MagicKind::Shell => format!("!{} {}", magic.name, magic.args),
                MagicKind::CellMagic => format!("%%{} {}", magic.name, magic.args),
                _ => format!("%{} {}", magic.name, magic.args),
            };
            effects.push(SideEffect {
                kind,
                line: magic.line,
                what: what.trim_end().to_owned(),
            });
        }
    }
    let defined_in_cell: Vec<&str> = analysis
        .bindings
        .iter()
        .filter(|binding| {
            matches!(
                binding.kind,
                BindingKind::FunctionDef | BindingKind::ClassDef
            )
        })
        .map(|binding| binding.name.as_str())
        .collect();
    // The bodies of the cell's own functions and classes are analyzed where they are called.
    for call in analysis
        .calls
        .iter()
        .filter(|call| !defined_in_cell.contains(&call.callee.as_str()))
    {
        let qualified = qualify(&call.callee, origins);
        if let Some(kind) = call_effect(call, &qualified, origins) {
            effects.push(SideEffect {
                kind,
                line: call.line,
                what: format!("{}(...)", call.callee),
            });
        }
    }
    effects.sort_by_key(|effect| effect.line);
    effects.dedup();
    effects
}

const SHELL_CELL_MAGICS: &[&str] = &[
    "bash", "sh", "script", "system", "sx", "perl", "ruby", "python", "python2", "python3", "pypy",
];
const FILE_CELL_MAGICS: &[&str] = &["writefile", "file"];
const PROGRAM_LINE_MAGICS: &[&str] = &[
    "system",
    "sx",
    "pip",
    "conda",
    "mamba",
    "micromamba",
    "uv",
    "sc",
];
const FILE_LINE_MAGICS: &[&str] = &[
    "save",
    "store",
    "logstart",
    "bookmark",
    "rm",
    "rmdir",
    "mv",
    "cp",
    "mkdir",
    "touch",
    "writefile",
];

fn magic_effect(kind: MagicKind, name: &str) -> Option<SideEffectKind> {
    match kind {
        MagicKind::Shell => Some(SideEffectKind::RunsPrograms),
        MagicKind::CellMagic if SHELL_CELL_MAGICS.contains(&name) => {
            Some(SideEffectKind::RunsPrograms)
        }
        MagicKind::CellMagic if FILE_CELL_MAGICS.contains(&name) => {
            Some(SideEffectKind::WritesFiles)
        }
        MagicKind::LineMagic if PROGRAM_LINE_MAGICS.contains(&name) => {
            Some(SideEffectKind::RunsPrograms)
        }
        MagicKind::LineMagic if FILE_LINE_MAGICS.contains(&name) => {
            Some(SideEffectKind::WritesFiles)
        }
        MagicKind::LineMagic if name == "run" => Some(SideEffectKind::UnanalyzedCode),
        _ => None,
    }
}

/// The callee with its root name replaced by what the kernel binds it to, and the platform
/// modules of `os` functions (`posix.remove`) spelled as `os`.
fn qualify(callee: &str, origins: &BTreeMap<String, String>) -> String {
    let root = root_name(callee);
    let qualified = match origins.get(root) {
        Some(origin) => format!("{origin}{}", &callee[root.len()..]),
        None => callee.to_owned(),
    };
    match qualified.split_once('.') {
        Some(("posix" | "nt", rest)) => format!("os.{rest}"),
        _ => qualified,
    }
}

/// Modules whose every call talks to the network.
const NETWORK_MODULES: &[&str] = &[
    "requests",
    "urllib.request",
    "urllib3",
    "http.client",
    "httpx",
    "aiohttp",
    "socket",
    "ftplib",
    "smtplib",
    "poplib",
    "imaplib",
    "telnetlib",
    "paramiko",
    "boto3",
    "botocore",
    "wget",
    "gdown",
    "kaggle",
    "kagglehub",
    "huggingface_hub",
    "webbrowser",
    "tensorflow_datasets",
];
/// Functions that download (or may, when nothing is cached yet).
const DOWNLOADERS: &[&str] = &[
    "download",
    "get_file",
    "from_pretrained",
    "load_dataset",
    "urlopen",
    "urlretrieve",
];
const URL_SCHEMES: &[&str] = &["http://", "https://", "ftp://", "s3://", "gs://", "hf://"];

const PROGRAM_MODULES: &[&str] = &["subprocess", "pty", "multiprocessing.connection"];
const PROGRAM_FUNCTIONS: &[&str] = &[
    "os.system",
    "os.popen",
    "os.kill",
    "os.killpg",
    "os.startfile",
    "os.posix_spawn",
    "os.posix_spawnp",
];
const PROGRAM_FUNCTION_PREFIXES: &[&str] = &["os.spawn", "os.exec"];

const FILE_FUNCTIONS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rmdir",
    "os.removedirs",
    "os.mkdir",
    "os.makedirs",
    "os.rename",
    "os.renames",
    "os.replace",
    "os.chmod",
    "os.chown",
    "os.lchown",
    "os.link",
    "os.symlink",
    "os.truncate",
    "os.utime",
    "os.mkfifo",
    "os.mknod",
    "os.open",
    "sqlite3.connect",
];
/// `shutil` functions that only read.
const SHUTIL_READERS: &[&str] = &[
    "which",
    "disk_usage",
    "get_terminal_size",
    "get_archive_formats",
    "get_unpack_formats",
];
/// `pathlib` methods that change the file system.
const PATH_WRITERS: &[&str] = &[
    "write_text",
    "write_bytes",
    "mkdir",
    "touch",
    "unlink",
    "rmdir",
    "rename",
    "replace",
    "symlink_to",
    "hardlink_to",
    "chmod",
    "lchmod",
];
/// Methods that write whatever they are called on.
const WRITER_METHODS: &[&str] = &[
    "to_excel",
    "to_pickle",
    "to_hdf",
    "to_feather",
    "to_stata",
    "to_sql",
    "to_netcdf",
    "to_zarr",
    "to_file",
    "savefig",
    "imsave",
    "imwrite",
    "save",
    "save_model",
    "save_weights",
    "save_pretrained",
    "savetxt",
    "savez",
    "savez_compressed",
    "tofile",
    "write_text",
    "write_bytes",
    "write_image",
    "write_html",
    "ModelCheckpoint",
    "TensorBoard",
    "CSVLogger",
    "BackupAndRestore",
    "SummaryWriter",
    "create_file_writer",
];
/// Methods that write when given a destination, and return text or bytes otherwise.
const DESTINATION_WRITERS: &[&str] = &[
    "to_csv",
    "to_json",
    "to_html",
    "to_latex",
    "to_markdown",
    "to_string",
    "to_xml",
    "to_parquet",
    "to_orc",
];
const DESTINATION_KEYWORDS: &[&str] = &["path_or_buf", "buf", "path", "fname", "excel_writer"];
/// `dump(obj, file)` of pickle, json, joblib, yaml, marshal.
const DUMP_KEYWORDS: &[&str] = &["file", "fp", "filename", "stream"];
/// Functions that open files, with the position of their mode argument.
const OPENERS: &[(&str, usize)] = &[
    ("open", 1),
    ("io.open", 1),
    ("codecs.open", 1),
    ("gzip.open", 1),
    ("bz2.open", 1),
    ("lzma.open", 1),
    ("tarfile.open", 1),
    ("zipfile.ZipFile", 1),
    ("h5py.File", 1),
    ("shelve.open", 1),
    ("dbm.open", 1),
];
/// Openers whose default mode creates the file.
const CREATING_OPENERS: &[&str] = &["shelve.open", "dbm.open"];
const STANDARD_STREAMS: &[&str] = &[
    "sys.stdout",
    "sys.stderr",
    "sys.__stdout__",
    "sys.__stderr__",
];

fn call_effect(
    call: &Call,
    qualified: &str,
    origins: &BTreeMap<String, String>,
) -> Option<SideEffectKind> {
    let method = call
        .method
        .as_deref()
        .unwrap_or_else(|| qualified.rsplit('.').next().unwrap_or(qualified));
    let module_is = |module: &str| {
        qualified == module
            || qualified
                .strip_prefix(module)
                .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('('))
    };

    if NETWORK_MODULES.iter().any(|module| module_is(module))
        || DOWNLOADERS.contains(&method)
        || method.starts_with("fetch_") && qualified.contains("sklearn")
        || method == "load_data" && qualified.contains(".datasets")
        || is_true(keyword(call, "download"))
        || arguments(call).any(is_url)
    {
        return Some(SideEffectKind::Network);
    }
    if PROGRAM_MODULES.iter().any(|module| module_is(module))
        || PROGRAM_FUNCTIONS.contains(&qualified)
        || PROGRAM_FUNCTION_PREFIXES
            .iter()
            .any(|prefix| qualified.starts_with(prefix))
    {
        return Some(SideEffectKind::RunsPrograms);
    }
    if FILE_FUNCTIONS.contains(&qualified) && !is_in_memory_database(call, qualified)
        || module_is("shutil") && !SHUTIL_READERS.contains(&method)
        || module_is("pathlib") && PATH_WRITERS.contains(&method)
        || qualified == "os.write" && !writes_standard_stream(call)
        || opens_for_writing(call, qualified)
        || WRITER_METHODS.contains(&method)
        || DESTINATION_WRITERS.contains(&method) && has_destination(call)
        || method == "dump" && (call.args.len() >= 2 || has_keyword(call, DUMP_KEYWORDS))
        || matches!(method, "write" | "writelines")
            && !qualified.starts_with("os.")
            && !call
                .receiver
                .as_deref()
                .is_some_and(|receiver| is_standard_stream(&qualify(receiver, origins)))
        || method == "print"
            && keyword(call, "file").is_some_and(|file| !is_standard_stream_operand(file, origins))
    {
        return Some(SideEffectKind::WritesFiles);
    }
    None
}

fn arguments(call: &Call) -> impl Iterator<Item = &Operand> {
    call.args
        .iter()
        .chain(call.keywords.iter().map(|keyword| &keyword.value))
}

fn keyword<'c>(call: &'c Call, name: &str) -> Option<&'c Operand> {
    call.keywords
        .iter()
        .find(|keyword| keyword.name.as_deref() == Some(name))
        .map(|keyword| &keyword.value)
}

fn has_keyword(call: &Call, names: &[&str]) -> bool {
    names.iter().any(|name| keyword(call, name).is_some())
}

fn string_constant(operand: &Operand) -> Option<&str> {
    match &operand.constant {
        Some(Constant::Str(text)) => Some(text),
        _ => None,
    }
}

fn is_true(operand: Option<&Operand>) -> bool {
    operand.is_some_and(|operand| {
        operand.constant != Some(Constant::Bool(false)) && operand.constant != Some(Constant::None)
    })
}

fn is_url(operand: &Operand) -> bool {
    string_constant(operand).is_some_and(|text| {
        let text = text.trim_start().to_ascii_lowercase();
        URL_SCHEMES.iter().any(|scheme| text.starts_with(scheme))
    })
}

fn is_in_memory_database(call: &Call, qualified: &str) -> bool {
    qualified == "sqlite3.connect"
        && call
            .args
            .first()
            .and_then(string_constant)
            .is_some_and(|target| target == ":memory:")
}

fn writes_standard_stream(call: &Call) -> bool {
    matches!(
        call.args.first().and_then(|fd| fd.constant.as_ref()),
        Some(Constant::Int(1 | 2))
    )
}

fn is_standard_stream(qualified: &str) -> bool {
    STANDARD_STREAMS.contains(&qualified)
}

fn is_standard_stream_operand(operand: &Operand, origins: &BTreeMap<String, String>) -> bool {
    operand.constant == Some(Constant::None)
        || operand
            .expr
            .as_deref()
            .is_some_and(|expr| is_standard_stream(&qualify(expr, origins)))
}

fn has_destination(call: &Call) -> bool {
    call.args
        .first()
        .is_some_and(|first| first.constant != Some(Constant::None))
        || DESTINATION_KEYWORDS.iter().any(|name| {
            keyword(call, name).is_some_and(|value| value.constant != Some(Constant::None))
        })
}

/// An opener called with a mode that writes, creates or appends, or with a mode crane cannot
/// read from the syntax.
fn opens_for_writing(call: &Call, qualified: &str) -> bool {
    let path_open = qualified.starts_with("pathlib.") && qualified.ends_with(".open");
    let position = if path_open {
        0
    } else {
        match OPENERS.iter().find(|(name, _)| *name == qualified) {
            Some((_, position)) => *position,
            None => return false,
        }
    };
    let mode = keyword(call, "mode").or_else(|| call.args.get(position));
    match mode {
        None => CREATING_OPENERS.contains(&qualified),
        Some(mode) => match string_constant(mode) {
            Some(mode) => mode.contains(['w', 'a', 'x', '+', 'c', 'n']),
            None => true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn effects(code: &str, origins: &[(&str, &str)]) -> Vec<(u32, SideEffectKind)> {
        let analysis = crate::analyze_cell(code).expect("parses");
        let origins = origins
            .iter()
            .map(|(name, origin)| (name.to_string(), origin.to_string()))
            .collect();
        side_effects(&analysis, &origins)
            .into_iter()
            .map(|effect| (effect.line, effect.kind))
            .collect()
    }

    use SideEffectKind::*;

    #[test]
    fn file_writes_are_found_by_mode_method_and_module() {
        let code = "with open('out.txt', 'w') as f:\n    f.write('x')\n\
                    df.to_csv('out.csv')\nplt.savefig('p.png')\nos.remove('a')\n\
                    shutil.rmtree('d')\nnp.save('a.npy', a)\npickle.dump(m, fh)\n\
                    Path('x').write_text('y')\nmodel.save('m.keras')";
        assert_eq!(
            effects(code, &[("Path", "pathlib.Path"), ("os", "os")]),
            (1..=10).map(|line| (line, WritesFiles)).collect::<Vec<_>>()
        );
    }

    #[test]
    fn reading_and_returning_text_are_not_side_effects() {
        let code = "with open('in.txt') as f:\n    text = f.read()\n\
                    s = df.to_csv()\nj = df.to_json()\nd = json.dumps(x)\n\
                    print('hi')\nsys.stdout.write('x')\nprint('e', file=sys.stderr)\n\
                    df2 = df.rename(columns={'a': 'b'}).replace(0, 1)\n\
                    shutil.which('ls')\nopen('in.txt', mode='rb')\nos.path.exists('x')\n\
                    con = sqlite3.connect(':memory:')";
        assert_eq!(effects(code, &[("sys", "sys")]), vec![]);
    }

    #[test]
    fn network_and_programs_are_found_through_aliases_in_earlier_cells() {
        let code = "r = rq.get(url)\nurlretrieve(u, 'f')\ndata = pd.read_csv('https://x/y.csv')\n\
                    run(['ls'])\nsock = socket.socket()\nX = fetch_openml('mnist')\n\
                    ds = MNIST('.', download=True)\nos.system('ls')\n(x, y), _ = mnist.load_data()";
        let origins = [
            ("rq", "requests"),
            ("urlretrieve", "urllib.request.urlretrieve"),
            ("run", "subprocess.run"),
            ("fetch_openml", "sklearn.datasets._openml.fetch_openml"),
            ("mnist", "keras.api.datasets.mnist"),
            ("os", "os"),
        ];
        assert_eq!(
            effects(code, &origins),
            vec![
                (1, Network),
                (2, Network),
                (3, Network),
                (4, RunsPrograms),
                (5, Network),
                (6, Network),
                (7, Network),
                (8, RunsPrograms),
                (9, Network)
            ]
        );
    }

    #[test]
    fn os_functions_imported_by_name_resolve_through_posix() {
        assert_eq!(
            effects(
                "remove('x')\ngetcwd()",
                &[("remove", "posix.remove"), ("getcwd", "posix.getcwd")]
            ),
            vec![(1, WritesFiles)]
        );
    }

    #[test]
    fn writing_through_a_file_object_from_an_earlier_cell_is_found() {
        assert_eq!(
            effects(
                "log.write('x')\nprint('y', file=log)",
                &[("log", "_io.TextIOWrapper")]
            ),
            vec![(1, WritesFiles), (2, WritesFiles)]
        );
    }

    #[test]
    fn unknown_open_modes_count_as_writes() {
        assert_eq!(effects("open(p, mode)", &[]), vec![(1, WritesFiles)]);
        assert_eq!(effects("open(p, 'a+')", &[]), vec![(1, WritesFiles)]);
        assert_eq!(effects("open(p, 'r')", &[]), vec![]);
    }

    #[test]
    fn shell_escapes_and_magics_are_side_effects() {
        let code = "!pip install x\n%pip install y\n%run other.py\n%time df.to_parquet('a.pq')\n%matplotlib inline";
        assert_eq!(
            effects(code, &[]),
            vec![
                (1, RunsPrograms),
                (2, RunsPrograms),
                (3, UnanalyzedCode),
                (4, WritesFiles)
            ]
        );
        assert_eq!(effects("%%bash\nrm -rf x", &[]), vec![(1, RunsPrograms)]);
        assert_eq!(
            effects("%%writefile a.py\nx = 1", &[]),
            vec![(1, WritesFiles)]
        );
    }

    #[test]
    fn calls_inside_functions_the_cell_calls_count() {
        let code =
            "def save(d):\n    d.to_csv('x.csv')\n\ndef unused():\n    os.remove('y')\n\nsave(df)";
        assert_eq!(effects(code, &[]), vec![(2, WritesFiles)]);
    }

    #[test]
    fn names_to_resolve_are_callee_roots_and_print_files() {
        let analysis =
            crate::analyze_cell("rq.get(u).json()\nprint(1, file=log)\nf(x)").expect("parses");
        assert_eq!(names_to_resolve(&analysis), vec!["f", "log", "print", "rq"]);
    }
}
