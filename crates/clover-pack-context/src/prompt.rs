//! The words of the prompts: system messages, file blocks and per-task instructions.
//!
//! Every prompt has the same shape, so a model sees one layout across tasks and settings:
//! the system message, then the user message with the context files (if any), the in-file
//! code of the problem, and the instruction last, next to where the answer goes.

use clover_protocol::{Language, Message};

/// A code fence longer than any run of backticks in `text`, so file contents that hold
/// Markdown fences cannot close the block early.
pub fn fence(text: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for b in text.bytes() {
        if b == b'`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    "`".repeat((longest + 1).max(3))
}

/// The info string of a code block in `language`.
pub fn lang_tag(language: Language) -> &'static str {
    match language {
        Language::Python => "python",
        Language::Cpp => "cpp",
    }
}

/// `text` as a fenced code block ending in a newline.
pub fn code_block(language: Language, text: &str) -> String {
    let f = fence(text);
    let nl = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{f}{}\n{text}{nl}{f}\n", lang_tag(language))
}

/// A whole source file as it stands in a prompt's context.
pub fn file_block(path: &str, language: Language, text: &str) -> String {
    format!("### File: {path}\n{}\n", code_block(language, text))
}

/// The line that introduces the context files.
pub fn context_header(repo: &str) -> String {
    format!("Source files from the repository `{repo}`:\n\n")
}

/// The system message for a language.
pub fn system_message(language: Language) -> &'static str {
    match language {
        Language::Python => {
            "You are an expert Python developer. You write correct, focused pytest tests for \
             the repository you are shown, and answer exactly in the format you are asked for."
        }
        Language::Cpp => {
            "You are an expert C++ developer. You write correct, focused GoogleTest unit tests \
             for the code you are shown, and answer exactly in the format you are asked for."
        }
    }
}

/// What joins the system message and the user message in the plain-text prompt.
pub const PROMPT_JOIN: &str = "\n\n";

/// The plain-text prompt and the chat messages for one instance.
pub fn assemble(system: &str, user: &str) -> (String, Vec<Message>) {
    let prompt = format!("{system}{PROMPT_JOIN}{user}");
    let messages = vec![
        Message {
            role: "system".into(),
            content: system.to_string(),
        },
        Message {
            role: "user".into(),
            content: user.to_string(),
        },
    ];
    (prompt, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_outgrow_backticks_inside() {
        assert_eq!(fence("plain"), "```");
        assert_eq!(fence("doc = '''```py\\n'''"), "````");
        let block = code_block(Language::Python, "x = 1");
        assert_eq!(block, "```python\nx = 1\n```\n");
    }
}
