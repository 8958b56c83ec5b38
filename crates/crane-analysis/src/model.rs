//! The result types of the analysis. Every type serializes to JSON (it appears in crane's output).

use serde::Serialize;

/// A cell that does not parse. Positions are 1-based; the column counts characters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("syntax error at line {line}, column {column}: {message}")]
pub struct SyntaxError {
    pub message: String,
    pub line: u32,
    pub column: u32,
}

/// Why a cell was not analysed. A syntax error serializes as itself (`line`, `column`,
/// `message`), as it did before cells could be refused for other reasons.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(untagged)]
pub enum AnalysisError {
    /// The cell is not valid Python: running it raises SyntaxError.
    #[error(transparent)]
    Syntax(SyntaxError),
    /// The cell may well be valid Python, but it is larger or nested deeper than crane
    /// analyses (see `crane_analysis::bounds`).
    #[error(transparent)]
    Unanalysable(crate::bounds::Unanalysable),
}

impl AnalysisError {
    /// The syntax error, when the cell does not parse.
    pub fn syntax(&self) -> Option<&SyntaxError> {
        match self {
            AnalysisError::Syntax(error) => Some(error),
            AnalysisError::Unanalysable(_) => None,
        }
    }
}

/// What one cell reads, binds, calls and computes, in the order the cell would run it.
///
/// All lines are 1-based lines of the cell source. Expression strings (`expr`, `callee`,
/// `receiver`) follow the conventions documented in the crate root.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CellAnalysis {
    /// Names the cell reads from the kernel's globals (not bound earlier in the cell), first
    /// use of each (a name read again after the cell deleted it gets a second entry).
    pub reads: Vec<NameRead>,
    /// Names read after the cell itself bound them (not dependencies), first use of each.
    pub local_reads: Vec<LocalRead>,
    /// Every cell-level (re)binding, in execution order.
    pub bindings: Vec<Binding>,
    /// `del name` statements at cell level.
    pub deletions: Vec<NameAt>,
    /// `global name` declarations at cell level.
    pub global_declarations: Vec<NameAt>,
    /// Attribute chains rooted at a global name (`model.fit`, `df.Price`, `df['a'].str.lower`).
    pub attributes: Vec<AttributeRead>,
    /// Constant subscripts rooted at a global name (`df['price']`, `x[:, 0]`, `df.loc[:, 'a']`).
    pub subscripts: Vec<SubscriptRead>,
    /// Calls, in execution order.
    pub calls: Vec<Call>,
    /// Binary operations (`a @ b`, `x + 1`, `x += 1`), in execution order.
    pub binary_operations: Vec<BinaryOperation>,
    /// `from module import *` (and `%run`): after one, unknown names may be bound.
    pub star_imports: Vec<StarImport>,
    /// IPython escape commands (`%magic`, `!shell`, `?help`, `%%cell_magic`).
    pub magics: Vec<Magic>,
}

/// A global name read by the cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NameRead {
    pub name: String,
    pub line: u32,
    pub column: u32,
    /// Set when the read happens inside a function or class defined in the cell, and counts
    /// because the cell calls it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_from: Option<CalledFrom>,
    /// Line of a `del name` earlier in the cell: the read happens after the cell deleted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_on_line: Option<u32>,
    /// A star import earlier in the cell may have bound this name.
    pub after_star_import: bool,
    /// A Python builtin (or a name IPython provides, like `display`): defined unless the kernel
    /// shadows it.
    pub builtin: bool,
}

/// The call of a cell-defined function or class that makes a read in its body count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CalledFrom {
    /// The cell-defined function or class whose body holds the read.
    pub function: String,
    /// Line of the call in the cell.
    pub line: u32,
}

/// A name read after the cell bound it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LocalRead {
    pub name: String,
    pub line: u32,
    pub bound_on_line: u32,
}

/// A name with the line where something happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NameAt {
    pub name: String,
    pub line: u32,
}

/// A cell-level (re)binding of a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Binding {
    pub name: String,
    pub line: u32,
    pub kind: BindingKind,
}

/// The statement that bound a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BindingKind {
    Assignment,
    AugmentedAssignment,
    AnnotatedAssignment,
    For,
    With,
    Import,
    FunctionDef,
    ClassDef,
    Walrus,
    ExceptHandler,
    MatchPattern,
    TypeAlias,
    /// A cell-defined function declared the name `global` and assigned it; the cell calls it.
    GlobalInFunction,
    /// A magic that stores a result (`%%capture out`).
    Magic,
}

/// An attribute chain rooted at a global name, e.g. `model.fit` or `df['a'].str.lower`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AttributeRead {
    /// The full chain as an expression string.
    pub expr: String,
    /// The global name the chain starts from.
    pub root: String,
    /// The last attribute of the chain.
    pub attribute: String,
    /// Expression string of the object the attribute is looked up on.
    pub owner: String,
    /// The chain is called right away (`model.fit(...)`).
    pub called: bool,
    pub line: u32,
    pub column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_from: Option<CalledFrom>,
}

/// A subscript with a constant key, rooted at a global name, e.g. `df['price']`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubscriptRead {
    /// The whole subscript as an expression string.
    pub expr: String,
    /// The global name the expression starts from.
    pub root: String,
    /// Expression string of the subscripted object (`df`, `df.loc`, `d['k']`).
    pub value: String,
    /// The key as written inside the brackets, canonical (`'price'`, `['a', 'b']`, `:, 0`).
    pub key: String,
    /// The key as a constant, when it is one (slices and `...` have no constant form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key_constant: Option<Constant>,
    /// `.loc` / `.iloc` / `.at` / `.iat` when the subscripted object is that indexer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub indexer: Option<Indexer>,
    pub line: u32,
    pub column: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_from: Option<CalledFrom>,
}

/// A pandas indexer a subscript goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Indexer {
    Loc,
    Iloc,
    At,
    Iat,
}

/// A call in the cell.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Call {
    /// Expression string of what is called: `pd.read_csv`, `model.fit`,
    /// `df.groupby('a').mean`, `print`.
    pub callee: String,
    /// For a method call, expression string of the object the method is looked up on
    /// (`model`, `df['a'].str`, `df.groupby('a')`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// For a method call, the method name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    pub args: Vec<Operand>,
    pub keywords: Vec<KeywordArgument>,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_from: Option<CalledFrom>,
}

/// A keyword argument; `name` is `None` for `**kwargs`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeywordArgument {
    pub name: Option<String>,
    pub value: Operand,
}

/// A binary operation `left operator right`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BinaryOperation {
    /// The operator as Python spells it: `+`, `-`, `*`, `@`, `/`, `//`, `%`, `**`, `<<`, `>>`,
    /// `|`, `^`, `&`.
    pub operator: String,
    pub left: Operand,
    pub right: Operand,
    pub line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub called_from: Option<CalledFrom>,
}

/// An expression used as an argument or operand, in source and structured form.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Operand {
    /// The source text as written.
    pub text: String,
    /// What sort of expression it is.
    pub kind: ExprKind,
    /// Canonical expression string when the operand is a name, an attribute chain or a constant
    /// subscript (a key of the runtime facts when `local` is false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expr: Option<String>,
    /// The value, when the operand is a constant literal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constant: Option<Constant>,
    /// The operand is a reference whose root name is bound by the cell (or is a parameter or
    /// local of the function it appears in), so runtime facts about `expr` do not describe it.
    /// Always false when `expr` is `None`.
    pub local: bool,
}

/// The syntactic kind of an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExprKind {
    Name,
    Attribute,
    Subscript,
    Call,
    Constant,
    List,
    Tuple,
    Set,
    Dict,
    Comprehension,
    Lambda,
    BinaryOperation,
    UnaryOperation,
    BooleanOperation,
    Comparison,
    Conditional,
    FString,
    Starred,
    Slice,
    Walrus,
    Await,
    Yield,
    IpyEscape,
}

/// A constant literal value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum Constant {
    None,
    Bool(bool),
    Int(i64),
    /// An integer that does not fit in 64 bits, in decimal.
    BigInt(String),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Constant>),
    Tuple(Vec<Constant>),
}

/// `from module import *` (or `%run script`, whose names are unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StarImport {
    pub module: String,
    pub line: u32,
}

/// An IPython escape command in the cell.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Magic {
    pub kind: MagicKind,
    /// The magic's name (`time`, `matplotlib`), or the shell command's program (`pip`), or the
    /// object asked about (`df`).
    pub name: String,
    /// The rest of the line after the name.
    pub args: String,
    pub line: u32,
    /// The Python code the magic runs (`%time x = f(y)`, `%%time` body) was analyzed as part
    /// of the cell.
    pub body_analyzed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MagicKind {
    /// `%name`
    LineMagic,
    /// `%%name` on the first line of the cell.
    CellMagic,
    /// `!cmd` or `!!cmd`
    Shell,
    /// `?obj`, `obj?`, `??obj`
    Help,
    /// `/f a`, `,f a`, `;f a`
    AutoCall,
}

/// Where names were last bound across the executed cells.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Bindings {
    /// For each name ever bound or deleted, its last state.
    pub names: std::collections::BTreeMap<String, NameState>,
    /// Star imports in the executed cells: any unknown name may come from them.
    pub star_imports: Vec<CellStarImport>,
    /// Executed cells that do not parse, skipped.
    pub unparsed_cells: Vec<UnparsedCell>,
}

/// A place in the executed cells: 0-based cell index and 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Location {
    pub cell: usize,
    pub line: u32,
}

/// The last thing the executed cells did to a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum NameState {
    Bound {
        at: Location,
        kind: BindingKind,
    },
    Deleted {
        at: Location,
        #[serde(skip_serializing_if = "Option::is_none")]
        previously_bound: Option<Location>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CellStarImport {
    pub cell: usize,
    pub module: String,
    pub line: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnparsedCell {
    pub cell: usize,
    pub error: AnalysisError,
}
