//! torch: what loss modules require of their input and target, and what layers require of the
//! tensor they are applied to (torch 1.8 to 2.x).

/// How a loss's target must relate to its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// Class indices: input `(N, C, ...)`, target `(N, ...)` of int64 (or uint8), with the same
    /// batch size. `probabilities`: a floating target of the input's exact shape is also taken
    /// (class probabilities, CrossEntropyLoss since torch 1.10), so such a target is not judged.
    ClassIndices { probabilities: bool },
    /// A floating target of the input's exact shape (binary cross-entropy).
    SameShape,
    /// Input and target must broadcast (regression losses; a broadcast that only warns is fine).
    Broadcast,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Loss {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    /// The class, as `torch.nn.<class>` or `torch.nn.modules.loss.<class>`.
    pub class: &'static str,
    pub target: Target,
}

pub(crate) const LOSSES: &[Loss] = &[
    Loss {
        id: "torch.CrossEntropyLoss",
        class: "CrossEntropyLoss",
        target: Target::ClassIndices {
            probabilities: true,
        },
    },
    Loss {
        id: "torch.NLLLoss",
        class: "NLLLoss",
        target: Target::ClassIndices {
            probabilities: false,
        },
    },
    Loss {
        id: "torch.BCELoss",
        class: "BCELoss",
        target: Target::SameShape,
    },
    Loss {
        id: "torch.BCEWithLogitsLoss",
        class: "BCEWithLogitsLoss",
        target: Target::SameShape,
    },
    Loss {
        id: "torch.MSELoss",
        class: "MSELoss",
        target: Target::Broadcast,
    },
    Loss {
        id: "torch.L1Loss",
        class: "L1Loss",
        target: Target::Broadcast,
    },
    Loss {
        id: "torch.SmoothL1Loss",
        class: "SmoothL1Loss",
        target: Target::Broadcast,
    },
    Loss {
        id: "torch.HuberLoss",
        class: "HuberLoss",
        target: Target::Broadcast,
    },
];

/// What a layer requires of its input tensor.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layer {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    pub class: &'static str,
    /// The numbers of dimensions the input may have (empty: any), and the exception otherwise.
    pub ranks: &'static [usize],
    pub rank_exception: &'static str,
    /// A constructor fact the input's size must equal, and at which dimension (negative: from
    /// the end): `num_features` at 1 for batch norm, `input_size` at -1 for recurrent layers.
    pub features: Option<(&'static str, isize)>,
    /// The input must hold integers (indices): `Embedding`.
    pub integer_input: bool,
}

pub(crate) const LAYERS: &[Layer] = &[
    Layer {
        id: "torch.Embedding",
        class: "Embedding",
        ranks: &[],
        rank_exception: "RuntimeError",
        features: None,
        integer_input: true,
    },
    Layer {
        id: "torch.BatchNorm1d",
        class: "BatchNorm1d",
        ranks: &[2, 3],
        rank_exception: "ValueError",
        features: Some(("num_features", 1)),
        integer_input: false,
    },
    Layer {
        id: "torch.BatchNorm2d",
        class: "BatchNorm2d",
        ranks: &[4],
        rank_exception: "ValueError",
        features: Some(("num_features", 1)),
        integer_input: false,
    },
    Layer {
        id: "torch.BatchNorm3d",
        class: "BatchNorm3d",
        ranks: &[5],
        rank_exception: "ValueError",
        features: Some(("num_features", 1)),
        integer_input: false,
    },
    Layer {
        id: "torch.Conv1d",
        class: "Conv1d",
        ranks: &[2, 3],
        rank_exception: "RuntimeError",
        features: None,
        integer_input: false,
    },
    Layer {
        id: "torch.Conv2d",
        class: "Conv2d",
        ranks: &[3, 4],
        rank_exception: "RuntimeError",
        features: None,
        integer_input: false,
    },
    Layer {
        id: "torch.Conv3d",
        class: "Conv3d",
        ranks: &[4, 5],
        rank_exception: "RuntimeError",
        features: None,
        integer_input: false,
    },
    Layer {
        id: "torch.LSTM",
        class: "LSTM",
        ranks: &[2, 3],
        rank_exception: "ValueError",
        features: Some(("input_size", -1)),
        integer_input: false,
    },
    Layer {
        id: "torch.GRU",
        class: "GRU",
        ranks: &[2, 3],
        rank_exception: "ValueError",
        features: Some(("input_size", -1)),
        integer_input: false,
    },
    Layer {
        id: "torch.RNN",
        class: "RNN",
        ranks: &[2, 3],
        rank_exception: "ValueError",
        features: Some(("input_size", -1)),
        integer_input: false,
    },
];
