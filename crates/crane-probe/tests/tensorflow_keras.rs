//! Summaries of TensorFlow tensors and datasets, Keras models, layers, image iterators and
//! training histories, on real objects in one real kernel (TensorFlow is imported once).

mod common;

use common::{eval_silent, fact, facts, run_cell, start_kernel, var};
use crane_runtime::{Kind, Section};
use serde_json::json;

const SETUP: &str = r#"
import os, tempfile
os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'
import numpy as np, pandas as pd
import tensorflow as tf
import keras
from keras.src.legacy.preprocessing.image import ImageDataGenerator

model = keras.Sequential([
    keras.Input((8,)),
    keras.layers.Dense(16, activation='relu'),
    keras.layers.Dense(3, activation='softmax'),
])
model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])
history = model.fit(np.zeros((12, 8)), np.zeros(12), epochs=2, verbose=0)
unbuilt = keras.Sequential([keras.layers.Dense(4)])
small = np.zeros((120, 8), dtype='float32')
large = np.zeros((100_000, 8), dtype='float32')
early = keras.callbacks.EarlyStopping(patience=2)
logger = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: None)
class EarlyStopping(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        pass
own_early = EarlyStopping()
conv = keras.Sequential([keras.Input((28, 28, 1)), keras.layers.Conv2D(8, 3), keras.layers.Flatten(), keras.layers.Dense(2)])
dense = keras.layers.Dense(5, activation='tanh')

matrix = tf.constant([[1.0, 2.0], [float('nan'), 4.0]])
counter = tf.Variable([1, 2, 3])
batches = tf.data.Dataset.from_tensor_slices((np.zeros((100, 3)), np.zeros(100))).batch(32)
endless = tf.data.Dataset.range(5).repeat()

root = tempfile.mkdtemp()
for label in ('cats', 'dogs', 'birds'):
    os.makedirs(os.path.join(root, label))
    for i in range(4):
        open(os.path.join(root, label, f'{i}.png'), 'wb').close()
from_dir = ImageDataGenerator(rescale=1 / 255).flow_from_directory(root, target_size=(64, 64), batch_size=5, class_mode='categorical')
frame = pd.DataFrame({'file': ['a.png', 'b.png', 'c.png'], 'label': ['x', 'y', 'x']})
from_frame = ImageDataGenerator().flow_from_dataframe(frame, directory=root, x_col='file', y_col='label', validate_filenames=False, target_size=(32, 32), batch_size=2, class_mode='binary')
"#;

#[tokio::test]
async fn tensorflow_and_keras_objects() {
    let mut kernel = start_kernel().await;
    run_cell(&mut kernel, SETUP).await;
    let (index_before, _) = eval_silent(
        &mut kernel,
        "(from_dir.batch_index, from_dir.total_batches_seen)",
    )
    .await;
    let info = facts(
        &mut kernel,
        &[
            "model",
            "model.fit",
            "unbuilt",
            "dense",
            "matrix",
            "counter",
            "batches",
            "endless",
            "from_dir",
            "from_frame",
            "history",
            "tf.keras",
            "keras.layers.Dense",
            "small",
            "large",
            "early",
            "logger",
            "own_early",
            "conv",
        ],
    )
    .await;
    training_time_is_bounded_only_where_the_facts_allow(&info);

    let model = var(&info, "model");
    assert_eq!(model.kind, Kind::KerasModel);
    assert_eq!(fact(&info, "model", Section::V, "built"), &json!(true));
    assert_eq!(fact(&info, "model", Section::V, "compiled"), &json!(true));
    assert_eq!(model.input_shape(), Some(vec![None, Some(8)]));
    assert_eq!(model.output_shape(), Some(vec![None, Some(3)]));
    assert_eq!(fact(&info, "model", Section::S, "n_layers"), &json!(2));
    let layers = fact(&info, "model", Section::S, "layers");
    assert_eq!(layers[0]["units"], json!(16));
    assert_eq!(layers[0]["output_shape"], json!([null, 16]));
    assert_eq!(layers[1]["output_shape"], json!([null, 3]));
    assert!(layers[1]["name"].is_string());
    assert_eq!(
        fact(&info, "model", Section::S, "n_params"),
        &json!(8 * 16 + 16 + 16 * 3 + 3)
    );
    assert_eq!(
        fact(&info, "model", Section::S, "last_layer")["units"],
        json!(3)
    );
    assert_eq!(
        fact(&info, "model", Section::R, "last_activation"),
        &json!("softmax")
    );
    assert_eq!(
        fact(&info, "model", Section::R, "loss"),
        &json!("sparse_categorical_crossentropy")
    );
    assert_eq!(
        fact(&info, "model", Section::R, "optimizer"),
        &json!("Adam")
    );
    assert_eq!(
        fact(&info, "model", Section::R, "metrics"),
        &json!(["accuracy"])
    );
    // Fitted without validation: TensorFlow traced its training step only.
    assert_eq!(
        fact(&info, "model", Section::R, "backend"),
        &json!("tensorflow")
    );
    assert_eq!(
        fact(&info, "model", Section::R, "traced"),
        &json!(["train"])
    );
    assert_eq!(var(&info, "model.fit").kind, Kind::Method);
    let unbuilt = var(&info, "unbuilt");
    assert!(!unbuilt.r.contains_key("traced"), "{unbuilt:?}");
    assert_eq!(fact(&info, "unbuilt", Section::V, "built"), &json!(false));
    assert_eq!(
        fact(&info, "unbuilt", Section::V, "compiled"),
        &json!(false)
    );
    assert_eq!(unbuilt.input_shape(), None);
    let dense = var(&info, "dense");
    assert_eq!(dense.kind, Kind::KerasLayer);
    assert_eq!(fact(&info, "dense", Section::R, "units"), &json!(5));
    assert_eq!(
        fact(&info, "dense", Section::R, "activation"),
        &json!("tanh")
    );

    let matrix = var(&info, "matrix");
    assert_eq!(matrix.kind, Kind::TfTensor);
    assert_eq!(matrix.shape(), Some(vec![Some(2), Some(2)]));
    assert_eq!(matrix.dtype(), Some("float32"));
    assert_eq!(matrix.has_nan(), Some(true));
    let counter = var(&info, "counter");
    assert_eq!(counter.kind, Kind::TfTensor);
    assert_eq!(counter.dtype(), Some("int32"));
    assert_eq!(counter.value(), Some(&json!([1, 2, 3])));

    let batches = var(&info, "batches");
    assert_eq!(batches.kind, Kind::TfDataset);
    assert_eq!(batches.n_samples(), Some(4));
    assert!(fact(&info, "batches", Section::R, "element_spec")
        .as_str()
        .unwrap()
        .contains("shape=(None, 3)"));
    assert_eq!(var(&info, "endless").n_samples(), Some(-1));

    let from_dir = var(&info, "from_dir");
    assert_eq!(from_dir.kind, Kind::KerasIterator);
    assert_eq!(from_dir.n_samples(), Some(12));
    assert_eq!(from_dir.batch_size(), Some(5));
    assert_eq!(from_dir.n_batches(), Some(3));
    assert_eq!(
        from_dir.image_shape(),
        Some(vec![Some(64), Some(64), Some(3)])
    );
    assert_eq!(from_dir.n_classes(), Some(3));
    assert_eq!(
        fact(&info, "from_dir", Section::R, "class_mode"),
        &json!("categorical")
    );
    let from_frame = var(&info, "from_frame");
    assert_eq!(from_frame.n_samples(), Some(3));
    assert_eq!(from_frame.n_classes(), Some(2));
    assert_eq!(
        fact(&info, "from_frame", Section::R, "class_mode"),
        &json!("binary")
    );
    let (index_after, _) = eval_silent(
        &mut kernel,
        "(from_dir.batch_index, from_dir.total_batches_seen)",
    )
    .await;
    assert_eq!(index_before, index_after, "the iterator was not advanced");

    let history = var(&info, "history");
    assert_eq!(history.kind, Kind::History);
    assert_eq!(fact(&info, "history", Section::V, "epochs"), &json!(2));
    assert_eq!(
        fact(&info, "history", Section::V, "history_keys"),
        &json!(["accuracy", "loss"])
    );

    assert_eq!(var(&info, "keras.layers.Dense").kind, Kind::Class);
    assert_eq!(var(&info, "tf.keras").kind, Kind::Pymodule);

    kernel.close().await.expect("kernel shuts down");
}

/// `training_time_bound` over the facts of real Keras models, arrays and callbacks.
fn training_time_is_bounded_only_where_the_facts_allow(info: &crane_runtime::RuntimeInfo) {
    use crane_probe::training_time::training_time_bound;
    use std::time::Duration;
    let bound = |code: &str| {
        let cell = crane_analysis::ParsedCell::parse(code);
        training_time_bound(&cell, &Default::default(), info)
    };
    // 8 steps of 16 samples, 3 epochs, each at most 20 ms plus its arithmetic.
    let toy = bound("model.fit(small, y, epochs=3, batch_size=16, verbose=0)").expect("bounded");
    assert!(
        toy >= Duration::from_millis(480) && toy < Duration::from_secs(1),
        "{toy:?}"
    );
    // Validation data and a cheap callback add their steps.
    let validated = bound(
        "history = model.fit(small, y, epochs=3, batch_size=16, callbacks=[early], validation_data=(small, y))",
    )
    .expect("bounded");
    assert!(validated > toy, "{validated:?} {toy:?}");
    // 3125 steps an epoch, 50 epochs: long.
    let long = bound("model.fit(large, y, epochs=50)").expect("bounded");
    assert!(long > Duration::from_secs(600), "{long:?}");
    for unknown in [
        // Callbacks that run the user's code (one named as Keras's own), a convolution, an
        // unbuilt model.
        "model.fit(small, y, epochs=3, callbacks=[logger])",
        "model.fit(small, y, epochs=3, callbacks=[own_early])",
        "conv.fit(small, y, epochs=1)",
        "unbuilt.fit(small, y, epochs=1)",
        // A loop around it, steps the bound does not count, data of unknown length.
        "for i in range(3):\n    model.fit(small, y, epochs=1)",
        "model.fit(small, y, epochs=3, steps_per_epoch=5)",
        "model.fit(batches, epochs=3)",
        "model.fit(small, y, epochs=n)",
        "model.fit(small, y)",
    ] {
        assert_eq!(bound(unknown), None, "{unknown}");
    }
}
