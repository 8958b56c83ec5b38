//! Good cells crane once held as proven crashes, and the close crashes it must still prove
//! (`tests/good_cells/`): each runs in CPython for its truth, with crane's probe collecting the
//! facts, so a hold on a cell that runs fine fails the test. The fixture format is
//! `kernel_fixtures`'.

mod kernel_fixtures;

#[test]
fn good_cells_are_not_held_and_their_crashing_neighbours_are() {
    let fixtures = kernel_fixtures::fixtures("good_cells");
    let truths = kernel_fixtures::truths(&fixtures, "sklearn,statsmodels.api");
    let problems = kernel_fixtures::problems(&fixtures, &truths);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
