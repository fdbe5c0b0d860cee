//! Precompiled headers for candidate builds: the headers a candidate includes first
//! (GoogleTest's, GMock's, the repository's own) parsed once per repository, compiler, flags
//! and include list, instead of once per candidate. A mutated library source's leading
//! includes ([`leading_includes`]) are precompiled the same way, so that each of its mutants
//! parses only its own code (`mutant.rs`).
//!
//! A candidate's *include prefix* is the run of `#include` lines at the top of its file
//! (blank and comment lines between them allowed), when it names GoogleTest or GMock. The
//! precompiled header is a file holding exactly those lines, compiled with `-x c++-header`
//! in the sandbox. The candidate is then compiled with those lines blanked (line numbers
//! stay) and `-include <header>`: GCC reads the `.gch` beside it. Its translation unit is
//! the same token stream as before — the same headers in the same order, the same macros —
//! which is why this is exact where a fixed `-include gtest/gtest.h` would not be (a header
//! before GoogleTest's, or a macro defined before it, would then see or change different
//! code). The candidate's own folder is passed as `-iquote`, so a `"..."` include of the
//! header is looked up where it was before (the file's own folder, then `-I`).
//!
//! GCC checks a `.gch` against the compiler and flags and ignores it when they differ
//! (`-Winvalid-pch` says so); the header beside it is then read as text, with the same
//! result, only slower. A header that does not build (a candidate including a file that is
//! not there) costs nothing: the candidate is compiled as it is, and fails there as before.
//!
//! A prefix is precompiled the second time it is seen (by this process, or once found on
//! disk): a prefix seen once costs what it did before, not a header build on top of it.
//! Precompiled headers are kept in the library cache's folder (`pch/<key>/`), keyed like the
//! library: the recipe (repository, compiler, environment, the command line, the prefix)
//! and the contents of every file the compiler read for it, system headers included (GCC
//! does not check that a header changed since its `.gch` was made).

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clover_sandbox::{Collected, Limits, OnceMap, RunSpec, Sandbox, SandboxError, WriteFile};

use crate::compile::{build_key, depfile_inputs, first_errors, sh_quote, sh_words, KeyHasher};

/// The name of the prefix header, in the build view and in the cache.
const HEADER: &str = "clover-pch.h";
pub(crate) const BUILD_DIR: &str = ".clover-build/pch";
/// A `.gch` of GoogleTest and GMock is about 100 MB.
const MAX_PCH_BYTES: u64 = 1 << 30;

/// A candidate's leading `#include` lines, as a header of their own, and the candidate with
/// those lines blanked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IncludePrefix {
    /// The `#include` lines, one per line, in order.
    pub header: String,
    /// The candidate with those lines emptied (each keeps its line break).
    pub blanked: Vec<u8>,
}

/// The include prefix of a candidate's text, when it has one that names GoogleTest or GMock.
/// The prefix ends at the first line that is not blank, a comment or a plain `#include`
/// (a macro, a conditional, code); a block comment is skipped whole.
pub(crate) fn include_prefix(text: &[u8]) -> Option<IncludePrefix> {
    leading_includes(text).filter(|p| {
        p.header
            .lines()
            .any(|l| l.contains("gtest/gtest.h") || l.contains("gmock/gmock.h"))
    })
}

/// The leading `#include` lines of any source (a library's translation unit, whose mutants
/// all lie below them), as [`include_prefix`] finds them; `None` when there is none.
pub(crate) fn leading_includes(text: &[u8]) -> Option<IncludePrefix> {
    let text = std::str::from_utf8(text).ok()?;
    let mut header = String::new();
    let mut blank = Vec::new();
    let mut in_comment = false;
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let t = body.trim();
        let here = start;
        start += line.len();
        if in_comment {
            match t.find("*/") {
                Some(end) if t[end + 2..].trim().is_empty() => in_comment = false,
                Some(_) => break,
                None => {}
            }
            continue;
        }
        if t.is_empty() {
            continue;
        }
        if t.starts_with("//") {
            // A backslash at the end makes the next line part of the comment.
            if t.ends_with('\\') {
                break;
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("/*") {
            match rest.find("*/") {
                Some(end) if rest[end + 2..].trim().is_empty() => {}
                Some(_) => break,
                None => in_comment = true,
            }
            continue;
        }
        if !is_plain_include(t) {
            break;
        }
        header.push_str(t);
        header.push('\n');
        blank.push((here, here + body.len()));
    }
    if in_comment || header.is_empty() {
        return None;
    }
    let mut blanked = Vec::with_capacity(text.len());
    let mut at = 0;
    for (from, to) in blank {
        blanked.extend_from_slice(&text.as_bytes()[at..from]);
        at = to;
    }
    blanked.extend_from_slice(&text.as_bytes()[at..]);
    Some(IncludePrefix { header, blanked })
}

/// `#include <a>` or `#include "a"`, nothing after it but a `//` comment; no macro, no
/// line continuation, no block comment.
fn is_plain_include(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('#') else {
        return false;
    };
    let Some(rest) = rest.trim_start().strip_prefix("include") else {
        return false;
    };
    let rest = rest.trim_start();
    let close = match rest.chars().next() {
        Some('<') => '>',
        Some('"') => '"',
        _ => return false,
    };
    let Some(end) = rest[1..].find(close) else {
        return false;
    };
    let after = rest[1 + end + 1..].trim();
    after.is_empty() || (after.starts_with("//") && !after.ends_with('\\'))
}

/// A precompiled prefix on the host: the folder holding the header and its `.gch`, which a
/// candidate's run binds read-only at the same path.
#[derive(Debug)]
pub(crate) struct Pch {
    pub dir: PathBuf,
}

impl Pch {
    /// What the candidate's compile line gets: the header to include first.
    pub fn header(&self) -> PathBuf {
        self.dir.join(HEADER)
    }

    /// The words a compile line gets before its input to read this header first:
    /// `quote_dir` ([`quote_dir`]) as `-iquote`, the header as `-include`, and
    /// `-Winvalid-pch` unless `cxxflags` make warnings errors.
    pub fn flags(&self, quote_dir: String, cxxflags: &[String]) -> Vec<String> {
        let mut flags = vec![
            "-iquote".into(),
            quote_dir,
            "-include".into(),
            self.header().to_string_lossy().into_owned(),
        ];
        // GCC's word on a header it will not use; under `-Werror` that word would fail a
        // compile that reads the header as text and succeeds.
        if !cxxflags.iter().any(|f| f.starts_with("-Werror")) {
            flags.push("-Winvalid-pch".into());
        }
        flags
    }
}

/// The folder `"..."` includes of a prefix taken from `source` are looked up in first, as
/// they were in the source: its own (`-iquote`; `.` for a file at the root).
pub(crate) fn quote_dir(source: &Path) -> String {
    match source.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_string_lossy().into_owned(),
        _ => ".".into(),
    }
}

/// The precompiled headers of one library cache.
#[derive(Debug, Default)]
pub(crate) struct PchCache {
    builds: OnceMap<String, Result<Arc<Pch>, String>>,
    /// How often each key has been asked for, up to two.
    seen: Mutex<HashMap<String, u8>>,
    /// Headers this process compiled (not found on disk).
    built: AtomicUsize,
}

/// What a PCH build needs to know besides the prefix.
pub(crate) struct PchRecipe<'a> {
    pub repo: &'a Path,
    /// The compiler's resolved path and version.
    pub compiler: &'a str,
    pub env: &'a [(OsString, OsString)],
    /// The compile command up to the input: compiler, flags, `-iquote`.
    pub command: Vec<String>,
    pub limits: &'a Limits,
}

impl PchCache {
    pub fn built(&self) -> usize {
        self.built.load(Ordering::Relaxed)
    }

    /// The precompiled header of `prefix`: `Ok(None)` when it is not (yet) worth building,
    /// `Ok(Some(Err(why)))` when it could not be built.
    pub fn get(
        &self,
        cache_dir: &Path,
        sandbox: &Sandbox,
        recipe: &PchRecipe,
        prefix: &IncludePrefix,
    ) -> Result<Option<Result<Arc<Pch>, String>>, SandboxError> {
        let dir = cache_dir.join("pch");
        let mut h = KeyHasher::default();
        h.add(recipe.repo.as_os_str().as_encoded_bytes());
        h.add(recipe.compiler.as_bytes());
        for (k, v) in recipe.env {
            h.add(k.as_encoded_bytes());
            h.add(v.as_encoded_bytes());
        }
        for w in &recipe.command {
            h.add(w.as_bytes());
        }
        h.add(prefix.header.as_bytes());
        let name = h.finish();
        let key = match std::fs::read_to_string(dir.join(format!("{name}.inputs"))) {
            Ok(list) => {
                let inputs: Vec<PathBuf> = list.lines().map(PathBuf::from).collect();
                build_key(&name, recipe.repo, &inputs)
            }
            Err(_) => format!("{name}-unbuilt"),
        };
        if !dir.join(&key).join(format!("{HEADER}.gch")).is_file() {
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            let n = seen.entry(key.clone()).or_insert(0);
            if *n == 0 {
                *n = 1;
                return Ok(None);
            }
        }
        self.builds.get_or_make(&key, || {
            let stored = dir.join(&key);
            if stored.join(format!("{HEADER}.gch")).is_file() {
                return Ok(Ok(Arc::new(Pch { dir: stored })));
            }
            let built = self.build(sandbox, recipe, prefix, &name)?;
            Ok(built.and_then(|(gch, inputs)| {
                self.built.fetch_add(1, Ordering::Relaxed);
                let key = build_key(&name, recipe.repo, &inputs);
                store(&dir, &key, &name, prefix, &gch, &inputs)
                    .map(|dir| Arc::new(Pch { dir }))
                    .map_err(|e| format!("the precompiled header could not be stored: {e}"))
            }))
        })
    }

    /// Compiles the prefix in the sandbox: the `.gch` and the files the compiler read.
    #[allow(clippy::type_complexity)]
    fn build(
        &self,
        sandbox: &Sandbox,
        recipe: &PchRecipe,
        prefix: &IncludePrefix,
        name: &str,
    ) -> Result<Result<(Vec<u8>, Vec<PathBuf>), String>, SandboxError> {
        let header = format!("{BUILD_DIR}/{HEADER}");
        let gch = format!("{header}.gch");
        let deps = format!("{BUILD_DIR}/{name}.d");
        let log = format!("{BUILD_DIR}/log.txt");
        let compile = sh_words(recipe.command.iter().map(String::as_str).chain([
            "-x",
            "c++-header",
            &header,
            "-o",
            &gch,
            "-MD",
            "-MF",
            &deps,
        ]));
        let script = format!(
            "if ! {compile} > {q} 2>&1; then cat {q} >&2; exit 1; fi",
            q = sh_quote(&log)
        );
        let mut spec = RunSpec::new(recipe.repo, ["/bin/sh", "-c", &script]);
        spec.env = recipe.env.to_vec();
        spec.files = vec![WriteFile {
            path: header.clone().into(),
            contents: prefix.header.clone().into_bytes(),
        }];
        spec.writable_dirs = vec![".clover-build".into(), BUILD_DIR.into()];
        spec.collect = vec![gch.clone().into(), deps.clone().into()];
        spec.collect_max_bytes = MAX_PCH_BYTES;
        let l = recipe.limits;
        spec.limits = Limits {
            wall: Duration::from_secs(600).max(l.wall),
            cpu_secs: 600.max(l.cpu_secs),
            file_size_bytes: MAX_PCH_BYTES.max(l.file_size_bytes),
            overlay_bytes: (2 * MAX_PCH_BYTES).max(l.overlay_bytes),
            ..l.clone()
        };
        let out = sandbox.run(&spec)?;
        if !out.exit.success() {
            return Ok(Err(match out.limit_hit {
                Some(limit) => format!("its build hit the {limit} limit"),
                None => first_errors(&out.stderr.text()),
            }));
        }
        let (
            Some(Collected::Read {
                bytes: gch,
                truncated: false,
            }),
            Some(d),
        ) = (out.file(&gch), out.file(&deps).and_then(Collected::bytes))
        else {
            return Ok(Err(
                "its build left no whole .gch and dependency file".into()
            ));
        };
        let mut inputs = depfile_inputs(&String::from_utf8_lossy(d));
        // The prefix header itself is the recipe's; it is not at this path afterwards.
        inputs.retain(|p| p != Path::new(&header));
        inputs.sort();
        inputs.dedup();
        Ok(Ok((gch.clone(), inputs)))
    }
}

/// Writes a precompiled header to `<dir>/<key>/` through a temporary folder renamed at the
/// end (a reader sees a whole one or none), readable by the sandbox user, and the files it
/// read to `<dir>/<name>.inputs`, which keys the next lookup.
fn store(
    dir: &Path,
    key: &str,
    name: &str,
    prefix: &IncludePrefix,
    gch: &[u8],
    inputs: &[PathBuf],
) -> std::io::Result<PathBuf> {
    let readable =
        |p: &Path, mode: u32| std::fs::set_permissions(p, PermissionsExt::from_mode(mode));
    std::fs::create_dir_all(dir)?;
    let dest = dir.join(key);
    let tmp = dir.join(format!(".{key}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir(&tmp)?;
    std::fs::write(tmp.join(HEADER), &prefix.header)?;
    std::fs::write(tmp.join(format!("{HEADER}.gch")), gch)?;
    readable(&tmp.join(HEADER), 0o644)?;
    readable(&tmp.join(format!("{HEADER}.gch")), 0o644)?;
    readable(&tmp, 0o755)?;
    let list: String = inputs
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    // Another process may have stored the same key first: its header is as good.
    if let Err(e) = std::fs::rename(&tmp, &dest) {
        let _ = std::fs::remove_dir_all(&tmp);
        if !dest.is_dir() {
            return Err(e);
        }
    }
    let part = dir.join(format!(".{name}.{}.inputs", std::process::id()));
    std::fs::write(&part, list)?;
    std::fs::rename(&part, dir.join(format!("{name}.inputs")))?;
    dest.canonicalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_the_leading_includes() {
        let text =
            "// Copyright\n/* a\n   block */\n#include \"a.h\"\n\n#include <vector>  // why\n\
                    #include \"gtest/gtest.h\"\n#define X 1\n#include \"b.h\"\nTEST(A, B) {}\n";
        let p = include_prefix(text.as_bytes()).unwrap();
        assert_eq!(
            p.header,
            "#include \"a.h\"\n#include <vector>  // why\n#include \"gtest/gtest.h\"\n"
        );
        let blanked = String::from_utf8(p.blanked).unwrap();
        assert_eq!(
            blanked,
            "// Copyright\n/* a\n   block */\n\n\n\n\n#define X 1\n#include \"b.h\"\nTEST(A, B) {}\n"
        );
        assert_eq!(blanked.lines().count(), text.lines().count(), "lines stay");
    }

    #[test]
    fn a_library_source_s_prefix_needs_no_googletest() {
        let p =
            leading_includes(b"// x\n#include \"a.h\"\n#include <map>\n#if X\nint y;\n").unwrap();
        assert_eq!(p.header, "#include \"a.h\"\n#include <map>\n");
        assert_eq!(p.blanked, b"// x\n\n\n#if X\nint y;\n");
        assert_eq!(include_prefix(b"#include \"a.h\"\nint y;\n"), None);
        assert_eq!(leading_includes(b"int y;\n#include \"a.h\"\n"), None);
        assert_eq!(leading_includes(b"/* open\n#include \"a.h\"\n"), None);
    }

    #[test]
    fn no_prefix_without_googletest_or_before_a_macro() {
        assert_eq!(include_prefix(b"#include <vector>\nint x;\n"), None);
        // GoogleTest's include after a macro is not in the prefix: the macro may change it.
        assert_eq!(
            include_prefix(b"#define GTEST_DONT_DEFINE_TEST 1\n#include \"gtest/gtest.h\"\n"),
            None
        );
        assert_eq!(
            include_prefix(b"#include MACRO\n#include <gtest/gtest.h>\n"),
            None
        );
        // A prefix stops at a computed include or one continued on the next line.
        assert!(!is_plain_include("#include \"a.h\" \\"));
        assert!(!is_plain_include("#include \"a.h\" /* x */"));
        assert!(is_plain_include("#  include <gmock/gmock.h>"));
        let crlf = include_prefix(b"#include <gtest/gtest.h>\r\nTEST(A, B) {}\r\n").unwrap();
        assert_eq!(crlf.blanked, b"\r\nTEST(A, B) {}\r\n");
    }
}
