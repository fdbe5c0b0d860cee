//! Text that comes out the same in every run: calibrate's output must be byte-identical when
//! the repository and the problems are, but the messages of a failing test carry what one
//! process happened to see — an object's address (`<Foo object at 0x7f03b74d26e0>`), a
//! temporary folder (`/tmp/pytest-of-root/pytest-3/test_x0`), a duration (`in 0.12s`), the
//! clock's date and time in a log line (`[2026-12-03 07:33:15,588] ERROR`).

/// `text` with memory addresses, temporary paths, dates with times and durations replaced by
/// `…` forms: `0x…`, `/tmp/…`, `…`, `…s`.
pub fn steady_text(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Whether the byte before `at` may start a token (not inside a word or number).
    let boundary = |at: usize| at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
    while i < b.len() {
        if boundary(i) {
            if let Some(end) = address(b, i) {
                out.push_str("0x…");
                i = end;
                continue;
            }
            if let Some(end) = temp_path(b, i) {
                out.push_str("/tmp/…");
                i = end;
                continue;
            }
            if let Some(end) = date_time(b, i) {
                out.push('…');
                i = end;
                continue;
            }
            if let Some(end) = duration(b, i) {
                out.push_str("…s");
                i = end;
                continue;
            }
        }
        let c = text[i..].chars().next().expect("i is on a char boundary");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The end of `0x` and at least six hex digits at `i` (shorter ones are constants, not
/// addresses).
fn address(b: &[u8], i: usize) -> Option<usize> {
    if !b[i..].starts_with(b"0x") {
        return None;
    }
    let digits = b[i + 2..]
        .iter()
        .take_while(|c| c.is_ascii_hexdigit())
        .count();
    let end = i + 2 + digits;
    let ends_word = b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric());
    (digits >= 6 && ends_word).then_some(end)
}

/// The end of a path under `/tmp/` at `i`: up to a space, a quote or a closing bracket.
fn temp_path(b: &[u8], i: usize) -> Option<usize> {
    if !b[i..].starts_with(b"/tmp/") {
        return None;
    }
    let len = b[i..]
        .iter()
        .take_while(|c| !c.is_ascii_whitespace() && !b"'\"`)]>,".contains(c))
        .count();
    Some(i + len)
}

/// The end of a date and time at `i`, as logging and `datetime` print the clock's
/// (`2026-12-03 07:33:15,588`, `2026-12-03T07:33:15.588123`): a date alone stays.
fn date_time(b: &[u8], i: usize) -> Option<usize> {
    let shape = b"dddd-dd-dd dd:dd:dd";
    let text = b.get(i..i + shape.len())?;
    let fits = shape.iter().zip(text).all(|(s, c)| match s {
        b'd' => c.is_ascii_digit(),
        b' ' => *c == b' ' || *c == b'T',
        _ => c == s,
    });
    if !fits {
        return None;
    }
    let mut end = i + shape.len();
    if matches!(b.get(end), Some(b'.' | b',')) {
        let frac = b[end + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if frac > 0 {
            end += 1 + frac;
        }
    }
    b.get(end)
        .is_none_or(|c| !c.is_ascii_alphanumeric())
        .then_some(end)
}

/// The end of a duration at `i`: a decimal number and a unit of time (`0.12s`, `1.5 ms`,
/// `3 seconds`); a whole number with a bare `s` is left alone (`3s` is as often a name).
fn duration(b: &[u8], i: usize) -> Option<usize> {
    let int = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    if int == 0 {
        return None;
    }
    let mut end = i + int;
    let mut decimal = false;
    if b.get(end) == Some(&b'.') {
        let frac = b[end + 1..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if frac > 0 {
            decimal = true;
            end += 1 + frac;
        }
    }
    let unit_at = if b.get(end) == Some(&b' ') {
        end + 1
    } else {
        end
    };
    let units: [(&[u8], bool); 6] = [
        (b"seconds", true),
        (b"second", true),
        (b"secs", true),
        (b"ms", true),
        ("µs".as_bytes(), true),
        (b"s", false),
    ];
    for (unit, whole_ok) in units {
        if b[unit_at..].starts_with(unit) && (decimal || whole_ok) {
            let after = unit_at + unit.len();
            if b.get(after).is_none_or(|c| !c.is_ascii_alphanumeric()) {
                return Some(after);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_temp_paths_and_durations_are_steadied() {
        assert_eq!(
            steady_text("AssertionError: <ledger.Account object at 0x7f03b74d26e0> != None"),
            "AssertionError: <ledger.Account object at 0x…> != None"
        );
        assert_eq!(
            steady_text("FileNotFoundError: '/tmp/pytest-of-root/pytest-3/test_x0/a.csv'"),
            "FileNotFoundError: '/tmp/…'"
        );
        assert_eq!(
            steady_text("Timeout (>5.0s) after 1.25 seconds, 300 ms"),
            "Timeout (>…s) after …s, …s"
        );
        // Constants, names and plain numbers stay.
        let kept = "assert 0xff == 255 and x3s == 3s and h264 and 2 items, tmp/x, a0x123456";
        assert_eq!(steady_text(kept), kept);
        // Two runs of one failure differ only in what is steadied.
        assert_eq!(
            steady_text("<F at 0x7f0000000001> in 0.01s"),
            steady_text("<F at 0x7faaaaaaaaa2> in 0.35s")
        );
        assert_eq!(steady_text("é 0x1234567 ü"), "é 0x… ü");
        // The clock's date and time, as logging prints it; a date alone stays.
        assert_eq!(
            steady_text("'[2026-12-03 07:33:15,588] ERROR in app: x' at 2026-12-03T07:33:15.5 UTC"),
            "'[…] ERROR in app: x' at … UTC"
        );
        let dates = "released 2026-12-03, 2026-12-03 07:33 and 12026-12-03 07:33:15";
        assert_eq!(steady_text(dates), dates);
    }
}
