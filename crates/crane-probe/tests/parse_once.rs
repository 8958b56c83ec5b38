//! A cell is parsed once on its way through the checking kernel: its analysis, its imports for
//! the replica, whether it looks long, its training time, whether it can change the kernel's
//! state, and the dry run's reading of it (the names to resolve, its side effects) all take the
//! one bounded parse. Alone in its test binary: the parser counter is the process's.

use std::collections::BTreeSet;

use crane_analysis::bounds::parser_calls;
use crane_analysis::effects::{names_to_resolve, side_effects};
use crane_analysis::{analyze_parsed, ParsedCell};
use crane_probe::abridge::{looks_long, looks_long_parsed, looping_functions_parsed};
use crane_probe::replica::{imported_modules, imported_modules_parsed};
use crane_probe::snapshot::{cannot_change_state, cannot_change_state_parsed};
use crane_probe::training_time::training_time_bound;

const CELL: &str = "import pandas as pd\nfrom sklearn.linear_model import LogisticRegression\n\
                    df = pd.read_csv('train.csv')\nfor column in df.columns:\n    print(column)\n\
                    model = LogisticRegression().fit(df[['a']], df['y'])\ndf.to_csv('out.csv')\n";

#[test]
fn every_reading_of_a_cell_takes_its_one_parse() {
    let before = parser_calls();
    let cell = ParsedCell::parse(CELL);
    let analysis = analyze_parsed(&cell);
    let imports = imported_modules_parsed(&cell);
    let looping = BTreeSet::new();
    let long = looks_long_parsed(&cell, &looping);
    let bound = training_time_bound(&cell, &looping, &Default::default());
    let unchanged = cannot_change_state_parsed(&cell);
    let defined = looping_functions_parsed(&cell);
    let analysis = analysis.expect("the cell is analysed");
    let names = names_to_resolve(&analysis);
    let effects = side_effects(&analysis, &Default::default());
    assert_eq!(parser_calls() - before, 1);

    assert_eq!(imports, ["pandas", "sklearn.linear_model"]);
    assert!(long && bound.is_none() && !unchanged && defined.is_empty());
    assert!(names.contains(&"pd".to_owned()), "{names:?}");
    assert_eq!(effects.len(), 1, "{effects:?}");

    // The readings of a cell given as text parse it each.
    let before = parser_calls();
    assert_eq!(imported_modules(CELL), imports);
    assert!(looks_long(CELL, &looping));
    assert!(!cannot_change_state(CELL));
    assert_eq!(parser_calls() - before, 3);
}
