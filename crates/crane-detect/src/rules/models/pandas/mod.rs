//! pandas: how frames and series flow through the cell, and the rules that prove a broken
//! pandas contract: PD001, PD003-PD009 (PD002, a frame's missing column attribute, is
//! `objects.rs`'s) and NB003 for a method a frame or series does not have. This module is the
//! model's entry points the `Library` calls (methods by receiver kind, `pandas.*` functions);
//! the work is split by job: column labels (`labels.rs`), attributes (`access.rs`), indexing and
//! column assignment (`indexing.rs`), frame and series methods (`methods.rs`), groupby
//! (`groupby.rs`), merges and joins (`merges.rs`), literals and numeric conversions
//! (`conversions.rs`).

use crane_runtime::{Kind, Variable};
use serde_json::json;

use super::attributes::{FRAME_ATTRIBUTES, PANDAS_EXTENSIONS};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Value};

mod access;
mod conversions;
mod groupby;
mod indexing;
mod labels;
mod merges;
mod methods;

pub(crate) use access::attribute;
use conversions::{conversion, frame_literal, NumericTarget};
use groupby::groupby_method;
pub(crate) use indexing::{absent_key, delete_column, indexer_subscript, store_column, subscript};
pub(crate) use labels::{holds_only_strings, plain_columns, seen_text};
use merges::merge_keys;
use methods::{frame_method, series_method};

pub(crate) fn is_frame_attribute(attr: &str) -> bool {
    FRAME_ATTRIBUTES.contains(&attr) || PANDAS_EXTENSIONS.contains(&attr)
}

const FRAME_TYPE: &str = "pandas.core.frame.DataFrame";
const SERIES_TYPE: &str = "pandas.core.series.Series";
const CATEGORICAL_TYPE: &str = "pandas.core.arrays.categorical.Categorical";

pub(crate) fn method(interp: &mut Interp, obj: &Obj, name: &str, args: &Args) -> Effect {
    match obj.kind() {
        Kind::Dataframe => frame_method(interp, obj, name, args),
        Kind::Series => series_method(interp, obj, name, args),
        Kind::Groupby => groupby_method(interp, obj, name, args),
        _ => Effect::Unknown,
    }
}

pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    let function = name.strip_prefix("pandas.")?;
    Some(match function {
        "merge" => {
            let left = args.value(0, "left").and_then(Value::obj).cloned();
            let right = args.value(1, "right").and_then(Value::obj).cloned();
            merge_keys(interp, left.as_ref(), right.as_ref(), args, args.line);
            Effect::Pure(None)
        }
        "DataFrame" => Effect::Pure(frame_literal(interp, args)),
        "to_numeric" => {
            let errors = args.keyword_value("errors").and_then(Value::str);
            if errors.is_none_or(|e| e == "raise") && !args.star {
                if let Some(series) = args.value(0, "arg").and_then(Value::obj).cloned() {
                    if series.kind() == Kind::Series {
                        let target = NumericTarget::Float;
                        conversion(
                            interp,
                            &series,
                            &series.var,
                            None,
                            target,
                            args.line,
                            "pd.to_numeric",
                        );
                    }
                }
            }
            Effect::Pure(None)
        }
        "Categorical" => {
            let mut var = Variable::new(CATEGORICAL_TYPE, Kind::Categorical);
            if let Some(length) = args.value(0, "values").and_then(super::length_of) {
                var.s.insert("len".to_owned(), json!(length));
            }
            Effect::Pure(Some(interp.derived(None, var, "pd.Categorical(...)")))
        }
        _ => Effect::Pure(None),
    })
}
