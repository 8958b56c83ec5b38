//! Tricky cells: scoping, IPython syntax, expression strings, and bindings across cells.

use crane_analysis::bounds::Unanalysable;
use crane_analysis::{
    analyze_cell, bindings, targets_for_probe, AnalysisError, BindingKind, CellAnalysis, Constant,
    ExprKind, Indexer, Location, MagicKind, NameState, SyntaxError,
};

fn analyze(source: &str) -> CellAnalysis {
    analyze_cell(source).unwrap_or_else(|error| panic!("{source:?} should parse: {error}"))
}

fn reads(analysis: &CellAnalysis) -> Vec<&str> {
    analysis
        .reads
        .iter()
        .map(|read| read.name.as_str())
        .collect()
}

fn local_reads(analysis: &CellAnalysis) -> Vec<(&str, u32, u32)> {
    analysis
        .local_reads
        .iter()
        .map(|read| (read.name.as_str(), read.line, read.bound_on_line))
        .collect()
}

fn bound(analysis: &CellAnalysis) -> Vec<(&str, u32, BindingKind)> {
    analysis
        .bindings
        .iter()
        .map(|binding| (binding.name.as_str(), binding.line, binding.kind))
        .collect()
}

fn read_line(analysis: &CellAnalysis, name: &str) -> u32 {
    analysis
        .reads
        .iter()
        .find(|read| read.name == name)
        .unwrap_or_else(|| panic!("{name} is not read"))
        .line
}

#[test]
fn a_name_read_before_its_assignment_is_a_dependency() {
    let analysis = analyze("x = x + 1");
    assert_eq!(reads(&analysis), ["x"]);
    assert_eq!(bound(&analysis), [("x", 1, BindingKind::Assignment)]);
    assert!(analysis.local_reads.is_empty());
}

#[test]
fn a_name_bound_earlier_in_the_cell_is_local() {
    let analysis = analyze("y = 1\nprint(y)");
    assert_eq!(reads(&analysis), ["print"]);
    assert!(analysis.reads[0].builtin);
    assert_eq!(local_reads(&analysis), [("y", 2, 1)]);
}

#[test]
fn a_global_read_then_rebound_then_read_is_both() {
    let analysis = analyze("print(df)\ndf = df.dropna()\ndf.head()");
    assert_eq!(reads(&analysis), ["print", "df"]);
    assert_eq!(local_reads(&analysis), [("df", 3, 2)]);
    // `df.head` is read from the cell's own df, so it is not a runtime-fact key.
    let attributes: Vec<&str> = analysis
        .attributes
        .iter()
        .map(|a| a.expr.as_str())
        .collect();
    assert_eq!(attributes, ["df.dropna"]);
}

#[test]
fn function_bodies_count_only_when_called() {
    let uncalled = analyze("def f():\n    return undefined_thing\n");
    assert!(reads(&uncalled).is_empty());
    assert_eq!(bound(&uncalled), [("f", 1, BindingKind::FunctionDef)]);

    let called = analyze("def f():\n    return undefined_thing\n\nf()\n");
    assert_eq!(reads(&called), ["undefined_thing"]);
    let read = &called.reads[0];
    assert_eq!(read.line, 2);
    let via = read.called_from.as_ref().expect("read through the call");
    assert_eq!((via.function.as_str(), via.line), ("f", 4));
}

#[test]
fn a_function_sees_names_bound_before_it_is_called() {
    let analysis = analyze("def f():\n    return x\nx = 1\nf()");
    assert!(reads(&analysis).is_empty());
    assert_eq!(local_reads(&analysis), [("f", 4, 1), ("x", 2, 3)]);
}

#[test]
fn nested_functions_and_locals() {
    let source = "\
def outer(scale):
    def inner(v):
        return v * a + b
    c = 1
    return inner(scale) + c + missing_in_outer
outer(2)
";
    let analysis = analyze(source);
    assert_eq!(reads(&analysis), ["a", "b", "missing_in_outer"]);
    let inner = analysis.reads.iter().find(|r| r.name == "a").unwrap();
    assert_eq!(inner.called_from.as_ref().unwrap().function, "inner");
    assert_eq!(inner.line, 3);
}

#[test]
fn functions_calling_functions_and_recursion() {
    let source = "\
def g():
    return weights
def f(n):
    return 1 if n <= 1 else n * f(n - 1) + g()
f(3)
";
    let analysis = analyze(source);
    assert_eq!(reads(&analysis), ["weights"]);
    assert_eq!(
        analysis.reads[0].called_from.as_ref().unwrap().function,
        "g"
    );
}

#[test]
fn functions_passed_as_arguments_are_called() {
    let analysis = analyze("def clean(row):\n    return row + offset\ndf.apply(clean, axis=1)");
    assert_eq!(reads(&analysis), ["df", "offset"]);
}

#[test]
fn class_bodies_run_at_definition_and_constructors_at_instantiation() {
    let source = "\
class Model(Base):
    rate = default_rate
    doubled = rate * 2
    def __init__(self):
        self.w = weights
    def run(self):
        return helper(self.w)
m = Model()
";
    let analysis = analyze(source);
    assert_eq!(reads(&analysis), ["Base", "default_rate", "weights"]);
    let weights = analysis.reads.iter().find(|r| r.name == "weights").unwrap();
    assert_eq!(
        weights.called_from.as_ref().unwrap().function,
        "Model.__init__"
    );
    assert_eq!(weights.called_from.as_ref().unwrap().line, 8);

    let with_method_call = analyze(&format!("{source}m.run()\n"));
    assert!(reads(&with_method_call).contains(&"helper"));
}

#[test]
fn class_attributes_are_not_visible_inside_methods() {
    let analysis = analyze("class A:\n    k = 1\n    def f(self):\n        return k\nA().f()");
    assert_eq!(reads(&analysis), ["k"]);
}

#[test]
fn comprehension_variables_are_local_and_iterables_are_read() {
    let analysis = analyze("out = [i * scale for i in items if i > lo]\nprint(i)");
    // Execution order: the condition runs before the element.
    assert_eq!(reads(&analysis), ["items", "lo", "scale", "print", "i"]);

    let nested = analyze("pairs = {(i, j): i + j for i in a for j in range(i)}");
    assert_eq!(reads(&nested), ["a", "range"]);

    let generator = analyze("total = sum(x.value for x in rows)");
    assert_eq!(reads(&generator), ["sum", "rows"]);
}

#[test]
fn lambdas() {
    let uncalled = analyze("f = lambda x: x + k");
    assert!(reads(&uncalled).is_empty());
    let called = analyze("f = lambda x: x + k\nf(1)");
    assert_eq!(reads(&called), ["k"]);
    let inline = analyze("df.apply(lambda r: r.a + offset, axis=1)");
    assert_eq!(reads(&inline), ["df", "offset"]);
    let defaults = analyze("g = lambda x=default_x: x");
    assert_eq!(reads(&defaults), ["default_x"]);
}

#[test]
fn line_magics_without_python_are_recorded_only() {
    let analysis = analyze("%matplotlib inline\nimport numpy as np");
    assert!(reads(&analysis).is_empty());
    assert_eq!(analysis.magics.len(), 1);
    let magic = &analysis.magics[0];
    assert_eq!(magic.kind, MagicKind::LineMagic);
    assert_eq!(
        (magic.name.as_str(), magic.args.as_str()),
        ("matplotlib", "inline")
    );
    assert!(!magic.body_analyzed);
    assert_eq!(bound(&analysis), [("np", 2, BindingKind::Import)]);
}

#[test]
fn time_magic_bodies_are_analyzed_at_their_position() {
    let analysis = analyze("a = 1\n%time y = f(x, a)\nprint(y)");
    assert_eq!(reads(&analysis), ["f", "x", "print"]);
    let x = &analysis.reads[1];
    assert_eq!((x.line, x.column), (2, 13));
    assert_eq!(local_reads(&analysis), [("a", 2, 1), ("y", 3, 2)]);
    assert!(analysis.magics[0].body_analyzed);

    let timeit = analyze("%timeit -n 10 -r 3 model.predict(X_test)");
    assert_eq!(reads(&timeit), ["model", "X_test"]);
    assert_eq!(timeit.attributes[0].expr, "model.predict");
}

#[test]
fn cell_magics() {
    let capture = analyze("%%capture out\nmodel.fit(X)\n");
    assert_eq!(reads(&capture), ["model", "X"]);
    assert_eq!(read_line(&capture, "X"), 2);
    assert_eq!(bound(&capture), [("out", 1, BindingKind::Magic)]);
    assert_eq!(capture.magics[0].kind, MagicKind::CellMagic);

    let time = analyze("\n%%time\nz = compute(w)\nz");
    assert_eq!(reads(&time), ["compute", "w"]);
    assert_eq!(read_line(&time, "w"), 3);
    assert_eq!(local_reads(&time), [("z", 4, 3)]);

    let bash = analyze("%%bash\nfor f in *.csv; do echo $f; done\n");
    assert!(reads(&bash).is_empty());
    assert_eq!(bash.magics[0].name, "bash");
    assert!(!bash.magics[0].body_analyzed);
}

#[test]
fn shell_and_help_escapes() {
    let pip = analyze("!pip install lightgbm\nimport lightgbm");
    assert!(reads(&pip).is_empty());
    let magic = &pip.magics[0];
    assert_eq!(magic.kind, MagicKind::Shell);
    assert_eq!(
        (magic.name.as_str(), magic.args.as_str()),
        ("pip", "install lightgbm")
    );

    let captured = analyze("files = !ls {path}\nprint(files)");
    assert_eq!(bound(&captured), [("files", 1, BindingKind::Assignment)]);
    assert_eq!(reads(&captured), ["print"]);

    for help in ["?df", "df?", "??df.head"] {
        let analysis = analyze(help);
        assert!(reads(&analysis).is_empty(), "{help}");
        assert_eq!(analysis.magics[0].kind, MagicKind::Help);
    }
}

#[test]
fn run_and_star_imports_make_unknown_names_possibly_bound() {
    let analysis = analyze("before()\nfrom numpy import *\narray([1])");
    assert_eq!(analysis.star_imports[0].module, "numpy");
    assert_eq!(analysis.star_imports[0].line, 2);
    assert!(!analysis.reads[0].after_star_import);
    assert!(analysis.reads[1].after_star_import);

    let run = analyze("%run helpers.py\nhelper()");
    assert_eq!(run.star_imports[0].module, "helpers.py");
    assert!(run.reads[0].after_star_import);
}

#[test]
fn walrus_binds_in_the_enclosing_scope() {
    let analysis = analyze("if (n := len(data)) > 10:\n    print(n)");
    assert_eq!(reads(&analysis), ["len", "data", "print"]);
    assert_eq!(local_reads(&analysis), [("n", 2, 1)]);

    let in_comprehension = analyze("ys = [y := f(v) for v in vs]\nprint(y)");
    assert_eq!(reads(&in_comprehension), ["vs", "f", "print"]);
    assert!(bound(&in_comprehension).contains(&("y", 1, BindingKind::Walrus)));
}

#[test]
fn del_unbinds() {
    let analysis = analyze("x = 1\ndel x\nprint(x)");
    assert_eq!(analysis.deletions[0].name, "x");
    assert_eq!(analysis.deletions[0].line, 2);
    let x = analysis.reads.iter().find(|r| r.name == "x").unwrap();
    assert_eq!(x.deleted_on_line, Some(2));

    let subscript = analyze("del cache['k']");
    assert_eq!(reads(&subscript), ["cache"]);
    assert!(subscript.deletions.is_empty());
}

#[test]
fn augmented_assignment_reads_and_rebinds() {
    let analysis = analyze("total += step");
    assert_eq!(reads(&analysis), ["total", "step"]);
    assert_eq!(
        bound(&analysis),
        [("total", 1, BindingKind::AugmentedAssignment)]
    );
    let operation = &analysis.binary_operations[0];
    assert_eq!(operation.operator, "+=");
    assert_eq!(operation.left.expr.as_deref(), Some("total"));

    let column = analyze("df['a'] *= 2");
    assert_eq!(column.subscripts[0].expr, "df['a']");
}

#[test]
fn global_declarations() {
    let top = analyze("global counter\ncounter = 1");
    assert_eq!(top.global_declarations[0].name, "counter");

    let source = "def inc():\n    global counter\n    counter += 1\ninc()\nprint(counter)";
    let analysis = analyze(source);
    assert_eq!(reads(&analysis), ["counter", "print"]);
    assert!(bound(&analysis).contains(&("counter", 3, BindingKind::GlobalInFunction)));
    assert_eq!(local_reads(&analysis), [("inc", 4, 1), ("counter", 5, 3)]);
}

#[test]
fn try_except_with_and_for_else_bind_names() {
    let source = "\
try:
    import foo
except ImportError as e:
    print(e)
with open(path) as fh:
    data = fh.read()
for i in range(n):
    pass
else:
    print(i, data)
";
    let analysis = analyze(source);
    assert_eq!(
        reads(&analysis),
        ["ImportError", "print", "open", "path", "range", "n"]
    );
    assert!(bound(&analysis).contains(&("e", 3, BindingKind::ExceptHandler)));
    assert!(bound(&analysis).contains(&("fh", 5, BindingKind::With)));
    assert!(bound(&analysis).contains(&("i", 7, BindingKind::For)));
}

#[test]
fn match_statements() {
    let source = "\
match command:
    case Point(x=0, y=yy):
        print(yy)
    case Color.RED:
        pass
    case [first, *rest]:
        print(first, rest)
    case {'k': v, **others}:
        print(v, others)
    case _ if guard_var:
        pass
";
    let analysis = analyze(source);
    assert_eq!(
        reads(&analysis),
        ["command", "Point", "print", "Color", "guard_var"]
    );
    assert_eq!(analysis.attributes[0].expr, "Color.RED");
    let names: Vec<&str> = analysis.bindings.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["yy", "first", "rest", "v", "others"]);
}

#[test]
fn decorators_are_read_and_cell_decorators_run() {
    let analysis = analyze("@lru_cache(maxsize=None)\ndef f(x):\n    return x");
    assert_eq!(reads(&analysis), ["lru_cache"]);

    let source =
        "def register(fn):\n    registry.append(fn)\n    return fn\n@register\ndef g():\n    pass";
    let cell_decorator = analyze(source);
    assert_eq!(reads(&cell_decorator), ["registry"]);
}

#[test]
fn f_strings_read_names() {
    let analysis = analyze("print(f\"{name!r:>{width}} {obj.attr}\")");
    assert_eq!(reads(&analysis), ["print", "name", "width", "obj"]);
    assert_eq!(analysis.attributes[0].expr, "obj.attr");
}

#[test]
fn type_annotations() {
    let analysis = analyze("x: pd.DataFrame = load()\ny: int");
    assert_eq!(reads(&analysis), ["load", "pd", "int"]);
    assert_eq!(
        bound(&analysis),
        [("x", 1, BindingKind::AnnotatedAssignment)]
    );

    let signature = analyze("def f(a: np.ndarray, b=default_b) -> Tensor:\n    v: Local = 1\nf(1)");
    assert_eq!(reads(&signature), ["default_b", "np", "Tensor"]);
}

fn syntax_error(source: &str) -> SyntaxError {
    match analyze_cell(source) {
        Err(AnalysisError::Syntax(error)) => error,
        other => panic!("expected a syntax error: {other:?}"),
    }
}

#[test]
fn syntax_errors_report_their_position() {
    let error = syntax_error("x = 1\ny = (1,\n");
    assert_eq!(error.line, 3);
    assert!(!error.message.is_empty());

    let error = syntax_error("def f(:\n    pass");
    assert_eq!((error.line, error.column), (1, 7));

    let error = syntax_error("import os\nprint 'hello'");
    assert_eq!(error.line, 2);

    let error = syntax_error("%%time\nfor i in range(3):\nprint(i)");
    assert_eq!(error.line, 3);
}

/// Valid Python nested past crane's bounds is refused with its own outcome (it is not a
/// syntax error), on any thread, in memory linear in the cell's size.
#[test]
fn cells_too_deep_or_too_large_are_refused_not_crashed_on() {
    let long_sum = format!("x = {}", vec!["a"; 30_000].join(" + "));
    let deep_chain = format!("y = obj{}", ".a".repeat(50_000));
    let deep_parens = format!("z = {}1{}", "(".repeat(50_000), ")".repeat(50_000));
    let deep_power = format!("w = {}", vec!["2"; 20_000].join(" ** "));
    // Test threads have small stacks: the analysis must not depend on the caller's.
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            for (source, line) in [(long_sum, 1), (deep_chain, 1), (deep_power, 1)] {
                match analyze_cell(&source) {
                    Err(AnalysisError::Unanalysable(Unanalysable::TooDeep { line: at })) => {
                        assert_eq!(at, line)
                    }
                    other => panic!("expected too deep: {:?}", other.map(|_| ())),
                }
            }
            // Parentheses alone leave no nesting in the AST; parsing them needs the deep stack.
            assert!(analyze_cell(&deep_parens).is_ok());
            let nested_ok = format!("v = {}", vec!["a"; 150].join(" + "));
            assert!(
                analyze_cell(&nested_ok).is_ok(),
                "150 terms stay within the bounds"
            );
            let huge = "x = 1\n".repeat(300_000);
            assert!(matches!(
                analyze_cell(&huge),
                Err(AnalysisError::Unanalysable(Unanalysable::TooLarge { .. }))
            ));
            let bindings = bindings(&[format!("q = {}", vec!["a"; 30_000].join("+"))]);
            assert_eq!(bindings.unparsed_cells.len(), 1);
        })
        .expect("thread")
        .join()
        .expect("no overflow, no panic");
}

#[test]
fn empty_and_comment_only_cells() {
    for source in [
        "",
        "\n\n",
        "# just a note\n# another",
        "   \n# indented comment",
    ] {
        let analysis = analyze(source);
        assert_eq!(analysis, CellAnalysis::default(), "{source:?}");
        assert!(targets_for_probe(&analysis).is_empty());
    }
}

#[test]
fn attribute_chains_and_subscripts_have_canonical_strings() {
    let source = "\
print(model.fit, a.b.c, df.Price)
v = df[\"price\"], df[['a','b']], x[3], X[:, 0], d[\"k\"][\"j\"], s[1:3], s[::2], s[-1], t[1,]
w = df.loc[:, 'a'], df.iloc[0, 1:], q[\"it's\"], r[1.50], r[0x10], r[None], r[True], r[...]
";
    let analysis = analyze(source);
    let attributes: Vec<&str> = analysis
        .attributes
        .iter()
        .map(|a| a.expr.as_str())
        .collect();
    assert_eq!(
        attributes,
        ["model.fit", "a.b.c", "df.Price", "df.loc", "df.iloc"]
    );
    let subscripts: Vec<&str> = analysis
        .subscripts
        .iter()
        .map(|s| s.expr.as_str())
        .collect();
    assert_eq!(
        subscripts,
        [
            "df['price']",
            "df[['a', 'b']]",
            "x[3]",
            "X[:, 0]",
            "d['k']['j']",
            "d['k']",
            "s[1:3]",
            "s[::2]",
            "s[-1]",
            "t[1,]",
            "df.loc[:, 'a']",
            "df.iloc[0, 1:]",
            "q[\"it's\"]",
            "r[1.5]",
            "r[16]",
            "r[None]",
            "r[True]",
            "r[...]",
        ]
    );
    let loc = &analysis.subscripts[10];
    assert_eq!(loc.indexer, Some(Indexer::Loc));
    assert_eq!((loc.value.as_str(), loc.key.as_str()), ("df.loc", ":, 'a'"));
    assert_eq!(loc.key_constant, None);
    assert_eq!(
        analysis.subscripts[1].key_constant,
        Some(Constant::List(vec![
            Constant::Str("a".into()),
            Constant::Str("b".into())
        ]))
    );
    assert_eq!(analysis.subscripts[8].key_constant, Some(Constant::Int(-1)));
}

#[test]
fn non_constant_subscripts_are_not_references() {
    let analysis = analyze("df[col].mean()\ndf[df['a'] > 0]");
    let subscripts: Vec<&str> = analysis
        .subscripts
        .iter()
        .map(|s| s.expr.as_str())
        .collect();
    assert_eq!(subscripts, ["df['a']"]);
    assert!(analysis.attributes.is_empty());
    assert_eq!(analysis.calls[0].callee, "df[col].mean");
    assert_eq!(analysis.calls[0].receiver.as_deref(), Some("df[col]"));
}

#[test]
fn calls_record_callee_arguments_and_receivers() {
    let source = "\
data = pd.read_csv(\"data.csv\", sep=';', header=None, usecols=[0, 1], nrows=-5, frac=0.5)
df.groupby('a').mean()
df['a'].str.lower()
np.concatenate([a, b], axis=1)
f(*args, **kwargs)
";
    let analysis = analyze(source);
    let read_csv = &analysis.calls[0];
    assert_eq!(read_csv.callee, "pd.read_csv");
    assert_eq!(read_csv.receiver.as_deref(), Some("pd"));
    assert_eq!(read_csv.method.as_deref(), Some("read_csv"));
    assert_eq!(read_csv.line, 1);
    assert_eq!(read_csv.args[0].text, "\"data.csv\"");
    assert_eq!(
        read_csv.args[0].constant,
        Some(Constant::Str("data.csv".into()))
    );
    let keywords: Vec<(Option<&str>, Option<&Constant>)> = read_csv
        .keywords
        .iter()
        .map(|k| (k.name.as_deref(), k.value.constant.as_ref()))
        .collect();
    assert_eq!(
        keywords,
        [
            (Some("sep"), Some(&Constant::Str(";".into()))),
            (Some("header"), Some(&Constant::None)),
            (
                Some("usecols"),
                Some(&Constant::List(vec![Constant::Int(0), Constant::Int(1)]))
            ),
            (Some("nrows"), Some(&Constant::Int(-5))),
            (Some("frac"), Some(&Constant::Float(0.5))),
        ]
    );

    let mean = analysis
        .calls
        .iter()
        .find(|c| c.method.as_deref() == Some("mean"))
        .unwrap();
    assert_eq!(mean.callee, "df.groupby('a').mean");
    assert_eq!(mean.receiver.as_deref(), Some("df.groupby('a')"));
    assert!(analysis.calls.iter().any(|c| c.callee == "df.groupby"));

    let lower = analysis
        .calls
        .iter()
        .find(|c| c.method.as_deref() == Some("lower"))
        .unwrap();
    assert_eq!(lower.receiver.as_deref(), Some("df['a'].str"));

    let concatenate = analysis
        .calls
        .iter()
        .find(|c| c.callee == "np.concatenate")
        .unwrap();
    assert_eq!(concatenate.args[0].kind, ExprKind::List);
    assert_eq!(concatenate.args[0].expr, None);
    assert_eq!(
        concatenate.keywords[0].value.constant,
        Some(Constant::Int(1))
    );

    let splat = analysis.calls.iter().find(|c| c.callee == "f").unwrap();
    assert_eq!(splat.args[0].kind, ExprKind::Starred);
    assert_eq!(splat.keywords[0].name, None);
    assert_eq!(splat.keywords[0].value.expr.as_deref(), Some("kwargs"));
}

#[test]
fn binary_operations_record_operands() {
    let analysis = analyze("W = np.ones(3)\nout = X_train @ W + bias[0] * 2");
    let operators: Vec<&str> = analysis
        .binary_operations
        .iter()
        .map(|op| op.operator.as_str())
        .collect();
    assert_eq!(operators, ["+", "@", "*"]);
    let matmul = &analysis.binary_operations[1];
    assert_eq!(matmul.left.expr.as_deref(), Some("X_train"));
    assert!(!matmul.left.local);
    assert_eq!(matmul.right.expr.as_deref(), Some("W"));
    assert!(matmul.right.local);
    let times = &analysis.binary_operations[2];
    assert_eq!(times.left.expr.as_deref(), Some("bias[0]"));
    assert_eq!(times.right.constant, Some(Constant::Int(2)));
    assert_eq!(analysis.binary_operations[0].left.text, "X_train @ W");
    assert_eq!(
        analysis.binary_operations[0].left.kind,
        ExprKind::BinaryOperation
    );
}

#[test]
fn probe_targets_are_ordered_and_skip_cell_bound_names() {
    let source = "\
y = 1
model.fit(X[:, 0], y)
print(df.loc[:, 'a'], d['k']['j'], model)
";
    let analysis = analyze(source);
    assert_eq!(
        targets_for_probe(&analysis),
        [
            "model",
            "model.fit",
            "X",
            "X[:, 0]",
            "print",
            "df",
            "df.loc",
            "df.loc[:, 'a']",
            "d",
            "d['k']",
            "d['k']['j']",
        ]
    );
}

#[test]
fn results_serialize_to_json() {
    let analysis = analyze("%time out = model.fit(X[:, 0], y=labels)\nout @ W");
    let json = serde_json::to_value(&analysis).expect("serializable");
    assert_eq!(json["reads"][0]["name"], "model");
    assert_eq!(json["subscripts"][0]["expr"], "X[:, 0]");
    assert_eq!(json["calls"][0]["keywords"][0]["value"]["expr"], "labels");
    assert_eq!(json["magics"][0]["kind"], "line_magic");
    assert_eq!(json["binary_operations"][0]["operator"], "@");

    let error = analyze_cell("x = (").unwrap_err();
    let json = serde_json::to_value(&error).expect("serializable");
    assert_eq!(json["line"], 1);
}

/// Executed cells that bind, delete, fail to parse, star-import and bind through a magic.
const EXECUTED: [&str; 5] = [
    "import pandas as pd\ndf = pd.read_csv('x.csv')",
    "df2 = df\ndel df",
    "x = (",
    "def f():\n    pass\nfrom os.path import *",
    "%%capture log\ndf2 = df2.dropna()",
];

#[test]
fn bindings_across_executed_cells() {
    let cells = EXECUTED;
    let result = bindings(&cells);
    assert_eq!(
        result.names["pd"],
        NameState::Bound {
            at: Location { cell: 0, line: 1 },
            kind: BindingKind::Import
        }
    );
    assert_eq!(
        result.names["df"],
        NameState::Deleted {
            at: Location { cell: 1, line: 2 },
            previously_bound: Some(Location { cell: 0, line: 2 })
        }
    );
    assert_eq!(
        result.names["f"],
        NameState::Bound {
            at: Location { cell: 3, line: 1 },
            kind: BindingKind::FunctionDef
        }
    );
    assert_eq!(
        result.names["df2"],
        NameState::Bound {
            at: Location { cell: 4, line: 2 },
            kind: BindingKind::Assignment
        }
    );
    assert_eq!(
        result.names["log"],
        NameState::Bound {
            at: Location { cell: 4, line: 1 },
            kind: BindingKind::Magic
        }
    );
    assert_eq!(result.unparsed_cells.len(), 1);
    assert_eq!(result.unparsed_cells[0].cell, 2);
    assert_eq!(result.star_imports[0].module, "os.path");
    assert_eq!(result.star_imports[0].cell, 3);
}

#[test]
fn bindings_added_cell_by_cell_are_those_of_all_cells() {
    let cells = EXECUTED;
    let mut added = crane_analysis::Bindings::default();
    for (cell, source) in cells.iter().enumerate() {
        let analysis = added.add_cell(cell, source);
        assert_eq!(analysis, analyze_cell(source), "{source}");
    }
    assert_eq!(added, bindings(&cells));
}

#[test]
fn a_deletion_followed_by_a_rebinding_is_bound() {
    let result = bindings(&["x = 1\ndel x\nx = 2"]);
    assert_eq!(
        result.names["x"],
        NameState::Bound {
            at: Location { cell: 0, line: 3 },
            kind: BindingKind::Assignment
        }
    );
}

#[test]
fn capture_output_is_bound_after_the_body() {
    let analysis = analyze("%%capture out\nprint(out)");
    assert_eq!(reads(&analysis), ["print", "out"]);
    assert_eq!(bound(&analysis), [("out", 1, BindingKind::Magic)]);
}

#[test]
fn class_names_are_invisible_to_comprehensions_in_the_class_body() {
    let analysis = analyze("class A:\n    x = 1\n    y = [x for _ in range(3)]\n    z = x");
    assert_eq!(reads(&analysis), ["range", "x"]);
    assert_eq!(read_line(&analysis, "x"), 3);
}

#[test]
fn imports_bind_their_top_name_or_alias() {
    let analysis = analyze(
        "import os.path\nimport numpy.linalg as la\nfrom . import sibling\nos.path.join(la.norm)",
    );
    assert_eq!(
        bound(&analysis),
        [
            ("os", 1, BindingKind::Import),
            ("la", 2, BindingKind::Import),
            ("sibling", 3, BindingKind::Import)
        ]
    );
    assert!(analysis.reads.is_empty());
    assert!(analysis.attributes.is_empty());
}

#[test]
fn magics_in_expressions_are_analyzed() {
    let analysis = analyze("result = %timeit -o -q fit(X)\nresult.best");
    assert_eq!(reads(&analysis), ["fit", "X"]);
    assert_eq!(read_line(&analysis, "X"), 1);
    assert_eq!(local_reads(&analysis), [("result", 2, 1)]);
}
