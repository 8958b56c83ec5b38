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

use std::time::Duration;

use crane_kernel::{CustomOutcome, CustomRequest, KernelSession};
use serde_json::{json, Value};

use crate::bytecode::{BytecodeCache, Magic};
use crate::expression::{self, py_str, EvaluationError};

/// The answer of an expression on a module when the kernel lacks this version of it, followed
/// by the kernel's bytecode version.
const NOT_INJECTED: &str = "crane-module-not-injected";

/// crane's own shell message type, served by `crane_channel.py`'s handler.
const CALL_REQUEST: &str = "crane_call_request";

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
    /// FNV-1a of `source`: the version check between this binary and the kernel.
    pub(crate) digest: u64,
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
}

impl From<EvaluationError> for ModuleError {
    fn from(error: EvaluationError) -> Self {
        ModuleError::Evaluation(error)
    }
}

impl KernelModule {
    pub(crate) fn digest(&self) -> String {
        format!("{:016x}", self.digest)
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
    /// bytecode version instead.
    fn with_module(&self, then: &str) -> String {
        with_real_builtins(&format!(
            "(lambda module: {then} if B['getattr'](module, 'DIGEST', None) == {digest} \
             else {marker} + B['getattr'](B['__import__']('sys').modules.get('_frozen_importlib_external'), \
             'MAGIC_NUMBER', b'').hex())(B['__import__']('sys').modules.get({name}))",
            digest = py_str(&self.digest()),
            marker = py_str(&format!("{NOT_INJECTED}:")),
            name = py_str(self.name),
        ))
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
        let Some(magic) = missing(&text) else {
            return Ok(text);
        };
        self.install(session, magic, timeout).await?;
        let text = self.evaluate(session, &expression, timeout).await?;
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
        match missing(&answer) {
            Some(magic) => self.install(session, magic, timeout).await,
            None => Ok(()),
        }
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
            content: json!({
                "module": self.name,
                "digest": self.digest(),
                "function": function,
                "request": request,
            }),
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
                    Ok(answer) if read_installed(session, &answer).0 == digest => return Ok(()),
                    Ok(_) | Err(EvaluationError::Raised { .. }) => {
                        cache.remove(self.name, &digest, magic)
                    }
                    Err(error) => return Err(error.into()),
                }
            }
        }
        let code = Code::Source {
            return_marshalled: magic.is_some(),
        };
        let answer = self
            .evaluate(session, &self.install_expression(code), timeout)
            .await?;
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
    /// is bound in the user namespace (and through `builtins`, which the user's own names
    /// cannot shadow). Its value is the digest, followed by [`SERVED`] when the kernel serves
    /// [`CALL_REQUEST`].
    fn install_expression(&self, code: Code<'_>) -> String {
        let (compiled, tail) = match code {
            Code::Source { return_marshalled } => (
                format!(
                    "builtins.compile({source}, {filename}, 'exec')",
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
                format!("sys.modules['marshal'].loads(builtins.bytes.fromhex('{hex}'))"),
                "''",
            ),
        };
        with_real_builtins(&format!(
            "(lambda sys, types, builtins: (lambda module, code: (\
             builtins.exec(code, module.__dict__), \
             module.__dict__.__setitem__('DIGEST', {digest}), \
             sys.modules.__setitem__({name}, module), \
             module.DIGEST + ({served} if B['getattr'](module, 'serve_calls', lambda: False)() else '') + {tail})[-1])\
             (types.ModuleType({name}), {compiled}))\
             (B['__import__']('sys'), B['__import__']('types'), B['__import__']('builtins'))",
            digest = py_str(&self.digest()),
            name = py_str(self.name),
            served = py_str(SERVED),
        ))
    }
}

/// `expression` evaluated with `B` bound to the builtins namespace the interpreter itself uses.
/// A user expression runs in the user namespace, where a name such as `getattr` or
/// `__import__` may be the user's own; the frame of a fresh generator carries the real
/// builtins, and reaching it takes no name lookup at all.
fn with_real_builtins(expression: &str) -> String {
    format!("(lambda B: {expression})((_ for _ in ()).gi_frame.f_builtins)")
}

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
enum ByMessage {
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

/// `Some` (with the kernel's bytecode version, when it has one) when `answer` says the kernel
/// lacks this version of the module.
fn missing(answer: &str) -> Option<Option<Magic>> {
    let magic = answer
        .strip_prefix(&format!("'{NOT_INJECTED}:"))?
        .strip_suffix('\'')?;
    Some(Magic::parse(magic))
}
