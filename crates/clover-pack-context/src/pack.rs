//! Context packing: a task's draft plus whole source files, within a setting's token budget.
//!
//! Fill order: the files the task requires, then the `peer` tier, the `other` tier, the
//! `repo` tier, in a seeded order within each tier. Files go in whole; one that does not fit
//! is passed over for the smaller ones after it. The packed prompt is then counted exactly;
//! when the count of the joined text runs over the budget (token boundaries between blocks can
//! merge differently than in the blocks counted apart), the last optional file is taken out
//! until it fits, so an instance never exceeds its setting.

use std::collections::BTreeMap;
use std::sync::Arc;

use clover_protocol::{ExecSpec, Instance, RecordKind, Task, SCHEMA_VERSION};

use crate::prompt::{assemble, context_header};
use crate::setting::Setting;
use crate::source::SourceFile;
use crate::tokenizer::{Tokenizer, TokenizerError};

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
        let mut user = String::new();
        if !files.is_empty() {
            user.push_str(&context_header(&self.repo));
            for f in files {
                user.push_str(&f.block);
            }
        }
        user.push_str(&self.problem_section);
        user.push_str(&self.instruction);
        user
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
        let Some(length) = setting.length() else {
            let (prompt, messages) = assemble(&self.system, &self.user_message(&[]));
            let prompt_tokens = tokenizer.count(&prompt)?;
            return Ok(Some(self.instance(
                setting,
                prompt,
                messages,
                prompt_tokens,
                &[],
            )));
        };
        let limit = (length as usize).saturating_sub(self.reserve as usize);
        let (bare, _) = assemble(&self.system, &self.user_message(&[]));
        let bare_tokens = tokenizer.count(&bare)? + tokenizer.count(&context_header(&self.repo))?;
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
            let prompt_tokens = tokenizer.count(&prompt)?;
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
