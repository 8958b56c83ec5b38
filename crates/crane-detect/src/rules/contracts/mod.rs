//! What the libraries promise, as data: one table per library of what a call requires and what
//! it guarantees. The tables are Rust constants rather than a data file: the compiler checks each
//! row's shape, they cost nothing to load, and a row names its fixture by its `id`, which the
//! contract fixtures (`crates/crane-detect/tests/contracts/`) run against the real library.
//!
//! Every row states the library's documented behaviour in every version in use: an accepted set
//! is the union over versions, so a value outside it fails in all of them. Adding a contract is
//! adding a row and its fixtures; the models (`crate::rules::models`) read the tables.

pub(crate) mod keras;
pub(crate) mod numpy;
pub(crate) mod pandas;
pub(crate) mod plots;
pub(crate) mod sklearn;
pub(crate) mod statsmodels;
pub(crate) mod torch;

/// What a contract is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Callee {
    /// A function, by library and name (`("pandas", "merge")`): any module path of the library
    /// that ends in that name (`pandas.merge`, `pandas.core.reshape.merge.merge`).
    Function(&'static str, &'static str),
    /// A method of a pandas DataFrame or Series.
    FrameMethod(&'static str),
    /// A parameter of a scikit-learn estimator class, validated when it is fitted.
    Estimator(&'static str),
}

/// The values an argument accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Accepts {
    /// A string among these (case-sensitive), or any value that is not a string constant.
    OneOf(&'static [&'static str]),
    /// As `OneOf`, compared after lower-casing (statsmodels' `autolag`).
    OneOfIgnoringCase(&'static [&'static str]),
    /// An integer constant at least this (other types are not judged).
    IntAtLeast(i64),
    /// A number constant within `[low, high]`.
    NumberWithin(f64, f64),
    /// A float constant strictly between 0 and 1 (integers are not judged).
    FloatInOpenUnit,
    /// A list or tuple with at least one item.
    NonEmpty,
    /// A string the kernel's registry of this name holds (`RuntimeInfo::registries`): code
    /// may register more, so without the live registry nothing is judged.
    Registered(&'static str),
}

/// An argument's domain: a constant outside it makes the call raise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Domain {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    pub callee: Callee,
    pub param: &'static str,
    /// Where the argument sits when passed by position (after `self` for methods).
    pub position: Option<usize>,
    pub accepts: Accepts,
    /// The exception raised, as the latest version in use names it.
    pub exception: &'static str,
}

impl Accepts {
    /// Whether a constant argument is outside the domain (`None`: not judged).
    pub(crate) fn rejects(&self, constant: &crane_analysis::Constant) -> Option<bool> {
        use crane_analysis::Constant;
        match (self, constant) {
            (Accepts::OneOf(options), Constant::Str(text)) => {
                Some(!options.contains(&text.as_str()))
            }
            (Accepts::OneOfIgnoringCase(options), Constant::Str(text)) => {
                Some(!options.contains(&text.to_lowercase().as_str()))
            }
            (Accepts::IntAtLeast(low), Constant::Int(value)) => Some(value < low),
            (Accepts::NumberWithin(low, high), Constant::Int(value)) => {
                Some((*value as f64) < *low || (*value as f64) > *high)
            }
            (Accepts::NumberWithin(low, high), Constant::Float(value)) => {
                Some(value.is_nan() || value < low || value > high)
            }
            (Accepts::FloatInOpenUnit, Constant::Float(value)) => {
                Some(!(*value > 0.0 && *value < 1.0))
            }
            (Accepts::NonEmpty, Constant::List(items) | Constant::Tuple(items)) => {
                Some(items.is_empty())
            }
            _ => None,
        }
    }

    /// The accepted values, for a diagnosis.
    pub(crate) fn describe(&self) -> String {
        match self {
            Accepts::OneOf(options) | Accepts::OneOfIgnoringCase(options) => {
                let quoted: Vec<String> = options.iter().map(|o| format!("'{o}'")).collect();
                format!("one of {}", quoted.join(", "))
            }
            Accepts::IntAtLeast(low) => format!("an integer >= {low}"),
            Accepts::NumberWithin(low, high) => format!("a number in [{low}, {high}]"),
            Accepts::FloatInOpenUnit => "a float in (0, 1)".to_owned(),
            Accepts::NonEmpty => "a non-empty list".to_owned(),
            Accepts::Registered(registry) => format!("a name registered in `{registry}`"),
        }
    }
}

/// A size of an argument, as a shape relation reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Size {
    /// `len()` of a sequence or the first dimension of an array.
    Length,
    /// The columns of an array: its second dimension, or 1 for a 1-D array (not judged for a
    /// structured array or one of unknown dtype).
    ArrayWidth,
    /// The length of the axis pandas builds from an `index`/`columns` argument
    /// (`ensure_index`): the items of a list, tuple, range, Index or 1-D array of labels, or the
    /// common length of the lists and arrays in a list (the levels of a MultiIndex).
    AxisLabels,
}

/// Two arguments whose sizes must agree when both are given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SizesAgree {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    pub callee: Callee,
    /// Parameter name, position, and the size read of it.
    pub first: (&'static str, Option<usize>, Size),
    pub second: (&'static str, Option<usize>, Size),
    pub exception: &'static str,
}

/// The numbers of dimensions an array argument may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rank {
    AtLeast(usize),
    OneOf(&'static [usize]),
}

/// An array argument's dimensionality: a known shape outside it makes the call raise.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dimensions {
    /// Stable id, the key of the row's fixtures.
    pub id: &'static str,
    pub callee: Callee,
    pub param: &'static str,
    pub position: Option<usize>,
    pub rank: Rank,
    /// The last two dimensions must be equal (a stack of square matrices).
    pub square: bool,
    pub exception: &'static str,
}

/// Every dimensionality contract of every library.
pub(crate) fn dimensions() -> impl Iterator<Item = &'static Dimensions> {
    numpy::DIMENSIONS.iter().chain(plots::DIMENSIONS)
}

/// Every size relation of every library.
pub(crate) fn size_relations() -> impl Iterator<Item = &'static SizesAgree> {
    pandas::SIZES.iter()
}

/// Every argument domain of every library.
pub(crate) fn domains() -> impl Iterator<Item = &'static Domain> {
    [
        pandas::DOMAINS,
        numpy::DOMAINS,
        plots::DOMAINS,
        statsmodels::DOMAINS,
    ]
    .into_iter()
    .chain(sklearn::DOMAINS.iter().copied())
    .flatten()
}
