//! The probe and the dry-run module run no code the user defined: a kernel full of objects
//! whose every dunder, property and metaclass hook records its call (and some sleep) is
//! probed on every expression a cell could read, and the objects count zero calls.

mod common;

use std::time::Duration;

use common::{eval_silent, run_cell, start_kernel, var};
use crane_probe::dry_run::DryRunOptions;

const HOSTILE: &str = r#"
import threading, time
import numpy as np, pandas as pd, torch
from sklearn.linear_model import LogisticRegression
from torch.utils.data import TensorDataset

calls = []
def note(what):
    calls.append(what)

class Meta(type):
    def __getattribute__(cls, name):
        note('meta.getattribute:' + name); return type.__getattribute__(cls, name)
    def __len__(cls): note('meta.len'); return 3
    def __iter__(cls): note('meta.iter'); return iter(())
    def __repr__(cls): note('meta.repr'); return 'Meta'
    def __instancecheck__(cls, obj): note('meta.instancecheck'); return False
    def __subclasscheck__(cls, sub): note('meta.subclasscheck'); return False
    def __hash__(cls): note('meta.hash'); return 1
    def __eq__(cls, other): note('meta.eq'); return False

class Hostile(metaclass=Meta):
    def __hash__(self): note('hash'); time.sleep(0.2); return 1
    def __eq__(self, other): note('eq'); return False
    def __ne__(self, other): note('ne'); return True
    def __lt__(self, other): note('lt'); return False
    def __gt__(self, other): note('gt'); return False
    def __le__(self, other): note('le'); return False
    def __ge__(self, other): note('ge'); return False
    def __len__(self): note('len'); return 2
    def __getitem__(self, key): note('getitem'); return 0
    def __iter__(self): note('iter'); return iter([1, 2])
    def __contains__(self, item): note('contains'); return False
    def __repr__(self): note('repr'); return 'Hostile()'
    def __str__(self): note('str'); return 'Hostile'
    def __format__(self, spec): note('format'); return 'Hostile'
    def __bool__(self): note('bool'); return True
    def __float__(self): note('float'); return 1.0
    def __int__(self): note('int'); return 1
    def __index__(self): note('index'); return 1
    def __array__(self, *args, **kwargs): note('array'); return np.zeros(2)
    def __sizeof__(self): note('sizeof'); return 8
    def __dir__(self): note('dir'); return []
    def __call__(self, *args, **kwargs): note('call')
    def __getattr__(self, name): note('getattr:' + name); raise AttributeError(name)
    @property
    def shape(self): note('property.shape'); return (2,)
    @property
    def dtype(self): note('property.dtype'); return 'float64'
    @property
    def __class__(self): note('__class__'); return Hostile

class MyList(list):
    def __len__(self): note('MyList.len'); return 0
    def __getitem__(self, key): note('MyList.getitem'); return 0
    def __iter__(self): note('MyList.iter'); return iter(())
    def __repr__(self): note('MyList.repr'); return '[]'

class MyDict(dict):
    def __len__(self): note('MyDict.len'); return 0
    def __getitem__(self, key): note('MyDict.getitem'); return 0
    def __iter__(self): note('MyDict.iter'); return iter(())
    def keys(self): note('MyDict.keys'); return []
    def items(self): note('MyDict.items'); return []

class MyFrame(pd.DataFrame):
    @property
    def _constructor(self): note('MyFrame._constructor'); return MyFrame
    def __len__(self): note('MyFrame.len'); return 0
    def __getitem__(self, key): note('MyFrame.getitem'); return pd.DataFrame.__getitem__(self, key)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 2)
        self.extra = Hostile()
    @property
    def hidden(self): note('Net.hidden'); return 3
    def parameters(self, recurse=True): note('Net.parameters'); return iter(())
    def named_modules(self, *args, **kwargs): note('Net.named_modules'); return iter(())
    def forward(self, x): note('Net.forward'); return x

from dataclasses import dataclass
@dataclass
class Point:
    x: int
    def __post_init__(self): note('Point.post_init')
points = pd.Series([Point(1), Point(2)])
point = Point(3)

h = Hostile()
hostile_items = [Hostile(), Hostile()]
pair = (h, 1)
by_name = {'a': h, 1: h}
by_hostile = {Hostile(): 1}
hostile_set = {Hostile()}
objects = np.array([Hostile(), Hostile(), Hostile()], dtype=object)
frame = pd.DataFrame({'obj': [Hostile(), Hostile(), 'x'], 'n': [1, 2, 3]})
frame_hostile_index = pd.DataFrame({'a': [1, 2]}, index=pd.Index([Hostile(), Hostile()], dtype=object))
frame_hostile_columns = pd.DataFrame([[1, 2]], columns=pd.Index(['a', Hostile()], dtype=object))
series = pd.Series([Hostile(), Hostile()])
hostile_index = pd.Index([Hostile(), Hostile()], dtype=object)
X = np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5], [1.0, 1.0]]); y = np.array([0, 1, 0, 1])
model = LogisticRegression().fit(X, y)
model.classes_ = Hostile()
model_objects = LogisticRegression().fit(X, y)
model_objects.classes_ = np.array([Hostile(), Hostile()], dtype=object)
from sklearn.svm import SVC
svc_hostile_kernel = SVC(kernel=Hostile())
dataset = TensorDataset(torch.zeros(3, 2))
dataset.tensors = (Hostile(), Hostile())
dataset_opaque = TensorDataset(torch.zeros(3, 2))
dataset_opaque.tensors = Hostile()
linear = torch.nn.Linear(2, 2)
linear.extra = Hostile()
net = Net()
my_list = MyList([1, 2])
my_dict = MyDict(a=1)
my_frame = MyFrame({'a': [1, 2]})

# Callables whose signatures the probe reads: a library function given hostile attributes, a
# library method bound to a hostile object, a partial of a user function.
import functools, types as _types
user_partial = functools.partial(note, 'partial')
lib_clone = _types.FunctionType(pd.read_csv.__code__, pd.read_csv.__globals__)
lib_clone.__wrapped__ = Hostile()
lib_clone.__signature__ = Hostile()
lib_method = _types.MethodType(pd.DataFrame.merge, h)

# The user's own versions of names crane's expressions could look up.
def getattr(*args): note('user getattr'); return None
def __import__(*args, **kwargs): note('user __import__'); raise ImportError('no')
def len(x): note('user len'); return 0
def print(*args, **kwargs): note('user print')
def isinstance(*args): note('user isinstance'); return False
def type(*args): note('user type'); return object
def repr(x): note('user repr'); return ''
def hasattr(*args): note('user hasattr'); return False

calls.clear()
"#;

const EXPRESSIONS: &[&str] = &[
    "h",
    "h.shape",
    "h.dtype",
    "h.anything",
    "h[0]",
    "Hostile",
    "Hostile.__name__",
    "Meta",
    "hostile_items",
    "hostile_items[0]",
    "pair",
    "by_name",
    "by_name['a']",
    "by_hostile",
    "hostile_set",
    "objects",
    "objects[0]",
    "frame",
    "frame['obj']",
    "frame['n']",
    "frame.obj",
    "frame.columns",
    "frame_hostile_index",
    "frame_hostile_index['a']",
    "frame_hostile_index.index",
    "frame_hostile_columns",
    "frame_hostile_columns['a']",
    "frame_hostile_columns.columns",
    "series",
    "series[0]",
    "hostile_index",
    "model",
    "model.classes_",
    "model_objects",
    "model_objects.classes_",
    "svc_hostile_kernel",
    "dataset",
    "dataset.tensors",
    "dataset_opaque",
    "dataset_opaque.tensors",
    "linear",
    "linear.extra",
    "net",
    "net.fc",
    "net.extra",
    "net.hidden",
    "my_list",
    "my_list[0]",
    "my_dict",
    "my_dict['a']",
    "my_frame",
    "my_frame['a']",
    "len",
    "getattr",
    "print",
    "point",
    "point.x",
    "points",
    "pd.read_csv",
    "model.fit",
    "LogisticRegression",
    "MyFrame",
    "my_frame.merge",
    "net.forward",
    "linear.forward",
    "user_partial",
    "lib_clone",
    "lib_method",
    "np.add",
    "Point",
];

async fn user_calls(kernel: &mut crane_kernel::KernelSession) -> String {
    eval_silent(kernel, "calls").await.0
}

#[tokio::test]
async fn probing_hostile_objects_runs_no_user_code() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOSTILE).await;
    assert_eq!(user_calls(&mut kernel).await, "[]");

    let expressions: Vec<String> = EXPRESSIONS.iter().map(|e| e.to_string()).collect();
    let budget = crane_probe::Budget {
        time: Duration::from_secs(20),
        ..crane_probe::Budget::default()
    };
    let info = crane_probe::summarize(&mut kernel, &expressions, &budget)
        .await
        .expect("probe answers");
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran during the probe"
    );

    // Library facts survive where reading them runs no user code.
    for expression in [
        "frame",
        "frame['n']",
        "frame_hostile_index['a']",
        "linear",
        "net",
        "net.fc",
        "dataset",
        "model",
        "model_objects",
        "hostile_items",
        "by_name",
    ] {
        let variable = var(&info, expression);
        assert!(
            variable.error.is_none(),
            "{expression}: {:?}",
            variable.error
        );
    }
    assert_eq!(
        var(&info, "frame").fact(crane_runtime::Section::S, "shape"),
        Some(&serde_json::json!([3, 2]))
    );
    // Signatures of library callables, none of user code or of a tampered function.
    for expression in [
        "pd.read_csv",
        "my_frame.merge",
        "lib_method",
        "linear.forward",
    ] {
        assert!(
            var(&info, expression).call_signature().is_some(),
            "{expression}: {:?}",
            var(&info, expression).r
        );
    }
    for expression in ["MyFrame", "net.forward", "Point"] {
        assert!(var(&info, expression).r.get("call_signature").is_none());
        assert!(var(&info, expression).call_signature_unknown().is_none());
    }
    for expression in ["lib_clone", "user_partial", "np.add", "model.fit"] {
        assert!(
            var(&info, expression).call_signature_unknown().is_some(),
            "{expression}: {:?}",
            var(&info, expression).r
        );
    }

    // A ride-along probe and API docs, too.
    let ride = crane_probe::RideAlong::summarize(&expressions, &budget);
    let options = ride.attach(crane_kernel::ExecuteOptions::cell());
    let execution = kernel.execute("pass", &options).await.expect("executes");
    assert!(crane_probe::RideAlong::read(&execution).is_some());
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran during the ride-along"
    );

    crane_probe::api_docs(
        &mut kernel,
        &["net.forward".into(), "h.shape".into()],
        4_000,
    )
    .await
    .expect("api docs");
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran during api docs"
    );
    kernel.close().await.expect("closes");
}

#[tokio::test]
async fn an_attribute_chain_thousands_deep_is_summarized() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        "import types\nchain = types.SimpleNamespace()\nchain.a = chain",
    )
    .await;
    let deep = format!("chain{}", ".a".repeat(5_000));
    let info = common::facts(&mut kernel, &["chain", deep.as_str()]).await;
    assert!(
        info.get("chain").is_some(),
        "the shallow expression is still summarized"
    );
    let summary = info
        .get(&deep)
        .expect("the deep chain is evaluated step by step");
    assert_eq!(summary.type_name, "types.SimpleNamespace");
    kernel.close().await.expect("closes");
}

#[tokio::test]
async fn a_dry_run_runs_no_user_code_in_the_kernel() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOSTILE).await;
    let options = DryRunOptions::default();
    let cell = "result = h.shape\nnote('in the fork')";
    let _ = crane_probe::dry_run::dry_run(&mut kernel, cell, &options).await;
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran in the kernel (the fork's own calls stay in the fork)"
    );
    kernel.close().await.expect("closes");
}

#[tokio::test]
async fn fingerprinting_hostile_objects_runs_no_user_code() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOSTILE).await;
    let names: Vec<String> = EXPRESSIONS
        .iter()
        .filter(|expression| expression.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .map(|name| name.to_string())
        .collect();
    let timeout = Duration::from_secs(60);
    let prints = crane_probe::fingerprint::in_kernel(&mut kernel, &names, timeout)
        .await
        .expect("fingerprints answer");
    let data = crane_probe::fingerprint::data_names(&mut kernel, &names, timeout)
        .await
        .expect("data names answer");
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran while crane fingerprinted the kernel's objects"
    );
    // What crane reads without running code of the notebook's has a fingerprint; what it
    // cannot read has none.
    assert!(
        names.iter().all(|name| prints.contains_key(name)),
        "{prints:?}"
    );
    // A torch module's state is not its __dict__ alone: no fingerprint.
    assert!(matches!(prints.get("net"), Some(None)), "{prints:?}");
    // A frame holding the notebook's objects is not data read by contract.
    assert!(!data.data.contains(&"frame".to_owned()), "{data:?}");
    kernel.close().await.expect("closes");
}

#[tokio::test]
async fn exporting_to_the_replica_runs_no_user_code_in_the_kernel() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, HOSTILE).await;
    run_cell(
        &mut kernel,
        "import os\nos.environ['CRANE_TEST_REFUSE_FORK'] = 'no user code'\ncalls.clear()",
    )
    .await;
    let mut replica = crane_probe::replica::Replica::new(None);
    // Every hostile object, read by a cell the replica runs: their copies run there, sealed.
    let cell = "everything = [h, hostile_items, pair, by_name, by_hostile, hostile_set, objects, frame, \
                frame_hostile_index, frame_hostile_columns, series, hostile_index, model, model_objects, \
                svc_hostile_kernel, dataset, dataset_opaque, linear, net, my_list, my_dict, my_frame, points, \
                point, user_partial, lib_clone, lib_method, Hostile, Point, Meta, MyList, MyDict, MyFrame, Net]\n\
                note('in the replica')";
    let outcome = crane_probe::ahead::execute_ahead(
        &mut kernel,
        Some(&mut replica),
        cell,
        &DryRunOptions::default(),
    )
    .await
    .expect("judged");
    let crane_probe::dry_run::DryRunOutcome::Ran(report) = outcome else {
        panic!("not run: {outcome:?}");
    };
    let rebuilt = report.replica.expect("run in the replica");
    assert!(
        rebuilt.declined.contains_key("h")
            && rebuilt.declined["h"].contains("code defined in the notebook"),
        "{rebuilt:?}"
    );
    assert_eq!(
        user_calls(&mut kernel).await,
        "[]",
        "user code ran in the kernel while crane exported for the replica"
    );
    replica.shutdown().await;
    kernel.close().await.expect("closes");
}

#[tokio::test]
async fn the_users_background_threads_keep_their_output_streams() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        r#"
import sys, threading, time
import pandas as pd
frame = pd.DataFrame({'a': range(1000)})
original = (sys.stdout, sys.stderr)
replaced = []
stop = threading.Event()
def watch():
    while not stop.is_set():
        if (sys.stdout, sys.stderr) != original:
            replaced.append(1)
watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
"#,
    )
    .await;
    for _ in 0..20 {
        common::facts(&mut kernel, &["frame", "frame['a']"]).await;
    }
    run_cell(&mut kernel, "stop.set(); watcher.join()").await;
    let (replaced, _) = eval_silent(&mut kernel, "len(replaced)").await;
    assert_eq!(replaced, "0", "the probe replaced sys.stdout or sys.stderr");
    kernel.close().await.expect("closes");
}

/// pandas deep-copies `attrs` in almost every operation (a column, a slice, a head); the
/// probe reads such frames with its guard off when their data is plain, and so ran the
/// `__deepcopy__` and `__getattribute__` of a user object held in `attrs` on every check.
/// A frame or series whose `attrs` hold anything but plain scalars is read under the guard.
#[tokio::test]
async fn user_objects_in_attrs_are_never_called() {
    let mut kernel = start_kernel().await;
    run_cell(
        &mut kernel,
        r#"
import numpy as np, pandas as pd
calls = []
class Tag:
    def __init__(self):
        object.__setattr__(self, 'name', 'tag')
    def __getattribute__(self, name):
        calls.append('getattribute:' + name); return object.__getattribute__(self, name)
    def __deepcopy__(self, memo):
        calls.append('deepcopy'); return self
    def __copy__(self):
        calls.append('copy'); return self
    def __eq__(self, other):
        calls.append('eq'); return self is other
    def __hash__(self):
        calls.append('hash'); return 1
    def __repr__(self):
        calls.append('repr'); return 'Tag()'
frame = pd.DataFrame({'a': np.arange(50.0), 'b': np.arange(50)})
frame.attrs['tag'] = Tag()
series = pd.Series(np.arange(20.0), name='s')
series.attrs['tag'] = Tag()
plain = pd.DataFrame({'a': np.arange(5.0)})
plain.attrs['source'] = 'file.csv'
"#,
    )
    .await;
    let info = crane_probe::summarize(
        &mut kernel,
        &[
            "frame",
            "frame['a']",
            "frame.a.mean",
            "frame.head",
            "frame.iloc",
            "series",
            "series.mean",
            "plain",
            "plain['a']",
        ]
        .map(String::from),
        &crane_probe::Budget {
            time: Duration::from_secs(20),
            ..crane_probe::Budget::default()
        },
    )
    .await
    .expect("probe answers");
    assert_eq!(user_calls(&mut kernel).await, "[]", "{info:#?}");
    assert_eq!(
        var(&info, "frame")
            .fact(crane_runtime::Section::S, "shape")
            .unwrap(),
        &serde_json::json!([50, 2])
    );
    assert_eq!(
        var(&info, "plain")
            .fact(crane_runtime::Section::S, "shape")
            .unwrap(),
        &serde_json::json!([5, 1])
    );
}
