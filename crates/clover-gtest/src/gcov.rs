//! gcov's own text output (`gcov --stdout`, one run per object), read into covered and
//! executable lines the way gcovr 5 reads the same text for its Cobertura report — without
//! starting Python and gcovr for every candidate (a third of a fast candidate's time).
//!
//! gcovr's rules, kept here one for one: a line marked `-` is no code; `#####` and `=====`
//! are zero; `N` and `N*` count N. A zero line, or a `-` line, whose text is only a comment,
//! `{`, `}` or `else` is "noncode", which hides it even where another instantiation counted
//! it; a `-` line with code is ignored. Lines are summed over instantiations and sections
//! of one object's output, and across objects a line is noncode only where every object that
//! lists it says so. A file is listed by every section that names it, even with no lines.
//!
//! What this reader does not do as gcovr does it says so (`Err`), and the caller runs gcovr:
//! exclusion markers (`GCOVR_EXCL_LINE`, `LCOV_EXCL_START`, ...) in a measured file, a line
//! of a kind it does not know.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use clover_protocol::LineRanges;

use clover_report::FileLines;

#[derive(Debug, Clone, Copy, Default)]
struct Line {
    count: u64,
    noncode: bool,
}

type Lines = BTreeMap<u32, Line>;

/// The lines of every repository file in the concatenated outputs of gcov runs, one run
/// per object (`outputs`), as gcovr would report them.
pub(crate) fn read_gcov(outputs: &[&str], repo: &Path) -> Result<Vec<FileLines>, String> {
    let mut files: BTreeMap<String, Lines> = BTreeMap::new();
    for text in outputs {
        // One object's sections, merged among themselves first.
        let mut object: BTreeMap<String, Lines> = BTreeMap::new();
        let mut current: Option<&mut Lines> = None;
        let mut skipping = false;
        for raw in text.lines() {
            if raw.is_empty() {
                continue;
            }
            if let Some((count, lineno, code)) = source_line(raw) {
                if count == "-" && lineno == 0 {
                    if let Some(name) = code.strip_prefix("Source:") {
                        match repo_relative(name, repo) {
                            Some(rel) => {
                                current = Some(object.entry(rel).or_default());
                                skipping = false;
                            }
                            None => {
                                current = None;
                                skipping = true;
                            }
                        }
                    }
                    continue;
                }
                if skipping {
                    continue;
                }
                let Some(lines) = current.as_deref_mut() else {
                    return Err(format!("gcov printed a line before any source: {raw:?}"));
                };
                if code.contains("_EXCL_") {
                    return Err(format!("an exclusion marker: {}", code.trim()));
                }
                let zero = count.len() >= 5 && (all(count, '#') || all(count, '='));
                let (noncode, n) = if count == "-" {
                    if !is_non_code(code) {
                        continue;
                    }
                    (true, None)
                } else if zero {
                    match is_non_code(code) {
                        true => (true, None),
                        false => (false, Some(0)),
                    }
                } else {
                    let digits = count.strip_suffix('*').unwrap_or(count);
                    let n: u64 = digits
                        .parse()
                        .map_err(|_| format!("a count gcov wrote that is not a number: {raw:?}"))?;
                    match n == 0 && is_non_code(code) {
                        true => (true, None),
                        false => (false, Some(n)),
                    }
                };
                let l = lines.entry(lineno).or_default();
                l.noncode |= noncode;
                l.count += n.unwrap_or(0);
                continue;
            }
            let specialization = !raw.starts_with(char::is_whitespace) && raw.ends_with(':');
            let known = [
                "------------------",
                "function ",
                "call ",
                "branch ",
                "unconditional ",
            ];
            if specialization || known.iter().any(|k| raw.starts_with(k)) {
                continue;
            }
            return Err(format!(
                "gcov printed a line this reader does not know: {raw:?}"
            ));
        }
        for (path, lines) in object {
            let into = files.entry(path).or_default();
            for (n, l) in lines {
                match into.get_mut(&n) {
                    Some(have) => {
                        have.count += l.count;
                        have.noncode &= l.noncode;
                    }
                    None => {
                        into.insert(n, l);
                    }
                }
            }
        }
    }
    Ok(files
        .into_iter()
        .map(|(path, lines)| {
            let listed = lines.iter().filter(|(_, l)| !l.noncode);
            FileLines {
                path,
                covered: LineRanges::from_lines(
                    listed.clone().filter(|(_, l)| l.count > 0).map(|(n, _)| *n),
                ),
                executable: LineRanges::from_lines(listed.map(|(n, _)| *n)),
            }
        })
        .collect())
}

fn all(s: &str, c: char) -> bool {
    s.chars().all(|x| x == c)
}

/// `COUNT:LINENO:TEXT` with the first two fields padded: count, line number, text.
fn source_line(raw: &str) -> Option<(&str, u32, &str)> {
    let (count, rest) = raw.split_once(':')?;
    let (lineno, code) = rest.split_once(':')?;
    let lineno = lineno.trim().parse().ok()?;
    let count = count.trim();
    (!count.is_empty() && !count.contains(char::is_whitespace)).then_some((count, lineno, code))
}

/// gcovr's test for a line without useful code: nothing but comments, `{`, `}` or `else`.
fn is_non_code(code: &str) -> bool {
    let mut s = code.to_string();
    // `//` to the end of the line, then `/* ... */` (gcovr's two patterns, in its order).
    if let Some(i) = s.find("//") {
        s.truncate(i);
    }
    while let Some(a) = s.find("/*") {
        let Some(b) = s[a + 2..].find("*/") else {
            break;
        };
        s.replace_range(a..a + 2 + b + 2, "");
    }
    let t = s.trim();
    t.is_empty() || t == "{" || t == "}" || t == "else"
}

/// The repository-relative path of a source name as the compiler recorded it (relative to
/// the repository root, where every compile runs, or absolute); `None` outside it. Lexical,
/// as gcovr's `normpath`.
pub(crate) fn repo_relative(name: &str, repo: &Path) -> Option<String> {
    if name.starts_with('<') {
        return None;
    }
    let mut out = PathBuf::new();
    for c in repo.join(name).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    let rel = out.strip_prefix(repo).ok()?;
    (!rel.as_os_str().is_empty()).then(|| rel.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECT: &str = "        -:    0:Source:src/a.h\n        -:    0:Graph:x.gcno\n\
        -:    1:// a comment\n        -:    2:int declared;\n        3:    3:int f() {\n\
        3*:    4:  return g();\n    #####:    5:}\n    =====:    6:  throw 1;\n\
------------------\n_Z1fv:\n        2:    3:int f() {\n    #####:    5:}\n------------------\n\
        -:    0:Source:/usr/include/c++/12/vector\n        5:    1:x\n\
        -:    0:Source:src/empty.cc\n";

    #[test]
    fn lines_read_as_gcovr_reads_them() {
        let repo = Path::new("/r");
        let got = read_gcov(&[OBJECT], repo).unwrap();
        let paths: Vec<&str> = got.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            ["src/a.h", "src/empty.cc"],
            "system headers are not the repo's"
        );
        let a = &got[0];
        // `}` with no count is noncode (not executable); `throw` only on an exceptional
        // path is executable and not covered; `int declared;` marked `-` is ignored.
        assert_eq!(a.executable, LineRanges::from_lines([3, 4, 6]));
        assert_eq!(a.covered, LineRanges::from_lines([3, 4]));
        assert!(got[1].executable.is_empty());
        // Across objects a line is noncode only where every object says so.
        let other = "        -:    0:Source:./src/a.h\n        1:    5:}\n";
        let merged = read_gcov(&[OBJECT, other], repo).unwrap();
        assert_eq!(merged[0].executable, LineRanges::from_lines([3, 4, 5, 6]));
        assert_eq!(merged[0].covered, LineRanges::from_lines([3, 4, 5]));
    }

    #[test]
    fn what_gcovr_would_read_otherwise_is_refused() {
        let marked = "        -:    0:Source:src/a.cc\n        1:    2:f(); // GCOVR_EXCL_LINE\n";
        assert!(read_gcov(&[marked], Path::new("/r"))
            .unwrap_err()
            .starts_with("an exclusion marker"));
        let odd = "        -:    0:Source:src/a.cc\nsomething else\n";
        assert!(read_gcov(&[odd], Path::new("/r")).is_err());
        assert!(is_non_code("  } // done") && is_non_code("/* x */ {") && !is_non_code("} else {"));
    }
}
