//! Context packing: a task's draft plus whole source files, within a setting's token budget.
//!
//! Fill order: the files the task requires, then the `peer` tier, the `other` tier, the
//! `repo` tier, in a seeded order within each tier. Files go in whole; one that does not fit
//! is passed over for the smaller ones after it. The packed prompt is then counted exactly;
//! when the count of the joined text runs over the budget (token boundaries between blocks can
//! merge differently than in the blocks counted apart), the last optional file is taken out
//! until it fits, so an instance never exceeds its setting.
//!
//! The exact count of a joined prompt is the sum of its parts' counts where the tokenizer's
//! line-break rule allows it (see [`crate::tokenizer`]): every part ends with a line break and
//! starts with a visible character, so with the Mistral model and cl100k/o200k the parts are
//! counted once per draft (files once per repository) and never again. Where the rule does not
//! hold, the joined text is counted.

use std::collections::BTreeMap;
use std::sync::Arc;

use clover_protocol::{ExecSpec, Instance, RecordKind, Task, SCHEMA_VERSION};

use crate::prompt::{assemble, context_header, PROMPT_JOIN};
use crate::setting::Setting;
use crate::source::SourceFile;
use crate::tokenizer::{Tokenizer, TokenizerError};

/// The token counts of a draft's fixed parts. Counts "after a line break" are what a part
/// adds to a text ending in `\n` ([`Tokenizer::count_after_newline`]); `None` where the
/// tokenizer's rule does not apply.
#[derive(Debug, Clone)]
pub struct DraftCounts {
    /// The system message and the blank line after it, alone: the start of every prompt.
    head: usize,
    /// The context header alone (what the budget sets aside for it) and after a line break.
    header_alone: usize,
    header_after: Option<usize>,
    problem_after: Option<usize>,
    instruction_after: Option<usize>,
    /// The exact count of the prompt without context files.
    bare: usize,
}

/// Everything about an instance except its context: the same for every setting.
#[derive(Debug, Clone)]
pub struct Draft {
    pub problem_id: String,
    pub repo: String,
    pub task: Task,
    /// Appended to `<problem id>#<task>#<setting>` to make the instance id unique, e.g. the
    /// cloze candidate's number or the answer format.
    pub id_suffix: Option<String>,
    pub answer_format: String,
    pub system: String,
    /// The problem's own code as shown (a test file up to the mask, a declaration, a chunk).
    pub problem_section: String,
    /// What to do and how to answer; always last.
    pub instruction: String,
    /// The instruction of the problem-only setting, when it must say less than with context
    /// (Task II names the target's file and lines only where the file is shown).
    pub instruction_po: Option<String>,
    /// Tokens kept free for the answer.
    pub reserve: u32,
    /// Files the task needs in every setting but problem-only, in order.
    pub required: Vec<Arc<SourceFile>>,
    pub reference: String,
    pub exec: ExecSpec,
    pub scoring: BTreeMap<String, serde_json::Value>,
}

impl Draft {
    /// The id of this draft's instance in `setting`.
    pub fn instance_id(&self, setting: Setting) -> String {
        let task = serde_json::to_value(self.task)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        match &self.id_suffix {
            Some(s) => format!("{}#{task}#{setting}#{s}", self.problem_id),
            None => format!("{}#{task}#{setting}", self.problem_id),
        }
    }

    fn user_message(&self, files: &[Arc<SourceFile>]) -> String {
        self.user_message_with(files, &self.instruction)
    }

    fn user_message_with(&self, files: &[Arc<SourceFile>], instruction: &str) -> String {
        let mut user = String::new();
        if !files.is_empty() {
            user.push_str(&context_header(&self.repo));
            for f in files {
                user.push_str(&f.block);
            }
        }
        user.push_str(&self.problem_section);
        user.push_str(instruction);
        user
    }

    /// The token counts of this draft's own parts, which every setting shares.
    pub fn counts(&self, tokenizer: &Tokenizer) -> Result<DraftCounts, TokenizerError> {
        let header = context_header(&self.repo);
        let mut head = self.system.clone();
        head.push_str(PROMPT_JOIN);
        let mut counts = DraftCounts {
            head: tokenizer.count(&head)?,
            header_alone: tokenizer.count(&header)?,
            header_after: tokenizer.count_after_newline(&header)?,
            problem_after: tokenizer.count_after_newline(&self.problem_section)?,
            instruction_after: tokenizer.count_after_newline(&self.instruction)?,
            bare: 0,
        };
        let (bare, _) = assemble(&self.system, &self.user_message(&[]));
        counts.bare = self.prompt_tokens(&bare, &[], &counts, tokenizer)?;
        Ok(counts)
    }

    /// The exact token count of `prompt`, which is this draft's prompt with `files`: the sum of
    /// the parts' counts when the tokenizer's line-break rule holds at every joint, else a count
    /// of the whole text.
    fn prompt_tokens(
        &self,
        prompt: &str,
        files: &[Arc<SourceFile>],
        counts: &DraftCounts,
        tokenizer: &Tokenizer,
    ) -> Result<usize, TokenizerError> {
        let header = context_header(&self.repo);
        let mut parts: Vec<(&str, Option<usize>)> = Vec::with_capacity(files.len() + 3);
        if !files.is_empty() {
            parts.push((&header, counts.header_after));
            parts.extend(files.iter().map(|f| (f.block.as_str(), f.after_newline)));
        }
        parts.push((&self.problem_section, counts.problem_after));
        parts.push((&self.instruction, counts.instruction_after));
        // The head (`system` and the blank line) ends with a line break.
        let mut total = counts.head;
        let mut after_newline = true;
        for (text, tokens) in parts {
            if text.is_empty() {
                continue;
            }
            match tokens {
                Some(n) if after_newline => total += n,
                _ => return tokenizer.count(prompt),
            }
            after_newline = text.ends_with('\n');
        }
        debug_assert_eq!(
            total,
            tokenizer.count(prompt)?,
            "the count by parts differs from the count of the prompt"
        );
        Ok(total)
    }

    /// Builds the instance for `setting`, taking optional context files from `ordered` (tiers
    /// already in fill order, required files left out). `None` when even the required files
    /// do not fit.
    pub fn realize(
        &self,
        setting: Setting,
        ordered: &[Arc<SourceFile>],
        tokenizer: &Tokenizer,
    ) -> Result<Option<Instance>, TokenizerError> {
        self.realize_counted(setting, ordered, tokenizer, &self.counts(tokenizer)?)
    }

    /// [`Draft::realize`] with the draft's [`Draft::counts`] made beforehand, for a draft that
    /// is realized in several settings.
    pub fn realize_counted(
        &self,
        setting: Setting,
        ordered: &[Arc<SourceFile>],
        tokenizer: &Tokenizer,
        counts: &DraftCounts,
    ) -> Result<Option<Instance>, TokenizerError> {
        let Some(length) = setting.length() else {
            if let Some(po) = &self.instruction_po {
                // Counted whole: once per draft, and no setting shares it.
                let (prompt, messages) = assemble(&self.system, &self.user_message_with(&[], po));
                let tokens = tokenizer.count(&prompt)?;
                return Ok(Some(self.instance(setting, prompt, messages, tokens, &[])));
            }
            let (prompt, messages) = assemble(&self.system, &self.user_message(&[]));
            return Ok(Some(self.instance(
                setting,
                prompt,
                messages,
                counts.bare,
                &[],
            )));
        };
        let limit = (length as usize).saturating_sub(self.reserve as usize);
        let bare_tokens = counts.bare + counts.header_alone;
        let Some(mut room) = limit.checked_sub(bare_tokens) else {
            return Ok(None);
        };
        let mut chosen: Vec<Arc<SourceFile>> = Vec::new();
        for f in &self.required {
            if f.tokens > room {
                return Ok(None);
            }
            room -= f.tokens;
            chosen.push(f.clone());
        }
        for f in ordered {
            if f.tokens <= room {
                room -= f.tokens;
                chosen.push(f.clone());
            }
        }
        loop {
            let (prompt, messages) = assemble(&self.system, &self.user_message(&chosen));
            let prompt_tokens = self.prompt_tokens(&prompt, &chosen, counts, tokenizer)?;
            if prompt_tokens <= limit {
                return Ok(Some(self.instance(
                    setting,
                    prompt,
                    messages,
                    prompt_tokens,
                    &chosen,
                )));
            }
            if chosen.len() <= self.required.len() {
                return Ok(None);
            }
            chosen.pop();
        }
    }

    fn instance(
        &self,
        setting: Setting,
        prompt: String,
        messages: Vec<clover_protocol::Message>,
        prompt_tokens: usize,
        files: &[Arc<SourceFile>],
    ) -> Instance {
        Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: self.instance_id(setting),
            problem_id: self.problem_id.clone(),
            repo: self.repo.clone(),
            task: self.task,
            setting: setting.to_string(),
            answer_format: self.answer_format.clone(),
            prompt,
            messages,
            prompt_tokens: prompt_tokens as u32,
            context_files: files.iter().map(|f| f.path.clone()).collect(),
            reference: self.reference.clone(),
            exec: self.exec.clone(),
            scoring: self.scoring.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::test_tokenizer;

    fn file(tok: &Tokenizer, path: &str, lines: usize) -> Arc<SourceFile> {
        let text: String = (0..lines).map(|i| format!("value_{i} = {i}\n")).collect();
        let block = crate::prompt::file_block(path, clover_protocol::Language::Python, &text);
        Arc::new(SourceFile {
            path: path.into(),
            tokens: tok.count(&block).unwrap(),
            after_newline: tok.count_after_newline(&block).unwrap(),
            text,
            block,
        })
    }

    fn draft(required: Vec<Arc<SourceFile>>) -> Draft {
        Draft {
            problem_id: "r/tests/test_a.py::test_a".into(),
            repo: "r".into(),
            task: Task::TargetedTest,
            id_suffix: Some("part".into()),
            answer_format: "part".into(),
            system: "You write tests.".into(),
            problem_section: "### Test file: tests/test_a.py\n```python\ndef test_a():\n```\n"
                .into(),
            instruction: "Write the body.\n".into(),
            instruction_po: None,
            reserve: 100,
            required,
            reference: "assert True\n".into(),
            exec: ExecSpec::default(),
            scoring: BTreeMap::new(),
        }
    }

    #[test]
    fn required_first_big_files_passed_over_budget_kept() {
        let Some(tok) = test_tokenizer() else { return };
        let req = file(&tok, "src/req.py", 5);
        let big = file(&tok, "src/big.py", 400);
        let small = file(&tok, "src/small.py", 10);
        let d = draft(vec![req.clone()]);
        let setting = Setting::Length(1024);
        let inst = d
            .realize(setting, &[big.clone(), small.clone()], &tok)
            .unwrap()
            .expect("fits");
        assert_eq!(inst.context_files, vec!["src/req.py", "src/small.py"]);
        assert!(inst.prompt_tokens as usize + 100 <= 1024);
        assert_eq!(
            inst.prompt_tokens as usize,
            tok.count(&inst.prompt).unwrap()
        );
        assert_eq!(inst.id, "r/tests/test_a.py::test_a#targeted_test#1k#part");
        assert!(inst.prompt.contains(&small.text) && inst.prompt.ends_with("Write the body.\n"));

        // Problem-only: no files at all, not even the required one.
        let po = d
            .realize(Setting::ProblemOnly, &[small], &tok)
            .unwrap()
            .unwrap();
        assert!(po.context_files.is_empty() && !po.prompt.contains("### File:"));

        // A required file that does not fit leaves no instance.
        assert!(draft(vec![big])
            .realize(setting, &[], &tok)
            .unwrap()
            .is_none());
    }

    /// Many small files: the exact count of the joined prompt must still stay within the
    /// budget, whatever the per-file counts add up to.
    #[test]
    fn budget_holds_to_the_token() {
        let Some(tok) = test_tokenizer() else { return };
        let files: Vec<_> = (0..60)
            .map(|i| file(&tok, &format!("src/f{i}.py"), 1 + i % 7))
            .collect();
        for length in [600, 700, 800, 1000, 1500] {
            let inst = draft(vec![])
                .realize(Setting::Length(length), &files, &tok)
                .unwrap()
                .unwrap();
            assert!(
                inst.prompt_tokens + 100 <= length,
                "{length}: {}",
                inst.prompt_tokens
            );
            assert!(!inst.context_files.is_empty());
        }
    }
}
