//! numpy: argument domains of array functions (numpy 1.16 to 2.x).

use super::Accepts::{IntAtLeast, NonEmpty, NumberWithin, OneOf};
use super::Callee::Function;
use super::Domain;

pub(crate) const DOMAINS: &[Domain] = &[
    Domain {
        id: "numpy.concatenate.arrays",
        callee: Function("numpy", "concatenate"),
        param: "arrays",
        position: Some(0),
        accepts: NonEmpty,
        exception: "ValueError",
    },
    Domain {
        id: "numpy.stack.arrays",
        callee: Function("numpy", "stack"),
        param: "arrays",
        position: Some(0),
        accepts: NonEmpty,
        exception: "ValueError",
    },
    Domain {
        id: "numpy.vstack.tup",
        callee: Function("numpy", "vstack"),
        param: "tup",
        position: Some(0),
        accepts: NonEmpty,
        exception: "ValueError",
    },
    Domain {
        id: "numpy.linspace.num",
        callee: Function("numpy", "linspace"),
        param: "num",
        position: Some(2),
        accepts: IntAtLeast(0),
        exception: "ValueError",
    },
    Domain {
        id: "numpy.percentile.q",
        callee: Function("numpy", "percentile"),
        param: "q",
        position: Some(1),
        accepts: NumberWithin(0.0, 100.0),
        exception: "ValueError",
    },
    Domain {
        id: "numpy.quantile.q",
        callee: Function("numpy", "quantile"),
        param: "q",
        position: Some(1),
        accepts: NumberWithin(0.0, 1.0),
        exception: "ValueError",
    },
    Domain {
        id: "numpy.pad.mode",
        callee: Function("numpy", "pad"),
        param: "mode",
        position: Some(2),
        accepts: OneOf(&[
            "constant",
            "edge",
            "linear_ramp",
            "maximum",
            "mean",
            "median",
            "minimum",
            "reflect",
            "symmetric",
            "wrap",
            "empty",
        ]),
        exception: "ValueError",
    },
];
