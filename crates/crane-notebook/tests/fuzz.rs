//! The notebook reader never panics: arbitrary bytes, and notebooks whose every field holds
//! arbitrary JSON, are read or refused with an error. `PROPTEST_CASES` sets the number of
//! inputs per property (docs/benchmarks.md has the longer runs).

use crane_notebook::Notebook;
use proptest::prelude::*;
use serde_json::{json, Value};

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,40}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{0,12}", inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// A notebook with plausible keys whose values are sometimes arbitrary.
fn mangled_notebook() -> impl Strategy<Value = Value> {
    let source = prop_oneof![
        "[a-z =()\\[\\]'%!\n]{0,80}".prop_map(Value::from),
        prop::collection::vec("[a-z =()\n]{0,20}", 0..5).prop_map(Value::from),
        any_json(),
    ];
    let cell = (
        prop_oneof![Just("code"), Just("markdown"), Just("raw"), Just("other")],
        source,
        prop_oneof![
            any::<u32>().prop_map(Value::from),
            Just(Value::Null),
            any_json()
        ],
        any_json(),
        prop_oneof![".{0,12}".prop_map(Value::from), any_json()],
    )
        .prop_map(|(kind, source, count, outputs, id)| {
            json!({"cell_type": kind, "source": source, "execution_count": count,
                   "outputs": outputs, "metadata": {}, "id": id})
        });
    (
        prop::collection::vec(prop_oneof![cell, any_json()], 0..6),
        prop_oneof![Just(json!(4)), any_json()],
        prop_oneof![Just(json!(5)), any_json()],
        any_json(),
    )
        .prop_map(|(cells, major, minor, metadata)| {
            json!({"cells": cells, "nbformat": major, "nbformat_minor": minor, "metadata": metadata})
        })
}

proptest! {
    #[test]
    fn arbitrary_bytes_are_read_or_refused(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = Notebook::from_bytes("fuzz.ipynb", &bytes);
    }

    #[test]
    fn mangled_notebooks_are_read_or_refused(notebook in mangled_notebook()) {
        let bytes = serde_json::to_vec(&notebook).expect("serializes");
        if let Ok(read) = Notebook::from_bytes("fuzz.ipynb", &bytes) {
            // A notebook that was read can be written back and read again.
            let written = read.to_bytes();
            prop_assert!(Notebook::from_bytes("fuzz.ipynb", &written).is_ok());
        }
    }
}
