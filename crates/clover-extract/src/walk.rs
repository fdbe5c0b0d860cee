//! Finding files under a repository root without wandering into foreign code, and reading them
//! with the checks every language shares.

use std::path::{Path, PathBuf};

use clover_manifest::PathGlobs;

use crate::error::{ExtractError, FileIssue, IssueKind};

/// Folder names never descended into: virtual environments, caches, build output. Real
/// checkouts have them, and they are full of other projects' `test_*.py` files.
const PRUNED_DIRS: &[&str] = &[
    "venv",
    "site-packages",
    "dist-packages",
    "node_modules",
    "__pycache__",
    "build",
    "dist",
    "target",
];

/// Test globs and excludes, with the manifest's one meaning (see [`PathGlobs`]).
#[derive(Debug, Clone)]
pub(crate) struct Globs(PathGlobs);

impl Globs {
    pub(crate) fn new(globs: &[String]) -> Result<Self, ExtractError> {
        PathGlobs::new(globs)
            .map(Globs)
            .map_err(|e| ExtractError::Glob {
                glob: e.glob,
                message: e.message,
            })
    }

    /// Whether `rel` (a `/`-separated path relative to the root) matches by its own name or
    /// path; the walk asks for each folder before it descends, so an excluded folder is never
    /// entered.
    pub(crate) fn matches(&self, rel: &str) -> bool {
        self.0.is_match(rel)
    }
}

/// Every file under `root` (or under `dirs`, relative to it, when not empty) whose relative path
/// `keep` accepts, as sorted `/`-separated relative paths. Pruned folders, hidden folders,
/// folders holding a `pyvenv.cfg` and anything `excludes` matches are skipped; symbolic links
/// to folders are not followed, so a link loop cannot trap the walk.
pub(crate) fn find_files(
    root: &Path,
    dirs: &[PathBuf],
    excludes: &Globs,
    keep: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, ExtractError> {
    let mut out = Vec::new();
    let starts: Vec<String> = if dirs.is_empty() {
        vec![String::new()]
    } else {
        dirs.iter()
            .map(|d| to_rel(d))
            .filter(|d| root.join(d).is_dir())
            .collect()
    };
    for start in starts {
        walk(root, &start, excludes, keep, &mut out)?;
    }
    out.sort();
    out.dedup();
    Ok(out)
}

fn to_rel(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let s = s.trim_start_matches("./").trim_end_matches('/');
    if s == "." {
        String::new()
    } else {
        s.to_string()
    }
}

fn walk(
    root: &Path,
    rel: &str,
    excludes: &Globs,
    keep: &dyn Fn(&str) -> bool,
    out: &mut Vec<String>,
) -> Result<(), ExtractError> {
    let dir = if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(rel)
    };
    let entries = std::fs::read_dir(&dir).map_err(|source| ExtractError::Read {
        path: dir.clone(),
        source,
    })?;
    let mut children: Vec<(String, bool)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(ft) = entry.file_type() else { continue };
        children.push((name, ft.is_dir()));
    }
    children.sort();
    for (name, is_dir) in children {
        let child = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if excludes.matches(&child) {
            continue;
        }
        if is_dir {
            if is_pruned(&name) || dir.join(&name).join("pyvenv.cfg").exists() {
                continue;
            }
            // A folder that cannot be listed is skipped: it is not the repository's code.
            let _ = walk(root, &child, excludes, keep, out);
        } else if keep(&child) {
            out.push(child);
        }
    }
    Ok(())
}

fn is_pruned(name: &str) -> bool {
    name.starts_with('.') || name.ends_with(".egg-info") || PRUNED_DIRS.contains(&name)
}

/// Reads a source file, turning the reasons not to use it into a [`FileIssue`].
pub(crate) fn read_source(root: &Path, rel: &str, max_bytes: u64) -> Result<String, FileIssue> {
    let issue = |kind, detail: String| FileIssue {
        path: rel.to_string(),
        kind,
        detail,
    };
    let path = root.join(rel);
    // `metadata` follows links, so a link loop is reported here (ELOOP) rather than read, and
    // a FIFO or device, which would block or never end, is never opened.
    let meta = std::fs::metadata(&path).map_err(|e| issue(IssueKind::Unreadable, e.to_string()))?;
    if !meta.is_file() {
        return Err(issue(
            IssueKind::Unreadable,
            "not a regular file".to_string(),
        ));
    }
    let len = meta.len();
    if len > max_bytes {
        return Err(issue(
            IssueKind::TooLarge,
            format!("{len} bytes, over the limit of {max_bytes}"),
        ));
    }
    let bytes = std::fs::read(&path).map_err(|e| issue(IssueKind::Unreadable, e.to_string()))?;
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(issue(IssueKind::Binary, format!("NUL byte at offset {at}")));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        issue(
            IssueKind::NotUtf8,
            format!("invalid byte at offset {}", e.utf8_error().valid_up_to()),
        )
    })?;
    if text.trim().is_empty() {
        return Err(issue(IssueKind::Empty, String::new()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prunes_venvs_hidden_and_build_folders() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for p in [
            "tests/test_a.py",
            "pkg/tests/test_b.py",
            ".venv/lib/test_x.py",
            "env1/lib/test_y.py",
            "lib/python3.11/site-packages/foo/test_z.py",
            "build/lib/test_c.py",
            ".hidden/test_d.py",
            "pkg.egg-info/test_e.py",
            "tests/helper.py",
            "tests/slow/test_f.py",
        ] {
            let path = root.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x = 1\n").unwrap();
        }
        std::fs::write(root.join("env1/pyvenv.cfg"), "home = /usr\n").unwrap();
        let globs = Globs::new(&["test_*.py".to_string()]).unwrap();
        let excludes = Globs::new(&["tests/slow/**".to_string()]).unwrap();
        let found = find_files(root, &[], &excludes, &|p| globs.matches(p)).unwrap();
        assert_eq!(found, vec!["pkg/tests/test_b.py", "tests/test_a.py"]);
        let only_tests = find_files(root, &[PathBuf::from("tests")], &excludes, &|p| {
            globs.matches(p)
        })
        .unwrap();
        assert_eq!(only_tests, vec!["tests/test_a.py"]);
    }

    #[test]
    fn read_source_reports_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("empty.py"), "  \n").unwrap();
        std::fs::write(dir.path().join("latin1.py"), b"x = '\xe9'\n").unwrap();
        std::fs::write(dir.path().join("big.py"), "x = 1\n".repeat(100)).unwrap();
        let kind = |name: &str, max| read_source(dir.path(), name, max).unwrap_err().kind;
        assert_eq!(kind("empty.py", 1000), IssueKind::Empty);
        assert_eq!(kind("latin1.py", 1000), IssueKind::NotUtf8);
        assert_eq!(kind("big.py", 100), IssueKind::TooLarge);
        assert_eq!(kind("missing.py", 100), IssueKind::Unreadable);
        std::fs::write(dir.path().join("blob.py"), b"\x7fELF\x02\x01\x00\x00").unwrap();
        assert_eq!(kind("blob.py", 1000), IssueKind::Binary);
        std::os::unix::fs::symlink("loop.py", dir.path().join("loop.py")).unwrap();
        assert_eq!(kind("loop.py", 1000), IssueKind::Unreadable);
        let made = std::process::Command::new("mkfifo")
            .arg(dir.path().join("fifo.py"))
            .status()
            .unwrap();
        assert!(made.success());
        let fifo = read_source(dir.path(), "fifo.py", 1000).unwrap_err();
        assert_eq!(
            (fifo.kind, fifo.detail.as_str()),
            (IssueKind::Unreadable, "not a regular file")
        );
    }
}
