//! Summaries of scikit-learn estimators and splitters, torch tensors, modules, optimizers,
//! loaders and datasets, matplotlib figures, and the generic fallback (statsmodels, seaborn),
//! on real objects in one real kernel.

mod common;

use common::{eval_silent, fact, facts, run_cell, start_kernel, var};
use crane_runtime::{AttrPresence, Kind, Section};
use serde_json::json;

const SETUP: &str = r#"
import numpy as np, pandas as pd
from sklearn.pipeline import Pipeline
from sklearn.compose import ColumnTransformer
from sklearn.preprocessing import StandardScaler, OneHotEncoder, LabelEncoder
from sklearn.linear_model import LogisticRegression
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import KFold

X = pd.DataFrame({'age': np.arange(30.0), 'city': ['a', 'b', 'c'] * 10})
y = np.array(['no', 'yes', 'maybe'] * 10)
prep = ColumnTransformer([('num', StandardScaler(), ['age']), ('cat', OneHotEncoder(handle_unknown='ignore'), ['city'])])
pipe = Pipeline([('prep', prep), ('clf', LogisticRegression(max_iter=200))]).fit(X, y)
forest = RandomForestClassifier(n_estimators=7, max_depth=3)
scaler = StandardScaler().fit(np.zeros((5, 4)))
encoder = LabelEncoder().fit(y)
folds = KFold(n_splits=4, shuffle=True, random_state=0)

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Subset, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3)
        self.act = nn.ReLU()
        self.head = nn.Linear(16, 10)
    def forward(self, x):
        return self.head(self.act(self.conv(x)))

net = Net().eval()
weights = torch.tensor([[1.0, float('nan')], [3.0, -2.0]], requires_grad=True)
long_ids = torch.arange(3_000_000)
opt = torch.optim.Adam(net.parameters(), lr=0.003, weight_decay=1e-4)
samples = TensorDataset(torch.zeros(1000, 8), torch.zeros(1000, dtype=torch.long))
loader = DataLoader(samples, batch_size=64, drop_last=True, shuffle=True)
half = Subset(samples, range(500))

touched = []
class Images(Dataset):
    def __init__(self):
        self.paths = ['a.png'] * 40
    def __len__(self):
        touched.append('len'); return 40
    def __getitem__(self, i):
        touched.append('getitem'); return i

images = Images()
image_loader = DataLoader(images, batch_size=8, collate_fn=lambda batch: touched.append('collate'))

import matplotlib
matplotlib.use('agg')
import matplotlib.pyplot as plt
fig, axes = plt.subplots(2, 3, figsize=(6, 4))
axes[0, 0].plot([1, 2, 3])
axes[0, 0].set_title('loss')

import statsmodels.api as sm
ols = sm.OLS(np.arange(10.0), sm.add_constant(np.arange(10.0))).fit()
"#;

#[tokio::test]
async fn sklearn_torch_matplotlib_and_fallback() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, SETUP).await;
    let (rng_before, _) =
        eval_silent(&mut kernel, "repr(torch.random.get_rng_state().tolist())").await;
    let info = facts(
        &mut kernel,
        &[
            "pipe",
            "pipe.predict",
            "prep",
            "forest",
            "forest.fit",
            "forest.predict_proba",
            "scaler",
            "encoder",
            "folds",
            "net",
            "net.head",
            "net.missing_layer",
            "weights",
            "long_ids",
            "opt",
            "samples",
            "loader",
            "half",
            "images",
            "image_loader",
            "image_loader.dataset",
            "images[0]",
            "loader.dataset[0]",
            "fig",
            "axes[0, 0]",
            "ols",
        ],
    )
    .await;

    // scikit-learn.
    let pipe = var(&info, "pipe");
    assert_eq!(pipe.kind, Kind::Estimator);
    assert_eq!(pipe.fitted(), Some(true));
    assert_eq!(pipe.n_features_in(), Some(2));
    let steps = fact(&info, "pipe", Section::R, "steps").as_array().unwrap();
    assert_eq!(steps[0]["type"], json!("ColumnTransformer"));
    assert_eq!(steps[0]["n_features_out"], json!(4));
    assert_eq!(steps[1]["type"], json!("LogisticRegression"));
    assert_eq!(steps[1]["n_features_in"], json!(4));
    assert_eq!(pipe.attribute("predict"), Some(AttrPresence::Method));
    assert_eq!(
        fact(&info, "pipe.predict", Section::R, "owner_fitted"),
        &json!(true)
    );
    let prep_steps = fact(&info, "prep", Section::R, "steps").as_array().unwrap();
    assert_eq!(prep_steps[0]["columns"], json!(["age"]));
    assert_eq!(prep_steps[1]["type"], json!("OneHotEncoder"));
    assert_eq!(prep_steps[1]["n_features_out"], json!(3));
    assert_eq!(
        var(&info, "prep").feature_names_in().unwrap(),
        ["age", "city"]
    );
    let forest = var(&info, "forest");
    assert_eq!(forest.fitted(), Some(false));
    assert_eq!(
        fact(&info, "forest", Section::R, "params")["n_estimators"],
        json!(7)
    );
    assert_eq!(
        fact(&info, "forest", Section::R, "params")["max_depth"],
        json!(3)
    );
    assert_eq!(
        fact(&info, "forest.fit", Section::R, "owner_fitted"),
        &json!(false)
    );
    assert_eq!(var(&info, "scaler").n_features_in(), Some(4));
    assert_eq!(var(&info, "scaler").fitted(), Some(true));
    let encoder = var(&info, "encoder");
    assert_eq!(encoder.n_classes(), Some(3));
    assert_eq!(
        encoder.classes().unwrap(),
        &vec![json!("maybe"), json!("no"), json!("yes")]
    );
    assert_eq!(var(&info, "folds").kind, Kind::Splitter);
    assert_eq!(fact(&info, "folds", Section::S, "n_splits"), &json!(4));
    assert_eq!(
        fact(&info, "folds", Section::R, "params")["shuffle"],
        json!(true)
    );

    // torch.
    let net = var(&info, "net");
    assert_eq!(net.kind, Kind::TorchModule);
    assert_eq!(net.type_name, "__main__.Net");
    assert_eq!(
        fact(&info, "net", Section::S, "n_params"),
        &json!(3 * 16 * 9 + 16 + 16 * 10 + 10)
    );
    assert_eq!(fact(&info, "net", Section::S, "n_layers"), &json!(3));
    assert_eq!(fact(&info, "net", Section::R, "training"), &json!(false));
    assert_eq!(var(&info, "net").device(), Some("cpu"));
    let first = fact(&info, "net", Section::S, "first_layer");
    assert_eq!(first["type"], json!("Conv2d"));
    assert_eq!(first["in_channels"], json!(3));
    let last = fact(&info, "net", Section::S, "last_layer");
    assert_eq!(last["out_features"], json!(10));
    assert_eq!(var(&info, "net.head").kind, Kind::TorchModule);
    // The named layer tree, each layer with its constructor facts, and the parameters' dtype.
    let layers = fact(&info, "net", Section::S, "layers")
        .as_array()
        .expect("layers");
    assert_eq!(layers.first().map(|l| &l["type"]), Some(&json!("Conv2d")));
    assert!(layers.iter().all(|l| l["name"].is_string()), "{layers:?}");
    assert_eq!(layers.last().map(|l| &l["out_features"]), Some(&json!(10)));
    assert_eq!(
        fact(&info, "net", Section::R, "param_dtype"),
        &json!("torch.float32")
    );
    // A bare layer is known by its constructor facts.
    let head = fact(&info, "net.head", Section::S, "layer");
    assert_eq!(head["type"], json!("Linear"));
    assert_eq!(
        (&head["in_features"], &head["out_features"]),
        (&json!(16), &json!(10))
    );
    assert_eq!(
        info.libraries.get("torch").map(String::as_str),
        Some(torch_version(&mut kernel).await.as_str())
    );
    assert_eq!(var(&info, "net.missing_layer").kind, Kind::Absent);
    let weights = var(&info, "weights");
    assert_eq!(weights.kind, Kind::Tensor);
    assert_eq!(weights.dtype(), Some("torch.float32"));
    assert_eq!(weights.requires_grad(), Some(true));
    assert_eq!(weights.has_nan(), Some(true));
    assert_eq!(weights.min(), Some(-2.0));
    let long_ids = var(&info, "long_ids");
    assert!(long_ids.sampled);
    assert_eq!(long_ids.max(), Some(2_999_999.0));
    assert_eq!(var(&info, "opt").kind, Kind::Optimizer);
    assert_eq!(fact(&info, "opt", Section::V, "lr"), &json!(0.003));
    assert_eq!(
        fact(&info, "opt", Section::R, "params")["weight_decay"],
        json!(0.0001)
    );
    assert_eq!(var(&info, "samples").len(), Some(1000));
    let loader = var(&info, "loader");
    assert_eq!(loader.kind, Kind::Dataloader);
    assert_eq!(loader.batch_size(), Some(64));
    assert_eq!(loader.n_batches(), Some(15));
    assert_eq!(loader.n_samples(), Some(1000));
    assert_eq!(fact(&info, "loader", Section::R, "drop_last"), &json!(true));
    assert_eq!(
        fact(&info, "loader", Section::R, "dataset_type"),
        &json!("TensorDataset")
    );
    assert_eq!(var(&info, "half").len(), Some(500));
    let images = var(&info, "images");
    assert_eq!(images.kind, Kind::Dataset);
    assert_eq!(images.len(), None, "a user __len__ is never called");
    assert_eq!(var(&info, "image_loader").n_batches(), None);
    assert_eq!(var(&info, "image_loader.dataset").kind, Kind::Dataset);
    assert!(var(&info, "images[0]").error.is_some());
    assert!(var(&info, "loader.dataset[0]").error.is_some());
    let (touched, _) = eval_silent(&mut kernel, "touched").await;
    assert_eq!(touched, "[]", "no dataset or loader code ran");
    let (rng_after, _) =
        eval_silent(&mut kernel, "repr(torch.random.get_rng_state().tolist())").await;
    assert_eq!(rng_before, rng_after);

    // matplotlib.
    let fig = var(&info, "fig");
    assert_eq!(fig.kind, Kind::Figure);
    assert_eq!(fact(&info, "fig", Section::S, "n_axes"), &json!(6));
    assert_eq!(fact(&info, "fig", Section::S, "grid"), &json!([2, 3]));
    assert_eq!(var(&info, "axes[0, 0]").kind, Kind::Axes);
    assert_eq!(
        fact(&info, "axes[0, 0]", Section::R, "title"),
        &json!("loss")
    );
    assert_eq!(fact(&info, "axes[0, 0]", Section::S, "n_lines"), &json!(1));

    // Generic fallback for a library the probe does not know.
    let ols = var(&info, "ols");
    assert_eq!(ols.kind, Kind::Other);
    assert!(ols.type_name.starts_with("statsmodels."));

    kernel.close().await.expect("kernel shuts down");
}

async fn torch_version(kernel: &mut crane_kernel::KernelSession) -> String {
    let (text, _) = common::eval_silent(kernel, "__import__('torch').__version__").await;
    text.trim_matches('\'').to_owned()
}
