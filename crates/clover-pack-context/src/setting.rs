//! Context settings: problem-only (`po`) or a context length in tokens (`4k` = 4096).

use std::fmt;
use std::str::FromStr;

/// One context setting an instance is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Setting {
    /// Problem only: the instruction and the in-file code, no source files.
    ProblemOnly,
    /// A model context length in tokens; the prompt plus the output reserve fit in it.
    Length(u32),
}

impl Setting {
    /// The context length, `None` for problem-only.
    pub fn length(self) -> Option<u32> {
        match self {
            Setting::ProblemOnly => None,
            Setting::Length(n) => Some(n),
        }
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Setting::ProblemOnly => f.write_str("po"),
            Setting::Length(n) if n % 1024 == 0 => write!(f, "{}k", n / 1024),
            Setting::Length(n) => write!(f, "{n}"),
        }
    }
}

impl FromStr for Setting {
    type Err = String;

    /// `po`, `8k` (8 × 1024 tokens, as model context lengths are counted) or a plain number.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("po") {
            return Ok(Setting::ProblemOnly);
        }
        let bad = || format!("invalid setting `{s}`: use `po`, a length like `8k`, or a number");
        let n = match s.strip_suffix(['k', 'K']) {
            Some(k) => k.parse::<u32>().map_err(|_| bad())?.checked_mul(1024),
            None => s.parse::<u32>().ok(),
        }
        .ok_or_else(bad)?;
        if n == 0 {
            return Err(bad());
        }
        Ok(Setting::Length(n))
    }
}

/// Parses a comma-separated list of settings, sorted and without repeats.
pub fn parse_settings(s: &str) -> Result<Vec<Setting>, String> {
    let mut v = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(Setting::from_str)
        .collect::<Result<Vec<_>, _>>()?;
    v.sort();
    v.dedup();
    if v.is_empty() {
        return Err("no settings given".into());
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!("po".parse::<Setting>().unwrap(), Setting::ProblemOnly);
        assert_eq!("8k".parse::<Setting>().unwrap(), Setting::Length(8192));
        assert_eq!("5000".parse::<Setting>().unwrap(), Setting::Length(5000));
        assert_eq!(Setting::Length(131072).to_string(), "128k");
        assert_eq!(Setting::Length(5000).to_string(), "5000");
        assert!("0".parse::<Setting>().is_err());
        assert!("eightk".parse::<Setting>().is_err());
        assert_eq!(
            parse_settings("16k,po,4k,4k").unwrap(),
            vec![
                Setting::ProblemOnly,
                Setting::Length(4096),
                Setting::Length(16384)
            ]
        );
    }
}
