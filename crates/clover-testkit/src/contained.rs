//! A throwaway repository for hostile runs, and the two checks that a run was contained: no
//! process of its host uid is left, and the repository is byte for byte as it was. The
//! sandbox's own containment tests and the runners' forgery tests share them.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// A small repository (a nested package, a text file, a symlink) and its tree's hash when made.
#[derive(Debug)]
pub struct Case {
    pub repo: tempfile::TempDir,
    hash: u64,
}

impl Case {
    /// A fresh repository with `pkg/mod.py`, `file.txt` and `link.py -> pkg/mod.py`.
    pub fn new() -> Case {
        Case::with_files(&[])
    }

    /// The same repository with `files` (path from the repository, text) besides.
    pub fn with_files(files: &[(&str, &str)]) -> Case {
        let repo = make_repo();
        for (path, text) in files {
            let path = repo.path().join(path);
            std::fs::create_dir_all(path.parent().expect("a folder")).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let hash = tree_hash(repo.path());
        Case { repo, hash }
    }

    /// Asserts that no process of the run (mapped to `host_uid`) is left and that the
    /// repository did not change.
    pub fn assert_contained(&self, host_uid: u32) {
        let left = processes_of(host_uid);
        assert!(
            left.is_empty(),
            "processes of the run left behind: {left:?}"
        );
        self.assert_unchanged();
    }

    /// Asserts that the repository is as it was made.
    pub fn assert_unchanged(&self) {
        assert_eq!(
            tree_hash(self.repo.path()),
            self.hash,
            "the repository changed"
        );
    }
}

impl Default for Case {
    fn default() -> Self {
        Case::new()
    }
}

fn make_repo() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("sbx-repo-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(dir.path().join("pkg")).unwrap();
    std::fs::write(dir.path().join("pkg/mod.py"), "X = 1\n").unwrap();
    std::fs::write(dir.path().join("file.txt"), "original\n").unwrap();
    std::os::unix::fs::symlink("pkg/mod.py", dir.path().join("link.py")).unwrap();
    dir
}

/// A hash of every path, mode, symlink target and file content under `root`.
pub fn tree_hash(root: &Path) -> u64 {
    fn walk(p: &Path, rel: &Path, h: &mut DefaultHasher) {
        let md = std::fs::symlink_metadata(p).unwrap();
        rel.hash(h);
        md.permissions().mode().hash(h);
        if md.file_type().is_symlink() {
            std::fs::read_link(p).unwrap().hash(h);
        } else if md.is_dir() {
            let mut names: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            names.sort();
            for n in names {
                walk(&p.join(&n), &rel.join(&n), h);
            }
        } else {
            std::fs::read(p).unwrap().hash(h);
        }
    }
    let mut h = DefaultHasher::new();
    walk(root, Path::new(""), &mut h);
    h.finish()
}

/// Processes on the host running as `uid`.
pub fn processes_of(uid: u32) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(status) = std::fs::read_to_string(e.path().join("status")) {
            let uid_line = status.lines().find(|l| l.starts_with("Uid:"));
            if uid_line.is_some_and(|l| l.split_whitespace().nth(1) == Some(&uid.to_string())) {
                found.push(name);
            }
        }
    }
    found
}
