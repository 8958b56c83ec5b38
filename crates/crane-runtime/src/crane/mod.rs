//! Adapter from CRANE-LLM's recorded runtime information (`crane_runtime_info` in the JunoBench
//! cases) to crane's vocabulary, and back to the paper's layout (for size comparisons).
//!
//! The paper keys its dict by variable name, and by `__method__<object>_<attribute>` for the
//! attributes and methods a cell uses; the latter become attribute-chain expressions
//! (`__method__plt_show` is `plt.show`).

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::model::{Facts, Kind, Origin, RuntimeInfo, Section, Variable};

use adapt::adapt_variable;
pub use paper::to_crane;

mod adapt;
mod paper;

const METHOD_PREFIX: &str = "__method__";

/// Translate CRANE-LLM's runtime information (a JSON object keyed by variable) into crane's.
/// Anything that is not an object yields empty information.
pub fn from_crane(info: &Value) -> RuntimeInfo {
    from_crane_with_source(info, "")
}

/// Like [`from_crane`], using the source code the information was collected for (the target
/// cell) to resolve `__method__` keys whose split into object and attribute is ambiguous.
pub fn from_crane_with_source(info: &Value, source: &str) -> RuntimeInfo {
    let Some(entries) = info.as_object() else {
        return RuntimeInfo::default();
    };
    let names: BTreeSet<&str> = entries
        .keys()
        .filter(|key| !key.starts_with(METHOD_PREFIX))
        .map(String::as_str)
        .collect();
    let mut result = RuntimeInfo::default();
    for (key, entry) in entries {
        let expression = match key.strip_prefix(METHOD_PREFIX) {
            Some(mangled) => method_expression(mangled, &names, source),
            None => key.clone(),
        };
        let variable = match entry.as_object() {
            Some(entry) => adapt_variable(entry),
            None => {
                let mut variable = Variable::new("", Kind::Other);
                variable.error = Some(format!("unexpected entry {entry}"));
                variable
            }
        };
        result.variables.insert(expression, variable);
    }
    result
}

/// `X_test_shape` -> `X_test.shape`: the object is the longest prefix found as an attribute
/// chain in the source, else the longest prefix that is another variable of the same
/// information, else the part before the first underscore.
fn method_expression(mangled: &str, names: &BTreeSet<&str>, source: &str) -> String {
    let underscores: Vec<usize> = mangled
        .char_indices()
        .filter(|&(_, c)| c == '_')
        .map(|(i, _)| i)
        .collect();
    let splits: Vec<(&str, &str)> = underscores
        .iter()
        .map(|&i| (&mangled[..i], &mangled[i + 1..]))
        .filter(|(object, attribute)| is_identifier(object) && is_identifier(attribute))
        .collect();
    if !source.is_empty() && underscores.len() <= 12 {
        let mut found: Vec<String> = dotted_candidates(mangled, &underscores)
            .into_iter()
            .filter(|candidate| appears_in(source, candidate))
            .collect();
        found.sort_by_key(|candidate| {
            let root = candidate.split('.').next().unwrap_or_default();
            (
                !names.contains(root),
                std::cmp::Reverse(root.len()),
                candidate.matches('.').count(),
            )
        });
        if let Some(best) = found.into_iter().next() {
            return best;
        }
    }
    let known = splits
        .iter()
        .rev()
        .find(|(object, _)| names.contains(object));
    match known.or(splits.first()) {
        Some((object, attribute)) => format!("{object}.{attribute}"),
        None => mangled.to_owned(),
    }
}

/// Every way of turning some underscores into dots that yields an attribute chain.
fn dotted_candidates(mangled: &str, underscores: &[usize]) -> Vec<String> {
    let mut candidates = Vec::new();
    for mask in 1u32..(1 << underscores.len()) {
        let mut candidate = mangled.as_bytes().to_vec();
        for (bit, &position) in underscores.iter().enumerate() {
            if mask & (1 << bit) != 0 {
                candidate[position] = b'.';
            }
        }
        let Ok(candidate) = String::from_utf8(candidate) else {
            continue;
        };
        if candidate.split('.').all(is_identifier) {
            candidates.push(candidate);
        }
    }
    candidates
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// The chain occurs in the source as a whole chain (not inside a longer name).
fn appears_in(source: &str, chain: &str) -> bool {
    let is_name_char = |c: char| c == '_' || c.is_alphanumeric();
    source.match_indices(chain).any(|(start, _)| {
        let before = source[..start].chars().next_back();
        let after = source[start + chain.len()..].chars().next();
        !before.is_some_and(|c| is_name_char(c) || c == '.') && !after.is_some_and(is_name_char)
    })
}

/// Type name of a CRANE `type` string (`<class 'pandas.core.frame.DataFrame'>`,
/// `<class 'function'>`, `pandas.core.frame.DataFrame`, `<enum 'Weights'>`), as
/// `module.qualname` (`builtins.function`).
pub(crate) fn parse_type(text: &str) -> String {
    let inner = ["<class '", "<enum '"]
        .iter()
        .find_map(|prefix| text.strip_prefix(prefix)?.strip_suffix("'>"));
    match inner {
        Some(inner) if text.starts_with("<class") && !inner.contains('.') => {
            format!("builtins.{inner}")
        }
        Some(inner) => inner.to_owned(),
        None => text.to_owned(),
    }
}

impl Kind {
    /// The kind of an object of this type (`module.qualname`), for types crane knows by name.
    pub fn of_type(type_name: &str) -> Kind {
        let (module, name) = type_name.rsplit_once('.').unwrap_or(("", type_name));
        let top = module.split('.').next().unwrap_or_default();
        match (module, name) {
            ("builtins", "NoneType") => Kind::NoneType,
            ("builtins", "bool") => Kind::Bool,
            ("builtins", "int") => Kind::Int,
            ("builtins", "float") => Kind::Float,
            ("builtins", "complex") => Kind::Complex,
            ("builtins", "str") => Kind::Str,
            ("builtins", "bytes" | "bytearray") => Kind::Bytes,
            ("builtins", "list") => Kind::List,
            ("builtins", "tuple") => Kind::Tuple,
            ("builtins", "set" | "frozenset") => Kind::Set,
            ("builtins", "dict") | ("collections", "defaultdict" | "OrderedDict") => Kind::Dict,
            ("builtins", "range") => Kind::Range,
            ("builtins", "function") | ("functools", "partial") => Kind::Function,
            ("numpy", "_ArrayFunctionDispatcher") => Kind::Function,
            ("builtins", "method") => Kind::Method,
            (
                "builtins",
                "builtin_function_or_method" | "method-wrapper" | "wrapper_descriptor",
            )
            | ("numpy", "ufunc") => Kind::Builtin,
            ("builtins", "type") | ("abc", "ABCMeta") | ("enum", "EnumMeta" | "EnumType") => {
                Kind::Class
            }
            ("builtins", "module") => Kind::Pymodule,
            ("numpy", "ndarray") => Kind::Ndarray,
            ("numpy", scalar) if is_numpy_scalar(scalar) => Kind::NumpyScalar,
            ("pandas.core.frame", "DataFrame") => Kind::Dataframe,
            ("pandas.core.series", "Series") => Kind::Series,
            ("pandas.core.arrays.categorical", "Categorical") => Kind::Categorical,
            (m, _) if m.starts_with("pandas.core.indexes.") => Kind::Index,
            (m, _) if m.starts_with("pandas.core.groupby") => Kind::Groupby,
            ("sklearn.model_selection._split", _) => Kind::Splitter,
            (m, _) if is_sklearn_estimator_module(m) => Kind::Estimator,
            ("xgboost.sklearn", _) | ("lightgbm.sklearn", _) | ("catboost.core", _) => {
                Kind::Estimator
            }
            ("torch", "Tensor") | ("torch.nn.parameter", "Parameter") => Kind::Tensor,
            (m, _) if m.starts_with("torch.optim.lr_scheduler") => Kind::Other,
            (m, _) if m.starts_with("torch.optim") => Kind::Optimizer,
            ("torch.utils.data.dataloader", "DataLoader") => Kind::Dataloader,
            (m, _) if m.starts_with("torch.utils.data.dataset") => Kind::Dataset,
            (m, _) if m.starts_with("torchvision.datasets") => Kind::Dataset,
            (m, _) if m.starts_with("torch.nn.modules") => Kind::TorchModule,
            (m, _) if m.starts_with("torchvision.models") || m.starts_with("timm.models") => {
                Kind::TorchModule
            }
            (m, _) if m.starts_with("transformers.models.") && m.contains(".modeling_") => {
                if m.contains(".modeling_tf_") {
                    Kind::KerasModel
                } else {
                    Kind::TorchModule
                }
            }
            (_, "EagerTensor" | "Tensor" | "SymbolicTensor" | "ResourceVariable")
                if top == "tensorflow" =>
            {
                Kind::TfTensor
            }
            (m, _) if m.starts_with("tensorflow.python.data.ops") => Kind::TfDataset,
            (_, "DirectoryIterator" | "DataFrameIterator" | "NumpyArrayIterator")
                if top == "keras" || top == "tensorflow" =>
            {
                Kind::KerasIterator
            }
            (m, "History") if m.ends_with("callbacks.history") || m.ends_with("callbacks") => {
                Kind::History
            }
            (m, _) if top == "keras" || m.starts_with("tensorflow.python.keras") => {
                if m.contains(".models") || m.contains(".engine.") {
                    Kind::KerasModel
                } else if m.contains(".layers") {
                    Kind::KerasLayer
                } else {
                    Kind::Other
                }
            }
            ("matplotlib.figure", "Figure") => Kind::Figure,
            (m, _) if m.starts_with("matplotlib.axes") => Kind::Axes,
            _ => Kind::Other,
        }
    }
}

fn is_numpy_scalar(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    matches!(
        base,
        "float" | "int" | "uint" | "bool" | "bool_" | "complex" | "str_" | "bytes_" | "datetime"
    ) || matches!(
        name,
        "datetime64" | "timedelta64" | "longlong" | "ulonglong"
    )
}

fn is_sklearn_estimator_module(module: &str) -> bool {
    let Some(rest) = module.strip_prefix("sklearn.") else {
        return false;
    };
    let package = rest.split('.').next().unwrap_or_default();
    matches!(
        package,
        "linear_model"
            | "ensemble"
            | "svm"
            | "tree"
            | "neighbors"
            | "preprocessing"
            | "pipeline"
            | "compose"
            | "cluster"
            | "decomposition"
            | "naive_bayes"
            | "impute"
            | "feature_extraction"
            | "feature_selection"
            | "neural_network"
            | "discriminant_analysis"
            | "gaussian_process"
            | "kernel_ridge"
            | "isotonic"
            | "manifold"
            | "mixture"
            | "multiclass"
            | "multioutput"
            | "semi_supervised"
            | "cross_decomposition"
            | "calibration"
            | "dummy"
            | "covariance"
            | "kernel_approximation"
            | "random_projection"
            | "model_selection"
    )
}

#[cfg(test)]
mod tests {
    use super::adapt::dtype;
    use super::*;

    #[test]
    fn type_strings_become_qualified_names() {
        assert_eq!(parse_type("<class 'function'>"), "builtins.function");
        assert_eq!(
            parse_type("<class 'pandas.core.series.Series'>"),
            "pandas.core.series.Series"
        );
        assert_eq!(
            parse_type("pandas.core.frame.DataFrame"),
            "pandas.core.frame.DataFrame"
        );
        assert_eq!(parse_type("<enum 'ViT_B_16_Weights'>"), "ViT_B_16_Weights");
        assert_eq!(parse_type("<class '__main__.Vocab'>"), "__main__.Vocab");
    }

    #[test]
    fn kinds_follow_type_names() {
        let cases = [
            ("builtins.function", Kind::Function),
            ("builtins.module", Kind::Pymodule),
            ("builtins.NoneType", Kind::NoneType),
            ("numpy._ArrayFunctionDispatcher", Kind::Function),
            ("numpy.ufunc", Kind::Builtin),
            ("numpy.float64", Kind::NumpyScalar),
            ("abc.ABCMeta", Kind::Class),
            ("pandas.core.indexes.base.Index", Kind::Index),
            ("pandas.core.indexing._iLocIndexer", Kind::Other),
            ("sklearn.preprocessing._data.MinMaxScaler", Kind::Estimator),
            ("sklearn.model_selection._split.KFold", Kind::Splitter),
            ("torch.Tensor", Kind::Tensor),
            ("torch.optim.adamw.AdamW", Kind::Optimizer),
            ("torch.nn.modules.loss.CrossEntropyLoss", Kind::TorchModule),
            ("torchvision.models.vgg.VGG", Kind::TorchModule),
            ("torchvision.datasets.folder.ImageFolder", Kind::Dataset),
            ("torch.utils.data.dataloader.DataLoader", Kind::Dataloader),
            ("__main__.DataLoader", Kind::Other),
            ("keras.src.models.functional.Functional", Kind::KerasModel),
            ("keras.src.models.sequential.Sequential", Kind::KerasModel),
            ("keras.src.callbacks.history.History", Kind::History),
            (
                "keras.src.legacy.preprocessing.image.DirectoryIterator",
                Kind::KerasIterator,
            ),
            (
                "keras.src.legacy.preprocessing.image.ImageDataGenerator",
                Kind::Other,
            ),
            (
                "tensorflow.python.data.ops.prefetch_op._PrefetchDataset",
                Kind::TfDataset,
            ),
            (
                "tensorflow.python.framework.ops.EagerTensor",
                Kind::TfTensor,
            ),
            (
                "transformers.models.bert.modeling_bert.BertModel",
                Kind::TorchModule,
            ),
            ("matplotlib.figure.Figure", Kind::Figure),
            ("matplotlib.axes._axes.Axes", Kind::Axes),
        ];
        for (type_name, kind) in cases {
            assert_eq!(Kind::of_type(type_name), kind, "{type_name}");
        }
    }

    #[test]
    fn method_keys_split_at_a_known_object() {
        let names: BTreeSet<&str> = ["tf_idf", "train", "train_input", "tokenizer", "df_train"]
            .into_iter()
            .collect();
        let split = |mangled| method_expression(mangled, &names, "");
        assert_eq!(split("tf_idf_toarray"), "tf_idf.toarray");
        assert_eq!(split("tokenizer_eos_token_id"), "tokenizer.eos_token_id");
        assert_eq!(split("train_label"), "train.label");
        assert_eq!(split("df_train_labels"), "df_train.labels");
        assert_eq!(split("plt_tight_layout"), "plt.tight_layout");
        assert_eq!(split("nosplit"), "nosplit");
    }

    #[test]
    fn source_code_settles_ambiguous_method_keys() {
        let names = BTreeSet::from(["np"]);
        let source = "np.random.seed(0)\nx = np.random_sample";
        assert_eq!(
            method_expression("np_random_seed", &names, source),
            "np.random.seed"
        );
        assert_eq!(
            method_expression(
                "test_data_astype",
                &BTreeSet::new(),
                "y = test_data.astype(int)"
            ),
            "test_data.astype"
        );
        assert_eq!(
            method_expression("test_data_astype", &BTreeSet::new(), ""),
            "test.data_astype"
        );
    }

    #[test]
    fn dtype_reprs_are_normalized() {
        assert_eq!(dtype(&Value::from("dtype('O')")), Value::from("object"));
        assert_eq!(
            dtype(&Value::from("dtype('float64')")),
            Value::from("float64")
        );
        assert_eq!(
            dtype(&Value::from("torch.int64")),
            Value::from("torch.int64")
        );
    }
}
