//! Whole source files of one repository, read once and counted once, as prompt blocks.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use clover_protocol::Language;

use crate::prompt::file_block;
use crate::tokenizer::{Tokenizer, TokenizerError};

/// A source file as it goes into a prompt.
#[derive(Debug)]
pub struct SourceFile {
    /// Relative to the repository root, as the calibrated record names it.
    pub path: String,
    /// The file's text, whole.
    pub text: String,
    /// The file as a prompt block (header and fenced code).
    pub block: String,
    /// Tokens in `block` counted on its own.
    pub tokens: usize,
    /// Tokens `block` adds after a line break, where the tokenizer's rule gives it
    /// ([`Tokenizer::count_after_newline`]).
    pub after_newline: Option<usize>,
}

/// The files of one repository that prompts have needed so far.
#[derive(Debug)]
pub struct RepoSources<'t> {
    root: PathBuf,
    language: Language,
    tokenizer: &'t Tokenizer,
    cache: HashMap<String, Option<Arc<SourceFile>>>,
    /// Files that could not be used, with the reason, in the order they were met.
    pub unusable: Vec<(String, String)>,
    /// Bytes of source text read and counted.
    pub bytes_counted: u64,
}

impl<'t> RepoSources<'t> {
    pub fn new(root: &Path, language: Language, tokenizer: &'t Tokenizer) -> Self {
        RepoSources {
            root: root.to_path_buf(),
            language,
            tokenizer,
            cache: HashMap::new(),
            unusable: Vec::new(),
            bytes_counted: 0,
        }
    }

    /// The file at `path` (relative to the root), or `None` when it cannot be read, is not
    /// UTF-8 or leaves the repository; the reason is kept in `unusable`.
    pub fn get(&mut self, path: &str) -> Result<Option<Arc<SourceFile>>, TokenizerError> {
        if let Some(hit) = self.cache.get(path) {
            return Ok(hit.clone());
        }
        let file = match self.read(path) {
            Ok(text) => {
                let block = file_block(path, self.language, &text);
                let tokens = self.tokenizer.count(&block)?;
                let after_newline = self.tokenizer.count_after_newline(&block)?;
                self.bytes_counted += block.len() as u64;
                Some(Arc::new(SourceFile {
                    path: path.to_string(),
                    text,
                    block,
                    tokens,
                    after_newline,
                }))
            }
            Err(why) => {
                self.unusable.push((path.to_string(), why));
                None
            }
        };
        self.cache.insert(path.to_string(), file.clone());
        Ok(file)
    }

    fn read(&self, path: &str) -> Result<String, String> {
        let rel = Path::new(path);
        if rel.is_absolute()
            || rel
                .components()
                .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err("the path is not inside the repository".into());
        }
        let full = self.root.join(rel);
        let bytes = std::fs::read(&full).map_err(|e| format!("{}: {e}", full.display()))?;
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", full.display()))
    }
}
