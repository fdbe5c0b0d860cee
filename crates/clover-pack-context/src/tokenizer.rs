//! Token counting with the real tokenizer of the model a benchmark is sized for.
//!
//! The default is Mistral-7B's SentencePiece model (`tokenizer.model.v1` from the PyPI package
//! `mistral-common`), which `cargo xtask setup` caches and checks by hash. It is read directly
//! by kitoken: no Python, no conversion step, nothing downloaded at run time. A test proves
//! that the ids equal those of the reference SentencePiece implementation, token for token.
//! `cl100k` and `o200k` are OpenAI's encodings, through `tiktoken-rs` (OpenAI's own Rust core
//! of tiktoken, with the rank files compiled in, so they need no download either); any other
//! SentencePiece `.model`, Hugging Face `tokenizer.json` or `.tiktoken` rank file is read by
//! kitoken.
//!
//! Counts never include the BOS/EOS tokens a model adds around a sequence, and text that looks
//! like a control token (`<s>`, `</s>`, `<|endoftext|>`) is counted as the text it is: source
//! code can hold such strings, and a model reads them as text.
//!
//! # Counting a prompt by its parts
//!
//! A prompt is the same few large parts (whole source files) joined in many combinations, and
//! counting every joined prompt again was most of pack-context's time. For some tokenizers the
//! count of a join is the sum of the parts' counts, exactly, at a line break:
//!
//! > if `a` ends with `\n` and `b` starts with a character that is neither whitespace nor `/`,
//! > then `count(a + b) = count(a) + count("\n" + b) − count("\n")`.
//!
//! [`Tokenizer::count_after_newline`] gives the second term; it is `None` when the rule is not
//! known to hold for the tokenizer or for `b`, and the caller counts the joined text instead.
//! Why it holds:
//!
//! - **SentencePiece BPE** with the identity normalizer, no whitespace collapsing, and no
//!   piece that holds a line break (Mistral's and Llama's models: `\n` is only ever the byte
//!   token `<0x0A>`). Merges join adjacent symbols into vocabulary pieces, so a symbol `\n`
//!   is never merged with anything and the merges on either side of it are independent of each
//!   other; the only thing the text's position changes is the dummy prefix `▁` added at the
//!   very start, which `"\n" + b` also has (it becomes the lone piece `▁` before the `\n`,
//!   so `count("\n") = 2`). This is checked on the model as loaded ([`newline_safe`]).
//! - **cl100k / o200k**: BPE runs within the chunks of a split regex, and every alternative
//!   of their patterns that can take a `\n` ends at the last line break before a character
//!   that is not whitespace (`[\r\n]*`, `\s*[\r\n]`, `\s++$`), except o200k's
//!   ` ?[^\s\p{L}\p{N}]+[\r\n/]*`, which also takes a following `/` — hence the `/`. Nothing
//!   looks behind, so matching from the start of `b` is the same as matching `b` alone.
//!
//! Tests check the rule token for token on real files with every built-in tokenizer, and
//! debug builds recount every prompt made this way.

use std::path::{Path, PathBuf};

use kitoken::{
    Definition, Kitoken, Model, Normalization, NormalizationReplacePattern, Split, SplitPattern,
};

/// The file name of the Mistral-7B SentencePiece model.
pub const MISTRAL_MODEL_FILE: &str = "tokenizer.model.v1";

/// A tokenizer could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error(
        "tokenizer model {path} not found; run `cargo xtask setup`, pass --tokenizer PATH, or \
         use a built-in encoding with --tokenizer cl100k or --tokenizer o200k"
    )]
    Missing { path: PathBuf },
    #[error(
        "no tokenizer model found (looked at {looked}); run `clover doctor \
         --fetch-tokenizer` (installed tools, a pip-installed wheel included) or `cargo xtask \
         setup` (a checkout), set CLOVER_TOKENIZER, pass --tokenizer PATH, or use a built-in \
         encoding with --tokenizer cl100k or --tokenizer o200k"
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

enum Engine {
    Kitoken(Box<Kitoken>),
    Tiktoken(Box<tiktoken_rs::CoreBPE>),
}

/// A loaded tokenizer that counts tokens.
pub struct Tokenizer {
    name: String,
    engine: Engine,
    /// Whether the line-break rule of the module doc holds for this tokenizer.
    newline_rule: bool,
    /// Tokens of `"\n"` alone.
    newline_tokens: usize,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("name", &self.name)
            .field("newline_rule", &self.newline_rule)
            .finish()
    }
}

impl Tokenizer {
    /// Loads the tokenizer `spec` names: `mistral` (the default model, found as
    /// [`default_model_path`] says), `cl100k` or `o200k` (OpenAI's `cl100k_base` and
    /// `o200k_base`, built in), or a path to a SentencePiece `.model`, a Hugging Face
    /// `tokenizer.json`, or a tiktoken `.tiktoken` file.
    pub fn load(spec: &str) -> Result<Tokenizer, TokenizerError> {
        let builtin = |name: &str, made: anyhow::Result<tiktoken_rs::CoreBPE>| {
            let bpe = made.map_err(|e| TokenizerError::Load {
                path: PathBuf::from(name),
                message: e.to_string(),
            })?;
            Tokenizer::new(name.to_string(), Engine::Tiktoken(Box::new(bpe)), true)
        };
        match spec {
            "mistral" => Tokenizer::from_path(&default_model_path()?),
            "cl100k" | "cl100k_base" => builtin("cl100k_base", tiktoken_rs::cl100k_base()),
            "o200k" | "o200k_base" => builtin("o200k_base", tiktoken_rs::o200k_base()),
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
        let sentencepiece = !name.ends_with(".json") && !name.ends_with(".tiktoken");
        let definition = if name.ends_with(".json") {
            Definition::from_tokenizers_file(path)
        } else if name.ends_with(".tiktoken") {
            Definition::from_tiktoken_file(path)
        } else {
            Definition::from_sentencepiece_file(path)
        }
        .map_err(|e| load(e.to_string()))?;
        // The rule is only claimed where it was reasoned out: SentencePiece BPE models. A
        // `.tiktoken` file may carry any split pattern, and a `tokenizer.json` any pipeline.
        let newline_rule = sentencepiece && newline_safe(&definition);
        let inner = Kitoken::try_from(definition).map_err(|e| load(e.to_string()))?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.into_owned());
        Tokenizer::new(name, Engine::Kitoken(Box::new(inner)), newline_rule)
    }

    fn new(name: String, engine: Engine, newline_rule: bool) -> Result<Tokenizer, TokenizerError> {
        let mut t = Tokenizer {
            name,
            engine,
            newline_rule,
            newline_tokens: 0,
        };
        t.newline_tokens = t.count("\n")?;
        Ok(t)
    }

    /// The tokenizer's name (its file name, or the built-in encoding's), for messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The token ids of `text`, without BOS/EOS; control-token look-alikes are plain text.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        match &self.engine {
            Engine::Kitoken(k) => k.encode(text, false).map_err(|e| TokenizerError::Encode {
                name: self.name.clone(),
                message: format!("{e:?}"),
            }),
            Engine::Tiktoken(bpe) => Ok(bpe.encode_ordinary(text)),
        }
    }

    /// The number of tokens in `text`.
    pub fn count(&self, text: &str) -> Result<usize, TokenizerError> {
        if text.is_empty() {
            return Ok(0);
        }
        self.encode(text).map(|ids| ids.len())
    }

    /// The tokens `text` adds to a text that ends with `\n` (see the module doc), or `None`
    /// when that is not known without counting the joined text: the tokenizer has no such
    /// rule, or `text` starts with whitespace or `/`, or is empty.
    pub fn count_after_newline(&self, text: &str) -> Result<Option<usize>, TokenizerError> {
        if !self.newline_rule || !starts_clean(text) {
            return Ok(None);
        }
        let mut joined = String::with_capacity(text.len() + 1);
        joined.push('\n');
        joined.push_str(text);
        Ok(Some(self.count(&joined)? - self.newline_tokens))
    }

    /// Whether the rule of the module doc holds for this tokenizer at all.
    pub fn joins_at_newlines(&self) -> bool {
        self.newline_rule
    }
}

/// Whether `text` may follow a line break under the rule: it starts with a character that is
/// neither whitespace nor `/`.
fn starts_clean(text: &str) -> bool {
    text.chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '/')
}

/// Whether a SentencePiece model, as kitoken converted it, is one the line-break rule holds
/// for: BPE; normalization only turns spaces into `▁` and adds the dummy prefix on the left
/// (the identity normalizer without `remove_extra_whitespaces`); pre-splitting only at runs of
/// `▁`; and neither a piece longer than one byte nor a special token holds a line break.
pub(crate) fn newline_safe(definition: &Definition) -> bool {
    let Model::BytePair { vocab, .. } = &definition.model else {
        return false;
    };
    let normalization_ok = definition.config.normalization.iter().all(|n| match n {
        Normalization::Replace {
            pattern,
            replacement,
        } => {
            replacement == "▁"
                && match pattern {
                    NormalizationReplacePattern::Character(c) => *c == ' ',
                    NormalizationReplacePattern::String(s) => s == " ",
                    NormalizationReplacePattern::Regex(_) => false,
                }
        }
        Normalization::Extend {
            character, right, ..
        } => *character == '▁' && *right == 0,
        _ => false,
    });
    let split_ok = definition.config.split.iter().all(|s| match s {
        Split::Pattern { pattern, .. } => match pattern {
            SplitPattern::Character(c) => *c == '▁',
            SplitPattern::String(s) => s == "▁",
            SplitPattern::Regex(r) => &**r == "▁+",
        },
        Split::UnicodeScript => false,
    });
    let pieces_ok = vocab
        .iter()
        .all(|t| t.bytes.len() <= 1 || !t.bytes.contains(&b'\n'));
    let specials_ok = definition
        .specials
        .iter()
        .all(|s| !s.extract && !s.bytes.contains(&b'\n'));
    normalization_ok && split_ok && pieces_ok && specials_ok
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

/// The Mistral model for unit tests, through `clover_testkit` (a skip, or a failure when
/// tools are required, if it is missing).
#[cfg(test)]
pub(crate) fn test_tokenizer() -> Option<Tokenizer> {
    let path = clover_testkit::tokenizer_model()?;
    Some(Tokenizer::from_path(&path).expect("the model loads"))
}
