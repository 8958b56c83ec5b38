//! The Python modules crane keeps in the kernel (the probe and the dry-run module): calling a
//! function of one, and injecting it first when the kernel lacks this version. A module lives
//! in `sys.modules` under a private name, never in the user namespace; it is put there by one
//! user expression, from its compiled code when crane has it for the kernel's bytecode version
//! (`bytecode.rs`), else from its source.
//!
//! Calls go through crane's own shell message (`crane_call_request`, answered by the handler of
//! `python/crane_channel.py`), tried first in every session: no execute request, so none of
//! IPython's machinery around a cell runs, and the kernel answers in a fraction of the time.
//! Only a kernel that leaves it unanswered (crane never touched it, or it is not an ipykernel)
//! gets silent, empty execute requests: one that reads its bytecode version, one that injects
//! the module and has it serve calls; in a kernel that cannot serve them, a call is itself the
//! user expression of such a request.

use std::sync::OnceLock;
use std::time::Duration;

use crane_kernel::{CustomOutcome, CustomRequest, KernelSession};
use serde_json::{json, Value};

use crate::bytecode::{BytecodeCache, Magic};
use crate::expression::{self, fnv1a, py_str, EvaluationError};

/// The answer of an expression on a module when the kernel lacks this version of it, followed
/// by the kernel's bytecode version.
const NOT_INJECTED: &str = "crane-module-not-injected";

/// The answer of an expression when a builtin it needs is not the interpreter's own, followed
/// by `name=what replaced it` for each, `;`-separated ([`with_verified_builtins`]).
const REPLACED: &str = "crane-builtins-replaced";

/// crane's own shell message type, served by `crane_channel.py`'s handler.
pub(crate) const CALL_REQUEST: &str = "crane_call_request";

/// The user-expression name under which a call by expression also asks the kernel to serve
/// [`CALL_REQUEST`] (the kernel may evaluate it before the call, so an injection asks too).
const SERVE_KEY: &str = "crane_serve_calls";

/// What an injection's answer carries after the digest when the kernel serves [`CALL_REQUEST`].
const SERVED: &str = "+";

/// How long the kernel has to come back after crane interrupted a call that ran too long.
const INTERRUPT_GRACE: Duration = Duration::from_secs(10);

/// One module crane ships inside the binary.
pub(crate) struct KernelModule {
    /// Its private name in `sys.modules`.
    pub(crate) name: &'static str,
    pub(crate) source: &'static str,
    /// FNV-1a of `source` once computed: the version check between this binary and the
    /// kernel. Computed at run time, once per process: at compile time it would pass the
    /// steps const evaluation allows (the dry-run module is over half a megabyte).
    pub(crate) digest: &'static OnceLock<String>,
    /// The file name its code objects carry.
    pub(crate) filename: &'static str,
    /// The user-expression name of its calls.
    pub(crate) key: &'static str,
}

/// Why a call of a module gave no answer text.
pub(crate) enum ModuleError {
    Evaluation(EvaluationError),
    /// The kernel still lacks this version after injecting it.
    NotInjected,
    /// Builtins crane needs are not the interpreter's own (the user replaced them): crane
    /// refused to call them, and changed nothing in the kernel.
    BuiltinsReplaced(ReplacedBuiltins),
}

/// The builtins a kernel replaced, as `(name, what replaced it)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplacedBuiltins(pub Vec<(String, String)>);

impl std::fmt::Display for ReplacedBuiltins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the kernel's builtins ")?;
        for (i, (name, by)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{name}` ({by})")?;
        }
        f.write_str(
            " are not the interpreter's own: crane does not call code of the user's, so it \
             cannot check in this kernel (restore them, e.g. restart the kernel, to check)",
        )
    }
}

impl From<EvaluationError> for ModuleError {
    fn from(error: EvaluationError) -> Self {
        ModuleError::Evaluation(error)
    }
}

impl KernelModule {
    pub(crate) fn digest(&self) -> String {
        self.digest
            .get_or_init(|| format!("{:016x}", fnv1a(self.source.as_bytes())))
            .clone()
    }

    /// The expression that calls `function(request)` of this version of the module.
    pub(crate) fn call_expression(&self, function: &str, request: &Value) -> String {
        self.with_module(&format!(
            "module.{function}({request})",
            request = py_str(&request.to_string())
        ))
    }

    /// `then` evaluated with `module` bound to this version of the module; when the kernel
    /// holds no such module or another version, the [`NOT_INJECTED`] marker with the kernel's
    /// bytecode version instead. Only the interpreter's own `__import__` is called
    /// ([`with_verified_builtins`]); when it was replaced, the [`REPLACED`] marker.
    fn with_module(&self, then: &str) -> String {
        with_verified_builtins(
            &["__import__"],
            &format!(
                "(lambda sys: (lambda module: {then} \
                 if T(module) is MT and D.get(MD(module), 'DIGEST') == {digest} \
                 else {marker} + (lambda magic: magic if T(magic) is b''.__class__ else b'')\
                 ((lambda e: D.get(MD(e), 'MAGIC_NUMBER') if T(e) is MT else b'')\
                 (D.get(sys.modules, '_frozen_importlib_external'))).hex())\
                 (D.get(sys.modules, {name})))(snap['__import__']('sys'))",
                digest = py_str(&self.digest()),
                marker = py_str(&format!("{NOT_INJECTED}:")),
                name = py_str(self.name),
            ),
        )
    }

    /// The text of `function(request)`, injecting the module first when the kernel lacks it.
    /// crane's own message goes first, also in a session that has not yet seen the kernel
    /// serve it: a kernel an earlier `--existing` session or the crane kernel prepared answers
    /// it, and then no execute request (none of IPython's machinery) is needed at all.
    pub(crate) async fn call(
        &self,
        session: &mut KernelSession,
        function: &str,
        request: &Value,
        timeout: Duration,
    ) -> Result<String, ModuleError> {
        if session.may_handle(CALL_REQUEST) {
            match self
                .call_by_message(session, function, request, timeout)
                .await?
            {
                ByMessage::Answered(text) => return Ok(text),
                ByMessage::Missing(magic) => self.install(session, magic, timeout).await?,
                ByMessage::Unhandled => self.inject(session, timeout).await?,
            }
            if session.handles(CALL_REQUEST) {
                if let ByMessage::Answered(text) = self
                    .call_by_message(session, function, request, timeout)
                    .await?
                {
                    return Ok(text);
                }
            }
        }
        let expression = self.call_expression(function, request);
        let text = self.evaluate(session, &expression, timeout).await?;
        let text = self.refuse_replaced(session, text, timeout).await?;
        let Some(magic) = missing(&text) else {
            return Ok(text);
        };
        self.install(session, magic, timeout).await?;
        let text = self.evaluate(session, &expression, timeout).await?;
        let text = self.refuse_replaced(session, text, timeout).await?;
        match missing(&text) {
            Some(_) => Err(ModuleError::NotInjected),
            None => Ok(text),
        }
    }

    /// Makes sure the kernel holds this version; idempotent.
    pub(crate) async fn inject(
        &self,
        session: &mut KernelSession,
        timeout: Duration,
    ) -> Result<(), ModuleError> {
        let answer = self
            .evaluate(session, &self.with_module("True"), timeout)
            .await?;
        let answer = self.refuse_replaced(session, answer, timeout).await?;
        match missing(&answer) {
            Some(magic) => self.install(session, magic, timeout).await,
            None => Ok(()),
        }
    }

    /// `answer`, unless it says builtins were replaced: an answer of [`Self::with_module`]
    /// names only `__import__`, the one it calls, so the error then names every builtin
    /// crane's modules need that is not the interpreter's own.
    async fn refuse_replaced(
        &self,
        session: &mut KernelSession,
        answer: String,
        timeout: Duration,
    ) -> Result<String, ModuleError> {
        let Some(names) = replaced(&answer) else {
            return Ok(answer);
        };
        let all = self
            .evaluate(
                session,
                &with_verified_builtins(CRANE_BUILTINS, "''"),
                timeout,
            )
            .await?;
        Err(ModuleError::BuiltinsReplaced(
            replaced(&all).unwrap_or(names),
        ))
    }

    /// Evaluate `expression` under this module's key; unless the kernel is known to serve
    /// [`CALL_REQUEST`], the same request asks it to, and notes the answer in the session.
    async fn evaluate(
        &self,
        session: &mut KernelSession,
        expression: &str,
        timeout: Duration,
    ) -> Result<String, EvaluationError> {
        if session.handles(CALL_REQUEST) {
            return expression::evaluate(session, self.key, expression, timeout).await;
        }
        let serve = self.with_module("module.serve_calls()");
        let execution = expression::evaluate_all(
            session,
            &[(self.key, expression), (SERVE_KEY, &serve)],
            timeout,
        )
        .await?;
        if matches!(
            expression::answer(&execution, SERVE_KEY).as_deref(),
            Ok("True")
        ) {
            session.note_handled(CALL_REQUEST);
        }
        expression::answer(&execution, self.key)
    }

    /// `function(request)` through crane's own shell message.
    async fn call_by_message(
        &self,
        session: &mut KernelSession,
        function: &str,
        request: &Value,
        timeout: Duration,
    ) -> Result<ByMessage, EvaluationError> {
        let message = CustomRequest {
            msg_type: CALL_REQUEST.into(),
            content: self.call_content(function, request),
            timeout,
            interrupt_grace: INTERRUPT_GRACE,
        };
        let reply = match session.request(&message).await {
            Err(error) => return Err(EvaluationError::Kernel(error)),
            Ok(CustomOutcome::Unhandled) => return Ok(ByMessage::Unhandled),
            Ok(CustomOutcome::TimedOut { after }) => return Err(EvaluationError::TimedOut(after)),
            Ok(CustomOutcome::Abandoned { after }) => return Err(EvaluationError::Busy(after)),
            Ok(CustomOutcome::Replied(reply)) => reply,
        };
        Self::read_call_reply(&reply)
    }

    /// The content of the [`CALL_REQUEST`] that calls `function(request)` of this version.
    pub(crate) fn call_content(&self, function: &str, request: &Value) -> Value {
        json!({
            "module": self.name,
            "digest": self.digest(),
            "function": function,
            "request": request,
        })
    }

    /// What a [`CALL_REQUEST`]'s reply says: the answer's text, or why there is none.
    pub(crate) fn read_call_reply(reply: &Value) -> Result<ByMessage, EvaluationError> {
        let text = |field: &str| {
            reply
                .get(field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        match reply.get("status").and_then(Value::as_str) {
            Some("ok") => match reply.get("text").and_then(Value::as_str) {
                Some(answer) => Ok(ByMessage::Answered(answer.to_owned())),
                None => Err(EvaluationError::NoAnswer),
            },
            Some("missing") => Ok(ByMessage::Missing(Magic::parse(&text("magic")))),
            Some("interrupted") => Err(EvaluationError::Raised {
                ename: "KeyboardInterrupt".into(),
                evalue: String::new(),
            }),
            _ => Err(EvaluationError::Raised {
                ename: text("ename"),
                evalue: text("evalue"),
            }),
        }
    }

    /// Puts this version into the kernel: its compiled code when crane has it for the kernel's
    /// bytecode version `magic`, else its source (and keeps the compiled code for next time).
    async fn install(
        &self,
        session: &mut KernelSession,
        magic: Option<Magic>,
        timeout: Duration,
    ) -> Result<(), ModuleError> {
        let digest = self.digest();
        let cache = BytecodeCache::default_location();
        if let Some(magic) = &magic {
            if let Some(hex) = cache.load(self.name, &digest, magic) {
                let expression = self.install_expression(Code::Marshalled(&hex));
                match self.evaluate(session, &expression, timeout).await {
                    Ok(answer) => match replaced(&answer) {
                        Some(names) => return Err(ModuleError::BuiltinsReplaced(names)),
                        None if read_installed(session, &answer).0 == digest => return Ok(()),
                        None => cache.remove(self.name, &digest, magic),
                    },
                    Err(EvaluationError::Raised { .. }) => cache.remove(self.name, &digest, magic),
                    Err(error) => return Err(error.into()),
                }
            }
        }
        let code = Code::Source {
            return_marshalled: magic.is_some(),
        };
        let answer = answer_unless_replaced(
            self.evaluate(session, &self.install_expression(code), timeout)
                .await?,
        )?;
        let (installed, marshalled) = read_installed(session, &answer);
        if installed != digest {
            return Err(ModuleError::NotInjected);
        }
        if let (Some(magic), Some(marshalled)) = (&magic, marshalled) {
            cache.store(self.name, &digest, magic, marshalled);
        }
        Ok(())
    }

    /// The expression that executes the module's code into a fresh module, registers it in
    /// `sys.modules` and has it serve crane's calls, all inside one expression so that no name
    /// is bound in the user namespace. Every builtin crane's modules use is first checked to
    /// be the interpreter's own ([`with_verified_builtins`]); the module then runs with a
    /// private `__builtins__`, a snapshot of the originals, so that a builtin the user replaces
    /// later reaches none of its code. Its value is the digest, followed by [`SERVED`] when
    /// the kernel serves [`CALL_REQUEST`].
    fn install_expression(&self, code: Code<'_>) -> String {
        let (compiled, tail) = match code {
            Code::Source { return_marshalled } => (
                format!(
                    "snap['compile']({source}, {filename}, 'exec')",
                    source = py_str(self.source),
                    filename = py_str(self.filename),
                ),
                if return_marshalled {
                    "(':' + sys.modules['marshal'].dumps(code).hex() if 'marshal' in sys.modules else '')"
                } else {
                    "''"
                },
            ),
            Code::Marshalled(hex) => (
                format!("sys.modules['marshal'].loads(b''.__class__.fromhex('{hex}'))"),
                "''",
            ),
        };
        with_verified_builtins(
            CRANE_BUILTINS,
            &format!(
                "(lambda sys: (lambda module, code: (\
                 D.__setitem__(MD(module), '__builtins__', snap), \
                 snap['exec'](code, MD(module)), \
                 D.__setitem__(MD(module), 'DIGEST', {digest}), \
                 D.__setitem__(sys.modules, {name}, module), \
                 {digest} + ({served} if D.get(MD(module), 'serve_calls', lambda: False)() else '') \
                 + {tail})[-1])(MT({name}), {compiled}))(snap['__import__']('sys'))",
                digest = py_str(&self.digest()),
                name = py_str(self.name),
                served = py_str(SERVED),
            ),
        )
    }
}

/// The builtins crane's modules look up (`tests/builtins_replaced.rs` checks the list against
/// the modules' code), with the two every module needs (`__import__` for its imports,
/// `__build_class__` for its classes) and the two the injection calls.
pub const CRANE_BUILTINS: &[&str] = &[
    "__build_class__",
    "__import__",
    "compile",
    "exec",
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "ChildProcessError",
    "Ellipsis",
    "Exception",
    "FileExistsError",
    "FileNotFoundError",
    "ImportError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "NameError",
    "NotImplemented",
    "OSError",
    "ProcessLookupError",
    "RecursionError",
    "RuntimeError",
    "StopIteration",
    "SyntaxError",
    "SystemExit",
    "TypeError",
    "ValueError",
    "Warning",
    "all",
    "any",
    "bool",
    "bytearray",
    "bytes",
    "callable",
    "classmethod",
    "complex",
    "delattr",
    "dict",
    "enumerate",
    "eval",
    "float",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "id",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "zip",
];

/// `expression` evaluated once the builtins named in `needed` are known to be the
/// interpreter's own, with `snap` bound to a snapshot of every builtin that is (a fresh dict,
/// crane's own), `T` to the real `type`, `D` to the real `dict`, `MT` to the module type and
/// `MD` to the reader of a module's `__dict__`; else the [`REPLACED`] marker followed by
/// `name=what replaced it` for each needed name that is not original, `;`-separated.
///
/// Nothing here looks up a name the user could have replaced, nor reads an attribute of a
/// value before its real type says the read runs no code of the user's: `type` is
/// `[].append.__class__.__class__`; a builtin function is original when its real type is
/// `builtin_function_or_method`, its `__self__` is the module whose `__dict__` is the
/// namespace (a real module, of a static type named `module`) and its `__name__` is its name;
/// a builtin class when it is a static (non-heap) type of that name in `builtins` (read
/// through `type`'s own descriptors, so no metaclass runs); a constant by identity. The
/// namespace is the one the interpreter gives a user expression: the frame of a fresh
/// generator carries it, and reaching it takes no name lookup at all.
fn with_verified_builtins(needed: &[&str], expression: &str) -> String {
    let needed: String = needed.iter().map(|name| py_str(name) + ", ").collect();
    format!(
        "(lambda R, T, D: (lambda snap, MT: (lambda MD: {expression})\
         (T.__dict__['__dict__'].__get__(MT)['__dict__'].__get__))(R[0], R[1]) \
         if R[0] is not None else {replaced} + R[2])\
         ({verifier}, [].append.__class__.__class__, {{}}.__class__)",
        replaced = py_str(&format!("{REPLACED}:")),
        verifier = VERIFIER.replace("NEEDED", &format!("({needed})")),
    )
}

/// The check of [`with_verified_builtins`]: `(snapshot, module type, '')` when every name of
/// `NEEDED` is original, else `(None, None, report)`. `B` is the namespace, `T` `type`, `D`
/// `dict`, `S` `str`, `F` the type of Python functions, `C` that of builtin functions, `X` a
/// marker of absence, `H` the `builtins` module.
const VERIFIER: &str = "(lambda B, T, D, S, F, C, X: (lambda get, flags, tname, tmodule, tqual: \
 (lambda is_home: (lambda homes: (lambda H: (lambda ok: (lambda snap: \
 (lambda bad: (None, None, ';'.join(bad)) if bad or H is X else (snap, T(H), ''))\
 ([n + '=' + (lambda v: 'removed' if v is X \
 else 'the function ' + (lambda m, q: (m + '.' if T(m) is S else '') + (q if T(q) is S else '?'))\
 (F.__dict__['__module__'].__get__(v), F.__dict__['__qualname__'].__get__(v)) if T(v) is F \
 else 'the builtin ' + v.__name__ if T(v) is C \
 else 'an object of type ' + (lambda m, q: (m + '.' if T(m) is S else '') + (q if T(q) is S else '?'))\
 (tmodule(T(v)), tqual(T(v))))(get(B, n, X)) for n in NEEDED if get(snap, n, X) is X]))\
 ({n: v for n, v in B.items() if T(n) is S and ok(n, v)}))\
 (lambda n, v: (T(v) is C and v.__self__ is H and v.__name__ == n) \
 or (T(v) is T and not flags(v) & 512 and tmodule(v) == 'builtins' \
 and tname(v) == {'IOError': 'OSError', 'EnvironmentError': 'OSError'}.get(n, n)) \
 or (n == 'None' and v is None) or (n == 'True' and v is True) or (n == 'False' and v is False) \
 or (n == 'Ellipsis' and v is ...) or (n == 'NotImplemented' and v is (0).__add__('')) \
 or (n == '__debug__' and T(v) is T(True))))\
 (homes[0] if homes else X))\
 ([v.__self__ for v in B.values() if T(v) is C and is_home(v.__self__)][:1]))\
 (lambda s: T(T(s)) is T and not flags(T(s)) & 512 and tname(T(s)) == 'module' \
 and T.__dict__['__dict__'].__get__(T(s))['__dict__'].__get__(s) is B))\
 (D.get, T.__dict__['__flags__'].__get__, T.__dict__['__name__'].__get__, \
 T.__dict__['__module__'].__get__, T.__dict__['__qualname__'].__get__) \
 if T(B) is D else (None, None, '__builtins__=a namespace that is not a dict'))\
 ((_ for _ in ()).gi_frame.f_builtins, [].append.__class__.__class__, {}.__class__, ''.__class__, \
 (lambda: 0).__class__, [].append.__class__, [])";

/// The digest an injection's answer (`'DIGEST'`, `'DIGEST+'`, `'DIGEST:HEX'`, `'DIGEST+:HEX'`)
/// reports installed, and the compiled code when it carries it; notes in the session when the
/// kernel serves [`CALL_REQUEST`].
fn read_installed<'a>(session: &mut KernelSession, answer: &'a str) -> (&'a str, Option<&'a str>) {
    let answer = answer
        .strip_prefix('\'')
        .and_then(|answer| answer.strip_suffix('\''))
        .unwrap_or_default();
    let (installed, marshalled) = match answer.split_once(':') {
        Some((installed, marshalled)) => (installed, Some(marshalled)),
        None => (answer, None),
    };
    match installed.strip_suffix(SERVED) {
        Some(installed) => {
            session.note_handled(CALL_REQUEST);
            (installed, marshalled)
        }
        None => (installed, marshalled),
    }
}

/// What a call through crane's own shell message gave.
pub(crate) enum ByMessage {
    Answered(String),
    /// The kernel lacks this version of the module (its bytecode version, when known).
    Missing(Option<Magic>),
    /// The kernel no longer serves the message (restarted since, say).
    Unhandled,
}

/// Where a module's code comes from.
enum Code<'a> {
    /// The source, compiled in the kernel; with `return_marshalled`, the answer carries the
    /// compiled code, marshalled, after the digest (`'DIGEST:HEX'`).
    Source { return_marshalled: bool },
    /// Code marshalled by a kernel of the same bytecode version, as hex.
    Marshalled(&'a str),
}

/// The builtins `answer` says were replaced, when it carries the [`REPLACED`] marker.
fn replaced(answer: &str) -> Option<ReplacedBuiltins> {
    // The `repr` of the answer: in double quotes when a description holds a single one.
    let report = ['\'', '"'].iter().find_map(|quote| {
        answer
            .strip_prefix(&format!("{quote}{REPLACED}:"))?
            .strip_suffix(*quote)
    })?;
    Some(ReplacedBuiltins(
        report
            .split(';')
            .filter(|entry| !entry.is_empty())
            .map(|entry| match entry.split_once('=') {
                Some((name, by)) => (name.to_owned(), by.to_owned()),
                None => (entry.to_owned(), String::new()),
            })
            .collect(),
    ))
}

/// `answer`, unless it says builtins were replaced.
fn answer_unless_replaced(answer: String) -> Result<String, ModuleError> {
    match replaced(&answer) {
        Some(names) => Err(ModuleError::BuiltinsReplaced(names)),
        None => Ok(answer),
    }
}

/// `Some` (with the kernel's bytecode version, when it has one) when `answer` says the kernel
/// lacks this version of the module.
fn missing(answer: &str) -> Option<Option<Magic>> {
    let magic = answer
        .strip_prefix(&format!("'{NOT_INJECTED}:"))?
        .strip_suffix('\'')?;
    Some(Magic::parse(magic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_each_replaced_builtin_and_what_replaced_it() {
        let answer = format!(
            "'{REPLACED}:len=the function __main__.my_len;getattr=removed;__import__=the builtin abs'"
        );
        let names = replaced(&answer).expect("a refusal");
        assert_eq!(
            names.0,
            [
                ("len".to_owned(), "the function __main__.my_len".to_owned()),
                ("getattr".to_owned(), "removed".to_owned()),
                ("__import__".to_owned(), "the builtin abs".to_owned()),
            ]
        );
        let message = names.to_string();
        assert!(message.starts_with(
            "the kernel's builtins `len` (the function __main__.my_len), `getattr` (removed)"
        ));
        assert!(message.contains("cannot check in this kernel"));
        assert!(replaced("'0123456789abcdef+'").is_none());
        let quoted = format!("\"{REPLACED}:len=the function __main__.it's\"");
        assert_eq!(
            replaced(&quoted).expect("a refusal").0[0].1,
            "the function __main__.it's"
        );
        assert!(replaced(&format!("'{NOT_INJECTED}:a70d0d0a'")).is_none());
    }

    #[test]
    fn the_verifier_checks_exactly_the_names_asked_for() {
        let expression = with_verified_builtins(&["__import__", "len"], "snap");
        assert!(expression.contains("for n in (\"__import__\", \"len\", )"));
        assert!(!expression.contains("NEEDED"));
        assert!(CRANE_BUILTINS.contains(&"__build_class__"));
    }
}
