//! matplotlib, seaborn, statsmodels plots: PL001-PL004.

use crane_analysis::Constant;
use crane_runtime::Kind;

use super::facts::{columns_evidence, known_columns, rows};
use crate::rules::core::interp::{Args, Effect, Interp};
use crate::rules::core::value::{Obj, Sequence, Value};
use crate::rules::RuleCode;

/// The length of a sequence argument, when known.
fn length(value: &Value) -> Option<(u64, String)> {
    match value {
        Value::Object(obj) => {
            let len = match obj.kind() {
                Kind::Ndarray | Kind::Series | Kind::Tensor => rows(&obj.var),
                Kind::List | Kind::Tuple | Kind::Range | Kind::Index => obj.var.len(),
                _ => None,
            }?;
            Some((len, obj.label.clone()))
        }
        Value::Seq { items, .. } => Some((items.len() as u64, "a literal list".to_owned())),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => {
            Some((items.len() as u64, "a literal list".to_owned()))
        }
        _ => None,
    }
}

/// How many values a `scatter` or `bar` argument holds, read only where it is flat or its
/// whole shape is known: `scatter` flattens x and y and compares their sizes, and `bar`
/// broadcasts its arrays, so a nested list's length is not what they compare. `sizes`: an
/// array of any rank counts all its elements (`scatter`); otherwise only a 1-D array counts.
fn flat_length(value: &Value, sizes: bool) -> Option<(u64, String)> {
    let scalar = |constant: &Constant| !matches!(constant, Constant::List(_) | Constant::Tuple(_));
    match value {
        Value::Object(obj) => {
            let len = match obj.kind() {
                Kind::Ndarray | Kind::Tensor => match obj.var.shape()?.as_slice() {
                    [rows] => *rows,
                    dims if sizes => dims.iter().try_fold(1u64, |size, dim| Some(size * (*dim)?)),
                    _ => None,
                },
                Kind::Series => rows(&obj.var),
                Kind::Range | Kind::Index => obj.var.len(),
                _ => None,
            }?;
            Some((len, obj.label.clone()))
        }
        Value::Seq {
            of: Sequence::Labels,
            ..
        } => length(value),
        Value::Const(Constant::List(items) | Constant::Tuple(items)) => {
            items.iter().all(scalar).then(|| length(value))?
        }
        Value::Seq { items, .. } => items
            .iter()
            .all(|item| {
                item.as_ref()
                    .and_then(Value::constant)
                    .is_some_and(|constant| scalar(&constant))
            })
            .then(|| length(value))?,
        _ => None,
    }
}

fn report_lengths(interp: &mut Interp, call: &str, x: (u64, String), y: (u64, String), line: u32) {
    interp.report(
        RuleCode::PlotLengthMismatch,
        line,
        format!(
            "`{call}`: x (`{}`, length {}) and y (`{}`, length {}) differ in length.",
            x.1, x.0, y.1, y.0
        ),
        vec![
            format!("{} length: {}", x.1, x.0),
            format!("{} length: {}", y.1, y.0),
        ],
    );
}

/// `plt.plot(x, y)`, `plt.scatter(x, y)`, `plt.bar(x, h)` and the Axes methods of the same names.
pub(crate) fn xy_plot(interp: &mut Interp, function: &str, args: &Args) {
    if args.star {
        return;
    }
    let (x, y) = match function {
        "plot" => {
            if args.positional.len() < 2 || args.positional.len() > 3 {
                return;
            }
            if matches!(
                args.positional[1].value,
                Some(Value::Const(Constant::Str(_)))
            ) {
                return;
            }
            if args.positional.len() == 3
                && !matches!(
                    args.positional[2].value,
                    Some(Value::Const(Constant::Str(_)))
                )
            {
                return;
            }
            (
                args.positional[0].value.as_ref(),
                args.positional[1].value.as_ref(),
            )
        }
        "scatter" => (args.value(0, "x"), args.value(1, "y")),
        "bar" | "barh" => (args.value(0, "x"), args.value(1, "height")),
        _ => return,
    };
    let read = |value: &Value| match function {
        "plot" => length(value),
        _ => flat_length(value, function == "scatter"),
    };
    let (Some(x), Some(y)) = (x.and_then(read), y.and_then(read)) else {
        return;
    };
    let broadcast_ok = matches!(function, "bar" | "barh") && (x.0 == 1 || y.0 == 1);
    if x.0 != y.0 && !broadcast_ok {
        report_lengths(interp, &format!("{function}(...)"), x, y, args.line);
    }
}

/// seaborn: `sns.scatterplot(data=df, x='a', y='b', hue='c')` (PL002) and vectors of different
/// lengths (PL001).
pub(crate) fn seaborn(interp: &mut Interp, function: &str, args: &Args) {
    if args.star || !function.ends_with("plot") {
        return;
    }
    let data = args.keyword_value("data").or_else(|| {
        // seaborn's only positional parameter is `data` (0.12 and later).
        args.positional.first().and_then(|a| a.value.as_ref())
    });
    let names = ["x", "y", "hue", "size", "style", "col", "row"];
    if let Some(Value::Object(frame)) = data {
        if frame.kind() == Kind::Dataframe {
            let frame = frame.clone();
            for name in names {
                let Some(Constant::Str(column)) =
                    args.keyword_value(name).and_then(Value::constant)
                else {
                    continue;
                };
                if missing_column(interp, &frame, &column) {
                    let columns = known_columns(&frame.var).unwrap_or_default();
                    interp.report(
                        RuleCode::PlotMissingColumn,
                        args.line,
                        format!(
                            "`sns.{function}(..., {name}='{column}')`: `{}` has no column '{column}'.",
                            frame.label
                        ),
                        vec![columns_evidence(&frame.label, &columns)],
                    );
                    return;
                }
            }
        }
        return;
    }
    if data.is_some() {
        return;
    }
    if let (Some(x), Some(y)) = (
        args.keyword_value("x").and_then(length),
        args.keyword_value("y").and_then(length),
    ) {
        if x.0 != y.0 {
            report_lengths(interp, &format!("sns.{function}(...)"), x, y, args.line);
        }
    }
}

/// Whether a frame lacks a column that could not be an index level either.
fn missing_column(interp: &Interp, frame: &Obj, column: &str) -> bool {
    let Some(columns) = known_columns(&frame.var) else {
        return false;
    };
    if columns.iter().any(|c| c.name == *column) {
        return false;
    }
    // seaborn also accepts index level names.
    match frame.var.r.get("index").and_then(|i| i.as_object()) {
        Some(index) => {
            index.get("name").is_some_and(|n| n.is_null())
                && index.get("nlevels").and_then(|n| n.as_u64()).unwrap_or(1) == 1
        }
        None => frame
            .source
            .as_ref()
            .is_some_and(|s| !interp.kernel.named_index.contains(s)),
    }
}

/// `df.plot(x=..., y=...)`, `df.hist(column=...)`, `df.boxplot(column=..., by=...)`: pandas
/// selects `x`, `y` and `column` among the columns and groups by `by` (which may also name an
/// index level), raising `KeyError` for a label it does not find.
pub(crate) fn frame_plot(interp: &mut Interp, frame: &Obj, method: &str, args: &Args) {
    let keywords: &[&str] = match method {
        "plot" => &["x", "y"],
        "hist" => &["column", "by"],
        _ => &["column", "by"],
    };
    for keyword in keywords {
        let Some(Constant::Str(column)) = args.keyword_value(keyword).and_then(Value::constant)
        else {
            continue;
        };
        let Some(columns) = known_columns(&frame.var) else {
            return;
        };
        let missing = if *keyword == "by" {
            missing_column(interp, frame, &column)
        } else {
            !columns.iter().any(|c| c.name == *column)
        };
        if missing {
            interp.report_raising(
                RuleCode::PlotMissingColumn,
                "KeyError",
                args.line,
                format!(
                    "`{}.{method}(..., {keyword}='{column}')`: the frame has no column '{column}'.",
                    frame.label
                ),
                vec![columns_evidence(&frame.label, &columns)],
            );
            return;
        }
    }
}

/// PL003: `plot_acf(x, lags=k)` needs k < len(x); `plot_pacf` needs k < len(x) / 2.
pub(crate) fn autocorrelation(interp: &mut Interp, function: &str, args: &Args) {
    let Some(series) = args.value(0, "x").and_then(Value::obj).cloned() else {
        return;
    };
    let samples = match series.kind() {
        Kind::Series => rows(&series.var),
        Kind::Ndarray => match series.var.shape().as_deref() {
            Some([Some(n)]) | Some([Some(n), Some(1)]) => Some(*n),
            _ => None,
        },
        _ => None,
    };
    let Some(samples) = samples else {
        return;
    };
    let lags = match args.value(2, "lags").and_then(Value::constant) {
        Some(Constant::Int(lags)) if lags >= 0 => lags as u64,
        Some(Constant::List(items)) | Some(Constant::Tuple(items)) => items
            .iter()
            .filter_map(|i| match i {
                Constant::Int(n) if *n >= 0 => Some(*n as u64),
                _ => None,
            })
            .max()
            .unwrap_or(0),
        _ => return,
    };
    // acf: at most `nobs - 1` lags; pacf: at most `nobs // 2`.
    let (limit, rule) = if function == "plot_pacf" {
        (samples / 2, "at most half the number of observations")
    } else {
        (
            samples.saturating_sub(1),
            "fewer than the number of observations",
        )
    };
    if lags > limit {
        interp.report(
            RuleCode::AcfTooManyLags,
            args.line,
            format!(
                "`{function}({}, lags={lags})`: lags must be {rule} ({samples} observations).",
                series.label
            ),
            vec![format!("{} length: {samples}", series.label)],
        );
    }
}

/// Dispatch of plotting functions by qualified name.
pub(crate) fn function(interp: &mut Interp, name: &str, args: &Args) -> Option<Effect> {
    if let Some(function) = name.strip_prefix("matplotlib.pyplot.") {
        match function {
            "subplots" => return Some(Effect::Pure(subplots(interp, args))),
            "subplot" => {
                subplot(interp, "plt.subplot", args);
                return Some(Effect::Pure(None));
            }
            "figure" => {
                let figure = crane_runtime::Variable::new("matplotlib.figure.Figure", Kind::Figure);
                return Some(Effect::Pure(Some(interp.derived(
                    None,
                    figure,
                    "plt.figure()",
                ))));
            }
            _ => {}
        }
        xy_plot(interp, function, args);
        return Some(Effect::Pure(None));
    }
    if let Some(function) = name.strip_prefix("seaborn.") {
        seaborn(interp, function, args);
        return Some(Effect::Pure(None));
    }
    if name.starts_with("statsmodels.") {
        let function = name.rsplit('.').next().unwrap_or_default();
        if matches!(function, "plot_acf" | "plot_pacf") {
            autocorrelation(interp, function, args);
        }
        return Some(Effect::Pure(None));
    }
    None
}

/// `plt.subplots(nrows, ncols)`: the figure and its axes (one Axes, or an array of them).
fn subplots(interp: &mut Interp, args: &Args) -> Option<Value> {
    // `subplots(nrows=1, ncols=1, *, sharex, sharey, squeeze=True, ...)`.
    if args.star || args.positional.len() > 2 {
        return None;
    }
    // A count given with a value not known is unknown, wherever it is given.
    let count = |position: usize, name: &str| match args.arg(position, name) {
        None => Some(1),
        Some(arg) => arg
            .value
            .as_ref()?
            .int()
            .filter(|n| *n > 0)
            .map(|n| n as u64),
    };
    let (rows, columns) = (count(0, "nrows")?, count(1, "ncols")?);
    let squeeze = match args.keyword_value("squeeze") {
        None if !args.has_keyword("squeeze") => true,
        value => value?.bool()?,
    };
    let axes = if squeeze && rows == 1 && columns == 1 {
        crane_runtime::Variable::new("matplotlib.axes._axes.Axes", Kind::Axes)
    } else {
        let shape = if squeeze && (rows == 1 || columns == 1) {
            vec![Some(rows.max(columns))]
        } else {
            vec![Some(rows), Some(columns)]
        };
        super::facts::array(&shape, Some("object"))
    };
    let axes = interp.derived(None, axes, "the axes of plt.subplots(...)");
    let figure = crane_runtime::Variable::new("matplotlib.figure.Figure", Kind::Figure);
    let figure = interp.derived(None, figure, "the figure of plt.subplots(...)");
    Some(Value::Seq {
        items: vec![Some(figure), Some(axes)],
        of: Sequence::Tuple,
    })
}

/// PL004: `subplot(rows, columns, index)` needs `1 <= index <= rows * columns`.
pub(crate) fn subplot(interp: &mut Interp, call: &str, args: &Args) {
    if args.star || args.positional.len() != 3 {
        return;
    }
    let (Some(rows), Some(columns)) = (
        args.positional[0].value.as_ref().and_then(Value::int),
        args.positional[1].value.as_ref().and_then(Value::int),
    ) else {
        return;
    };
    let (low, high) = match &args.positional[2].value {
        Some(Value::Ints { low, high }) => (*low, *high),
        Some(value) => match value.int() {
            Some(index) => (index, index),
            None => return,
        },
        None => return,
    };
    let count = rows.saturating_mul(columns);
    if rows < 1 || columns < 1 {
        return;
    }
    let wrong = if high > count {
        high
    } else if low < 1 {
        low
    } else {
        return;
    };
    let index_text = interp.cell.text(args.positional[2].expr);
    interp.report(
        RuleCode::SubplotIndexOutOfRange,
        args.line,
        format!(
            "`{call}({rows}, {columns}, {index_text})`: the index reaches {wrong}, but a {rows}x{columns} grid has positions 1 to {count}."
        ),
        vec![match low == high {
            true => format!("{index_text} is {low}"),
            false => format!("{index_text} takes values from {low} to {high}"),
        }],
    );
}
