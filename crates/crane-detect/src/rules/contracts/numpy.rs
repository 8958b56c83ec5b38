//! numpy: argument domains of array functions, and which functions and methods take an
//! `axis` that must be one of the array's dimensions (numpy 1.16 to 2.x).

use super::Accepts::{IntAtLeast, NonEmpty, NumberWithin, OneOf};
use super::Callee::Function;
use super::{Dimensions, Domain, Rank};

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

/// A function or method whose `axis` must name a dimension of its array (`AxisError`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axis {
    pub name: &'static str,
    /// Where `axis` sits when passed by position: for the function `np.name(a, ...)`, and for
    /// the method `a.name(...)` (`None`: the method does not exist or takes no axis there).
    pub function_position: usize,
    pub method_position: Option<usize>,
    /// The axis names a place in the result, which has one more dimension (`expand_dims`).
    pub inserts: bool,
}

const fn axis(
    name: &'static str,
    function_position: usize,
    method_position: Option<usize>,
) -> Axis {
    Axis {
        name,
        function_position,
        method_position,
        inserts: false,
    }
}

pub(crate) const AXES: &[Axis] = &[
    axis("argmax", 1, Some(0)),
    axis("argmin", 1, Some(0)),
    axis("sum", 1, Some(0)),
    axis("mean", 1, Some(0)),
    axis("max", 1, Some(0)),
    axis("min", 1, Some(0)),
    axis("amax", 1, None),
    axis("amin", 1, None),
    axis("std", 1, Some(0)),
    axis("var", 1, Some(0)),
    axis("median", 1, None),
    axis("prod", 1, Some(0)),
    axis("cumsum", 1, Some(0)),
    axis("any", 1, Some(0)),
    axis("all", 1, Some(0)),
    axis("sort", 1, Some(0)),
    axis("argsort", 1, Some(0)),
    axis("flip", 1, None),
    axis("squeeze", 1, Some(0)),
    axis("ptp", 1, Some(0)),
    Axis {
        name: "expand_dims",
        function_position: 1,
        method_position: None,
        inserts: true,
    },
    axis("take", 2, None),
    axis("delete", 2, None),
    axis("unique", usize::MAX, None),
    axis("nanmean", 1, None),
    axis("nansum", 1, None),
    axis("nanmax", 1, None),
    axis("nanmin", 1, None),
    axis("average", 1, None),
    axis("percentile", 2, None),
    axis("quantile", 2, None),
];

/// The axis contract of a function or method named so.
pub(crate) fn axis_of(name: &str) -> Option<&'static Axis> {
    AXES.iter().find(|row| row.name == name)
}

const fn linear_algebra(id: &'static str, name: &'static str) -> Dimensions {
    Dimensions {
        id,
        callee: Function("numpy", name),
        param: "a",
        position: Some(0),
        rank: Rank::AtLeast(2),
        square: true,
        exception: "LinAlgError",
    }
}

/// Functions of a matrix, or of a vector or matrix.
pub(crate) const DIMENSIONS: &[Dimensions] = &[
    linear_algebra("numpy.linalg.inv", "inv"),
    linear_algebra("numpy.linalg.det", "det"),
    linear_algebra("numpy.linalg.eig", "eig"),
    linear_algebra("numpy.linalg.eigvals", "eigvals"),
    linear_algebra("numpy.linalg.cholesky", "cholesky"),
    Dimensions {
        id: "numpy.trace",
        callee: Function("numpy", "trace"),
        param: "a",
        position: Some(0),
        rank: Rank::AtLeast(2),
        square: false,
        exception: "ValueError",
    },
    Dimensions {
        id: "numpy.diag",
        callee: Function("numpy", "diag"),
        param: "v",
        position: Some(0),
        rank: Rank::OneOf(&[1, 2]),
        square: false,
        exception: "ValueError",
    },
];
