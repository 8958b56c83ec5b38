//! The runtime-facts document of `docs/runtime-facts.md` as Rust types, with typed accessors.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An ordered JSON object of facts (one of the S, R, V sections).
pub type Facts = serde_json::Map<String, Value>;

/// Runtime information: what the live objects a cell reads look like.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Keyed by expression (`df`, `model.fit`, `df['Age']`).
    #[serde(default)]
    pub variables: BTreeMap<String, Variable>,
    /// Names the cell reads that are neither bound in the kernel nor builtins.
    #[serde(default)]
    pub missing: Vec<String>,
    /// Versions of the libraries the kernel has imported (`numpy` -> `2.4.6`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub libraries: BTreeMap<String, String>,
    /// Names held by the run-time registries of the libraries the kernel has imported
    /// (`matplotlib.scale` -> the scale names), which code may extend.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub registries: BTreeMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

/// What collecting the information cost in the kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub ms: f64,
    pub bytes: u64,
    #[serde(default)]
    pub sampled: bool,
}

/// Where a name was last bound: code-cell index (0-based) and line (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Origin {
    pub cell: u32,
    pub line: u32,
}

/// The three sections of facts about an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// Structure: shapes, lengths, sizes.
    S,
    /// Representation and type: dtypes, columns, devices, signatures.
    R,
    /// Value semantics: ranges, NaN, fitted state, examples.
    V,
}

impl Section {
    pub const ALL: [Section; 3] = [Section::S, Section::R, Section::V];

    pub fn letter(self) -> char {
        match self {
            Section::S => 'S',
            Section::R => 'R',
            Section::V => 'V',
        }
    }
}

/// Whether a fact describes the whole object or only a sample of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Certainty {
    /// Computed on the whole object.
    Exact,
    /// Computed on a sample: a positive finding (a NaN seen, a value seen) holds, an absence
    /// or a range is only a lower bound.
    Sampled,
}

/// The summary of one live object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    /// `module.qualname` of the object's type.
    #[serde(rename = "type")]
    pub type_name: String,
    pub kind: Kind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// Some V fact was computed on a sample.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sampled: bool,
    /// Why the summarizer failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(rename = "S", default)]
    pub s: Facts,
    #[serde(rename = "R", default)]
    pub r: Facts,
    #[serde(rename = "V", default)]
    pub v: Facts,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The kind of a live object (see `docs/runtime-facts.md`); unknown names read as `Other`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    #[serde(rename = "none")]
    NoneType,
    Bool,
    Int,
    Float,
    Complex,
    Str,
    Bytes,
    List,
    Tuple,
    Set,
    Dict,
    Range,
    Function,
    Class,
    Method,
    Builtin,
    Pymodule,
    Ndarray,
    NumpyScalar,
    Dataframe,
    Series,
    Index,
    Categorical,
    Groupby,
    Estimator,
    Splitter,
    Tensor,
    TorchModule,
    Optimizer,
    Dataloader,
    Dataset,
    TfTensor,
    KerasModel,
    KerasLayer,
    TfDataset,
    KerasIterator,
    History,
    Figure,
    Axes,
    Absent,
    #[serde(other)]
    Other,
}

impl Kind {
    /// The kind's name as written in the JSON document.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::NoneType => "none",
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Float => "float",
            Kind::Complex => "complex",
            Kind::Str => "str",
            Kind::Bytes => "bytes",
            Kind::List => "list",
            Kind::Tuple => "tuple",
            Kind::Set => "set",
            Kind::Dict => "dict",
            Kind::Range => "range",
            Kind::Function => "function",
            Kind::Class => "class",
            Kind::Method => "method",
            Kind::Builtin => "builtin",
            Kind::Pymodule => "pymodule",
            Kind::Ndarray => "ndarray",
            Kind::NumpyScalar => "numpy_scalar",
            Kind::Dataframe => "dataframe",
            Kind::Series => "series",
            Kind::Index => "index",
            Kind::Categorical => "categorical",
            Kind::Groupby => "groupby",
            Kind::Estimator => "estimator",
            Kind::Splitter => "splitter",
            Kind::Tensor => "tensor",
            Kind::TorchModule => "torch_module",
            Kind::Optimizer => "optimizer",
            Kind::Dataloader => "dataloader",
            Kind::Dataset => "dataset",
            Kind::TfTensor => "tf_tensor",
            Kind::KerasModel => "keras_model",
            Kind::KerasLayer => "keras_layer",
            Kind::TfDataset => "tf_dataset",
            Kind::KerasIterator => "keras_iterator",
            Kind::History => "history",
            Kind::Figure => "figure",
            Kind::Axes => "axes",
            Kind::Absent => "absent",
            Kind::Other => "other",
        }
    }

    /// Callables: calling them is what the cell does with them, their data facts are empty.
    pub fn is_callable(self) -> bool {
        matches!(
            self,
            Kind::Function | Kind::Class | Kind::Method | Kind::Builtin
        )
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A DataFrame column name: a JSON scalar (a non-JSON name is carried as its `repr` string).
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnName {
    Str(String),
    Int(i64),
    /// Floats, booleans, nulls: rare column names, kept as JSON.
    Other(Value),
}

impl ColumnName {
    pub fn from_json(value: &Value) -> ColumnName {
        match value {
            Value::String(s) => ColumnName::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => ColumnName::Int(i),
                None => ColumnName::Other(value.clone()),
            },
            other => ColumnName::Other(other.clone()),
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            ColumnName::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The key as it is used in `V.columns` (a JSON object key).
    pub fn key(&self) -> String {
        match self {
            ColumnName::Str(s) => s.clone(),
            ColumnName::Int(i) => i.to_string(),
            ColumnName::Other(v) => v.to_string(),
        }
    }
}

impl fmt::Display for ColumnName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

impl PartialEq<str> for ColumnName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == Some(other)
    }
}

impl PartialEq<&str> for ColumnName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == Some(*other)
    }
}

/// One entry of `R.columns`.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub name: ColumnName,
    pub dtype: Option<String>,
}

/// What `R.attributes` says about an attribute of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttrPresence {
    Method,
    Attribute,
    Absent,
}

impl RuntimeInfo {
    pub fn get(&self, expression: &str) -> Option<&Variable> {
        self.variables.get(expression)
    }

    pub fn is_empty(&self) -> bool {
        self.variables.is_empty() && self.missing.is_empty()
    }
}

impl Variable {
    /// A variable with a type and kind and no facts yet.
    pub fn new(type_name: impl Into<String>, kind: Kind) -> Variable {
        Variable {
            type_name: type_name.into(),
            kind,
            origin: None,
            sampled: false,
            error: None,
            s: Facts::new(),
            r: Facts::new(),
            v: Facts::new(),
        }
    }

    pub fn section(&self, section: Section) -> &Facts {
        match section {
            Section::S => &self.s,
            Section::R => &self.r,
            Section::V => &self.v,
        }
    }

    pub fn section_mut(&mut self, section: Section) -> &mut Facts {
        match section {
            Section::S => &mut self.s,
            Section::R => &mut self.r,
            Section::V => &mut self.v,
        }
    }

    /// A fact by section and key.
    pub fn fact(&self, section: Section, key: &str) -> Option<&Value> {
        self.section(section).get(key)
    }

    /// S and R facts are always exact; V facts are exact unless the object was sampled.
    pub fn certainty(&self, section: Section) -> Certainty {
        if section == Section::V && self.sampled {
            Certainty::Sampled
        } else {
            Certainty::Exact
        }
    }

    /// The type's last dotted component (`DataFrame` for `pandas.core.frame.DataFrame`).
    pub fn short_type(&self) -> &str {
        self.type_name.rsplit('.').next().unwrap_or(&self.type_name)
    }

    pub fn is_absent(&self) -> bool {
        self.kind == Kind::Absent
    }

    // S

    /// `S.shape`; `None` inside for unknown dimensions.
    pub fn shape(&self) -> Option<Vec<Option<u64>>> {
        dims(self.s.get("shape")?)
    }

    pub fn ndim(&self) -> Option<u64> {
        u64_of(self.s.get("ndim")).or_else(|| self.shape().map(|shape| shape.len() as u64))
    }

    /// `S.len`: length of a sized object (batches for a dataloader).
    pub fn len(&self) -> Option<u64> {
        u64_of(self.s.get("len"))
    }

    /// `S.len == 0`, when the length is known.
    pub fn is_empty(&self) -> Option<bool> {
        self.len().map(|len| len == 0)
    }

    pub fn n_features_in(&self) -> Option<u64> {
        u64_of(self.s.get("n_features_in"))
    }

    pub fn batch_size(&self) -> Option<u64> {
        u64_of(self.s.get("batch_size"))
    }

    pub fn n_batches(&self) -> Option<u64> {
        u64_of(self.s.get("n_batches"))
    }

    /// `S.n_samples` (tf datasets use -1 for infinite, -2 for unknown).
    pub fn n_samples(&self) -> Option<i64> {
        self.s.get("n_samples")?.as_i64()
    }

    pub fn image_shape(&self) -> Option<Vec<Option<u64>>> {
        dims(self.s.get("image_shape")?)
    }

    pub fn input_shape(&self) -> Option<Vec<Option<u64>>> {
        dims(self.s.get("input_shape")?)
    }

    pub fn output_shape(&self) -> Option<Vec<Option<u64>>> {
        dims(self.s.get("output_shape")?)
    }

    // R

    pub fn dtype(&self) -> Option<&str> {
        self.r.get("dtype")?.as_str()
    }

    /// `R.columns` with their dtypes, in frame order.
    pub fn columns(&self) -> Option<Vec<Column>> {
        let columns = self.r.get("columns")?.as_array()?;
        Some(
            columns
                .iter()
                .filter_map(|column| {
                    let column = column.as_object()?;
                    Some(Column {
                        name: ColumnName::from_json(column.get("name")?),
                        dtype: column
                            .get("dtype")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    })
                })
                .collect(),
        )
    }

    pub fn column_names(&self) -> Option<Vec<ColumnName>> {
        Some(self.columns()?.into_iter().map(|c| c.name).collect())
    }

    /// Whether the frame has a column of this name (`None` when the columns are unknown or
    /// were truncated and the name is not among those listed).
    pub fn has_column(&self, name: &str) -> Option<bool> {
        let found = self.columns()?.iter().any(|c| c.name == name);
        if found || !self.columns_truncated() {
            Some(found)
        } else {
            None
        }
    }

    fn columns_truncated(&self) -> bool {
        u64_of(self.r.get("columns_truncated")).is_some_and(|n| n > 0)
    }

    pub fn column_dtype(&self, name: &str) -> Option<String> {
        self.columns()?.into_iter().find(|c| c.name == name)?.dtype
    }

    /// `V.columns[name]`: the column's value facts.
    pub fn column_values(&self, name: &str) -> Option<&Facts> {
        self.v.get("columns")?.as_object()?.get(name)?.as_object()
    }

    pub fn device(&self) -> Option<&str> {
        self.r.get("device")?.as_str()
    }

    pub fn requires_grad(&self) -> Option<bool> {
        self.r.get("requires_grad")?.as_bool()
    }

    pub fn signature(&self) -> Option<&str> {
        self.r.get("signature")?.as_str()
    }

    /// `R.call_signature`: what a call of this library callable binds its arguments to.
    pub fn call_signature(&self) -> Option<crate::CallSignature> {
        serde_json::from_value(self.r.get("call_signature")?.clone()).ok()
    }

    /// `R.call_signature_unknown`: why the probe gives no signature for this library callable
    /// (a wrapper whose argument handling is not its shown signature, a C function, ...).
    pub fn call_signature_unknown(&self) -> Option<&str> {
        self.r.get("call_signature_unknown")?.as_str()
    }

    /// `R.attributes[name]`: whether the object has the attribute, and as what.
    pub fn attribute(&self, name: &str) -> Option<AttrPresence> {
        let presence = self.r.get("attributes")?.as_object()?.get(name)?;
        serde_json::from_value(presence.clone()).ok()
    }

    pub fn feature_names_in(&self) -> Option<Vec<String>> {
        strings(self.r.get("feature_names_in")?)
    }

    pub fn keys(&self) -> Option<&Vec<Value>> {
        self.r.get("keys")?.as_array()
    }

    pub fn element_types(&self) -> Option<Vec<String>> {
        strings(self.r.get("element_types")?)
    }

    // V

    pub fn has_nan(&self) -> Option<bool> {
        self.v.get("has_nan")?.as_bool()
    }

    pub fn has_inf(&self) -> Option<bool> {
        self.v.get("has_inf")?.as_bool()
    }

    pub fn nulls(&self) -> Option<u64> {
        u64_of(self.v.get("nulls"))
    }

    pub fn n_unique(&self) -> Option<u64> {
        u64_of(self.v.get("n_unique"))
    }

    /// `V.min` as a number (`"NaN"`, `"inf"`, `"-inf"` included).
    pub fn min(&self) -> Option<f64> {
        number(self.v.get("min")?)
    }

    pub fn max(&self) -> Option<f64> {
        number(self.v.get("max")?)
    }

    pub fn value(&self) -> Option<&Value> {
        self.v.get("value")
    }

    pub fn fitted(&self) -> Option<bool> {
        self.v.get("fitted")?.as_bool()
    }

    pub fn classes(&self) -> Option<&Vec<Value>> {
        self.v.get("classes")?.as_array()
    }

    pub fn n_classes(&self) -> Option<u64> {
        u64_of(self.v.get("n_classes"))
    }

    pub fn examples(&self) -> Option<&Vec<Value>> {
        self.v.get("examples")?.as_array()
    }
}

fn u64_of(value: Option<&Value>) -> Option<u64> {
    value?.as_u64()
}

fn dims(value: &Value) -> Option<Vec<Option<u64>>> {
    value
        .as_array()?
        .iter()
        .map(|d| match d {
            Value::Null => Some(None),
            other => other.as_u64().map(Some),
        })
        .collect()
}

fn strings(value: &Value) -> Option<Vec<String>> {
    value
        .as_array()?
        .iter()
        .map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// A JSON number, or one of the strings the vocabulary uses for non-finite numbers.
pub fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(f64::NAN),
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            _ => None,
        },
        _ => None,
    }
}
