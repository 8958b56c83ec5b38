//! NB005 call-signature-mismatch: a call of a library function, method or class whose
//! arguments do not bind to its signature raises `TypeError` before the library runs.
//!
//! The signature comes from the live facts (`R.call_signature` of the callee's expression) or,
//! when the facts have none and do not say why, from the compiled-in snapshot (`crate::snapshot`)
//! for a callee known by its qualified path or by its receiver's type, when the case records its
//! library's version and it has the snapshot's major.minor. Silent on `*x`/`**x` in the call, on a
//! signature the probe refused (`R.call_signature_unknown`), on user code, on names the executed
//! cells may rebind dynamically.

use crane_runtime::{CallSignature, RuntimeInfo};
use ruff_python_ast::Expr;

use crate::rules::core::interp::{Args, Interp};
use crate::rules::core::value::Value;
use crate::rules::RuleCode;
use crate::signature::{type_error, CallShape};
use crate::snapshot::{major_minor, snapshot};

/// Where a signature was found.
enum Source {
    Live,
    Snapshot(String),
}

/// Report NB005 when the call of `func` (`receiver.attr(...)` or `callee(...)`) certainly raises
/// `TypeError` on binding `args`.
pub(crate) fn check(
    interp: &mut Interp,
    func: &Expr,
    receiver: Option<&Value>,
    callee: Option<&Value>,
    args: &Args,
) {
    if args.star {
        return;
    }
    let Some((signature, source)) = signature_of(interp, func, receiver, callee) else {
        return;
    };
    let keywords: Vec<&str> = args.keywords.iter().map(|(name, _)| *name).collect();
    let shape = CallShape {
        positional: args.positional.len(),
        keywords: &keywords,
    };
    let Some(message) = type_error(&signature, shape) else {
        return;
    };
    let text = interp.cell.text(func);
    let from = match source {
        Source::Live => "the kernel".to_owned(),
        Source::Snapshot(version) => format!("the signature snapshot, {version}"),
    };
    interp.report(
        RuleCode::CallSignatureMismatch,
        args.line,
        format!("`{text}(...)` raises TypeError: {message}"),
        vec![format!(
            "{}{} (from {from})",
            signature.callable, signature.parameters
        )],
    );
}

fn signature_of(
    interp: &Interp,
    func: &Expr,
    receiver: Option<&Value>,
    callee: Option<&Value>,
) -> Option<(CallSignature, Source)> {
    let key = match (callee, receiver, func) {
        (Some(Value::Qual { key: Some(key), .. }), _, _) => Some(key.clone()),
        (Some(Value::Object(obj)), _, _) if obj.key.is_some() => obj.key.clone(),
        (_, Some(Value::Object(obj)), Expr::Attribute(attribute)) => obj
            .key
            .as_ref()
            .map(|key| format!("{key}.{}", attribute.attr)),
        _ => None,
    };
    if let Some(var) = key.as_deref().and_then(|key| interp.runtime.get(key)) {
        if var.error.is_some() || var.is_absent() {
            return None;
        }
        if let Some(signature) = var.call_signature() {
            return Some((signature, Source::Live));
        }
        // The probe refused it, or it is the user's own code.
        if var.call_signature_unknown().is_some()
            || var.signature().is_some()
            || !var.kind.is_callable()
        {
            return None;
        }
    }
    // The executed cells may have put something else there (`pd.read_csv = ...`).
    let assigned = matches!(func, Expr::Attribute(attribute)
        if interp.kernel.assigned_attributes.contains(attribute.attr.as_str()));
    if interp.kernel.dynamic_names || assigned {
        return None;
    }
    // A method by its receiver's type only for a kernel object, whose type the facts give: an
    // object derived in the cell has the type a model describes it by, which a subclass-keeping
    // operation may not be.
    let path = match (callee, receiver, func) {
        (Some(Value::Qual { name, .. }), _, _) => name.as_str(),
        (_, Some(Value::Object(obj)), Expr::Attribute(_)) if obj.key.is_some() => {
            obj.var.type_name.as_str()
        }
        _ => return None,
    };
    // Whether the snapshot can apply at all, before reading it.
    let library = path.split('.').next()?;
    let ours = crate::snapshot::versions().get(library)?;
    if major_minor(interp.runtime.libraries.get(library)?) != major_minor(ours) {
        return None;
    }
    let snapshot = snapshot()?;
    let signature = match (callee, receiver, func) {
        (Some(Value::Qual { name, .. }), _, _) => snapshot.callable(name)?,
        (_, Some(Value::Object(obj)), Expr::Attribute(attribute)) => {
            snapshot.method(&obj.var.type_name, attribute.attr.as_str())?
        }
        _ => return None,
    };
    // The library the path goes through and the one that defines the function (`read_csv` is
    // reachable from statsmodels too).
    let mut versions = Vec::new();
    for reached in [path, signature.callable.as_str()] {
        let version = version_matching(interp.runtime, snapshot, reached)?;
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    Some((signature, Source::Snapshot(versions.join(", "))))
}

/// The snapshot's `library version` for the library of `path`, when the case records the
/// version of it and it has the same major.minor. Without a recorded version the snapshot is not
/// used: signatures change between versions (scikit-learn's `TSNE(n_iter=)` and
/// `mean_squared_error(squared=)` went away in 1.7 and 1.6, and recorded notebooks call them).
fn version_matching(
    runtime: &RuntimeInfo,
    snapshot: &crate::snapshot::Snapshot,
    path: &str,
) -> Option<String> {
    let library = path.split('.').next()?;
    let ours = snapshot.version(library)?;
    let theirs = runtime.libraries.get(library)?;
    (major_minor(theirs) == major_minor(ours)).then(|| format!("{library} {ours}"))
}
