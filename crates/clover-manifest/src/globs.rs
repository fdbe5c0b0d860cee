//! The one meaning of a manifest's globs (`excludes`, `test_globs`) in every stage.
//!
//! A glob holding a `/` matches the path from the repository root (`tests/slow/**`, where `*`
//! stops at `/`); a glob without one matches a file or folder name at any depth
//! (`*_test.cc`, `db_bench.cc`, `benchmarks`). An exclude that matches a folder leaves out
//! everything below it. Extract and the C++ library build both ask here, so a tool with its
//! own `main()` excluded by name is neither paired nor linked.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

/// A glob that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid glob `{glob}`: {message}")]
pub struct GlobError {
    pub glob: String,
    pub message: String,
}

/// A compiled set of manifest globs.
#[derive(Debug, Clone)]
pub struct PathGlobs {
    names: GlobSet,
    paths: GlobSet,
}

impl PathGlobs {
    pub fn new(globs: &[String]) -> Result<Self, GlobError> {
        let mut names = GlobSetBuilder::new();
        let mut paths = GlobSetBuilder::new();
        for g in globs {
            let err = |e: globset::Error| GlobError {
                glob: g.clone(),
                message: e.kind().to_string(),
            };
            if g.contains('/') {
                let g = g.trim_start_matches("./");
                paths.add(
                    GlobBuilder::new(g)
                        .literal_separator(true)
                        .build()
                        .map_err(err)?,
                );
            } else {
                names.add(Glob::new(g).map_err(err)?);
            }
        }
        let build = |b: GlobSetBuilder| {
            b.build().map_err(|e| GlobError {
                glob: globs.join(", "),
                message: e.to_string(),
            })
        };
        Ok(PathGlobs {
            names: build(names)?,
            paths: build(paths)?,
        })
    }

    /// Whether the file or folder at `rel` (`/`-separated, relative to the root) matches by
    /// its own name or path.
    pub fn is_match(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        self.names.is_match(name) || self.paths.is_match(rel)
    }

    /// Whether `rel` or a folder above it matches: what an exclude leaves out.
    pub fn covers(&self, rel: &str) -> bool {
        rel.match_indices('/')
            .map(|(i, _)| &rel[..i])
            .chain(std::iter::once(rel))
            .any(|prefix| self.is_match(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn globs(g: &[&str]) -> PathGlobs {
        PathGlobs::new(&g.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn names_match_at_any_depth_and_paths_from_the_root() {
        let g = globs(&["db_bench.cc", "*_fuzzer.cc", "tests/slow/**", "benchmarks"]);
        for yes in [
            "db_bench.cc",
            "tools/db_bench.cc",
            "a/b/snappy_fuzzer.cc",
            "tests/slow/test_x.py",
        ] {
            assert!(g.is_match(yes) && g.covers(yes), "{yes}");
        }
        assert!(g.covers("benchmarks/bench_x.py") && !g.is_match("benchmarks/bench_x.py"));
        for no in ["db.cc", "src/tests/slow/test_x.py", "tools/db_bench.h"] {
            assert!(!g.covers(no), "{no}");
        }
        let err = PathGlobs::new(&["a/[b".to_string()]).unwrap_err();
        assert_eq!(err.glob, "a/[b");
    }
}
