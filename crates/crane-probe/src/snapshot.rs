//! Kernel snapshots: a copy-on-write fork of the kernel taken before a cell runs, blocked and
//! using no CPU until it is dropped (`python/crane_snapshot.py`, injected like the dry-run
//! module, whose refusals it shares).
//!
//! This module owns the calls into the kernel ([`take`], [`drop_snapshots`]) and the judgement
//! of whether a cell can change the kernel's state at all ([`cannot_change_state`]); the proxy
//! owns the list of snapshots, their ages and the watch of their memory.

use std::time::Duration;

use crane_kernel::KernelSession;
use ruff_python_ast::{Expr, Stmt};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::dry_run::DryRunError;
use crate::expression::fnv1a;
use crate::module::KernelModule;

/// The snapshot module's Python source: the dry run's module (its refusals and helpers), then
/// the snapshot's functions.
pub const SNAPSHOT_SOURCE: &str = concat!(
    include_str!("../python/crane_guard.py"),
    include_str!("../python/crane_channel.py"),
    include_str!("../python/crane_dryrun.py"),
    include_str!("../python/crane_snapshot.py")
);

/// The private name of the snapshot module in the kernel's `sys.modules`.
pub const SNAPSHOT_MODULE: &str = "_crane_snapshot";

/// `SNAPSHOT_PROTOCOL` in the Python module.
const PROTOCOL: u64 = 1;

const SNAPSHOT: KernelModule = KernelModule {
    name: SNAPSHOT_MODULE,
    source: SNAPSHOT_SOURCE,
    digest: fnv1a(SNAPSHOT_SOURCE.as_bytes()),
    filename: "<crane-snapshot-module>",
    key: "crane_snapshot",
};

/// How long the kernel may take to fork (page tables of a large kernel) or to reap.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// What [`take`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Taken {
    /// The snapshot lives as process `pid`.
    Snapshot { pid: u32, fork: Duration },
    /// A fork is unsafe in this kernel: the reasons, one sentence each.
    Refused { reasons: Vec<String> },
}

/// Answer of [`take`]: the snapshot, and the snapshots the kernel found ended and reaped.
#[derive(Debug, Clone, PartialEq)]
pub struct TakeAnswer {
    pub taken: Taken,
    pub reaped: Vec<u32>,
}

#[derive(Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum RawTake {
    Taken {
        pid: u32,
        fork_ms: f64,
        reaped: Vec<u32>,
    },
    Refused {
        reasons: Vec<String>,
        reaped: Vec<u32>,
    },
}

/// Drop the snapshots `drop` names, then fork a new one of the kernel as it is now.
pub async fn take(session: &mut KernelSession, drop: &[u32]) -> Result<TakeAnswer, DryRunError> {
    let answer = call(session, "take", &json!({ "drop": drop })).await?;
    Ok(
        match serde_json::from_value(answer).map_err(DryRunError::Malformed)? {
            RawTake::Taken {
                pid,
                fork_ms,
                reaped,
            } => TakeAnswer {
                taken: Taken::Snapshot {
                    pid,
                    fork: Duration::from_secs_f64(fork_ms.max(0.0) / 1000.0),
                },
                reaped,
            },
            RawTake::Refused { reasons, reaped } => TakeAnswer {
                taken: Taken::Refused { reasons },
                reaped,
            },
        },
    )
}

/// End and reap the snapshots `pids` names; returns those the kernel ended or had reaped.
pub async fn drop_snapshots(
    session: &mut KernelSession,
    pids: &[u32],
) -> Result<Vec<u32>, DryRunError> {
    #[derive(Deserialize)]
    struct Dropped {
        dropped: Vec<u32>,
        reaped: Vec<u32>,
    }
    let answer = call(session, "drop", &json!({ "pids": pids })).await?;
    let answer: Dropped = serde_json::from_value(answer).map_err(DryRunError::Malformed)?;
    Ok(answer.dropped.into_iter().chain(answer.reaped).collect())
}

async fn call(
    session: &mut KernelSession,
    function: &str,
    request: &Value,
) -> Result<Value, DryRunError> {
    let text = SNAPSHOT
        .call(session, function, request, CALL_TIMEOUT)
        .await?;
    let answer: Value = serde_json::from_str(&text).map_err(DryRunError::Malformed)?;
    match answer.get("protocol").and_then(Value::as_u64) {
        Some(PROTOCOL) => Ok(answer),
        found => Err(DryRunError::Protocol {
            found: found.unwrap_or(0),
        }),
    }
}

/// Functions and methods that only read or show what they are given, whatever object they
/// are called on in the data libraries (pandas, numpy, the builtins).
const READ_ONLY_CALLS: &[&str] = &[
    "print", "display", "len", "repr", "str", "type", "head", "tail", "describe", "info",
];

/// Whether the cell certainly leaves the kernel's state as it is: only expression statements
/// over names, attributes, subscripts, literals and operators, calling nothing but
/// [`READ_ONLY_CALLS`]. Everything else (an assignment, an import, a magic, a definition, any
/// other call) may change it. Displaying the value of the last expression adds it to `Out` and
/// `_`, which a snapshot does not need to take back.
pub fn cannot_change_state(code: &str) -> bool {
    // IPython's escapes (`%magic`, `!cmd`, `obj?`) are no Python a parser can judge.
    if code.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with('%') || line.starts_with('!')
    }) || code.contains('?')
    {
        return false;
    }
    let Ok(parsed) = ruff_python_parser::parse_module(code) else {
        return false;
    };
    let body = &parsed.syntax().body;
    body.iter().all(|statement| match statement {
        Stmt::Expr(statement) => read_only(&statement.value),
        _ => false,
    })
}

fn read_only(expr: &Expr) -> bool {
    let all = |exprs: &[Expr]| exprs.iter().all(read_only);
    let optional = |expr: &Option<Box<Expr>>| expr.as_deref().is_none_or(read_only);
    match expr {
        Expr::Name(_)
        | Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BytesLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_)
        | Expr::EllipsisLiteral(_) => true,
        Expr::Attribute(attribute) => read_only(&attribute.value),
        Expr::Subscript(subscript) => read_only(&subscript.value) && read_only(&subscript.slice),
        Expr::Slice(slice) => {
            optional(&slice.lower) && optional(&slice.upper) && optional(&slice.step)
        }
        Expr::BinOp(op) => read_only(&op.left) && read_only(&op.right),
        Expr::UnaryOp(op) => read_only(&op.operand),
        Expr::Compare(compare) => read_only(&compare.left) && all(&compare.comparators),
        Expr::BoolOp(op) => all(&op.values),
        Expr::Tuple(tuple) => all(&tuple.elts),
        Expr::List(list) => all(&list.elts),
        Expr::Dict(dict) => dict
            .items
            .iter()
            .all(|item| item.key.as_ref().is_none_or(read_only) && read_only(&item.value)),
        Expr::Call(call) => {
            let name = match call.func.as_ref() {
                Expr::Name(name) => Some(name.id.as_str()),
                Expr::Attribute(attribute) => {
                    read_only(&attribute.value).then_some(attribute.attr.as_str())
                }
                _ => None,
            };
            name.is_some_and(|name| READ_ONLY_CALLS.contains(&name))
                && all(&call.arguments.args)
                && call
                    .arguments
                    .keywords
                    .iter()
                    .all(|keyword| read_only(&keyword.value))
        }
        // A walrus, lambda, await, yield, comprehension, f-string or starred expression may
        // bind, run or change something.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_of_existing_objects_cannot_change_state() {
        for code in [
            "df",
            "df.head()",
            "df.shape, df.dtypes",
            "print(df['a'].iloc[0:3], len(df))",
            "# a comment\ndf.describe()\nx + 1",
            "display(df.tail(3))",
            "# only a comment",
        ] {
            assert!(cannot_change_state(code), "{code:?}");
        }
    }

    #[test]
    fn anything_that_may_change_state_takes_a_snapshot() {
        for code in [
            "x = 1",
            "df['a'] = 0",
            "df.drop(columns=['a'], inplace=True)",
            "items.append(1)",
            "model.fit(X, y)",
            "import numpy",
            "del x",
            "(y := 3)",
            "%matplotlib inline",
            "!ls",
            "df?",
            "[f(x) for x in xs]",
            "f'{g()}'",
            "def f(): pass",
            "df[",
        ] {
            assert!(!cannot_change_state(code), "{code:?}");
        }
    }
}
