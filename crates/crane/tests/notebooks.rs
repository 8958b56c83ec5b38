//! Notebooks as users have them, end to end with the real binary and real kernels: cleared
//! notebooks, figures, papermill's parameters and conventions, the notebook's kernelspec,
//! stdin/stdout, CI output formats and stop signals.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

use common::{crane, crane_command, python, repo_root, run_python, stderr, stdout, write_notebook};
use serde_json::Value;

fn example() -> String {
    repo_root()
        .join("examples/titanic_like.ipynb")
        .display()
        .to_string()
}

/// Writes a notebook with nbformat from a Python expression building `nb`.
fn write_with_nbformat(path: &Path, build: &str) {
    run_python(
        &format!(
            "import sys, nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_output\n\
             nb = new_notebook()\nnb.metadata['kernelspec'] = {{'name': 'python3', 'display_name': 'Python 3', 'language': 'python'}}\n\
             {build}\nnbformat.write(nb, sys.argv[1])\n"
        ),
        &[path.to_str().unwrap()],
    );
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn code_cells(notebook: &Value) -> Vec<&Value> {
    notebook["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cell| cell["cell_type"] == "code")
        .collect()
}

#[test]
fn a_cleared_notebook_is_checked_in_visual_order_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cleared.ipynb");
    write_notebook(
        &path,
        &[
            (
                "import pandas as pd\ndf = pd.DataFrame({'a': [1, 2]})",
                None,
            ),
            ("total = df['a'].sum()", None),
            ("df['missing']", None),
        ],
    );
    let path = path.to_str().unwrap();
    for cell in ["2", "-1"] {
        let output = crane(&["check", path, "--cell", cell, "--format", "json"]);
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        let report: Value = serde_json::from_str(&stdout(&output)).unwrap();
        assert_eq!(report["verdict"]["exception"], "KeyError", "{report:#}");
        assert_eq!(report["target_cell"]["index"], 2);
        assert!(
            stderr(&output).contains("cleared notebook"),
            "{}",
            stderr(&output)
        );
    }
    let out_of_range = crane(&["check", path, "--cell", "-4"]);
    assert_eq!(out_of_range.status.code(), Some(2));
    assert!(stderr(&out_of_range).contains("-1 is the last"));
}

#[test]
fn run_keeps_figures_clears_unreached_cells_and_marks_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let out = dir.path().join("out.ipynb");
    write_with_nbformat(
        &path,
        "stale = [new_output('stream', name='stdout', text='stale\\n')]\n\
         nb.cells = [\n\
           new_code_cell('import matplotlib.pyplot as plt\\nplt.plot([1, 2, 3])\\nplt.show()', execution_count=4, outputs=stale),\n\
           new_code_cell('print(\"before\")\\nraise ValueError(\"boom\")', execution_count=5, outputs=stale),\n\
           new_code_cell('after = 1', execution_count=6, outputs=stale),\n\
         ]",
    );
    let output = crane_command(&[
        "run",
        path.to_str().unwrap(),
        out.to_str().unwrap(),
        "--order",
        "visual",
        "--format",
        "json",
    ])
    .env_remove("MPLBACKEND")
    .output()
    .unwrap();
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let written = read_json(&out);
    let cells = code_cells(&written);
    let figure = &cells[0]["outputs"];
    assert!(
        figure
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["data"]["image/png"].is_string()),
        "the plot is kept as image/png: {figure:#}"
    );
    assert_eq!(cells[0]["execution_count"], 1);
    assert_eq!(
        cells[1]["execution_count"], 2,
        "a crashed cell keeps its count"
    );
    let outputs = cells[1]["outputs"].as_array().unwrap();
    assert_eq!(outputs[0]["text"], "before\n");
    assert_eq!(outputs.last().unwrap()["output_type"], "error");
    assert!(cells[2]["execution_count"].is_null());
    assert_eq!(
        cells[2]["outputs"],
        serde_json::json!([]),
        "no stale output"
    );
    assert_eq!(cells[2]["metadata"]["crane"]["fate"], "not_reached");
    assert_eq!(cells[1]["metadata"]["crane"]["fate"], "crashed");
    assert!(cells[0]["metadata"]["crane"]["check_ms"].is_u64());
    let first = &written["cells"][0];
    assert_eq!(first["cell_type"], "markdown");
    assert_eq!(first["metadata"]["tags"][0], "crane-error-cell-tag");
    assert!(
        first["source"]
            .as_array()
            .unwrap()
            .iter()
            .any(|line| line.as_str().unwrap().contains("ValueError: boom")),
        "{first:#}"
    );
    assert_eq!(written["metadata"]["crane"]["actual_crashes"], 1);
    run_python(
        "import sys, nbformat\nnbformat.validate(nbformat.read(sys.argv[1], as_version=4))\n",
        &[out.to_str().unwrap()],
    );
}

#[test]
fn parameters_are_injected_as_papermill_injects_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params.ipynb");
    write_with_nbformat(
        &path,
        // Saved after a run: recorded counts, which the injected cell does not have.
        "p = new_code_cell('alpha = 0.1\\nname = \"default\"', execution_count=1)\n\
         p.metadata['tags'] = ['parameters']\n\
         nb.cells = [new_markdown_cell('# Title'), p, new_code_cell('print(alpha * 2, name, raw, lst, d)', execution_count=2)]",
    );
    let params_file = dir.path().join("params.yaml");
    std::fs::write(&params_file, "from_file: 3\nalpha: 0.2\n").unwrap();
    let parameters = [
        // {from_b64: [true, 1e3], alpha: 0.0}
        "-b",
        "ZnJvbV9iNjQ6IFt0cnVlLCAxLjBlKzNdCmFscGhhOiAwLjAK",
        "-f",
        params_file.to_str().unwrap(),
        "-y",
        "{lst: [1, 2.5, 'q\"uote'], d: {k: null, t: true}}",
        "-p",
        "alpha",
        "0.6",
        "-p",
        "name",
        "naïve \"x\"\\y",
        "-r",
        "raw",
        "5",
    ];
    let papermill_out = dir.path().join("papermill.ipynb");
    let papermill = Command::new(python())
        .args(["-m", "papermill", "--prepare-only"])
        .arg(&path)
        .arg(&papermill_out)
        .args(parameters)
        .output()
        .expect("papermill runs");
    assert!(
        papermill.status.success(),
        "{}",
        String::from_utf8_lossy(&papermill.stderr)
    );
    let crane_out = dir.path().join("crane.ipynb");
    let mut args = vec![
        "run",
        path.to_str().unwrap(),
        crane_out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend(parameters);
    let output = crane(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    let expected = read_json(&papermill_out);
    let written = read_json(&crane_out);
    let injected = |nb: &Value| -> (usize, Value, Value) {
        let cells = nb["cells"].as_array().unwrap();
        let position = cells
            .iter()
            .position(|c| c["metadata"]["tags"][0] == "injected-parameters")
            .expect("an injected cell");
        (
            position,
            cells[position]["source"].clone(),
            cells[position]["metadata"]["tags"].clone(),
        )
    };
    assert_eq!(injected(&written), injected(&expected));
    let printed = &code_cells(&written)[2]["outputs"][0]["text"];
    assert_eq!(
        printed,
        "1.2 naïve \"x\"\\y 5 [1, 2.5, 'q\"uote'] {'k': None, 't': True}\n"
    );
    assert_eq!(written["metadata"]["crane"]["parameters"]["from_file"], 3);

    // --prepare-only writes the same cell without running anything.
    let prepared = dir.path().join("prepared.ipynb");
    let mut args = vec![
        "run",
        path.to_str().unwrap(),
        prepared.to_str().unwrap(),
        "--prepare-only",
    ];
    args.extend(parameters);
    let output = crane(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("starting kernel"));
    let prepared = read_json(&prepared);
    assert_eq!(injected(&prepared), injected(&expected));
    assert!(code_cells(&prepared)[2]["outputs"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn the_notebooks_kernelspec_is_used_and_a_non_python_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let spec_dir = dir.path().join("share/kernels/other-env");
    std::fs::create_dir_all(&spec_dir).unwrap();
    let spec = serde_json::json!({
        "argv": [python(), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Other env", "language": "python",
        "env": {"CRANE_TEST_ENV": "other-env"},
    });
    std::fs::write(spec_dir.join("kernel.json"), spec.to_string()).unwrap();
    let path = dir.path().join("nb.ipynb");
    write_with_nbformat(
        &path,
        "nb.metadata['kernelspec'] = {'name': 'other-env', 'display_name': 'Other env', 'language': 'python'}\n\
         nb.cells = [new_code_cell('import os\\nprint(os.environ.get(\"CRANE_TEST_ENV\"))')]",
    );
    let out = dir.path().join("out.ipynb");
    let output = crane_command(&["run", path.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .env_remove("CRANE_PYTHON")
        .env_remove("VIRTUAL_ENV")
        .env_remove("CONDA_PREFIX")
        .env("JUPYTER_PATH", dir.path().join("share"))
        .env("JUPYTER_DATA_DIR", dir.path().join("no-user-dir"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("kernelspec other-env"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        code_cells(&read_json(&out))[0]["outputs"][0]["text"],
        "other-env\n"
    );

    let r_notebook = dir.path().join("r.ipynb");
    write_with_nbformat(
        &r_notebook,
        "nb.metadata['kernelspec'] = {'name': 'ir', 'display_name': 'R', 'language': 'R'}\n\
         nb.cells = [new_code_cell('x <- 1')]",
    );
    let refused = crane(&["check", r_notebook.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert!(
        err.contains("`ir` (language R)") && err.contains("Python notebooks only"),
        "{err}"
    );
    assert!(!err.contains("starting kernel"), "{err}");
}

#[test]
fn stdin_and_stdout_stand_for_the_notebook_files_and_cwd_is_the_kernels_folder() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    write_notebook(
        &path,
        &[(
            "import os\nprint(6 * 7, os.path.basename(os.getcwd()))",
            None,
        )],
    );
    let workdir = dir.path().join("workdir");
    std::fs::create_dir_all(&workdir).unwrap();
    let mut child = crane_command(&["run", "-", "-", "--quiet", "--cwd", "workdir"])
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&std::fs::read(&path).unwrap())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let written: Value = serde_json::from_slice(&output.stdout).expect("a notebook on stdout");
    assert_eq!(
        code_cells(&written)[0]["outputs"][0]["text"],
        "42 workdir\n"
    );
    assert!(
        stderr(&output).contains("1 cell run"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn setup_errors_exit_2_before_any_kernel_starts() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["check".into(), example(), "--detector".into(), "llm".into()],
            "needs a model",
        ),
        (
            vec![
                "run".into(),
                example(),
                "--llm".into(),
                "openai:gpt-5".into(),
            ],
            "needs an API key",
        ),
        (
            vec![
                "check".into(),
                example(),
                "--llm".into(),
                "replay:gpt_5".into(),
            ],
            "recorded JunoBench cases",
        ),
        (
            vec![
                "run".into(),
                example(),
                "-o".into(),
                dir.path().join("missing/out.ipynb").display().to_string(),
            ],
            "cannot write the output notebook",
        ),
        (
            vec![
                "run".into(),
                example(),
                "-o".into(),
                dir.path().display().to_string(),
            ],
            "it is a folder",
        ),
    ];
    for (args, needle) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = crane_command(&args)
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert!(!err.contains("starting kernel"), "{args:?}: {err}");
    }
    let missing = crane(&["run", "/nonexistent/in.ipynb"]);
    let err = stderr(&missing);
    assert_eq!(err.matches("No such file").count(), 1, "said once: {err}");
}

#[test]
fn run_json_carries_the_held_cells_full_verdict() {
    let output = crane(&["run", &example(), "--format", "json", "--quiet"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let summary: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let held = &summary["cells"][3];
    assert_eq!(held["fate"], "held");
    assert_eq!(held["rule"], "PD001");
    assert_eq!(held["verdict"]["exception"], "KeyError");
    assert_eq!(held["verdict"]["line"], 2);
    assert!(held["verdict"]["diagnosis"]
        .as_str()
        .unwrap()
        .contains("Cabin"));
    assert!(summary["cells"][0].get("verdict").is_none());
}

#[test]
fn run_help_offers_only_what_run_does_and_rules_explains_a_code() {
    let help = stdout(&crane(&["run", "--help"]));
    for absent in ["--show-prompt", "--every-unexecuted", "--existing"] {
        assert!(!help.contains(absent), "{absent} in run --help:\n{help}");
    }
    for present in [
        "--parameters",
        "--cwd",
        "--kernel",
        "OUTPUT",
        "--dry-run",
        "--allow-side-effects",
    ] {
        assert!(help.contains(present), "{present} missing:\n{help}");
    }
    let rule = crane(&["rules", "PD001"]);
    assert_eq!(rule.status.code(), Some(0));
    let text = stdout(&rule);
    assert!(text.starts_with("PD001 missing-column"), "{text}");
    assert!(text.contains("Example:"), "{text}");
    let json = crane(&["rules", "missing-column", "--format", "json"]);
    let info: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(info["code"], "PD001");
    let unknown = crane(&["rules", "XX999"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("unknown rule"));
}

#[test]
fn duplicated_cell_ids_are_reported_with_the_cell_picked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.ipynb");
    write_notebook(&path, &[("x = 1", None), ("y = x + 1", None)]);
    let mut document = read_json(&path);
    let id = document["cells"][0]["id"].clone();
    document["cells"][1]["id"] = id.clone();
    std::fs::write(&path, document.to_string()).unwrap();
    let id = id.as_str().unwrap();
    let output = crane(&["check", path.to_str().unwrap(), "--cell-id", id]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(
        err.contains(&format!("cell id `{id}` is used by code cells 0, 1"))
            && err.contains("picked cell 0"),
        "{err}"
    );
}

/// A folder with a notebook predicted to crash and one that is fine.
fn two_notebooks(dir: &Path) {
    write_notebook(
        &dir.join("a_crash.ipynb"),
        &[
            (
                "import pandas as pd\ndf = pd.DataFrame({'a': [1]})",
                Some(1),
            ),
            ("df['b']", None),
        ],
    );
    let nested = dir.join("nested");
    std::fs::create_dir_all(nested.join(".ipynb_checkpoints")).unwrap();
    write_notebook(
        &nested.join("b_fine.ipynb"),
        &[("x = 1", Some(1)), ("x + 1", None)],
    );
    write_notebook(
        &nested.join(".ipynb_checkpoints/b_fine-checkpoint.ipynb"),
        &[("raise SystemExit", None)],
    );
}

#[test]
fn check_of_a_folder_writes_sarif_github_and_junit_for_ci() {
    let dir = tempfile::tempdir().unwrap();
    two_notebooks(dir.path());
    let folder = dir.path().to_str().unwrap();

    let sarif = crane(&["check", folder, "--output-format", "sarif", "--quiet"]);
    assert_eq!(sarif.status.code(), Some(1), "{}", stderr(&sarif));
    let sarif_path = dir.path().join("out.sarif");
    std::fs::write(&sarif_path, stdout(&sarif)).unwrap();
    let schema =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sarif-2.1.0-rtm.5.json");
    let checked = run_python(
        "import json, sys, jsonschema\n\
         schema = json.load(open(sys.argv[1]))\n\
         log = json.load(open(sys.argv[2]))\n\
         jsonschema.Draft4Validator(schema).validate(log)\n\
         results = log['runs'][0]['results']\n\
         where = results[0]['locations'][0]['physicalLocation']\n\
         line = open(where['artifactLocation']['uri']).read().splitlines()[where['region']['startLine'] - 1]\n\
         print(len(results), results[0]['ruleId'], where['artifactLocation']['uri'].endswith('a_crash.ipynb'), [r['id'] for r in log['runs'][0]['tool']['driver']['rules']], line.strip())\n",
        &[schema.to_str().unwrap(), sarif_path.to_str().unwrap()],
    );
    assert_eq!(checked.trim(), "1 PD001 True ['PD001'] \"df['b']\"");

    let github = crane(&["check", folder, "--output-format", "github", "--quiet"]);
    assert_eq!(github.status.code(), Some(1));
    let text = stdout(&github);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "{text}");
    // ::error file={name},title={title}::{message}, properties without raw `,` `:` or newlines.
    let line = lines[0];
    let rest = line.strip_prefix("::error ").expect(line);
    let (properties, message) = rest.split_once("::").expect(line);
    for property in properties.split(',') {
        let (key, value) = property.split_once('=').expect(property);
        assert!(
            ["file", "line", "col", "endLine", "endColumn", "title"].contains(&key),
            "{key}"
        );
        assert!(!value.contains(':') && !value.contains('\n'), "{value}");
    }
    assert!(properties.contains("a_crash.ipynb") && properties.contains("title=crane PD001"));
    let line: usize = properties
        .split(',')
        .find_map(|property| property.strip_prefix("line="))
        .expect("a line")
        .parse()
        .unwrap();
    let file = std::fs::read_to_string(dir.path().join("a_crash.ipynb")).unwrap();
    assert_eq!(file.lines().nth(line - 1).unwrap().trim(), "\"df['b']\"");
    assert!(
        message.contains("KeyError") && !message.contains('\n'),
        "{message}"
    );

    let junit = crane(&["check", folder, "--output-format", "junit", "--quiet"]);
    assert_eq!(junit.status.code(), Some(1));
    let junit_path = dir.path().join("junit.xml");
    std::fs::write(&junit_path, stdout(&junit)).unwrap();
    let summary = run_python(
        "import sys, xml.etree.ElementTree as ET\n\
         root = ET.parse(sys.argv[1]).getroot()\n\
         cases = root.findall('.//testcase')\n\
         print(len(cases), len(root.findall('.//failure')), root.find('.//failure').get('type'))\n",
        &[junit_path.to_str().unwrap()],
    );
    assert_eq!(summary.trim(), "2 1 KeyError");

    let json = crane(&["check", folder, "--format", "json", "--quiet"]);
    let items: Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(items.as_array().unwrap().len(), 2);
}

/// Processes whose working directory is under `dir`.
fn processes_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|entry| {
                    std::fs::read_link(entry.path().join("cwd"))
                        .is_ok_and(|cwd| cwd.starts_with(dir))
                })
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Starts `crane ARGS` on a notebook whose second cell sleeps, sends `signal` once that cell
/// runs, and returns the exit code and stdout; checks no kernel or kernel directory is left.
fn stopped_by(signal: &str, command: &[&str], dir: &Path) -> (Option<i32>, String) {
    use std::io::{BufRead, BufReader};
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut child = crane_command(command)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("[2/") {
        let mut line = String::new();
        if progress.read_line(&mut line).unwrap() == 0 {
            panic!("crane ended before the second cell: {seen}");
        }
        seen.push_str(&line);
    }
    std::thread::sleep(std::time::Duration::from_secs(1));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut progress, &mut rest).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(processes_in(dir), Vec::<String>::new(), "no kernel is left");
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .flatten()
        .map(|entry| entry.file_name())
        .filter(|name| name.to_string_lossy().starts_with("crane-kernel-"))
        .collect();
    assert!(left.is_empty(), "kernel directories left: {left:?}");
    (output.status.code(), format!("{}\n{rest}", stdout(&output)))
}

fn sleeping_notebook(dir: &Path) -> String {
    let path = dir.join("nb.ipynb");
    write_notebook(
        &path,
        &[
            ("print('first')", None),
            ("import time\ntime.sleep(120)", None),
            ("after = 1", None),
        ],
    );
    path.display().to_string()
}

#[test]
fn sigterm_and_sighup_end_run_as_ctrl_c_does() {
    for (signal, code) in [("TERM", 143), ("HUP", 129)] {
        let dir = tempfile::tempdir().unwrap();
        let path = sleeping_notebook(dir.path());
        let out = dir.path().join("out.ipynb");
        let (status, printed) = stopped_by(
            signal,
            &[
                "run",
                &path,
                "-o",
                out.to_str().unwrap(),
                "--format",
                "json",
            ],
            dir.path(),
        );
        assert_eq!(status, Some(code), "{printed}");
        assert!(
            printed.contains("\"interrupted\""),
            "the summary is printed: {printed}"
        );
        let written = read_json(&out);
        let cells = code_cells(&written);
        assert_eq!(cells[0]["outputs"][0]["text"], "first\n");
        let marker = cells[1]["outputs"][0]["text"].as_str().unwrap();
        assert!(
            marker.starts_with("[crane]") && marker.contains(&format!("SIG{signal}")),
            "{marker}"
        );
        assert_eq!(cells[1]["metadata"]["crane"]["fate"], "interrupted");
    }
}

#[test]
fn sigterm_ends_check_and_exec_and_leaves_no_kernel() {
    let dir = tempfile::tempdir().unwrap();
    let path = sleeping_notebook(dir.path());
    let (status, printed) = stopped_by("TERM", &["check", &path, "--cell", "2"], dir.path());
    assert_eq!(status, Some(143), "{printed}");
    assert!(printed.contains("terminated (SIGTERM)"), "{printed}");
    let (status, printed) = stopped_by("HUP", &["exec", &path], dir.path());
    assert_eq!(status, Some(129), "{printed}");
}

#[test]
fn run_with_skip_lists_the_cells_it_held_back_at_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nb.ipynb");
    let out = dir.path().join("out.ipynb");
    write_notebook(
        &path,
        &[
            ("import pandas as pd\ndf = pd.DataFrame({'a': [1]})", None),
            ("df['b']", None),
            ("total = df['a'].sum()", None),
        ],
    );
    let output = crane(&[
        "run",
        path.to_str().unwrap(),
        out.to_str().unwrap(),
        "--on-predicted-crash",
        "skip",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let written = read_json(&out);
    let first = &written["cells"][0];
    assert_eq!(first["metadata"]["tags"][0], "crane-error-cell-tag");
    let text: String = first["source"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line.as_str().unwrap())
        .collect();
    assert!(
        text.contains("crane skipped a cell predicted to crash: cell 1 (id ")
            && text.contains(") (KeyError)."),
        "{text}"
    );
    assert_eq!(code_cells(&written)[2]["execution_count"], 2);

    // Running crane on its own output replaces its banner rather than adding another.
    let again = dir.path().join("again.ipynb");
    let output = crane(&[
        "run",
        out.to_str().unwrap(),
        again.to_str().unwrap(),
        "--on-predicted-crash",
        "skip",
        "--quiet",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let banners = read_json(&again)["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|cell| cell["metadata"]["tags"][0] == "crane-error-cell-tag")
        .count();
    assert_eq!(banners, 1);
}

#[test]
fn every_unexecuted_cell_of_cleared_notebooks_is_checked_in_one_kernel_each() {
    let dir = tempfile::tempdir().unwrap();
    write_notebook(
        &dir.path().join("a.ipynb"),
        &[
            ("import pandas as pd\ndf = pd.DataFrame({'a': [1]})", None),
            ("total = df['a'].sum()", None),
            ("df['b']", None),
            ("never = 1", None),
        ],
    );
    write_notebook(
        &dir.path().join("b.ipynb"),
        &[("x = 1", None), ("y = x + 1", None)],
    );
    let output = crane(&[
        "check",
        dir.path().to_str().unwrap(),
        "--every-unexecuted",
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let items: Value = serde_json::from_str(&stdout(&output)).unwrap();
    let checked: Vec<(String, i64, bool)> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            let notebook = item["notebook"].as_str().unwrap();
            (
                notebook.rsplit('/').next().unwrap().to_owned(),
                item["target_cell"]["index"].as_i64().unwrap(),
                item["verdict"]["crash"].as_bool().unwrap(),
            )
        })
        .collect();
    let expected = [
        ("a.ipynb", 0, false),
        ("a.ipynb", 1, false),
        ("a.ipynb", 2, true),
        ("b.ipynb", 0, false),
        ("b.ipynb", 1, false),
    ];
    let expected: Vec<(String, i64, bool)> = expected
        .iter()
        .map(|(name, cell, crash)| (name.to_string(), *cell, *crash))
        .collect();
    assert_eq!(checked, expected);
    assert!(stderr(&output).contains("the cells after it are not checked"));
}

#[test]
fn under_nohup_sighup_is_left_ignored() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let path = sleeping_notebook(dir.path());
    let mut command = Command::new("nohup");
    command
        .arg(env!("CARGO_BIN_EXE_crane"))
        .args(["exec", &path])
        .env("CRANE_PYTHON", python())
        .env("NO_COLOR", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let mut progress = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("[2/") {
        let mut line = String::new();
        if progress.read_line(&mut line).unwrap() == 0 {
            panic!("crane ended before the second cell: {seen}");
        }
        seen.push_str(&line);
    }
    let pid = child.id().to_string();
    let signal = |name: &str| {
        assert!(Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success())
    };
    signal("-HUP");
    std::thread::sleep(std::time::Duration::from_secs(1));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended crane under nohup"
    );
    signal("-TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143));
}

#[test]
fn a_notebook_with_a_bom_and_a_lone_surrogate_is_checked_as_nbformat_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bom.ipynb");
    write_notebook(
        &path,
        &[("x = 'SURROGATE'", Some(1)), ("y = x + '!'", None)],
    );
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("SURROGATE", "\\ud800");
    std::fs::write(&path, format!("\u{feff}{text}")).unwrap();
    let read = run_python(
        "import sys, nbformat\nnb = nbformat.reads(open(sys.argv[1], 'rb').read(), as_version=4)\nprint(len(nb.cells))\n",
        &[path.to_str().unwrap()],
    );
    assert_eq!(read.trim(), "2", "nbformat reads its bytes");
    let output = crane(&["check", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("no crash predicted: cell 1"));
}

/// Outputs of each code cell, as (stream name or mime type, text), streams merged as
/// nbformat readers see them.
fn cell_outputs(notebook: &Value) -> Vec<Vec<(String, String)>> {
    code_cells(notebook)
        .iter()
        .map(|cell| {
            let mut kept: Vec<(String, String)> = Vec::new();
            for output in cell["outputs"].as_array().unwrap() {
                let text = |value: &Value| match value {
                    Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
                    other => other.as_str().unwrap_or_default().to_owned(),
                };
                let (kind, body) = match output["output_type"].as_str().unwrap() {
                    "stream" => (
                        output["name"].as_str().unwrap().to_owned(),
                        text(&output["text"]),
                    ),
                    _ => ("text/html".to_owned(), text(&output["data"]["text/html"])),
                };
                match kept.last_mut() {
                    Some((last, previous)) if *last == kind && kind != "text/html" => {
                        previous.push_str(&body)
                    }
                    _ => kept.push((kind, body)),
                }
            }
            kept
        })
        .collect()
}

/// A cell printing 6 MiB and one displaying 5 MiB of HTML: `crane run` keeps what nbclient
/// keeps; with `--max-output-bytes` it cuts, and says so in the stream, the metadata and the
/// summary.
#[test]
fn run_keeps_large_outputs_as_nbclient_does_and_marks_a_requested_cut() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.ipynb");
    write_with_nbformat(
        &path,
        "nb.cells = [\n\
           new_code_cell(\"print('x' * (6 << 20))\"),\n\
           new_code_cell(\"from IPython.display import display, HTML\\ndisplay(HTML('y' * (5 << 20)))\"),\n\
         ]",
    );
    let reference = dir.path().join("nbclient.ipynb");
    run_python(
        "import sys, nbformat\nfrom nbclient import NotebookClient\n\
         nb = nbformat.read(sys.argv[1], as_version=4)\n\
         NotebookClient(nb, kernel_name='python3', timeout=300).execute()\n\
         nbformat.write(nb, sys.argv[2])\n",
        &[path.to_str().unwrap(), reference.to_str().unwrap()],
    );
    let expected = cell_outputs(&read_json(&reference));
    assert_eq!(
        expected[0][0].1.len(),
        (6 << 20) + 1,
        "nbclient keeps it all"
    );
    assert_eq!(expected[1][0].1.len(), 5 << 20);

    let out = dir.path().join("out.ipynb");
    let output = crane(&["run", path.to_str().unwrap(), out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        cell_outputs(&read_json(&out)) == expected,
        "crane keeps less than nbclient"
    );
    assert!(
        !stdout(&output).contains("outputs cut"),
        "{}",
        stdout(&output)
    );

    let limited = dir.path().join("limited.ipynb");
    let output = crane(&[
        "run",
        path.to_str().unwrap(),
        limited.to_str().unwrap(),
        "--max-output-bytes",
        "1048576",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("outputs cut by --max-output-bytes in cell(s) 0, 1"),
        "{}",
        stdout(&output)
    );
    let written = read_json(&limited);
    let outputs = cell_outputs(&written);
    let (name, text) = &outputs[0][0];
    assert_eq!(name, "stdout");
    assert!(
        text.starts_with(&"x".repeat(1 << 20)),
        "the first MiB is kept"
    );
    assert!(
        text.ends_with(&format!(
            "[crane] stdout cut here: {} more bytes were not kept (--max-output-bytes 1048576)\n",
            (6 << 20) + 1 - (1 << 20)
        )),
        "{}",
        &text[text.len() - 200..]
    );
    assert_eq!(outputs[1].len(), 1, "{:?}", outputs[1]);
    assert_eq!(outputs[1][0].0, "stderr");
    assert!(
        outputs[1][0].1.contains("1 rich output(s)"),
        "{:?}",
        outputs[1]
    );
    let cells = code_cells(&written);
    assert_eq!(
        cells[0]["metadata"]["crane"]["outputs_cut"]["stdout_bytes"],
        (6 << 20) + 1 - (1 << 20)
    );
    assert_eq!(
        cells[1]["metadata"]["crane"]["outputs_cut"]["rich_outputs"],
        1
    );
    assert_eq!(
        written["metadata"]["crane"]["outputs_cut"],
        serde_json::json!([0, 1])
    );
}

#[test]
fn a_kernel_whose_builtins_a_cell_replaced_is_refused_with_exit_4_and_the_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("wrapped.ipynb");
    write_notebook(
        &path,
        &[
            (
                "import builtins\n_original_len = len\n\
                 def counted_len(value):\n    return _original_len(value)\n\
                 builtins.len = counted_len",
                None,
            ),
            ("names = ['ann', 'bob']", None),
            ("first = names[0]", None),
        ],
    );
    let output = crane(&["check", path.to_str().unwrap(), "--cell", "-1"]);
    assert_eq!(output.status.code(), Some(4), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(
        error.contains("`len` (the function __main__.counted_len)")
            && error.contains("cannot check in this kernel"),
        "{error}"
    );
}

#[test]
fn run_keeps_the_outputs_before_a_cell_that_kills_the_kernel_and_names_the_death() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dies.ipynb");
    write_notebook(
        &path,
        &[
            ("print('before')", None),
            ("import os\nos.abort()", None),
            ("print('after')", None),
        ],
    );
    let out = dir.path().join("out.ipynb");
    let output = crane(&[
        "run",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let error = stderr(&output);
    assert!(
        error.contains("SIGABRT") && error.contains("abort"),
        "{error}"
    );
    let summary: Value = serde_json::from_str(&stdout(&output)).expect("JSON summary");
    let fates: Vec<&str> = summary["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| cell["fate"].as_str().unwrap())
        .collect();
    assert_eq!(fates, ["ran", "killed_kernel", "not_reached"], "{summary}");
    let outputs = cell_outputs(&read_json(&out));
    assert_eq!(outputs[0], [("stdout".to_owned(), "before\n".to_owned())]);
    assert_eq!(outputs[1].len(), 1, "{:?}", outputs[1]);
    assert!(outputs[1][0].1.contains("SIGABRT"), "{:?}", outputs[1]);
    assert!(outputs[2].is_empty(), "{:?}", outputs[2]);
}
