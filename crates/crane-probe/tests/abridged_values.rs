//! Crashes about values after an abridged run, in a real ipykernel with real torch and
//! scikit-learn: a model trained fewer steps keeps its structure but not its weights, so an
//! assertion or a check on what it computes is never certain, while a crash about structure
//! on the same model still is.

mod common;

use common::{abridged_raised, abridged_run, run_cell, start_kernel};

#[tokio::test]
async fn a_check_on_what_a_model_trained_fewer_steps_computes_is_uncertain() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nimport torch\nfrom sklearn.linear_model import SGDClassifier\n\
         torch.manual_seed(0)\nX = torch.randn(400, 5)\ny = (X[:, 0] + X[:, 1] > 0).float()\n\
         model = torch.nn.Linear(5, 1)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.5)\n\
         loss_fn = torch.nn.BCEWithLogitsLoss()\nwith torch.no_grad():\n    model.weight.zero_()\n    model.bias.fill_(-3.0)",
    )
    .await;
    // Runs cleanly for real: 80 epochs reach well over 90% accuracy. After 2 epochs the model
    // still predicts one class, and the assertion fails in the abridged run only.
    let torch_cell = "for epoch in range(80):\n    time.sleep(0.04)\n    optimizer.zero_grad()\n    \
                      loss = loss_fn(model(X).squeeze(1), y)\n    loss.backward()\n    optimizer.step()\n\
                      with torch.no_grad():\n    accuracy = ((model(X).squeeze(1) > 0).float() == y).float().mean().item()\n\
                      assert accuracy > 0.9, accuracy\n";
    let report = abridged_run(&mut session, torch_cell).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("AssertionError", Some(9)));
    // What it reads was computed from the model the loop trained.
    assert_eq!(depends_on, ["accuracy"]);
    // For real it passes (the model is trained anew for the later checks).
    run_cell(&mut session, torch_cell).await;

    // The same model given a test set of the wrong width fails for real too: structure.
    let structure = torch_cell.replace(
        "assert accuracy > 0.9, accuracy\n",
        "    wide = model(torch.randn(10, 6))\n",
    );
    let report = abridged_run(&mut session, &structure).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(9)));
    assert!(depends_on.is_empty(), "{depends_on:?}");

    // scikit-learn's incremental fits: the same. The samples an SGD classifier has seen
    // count every call; a check of the user's on them fails in the abridged run only.
    run_cell(
        &mut session,
        "Xn, yn = X.numpy(), y.numpy().astype(int)\nclf = SGDClassifier(random_state=0)",
    )
    .await;
    let partial = "for chunk in range(60):\n    time.sleep(0.04)\n    clf.partial_fit(Xn, yn, classes=[0, 1])\n\
                   if clf.t_ < 60 * len(Xn):\n    raise RuntimeError(f'only {clf.t_} samples seen')\n";
    let report = abridged_run(&mut session, partial).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("RuntimeError", Some(5)));
    // The raise reads `clf`; the test that lets it run reads `Xn` too, which `partial_fit` was
    // given and so may have changed.
    assert_eq!(depends_on, ["Xn", "clf"]);
    run_cell(&mut session, partial).await;
    session.close().await.expect("shutdown");
}
