//! The expression an abridged run's exception came out of, in a real ipykernel with real NumPy:
//! a crash in a statement that also reads an accumulated value, where the part that raised
//! read none of it, is certain; where that part reads the accumulated value, it is not.

mod common;

use common::{abridged_raised, abridged_run, run_cell, start_kernel};

#[tokio::test]
async fn only_what_the_raising_expression_read_decides() {
    let mut session = start_kernel().await;
    run_cell(
        &mut session,
        "import time\nimport numpy as np\nW = np.zeros((3, 2))",
    )
    .await;
    // The last epoch's score is a product of the wrong shapes, whatever the loop accumulated:
    // the receiver `scores` (grown every epoch) feeds nothing into it.
    let cell = "scores = []\nfor epoch in range(60):\n    time.sleep(0.05)\n    scores.append(epoch * 0.5)\n    \
                if epoch == 59:\n        scores.append(float((np.ones((4, 2)) @ W).sum()))\n";
    let report = abridged_run(&mut session, cell).await;
    assert_eq!(abridged_raised(&report), ("ValueError", Some(6), &[][..]));
    // The same statement where the raising part reads the accumulated list is not certain.
    let reads = cell.replace("np.ones((4, 2))", "np.array(scores).reshape(-1, 2)");
    let report = abridged_run(&mut session, &reads).await;
    let (exception, line, depends_on) = abridged_raised(&report);
    assert_eq!((exception, line), ("ValueError", Some(6)));
    assert_eq!(depends_on, ["scores"]);
    session.close().await.expect("shutdown");
}
