use crane_notebook::{ExecutionOrder, Notebook, NotebookError, TargetSelector};
use serde_json::json;

fn notebook(cells: serde_json::Value) -> Notebook {
    let document = json!({
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}, "custom": {"keep": [1, 2]}},
        "nbformat": 4,
        "nbformat_minor": 5
    });
    Notebook::from_bytes("t.ipynb", document.to_string().as_bytes()).expect("valid notebook")
}

fn code(id: &str, source: serde_json::Value, count: Option<u64>) -> serde_json::Value {
    json!({"cell_type": "code", "id": id, "metadata": {}, "source": source, "execution_count": count, "outputs": []})
}

fn error_of(bytes: &[u8]) -> NotebookError {
    Notebook::from_bytes("bad.ipynb", bytes).expect_err("must be rejected")
}

#[test]
fn reads_sources_in_both_forms_and_counts_only_code_cells() {
    let nb = notebook(json!([
        {"cell_type": "markdown", "metadata": {}, "source": "# title"},
        code("a", json!(["import pandas as pd\n", "df = pd.DataFrame()"]), Some(1)),
        code("b", json!("df.head()"), None),
    ]));
    let cells = nb.code_cells();
    assert_eq!(cells.len(), 2);
    assert_eq!(cells[0].source, "import pandas as pd\ndf = pd.DataFrame()");
    assert_eq!(cells[0].position, 1);
    assert_eq!(cells[1].id.as_deref(), Some("b"));
    assert_eq!(cells[1].execution_count, None);
    assert_eq!(nb.kernelspec_name(), Some("python3"));
}

#[test]
fn recorded_order_sorts_by_execution_count_and_skips_unexecuted_cells() {
    let nb = notebook(json!([
        code("a", json!("x = 1"), Some(3)),
        code("b", json!("y = 2"), None),
        code("c", json!("z = 3"), Some(1)),
        code("d", json!("print(x)"), None),
    ]));
    let target = nb.target(&TargetSelector::FirstUnexecuted).unwrap();
    assert_eq!(target.index, 1);
    let target = nb.target(&TargetSelector::Index(3)).unwrap();
    let recorded: Vec<usize> = nb
        .cells_before(target, ExecutionOrder::Recorded)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(recorded, vec![2, 0]);
    let visual: Vec<usize> = nb
        .cells_before(target, ExecutionOrder::Visual)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(visual, vec![0, 1, 2]);
    let plan: Vec<usize> = nb
        .execution_plan(ExecutionOrder::Recorded)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(plan, vec![2, 0, 1, 3]);
}

#[test]
fn an_executed_target_only_sees_cells_that_ran_before_it() {
    let nb = notebook(json!([
        code("a", json!("x = 1"), Some(1)),
        code("b", json!("y = x"), Some(2)),
        code("c", json!("z = 3"), Some(3)),
    ]));
    let target = nb.target(&TargetSelector::Id("b".into())).unwrap();
    let before: Vec<usize> = nb
        .cells_before(target, ExecutionOrder::Recorded)
        .iter()
        .map(|c| c.index)
        .collect();
    assert_eq!(before, vec![0]);
}

#[test]
fn target_selection_errors_are_specific() {
    let nb = notebook(json!([code("a", json!("x = 1"), Some(1))]));
    assert!(matches!(
        nb.target(&TargetSelector::Index(5)),
        Err(NotebookError::CellOutOfRange {
            requested: 5,
            count: 1
        })
    ));
    assert!(matches!(
        nb.target(&TargetSelector::Id("zz".into())),
        Err(NotebookError::CellIdNotFound(_))
    ));
    assert!(matches!(
        nb.target(&TargetSelector::FirstUnexecuted),
        Err(NotebookError::NoUnexecutedCell)
    ));
    let empty = notebook(json!([{"cell_type": "markdown", "metadata": {}, "source": "hi"}]));
    assert!(matches!(
        empty.target(&TargetSelector::FirstUnexecuted),
        Err(NotebookError::NoCodeCells)
    ));
}

#[test]
fn malformed_inputs_get_named_errors() {
    assert!(matches!(
        error_of(b"hello"),
        NotebookError::NotJson {
            truncated: false,
            ..
        }
    ));
    assert!(matches!(
        error_of(br#"{"cells": [{"cell_type": "#),
        NotebookError::NotJson {
            truncated: true,
            ..
        }
    ));
    assert!(matches!(
        error_of(b"\xff\xfe{}"),
        NotebookError::NotUtf8 { offset: 0, .. }
    ));
    assert!(matches!(
        error_of(b"[1, 2]"),
        NotebookError::NotANotebook { .. }
    ));
    assert!(matches!(
        error_of(br#"{"cells": []}"#),
        NotebookError::NotANotebook { .. }
    ));
    assert!(matches!(
        error_of(br#"{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}"#),
        NotebookError::UnsupportedVersion { major: 3, .. }
    ));
    let bad_source = json!({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": 42, "metadata": {}, "outputs": [], "execution_count": null}
    ]});
    let err = error_of(bad_source.to_string().as_bytes());
    assert!(matches!(err, NotebookError::BadCell { position: 0, .. }));
    assert!(
        err.to_string().contains("neither a string nor a list"),
        "{err}"
    );
    let missing = Notebook::read("/nonexistent/x.ipynb").expect_err("missing file");
    assert!(matches!(missing, NotebookError::Io { .. }));
}

#[test]
fn a_huge_output_blob_is_read_without_trouble() {
    let blob = "A".repeat(100 * 1024 * 1024);
    let mut cell = code("a", json!("x = 1"), Some(1));
    cell["outputs"] = json!([{"output_type": "stream", "name": "stdout", "text": blob}]);
    let nb = notebook(json!([cell]));
    assert_eq!(nb.code_cells()[0].source, "x = 1");
}

#[test]
fn unchanged_notebooks_written_by_nbformat_round_trip_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    // nbformat's writer: sorted keys, one-space indent, non-ASCII kept, final newline.
    let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": 1,\n   \"id\": \"x1\",\n   \"metadata\": {\n    \"tags\": [\n     \"résumé\"\n    ]\n   },\n   \"outputs\": [],\n   \"source\": [\n    \"x = 1.5\\n\",\n    \"print(\\\"\\\\u00e9\\\", x)\"\n   ]\n  }\n ],\n \"metadata\": {\n  \"kernelspec\": {\n   \"display_name\": \"Python 3\",\n   \"name\": \"python3\"\n  },\n  \"empty\": {},\n  \"list\": []\n },\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
    std::fs::write(&path, text).unwrap();
    let nb = Notebook::read(&path).unwrap();
    assert_eq!(String::from_utf8(nb.to_bytes()).unwrap(), text);
    let out = dir.path().join("out.ipynb");
    nb.write(&out).unwrap();
    assert_eq!(std::fs::read_to_string(&out).unwrap(), text);
}

#[test]
fn edits_touch_only_what_they_name() {
    let mut nb = notebook(json!([
        code("a", json!("x = 1"), None),
        code("b", json!("y = 2"), None)
    ]));
    nb.set_execution(
        1,
        Some(7),
        vec![json!({"output_type": "stream", "name": "stdout", "text": "hi\n"})],
    )
    .unwrap();
    nb.set_cell_metadata(1, "crane", json!({"crash": false}))
        .unwrap();
    let reread = Notebook::from_bytes("r.ipynb", &nb.to_bytes()).unwrap();
    assert_eq!(reread.code_cells()[1].execution_count, Some(7));
    assert_eq!(reread.code_cells()[0].execution_count, None);
    let value: serde_json::Value = serde_json::from_slice(&nb.to_bytes()).unwrap();
    assert_eq!(
        value["cells"][1]["metadata"]["crane"]["crash"],
        json!(false)
    );
    assert_eq!(value["metadata"]["custom"]["keep"], json!([1, 2]));
    assert!(matches!(
        nb.set_execution(9, None, vec![]),
        Err(NotebookError::CellOutOfRange { .. })
    ));
}

#[test]
fn a_byte_order_mark_and_lone_surrogates_are_read_as_nbformat_reads_them() {
    let text = "\u{feff}{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {}, \"cells\": [\
        {\"cell_type\": \"code\", \"id\": \"a\", \"metadata\": {}, \"outputs\": [], \"execution_count\": null,\
         \"source\": \"s = '\\ud800'\\nt = '\\ud83d\\ude00'\"}]}";
    let nb = Notebook::from_bytes("bom.ipynb", text.as_bytes()).expect("read like nbformat");
    assert_eq!(nb.code_cells()[0].source, "s = '\u{fffd}'\nt = '\u{1f600}'");
}

#[test]
fn duplicated_ids_are_reported_and_the_first_cell_is_picked() {
    let nb = notebook(json!([
        code("a", json!("x = 1"), None),
        code("b", json!("y = 2"), None),
        code("a", json!("z = 3"), None),
    ]));
    assert_eq!(nb.duplicate_ids(), vec![("a".to_owned(), vec![0, 2])]);
    assert_eq!(nb.target(&TargetSelector::Id("a".into())).unwrap().index, 0);
}

#[test]
fn cells_counted_from_the_end_and_the_default_order() {
    let nb = notebook(json!([
        code("a", json!("x = 1"), None),
        code("b", json!("y = 2"), None),
    ]));
    assert_eq!(nb.target(&TargetSelector::FromEnd(1)).unwrap().index, 1);
    assert_eq!(nb.target(&TargetSelector::FromEnd(2)).unwrap().index, 0);
    for back in [0, 3] {
        assert!(matches!(
            nb.target(&TargetSelector::FromEnd(back)),
            Err(NotebookError::CellFromEndOutOfRange { count: 2, .. })
        ));
    }
    assert_eq!(
        nb.default_order(),
        ExecutionOrder::Visual,
        "a cleared notebook"
    );
    let ran = notebook(json!([code("a", json!("x = 1"), Some(1))]));
    assert_eq!(ran.default_order(), ExecutionOrder::Recorded);
}

#[test]
fn kernelspec_language_comes_from_the_spec_or_language_info() {
    let document = json!({"nbformat": 4, "nbformat_minor": 5, "cells": [],
        "metadata": {"kernelspec": {"name": "ir", "display_name": "R"}, "language_info": {"name": "R"}}});
    let nb = Notebook::from_bytes("r.ipynb", document.to_string().as_bytes()).unwrap();
    let spec = nb.kernelspec().unwrap();
    assert_eq!(
        (spec.name.as_str(), spec.language.as_deref()),
        ("ir", Some("R"))
    );
    assert!(!spec.is_python());
    assert!(notebook(json!([])).kernelspec().unwrap().is_python());
}

#[test]
fn inserted_cells_get_ids_and_shift_the_code_cells_after_them() {
    let mut nb = notebook(json!([
        code("a", json!("x = 1"), Some(1)),
        code("b", json!("y = 2"), Some(2)),
    ]));
    let mut metadata = serde_json::Map::new();
    metadata.insert("tags".into(), json!(["injected-parameters"]));
    nb.insert_cell(
        1,
        crane_notebook::NewCell {
            kind: crane_notebook::CellKind::Code,
            source: "# Parameters\nx = 2\n".into(),
            metadata,
        },
    )
    .unwrap();
    let cells = nb.code_cells();
    assert_eq!(cells.len(), 3);
    assert_eq!(cells[1].source, "# Parameters\nx = 2\n");
    assert_eq!(cells[1].tags, ["injected-parameters"]);
    assert_eq!(cells[1].id.as_ref().map(String::len), Some(8));
    assert_eq!(cells[2].id.as_deref(), Some("b"));
    nb.remove_cell(1).unwrap();
    assert_eq!(nb.code_cells().len(), 2);
}

#[test]
fn source_lines_point_into_the_file_as_nbformat_wrote_it() {
    let text = "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"m\",\n   \"metadata\": {},\n   \"source\": [\n    \"# Title\"\n   ]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"a\",\n   \"metadata\": {},\n   \"outputs\": [{\"output_type\": \"stream\", \"name\": \"stdout\", \"text\": \"\\\"source\\\": [\"}],\n   \"source\": [\n    \"x = 1\\n\",\n    \"y = x\"\n   ]\n  },\n  {\n   \"cell_type\": \"code\",\n   \"execution_count\": null,\n   \"id\": \"b\",\n   \"metadata\": {},\n   \"outputs\": [],\n   \"source\": \"z = 2\"\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n";
    let nb = Notebook::from_bytes("lines.ipynb", text.as_bytes()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let first = nb.code_cells()[0].source_line.expect("a line");
    assert_eq!(lines[first - 1].trim(), "\"x = 1\\n\",");
    let second = nb.code_cells()[1].source_line.expect("a line");
    assert!(lines[second - 1].contains("\"z = 2\""));
    // A layout that does not match the parsed source gives no line.
    let compact = text.replace(
        "\n    \"x = 1\\n\",\n    \"y = x\"\n   ]",
        "\"x = 1\\n\", \"y = x\"]",
    );
    let nb = Notebook::from_bytes("compact.ipynb", compact.as_bytes()).unwrap();
    assert_eq!(nb.code_cells()[0].source_line, None);
}
