//! What every compile of this crate shares: the cache key of a build over the files the
//! compiler read, the words of a shell command line, and the first errors of a compiler's
//! log.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The cache key of a build: its recipe, and the path and content of every file the
/// compiler read for it (`inputs`, from its dependency files). Nothing else under the
/// source folders counts: a stray file there changes nothing.
pub(crate) fn build_key(recipe: &str, repo: &Path, inputs: &[PathBuf]) -> String {
    let mut h = KeyHasher::default();
    h.add(recipe.as_bytes());
    for f in inputs {
        h.add(f.as_os_str().as_bytes());
        match std::fs::read(repo.join(f)) {
            Ok(bytes) => h.add(&bytes),
            // A file the build read and that is gone now is a change too.
            Err(_) => h.add(b"\0missing"),
        }
    }
    h.finish()
}

/// Length-prefixed fields hashed into a 128-bit hex key.
#[derive(Default)]
pub(crate) struct KeyHasher(Vec<u8>);

impl KeyHasher {
    pub(crate) fn add(&mut self, b: &[u8]) {
        self.0.extend_from_slice(&(b.len() as u64).to_le_bytes());
        self.0.extend_from_slice(b);
    }

    pub(crate) fn finish(mut self) -> String {
        // Two differently seeded FNV-1a hashes: 128 bits for a cache key.
        let a = clover_protocol::fnv1a64(&self.0);
        self.0.push(0x5a);
        let b = clover_protocol::fnv1a64(&self.0);
        format!("{a:016x}{b:016x}")
    }
}

/// The files a make rule (`obj.o: a.cc a.h \`, as `-MD` writes it) depends on.
pub(crate) fn depfile_inputs(text: &str) -> Vec<PathBuf> {
    let joined = text.replace("\\\n", " ");
    let mut out = Vec::new();
    for rule in joined.lines() {
        let Some((_, deps)) = rule.split_once(": ") else {
            continue;
        };
        // `\ ` is a space inside a name.
        let mut word = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => word.push(chars.next().unwrap_or(' ')),
                c if c.is_whitespace() => {
                    if !word.is_empty() {
                        out.push(PathBuf::from(std::mem::take(&mut word)));
                    }
                }
                c => word.push(c),
            }
        }
        if !word.is_empty() {
            out.push(PathBuf::from(word));
        }
    }
    out
}

/// Quotes one word for `sh`.
pub(crate) fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub(crate) fn sh_words<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    words
        .into_iter()
        .map(sh_quote)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first compiler errors of a log: the lines from the first `error` on, at most 20
/// lines and 2000 bytes.
pub fn first_errors(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("error"))
        .map_or(0, |i| i.saturating_sub(1));
    let mut out = String::new();
    for l in lines.iter().skip(start).take(20) {
        if out.len() + l.len() > 2000 {
            break;
        }
        out.push_str(l);
        out.push('\n');
    }
    let out = out.trim_end().to_string();
    if out.is_empty() {
        "the compiler failed without a message".into()
    } else {
        out
    }
}
