//! Context settings as score orders them: `po`, then token budgets by size, then other names.
//!
//! Both the tables (`report`) and the judge's rows (`judge`) sort by it, so it lives apart
//! from either.

use std::cmp::Ordering;

/// The order of settings: `po`, then budgets by size (`4k` < `8k` < `128k`), then the rest
/// by name.
pub fn setting_order(a: &str, b: &str) -> Ordering {
    fn key(s: &str) -> (u8, u64, &str) {
        if s.eq_ignore_ascii_case("po") {
            return (0, 0, s);
        }
        let lower = s.trim();
        let (num, mult) = match lower.strip_suffix(['k', 'K']) {
            Some(n) => (n, 1000),
            None => (lower, 1),
        };
        match num.parse::<u64>() {
            Ok(n) => (1, n * mult, s),
            Err(_) => (2, 0, s),
        }
    }
    key(a).cmp(&key(b))
}

/// Whether a setting is a context budget (not PO, not an unknown name).
pub(crate) fn is_budget(s: &str) -> bool {
    !s.eq_ignore_ascii_case("po") && s.trim_end_matches(['k', 'K']).parse::<u64>().is_ok()
}
