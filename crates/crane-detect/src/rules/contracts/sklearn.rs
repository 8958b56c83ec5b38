//! scikit-learn: what estimators check in their input, what they always and never have once
//! fitted, which parameter values they accept, and which metrics compare labels (scikit-learn
//! 0.20 to 1.x).

use super::Accepts::{FloatInOpenUnit, IntAtLeast, OneOf};
use super::Callee::{Estimator, Function};
use super::Domain;

/// What an estimator checks in the X it fits on or transforms.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct InputChecks {
    /// Raises on NaN in X.
    pub rejects_nan: bool,
    /// Needs numeric 2-D X (no strings, no 1-D input).
    pub numeric_only: bool,
}

pub(crate) const NAN_AND_NUMERIC: InputChecks = InputChecks {
    rejects_nan: true,
    numeric_only: true,
};
pub(crate) const NAN: InputChecks = InputChecks {
    rejects_nan: true,
    numeric_only: false,
};
pub(crate) const NUMERIC: InputChecks = InputChecks {
    rejects_nan: false,
    numeric_only: true,
};

/// The input checks of estimators, as every scikit-learn version in use makes them.
pub(crate) const INPUT_CHECKS: &[(&str, InputChecks)] = &[
    ("LinearRegression", NAN_AND_NUMERIC),
    ("LogisticRegression", NAN_AND_NUMERIC),
    ("LogisticRegressionCV", NAN_AND_NUMERIC),
    ("Ridge", NAN_AND_NUMERIC),
    ("RidgeCV", NAN_AND_NUMERIC),
    ("RidgeClassifier", NAN_AND_NUMERIC),
    ("Lasso", NAN_AND_NUMERIC),
    ("LassoCV", NAN_AND_NUMERIC),
    ("ElasticNet", NAN_AND_NUMERIC),
    ("ElasticNetCV", NAN_AND_NUMERIC),
    ("SGDClassifier", NAN_AND_NUMERIC),
    ("SGDRegressor", NAN_AND_NUMERIC),
    ("SVC", NAN_AND_NUMERIC),
    ("SVR", NAN_AND_NUMERIC),
    ("LinearSVC", NAN_AND_NUMERIC),
    ("LinearSVR", NAN_AND_NUMERIC),
    ("NuSVC", NAN_AND_NUMERIC),
    ("NuSVR", NAN_AND_NUMERIC),
    ("KNeighborsClassifier", NAN_AND_NUMERIC),
    ("KNeighborsRegressor", NAN_AND_NUMERIC),
    ("KMeans", NAN_AND_NUMERIC),
    ("MiniBatchKMeans", NAN_AND_NUMERIC),
    ("DBSCAN", NAN_AND_NUMERIC),
    ("AgglomerativeClustering", NAN_AND_NUMERIC),
    ("PCA", NAN_AND_NUMERIC),
    ("GaussianNB", NAN_AND_NUMERIC),
    ("MultinomialNB", NAN_AND_NUMERIC),
    ("BernoulliNB", NAN_AND_NUMERIC),
    ("MLPClassifier", NAN_AND_NUMERIC),
    ("MLPRegressor", NAN_AND_NUMERIC),
    ("GradientBoostingClassifier", NAN_AND_NUMERIC),
    ("GradientBoostingRegressor", NAN_AND_NUMERIC),
    ("LinearDiscriminantAnalysis", NAN_AND_NUMERIC),
    ("QuadraticDiscriminantAnalysis", NAN_AND_NUMERIC),
    ("Perceptron", NAN_AND_NUMERIC),
    ("PassiveAggressiveClassifier", NAN),
    ("PassiveAggressiveRegressor", NAN),
    ("BayesianRidge", NAN_AND_NUMERIC),
    ("HuberRegressor", NAN_AND_NUMERIC),
    ("TSNE", NAN_AND_NUMERIC),
    ("PolynomialFeatures", NAN_AND_NUMERIC),
    ("Normalizer", NAN_AND_NUMERIC),
    ("KernelPCA", NAN_AND_NUMERIC),
    ("DecisionTreeClassifier", NUMERIC),
    ("DecisionTreeRegressor", NUMERIC),
    ("RandomForestClassifier", NUMERIC),
    ("RandomForestRegressor", NUMERIC),
    ("ExtraTreesClassifier", NUMERIC),
    ("ExtraTreesRegressor", NUMERIC),
    ("AdaBoostClassifier", NUMERIC),
    ("AdaBoostRegressor", NUMERIC),
    ("StandardScaler", NUMERIC),
    ("MinMaxScaler", NUMERIC),
    ("RobustScaler", NUMERIC),
    ("MaxAbsScaler", NUMERIC),
    ("PowerTransformer", NUMERIC),
    ("QuantileTransformer", NUMERIC),
];

/// Transformers whose output has as many columns as their input.
pub(crate) const SAME_WIDTH: &[&str] = &[
    "StandardScaler",
    "MinMaxScaler",
    "RobustScaler",
    "MaxAbsScaler",
    "Normalizer",
    "PowerTransformer",
    "QuantileTransformer",
];

/// Estimators made of other estimators, whose input checks are their steps'.
pub(crate) const COMPOSITE: &[&str] = &[
    "Pipeline",
    "ColumnTransformer",
    "GridSearchCV",
    "RandomizedSearchCV",
    "HalvingGridSearchCV",
    "HalvingRandomSearchCV",
    "FeatureUnion",
    "TransformedTargetRegressor",
    "VotingClassifier",
    "VotingRegressor",
    "StackingClassifier",
    "StackingRegressor",
];

/// scikit-learn estimators whose methods raise `NotFittedError` before `fit`, by module,
/// class and method (each pair is run unfitted against the real library by the contract
/// tests). Not every estimator does: a Gaussian process predicts from its prior, a
/// meta-estimator around a frozen estimator uses it as it is, a stateless transformer needs
/// no fit; an estimator outside this table is not judged.
pub(crate) const RAISE_UNFITTED: &[(&str, &str, &[&str])] = &[
    (
        "sklearn.linear_model",
        "LinearRegression",
        &["predict", "score"],
    ),
    (
        "sklearn.linear_model",
        "LogisticRegression",
        &[
            "predict",
            "predict_proba",
            "predict_log_proba",
            "decision_function",
            "score",
        ],
    ),
    ("sklearn.linear_model", "Ridge", &["predict", "score"]),
    ("sklearn.linear_model", "Lasso", &["predict", "score"]),
    ("sklearn.linear_model", "ElasticNet", &["predict", "score"]),
    (
        "sklearn.linear_model",
        "SGDClassifier",
        &["predict", "decision_function", "score"],
    ),
    (
        "sklearn.linear_model",
        "SGDRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.svm",
        "SVC",
        &["predict", "decision_function", "score"],
    ),
    ("sklearn.svm", "SVR", &["predict", "score"]),
    (
        "sklearn.svm",
        "LinearSVC",
        &["predict", "decision_function", "score"],
    ),
    (
        "sklearn.neighbors",
        "KNeighborsClassifier",
        &["predict", "predict_proba", "score", "kneighbors"],
    ),
    (
        "sklearn.neighbors",
        "KNeighborsRegressor",
        &["predict", "score", "kneighbors"],
    ),
    (
        "sklearn.tree",
        "DecisionTreeClassifier",
        &["predict", "predict_proba", "predict_log_proba", "score"],
    ),
    (
        "sklearn.tree",
        "DecisionTreeRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.ensemble",
        "RandomForestClassifier",
        &["predict", "predict_proba", "predict_log_proba", "score"],
    ),
    (
        "sklearn.ensemble",
        "RandomForestRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.ensemble",
        "ExtraTreesClassifier",
        &["predict", "predict_proba", "score"],
    ),
    (
        "sklearn.ensemble",
        "ExtraTreesRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.ensemble",
        "GradientBoostingClassifier",
        &["predict", "predict_proba", "decision_function", "score"],
    ),
    (
        "sklearn.ensemble",
        "GradientBoostingRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.ensemble",
        "HistGradientBoostingClassifier",
        &["predict", "predict_proba", "decision_function", "score"],
    ),
    (
        "sklearn.ensemble",
        "HistGradientBoostingRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.naive_bayes",
        "GaussianNB",
        &["predict", "predict_proba", "predict_log_proba", "score"],
    ),
    (
        "sklearn.neural_network",
        "MLPClassifier",
        &["predict", "predict_proba", "score"],
    ),
    (
        "sklearn.neural_network",
        "MLPRegressor",
        &["predict", "score"],
    ),
    (
        "sklearn.preprocessing",
        "StandardScaler",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "MinMaxScaler",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "MaxAbsScaler",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "RobustScaler",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "OneHotEncoder",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "OrdinalEncoder",
        &["transform", "inverse_transform"],
    ),
    (
        "sklearn.preprocessing",
        "PolynomialFeatures",
        &["transform"],
    ),
    ("sklearn.impute", "SimpleImputer", &["transform"]),
    (
        "sklearn.decomposition",
        "PCA",
        &["transform", "inverse_transform", "score"],
    ),
    (
        "sklearn.cluster",
        "KMeans",
        &["predict", "transform", "score"],
    ),
];

/// Whether the table says `method` of scikit-learn's `class` raises `NotFittedError` unfitted.
pub(crate) fn raises_unfitted(class: &str, method: &str) -> bool {
    RAISE_UNFITTED
        .iter()
        .any(|(_, name, methods)| *name == class && methods.contains(&method))
}

/// What a metric's `y_true` and `y_pred` hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Targets {
    /// Class labels: `type_of_target` must find both binary or multiclass (or both
    /// multilabel-indicator); a continuous target, or a 2-D one beside a 1-D one, raises
    /// `ValueError: Classification metrics can't handle a mix of ... targets`.
    Labels,
    /// Numbers: `y_true` and `y_pred` must have the same number of outputs.
    Values,
}

/// Metrics comparing `y_true` with `y_pred` sample by sample, by what they compare.
pub(crate) const METRICS: &[(&str, Targets)] = &[
    ("accuracy_score", Targets::Labels),
    ("f1_score", Targets::Labels),
    ("precision_score", Targets::Labels),
    ("recall_score", Targets::Labels),
    ("confusion_matrix", Targets::Labels),
    ("classification_report", Targets::Labels),
    ("balanced_accuracy_score", Targets::Labels),
    ("matthews_corrcoef", Targets::Labels),
    ("cohen_kappa_score", Targets::Labels),
    ("jaccard_score", Targets::Labels),
    ("fbeta_score", Targets::Labels),
    ("precision_recall_fscore_support", Targets::Labels),
    ("hamming_loss", Targets::Labels),
    ("zero_one_loss", Targets::Labels),
    ("mean_squared_error", Targets::Values),
    ("mean_absolute_error", Targets::Values),
    ("r2_score", Targets::Values),
    ("mean_absolute_percentage_error", Targets::Values),
    ("median_absolute_error", Targets::Values),
    ("explained_variance_score", Targets::Values),
    ("max_error", Targets::Values),
];

/// The metric's targets, when it is one of [`METRICS`].
pub(crate) fn metric(name: &str) -> Option<Targets> {
    METRICS
        .iter()
        .find(|(metric, _)| *metric == name)
        .map(|(_, targets)| *targets)
}

/// Methods that need a fitted estimator and take X first.
pub(crate) const NEED_FIT: &[&str] = &[
    "predict",
    "predict_proba",
    "predict_log_proba",
    "decision_function",
    "transform",
    "score",
    "inverse_transform",
    "kneighbors",
];

/// The solvers of `LogisticRegression` and the penalties each accepts, in every scikit-learn
/// version that has the solver (`None` is left out: before 1.2 only the string `'none'` meant
/// no penalty, and `'none'` is gone since 1.4).
pub(crate) const SOLVER_PENALTIES: &[(&str, &[&str])] = &[
    ("liblinear", &["l1", "l2"]),
    ("lbfgs", &["l2"]),
    ("newton-cg", &["l2"]),
    ("newton-cholesky", &["l2"]),
    ("sag", &["l2"]),
    ("saga", &["l1", "l2", "elasticnet"]),
];

/// Fitted attributes that whole families of estimators never have, in any version.
pub(crate) const NEVER_FITTED: &[(&str, &[&str])] = &[
    (
        "feature_importances_",
        &[
            "LinearRegression",
            "LogisticRegression",
            "LogisticRegressionCV",
            "Ridge",
            "RidgeCV",
            "RidgeClassifier",
            "Lasso",
            "LassoCV",
            "ElasticNet",
            "ElasticNetCV",
            "SGDClassifier",
            "SGDRegressor",
            "Perceptron",
            "BayesianRidge",
            "HuberRegressor",
            "SVC",
            "SVR",
            "LinearSVC",
            "LinearSVR",
            "NuSVC",
            "NuSVR",
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "GaussianNB",
            "MultinomialNB",
            "BernoulliNB",
            "MLPClassifier",
            "MLPRegressor",
            "LinearDiscriminantAnalysis",
            "QuadraticDiscriminantAnalysis",
            "KMeans",
            "PCA",
            "StandardScaler",
            "MinMaxScaler",
        ],
    ),
    (
        "coef_",
        &[
            "DecisionTreeClassifier",
            "DecisionTreeRegressor",
            "RandomForestClassifier",
            "RandomForestRegressor",
            "ExtraTreesClassifier",
            "ExtraTreesRegressor",
            "GradientBoostingClassifier",
            "GradientBoostingRegressor",
            "KNeighborsClassifier",
            "KNeighborsRegressor",
            "KMeans",
        ],
    ),
];

const SVM_KERNELS: &[&str] = &["linear", "poly", "rbf", "sigmoid", "precomputed"];
const CLASSIFIER_CRITERIA: &[&str] = &["gini", "entropy", "log_loss"];
const REGRESSOR_CRITERIA: &[&str] = &[
    "squared_error",
    "friedman_mse",
    "absolute_error",
    "poisson",
    "mse",
    "mae",
];
const NEIGHBOR_WEIGHTS: &[&str] = &["uniform", "distance"];
const NEIGHBOR_ALGORITHMS: &[&str] = &["auto", "ball_tree", "kd_tree", "brute"];

macro_rules! estimator_domains {
    ($($id:literal: $class:literal . $param:literal in $accepts:expr;)+) => {
        &[$(Domain {
            id: $id,
            callee: Estimator($class),
            param: $param,
            position: None,
            accepts: $accepts,
            exception: "InvalidParameterError",
        },)+]
    };
}

/// Estimator parameters, checked when the estimator is fitted (`InvalidParameterError`, a
/// `ValueError`, since scikit-learn 1.2; a `ValueError` or `KeyError` before).
const ESTIMATOR_DOMAINS: &[Domain] = estimator_domains! {
    "sklearn.LogisticRegression.solver": "LogisticRegression"."solver" in OneOf(&["newton-cg", "newton-cholesky", "lbfgs", "liblinear", "sag", "saga"]);
    "sklearn.LogisticRegression.penalty": "LogisticRegression"."penalty" in OneOf(&["l1", "l2", "elasticnet", "none"]);
    "sklearn.SVC.kernel": "SVC"."kernel" in OneOf(SVM_KERNELS);
    "sklearn.SVR.kernel": "SVR"."kernel" in OneOf(SVM_KERNELS);
    "sklearn.NuSVC.kernel": "NuSVC"."kernel" in OneOf(SVM_KERNELS);
    "sklearn.NuSVR.kernel": "NuSVR"."kernel" in OneOf(SVM_KERNELS);
    "sklearn.DecisionTreeClassifier.criterion": "DecisionTreeClassifier"."criterion" in OneOf(CLASSIFIER_CRITERIA);
    "sklearn.RandomForestClassifier.criterion": "RandomForestClassifier"."criterion" in OneOf(CLASSIFIER_CRITERIA);
    "sklearn.ExtraTreesClassifier.criterion": "ExtraTreesClassifier"."criterion" in OneOf(CLASSIFIER_CRITERIA);
    "sklearn.DecisionTreeRegressor.criterion": "DecisionTreeRegressor"."criterion" in OneOf(REGRESSOR_CRITERIA);
    "sklearn.RandomForestRegressor.criterion": "RandomForestRegressor"."criterion" in OneOf(REGRESSOR_CRITERIA);
    "sklearn.ExtraTreesRegressor.criterion": "ExtraTreesRegressor"."criterion" in OneOf(REGRESSOR_CRITERIA);
    "sklearn.RandomForestClassifier.n_estimators": "RandomForestClassifier"."n_estimators" in IntAtLeast(1);
    "sklearn.RandomForestRegressor.n_estimators": "RandomForestRegressor"."n_estimators" in IntAtLeast(1);
    "sklearn.ExtraTreesClassifier.n_estimators": "ExtraTreesClassifier"."n_estimators" in IntAtLeast(1);
    "sklearn.ExtraTreesRegressor.n_estimators": "ExtraTreesRegressor"."n_estimators" in IntAtLeast(1);
    "sklearn.GradientBoostingClassifier.n_estimators": "GradientBoostingClassifier"."n_estimators" in IntAtLeast(1);
    "sklearn.GradientBoostingRegressor.n_estimators": "GradientBoostingRegressor"."n_estimators" in IntAtLeast(1);
    "sklearn.KNeighborsClassifier.weights": "KNeighborsClassifier"."weights" in OneOf(NEIGHBOR_WEIGHTS);
    "sklearn.KNeighborsRegressor.weights": "KNeighborsRegressor"."weights" in OneOf(NEIGHBOR_WEIGHTS);
    "sklearn.KNeighborsClassifier.algorithm": "KNeighborsClassifier"."algorithm" in OneOf(NEIGHBOR_ALGORITHMS);
    "sklearn.KNeighborsRegressor.algorithm": "KNeighborsRegressor"."algorithm" in OneOf(NEIGHBOR_ALGORITHMS);
    "sklearn.KMeans.algorithm": "KMeans"."algorithm" in OneOf(&["lloyd", "elkan", "auto", "full"]);
    "sklearn.KMeans.init": "KMeans"."init" in OneOf(&["k-means++", "random"]);
    "sklearn.PCA.svd_solver": "PCA"."svd_solver" in OneOf(&["auto", "full", "arpack", "randomized", "covariance_eigh"]);
};

const SPLIT_DOMAINS: &[Domain] = &[
    Domain {
        id: "sklearn.train_test_split.test_size",
        callee: Function("sklearn", "train_test_split"),
        param: "test_size",
        position: None,
        accepts: FloatInOpenUnit,
        exception: "InvalidParameterError",
    },
    Domain {
        id: "sklearn.train_test_split.train_size",
        callee: Function("sklearn", "train_test_split"),
        param: "train_size",
        position: None,
        accepts: FloatInOpenUnit,
        exception: "InvalidParameterError",
    },
];

pub(crate) const DOMAINS: &[&[Domain]] = &[ESTIMATOR_DOMAINS, SPLIT_DOMAINS];

/// Estimators documented to accept NaN in X in every version in use (scikit-learn's scalers,
/// imputers and histogram boosting; LightGBM, XGBoost, CatBoost): a claim that one rejects NaN
/// is refuted.
pub(crate) const ACCEPTS_NAN: &[&str] = &[
    "StandardScaler",
    "MinMaxScaler",
    "RobustScaler",
    "MaxAbsScaler",
    "QuantileTransformer",
    "PowerTransformer",
    "SimpleImputer",
    "IterativeImputer",
    "KNNImputer",
    "HistGradientBoostingClassifier",
    "HistGradientBoostingRegressor",
    "LGBMClassifier",
    "LGBMRegressor",
    "XGBClassifier",
    "XGBRegressor",
    "CatBoostClassifier",
    "CatBoostRegressor",
];
