//! What extraction needs to know about a repository, independent of how it was configured.

use std::path::{Path, PathBuf};

use clover_protocol::Language;

use crate::error::ExtractError;

/// Files larger than this are reported and skipped unless the caller says otherwise.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 2 << 20;
/// CPP-UT-Bench's chunk limit: sources longer than this many lines are cut into chunks.
pub const DEFAULT_CHUNK_LINES: u32 = 200;

/// Everything [`crate::extract`] needs about one repository.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractOptions {
    /// The repository's root folder.
    pub root: PathBuf,
    /// The repository's name: the first part of every problem id.
    pub repo: String,
    pub language: Language,
    /// Folders (relative to `root`) searched for tests; empty means the whole repository.
    pub test_dirs: Vec<PathBuf>,
    /// The repository's own code (relative to `root`), used to decide which imported names are
    /// the repository's. Empty means "any importable module under the root that is not a test".
    pub source_dirs: Vec<PathBuf>,
    /// Test-file globs, matched against the file name, or against the path relative to the
    /// root when the glob holds a `/` (`clover_manifest::PathGlobs`).
    pub test_globs: Vec<String>,
    /// Globs of files and folders never read, with the same meaning as `test_globs`.
    pub excludes: Vec<String>,
    /// Python tests never made problems: pytest node ids, classes or files
    /// (`clover_manifest::RepoConfig::deselect`).
    pub deselect: Vec<String>,
    /// Files larger than this many bytes are reported and skipped.
    pub max_file_bytes: u64,
    /// The most lines a C++ chunk may hold.
    pub chunk_lines: u32,
    /// Pair a C++ test no base name pairs through its includes (clover's extension of
    /// CPP-UT-Bench's rule; see [`crate::pair_cpp_files`]).
    pub pair_by_includes: bool,
}

impl ExtractOptions {
    /// Options with the default globs for `language` and the default limits.
    pub fn new(root: impl AsRef<Path>, repo: &str, language: Language) -> Self {
        let globs = match language {
            Language::Python => clover_manifest::DEFAULT_PYTHON_TEST_GLOBS,
            Language::Cpp => clover_manifest::DEFAULT_CPP_TEST_GLOBS,
        };
        ExtractOptions {
            root: root.as_ref().to_path_buf(),
            repo: repo.to_string(),
            language,
            test_dirs: Vec::new(),
            source_dirs: Vec::new(),
            test_globs: globs.iter().map(|g| g.to_string()).collect(),
            excludes: Vec::new(),
            deselect: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            chunk_lines: DEFAULT_CHUNK_LINES,
            pair_by_includes: true,
        }
    }

    /// Options for a repository of a manifest (or detected): its root, name, language,
    /// folders, test globs and excludes, with the default limits.
    pub fn from_repo(repo: &clover_manifest::RepoConfig) -> Self {
        let mut opts = ExtractOptions::new(&repo.root, &repo.name, repo.language);
        opts.test_dirs = repo.test_dirs.clone();
        opts.source_dirs = repo.source_dirs.clone();
        if !repo.test_globs.is_empty() {
            opts.test_globs = repo.test_globs.clone();
        }
        opts.excludes = repo.excludes.clone();
        opts.deselect = repo.deselect.clone();
        opts.pair_by_includes = repo.pair_by_includes;
        opts
    }

    pub(crate) fn validate(&self) -> Result<(), ExtractError> {
        if !self.root.is_dir() {
            return Err(ExtractError::Root {
                path: self.root.clone(),
            });
        }
        if self.repo.is_empty() || self.repo.contains('/') {
            return Err(ExtractError::Options {
                message: format!(
                    "repository name `{}` must be non-empty and hold no '/'",
                    self.repo
                ),
            });
        }
        if self.chunk_lines == 0 {
            return Err(ExtractError::Options {
                message: "the chunk limit must be at least 1 line".into(),
            });
        }
        Ok(())
    }
}
