//! The Python files crane joins into each module it injects into the kernel (the probe, the
//! dry-run module) fit together: the files are found in the joined sources exactly as the Rust
//! code concatenates them, and the project's Python reads the joined text with `ast` and
//! `symtable` for a module-level name bound twice (the later binding silently replaces the
//! earlier one for every file's functions), a name read at import before any earlier file or
//! line binds it, and a name a function reads that no file of the module binds and no builtin
//! provides (a typo, or a name of another file that is not joined into this module).
//!
//! Findings that are deliberate, or that sit in files whose owners fold them in separately,
//! are listed in [`ALLOWED`] with the reason; a deliberate entry that no longer matches fails
//! too.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crane_probe::dry_run::DRY_RUN_SOURCE;
use crane_probe::PROBE_SOURCE;
use serde::Deserialize;

/// A finding the check accepts.
struct Allowed {
    module: &'static str,
    kind: &'static str,
    name: &'static str,
    /// The file of the second binding, or of the read.
    file: &'static str,
    /// Deliberate: the entry must still match (one the code outgrew fails). Otherwise a finding
    /// in a file whose owners fold it in separately, which may be gone already.
    deliberate: bool,
}

const ALLOWED: &[Allowed] = &[
    // `__builtins__` may be the builtins module rather than its dict: the second assignment
    // replaces the module by its namespace.
    Allowed {
        module: "probe",
        kind: "defined-twice",
        name: "_own_builtins",
        file: "crane_guard.py",
        deliberate: true,
    },
    Allowed {
        module: "dry-run",
        kind: "defined-twice",
        name: "_own_builtins",
        file: "crane_guard.py",
        deliberate: true,
    },
    // Not yet folded in: two module-level loops share a loop variable, which stays bound in
    // the module.
    Allowed {
        module: "dry-run",
        kind: "defined-twice",
        name: "_name",
        file: "crane_allowlist.py",
        deliberate: false,
    },
];

/// What the Python check reports.
#[derive(Debug, Deserialize)]
struct Finding {
    kind: String,
    name: String,
    file: String,
    line: usize,
    detail: String,
}

#[test]
fn the_probe_files_fit_together() {
    check_module("probe", PROBE_SOURCE);
}

#[test]
fn the_dry_run_module_files_fit_together() {
    check_module("dry-run", DRY_RUN_SOURCE);
}

/// Every Python file of the crate is joined into at least one module: none is left behind
/// when a list changes.
#[test]
fn every_python_file_is_joined_into_a_module() {
    let mut used = Vec::new();
    for source in [PROBE_SOURCE, DRY_RUN_SOURCE] {
        used.extend(split_into_files(source).into_iter().map(|(name, _)| name));
    }
    let unused: Vec<String> = python_files()
        .into_keys()
        .filter(|name| !used.contains(name))
        .collect();
    assert!(
        unused.is_empty(),
        "Python files no module joins: {unused:?}"
    );
}

fn check_module(module: &str, source: &str) {
    let files = split_into_files(source);
    let findings = run_check(&files);
    let matches = |entry: &Allowed, finding: &Finding| {
        entry.module == module
            && entry.kind == finding.kind
            && entry.name == finding.name
            && entry.file == finding.file
    };
    let unexpected: Vec<String> = findings
        .iter()
        .filter(|finding| !ALLOWED.iter().any(|entry| matches(entry, finding)))
        .map(|f| {
            format!(
                "{}:{}: {} `{}`: {}",
                f.file, f.line, f.kind, f.name, f.detail
            )
        })
        .collect();
    let outgrown: Vec<String> = ALLOWED
        .iter()
        .filter(|entry| entry.module == module && entry.deliberate)
        .filter(|entry| !findings.iter().any(|finding| matches(entry, finding)))
        .map(|entry| format!("{}: {} `{}`", entry.file, entry.kind, entry.name))
        .collect();
    assert!(
        unexpected.is_empty(),
        "the {module} module's files do not fit together:\n{}",
        unexpected.join("\n")
    );
    assert!(
        outgrown.is_empty(),
        "deliberate findings of the {module} module no longer found (remove them from \
         ALLOWED): {outgrown:?}"
    );
}

/// The crate's Python files, by path relative to `python/`, with their text.
fn python_files() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("the python directory reads") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "py") {
                let name = path.strip_prefix(root).expect("under python/");
                let text = std::fs::read_to_string(&path).expect("a Python file reads");
                out.insert(name.to_string_lossy().into_owned(), text);
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python");
    let mut files = BTreeMap::new();
    walk(&root, &root, &mut files);
    files
}

/// The files whose concatenation is `source`, in order: at each point the longest file whose
/// whole text comes next. Fails when some part of the source is no file's text.
fn split_into_files(source: &str) -> Vec<(String, String)> {
    let files = python_files();
    let mut rest = source;
    let mut joined = Vec::new();
    while !rest.is_empty() {
        let next = files
            .iter()
            .filter(|(_, text)| !text.is_empty() && rest.starts_with(text.as_str()))
            .max_by_key(|(_, text)| text.len());
        let Some(next) = next else {
            let after: Vec<&String> = joined.iter().map(|(name, _)| name).collect();
            let line = rest.lines().next();
            panic!("no Python file comes next in the joined source after {after:?}: {line:?}");
        };
        joined.push((next.0.clone(), next.1.clone()));
        rest = &rest[next.1.len()..];
    }
    joined
}

fn run_check(files: &[(String, String)]) -> Vec<Finding> {
    let input = serde_json::to_vec(files).expect("the files serialize");
    let mut child = Command::new(common::project_python())
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the project's Python starts");
    child
        .stdin
        .take()
        .expect("a stdin pipe")
        .write_all(&input)
        .expect("the files reach the check");
    let output = child.wait_with_output().expect("the check ends");
    assert!(
        output.status.success(),
        "the check failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("the check answers JSON findings")
}

/// The check itself, run by the project's Python.
const CHECK: &str = r##"import ast, builtins, json, symtable, sys

# Input (stdin, JSON): [[file, text], ...] in the order they are joined. Output (stdout, JSON):
# the findings, each {"kind", "name", "file", "line", "detail"}: "defined-twice" (a module-level
# name bound by two statements of the joined text; importing the same module under the same
# name again is none), "read-before-definition" (a name code that runs at import reads before
# any statement binds it), "never-defined" (a name a function reads that nothing in the module
# binds and that is no builtin), "no-final-newline" (the file's last line would run into the
# next file's first).
files = json.load(sys.stdin)
joined = "".join(text for _, text in files)
starts = []
line = 1
for name, text in files:
    starts.append((line, name))
    line += text.count("\n")


def where(lineno):
    file, first = starts[0][1], starts[0][0]
    for start, name in starts:
        if start <= lineno:
            file, first = name, start
    return file, lineno - first + 1


findings = []


def report(kind, name, lineno, detail=""):
    file, line = where(lineno)
    findings.append({"kind": kind, "name": name, "file": file, "line": line, "detail": detail})


for name, text in files:
    if not text.endswith("\n"):
        findings.append({"kind": "no-final-newline", "name": name, "file": name, "line": text.count("\n") + 1, "detail": ""})

tree = ast.parse(joined)
KNOWN = set(dir(builtins)) | {"__name__", "__doc__", "__package__", "__loader__", "__spec__", "__builtins__"}
future_annotations = any(
    isinstance(node, ast.ImportFrom) and node.module == "__future__" and any(a.name == "annotations" for a in node.names)
    for node in tree.body
)


def targets(node):
    """Names a store target binds."""
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in targets(e)]
    if isinstance(node, ast.Starred):
        return targets(node.value)
    return []


def loads(node, local=frozenset()):
    """The names an expression reads when it runs, with their lines: lambda bodies are left
    out (they run later), a comprehension's own variables are its own."""
    out = []

    def visit(n, local):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load) and n.id not in local:
                out.append((n.id, n.lineno))
            return
        if isinstance(n, ast.Lambda):
            for d in n.args.defaults + [d for d in n.args.kw_defaults if d is not None]:
                visit(d, local)
            return
        if isinstance(n, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            own = set(local)
            for g in n.generators:
                visit(g.iter, own)
                own |= {t.id for t in targets(g.target)}
                for c in g.ifs:
                    visit(c, own)
            for part in ("elt", "key", "value"):
                if getattr(n, part, None) is not None:
                    visit(getattr(n, part), own)
            return
        for child in ast.iter_child_nodes(n):
            visit(child, local)

    visit(node, local)
    return out


def signature_loads(node, local):
    """What a def statement evaluates: decorators, defaults and (without the future import)
    annotations."""
    out = []
    for d in node.decorator_list:
        out += loads(d, local)
    args = node.args
    for d in args.defaults + [d for d in args.kw_defaults if d is not None]:
        out += loads(d, local)
    if not future_annotations:
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
            if a is not None and a.annotation is not None:
                out += loads(a.annotation, local)
        if node.returns is not None:
            out += loads(node.returns, local)
    return out


class Module:
    """The module's top level, run statement by statement."""

    def __init__(self):
        self.imported = {}  # name -> the module an import bound it to, None for other bindings

    def read(self, pairs, defined):
        for name, lineno in pairs:
            if name not in defined and name not in KNOWN:
                report("read-before-definition", name, lineno, "read at import before any definition")

    def bind(self, name, lineno, defined, branch, module=None):
        """Binds `name`; `module` is what an import binds it to: importing the same module
        under the same name again binds the same object, and is no second definition."""
        if name in defined and not (module is not None and self.imported.get(name) == module):
            file, line = where(defined[name])
            report("defined-twice", name, lineno, f"first defined at {file}:{line}")
        defined[name] = lineno
        self.imported[name] = module
        branch.add(name)

    def run(self, body, defined, branch):
        for stmt in body:
            self.statement(stmt, defined, branch)

    def alternatives(self, bodies, defined, branch):
        """Branches of which one runs: a name bound in two of them is bound once."""
        after = dict(defined)
        for body in bodies:
            mine = dict(defined)
            self.run(body, mine, set(branch))
            for name, lineno in mine.items():
                if name not in defined or defined[name] != lineno:
                    after.setdefault(name, lineno)
                    branch.add(name)
        defined.clear()
        defined.update(after)

    def statement(self, s, defined, branch):
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.read(signature_loads(s, frozenset()), defined)
            self.bind(s.name, s.lineno, defined, branch)
        elif isinstance(s, ast.ClassDef):
            pairs = []
            for n in s.decorator_list + s.bases + [k.value for k in s.keywords]:
                pairs += loads(n)
            self.read(pairs, defined)
            self.class_body(s.body, defined)
            self.bind(s.name, s.lineno, defined, branch)
        elif isinstance(s, ast.Import):
            for alias in s.names:
                module = alias.name if alias.asname else alias.name.split(".")[0]
                self.bind(alias.asname or module, s.lineno, defined, branch, ("import", module))
        elif isinstance(s, ast.ImportFrom):
            for alias in s.names:
                source = ("from", s.level, s.module, alias.name)
                self.bind(alias.asname or alias.name, s.lineno, defined, branch, source)
        elif isinstance(s, ast.Assign):
            self.read(loads(s.value) + [p for t in s.targets for p in loads(t)], defined)
            for t in s.targets:
                for n in targets(t):
                    self.bind(n.id, s.lineno, defined, branch)
        elif isinstance(s, ast.AnnAssign):
            self.read(loads(s.value) if s.value else [], defined)
            if s.value is not None and isinstance(s.target, ast.Name):
                self.bind(s.target.id, s.lineno, defined, branch)
        elif isinstance(s, ast.AugAssign):
            self.read(loads(s.value) + [(n.id, s.lineno) for n in targets(s.target)] + loads(s.target), defined)
        elif isinstance(s, ast.Delete):
            self.read([p for t in s.targets for p in loads(t)], defined)
            for t in s.targets:
                for n in targets(t):
                    defined.pop(n.id, None)
                    branch.discard(n.id)
        elif isinstance(s, ast.If):
            self.read(loads(s.test), defined)
            self.alternatives([s.body, s.orelse], defined, branch)
        elif isinstance(s, ast.Try):
            self.alternatives([s.body + s.orelse] + [h.body for h in s.handlers], defined, branch)
            self.run(s.finalbody, defined, branch)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            self.read(loads(s.iter), defined)
            loop = set(branch)
            for n in targets(s.target):
                self.bind(n.id, s.lineno, defined, loop)
            self.run(s.body + s.orelse, defined, loop)
            branch |= loop
        elif isinstance(s, ast.While):
            self.read(loads(s.test), defined)
            loop = set(branch)
            self.run(s.body + s.orelse, defined, loop)
            branch |= loop
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                self.read(loads(item.context_expr), defined)
                if item.optional_vars is not None:
                    for n in targets(item.optional_vars):
                        self.bind(n.id, s.lineno, defined, branch)
            self.run(s.body, defined, branch)
        elif isinstance(s, (ast.Global, ast.Nonlocal, ast.Pass)):
            pass
        else:
            self.read(loads(s), defined)
        for n in ast.walk(s):
            if isinstance(n, ast.NamedExpr) and not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bind(n.target.id, n.lineno, defined, branch)

    def class_body(self, body, defined):
        """A class body runs at import: its names resolve in the class's own namespace first."""
        local = set()
        for s in body:
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pairs = signature_loads(s, frozenset(local))
                bound = [s.name]
            elif isinstance(s, ast.ClassDef):
                pairs = [p for n in s.decorator_list + s.bases for p in loads(n, frozenset(local))]
                self.class_body(s.body, {**defined, **{n: 0 for n in local}})
                bound = [s.name]
            elif isinstance(s, ast.Assign):
                pairs = loads(s.value, frozenset(local))
                bound = [n.id for t in s.targets for n in targets(t)]
            elif isinstance(s, ast.AnnAssign):
                pairs = loads(s.value, frozenset(local)) if s.value else []
                bound = [s.target.id] if isinstance(s.target, ast.Name) and s.value else []
            else:
                pairs = loads(s, frozenset(local))
                bound = [n.id for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
            self.read(pairs, defined)
            local |= set(bound)


Module().run(tree.body, {}, set())

# Every name the module binds anywhere at its top level, or in a function through `global`.
module_names = set()
top = symtable.symtable(joined, "<joined>", "exec")
for symbol in top.get_symbols():
    if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace():
        module_names.add(symbol.get_name())


def scopes(table):
    for child in table.get_children():
        yield child
        yield from scopes(child)


for table in scopes(top):
    for symbol in table.get_symbols():
        name = symbol.get_name()
        if symbol.is_global() and (symbol.is_assigned() or symbol.is_declared_global()):
            module_names.add(name)

seen = set()
for table in scopes(top):
    if table.get_type() == "class":
        continue  # a class body runs at import: checked in order above
    for symbol in table.get_symbols():
        name = symbol.get_name()
        if symbol.is_referenced() and symbol.is_global() and name not in module_names and name not in KNOWN:
            key = (name, table.get_lineno())
            if key not in seen:
                seen.add(key)
                lines = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name and n.lineno >= key[1]]
                report("never-defined", name, min(lines, default=key[1]), f"read in {table.get_name()}(), defined by no file")

json.dump(findings, sys.stdout)
"##;
