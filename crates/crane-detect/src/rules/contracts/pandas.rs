//! pandas: the option arguments of frame methods and functions (pandas 0.25 to 3.x).

use super::Accepts::{NonEmpty, OneOf};
use super::Callee::{FrameMethod, Function};
use super::{Domain, Size, SizesAgree};

const MERGE_HOW: &[&str] = &[
    "left",
    "right",
    "outer",
    "inner",
    "cross",
    "left_anti",
    "right_anti",
    "asof",
];

pub(crate) const DOMAINS: &[Domain] = &[
    Domain {
        id: "pandas.concat.objs",
        callee: Function("pandas", "concat"),
        param: "objs",
        position: Some(0),
        accepts: NonEmpty,
        exception: "ValueError",
    },
    Domain {
        id: "pandas.merge.how",
        callee: Function("pandas", "merge"),
        param: "how",
        position: Some(2),
        accepts: OneOf(MERGE_HOW),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.merge.how",
        callee: FrameMethod("merge"),
        param: "how",
        position: Some(1),
        accepts: OneOf(MERGE_HOW),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.join.how",
        callee: FrameMethod("join"),
        param: "how",
        position: Some(2),
        accepts: OneOf(MERGE_HOW),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.concat.join",
        callee: Function("pandas", "concat"),
        param: "join",
        position: None,
        accepts: OneOf(&["inner", "outer"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.dropna.how",
        callee: FrameMethod("dropna"),
        param: "how",
        position: None,
        accepts: OneOf(&["any", "all"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.corr.method",
        callee: FrameMethod("corr"),
        param: "method",
        position: Some(0),
        accepts: OneOf(&["pearson", "kendall", "spearman"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.drop_duplicates.keep",
        callee: FrameMethod("drop_duplicates"),
        param: "keep",
        position: None,
        accepts: OneOf(&["first", "last"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.sort_values.na_position",
        callee: FrameMethod("sort_values"),
        param: "na_position",
        position: None,
        accepts: OneOf(&["first", "last"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.astype.errors",
        callee: FrameMethod("astype"),
        param: "errors",
        position: None,
        accepts: OneOf(&["raise", "ignore"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.to_datetime.errors",
        callee: Function("pandas", "to_datetime"),
        param: "errors",
        position: Some(1),
        accepts: OneOf(&["raise", "coerce", "ignore"]),
        exception: "ValueError",
    },
    Domain {
        id: "pandas.DataFrame.plot.kind",
        callee: FrameMethod("plot"),
        param: "kind",
        position: None,
        accepts: OneOf(&[
            "line", "bar", "barh", "hist", "box", "kde", "density", "area", "pie", "scatter",
            "hexbin",
        ]),
        exception: "ValueError",
    },
];

/// Constructors whose arguments must agree in size (pandas raises `ValueError: Shape of passed
/// values is ..., indices imply ...` or `Length of values ... does not match length of index`).
pub(crate) const SIZES: &[SizesAgree] = &[
    SizesAgree {
        id: "pandas.DataFrame.columns",
        callee: Function("pandas", "DataFrame"),
        first: ("data", Some(0), Size::ArrayWidth),
        second: ("columns", Some(2), Size::AxisLabels),
        exception: "ValueError",
    },
    SizesAgree {
        id: "pandas.DataFrame.index",
        callee: Function("pandas", "DataFrame"),
        first: ("data", Some(0), Size::Length),
        second: ("index", Some(1), Size::AxisLabels),
        exception: "ValueError",
    },
    SizesAgree {
        id: "pandas.Series.index",
        callee: Function("pandas", "Series"),
        first: ("data", Some(0), Size::Length),
        second: ("index", Some(1), Size::AxisLabels),
        exception: "ValueError",
    },
];
