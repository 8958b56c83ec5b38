//! What the walk says of cells whose failing part binds, changes or reads what existed before.

use super::*;

/// The kernel of the examples: `np`, `pd` and `plt` imported, `df`, `obj`, `lst`, `model`
/// and `X` bound by assignments, `list` never rebound.
fn kernel(name: &str) -> Prior {
    match name {
        "np" | "pd" | "plt" | "LinearRegression" => Prior::Imported,
        "df" | "obj" | "lst" | "model" | "X" | "d" | "f" => Prior::Bound,
        _ => Prior::NotBound,
    }
}

fn kept(source: &str, line: u32) -> Vec<String> {
    match failed_prefix(source, line, &kernel) {
        FailedPrefix::BoundOnly { names } => names,
        other => panic!("{source:?} at line {line}: {other:?}"),
    }
}

fn changed(source: &str, line: u32) -> (u32, String) {
    match failed_prefix(source, line, &kernel) {
        FailedPrefix::MayHaveChanged { line, reason } => (line, reason),
        other => panic!("{source:?} at line {line}: {other:?}"),
    }
}

#[test]
fn the_statements_before_a_line_are_cut_where_a_statement_ends() {
    let cell = "%matplotlib inline\nimport numpy as np\nx = np.ones(\n    3)\nx[9]\ny = 1\n";
    assert_eq!(
        statements_before(cell, 5),
        Some("%matplotlib inline\nimport numpy as np\nx = np.ones(\n    3)")
    );
    // Inside a statement: what comes before the statement.
    assert_eq!(
        statements_before(cell, 4),
        Some("%matplotlib inline\nimport numpy as np")
    );
    // A line names no single statement of those sharing it: the first holds it.
    assert_eq!(statements_before("a = 1; a[0]", 1), None);
    assert_eq!(statements_before("a = 1\nb = 2; b[0]", 2), Some("a = 1"));
    assert_eq!(statements_before(cell, 1), None);
    assert_eq!(statements_before("x = 1\n\n# end\n", 3), None);
    assert_eq!(statements_before("%%time\nx = 1\nx[0]", 3), None);
    assert_eq!(statements_before("x = (", 1), None);
}

#[test]
fn the_statements_that_only_bind_new_names_before_a_change() {
    let cell = "%matplotlib inline\nimport numpy as np\ndef f(v):\n    return v\nn = 3\ndf.drop(columns='a', inplace=True)\nk = 1\ndf['a']";
    assert_eq!(
        bound_only_prefix(cell, 8, &kernel),
        Some((
            "%matplotlib inline\nimport numpy as np\ndef f(v):\n    return v\nn = 3",
            vec!["np".to_owned(), "f".to_owned(), "n".to_owned()]
        ))
    );
    // Only what ended before the statement holding the line.
    assert_eq!(
        bound_only_prefix(cell, 4, &kernel),
        Some((
            "%matplotlib inline\nimport numpy as np",
            vec!["np".to_owned()]
        ))
    );
    // A change first, nothing bound, a cell magic.
    assert_eq!(
        bound_only_prefix(
            "df.drop(columns='a', inplace=True)\nx = 1\n1 / 0",
            3,
            &kernel
        ),
        None
    );
    assert_eq!(bound_only_prefix("print('hi')\n1 / 0", 2, &kernel), None);
    assert_eq!(
        bound_only_prefix("%%time\nimport json\n1 / 0", 3, &kernel),
        None
    );
}

#[test]
fn imports_and_new_names_are_kept() {
    let cell = "%matplotlib inline\nimport matplotlib.pyplot as plt\nimport numpy as np\nplt.style.use('seaborn-whitegrid')\n";
    assert_eq!(kept(cell, 4), ["plt", "np"]);
    let cell = "obj1 = pd.Series([4, 7, -5, 3], index=['d', 'b', 'a', 'c'])\nobj2 = pd.Series(range(3), index=['a', 'b', 'c'])\nobj2[[0, 1, 2]]";
    assert_eq!(kept(cell, 3), ["obj1", "obj2"]);
    assert_eq!(kept("a = \"this is a string\"\na[10] = \"f\"", 2), ["a"]);
    assert_eq!(
        kept("tup = tuple(['foo', [1, 2], True])\ntup[2] = False", 2),
        ["tup"]
    );
    // Names built from the cell's own, comprehensions, lambdas, loops over fresh values.
    let cell = "xs = [i * 2 for i in range(10)]\nkey = lambda v: -v\nfor x in sorted(xs, key=key):\n    total = x + 1\nm = LinearRegression()\nm.fit(np.zeros((2, 1)), [1, 2])\n";
    assert_eq!(kept(cell, 6), ["xs", "key", "x", "total", "m"]);
    // Only what ran counts: a mutation after the failing line never happened.
    assert_eq!(
        kept(
            "y = np.ones(3)\ny[5]\ndf.drop(columns='a', inplace=True)",
            2
        ),
        ["y"]
    );
    // A library's setting set to a constant, as a re-run sets it again.
    let cell = "import os\nos.environ['TF_USE_LEGACY_KERAS'] = '1'\npd.options.display.max_rows = 5\nplt.rcParams['figure.figsize'] = (10, -6)\nimport tf_keras";
    assert_eq!(kept(cell, 5), ["os", "tf_keras"]);
    // Rebinding a name the cell does not read before is what a re-run does again.
    assert_eq!(kept("df = pd.read_csv('x.csv')\ndf['b']", 2), ["df"]);
}

#[test]
fn changes_to_the_state_before_the_cell_are_seen() {
    assert_eq!(
        changed("df.drop(columns=['a'], inplace=True)\ndf['a']", 2).0,
        1
    );
    assert!(changed("X = X[:, 1:]\nX[0, 9]", 2).1.contains("`X`"));
    assert!(changed("lst.append(3)\nlst[9]", 2).1.contains("`lst`"));
    assert!(changed("model.fit(np.zeros((3, 1)))", 1)
        .1
        .contains("`model`"));
    assert!(changed("d['k'] = 1\nd['j']", 2).1.contains("`d`"));
    assert!(changed("obj.attr = 1\n1 / 0", 2).1.contains("`obj`"));
    assert!(changed("n = 1\ndel f\n1 / 0", 3).1.contains("del"));
    assert!(changed("total += 1\n1 / 0", 2).1.contains("total"));
    assert!(changed("print(len(df))\n1 / 0", 2).1.contains("`df`"));
    // Through a name: an alias of an object from before is not the cell's own.
    assert!(changed("y = np\ny.x = np.ones(2)", 2)
        .1
        .contains("`y`, which the cell did not build"));
    // Assigning into a module's object what is not a constant: it may read what it sets.
    assert!(changed(
        "import os\nos.environ['P'] = os.environ['P'] + ':/x'\n1 / 0",
        3
    )
    .1
    .contains("did not build"));
    assert!(
        changed("import pandas as pd\npd.options.display.max_rows += 5", 2)
            .1
            .contains("did not build")
    );
    // A constant into an object of the kernel's that is not a module.
    assert!(changed("d['k'] = '1'\n1 / 0", 2).1.contains("`d`"));
}

#[test]
fn what_crane_cannot_follow_is_a_possible_change() {
    for cell in [
        "global g\ng = 1\n1 / 0",
        "from os.path import *\n1 / 0",
        "%time x = 1\n1 / 0",
        "!ls\n1 / 0",
        "class A:\n    pass\n1 / 0",
        "def f2():\n    df.drop(columns='a', inplace=True)\nf2()",
        "globals()['df'] = 1\n1 / 0",
        "import __main__\n1 / 0",
        "%%time\nx = 1\n1 / 0",
        "x = (\n1 /",
    ] {
        let lines = cell.lines().count() as u32;
        changed(cell, lines);
    }
    // A line outside the cell's statements.
    changed("x = 1", 7);
    changed("x = 1\n\n\n", 3);
}

#[test]
fn watching_turns_reads_of_earlier_objects_into_names_to_compare() {
    let watching = |source: &str, line: u32| failed_prefix_watching(source, line, &kernel);
    // A pipeline around an earlier transformer, a slice of an earlier array.
    assert_eq!(
        watching(
            "pipe = (model, LinearRegression())\nleft = X[:, :5]\nmodel.predict(X)",
            3
        ),
        FailedPrefix::BoundIfUnchanged {
            names: vec!["pipe".into(), "left".into()],
            watched: vec!["model".into(), "X".into()],
        }
    );
    // Without reads of earlier objects: bound only, as without watching.
    assert_eq!(
        watching("import json\nn = 3\n1 / 0", 3),
        FailedPrefix::BoundOnly {
            names: vec!["json".into(), "n".into()]
        }
    );
    // Changes for certain stay changes: an assignment into an earlier object, a rebinding
    // of a name the cell read, `globals()`.
    for (source, line) in [
        ("d['k'] = 1\n1 / 0", 1),
        ("X = X[:, 1:]\n1 / 0", 1),
        ("df += 1\n1 / 0", 1),
        ("g = globals()\n1 / 0", 1),
    ] {
        assert!(
            matches!(watching(source, 2), FailedPrefix::MayHaveChanged { line: at, .. } if at == line),
            "{source:?}"
        );
    }
    // Without watching, a read of an earlier object is a possible change.
    assert_eq!(changed("left = X[:, :5]\n1 / 0", 2).0, 1);
}

#[test]
fn data_from_before_the_cell_is_read_by_subscripts_attributes_and_operators() {
    let data = |name: &str| match name {
        "X" | "df" => Prior::Data,
        other => kernel(other),
    };
    let kept = |source: &str, line: u32| match failed_prefix(source, line, &data) {
        FailedPrefix::BoundOnly { names } => names,
        other => panic!("{source:?}: {other:?}"),
    };
    let changed = |source: &str, line: u32| match failed_prefix(source, line, &data) {
        FailedPrefix::MayHaveChanged { line, reason } => (line, reason),
        other => panic!("{source:?}: {other:?}"),
    };
    assert_eq!(
        kept(
            "wide, deep = X[:, :5], X[:, 2:]\nn = X.shape[0] * 2\nscaled = (X - 1) if False else X * 2\nprint(len(df), df.columns)\n1 / 0",
            5
        ),
        ["wide", "deep", "n", "scaled"]
    );
    assert_eq!(
        kept("col = df['a']\nhigh = col[col > 1]\n1 / 0", 3),
        ["col", "high"]
    );
    for (source, line) in [
        // A method may change it; so may a function handed it, or a loop's body.
        ("top = X.sort()\n1 / 0", 1),
        ("m = np.mean(X)\n1 / 0", 1),
        ("for row in X:\n    row[0] = 1\n1 / 0", 1),
        ("rows = [r for r in X]\n1 / 0", 1),
        // A view of it written into, or changed in place.
        ("left = X[:, :1]\nleft[0] = 99\n1 / 0", 2),
        ("left = X[:, :1]\nleft += 1\n1 / 0", 2),
        ("left = X[:, :1]\nleft.fill(0)\n1 / 0", 2),
        ("pair = [X]\npair[0][0] = 1\n1 / 0", 2),
        ("X[0] = 1\n1 / 0", 1),
    ] {
        assert_eq!(changed(source, line + 1).0, line, "{source:?}");
    }
    // Watching: data is an object to compare as any other.
    assert_eq!(
        failed_prefix_watching("left = X[:, :1]\n1 / 0", 2, &data),
        FailedPrefix::BoundIfUnchanged {
            names: vec!["left".into()],
            watched: vec!["X".into()],
        }
    );
}

#[test]
fn a_builtin_the_kernel_rebound_is_not_a_builtin() {
    let prior = |name: &str| match name {
        "list" => Prior::Bound,
        _ => Prior::NotBound,
    };
    assert!(matches!(
        failed_prefix("x = list(range(3))\n1 / 0", 2, &prior),
        FailedPrefix::MayHaveChanged { .. }
    ));
    assert_eq!(
        failed_prefix("x = tuple(range(3))\n1 / 0", 2, &prior),
        FailedPrefix::BoundOnly {
            names: vec!["x".into()]
        }
    );
}
