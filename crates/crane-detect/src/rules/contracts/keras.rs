//! Keras: which first layers need inputs of exactly their rank, and how each loss relates the
//! last layer's units to the labels (Keras 2 and 3).

/// First layers that take inputs of exactly the rank of their input shape.
pub(crate) const STRICT_RANK_LAYERS: &[&str] = &[
    "LSTM",
    "GRU",
    "SimpleRNN",
    "Bidirectional",
    "Conv1D",
    "Conv2D",
    "Conv3D",
];

/// What labels a loss takes, against a last `Dense(units)` layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Labels {
    /// Integer class indices, one per sample: labels of width two or more fail.
    SparseIndices,
    /// One-hot rows: their width must equal the units.
    OneHot,
    /// Element-wise against the output: the width must equal the units, unless one is 1.
    Elementwise,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Loss {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    /// The loss as `compile(loss=...)` names it, lower-cased: the function's name or the class's.
    pub names: &'static [&'static str],
    pub labels: Labels,
}

pub(crate) const LOSSES: &[Loss] = &[
    Loss {
        id: "keras.sparse_categorical_crossentropy",
        names: &[
            "sparse_categorical_crossentropy",
            "sparsecategoricalcrossentropy",
        ],
        labels: Labels::SparseIndices,
    },
    Loss {
        id: "keras.categorical_crossentropy",
        names: &["categorical_crossentropy", "categoricalcrossentropy"],
        labels: Labels::OneHot,
    },
    Loss {
        id: "keras.elementwise",
        names: &[
            "binary_crossentropy",
            "binarycrossentropy",
            "mse",
            "mean_squared_error",
            "meansquarederror",
            "mae",
            "mean_absolute_error",
            "meanabsoluteerror",
        ],
        labels: Labels::Elementwise,
    },
];

/// The loss's row, by the name `compile` was given.
pub(crate) fn loss(name: &str) -> Option<&'static Loss> {
    let name = name.to_ascii_lowercase();
    LOSSES
        .iter()
        .find(|loss| loss.names.contains(&name.as_str()))
}
