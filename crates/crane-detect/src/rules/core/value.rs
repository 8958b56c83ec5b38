//! Abstract values: what the rules know about the value of an expression at a point of the cell.
//!
//! Data objects are described in the runtime-facts vocabulary itself (a [`Variable`]), whether
//! they come from the kernel or were derived inside the cell (`X = df.drop('a', axis=1)`), so
//! every rule reads facts the same way. A value the rules cannot follow is `None` (unknown).

use std::rc::Rc;

use crane_analysis::{Constant, Indexer};
use crane_runtime::{Kind, Section, Variable};

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

/// The identities of the data objects a value holds.
pub(crate) fn object_ids(value: &Value) -> Vec<u32> {
    match value {
        Value::Object(obj) => vec![obj.id],
        Value::Indexer(obj, _) => vec![obj.id],
        Value::Seq { items, .. } => items.iter().flatten().flat_map(object_ids).collect(),
        Value::Dict(items) => items
            .iter()
            .flat_map(|(key, item)| key.iter().chain(item.iter()))
            .flat_map(object_ids)
            .collect(),
        _ => Vec::new(),
    }
}

/// How Python code names the indexer (`loc`).
pub(crate) fn indexer_name(indexer: Indexer) -> &'static str {
    match indexer {
        Indexer::Loc => "loc",
        Indexer::Iloc => "iloc",
        Indexer::At => "at",
        Indexer::Iat => "iat",
    }
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

pub(crate) fn constant_text(constant: &Constant) -> String {
    super::cell::render_constant(constant).unwrap_or_else(|| format!("{constant:?}"))
}
