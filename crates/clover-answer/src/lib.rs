//! From a model's answer to the candidate test file that is run and scored.
//!
//! This is the one place that decides what "the model's code" is, between generate (which
//! never looks inside answers) and the two stages that must agree on it: sandbox-run, which
//! writes and runs the candidate, and score, which reads the prediction back for Task I.
//!
//! - [`assemble_candidate`]: fenced code is pulled out of the model's text (with or without a
//!   language tag, several blocks joined, prose around them ignored, a missing closing fence
//!   tolerated); Task I recovers the predicted operand by aligning the filled line with the
//!   masked assertion ([`align_in_lines`], [`predict_operand`]); Python code is re-indented to
//!   where it goes ([`reindent`]). The candidate file is `exec.prefix + answer + exec.suffix`.
//!   No code is an error, [`NoCode`], which sandbox-run records as outcome `no_code` — never a
//!   crash.
//! - [`assemble_file`]: the answers to the chunks of one C++ source joined into one file by
//!   the rule pack-context records in `scoring.join` (`append`); a missing chunk is a
//!   [`JoinError`], a chunk without code adds nothing.
//!
//! It deliberately runs nothing, reads no file and knows nothing of metrics: its input is a
//! `Response` record and its output is text.

mod extract;
mod join;

pub use extract::{
    align_in_lines, align_prediction, assemble_candidate, code_blocks, extract_code, indent_after,
    predict_operand, reindent, Candidate, CodeBlock, NoCode,
};
pub use join::{assemble_file, JoinError, JoinedFile};
