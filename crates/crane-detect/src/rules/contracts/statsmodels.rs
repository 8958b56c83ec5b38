//! statsmodels: argument domains of time-series functions (statsmodels 0.10 to 0.15).

use super::Accepts::{OneOf, OneOfIgnoringCase};
use super::Callee::Function;
use super::Domain;

pub(crate) const DOMAINS: &[Domain] = &[
    Domain {
        id: "statsmodels.seasonal_decompose.model",
        callee: Function("statsmodels", "seasonal_decompose"),
        param: "model",
        position: Some(1),
        accepts: OneOf(&["additive", "multiplicative", "add", "mul"]),
        exception: "ValueError",
    },
    Domain {
        id: "statsmodels.adfuller.regression",
        callee: Function("statsmodels", "adfuller"),
        param: "regression",
        position: Some(2),
        accepts: OneOf(&["c", "ct", "ctt", "n", "nc"]),
        exception: "ValueError",
    },
    Domain {
        id: "statsmodels.adfuller.autolag",
        callee: Function("statsmodels", "adfuller"),
        param: "autolag",
        position: Some(3),
        accepts: OneOfIgnoringCase(&["aic", "bic", "t-stat"]),
        exception: "ValueError",
    },
];
