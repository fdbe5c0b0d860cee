//! The mutation operators, named as mutmut, cosmic-ray and Mull name their families.

use std::fmt;

/// A family of mutations. The order is the order in which [`crate::mutants`] draws from the
/// families, so it is part of what a seed means (a test pins a sample, and fails when it moves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `+` ↔ `-`, `*` ↔ `/`, `//` and `%` → `/`, `**` → `*`, the same for augmented
    /// assignments (`+=` → `-=`), and C++ `++` ↔ `--`.
    Arithmetic,
    /// A comparison replaced by its negation: `==` ↔ `!=`, `<` → `>=`, `is` ↔ `is not`,
    /// `in` ↔ `not in`.
    Comparison,
    /// An off-by-one boundary: `<` ↔ `<=`, `>` ↔ `>=`.
    Boundary,
    /// `and` ↔ `or`, `&&` ↔ `||`, and a `not` / `!` dropped.
    Boolean,
    /// A literal replaced: integers by 0, 1 and ±1, `True` ↔ `False`, a string by the empty
    /// string (an empty one by `"XX"`).
    Constant,
    /// The condition of an `if`, `elif`, `while`, `do` or `for` negated.
    NegateCondition,
    /// A statement run for its effect (a call, an augmented assignment, a store into an
    /// attribute or subscript; in C++ also a plain assignment and `++`) replaced by `pass`
    /// in Python and by `;` in C++, so lines and blocks keep their shape.
    DeleteStatement,
    /// A returned value replaced: by `None` in Python; in C++ by what the declared return type
    /// allows (`nullptr` for a pointer, `true`/`false` for `bool`, `0` for a number, `""` for
    /// `std::string`); other return types give no mutant.
    ReturnValue,
}

impl Operator {
    /// Every operator, in visiting order.
    pub const ALL: [Operator; 8] = [
        Operator::Arithmetic,
        Operator::Comparison,
        Operator::Boundary,
        Operator::Boolean,
        Operator::Constant,
        Operator::NegateCondition,
        Operator::DeleteStatement,
        Operator::ReturnValue,
    ];

    /// The name written in mutant ids and records.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Arithmetic => "arithmetic",
            Operator::Comparison => "comparison",
            Operator::Boundary => "boundary",
            Operator::Boolean => "boolean",
            Operator::Constant => "constant",
            Operator::NegateCondition => "negate_condition",
            Operator::DeleteStatement => "delete_statement",
            Operator::ReturnValue => "return_value",
        }
    }

    /// The operator written `name`, as [`Operator::as_str`] writes it.
    pub fn from_name(name: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|op| op.as_str() == name)
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The arithmetic replacement of a binary or augmented operator (mutmut's single choice per
/// operator, so a site gives one mutant, not cosmic-ray's one per other operator).
pub(crate) fn arithmetic(op: &str) -> Option<&'static str> {
    Some(match op {
        "+" => "-",
        "-" => "+",
        "*" => "/",
        "/" => "*",
        "//" => "/",
        "%" => "/",
        "**" => "*",
        "+=" => "-=",
        "-=" => "+=",
        "*=" => "/=",
        "/=" => "*=",
        "//=" => "/=",
        "%=" => "/=",
        "**=" => "*=",
        "++" => "--",
        "--" => "++",
        _ => return None,
    })
}

/// The negation of a comparison.
pub(crate) fn negated_comparison(op: &str) -> Option<&'static str> {
    Some(match op {
        "==" => "!=",
        "!=" => "==",
        "<" => ">=",
        "<=" => ">",
        ">" => "<=",
        ">=" => "<",
        "is" => "is not",
        "is not" => "is",
        "in" => "not in",
        "not in" => "in",
        _ => return None,
    })
}

/// The boundary shift of an ordering comparison.
pub(crate) fn boundary(op: &str) -> Option<&'static str> {
    Some(match op {
        "<" => "<=",
        "<=" => "<",
        ">" => ">=",
        ">=" => ">",
        _ => return None,
    })
}

/// The other boolean connective.
pub(crate) fn boolean(op: &str) -> Option<&'static str> {
    Some(match op {
        "and" => "or",
        "or" => "and",
        "&&" => "||",
        "||" => "&&",
        _ => return None,
    })
}

/// Replacements of a decimal integer literal's digits (`_` separators allowed): 0 → 1,
/// 1 → 0 and 2, n → 0, n + 1 and n − 1. Another base, or a value too large, gives none.
pub(crate) fn integer(digits: &str) -> Vec<String> {
    let plain: String = digits.chars().filter(|&c| c != '_').collect();
    if plain.is_empty() || !plain.bytes().all(|b| b.is_ascii_digit()) {
        return Vec::new();
    }
    // A leading zero is an octal literal in C++ (and an error in Python 3, except 0 itself).
    if plain.len() > 1 && plain.starts_with('0') {
        return Vec::new();
    }
    let Ok(n) = plain.parse::<u64>() else {
        return Vec::new();
    };
    match n {
        0 => vec!["1".to_string()],
        1 => vec!["0".to_string(), "2".to_string()],
        u64::MAX => vec!["0".to_string(), (n - 1).to_string()],
        _ => vec!["0".to_string(), (n + 1).to_string(), (n - 1).to_string()],
    }
}
