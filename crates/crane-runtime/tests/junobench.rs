//! The 148 JunoBench cases: loading, adapting CRANE-LLM's runtime information, and the size of
//! crane's rendering against the paper's.

use std::sync::OnceLock;

use crane_runtime::junobench::{
    default_cases_dir, load_case, load_cases, Case, CaseError, Variant,
};
use crane_runtime::{
    pformat_crane, render, render_paper, token_count, AttrPresence, Kind, RenderOptions,
    RuntimeInfo,
};

fn cases() -> &'static [Case] {
    static CASES: OnceLock<Vec<Case>> = OnceLock::new();
    CASES.get_or_init(|| load_cases(&default_cases_dir()).expect("JunoBench cases load"))
}

fn case(id: &str) -> &'static Case {
    cases()
        .iter()
        .find(|case| case.id == id)
        .unwrap_or_else(|| panic!("case {id} exists"))
}

fn adapted(id: &str) -> RuntimeInfo {
    case(id).runtime_info()
}

#[test]
fn all_cases_load_sorted_and_complete() {
    let cases = cases();
    assert_eq!(cases.len(), 148);
    assert!(cases.windows(2).all(|pair| pair[0].id < pair[1].id));
    let buggy = cases.iter().filter(|c| c.variant == Variant::Buggy).count();
    assert_eq!(buggy, 74);
    for case in cases {
        assert_eq!(case.crash, case.variant == Variant::Buggy, "{}", case.id);
        assert!(case.id.starts_with(&case.pair), "{}", case.id);
        assert_eq!(case.recorded_llm_outputs.len(), 3, "{}", case.id);
        for (model, outputs) in &case.recorded_llm_outputs {
            assert_eq!(outputs.code_only.len(), 5, "{} {model}", case.id);
            assert_eq!(outputs.with_runtime.len(), 5, "{} {model}", case.id);
            for answer in outputs.code_only.iter().chain(&outputs.with_runtime) {
                assert!(answer.detection().is_some(), "{} {model}", case.id);
            }
        }
    }
}

#[test]
fn every_case_adapts_with_a_type_and_kind_for_every_entry() {
    let mut kinds = std::collections::BTreeMap::new();
    for case in cases() {
        let recorded = case.crane_runtime_info.as_object().expect("an object");
        let info = case.runtime_info();
        assert_eq!(info.variables.len(), recorded.len(), "{}", case.id);
        for (expression, variable) in &info.variables {
            assert!(!variable.type_name.is_empty(), "{} {expression}", case.id);
            assert!(variable.error.is_none(), "{} {expression}", case.id);
            assert!(!expression.starts_with("__method__"), "{}", case.id);
            *kinds.entry(variable.kind).or_insert(0) += 1;
        }
    }
    for kind in [
        Kind::Dataframe,
        Kind::Series,
        Kind::Ndarray,
        Kind::Tensor,
        Kind::Estimator,
        Kind::Dataloader,
        Kind::KerasIterator,
        Kind::KerasModel,
        Kind::Pymodule,
        Kind::Function,
        Kind::Method,
    ] {
        assert!(kinds.contains_key(&kind), "no {kind} among {kinds:?}");
    }
}

#[test]
fn a_dataframe_keeps_its_columns_ranges_and_nan_flag() {
    let info = adapted("NBspecific_10_fixed");
    let train = info.get("train").expect("train");
    assert_eq!(train.kind, Kind::Dataframe);
    assert_eq!(train.type_name, "pandas.core.frame.DataFrame");
    assert_eq!(train.has_nan(), Some(true));
    let names = train.column_names().expect("columns");
    assert!(names.iter().any(|name| name == "ActivePower"));
    assert_eq!(train.has_column("ActivePower"), Some(true));
    assert_eq!(train.has_column("NoSuchColumn"), Some(false));
    let power = train.column_values("ActivePower").expect("stats");
    assert_eq!(power["n_unique"], 788);
    assert_eq!(power["min"], -5.48891652);
    let origin = train.origin.expect("origin");
    assert_eq!((origin.cell, origin.line), (71, 1));
    let function = info.get("check_stationarity").expect("function");
    assert_eq!(function.kind, Kind::Function);
    assert_eq!(function.type_name, "builtins.function");
}

#[test]
fn an_ndarray_and_a_tensor_keep_shape_dtype_and_range() {
    let info = adapted("NBspecific_10_reproduced");
    let train = info.get("train").expect("train");
    assert_eq!(train.kind, Kind::Ndarray);
    assert_eq!(train.shape(), Some(vec![Some(44582), Some(1)]));
    assert_eq!(train.ndim(), Some(2));
    assert_eq!(train.dtype(), Some("float64"));
    assert_eq!(train.has_nan(), Some(false));
    assert_eq!(train.min(), Some(0.0));
    assert_eq!(train.max(), Some(0.9999999999999999));

    let info = adapted("torch_3_fixed");
    let target = info.get("target").expect("target");
    assert_eq!(target.kind, Kind::Tensor);
    assert_eq!(target.shape(), Some(vec![Some(1), Some(3)]));
    assert_eq!(target.dtype(), Some("torch.int64"));
    assert_eq!(target.device(), Some("cpu"));
    assert_eq!(target.requires_grad(), Some(false));
}

#[test]
fn an_estimator_keeps_its_fitted_state() {
    let info = adapted("sklearn_6_fixed");
    let model = info.get("FReg").expect("FReg");
    assert_eq!(model.kind, Kind::Estimator);
    assert_eq!(model.fitted(), Some(true));
    assert_eq!(model.n_features_in(), Some(58));
    assert_eq!(model.s["n_outputs"], 1);
    assert_eq!(model.r["estimator"], "RandomForestRegressor");
    assert!(!model.r.contains_key("module"), "the module is in the type");
    assert_eq!(model.attribute("predict"), None);
    let predict = info.get("FReg.predict").expect("FReg.predict");
    assert_eq!(predict.kind, Kind::Method);
}

#[test]
fn method_keys_become_attribute_chains() {
    let info = adapted("NBspecific_3_fixed");
    for expression in [
        "X_test.shape",
        "np.mean",
        "plt.show",
        "plt.subplots",
        "stats.f",
    ] {
        assert!(info.get(expression).is_some(), "{expression} in {info:?}");
    }
    let shape = info.get("X_test.shape").expect("X_test.shape");
    assert_eq!(shape.kind, Kind::Tuple);
    assert_eq!(shape.len(), Some(2));

    let info = adapted("NBspecific_1_fixed");
    assert!(info.get("tf_idf.toarray").is_some());
    let info = adapted("torch_2_fixed");
    assert!(info
        .get("ViT_B_16_Weights.IMAGENET1K_SWAG_E2E_V1")
        .is_some());
    let info = adapted("torch_12_fixed");
    assert_eq!(
        info.get("tokenizer.pad_token").map(|v| v.kind),
        Some(Kind::NoneType)
    );
    assert!(info.get("tokenizer.eos_token_id").is_some());
}

#[test]
fn containers_generators_and_loaders_keep_their_facts() {
    let info = adapted("numpy_10_fixed");
    let names = info.get("cat_to_name").expect("dict");
    assert_eq!(names.kind, Kind::Dict);
    assert_eq!(names.len(), Some(102));
    assert_eq!(names.keys().map(Vec::len), Some(5));
    assert_eq!(names.element_types(), Some(vec!["builtins.str".to_owned()]));

    let info = adapted("torch_2_fixed");
    let class_dict = info.get("class_dict").expect("class_dict");
    assert_eq!(
        class_dict.keys().expect("keys")[0],
        0,
        "int keys typed back"
    );

    let loader = info.get("dataloader").expect("dataloader");
    assert_eq!(loader.kind, Kind::Dataloader);
    assert_eq!(loader.batch_size(), Some(8));
    assert_eq!(loader.n_batches(), Some(30));
    assert_eq!(loader.n_samples(), Some(240));
    assert!(loader.s.contains_key("batch_shapes"));
    assert!(loader.r.contains_key("dataset_fields"));

    let info = adapted("tensorflow_11_fixed");
    let images = info.get("train_images").expect("iterator");
    assert_eq!(images.kind, Kind::KerasIterator);
    assert_eq!(
        images.image_shape(),
        Some(vec![Some(224), Some(224), Some(3)])
    );
    assert_eq!(images.n_classes(), Some(2));
    assert_eq!(images.r["class_mode"], "categorical");

    let info = adapted("sklearn_11_reproduced");
    assert_eq!(info.get("x").expect("x").s["size"], 0, "empty array");

    let info = adapted("NBspecific_6_fixed");
    let history = info.get("history.history").expect("history dict");
    assert_eq!(history.v["epochs"], 2);
    assert_eq!(history.v["history_keys"][0], "accuracy");

    let info = adapted("numpy_12_fixed");
    assert_eq!(
        info.get("np.nan").and_then(|v| v.value()),
        Some(&"NaN".into())
    );
    assert_eq!(
        crane_runtime::number(info.get("np.nan").unwrap().value().unwrap()).map(f64::is_nan),
        Some(true)
    );
}

#[test]
fn categorical_value_info_is_kept() {
    let info = adapted("sklearn_5_fixed");
    let y = info.get("y_pred").expect("y_pred");
    assert_eq!(y.n_unique(), Some(3));
    assert_eq!(y.r["value_kind"], "categorical");
    assert_eq!(y.v["unique_values"].as_array().map(Vec::len), Some(3));
    let _ = AttrPresence::Method;
}

/// The paper's pprint, re-done from the JSON, reproduces `crane_runtime_info_text` exactly
/// whenever the text holds only Python literals (no object reprs such as `torch.Size(..)`).
#[test]
fn pformat_reproduces_the_papers_text() {
    let mut exact = 0;
    for case in cases() {
        let text = &case.crane_runtime_info_text;
        let non_literal = ["torch.Size(", "array(", "defaultdict(", ": <", "[<", " <"]
            .iter()
            .any(|marker| text.contains(marker));
        let ours = pformat_crane(&case.crane_runtime_info);
        if ours == *text {
            exact += 1;
        } else {
            assert!(non_literal, "{}:\n{ours}\n---\n{text}", case.id);
        }
    }
    assert!(exact >= 134, "{exact}");
}

#[test]
fn crane_rendering_is_never_larger_than_the_papers() {
    let mut crane_total = 0;
    let mut paper_total = 0;
    let mut paper_layout_total = 0;
    for case in cases() {
        let info = case.runtime_info();
        let rendered = render(&info, &RenderOptions::default());
        assert!(!rendered.truncated);
        assert_eq!(rendered.tokens, token_count(&rendered.text));
        let paper = token_count(&case.crane_runtime_info_text);
        assert!(
            rendered.tokens <= paper,
            "{}: crane {} > paper {}\n{}",
            case.id,
            rendered.tokens,
            paper,
            rendered.text
        );
        crane_total += rendered.tokens;
        paper_total += paper;
        paper_layout_total += token_count(&render_paper(&info));
    }
    println!(
        "tokens over {} cases: crane {crane_total}, paper text {paper_total}, paper layout of the adapted facts {paper_layout_total}",
        cases().len()
    );
    assert!(crane_total * 2 < paper_total);
    // The adapter keeps the facts: laid out the paper's way again, they weigh about the same.
    let ratio = paper_layout_total as f64 / paper_total as f64;
    assert!((0.95..=1.05).contains(&ratio), "{ratio}");
}

#[test]
fn errors_name_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("broken.json");
    std::fs::write(&bad, "{\"id\": 3}").expect("write");
    let error = load_case(&bad).expect_err("invalid");
    assert!(matches!(error, CaseError::Parse { .. }));
    assert!(error.to_string().contains("broken.json"), "{error}");
    let error = load_cases(dir.path()).expect_err("invalid");
    assert!(error.to_string().contains("broken.json"), "{error}");
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(matches!(load_cases(empty.path()), Err(CaseError::Empty(_))));
    let missing = load_case(&dir.path().join("missing.json")).expect_err("missing");
    assert!(missing.to_string().contains("missing.json"), "{missing}");
}
