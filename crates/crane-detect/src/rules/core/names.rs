//! Names: NB001 undefined-name, a name bound nowhere Python would look.

use super::interp::Interp;
use crate::rules::RuleCode;

pub(crate) use crane_analysis::is_builtin;

/// NB001: a name read where it is bound nowhere. `deleted`: the cell deleted it earlier.
pub(crate) fn undefined_name(interp: &mut Interp, name: &str, line: u32, deleted: bool) {
    if deleted {
        interp.report(
            RuleCode::UndefinedName,
            line,
            format!("`{name}` is read on line {line} after the cell deleted it with `del`."),
            vec![format!("`del {name}` earlier in the cell")],
        );
        return;
    }
    let in_kernel_missing = interp.runtime.missing.iter().any(|m| m == name);
    // Facts from crane's probe (they carry their cost) say what the live kernel lacks; the
    // executed cells may not be all the kernel has run. Recorded facts list only some names, so
    // there the executed cells decide.
    let from_probe = interp.runtime.cost.is_some();
    let kernel = interp.kernel;
    let bound_somewhere = kernel.bound.contains(name) || kernel.dynamic_names;
    if !in_kernel_missing && (from_probe || bound_somewhere) {
        return;
    }
    let evidence = if in_kernel_missing {
        vec![format!("kernel: no variable `{name}`")]
    } else {
        vec![format!(
            "executed cells: none binds `{name}`, no star import"
        )]
    };
    // The crane kernel's checker says again where the name was last bound, by execution
    // count (it reads the name from the sentence's start: keep `` `name` is not defined``).
    let bound_by = if bound_somewhere {
        "the kernel does not hold it, though an executed cell binds it"
    } else {
        "no executed cell binds it"
    };
    interp.report(
        RuleCode::UndefinedName,
        line,
        format!(
            "`{name}` is not defined: it is not a builtin, {bound_by} and the cell does not bind it before line {line}."
        ),
        evidence,
    );
}
