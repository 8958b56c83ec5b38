//! The document model, the section filters and the rendering, on hand-written facts.

use crane_runtime::{
    render, token_count, AttrPresence, Certainty, ColumnName, Kind, Redact, RenderOptions,
    RuntimeInfo, Section, Sections, Variable,
};
use serde_json::{json, Value};

/// The example document of `docs/runtime-facts.md`.
fn documented() -> Value {
    json!({
      "variables": {
        "df": {
          "type": "pandas.core.frame.DataFrame",
          "kind": "dataframe",
          "origin": {"cell": 3, "line": 2},
          "sampled": true,
          "S": {"shape": [891, 12]},
          "R": {"columns": [{"name": "Age", "dtype": "float64"}], "index": {"type": "RangeIndex"}},
          "V": {"columns": {"Age": {"nulls": 177, "min": 0.42, "max": 80.0}}}
        },
        "df['Age']": {"type": "pandas.core.series.Series", "kind": "series", "S": {}, "R": {}, "V": {}},
        "model.fit": {"type": "builtins.method", "kind": "method", "S": {}, "R": {"owner_fitted": false}, "V": {}}
      },
      "missing": ["undefined_name"],
      "cost": {"ms": 12.5, "bytes": 3100, "sampled": false}
    })
}

fn info(value: Value) -> RuntimeInfo {
    serde_json::from_value(value).expect("valid runtime info")
}

/// A frame with many columns of strings and numbers, a dict and a few scalars.
fn wide() -> RuntimeInfo {
    let names: Vec<String> = (0..60).map(|i| format!("feature_{i:02}")).collect();
    let columns: Vec<Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| json!({"name": name, "dtype": if i % 2 == 0 { "float64" } else { "object" }}))
        .collect();
    let stats: serde_json::Map<String, Value> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let stats = if i % 2 == 0 {
                json!({"nulls": i, "min": -1.5, "max": 1000.25})
            } else {
                json!({"nulls": 0, "n_unique": 40, "examples": ["Braund, Mr. Owen", "Cumings"]})
            };
            (name.clone(), stats)
        })
        .collect();
    info(json!({
        "variables": {
            "df": {
                "type": "pandas.core.frame.DataFrame", "kind": "dataframe",
                "S": {"shape": [891, 60]},
                "R": {"columns": columns},
                "V": {"columns": stats, "has_nan": true}
            },
            "mapping": {
                "type": "builtins.dict", "kind": "dict",
                "S": {"len": 3},
                "R": {"keys": ["a", "b", "c"]},
                "V": {"examples": ["x", 2, "z"]}
            },
            "name": {"type": "builtins.str", "kind": "str", "S": {"len": 5}, "R": {}, "V": {"value": "hello"}},
            "n": {"type": "builtins.int", "kind": "int", "S": {}, "R": {}, "V": {"value": 42}},
            "y": {
                "type": "numpy.ndarray", "kind": "ndarray",
                "S": {"shape": [891]}, "R": {"dtype": "int64"},
                "V": {"min": 0, "max": 1, "classes": [0, 1], "unique_values": ["no", "yes"]}
            },
            "np": {"type": "builtins.module", "kind": "pymodule", "S": {}, "R": {}, "V": {}},
            "pd": {"type": "builtins.module", "kind": "pymodule", "S": {}, "R": {}, "V": {}}
        },
        "missing": ["undefined_name"]
    }))
}

#[test]
fn the_documented_example_round_trips_exactly() {
    let document = documented();
    let info = info(document.clone());
    assert_eq!(serde_json::to_value(&info).expect("serializes"), document);
    let df = info.get("df").expect("df");
    assert_eq!(df.kind, Kind::Dataframe);
    assert_eq!(df.origin.map(|o| (o.cell, o.line)), Some((3, 2)));
    assert_eq!(df.shape(), Some(vec![Some(891), Some(12)]));
    assert_eq!(df.column_names(), Some(vec![ColumnName::Str("Age".into())]));
    assert_eq!(df.column_dtype("Age").as_deref(), Some("float64"));
    assert_eq!(
        df.column_values("Age").map(|c| c["nulls"].clone()),
        Some(json!(177))
    );
    assert_eq!(df.certainty(Section::V), Certainty::Sampled);
    assert_eq!(df.certainty(Section::S), Certainty::Exact);
    assert_eq!(info.get("df['Age']").map(|v| v.kind), Some(Kind::Series));
    assert_eq!(info.missing, vec!["undefined_name"]);
}

#[test]
fn unknown_kinds_read_as_other_and_accessors_never_panic() {
    let variable: Variable = serde_json::from_value(json!({
        "type": "x.Y", "kind": "hologram",
        "S": {"shape": "not a list", "len": -3},
        "R": {"columns": [{"no_name": 1}, 7], "attributes": {"fit": "method", "bad": 3}},
        "V": {"has_nan": "yes", "min": "NaN", "max": "inf"}
    }))
    .expect("lenient");
    assert_eq!(variable.kind, Kind::Other);
    assert_eq!(variable.shape(), None);
    assert_eq!(variable.len(), None);
    assert_eq!(variable.column_names(), Some(vec![]));
    assert_eq!(variable.attribute("fit"), Some(AttrPresence::Method));
    assert_eq!(variable.attribute("bad"), None);
    assert_eq!(variable.attribute("missing"), None);
    assert_eq!(variable.has_nan(), None);
    assert!(variable.min().is_some_and(f64::is_nan));
    assert_eq!(variable.max(), Some(f64::INFINITY));
    assert_eq!(variable.fitted(), None);
    assert_eq!(variable.device(), None);
    let unknown_dim: Variable = serde_json::from_value(json!({
        "type": "torch.Tensor", "kind": "tensor", "S": {"shape": [null, 3]}
    }))
    .expect("valid");
    assert_eq!(unknown_dim.shape(), Some(vec![None, Some(3)]));
    assert_eq!(unknown_dim.ndim(), Some(2));
}

#[test]
fn sections_parse_from_ablation_names() {
    assert_eq!("full".parse::<Sections>(), Ok(Sections::ALL));
    assert_eq!("".parse::<Sections>(), Ok(Sections::ALL));
    let no_s: Sections = "-S".parse().expect("valid");
    assert_eq!((no_s.s, no_s.r, no_s.v), (false, true, true));
    let no_sr: Sections = "-S-R".parse().expect("valid");
    assert_eq!((no_sr.s, no_sr.r, no_sr.v), (false, false, true));
    assert_eq!(
        "-v, -r".parse::<Sections>().map(|s| s.to_string()),
        Ok("-R-V".into())
    );
    assert_eq!("-S-R-V".parse::<Sections>(), Ok(Sections::NONE));
    for bad in ["S", "-X", "-S-S", "-", "+S"] {
        assert!(bad.parse::<Sections>().is_err(), "{bad}");
    }
    for text in ["full", "-S", "-R", "-V", "-S-R", "-S-V", "-R-V", "-S-R-V"] {
        let sections: Sections = text.parse().expect("valid");
        assert_eq!(sections.to_string(), text);
        let json = serde_json::to_string(&sections).expect("serializes");
        assert_eq!(
            serde_json::from_str::<Sections>(&json).expect("parses"),
            sections
        );
    }
}

#[test]
fn filters_remove_exactly_their_sections() {
    let full = wide();
    for text in ["-S", "-R", "-V", "-S-R", "-S-V", "-R-V", "-S-R-V"] {
        let sections: Sections = text.parse().expect("valid");
        let filtered = full.filtered(sections);
        assert_eq!(filtered.missing, full.missing);
        for (expression, original) in &full.variables {
            let kept = &filtered.variables[expression];
            assert_eq!(kept.type_name, original.type_name);
            assert_eq!(kept.kind, original.kind);
            assert_eq!(kept.origin, original.origin);
            for section in Section::ALL {
                if sections.keeps(section) {
                    assert_eq!(kept.section(section), original.section(section));
                } else {
                    assert!(kept.section(section).is_empty(), "{text} {expression}");
                }
            }
        }
    }
    assert_eq!(full.filtered(Sections::ALL), full);
    let text = render(
        &full.filtered("-V".parse().expect("valid")),
        &RenderOptions::default(),
    )
    .text;
    assert!(
        !text.contains("has NaN") && !text.contains("hello"),
        "{text}"
    );
    assert!(text.contains("shape=(891, 60)"), "{text}");
}

#[test]
fn rendering_is_terse_and_complete_without_a_budget() {
    let rendered = render(&wide(), &RenderOptions::default());
    let text = &rendered.text;
    assert!(!rendered.truncated);
    assert_eq!(rendered.tokens, token_count(text));
    assert!(text.contains("df: DataFrame shape=(891, 60) has NaN; 60 columns: feature_00 float64 nulls=0 [-1.5..1000.25], feature_01 object nulls=0 n_unique=40 e.g. ['Braund, Mr. Owen', 'Cumings']"), "{text}");
    assert!(text.contains("feature_59 object"), "{text}");
    assert!(
        text.contains("mapping: dict len=3 items={'a': 'x', 'b': 2, 'c': 'z'}"),
        "{text}"
    );
    assert!(text.contains("name: str len=5 = 'hello'"), "{text}");
    assert!(text.contains("n: int = 42"), "{text}");
    assert!(text.contains("np, pd: module"), "{text}");
    assert!(text.contains("not defined: undefined_name"), "{text}");
    assert!(!text.contains('…'), "{text}");
}

#[test]
fn rendering_is_deterministic() {
    for budget in [None, Some(400), Some(120), Some(30)] {
        let options = RenderOptions {
            budget_tokens: budget,
            redact: Redact::None,
        };
        let first = render(&wide(), &options);
        let reparsed = info(serde_json::to_value(wide()).expect("serializes"));
        assert_eq!(render(&reparsed, &options), first);
    }
}

#[test]
fn budgets_are_met_by_summarizing_the_largest_object_first() {
    let info = wide();
    let full = render(&info, &RenderOptions::default());
    let budgeted = |budget| {
        render(
            &info,
            &RenderOptions {
                budget_tokens: Some(budget),
                redact: Redact::None,
            },
        )
    };
    let mut previous = full.tokens;
    for budget in [
        full.tokens,
        full.tokens - 1,
        900,
        400,
        200,
        120,
        60,
        25,
        10,
        3,
        0,
    ] {
        let rendered = budgeted(budget);
        assert!(rendered.tokens <= budget, "{budget}: {}", rendered.tokens);
        assert_eq!(rendered.tokens, token_count(&rendered.text));
        assert_eq!(rendered.truncated, budget < full.tokens, "{budget}");
        assert!(rendered.tokens <= previous);
        previous = rendered.tokens;
    }
    let medium = budgeted(400);
    assert!(medium.text.contains("more columns"), "{}", medium.text);
    assert!(
        medium.text.contains("n: int = 42"),
        "small entries stay whole: {}",
        medium.text
    );
    assert!(
        medium.text.contains("mapping: dict len=3 items={'a': 'x'"),
        "{}",
        medium.text
    );
    let small = budgeted(60);
    assert!(small.text.starts_with("df: DataFrame"), "{}", small.text);
    assert!(small.text.contains('…'), "{}", small.text);
    let tiny = budgeted(10);
    assert!(
        tiny.text.contains("more entries left out") || tiny.text.is_empty(),
        "{}",
        tiny.text
    );
}

#[test]
fn redaction_removes_what_it_says() {
    let info = wide();
    let strings = render(
        &info,
        &RenderOptions {
            budget_tokens: None,
            redact: Redact::Strings,
        },
    )
    .text;
    for hidden in ["Braund", "Cumings", "hello", "'x'", "'yes'"] {
        assert!(!strings.contains(hidden), "{hidden} in {strings}");
    }
    assert!(strings.contains("e.g. [<str>, <str>]"), "{strings}");
    assert!(strings.contains("n: int = 42"), "{strings}");
    assert!(strings.contains("'b': 2"), "{strings}");
    assert!(strings.contains("[-1.5..1000.25]"), "{strings}");

    let values = render(
        &info,
        &RenderOptions {
            budget_tokens: None,
            redact: Redact::Values,
        },
    )
    .text;
    for hidden in [
        "Braund", "hello", "= 42", "1000.25", "classes", "values=", "items=", "'a'", "range=",
    ] {
        assert!(!values.contains(hidden), "{hidden} in {values}");
    }
    for kept in [
        "feature_00 float64 nulls=0",
        "n_unique=40",
        "shape=(891, 60)",
        "has NaN",
        "dtype=int64",
    ] {
        assert!(values.contains(kept), "{kept} not in {values}");
    }
    let redacted = info.redacted(Redact::Values);
    assert!(redacted.get("mapping").is_some_and(|m| m.keys().is_none()));
    assert_eq!(
        redacted
            .get("df")
            .and_then(|df| df.column_names())
            .map(|c| c.len()),
        Some(60)
    );
}

#[test]
fn absent_entries_errors_and_samples_are_spelled_out() {
    let info = info(json!({
        "variables": {
            "df.foo": {"type": "", "kind": "absent", "R": {"owner_type": "pandas.core.frame.DataFrame"}},
            "d['k']": {"type": "", "kind": "absent", "R": {"key": "k"}},
            "gen": {"type": "builtins.generator", "kind": "other", "error": "timed out"},
            "big": {
                "type": "numpy.ndarray", "kind": "ndarray", "sampled": true,
                "S": {"shape": [100000000]}, "V": {"has_nan": false, "min": "-inf", "max": 3.5}
            },
            "x": {"type": "builtins.float", "kind": "float", "V": {"value": "NaN"}}
        }
    }));
    let text = render(&info, &RenderOptions::default()).text;
    for expected in [
        "df.foo: absent, no such attribute of pandas.core.frame.DataFrame",
        "d['k']: absent, no such key 'k'",
        "gen: generator (not summarized: timed out)",
        "big: ndarray shape=(100000000,) range=[-inf..3.5] no NaN (values from a sample)",
        "x: float = nan",
    ] {
        assert!(text.contains(expected), "{expected} not in {text}");
    }
}
