//! Cost of runtime-fact extraction on large objects, and the size of what it yields.
//!
//! `cargo run -p crane-probe --release --example probe_bench -- [--runs N]`
//!
//! One kernel (the project's Python: `$CRANE_PYTHON`, else `<repo>/.venv/bin/python`) holds a
//! 5,000,000 x 20 mixed DataFrame, a 2 GB float32 array, a fitted scikit-learn pipeline, a torch
//! DataLoader over 1,000,000 samples and a compiled Keras model; a last row reads the call
//! signatures of six library callables in one request. Each object is summarized N
//! times with the default budget; the table gives the median wall-clock time of a summary as
//! crane sees it (round trip to the kernel included), the median time the probe reports for
//! itself, the size of its JSON answer, and the tokens of its rendering for a prompt.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crane_kernel::{
    ExecuteOptions, KernelLaunch, KernelOrigin, KernelSession, OwnedKernel, StartOptions,
};
use crane_probe::Budget;
use crane_runtime::{render, RenderOptions};

const SETUP: &str = r#"
import os
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
import numpy as np, pandas as pd

n = 5_000_000
i = np.arange(n)
columns = {}
for j in range(8):
    columns[f'num_{j}'] = (i * (j + 3) % 10007) / 7.0
columns['num_0'][::1000] = np.nan
for j in range(4):
    columns[f'count_{j}'] = i % (5 + 7 * j)
for j in range(3):
    columns[f'text_{j}'] = pd.array(np.array(['red', 'green', 'blue', 'cyan', 'gold'], dtype=object)[(i + j) % 5], dtype='str')
columns['segment'] = pd.Categorical.from_codes(i % 4, ['a', 'b', 'c', 'd'])
columns['region'] = pd.Categorical.from_codes(i % 3, ['north', 'south', 'east'])
columns['flag'] = i % 2 == 0
columns['when'] = pd.date_range('2020-01-01', periods=n, freq='min')
columns['misc'] = np.array([1, 'x', None, 2.5], dtype=object)[i % 4]
frame = pd.DataFrame(columns)
assert frame.shape == (5_000_000, 20)

images = np.full((500_000, 1000), 0.5, dtype=np.float32)
assert images.nbytes == 2_000_000_000

from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
train = frame.iloc[:20_000]
pipeline = Pipeline([
    ('prep', ColumnTransformer([
        ('num', StandardScaler(), [f'num_{j}' for j in range(1, 8)]),
        ('cat', OneHotEncoder(handle_unknown='ignore'), ['text_0', 'segment']),
    ])),
    ('clf', LogisticRegression(max_iter=200)),
]).fit(train, train['count_0'])

import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(
    TensorDataset(torch.randn(1_000_000, 32), torch.randint(0, 10, (1_000_000,))),
    batch_size=256, shuffle=True, drop_last=True,
)

import keras
model = keras.Sequential([
    keras.Input((64, 64, 3)),
    keras.layers.Conv2D(32, 3, activation='relu'),
    keras.layers.MaxPooling2D(),
    keras.layers.Conv2D(64, 3, activation='relu'),
    keras.layers.GlobalAveragePooling2D(),
    keras.layers.Dense(128, activation='relu'),
    keras.layers.Dense(10, activation='softmax'),
])
model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
"#;

const OBJECTS: [(&[&str], &str); 6] = [
    (&["frame"], "5,000,000 x 20 mixed DataFrame"),
    (&["images"], "2 GB float32 array"),
    (&["pipeline"], "fitted scikit-learn Pipeline"),
    (&["loader"], "torch DataLoader, 1M samples"),
    (&["model"], "compiled Keras model"),
    (
        &[
            "pd.read_csv",
            "frame.merge",
            "pipeline.fit",
            "LogisticRegression",
            "train_test_split",
            "np.concatenate",
        ],
        "six library callables (signatures)",
    ),
];

fn project_python() -> PathBuf {
    std::env::var_os("CRANE_PYTHON")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python"))
}

fn parse_runs() -> Result<usize, String> {
    let mut runs = 21;
    let mut arguments = std::env::args().skip(1);
    while let Some(argument) = arguments.next() {
        match argument.as_str() {
            "--runs" => {
                runs = arguments
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--runs needs a positive number")?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(runs)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs = parse_runs()?;
    let launch = KernelLaunch::python(project_python(), KernelOrigin::CranePythonEnv);
    let options = StartOptions {
        start_timeout: Duration::from_secs(120),
        ..StartOptions::default()
    };
    let mut kernel: KernelSession = OwnedKernel::start(&launch, &options).await?.into();
    eprintln!("building the objects (a minute or two)...");
    let setup = kernel
        .execute(
            SETUP,
            &ExecuteOptions::cell().with_timeout(Duration::from_secs(900)),
        )
        .await?;
    if let Some(error) = setup.error() {
        return Err(format!("setup failed: {}: {}", error.ename, error.evalue).into());
    }
    crane_probe::inject(&mut kernel).await?;

    let budget = Budget::default();
    println!(
        "probe budget {} ms, {} runs each; wall = as crane sees it, probe = as the probe reports\n",
        budget.time.as_millis(),
        runs
    );
    println!(
        "| object | median wall ms | median probe ms | JSON bytes | prompt tokens | sampled |"
    );
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    for (expressions, description) in OBJECTS {
        let expressions: Vec<String> = expressions.iter().map(|e| e.to_string()).collect();
        let mut wall = Vec::with_capacity(runs);
        let mut probe = Vec::with_capacity(runs);
        let mut last = None;
        for _ in 0..runs {
            let started = Instant::now();
            let info = crane_probe::summarize(&mut kernel, &expressions, &budget).await?;
            wall.push(started.elapsed().as_secs_f64() * 1000.0);
            probe.push(info.cost.map_or(f64::NAN, |cost| cost.ms));
            last = Some(info);
        }
        let info = last.ok_or("no run")?;
        let rendered = render(&info, &RenderOptions::default());
        let cost = info.cost.unwrap_or_default();
        println!(
            "| {description} | {:.1} | {:.1} | {} | {} | {} |",
            median(&mut wall),
            median(&mut probe),
            cost.bytes,
            rendered.tokens,
            if cost.sampled { "yes" } else { "no" },
        );
        eprintln!("{}", rendered.text);
    }
    kernel.close().await?;
    Ok(())
}
