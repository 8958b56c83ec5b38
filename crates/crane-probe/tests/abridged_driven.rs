//! What a shortened library call drives, in a real ipykernel with real Keras and
//! scikit-learn: a callback or a scorer runs once per round, so after a fit of fewer epochs or a
//! cross-validation of fewer folds its state (and what the notebook's code in it changed) is
//! the shortened call's. A crash reading it is never certain; a crash about the data or the
//! model's structure beside the same call still is.

mod common;

use common::{abridged_raised, abridged_run, run_cell, start_kernel};

#[tokio::test]
async fn what_a_keras_fit_s_callbacks_kept_is_changed() {
    let mut session = start_kernel().await;
    // Keras is imported but no model is built: TensorFlow's runtime has not started, so the
    // kernel can fork; the model is built and trained in the checked cells.
    run_cell(
        &mut session,
        "import os\nos.environ['KERAS_BACKEND'] = 'tensorflow'\nimport time\nimport numpy as np\nimport keras\n\
         rng = np.random.default_rng(0)\nX = rng.normal(size=(4096, 16)).astype('float32')\n\
         y = (X[:, 0] > 0).astype('int32')\nX_test = rng.normal(size=(64, 8)).astype('float32')\n\
         class BestWeights(keras.callbacks.Callback):\n    def __init__(self, warmup, until):\n        super().__init__()\n        \
         self.warmup, self.until, self.best, self.weights = warmup, until, float('inf'), []\n    \
         def on_epoch_end(self, epoch, logs=None):\n        time.sleep(0.05)\n        \
         if self.warmup <= epoch < self.until and logs['loss'] < self.best:\n            \
         self.best, self.weights = logs['loss'], self.model.get_weights()",
    )
    .await;
    let fit = "model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(8, activation='relu'), keras.layers.Dense(1, activation='sigmoid')])\n\
               model.compile(optimizer='adam', loss='binary_crossentropy')\n\
               keeper = BestWeights(warmup=5, until=30)\n\
               history = model.fit(X, y, epochs=40, batch_size=256, verbose=0, callbacks=[keeper])\n";
    // The callback keeps weights from its sixth epoch to its thirtieth: none in the abridged
    // fit (its first epoch and, for its callbacks, its last), so restoring them fails in the
    // abridged run only.
    let restore = format!("{fit}model.set_weights(keeper.weights)\n");
    let report = abridged_run(&mut session, &restore).await;
    assert_eq!(
        abridged_raised(&report),
        ("ValueError", Some(5), &["keeper".to_owned()][..])
    );
    // A list of the notebook's that a Keras callback appends to every tenth epoch, through a
    // function of the notebook's the callback holds: empty after epochs 0 and 39.
    let logged = fit.replace("callbacks=[keeper]", "callbacks=[log, keeper]");
    let appended = format!(
        "marks = []\nlog = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: marks.append(np.ones(2) * epoch) if epoch % 10 == 4 else None)\n\
         {logged}np.stack(marks)\n"
    );
    let report = abridged_run(&mut session, &appended).await;
    assert_eq!(
        abridged_raised(&report),
        ("ValueError", Some(7), &["marks".to_owned()][..])
    );
    // The same fit given a test set of the wrong width fails for real too: certain.
    let report = abridged_run(
        &mut session,
        &format!("{fit}model.predict(X_test, verbose=0)\n"),
    )
    .await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(5), &[][..]));
    // For real, both run to their end.
    run_cell(&mut session, &restore).await;
    run_cell(&mut session, &appended).await;
    session.close().await.expect("shutdown");
}

#[tokio::test]
async fn what_a_cross_validation_s_scorer_appended_is_changed() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nfrom sklearn.linear_model import LogisticRegression\n\
         from sklearn.model_selection import KFold, cross_validate\n\
         rng = np.random.default_rng(0)\nX = rng.normal(size=(300, 4))\ny = (X[:, 0] > 0).astype(int)\n\
         fold_scores = []\ndef recorded(estimator, X_fold, y_fold):\n    time.sleep(0.3)\n    \
         score = estimator.score(X_fold, y_fold)\n    fold_scores.append(score)\n    return score",
    )
    .await;
    // The scorer appends each fold's score: 2 of 10 in the abridged run, 10 for real.
    let cell =
        "results = cross_validate(LogisticRegression(), X, y, cv=KFold(10), scoring=recorded)\n\
                per_fold = np.array(fold_scores).reshape(10, 1)\n";
    let report = abridged_run(&mut session, cell).await;
    assert_eq!(
        abridged_raised(&report),
        ("ValueError", Some(2), &["fold_scores".to_owned()][..])
    );
    // The estimator given is cloned, not driven: a crash on its structure stays certain.
    let model = "model = LogisticRegression()\nresults = cross_validate(model, X, y, cv=KFold(10), scoring=recorded)\n\
                 model.fit(X, y).predict(X[:, :3])\n";
    let report = abridged_run(&mut session, model).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(3), &[][..]));
    run_cell(&mut session, cell).await;
    session.close().await.expect("shutdown");
}
