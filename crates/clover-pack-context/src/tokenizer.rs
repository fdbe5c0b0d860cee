//! Token counting with the real tokenizer of the model a benchmark is sized for.
//!
//! The default is Mistral-7B's SentencePiece model (`tokenizer.model.v1` from the PyPI package
//! `mistral-common`), which `cargo xtask setup` caches and checks by hash. It is read directly
//! by kitoken: no Python, no conversion step, nothing downloaded at run time. A test proves
//! that the ids equal those of the reference SentencePiece implementation, token for token.
//!
//! Counts never include the BOS/EOS tokens a model adds around a sequence, and text that looks
//! like a control token (`<s>`, `</s>`) is counted as the text it is: source code can hold
//! such strings, and a model reads them as text.

use std::path::{Path, PathBuf};

use kitoken::{Definition, Kitoken};

/// The file name of the Mistral-7B SentencePiece model.
pub const MISTRAL_MODEL_FILE: &str = "tokenizer.model.v1";

/// A tokenizer could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error("tokenizer model {path} not found; run `cargo xtask setup` or pass --tokenizer PATH")]
    Missing { path: PathBuf },
    #[error(
        "no tokenizer model found (looked at {looked}); run `cargo xtask setup`, set \
         CLOVER_TOKENIZER or pass --tokenizer PATH"
    )]
    NoDefault { looked: String },
    #[error("cannot load tokenizer {path}: {message}")]
    Load { path: PathBuf, message: String },
    #[error(
        "unknown tokenizer `{spec}`: give `mistral`, `cl100k`, `o200k`, or a path to a \
         SentencePiece `.model`, a `tokenizer.json` or a `.tiktoken` file"
    )]
    Unknown { spec: String },
    #[error("tokenizer {name} cannot encode text: {message}")]
    Encode { name: String, message: String },
}

/// A loaded tokenizer that counts tokens.
pub struct Tokenizer {
    name: String,
    inner: Kitoken,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .finish()
    }
}

impl Tokenizer {
    /// Loads the tokenizer `spec` names: `mistral` (the default model, found as
    /// [`default_model_path`] says), `cl100k` or `o200k` (their `.tiktoken` rank files next
    /// to the default model), or a path to a SentencePiece `.model`, a Hugging Face
    /// `tokenizer.json`, or a tiktoken `.tiktoken` file.
    pub fn load(spec: &str) -> Result<Tokenizer, TokenizerError> {
        match spec {
            "mistral" => Tokenizer::from_path(&default_model_path()?),
            "cl100k" | "o200k" => {
                let dir = default_data_dirs()
                    .into_iter()
                    .find(|d| d.join(format!("{spec}_base.tiktoken")).is_file())
                    .ok_or_else(|| TokenizerError::Missing {
                        path: PathBuf::from(format!("{spec}_base.tiktoken")),
                    })?;
                Tokenizer::from_path(&dir.join(format!("{spec}_base.tiktoken")))
            }
            _ => {
                let path = Path::new(spec);
                let known = [".model", ".json", ".tiktoken"]
                    .iter()
                    .any(|ext| spec.ends_with(ext));
                if known || path.is_file() {
                    Tokenizer::from_path(path)
                } else {
                    Err(TokenizerError::Unknown {
                        spec: spec.to_string(),
                    })
                }
            }
        }
    }

    /// Loads a tokenizer file, choosing the reader by the file name: `*.json` is a Hugging
    /// Face `tokenizer.json`, `*.tiktoken` a tiktoken rank file, anything else SentencePiece.
    pub fn from_path(path: &Path) -> Result<Tokenizer, TokenizerError> {
        if !path.is_file() {
            return Err(TokenizerError::Missing {
                path: path.to_path_buf(),
            });
        }
        let load = |message: String| TokenizerError::Load {
            path: path.to_path_buf(),
            message,
        };
        let name = path.to_string_lossy();
        let definition = if name.ends_with(".json") {
            Definition::from_tokenizers_file(path)
        } else if name.ends_with(".tiktoken") {
            Definition::from_tiktoken_file(path)
        } else {
            Definition::from_sentencepiece_file(path)
        }
        .map_err(|e| load(e.to_string()))?;
        let inner = Kitoken::try_from(definition).map_err(|e| load(e.to_string()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.into_owned());
        Ok(Tokenizer { name, inner })
    }

    /// The tokenizer's file name, for messages and metadata.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The token ids of `text`, without BOS/EOS; control-token look-alikes are plain text.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        self.inner
            .encode(text, false)
            .map_err(|e| TokenizerError::Encode {
                name: self.name.clone(),
                message: format!("{e:?}"),
            })
    }

    /// The number of tokens in `text`.
    pub fn count(&self, text: &str) -> Result<usize, TokenizerError> {
        if text.is_empty() {
            return Ok(0);
        }
        self.encode(text).map(|ids| ids.len())
    }
}

/// Where the default model is looked for, in order: `CLOVER_TOKENIZER`; then
/// `tokenizer.model.v1` in each of [`default_data_dirs`].
pub fn default_model_path() -> Result<PathBuf, TokenizerError> {
    if let Some(p) = std::env::var_os("CLOVER_TOKENIZER").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    let dirs = default_data_dirs();
    dirs.iter()
        .map(|d| d.join(MISTRAL_MODEL_FILE))
        .find(|p| p.is_file())
        .ok_or_else(|| TokenizerError::NoDefault {
            looked: dirs
                .iter()
                .map(|d| d.join(MISTRAL_MODEL_FILE).display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Folders that may hold tokenizer files: `CLOVER_DATA_DIR`; the folder of
/// `CLOVER_TOKENIZER`; `../share/clover` and `../clover-data` beside the running executable
/// (an installed tool, and `target/release` next to `target/clover-data` in a checkout).
pub fn default_data_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os("CLOVER_DATA_DIR").filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    if let Some(p) = std::env::var_os("CLOVER_TOKENIZER").filter(|p| !p.is_empty()) {
        if let Some(parent) = Path::new(&p).parent() {
            dirs.push(parent.to_path_buf());
        }
    }
    if let Some(bin) = std::env::current_exe().ok().and_then(|e| {
        e.parent()
            .map(Path::to_path_buf)
            .and_then(|d| d.parent().map(Path::to_path_buf))
    }) {
        dirs.push(bin.join("share/clover"));
        dirs.push(bin.join("clover-data"));
        // Test and example binaries live one folder deeper (`target/debug/deps`).
        if let Some(up) = bin.parent() {
            dirs.push(up.join("clover-data"));
        }
    }
    dirs
}

/// The Mistral model for unit tests: `CLOVER_TOKENIZER` or the workspace's
/// `target/clover-data`. Missing, a test skips with a reason, or fails when
/// `CLOVER_REQUIRE_TOOLS=1`.
#[cfg(test)]
pub(crate) fn test_tokenizer() -> Option<Tokenizer> {
    let path = std::env::var_os("CLOVER_TOKENIZER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/clover-data/tokenizer.model.v1")
        });
    if !path.is_file() {
        assert!(
            std::env::var("CLOVER_REQUIRE_TOOLS").as_deref() != Ok("1"),
            "tokenizer model {} is missing; run `cargo xtask setup`",
            path.display()
        );
        eprintln!(
            "skipped: tokenizer model {} not found; run `cargo xtask setup`",
            path.display()
        );
        return None;
    }
    Some(Tokenizer::from_path(&path).expect("the model loads"))
}
