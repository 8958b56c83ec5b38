//! matplotlib and seaborn: option arguments of plotting functions (matplotlib 3.x, seaborn
//! 0.11 to 0.13).

use super::Accepts::{IntAtLeast, OneOf, Registered};
use super::Callee::Function;
use super::{Dimensions, Domain, Rank};

pub(crate) const DOMAINS: &[Domain] = &[
    Domain {
        id: "seaborn.catplot.kind",
        callee: Function("seaborn", "catplot"),
        param: "kind",
        position: None,
        accepts: OneOf(&[
            "strip", "swarm", "box", "boxen", "violin", "bar", "count", "point",
        ]),
        exception: "ValueError",
    },
    Domain {
        id: "seaborn.relplot.kind",
        callee: Function("seaborn", "relplot"),
        param: "kind",
        position: None,
        accepts: OneOf(&["scatter", "line"]),
        exception: "ValueError",
    },
    Domain {
        id: "seaborn.displot.kind",
        callee: Function("seaborn", "displot"),
        param: "kind",
        position: None,
        accepts: OneOf(&["hist", "kde", "ecdf"]),
        exception: "ValueError",
    },
    Domain {
        id: "seaborn.jointplot.kind",
        callee: Function("seaborn", "jointplot"),
        param: "kind",
        position: None,
        accepts: OneOf(&["scatter", "hist", "hex", "kde", "reg", "resid"]),
        exception: "ValueError",
    },
    Domain {
        id: "matplotlib.pyplot.subplots.nrows",
        callee: Function("matplotlib", "subplots"),
        param: "nrows",
        position: Some(0),
        accepts: IntAtLeast(1),
        exception: "ValueError",
    },
    Domain {
        id: "matplotlib.pyplot.subplots.ncols",
        callee: Function("matplotlib", "subplots"),
        param: "ncols",
        position: Some(1),
        accepts: IntAtLeast(1),
        exception: "ValueError",
    },
    Domain {
        id: "matplotlib.pyplot.xscale.value",
        callee: Function("matplotlib", "xscale"),
        param: "value",
        position: Some(0),
        accepts: Registered("matplotlib.scale"),
        exception: "ValueError",
    },
    Domain {
        id: "matplotlib.pyplot.yscale.value",
        callee: Function("matplotlib", "yscale"),
        param: "value",
        position: Some(0),
        accepts: Registered("matplotlib.scale"),
        exception: "ValueError",
    },
    Domain {
        id: "matplotlib.pyplot.hist.histtype",
        callee: Function("matplotlib", "hist"),
        param: "histtype",
        position: None,
        accepts: OneOf(&["bar", "barstacked", "step", "stepfilled"]),
        exception: "ValueError",
    },
];

/// `imshow` draws a 2-D array (values) or a 3-D one (RGB or RGBA pixels).
pub(crate) const DIMENSIONS: &[Dimensions] = &[Dimensions {
    id: "matplotlib.pyplot.imshow",
    callee: Function("matplotlib", "imshow"),
    param: "X",
    position: Some(0),
    rank: Rank::OneOf(&[2, 3]),
    square: false,
    exception: "TypeError",
}];
