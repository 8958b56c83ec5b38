//! Abstract values: what the rules know about the value of an expression at a point of the cell.
//!
//! Data objects are described in the runtime-facts vocabulary itself (a [`Variable`]), whether
//! they come from the kernel or were derived inside the cell (`X = df.drop('a', axis=1)`), so
//! every rule reads facts the same way. A value the rules cannot follow is `None` (unknown).

use std::rc::Rc;

use crane_analysis::{Constant, Indexer};
use crane_runtime::{Column, ColumnName, Kind, Section, Variable};
use serde_json::{json, Value as Json};

/// What is known about a value.
#[derive(Debug, Clone)]
pub(crate) enum Value {
    /// A data object described by facts.
    Object(Obj),
    /// A literal.
    Const(Constant),
    /// A list or tuple display; unknown items are `None`.
    Seq {
        items: Vec<Option<Value>>,
        of: Sequence,
    },
    /// A dict display with its items.
    Dict(Vec<(Option<Value>, Option<Value>)>),
    /// A module, function or class known by its qualified name (`numpy`, `pandas.read_csv`).
    Qual { name: String, key: Option<String> },
    /// A function defined in the target cell (index into the interpreter's table).
    CellFunction(usize),
    /// A pandas indexer (`df.loc`, `df.iloc`) on a frame or series.
    Indexer(Box<Obj>, Indexer),
    /// A loop index that takes every integer from `low` to `high` on iterations that certainly
    /// run.
    Ints { low: i64, high: i64 },
    /// A class defined in the target or an executed cell (index into the interpreter's table).
    UserClass(usize),
    /// An instance of such a class, shared by every name that holds it, as in Python.
    Instance(Rc<std::cell::RefCell<Instance>>),
    /// A method of the class of an instance, bound to it (function index).
    BoundMethod(Rc<std::cell::RefCell<Instance>>, usize),
    /// A slice with known bounds (`None`: omitted or `None`).
    Slice {
        lower: Option<i64>,
        upper: Option<i64>,
        step: Option<i64>,
    },
}

/// An instance of a user class: its class and the attributes set on it so far (`None`: set to
/// something unknown).
#[derive(Debug, Clone)]
pub(crate) struct Instance {
    pub class: usize,
    pub attributes: std::collections::HashMap<String, Option<Value>>,
}

/// What a [`Value::Seq`] is in the running program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sequence {
    List,
    Tuple,
    /// A pandas Index (`df.columns`) or an array of labels, known by its items.
    Labels,
}

/// A data object.
#[derive(Debug, Clone)]
pub(crate) struct Obj {
    pub var: Rc<Variable>,
    /// The runtime-facts key of this exact object, while the cell has not changed it.
    pub key: Option<String>,
    /// How a diagnosis names the object: `df`, `df.drop('a', axis=1)`.
    pub label: String,
    /// Shared by every name bound to the same object.
    pub id: u32,
    /// The kernel name this object was derived from, when it was.
    pub source: Option<String>,
}

impl Obj {
    pub fn kind(&self) -> Kind {
        self.var.kind
    }

    /// A fact that holds for the whole object: S and R facts, and V facts unless sampled.
    pub fn exact_v(&self) -> bool {
        self.var.certainty(Section::V) == crane_runtime::Certainty::Exact
    }
}

impl Value {
    pub fn obj(&self) -> Option<&Obj> {
        match self {
            Value::Object(obj) => Some(obj),
            _ => None,
        }
    }

    pub fn kind(&self) -> Option<Kind> {
        self.obj().map(Obj::kind)
    }

    /// The constant this value denotes, when all of it is known.
    pub fn constant(&self) -> Option<Constant> {
        match self {
            Value::Const(constant) => Some(constant.clone()),
            Value::Seq { items, of } => {
                let items = items
                    .iter()
                    .map(|item| item.as_ref()?.constant())
                    .collect::<Option<Vec<_>>>()?;
                Some(if *of == Sequence::Tuple {
                    Constant::Tuple(items)
                } else {
                    Constant::List(items)
                })
            }
            _ => None,
        }
    }

    /// A plain Python value computed by the evaluator: lists and tuples become displays, as the
    /// rest of the interpreter holds them.
    pub fn from_python(constant: Constant) -> Value {
        let (items, of) = match constant {
            Constant::List(items) => (items, Sequence::List),
            Constant::Tuple(items) => (items, Sequence::Tuple),
            other => return Value::Const(other),
        };
        Value::Seq {
            items: items
                .into_iter()
                .map(|item| Some(Value::from_python(item)))
                .collect(),
            of,
        }
    }

    /// The Python constant this value is, when all of it is known and it is a plain Python
    /// value (a pandas Index known by its labels is not: its operators are element-wise).
    pub fn python(&self) -> Option<Constant> {
        match self {
            Value::Const(constant) => Some(constant.clone()),
            Value::Seq { items, of } if *of != Sequence::Labels => {
                let items = items
                    .iter()
                    .map(|item| item.as_ref()?.python())
                    .collect::<Option<Vec<_>>>()?;
                Some(if *of == Sequence::Tuple {
                    Constant::Tuple(items)
                } else {
                    Constant::List(items)
                })
            }
            _ => None,
        }
    }

    pub fn int(&self) -> Option<i64> {
        match self.constant()? {
            Constant::Int(value) => Some(value),
            Constant::Bool(value) => Some(value as i64),
            _ => None,
        }
    }

    pub fn str(&self) -> Option<String> {
        match self.constant()? {
            Constant::Str(text) => Some(text),
            _ => None,
        }
    }

    /// `bool(value)`, when Python's answer is certain.
    pub fn truth(&self) -> Option<bool> {
        match self {
            Value::Seq { items, of } if *of != Sequence::Labels => Some(!items.is_empty()),
            Value::Dict(items) => Some(!items.is_empty()),
            Value::CellFunction(_) | Value::UserClass(_) | Value::BoundMethod(..) => Some(true),
            other => super::python::truth(&other.constant()?),
        }
    }

    pub fn bool(&self) -> Option<bool> {
        match self.constant()? {
            Constant::Bool(value) => Some(value),
            _ => None,
        }
    }
}

pub(crate) fn indexer_name(indexer: Indexer) -> &'static str {
    match indexer {
        Indexer::Loc => "loc",
        Indexer::Iloc => "iloc",
        Indexer::At => "at",
        Indexer::Iat => "iat",
    }
}

/// Column labels a constant names: one label, or each label of a list/tuple.
pub(crate) fn labels(constant: &Constant) -> Option<Vec<Constant>> {
    match constant {
        Constant::Str(_) | Constant::Int(_) => Some(vec![constant.clone()]),
        Constant::List(items) | Constant::Tuple(items) => {
            if items
                .iter()
                .all(|item| matches!(item, Constant::Str(_) | Constant::Int(_)))
            {
                Some(items.clone())
            } else {
                None
            }
        }
        _ => None,
    }
}

pub(crate) fn column_json(name: &ColumnName) -> Json {
    match name {
        ColumnName::Str(text) => Json::String(text.clone()),
        ColumnName::Int(value) => json!(value),
        ColumnName::Other(value) => value.clone(),
    }
}

/// The columns of a frame when all of them are known: listed completely, without duplicates,
/// as many as the shape says.
pub(crate) fn known_columns(var: &Variable) -> Option<Vec<Column>> {
    if !matches!(var.kind, Kind::Dataframe | Kind::Groupby)
        || var
            .r
            .get("columns_truncated")
            .and_then(Json::as_u64)
            .is_some_and(|n| n > 0)
        || var
            .r
            .get("duplicated_columns")
            .and_then(Json::as_array)
            .is_some_and(|d| !d.is_empty())
    {
        return None;
    }
    let columns = var.columns()?;
    if let Some(Some(width)) = var.shape().as_deref().and_then(|s| s.get(1).copied()) {
        if width != columns.len() as u64 {
            return None;
        }
    }
    Some(columns)
}

/// `S.shape` when every dimension is known.
pub(crate) fn full_shape(var: &Variable) -> Option<Vec<u64>> {
    var.shape()?.into_iter().collect()
}

/// The number of rows (first dimension), from `S.shape` or, for 1-D objects, `S.len`.
pub(crate) fn rows(var: &Variable) -> Option<u64> {
    match var.shape().as_deref().map(<[Option<u64>]>::first) {
        Some(Some(Some(rows))) => Some(*rows),
        Some(_) => None,
        None => match var.kind {
            Kind::Series | Kind::Ndarray | Kind::List | Kind::Tuple | Kind::Index => var.len(),
            _ => None,
        },
    }
}

/// A frame with a new list of columns, keeping the facts that stay true: the rows, and the
/// per-column facts of the kept columns.
pub(crate) fn frame_with_columns(source: &Variable, columns: Vec<Column>) -> Variable {
    let mut frame = Variable::new(source.type_name.clone(), Kind::Dataframe);
    frame.sampled = source.sampled;
    let shape = json!([
        rows(source).map_or(Json::Null, |rows| json!(rows)),
        columns.len()
    ]);
    frame.s.insert("shape".to_owned(), shape);
    let names: Vec<ColumnName> = columns.iter().map(|c| c.name.clone()).collect();
    frame.r.insert(
        "columns".to_owned(),
        Json::Array(
            columns
                .iter()
                .map(|column| {
                    let mut entry = serde_json::Map::new();
                    entry.insert("name".to_owned(), column_json(&column.name));
                    if let Some(dtype) = &column.dtype {
                        entry.insert("dtype".to_owned(), Json::String(dtype.clone()));
                    }
                    Json::Object(entry)
                })
                .collect(),
        ),
    );
    if let Some(index) = source.r.get("index") {
        frame.r.insert("index".to_owned(), index.clone());
    }
    if let Some(values) = source.v.get("columns").and_then(Json::as_object) {
        let kept: serde_json::Map<String, Json> = names
            .iter()
            .filter_map(|name| {
                let key = name.key();
                values.get(&key).map(|facts| (key, facts.clone()))
            })
            .collect();
        frame.v.insert("columns".to_owned(), Json::Object(kept));
    }
    // A subset of a frame without NaN has none; with NaN it may or may not.
    match source.has_nan() {
        Some(false) => {
            frame.v.insert("has_nan".to_owned(), Json::Bool(false));
        }
        Some(true) => {
            if let Some(has_nan) = columns_have_nan(&frame, &names) {
                frame.v.insert("has_nan".to_owned(), Json::Bool(has_nan));
            }
        }
        None => {}
    }
    frame
}

/// Whether some of these columns hold NaN, from the per-column null counts (exact only).
fn columns_have_nan(frame: &Variable, names: &[ColumnName]) -> Option<bool> {
    let mut any = false;
    for name in names {
        let nulls = frame.column_values(&name.key())?.get("nulls")?.as_u64()?;
        any |= nulls > 0;
    }
    if any || !frame.sampled {
        Some(any)
    } else {
        None
    }
}

/// A 1-D series holding one column of a frame.
pub(crate) fn column_series(frame: &Variable, column: &Column) -> Variable {
    let mut series = Variable::new("pandas.core.series.Series", Kind::Series);
    series.sampled = frame.sampled;
    series.s.insert(
        "shape".to_owned(),
        json!([rows(frame).map_or(Json::Null, |rows| json!(rows))]),
    );
    if let Some(dtype) = &column.dtype {
        series
            .r
            .insert("dtype".to_owned(), Json::String(dtype.clone()));
    }
    series
        .r
        .insert("name".to_owned(), column_json(&column.name));
    if let Some(index) = frame.r.get("index") {
        series.r.insert("index".to_owned(), index.clone());
    }
    if let Some(values) = frame.column_values(&column.name.key()) {
        for (key, value) in values {
            series.v.insert(key.clone(), value.clone());
        }
        if let Some(nulls) = values.get("nulls").and_then(Json::as_u64) {
            if nulls > 0 || !frame.sampled {
                series.v.insert("has_nan".to_owned(), Json::Bool(nulls > 0));
            }
        }
    }
    if frame.has_nan() == Some(false) {
        series.v.insert("has_nan".to_owned(), Json::Bool(false));
    }
    series
}

/// An ndarray of this shape (unknown dimensions `None`), with an optional dtype.
pub(crate) fn array(shape: &[Option<u64>], dtype: Option<&str>) -> Variable {
    let mut array = Variable::new("numpy.ndarray", Kind::Ndarray);
    array.s.insert(
        "shape".to_owned(),
        Json::Array(
            shape
                .iter()
                .map(|d| d.map_or(Json::Null, |d| json!(d)))
                .collect(),
        ),
    );
    if let Some(dtype) = dtype {
        array
            .r
            .insert("dtype".to_owned(), Json::String(dtype.to_owned()));
    }
    array
}

/// Render a list of names for evidence, bounded.
pub(crate) fn name_list<T: std::fmt::Display>(names: &[T]) -> String {
    const SHOWN: usize = 12;
    let mut text: Vec<String> = names.iter().take(SHOWN).map(|n| n.to_string()).collect();
    if names.len() > SHOWN {
        text.push(format!("... ({} more)", names.len() - SHOWN));
    }
    format!("[{}]", text.join(", "))
}

/// `[a, b, c]` of a frame's columns, for evidence.
pub(crate) fn columns_evidence(label: &str, columns: &[Column]) -> String {
    let names: Vec<String> = columns.iter().map(|c| c.name.to_string()).collect();
    format!("{label} columns: {}", name_list(&names))
}

pub(crate) fn shape_text(shape: &[Option<u64>]) -> String {
    let dims: Vec<String> = shape
        .iter()
        .map(|d| d.map_or("?".to_owned(), |d| d.to_string()))
        .collect();
    if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    }
}

pub(crate) fn constant_text(constant: &Constant) -> String {
    crate::rules::cell::render_constant(constant).unwrap_or_else(|| format!("{constant:?}"))
}
