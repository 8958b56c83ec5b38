//! The rule catalogue: every rule's stable code, name, library, exception and documentation,
//! as `crane rules` shows them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One entry of the rule catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RuleInfo {
    /// Stable id, e.g. `PD001`.
    pub code: &'static str,
    /// Stable kebab-case name, e.g. `missing-column`.
    pub name: &'static str,
    /// One line: the crash condition.
    pub summary: &'static str,
    /// The library whose API the rule is about (`python` for the language itself).
    pub library: &'static str,
    /// The exception the crash raises.
    pub exception: &'static str,
    /// A minimal cell that the rule flags, with the facts it needs in a comment.
    pub example: &'static str,
    /// What the rule proves and why the code crashes.
    pub explanation: &'static str,
}

macro_rules! rules {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident = $code:literal, $name:literal, $library:literal, $exception:literal,
        summary: $summary:literal,
        example: $example:literal;
    )+) => {
        /// A rule's stable identity. Serialized as its code (`"PD001"`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleCode {
            $( $(#[doc = $doc])+ $variant, )+
        }

        static CATALOGUE: &[RuleInfo] = &[$(
            RuleInfo {
                code: $code,
                name: $name,
                summary: $summary,
                library: $library,
                exception: $exception,
                example: $example,
                explanation: concat!($($doc, "\n"),+),
            },
        )+];

        impl RuleCode {
            pub const ALL: &'static [RuleCode] = &[$(RuleCode::$variant),+];
        }
    };
}

rules! {
    /// Proves that the cell reads a global name that exists nowhere: not a builtin, not in the
    /// kernel, not bound by any executed cell, not bound earlier in the target cell, and no star
    /// import could have bound it. In notebooks this is typically a name whose defining cell was
    /// never executed, or was executed after this one.
    UndefinedName = "NB001", "undefined-name", "python", "NameError",
        summary: "A name the cell reads is bound nowhere: not a builtin, not in the kernel, not earlier in the cell.",
        example: "# the cell defining `scaler` was not executed\nX_scaled = scaler.transform(X)";
    /// Proves that an attribute looked up on a module does not exist in it (the module's
    /// attributes were listed by the runtime facts).
    MissingModuleAttribute = "NB002", "missing-module-attribute", "python", "AttributeError",
        summary: "An attribute looked up on a module is not defined by the module.",
        example: "# np: module numpy, has no attribute `matrixmul`\nnp.matrixmul(a, b)";
    /// Proves that an attribute or method looked up on an object does not exist on it: the
    /// runtime facts list the attribute as absent for the object's type.
    MissingAttribute = "NB003", "missing-attribute", "python", "AttributeError",
        summary: "An attribute or method looked up on an object does not exist on its type.",
        example: "# df: DataFrame, `df.sort` absent\ndf.sort('a')";
    /// Proves that a dict is subscripted with a constant key it does not have, when all of its
    /// keys are known (e.g. a Keras `history.history` without `'acc'`). Python raises `KeyError`.
    MissingKey = "NB004", "missing-key", "python", "KeyError",
        summary: "A dict subscripted with a constant key it does not have.",
        example: "# history.history keys: [loss, accuracy, val_loss, val_accuracy]\nhistory.history['acc']";
    /// Proves that a call of a library function, method or class passes arguments its
    /// signature does not bind, as Python binds them: a missing required argument, an
    /// unexpected keyword, too many positional arguments, a parameter given twice. The
    /// signature is the live one the probe read (the parameters of a plain `def`, never of a
    /// wrapper that may accept more) or the compiled-in snapshot's for the same library
    /// version. Python raises `TypeError` before the library runs.
    CallSignatureMismatch = "NB005", "call-signature-mismatch", "python", "TypeError",
        summary: "A library call's arguments do not bind to its signature.",
        example: "# pd.read_csv: (filepath_or_buffer, *, sep=, ...)\npd.read_csv('data.csv', sepp=';')";
    /// Proves that a DataFrame subscript (`df['c']`, `df[['a', 'b']]`, `df.loc[:, 'c']`) names
    /// a column the frame does not have. pandas raises `KeyError`.
    MissingColumn = "PD001", "missing-column", "pandas", "KeyError",
        summary: "A DataFrame subscript names a column the frame does not have.",
        example: "# df columns: [a, b]\ndf['c'].mean()";
    /// Proves that `df.name` reads a column the frame does not have while `name` is not an
    /// attribute of DataFrame either. pandas raises `AttributeError`.
    MissingColumnAttribute = "PD002", "missing-column-attribute", "pandas", "AttributeError",
        summary: "`df.name` where the frame has no column `name` and DataFrame no such attribute.",
        example: "# df columns: [a, b]\ndf.price.mean()";
    /// Proves that `drop(columns=...)` or `drop(labels, axis=1)` names a column the frame does
    /// not have (and `errors='ignore'` is not given). pandas raises `KeyError`.
    DropMissingColumn = "PD003", "drop-missing-column", "pandas", "KeyError",
        summary: "`drop` of a column the frame does not have.",
        example: "# df columns: [a, b]\ndf = df.drop('c', axis=1)";
    /// Proves that a column-name argument of `groupby`, `sort_values`, `set_index`, `pivot`,
    /// `pivot_table`, `dropna(subset=)`, `drop_duplicates(subset=)` or `value_counts` names a
    /// column the frame does not have. Arguments are read as pandas reads them: a list given to
    /// `groupby`, `value_counts` or `pivot_table` as long as the frame's rows is a grouping
    /// array unless all its items are columns, so its labels are judged only when its length
    /// differs; an array, Series, Index, function, dict or `pd.Grouper` names no column; a tuple
    /// is one label. pandas raises `KeyError`.
    MissingColumnArgument = "PD004", "missing-column-argument", "pandas", "KeyError",
        summary: "A column named in groupby/sort_values/set_index/pivot/subset is not in the frame.",
        example: "# df columns: [a, b]\ndf.groupby('c').mean()";
    /// Proves that a key of `merge`/`join` (`on`, `left_on`, `right_on`) is not a column of the
    /// side it must come from, where the keys are given as pandas validates them first (not
    /// `on` with `left_on`, both `left_on` and `right_on` and as many of each, as many `join`
    /// keys as levels of the other frame's index). pandas raises `KeyError`.
    MissingMergeKey = "PD005", "missing-merge-key", "pandas", "KeyError",
        summary: "A merge/join key is not a column of the frame it must come from.",
        example: "# left columns: [id, x]; right columns: [key, y]\nleft.merge(right, on='id')";
    /// Proves that the `.dt` or `.str` accessor is used on a column whose dtype does not support
    /// it (`.dt` needs datetime-like values, `.str` strings). pandas raises `AttributeError`.
    AccessorWrongDtype = "PD006", "accessor-wrong-dtype", "pandas", "AttributeError",
        summary: "`.dt` on a non-datetime column or `.str` on a non-string column.",
        example: "# df['date']: dtype int64\ndf['date'].dt.year";
    /// Proves that `join` combines frames that share column names without `lsuffix`/`rsuffix`.
    /// pandas raises `ValueError: columns overlap but no suffix specified`.
    JoinOverlappingColumns = "PD007", "join-overlapping-columns", "pandas", "ValueError",
        summary: "`join` of frames sharing column names without suffixes.",
        example: "# left columns: [id, x]; right columns: [id, y]\nleft.join(right)";
    /// Proves that `iloc` with a constant integer position reaches beyond the frame's or
    /// series' length. pandas raises `IndexError`.
    IlocOutOfBounds = "PD008", "iloc-out-of-bounds", "pandas", "IndexError",
        summary: "`iloc` at a constant position beyond the length.",
        example: "# df shape: [3, 2]\ndf.iloc[5]";
    /// Proves that `astype(int)`/`astype(float)` or `pd.to_numeric` meets a value it cannot
    /// convert: a string that is not a number (seen among the column's values), or, for an
    /// integer type, a missing value. pandas raises `ValueError`.
    InvalidNumericConversion = "PD009", "invalid-numeric-conversion", "pandas", "ValueError",
        summary: "Numeric conversion of a column holding non-numeric text (or NaN, for int).",
        example: "# df['Installs'] examples: ['10,000+', '500+']\ndf['Installs'].astype(int)";
    /// Proves that `reshape` asks for a shape whose size differs from the array's size (or that
    /// `-1` cannot be resolved because the size does not divide). numpy raises `ValueError`.
    ReshapeSizeMismatch = "NP001", "reshape-size-mismatch", "numpy", "ValueError",
        summary: "`reshape` to a shape whose size differs from the array's size.",
        example: "# x shape: [10]\nx.reshape(3, -1)";
    /// Proves that a matrix product (`@`, `dot`, `matmul`) multiplies arrays whose inner
    /// dimensions differ. numpy raises `ValueError`.
    MatmulDimensionMismatch = "NP002", "matmul-dimension-mismatch", "numpy", "ValueError",
        summary: "Matrix product of arrays whose inner dimensions differ.",
        example: "# a shape: [3, 4]; b shape: [3, 4]\na @ b";
    /// Proves that `concatenate`/`stack`/`vstack`/`hstack` joins arrays whose dimensions off the
    /// joining axis differ (or, for `stack`, whose shapes differ). numpy raises `ValueError`.
    ConcatenateDimensionMismatch = "NP003", "concatenate-dimension-mismatch", "numpy", "ValueError",
        summary: "Joining arrays whose dimensions off the joining axis differ.",
        example: "# a shape: [3, 4]; b shape: [3, 5]\nnp.vstack([a, b])";
    /// Proves that an index is outside an array's dimension: a constant integer, a loop index
    /// that takes every value of a `range`/`enumerate` (the loop has no early exit), a counter
    /// raised by `+= 1` on every pass of a loop of known length, or more indices than the array
    /// has dimensions. numpy raises `IndexError`.
    IndexOutOfBounds = "NP004", "index-out-of-bounds", "numpy", "IndexError",
        summary: "A constant or loop index beyond an array's dimension, or too many indices.",
        example: "# x shape: [3, 4]\nx[:, 4]";
    /// Proves that element-wise arithmetic combines arrays whose shapes do not broadcast.
    /// numpy raises `ValueError`.
    BroadcastMismatch = "NP005", "broadcast-mismatch", "numpy", "ValueError",
        summary: "Element-wise arithmetic between arrays whose shapes do not broadcast.",
        example: "# a shape: [3, 4]; b shape: [3]\na + b";
    /// Proves that a numpy function or method gets a constant `axis` outside the array's
    /// dimensions (`np.argmax(y, axis=1)` on a 1-D `y`). numpy raises `AxisError`.
    AxisOutOfBounds = "NP006", "axis-out-of-bounds", "numpy", "AxisError",
        summary: "A constant axis beyond the array's number of dimensions.",
        example: "# y shape: [6]\nnp.argmax(y, axis=1)";
    /// Proves that a plain (non-structured) numpy array is indexed by a string, as if it were a
    /// DataFrame. numpy raises `IndexError: only integers, slices ... are valid indices`.
    StringIndexOnArray = "NP007", "string-index-on-array", "numpy", "IndexError",
        summary: "A numpy array indexed by a column name.",
        example: "# train: ndarray, dtype float64\ntrain['price']";
    /// Proves that `np.savetxt` gets an array that is not 1-D or 2-D (its known shape has more
    /// dimensions, or none). savetxt writes one line per row, and numpy raises `ValueError:
    /// Expected 1D or 2D array, got 3D array instead`.
    SavetxtDimensions = "NP008", "savetxt-dimensions", "numpy", "ValueError",
        summary: "`np.savetxt` of an array with more than two dimensions (or none).",
        example: "# images shape: [20, 32, 32, 3]\nnp.savetxt('images.txt', images)";
    /// Proves that a Python list, tuple or string is indexed by a numpy array with one or more
    /// dimensions (`names[labels[i]]` where each `labels[i]` is a row of shape `(1,)`). Python
    /// asks the array for an integer through `__index__`, which numpy grants only to 0-d
    /// integer arrays, and raises `TypeError: only integer scalar arrays can be converted to a
    /// scalar index`.
    ArrayAsSequenceIndex = "NP009", "array-as-sequence-index", "numpy", "TypeError",
        summary: "A Python list, tuple or str indexed by a numpy array that is not 0-d.",
        example: "# labels shape: [50000, 1]\nnames = ['cat', 'dog']\nnames[labels[0]]";
    /// Proves that `predict`, `transform`, `score` (or similar) is called on a scikit-learn
    /// estimator that is not fitted, for the methods the contract table says raise unfitted.
    /// scikit-learn raises `NotFittedError`.
    EstimatorNotFitted = "SK001", "estimator-not-fitted", "scikit-learn", "NotFittedError",
        summary: "predict/transform/score on an estimator that is not fitted.",
        example: "# model: LogisticRegression, fitted: false\nmodel.predict(X_test)";
    /// Proves that the data passed to a fitted estimator has a different number of features
    /// than it was fitted with (`n_features_in_`), including after columns were dropped or
    /// added in the cell. scikit-learn raises `ValueError`.
    FeatureCountMismatch = "SK002", "feature-count-mismatch", "scikit-learn", "ValueError",
        summary: "Data with a different number of features than the estimator was fitted on.",
        example: "# model n_features_in: 4; X shape: [100, 3]\nmodel.predict(X)";
    /// Proves that a DataFrame passed to an estimator fitted on named features has different
    /// column names than `feature_names_in_`. scikit-learn raises `ValueError`.
    FeatureNamesMismatch = "SK003", "feature-names-mismatch", "scikit-learn", "ValueError",
        summary: "A frame whose column names differ from the estimator's feature_names_in_.",
        example: "# model feature_names_in: [a, b]; X columns: [a, c]\nmodel.predict(X)";
    /// Proves that data holding NaN is passed to an estimator that rejects missing values.
    /// scikit-learn raises `ValueError: Input X contains NaN`.
    NanInput = "SK004", "nan-input", "scikit-learn", "ValueError",
        summary: "Data holding NaN passed to an estimator that rejects missing values.",
        example: "# X has_nan: true; model: LogisticRegression\nmodel.fit(X, y)";
    /// Proves that a frame with string (object) columns is passed to an estimator that needs
    /// numbers. scikit-learn raises `ValueError: could not convert string to float`.
    NonNumericInput = "SK005", "non-numeric-input", "scikit-learn", "ValueError",
        summary: "String columns passed to an estimator that needs numbers.",
        example: "# X columns: [age: int64, city: object]\nLinearRegression().fit(X, y)";
    /// Proves that `LabelEncoder.transform` receives a value outside the fitted `classes_`
    /// (only when the values passed are known exactly). scikit-learn raises `ValueError`.
    UnseenLabels = "SK006", "unseen-labels", "scikit-learn", "ValueError",
        summary: "LabelEncoder.transform on a value outside classes_.",
        example: "# le classes: [a, b]\nle.transform(['a', 'c'])";
    /// Proves that a split stratified on labels cannot be made: some class has a single member
    /// (there are more classes than half the samples), or a constant test size is smaller than
    /// the number of classes. scikit-learn raises `ValueError: The least populated classes in y
    /// have only 1 member` or `The test_size = ... should be greater or equal to the number of
    /// classes`.
    StratifySingletonClass = "SK007", "stratify-singleton-class", "scikit-learn", "ValueError",
        summary: "A stratified split with a one-member class, or a test set smaller than the classes.",
        example: "# y shape: [5]; y unique values: 3\ntrain_test_split(X, y, stratify=y)";
    /// Proves that `n_clusters` exceeds the number of samples, or `n_components` exceeds what
    /// the data's samples and features allow. scikit-learn raises `ValueError`.
    TooManyComponents = "SK008", "too-many-components", "scikit-learn", "ValueError",
        summary: "n_clusters/n_components larger than the samples or features allow.",
        example: "# X shape: [100, 3]\nPCA(n_components=5).fit(X)";
    /// Proves that an estimator is fitted on, or a split is made of, data with zero samples.
    /// scikit-learn raises `ValueError` (`Found array with 0 sample(s)`, `With n_samples=0 ...`).
    EmptyInput = "SK009", "empty-input", "scikit-learn", "ValueError",
        summary: "fit or train_test_split on data with zero rows.",
        example: "# X shape: [0, 4]\ntrain_test_split(X, y)";
    /// Proves that a one-dimensional array or Series is passed as X to an estimator that needs
    /// a 2-D feature matrix. scikit-learn raises `ValueError: Expected 2D array, got 1D array`.
    OneDimensionalInput = "SK010", "one-dimensional-input", "scikit-learn", "ValueError",
        summary: "A 1-D array or Series passed as X to an estimator that needs 2-D input.",
        example: "# df['age']: Series\nLinearRegression().fit(df['age'], y)";
    /// Proves that arrays that must have one row per sample have different numbers of rows:
    /// `fit(X, y)` or `score(X, y)` of a supervised estimator, `train_test_split(X, y)`, or a
    /// metric's `y_true` and `y_pred`. scikit-learn raises `ValueError: Found input variables
    /// with inconsistent numbers of samples`.
    InconsistentSamples = "SK011", "inconsistent-samples", "scikit-learn", "ValueError",
        summary: "X and y (or y_true and y_pred) with different numbers of samples.",
        example: "# X_train shape: [800, 5]; y_test shape: [200]\nmodel.fit(X_train, y_test)";
    /// Proves that `LogisticRegression` is fitted with a penalty its solver does not support:
    /// `liblinear` takes only l1 and l2, `lbfgs`, `newton-cg`, `newton-cholesky` and `sag` only
    /// l2, and only `saga` takes elasticnet (so elasticnet with the default solver, lbfgs or
    /// liblinear by version, fails too). scikit-learn raises `ValueError` at `fit`.
    SolverPenaltyMismatch = "SK012", "solver-penalty-mismatch", "scikit-learn", "ValueError",
        summary: "LogisticRegression fitted with a penalty its solver does not support.",
        example: "model = LogisticRegression(solver='liblinear', penalty='elasticnet')\nmodel.fit(X, y)";
    /// Proves that a fitted attribute is read on a scikit-learn estimator whose class never has
    /// it in any version: `feature_importances_` on linear models, SVMs, neighbours, naive
    /// Bayes, MLPs; `coef_` on trees, forests, boosting and neighbours. Python raises
    /// `AttributeError`.
    MissingEstimatorAttribute = "SK013", "missing-estimator-attribute", "scikit-learn", "AttributeError",
        summary: "A fitted attribute the estimator's class never has (feature_importances_ on SVC).",
        example: "# model: SVC, fitted\nmodel.feature_importances_";
    /// Proves that scikit-learn's classification metric gets targets `type_of_target` cannot
    /// compare: a continuous target (a float value that is not an integer, seen among the
    /// values or as their minimum or maximum), or a 2-D target of two or more columns beside a
    /// 1-D one (`predict_proba` output against labels). scikit-learn raises `ValueError:
    /// Classification metrics can't handle a mix of ... targets`; a regression metric given
    /// targets with different numbers of outputs raises `ValueError` too.
    MetricTargetMismatch = "SK014", "metric-target-mismatch", "scikit-learn", "ValueError",
        summary: "A classification metric given continuous or 2-D targets (or outputs that differ).",
        example: "# y_test: int labels; y_prob shape: [200, 2]\naccuracy_score(y_test, y_prob)";
    /// Proves that a torch module whose first layer is `nn.Linear(in_features=k)` is applied to
    /// a tensor whose last dimension is not `k`. torch raises `RuntimeError` (shape mismatch).
    LinearInFeatures = "TO001", "linear-in-features", "torch", "RuntimeError",
        summary: "Linear layer applied to a tensor whose last dimension differs from in_features.",
        example: "# model first layer: Linear(in_features=10); x shape: [32, 12]\nmodel(x)";
    /// Proves that a module whose first layer is a convolution with `in_channels=c` is applied
    /// to a tensor whose channel dimension is not `c`. torch raises `RuntimeError`.
    ConvInChannels = "TO002", "conv-in-channels", "torch", "RuntimeError",
        summary: "Convolution applied to a tensor whose channel dimension differs from in_channels.",
        example: "# model first layer: Conv2d(in_channels=3); x shape: [8, 1, 28, 28]\nmodel(x)";
    /// Proves that one operation combines tensors (or a module and a tensor) on different
    /// devices. torch raises `RuntimeError: Expected all tensors to be on the same device`.
    DeviceMismatch = "TO003", "device-mismatch", "torch", "RuntimeError",
        summary: "Tensors or module and input on different devices in one operation.",
        example: "# model device: cuda:0; x device: cpu\nmodel(x)";
    /// Proves that an integer or boolean tensor is fed to a module whose first layer is a
    /// floating-point Linear or convolution layer. torch raises `RuntimeError` (dtype mismatch).
    DtypeMismatch = "TO004", "dtype-mismatch", "torch", "RuntimeError",
        summary: "Integer or boolean tensor into a floating-point Linear or convolution layer.",
        example: "# model first layer: Linear; x dtype: torch.int64\nmodel(x)";
    /// Proves that a torch loss gets a target its contract rejects: class-index losses
    /// (`CrossEntropyLoss`, `NLLLoss`) need an int64 target with one dimension less than the
    /// input and the same batch size, binary cross-entropy a floating target of the input's
    /// shape, regression losses shapes that broadcast. torch raises `RuntimeError` or
    /// `ValueError`, as the loss's row in the contract table says.
    LossTargetMismatch = "TO005", "loss-target-mismatch", "torch", "RuntimeError",
        summary: "A torch loss whose target's dtype or shape does not fit the input.",
        example: "# criterion: CrossEntropyLoss; logits shape: [4, 3]; y dtype: torch.float32, shape [4]\ncriterion(logits, y)";
    /// Proves that a torch layer is applied to a tensor it cannot take: a number of
    /// dimensions the layer does not accept (batch norm, convolutions, recurrent layers), a
    /// feature size that differs from the layer's (`num_features`, `input_size`), or floats
    /// into an `Embedding`. torch raises `RuntimeError` or `ValueError` per the layer's row.
    LayerInputMismatch = "TO006", "layer-input-mismatch", "torch", "RuntimeError",
        summary: "A torch layer applied to a tensor of the wrong rank, feature size or dtype.",
        example: "# bn: BatchNorm1d(num_features=3); x shape: [4, 5]\nbn(x)";
    /// Proves that `view` or `reshape` asks a tensor for a shape whose size differs from its
    /// number of elements (or with more than one `-1`, or a `-1` that cannot divide the rest).
    /// torch raises `RuntimeError: shape '[3, -1]' is invalid for input of size 10`.
    ViewSizeMismatch = "TO007", "view-size-mismatch", "torch", "RuntimeError",
        summary: "`view`/`reshape` of a tensor to a shape whose size differs from its elements.",
        example: "# x shape: [4, 10]\nx.view(-1, 12)";
    /// Proves that data passed to a Keras model (`fit`, `evaluate`, `predict`) does not fit the
    /// model's input shape: its last (feature or channel) dimension differs, or its rank differs
    /// while the first layer is recurrent or convolutional (they require an exact rank). Keras
    /// raises `ValueError` when TensorFlow first traces the step the call runs; Keras 3 on
    /// TensorFlow, whose step was traced before for the model's own width (`evaluate` after a
    /// `fit` that validated, a second `predict`), retraces it with the width relaxed, and
    /// TensorFlow raises `InvalidArgumentError`.
    KerasInputShape = "KS001", "keras-input-shape", "keras", "ValueError",
        summary: "Data whose shape does not match the Keras model's input shape.",
        example: "# model input_shape: [null, 784]; X shape: [60000, 28, 28]\nmodel.fit(X, y)";
    /// Proves that the last layer's units do not fit the compiled loss and the labels: a
    /// categorical cross-entropy against one-hot labels of another width, a sparse categorical
    /// cross-entropy with labels beyond the units, or a binary cross-entropy against one-hot
    /// labels of width two or more. Keras raises `ValueError`.
    KerasOutputUnits = "KS002", "keras-output-units", "keras", "ValueError",
        summary: "Last layer's units do not fit the labels under the compiled loss.",
        example: "# model last layer units: 1, loss: categorical_crossentropy; y shape: [100, 10]\nmodel.fit(X, y)";
    /// Proves that `fit`/`evaluate` gets inputs and labels with different numbers of samples.
    /// Keras raises `ValueError: Data cardinality is ambiguous`.
    KerasSampleMismatch = "KS004", "keras-sample-mismatch", "keras", "ValueError",
        summary: "Keras fit/evaluate with x and y of different lengths.",
        example: "# X shape: [100, 4]; y shape: [90]\nmodel.fit(X, y)";
    /// Proves that `fit`/`evaluate` is called on a kernel's Keras model that was never compiled.
    /// Keras 3 raises `ValueError: You must call compile() before using the model`, Keras 2
    /// `RuntimeError: You must compile your model before training/testing`; the model's class
    /// tells which, so a model built in the cell (whose version is not known) is not judged.
    KerasNotCompiled = "KS003", "keras-not-compiled", "keras", "ValueError",
        summary: "fit/evaluate on a Keras model that was never compiled.",
        example: "# model: keras.src.models.sequential.Sequential, compiled: false\nmodel.fit(X, y)";
    /// Proves that a call passes a constant argument outside the values the library's contract
    /// accepts: an option string not among the options (`how='outter'`, `kind='scatterplot'`), a
    /// count below its minimum, a fraction outside its range. The row of the contract table
    /// (`crates/crane-detect/src/rules/contracts/`) names the exception.
    RejectedArgumentValue = "CT001", "rejected-argument-value", "contracts", "ValueError",
        summary: "A constant argument outside the values the library accepts.",
        example: "df.merge(other, on='id', how='outter')";
    /// Proves that two arguments whose sizes a library's contract relates disagree: the columns
    /// of a 2-D array given to `pd.DataFrame` and the `columns` named, the rows of the data and
    /// the `index`, the values of a `pd.Series` and its `index`. An `index` or `columns` that is
    /// a list of lists or arrays is the levels of a MultiIndex, as long as each level. pandas
    /// raises `ValueError`.
    SizeMismatch = "CT002", "argument-size-mismatch", "contracts", "ValueError",
        summary: "Two arguments whose sizes must agree do not (data and columns, values and index).",
        example: "# X shape: [100, 3]\npd.DataFrame(X, columns=['a', 'b'])";
    /// Proves that an array is passed to a function that cannot take its number of dimensions:
    /// a vector to a matrix function (`np.linalg.inv`, `det`, `eig`, `cholesky` also need square
    /// matrices; `np.trace`), a 3-D array to `np.diag`, a 1-D or 4-D array to `plt.imshow`. The
    /// row of the contract table names the exception (`LinAlgError`, `ValueError`, `TypeError`).
    ArgumentRankMismatch = "CT003", "argument-rank-mismatch", "contracts", "ValueError",
        summary: "An array whose number of dimensions (or squareness) the function does not take.",
        example: "# v shape: [4]\nnp.linalg.inv(v)";
    /// Proves that a plotting call gets x and y of different lengths: their first dimensions
    /// for `plot`, their sizes for `scatter` (which flattens them), the lengths of flat values
    /// for `bar` (which broadcasts them). matplotlib raises `ValueError: x and y must have same
    /// first dimension` (or `must be the same size`, `shape mismatch`).
    PlotLengthMismatch = "PL001", "plot-length-mismatch", "matplotlib", "ValueError",
        summary: "x and y of different lengths in a plot.",
        example: "# a len: 10; b len: 12\nplt.plot(a, b)";
    /// Proves that a plotting call names, by string, a column the frame passed as `data` does
    /// not have (seaborn's `x`, `y`, `hue`... and the `by` of pandas' `hist` and `boxplot` may
    /// also name an index level). seaborn raises `ValueError`, pandas plotting `KeyError`.
    PlotMissingColumn = "PL002", "plot-missing-column", "seaborn", "ValueError",
        summary: "A column passed by name to a plot is not in the frame.",
        example: "# df columns: [a, b]\nsns.scatterplot(data=df, x='a', y='c')";
    /// Proves that `plt.subplot(rows, columns, index)` (or `fig.add_subplot`) asks for an index
    /// outside `1..=rows*columns`, also when a loop index runs over every pass. matplotlib
    /// raises `ValueError: num must be an integer with 1 <= num <= N`.
    SubplotIndexOutOfRange = "PL004", "subplot-index-out-of-range", "matplotlib", "ValueError",
        summary: "A subplot index outside 1..=rows*columns.",
        example: "for i in range(10):\n    plt.subplot(3, 3, i + 1)";
    /// Proves that `plot_acf`/`plot_pacf` asks for more lags than the series allows (pacf: at
    /// most half the length). statsmodels raises `ValueError`.
    AcfTooManyLags = "PL003", "acf-too-many-lags", "statsmodels", "ValueError",
        summary: "plot_acf/plot_pacf lags beyond what the series length allows.",
        example: "# s len: 40\nplot_pacf(s, lags=30)";
}

impl RuleCode {
    pub fn info(self) -> &'static RuleInfo {
        &CATALOGUE[self as usize]
    }

    pub fn code(self) -> &'static str {
        self.info().code
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }
}

/// Every rule, in code order.
pub fn catalogue() -> &'static [RuleInfo] {
    CATALOGUE
}

impl fmt::Display for RuleCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown rule {0:?}: expected a code like `PD001` or a name like `missing-column`")]
pub struct UnknownRule(String);

impl FromStr for RuleCode {
    type Err = UnknownRule;

    /// Accepts a code (`PD001`) or a name (`missing-column`).
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        RuleCode::ALL
            .iter()
            .copied()
            .find(|rule| rule.code().eq_ignore_ascii_case(text) || rule.name() == text)
            .ok_or_else(|| UnknownRule(text.to_owned()))
    }
}

impl Serialize for RuleCode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.code())
    }
}

impl<'de> Deserialize<'de> for RuleCode {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
