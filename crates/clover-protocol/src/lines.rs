//! Sets of line numbers stored as sorted, merged, inclusive ranges.

use serde::{Deserialize, Serialize};

/// A set of 1-based line numbers as sorted, disjoint, non-adjacent inclusive `[start, end]`
/// ranges. Serialized as `[[1,4],[9,9]]`: compact for coverage of whole functions.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(try_from = "Vec<[u32; 2]>", into = "Vec<[u32; 2]>")]
pub struct LineRanges(Vec<[u32; 2]>);

impl LineRanges {
    /// The empty set.
    pub fn new() -> Self {
        LineRanges(Vec::new())
    }

    /// The set of the given lines, in any order, with repeats.
    pub fn from_lines(lines: impl IntoIterator<Item = u32>) -> Self {
        let mut v: Vec<u32> = lines.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        let mut ranges: Vec<[u32; 2]> = Vec::new();
        for line in v {
            match ranges.last_mut() {
                Some(last) if last[1] + 1 == line => last[1] = line,
                _ => ranges.push([line, line]),
            }
        }
        LineRanges(ranges)
    }

    /// The ranges, sorted.
    pub fn ranges(&self) -> &[[u32; 2]] {
        &self.0
    }

    /// Every line, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().flat_map(|r| r[0]..=r[1])
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|r| (r[1] - r[0] + 1) as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn contains(&self, line: u32) -> bool {
        self.0
            .binary_search_by(|r| {
                if r[1] < line {
                    std::cmp::Ordering::Less
                } else if r[0] > line {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
    }

    /// The lines in `self` or `other`.
    pub fn union(&self, other: &LineRanges) -> LineRanges {
        LineRanges::from_lines(self.iter().chain(other.iter()))
    }

    /// The lines in `self` and not in `other`.
    pub fn difference(&self, other: &LineRanges) -> LineRanges {
        LineRanges::from_lines(self.iter().filter(|l| !other.contains(*l)))
    }
}

impl FromIterator<u32> for LineRanges {
    fn from_iter<T: IntoIterator<Item = u32>>(iter: T) -> Self {
        LineRanges::from_lines(iter)
    }
}

impl TryFrom<Vec<[u32; 2]>> for LineRanges {
    type Error = String;

    fn try_from(v: Vec<[u32; 2]>) -> Result<Self, String> {
        for (i, r) in v.iter().enumerate() {
            if r[0] == 0 || r[0] > r[1] {
                return Err(format!(
                    "line range {i} is [{}, {}]: want 1 <= start <= end",
                    r[0], r[1]
                ));
            }
            if i > 0 && v[i - 1][1] + 1 >= r[0] {
                return Err(format!(
                    "line ranges {} and {i} overlap, touch or are out of order",
                    i - 1
                ));
            }
        }
        Ok(LineRanges(v))
    }
}

impl From<LineRanges> for Vec<[u32; 2]> {
    fn from(r: LineRanges) -> Self {
        r.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_runs_and_round_trips() {
        let r = LineRanges::from_lines([9, 1, 2, 3, 3, 4, 7]);
        assert_eq!(r.ranges(), &[[1, 4], [7, 7], [9, 9]]);
        assert_eq!(r.len(), 6);
        assert!(r.contains(3) && r.contains(9) && !r.contains(8) && !r.contains(0));
        let json = serde_json::to_string(&r).unwrap();
        assert_eq!(json, "[[1,4],[7,7],[9,9]]");
        assert_eq!(serde_json::from_str::<LineRanges>(&json).unwrap(), r);
    }

    #[test]
    fn rejects_unsorted_or_touching_ranges() {
        assert!(serde_json::from_str::<LineRanges>("[[3,4],[1,2]]").is_err());
        assert!(serde_json::from_str::<LineRanges>("[[1,2],[3,4]]").is_err());
        assert!(serde_json::from_str::<LineRanges>("[[0,2]]").is_err());
        assert!(serde_json::from_str::<LineRanges>("[[5,2]]").is_err());
    }

    #[test]
    fn set_operations() {
        let a = LineRanges::from_lines(1..=10);
        let b = LineRanges::from_lines([3, 4, 12]);
        assert_eq!(a.difference(&b).ranges(), &[[1, 2], [5, 10]]);
        assert_eq!(a.union(&b).ranges(), &[[1, 10], [12, 12]]);
    }
}
