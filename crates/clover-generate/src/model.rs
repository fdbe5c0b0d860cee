//! The models: what answers an instance, and how.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use clover_protocol::{Generation, Instance, Message, Task, JOIN_APPEND};

use crate::openai::{ChatClient, ChatError, Sampling};

/// The cap on what a command may print as its answer; more is cut and the answer marked.
const MAX_COMMAND_OUTPUT: usize = 4 << 20;

/// A trivial model that shows the metrics discriminate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Baseline {
    /// Task I: the other operand of the assertion (`True` for a unary one), which turns
    /// `assert a == <MASK>` into `assert a == a`. Other tasks: as [`Baseline::AssertTrue`].
    CopyOperand,
    /// Task I: `True`. Task II/III: the ground truth's declaration with the body
    /// `assert True` (runs, uses nothing). C++: one `EXPECT_TRUE(true)` test per chunk
    /// (compiles and passes, covers nothing).
    AssertTrue,
}

/// The sampling of one task's requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskSampling {
    pub temperature: f64,
    pub top_p: f64,
    pub max_tokens: u32,
    /// Sent only when set, as servers differ in which of these they accept.
    pub frequency_penalty: Option<f64>,
    pub presence_penalty: Option<f64>,
}

/// Sampling for the HTTP model, per task, with what every request shares.
///
/// The defaults follow the papers where they say: CPP-UT-Bench samples with temperature 0.1,
/// top-p 0.7, at most 4,096 new tokens and frequency penalty 0.3. CLOVER states none for its
/// tasks, so they keep clover's own: temperature 0.2, top-p 1.0, 200 new tokens for Task I (one
/// expression) and 4,000 for Tasks II and III (a test).
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingPlan {
    pub tasks: BTreeMap<Task, TaskSampling>,
    /// Sent as `seed` when set.
    pub seed: Option<u64>,
    /// Sent as `stop` when not empty.
    pub stop: Vec<String>,
}

impl Default for SamplingPlan {
    fn default() -> Self {
        let clover = |max_tokens| TaskSampling {
            temperature: 0.2,
            top_p: 1.0,
            max_tokens,
            frequency_penalty: None,
            presence_penalty: None,
        };
        let cpp_ut_bench = TaskSampling {
            temperature: 0.1,
            top_p: 0.7,
            max_tokens: 4096,
            frequency_penalty: Some(0.3),
            presence_penalty: None,
        };
        SamplingPlan {
            tasks: [
                (Task::AssertionCloze, clover(200)),
                (Task::TargetedTest, clover(4000)),
                (Task::CoverageTest, clover(4000)),
                (Task::CppUnitTest, cpp_ut_bench),
            ]
            .into_iter()
            .collect(),
            seed: None,
            stop: Vec::new(),
        }
    }
}

impl SamplingPlan {
    /// `task`'s sampling; every task has one in the default plan.
    pub fn task(&self, task: Task) -> TaskSampling {
        self.tasks
            .get(&task)
            .copied()
            .unwrap_or_else(|| SamplingPlan::default().tasks[&task])
    }

    pub fn for_task(&self, task: Task) -> Sampling {
        let t = self.task(task);
        Sampling {
            temperature: t.temperature,
            top_p: t.top_p,
            max_tokens: t.max_tokens,
            seed: self.seed,
            frequency_penalty: t.frequency_penalty,
            presence_penalty: t.presence_penalty,
            stop: self.stop.clone(),
        }
    }
}

/// A user's command: the prompt on stdin, the answer on stdout.
#[derive(Debug, Clone)]
pub struct CommandModel {
    pub argv: Vec<OsString>,
    pub timeout: Duration,
}

/// What answers instances.
#[derive(Debug, Clone)]
pub enum Model {
    /// The ground truth (`Instance::reference`).
    Oracle,
    Baseline(Baseline),
    OpenAi {
        // Boxed: a client is large beside the other models.
        client: Box<ChatClient>,
        sampling: SamplingPlan,
    },
    Command(CommandModel),
}

/// Why a model gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum AnswerError {
    #[error(transparent)]
    Chat(#[from] ChatError),
    #[error("could not start the command: {0}")]
    Spawn(std::io::Error),
    #[error("the command ran longer than {0:?} and was killed")]
    CommandTimeout(Duration),
    #[error("the command failed ({status}): {stderr}")]
    CommandFailed { status: String, stderr: String },
    #[error("the command's output is not UTF-8")]
    NotUtf8,
}

impl AnswerError {
    /// Whether every other instance would fail the same way ([`ChatError::would_fail_again`]).
    pub fn would_fail_again(&self) -> bool {
        matches!(self, AnswerError::Chat(e) if e.would_fail_again())
    }
}

impl Model {
    /// What a response to a `task` instance records of this model's settings; a resumed run
    /// must have the same. The outcome fields (finish reason, usage, attempts, status,
    /// duration) are left empty for [`Model::answer`] to fill in.
    pub fn generation(&self, task: Task) -> Generation {
        let adapter = match self {
            Model::Oracle => "oracle",
            Model::Baseline(Baseline::CopyOperand) => "copy-operand",
            Model::Baseline(Baseline::AssertTrue) => "assert-true",
            Model::OpenAi { .. } => "openai",
            Model::Command(_) => "cmd",
        };
        let mut g = Generation {
            adapter: adapter.into(),
            ..Generation::default()
        };
        if let Model::OpenAi { client, sampling } = self {
            let s = sampling.for_task(task);
            g.model_name = Some(client.config().model_name.clone());
            g.base_url = Some(client.config().base_url.clone());
            g.temperature = Some(s.temperature);
            g.top_p = Some(s.top_p);
            g.max_tokens = Some(s.max_tokens);
            g.seed = s.seed;
            g.frequency_penalty = s.frequency_penalty;
            g.presence_penalty = s.presence_penalty;
            g.stop = (!s.stop.is_empty()).then_some(s.stop);
        }
        g
    }

    /// Answers one instance, and writes into `generation` what the call reported.
    pub fn answer(
        &self,
        instance: &Instance,
        generation: &mut Generation,
    ) -> Result<String, AnswerError> {
        match self {
            Model::Oracle => Ok(oracle_answer(instance)),
            Model::Baseline(b) => Ok(baseline_answer(*b, instance)),
            Model::OpenAi { client, sampling } => {
                let messages = prompt_messages(instance);
                match client.complete(&messages, &sampling.for_task(instance.task)) {
                    Ok(c) => {
                        generation.finish_reason = c.finish_reason;
                        generation.usage = c.usage;
                        generation.attempts = c.attempts;
                        generation.http_status = Some(c.http_status);
                        Ok(c.text)
                    }
                    Err(e) => {
                        generation.attempts = e.attempts();
                        generation.http_status = e.http_status();
                        Err(e.into())
                    }
                }
            }
            Model::Command(c) => {
                generation.attempts = 1;
                run_command(c, instance)
            }
        }
    }
}

/// The instance's chat messages, or its plain prompt as one user message.
pub fn prompt_messages(instance: &Instance) -> Vec<Message> {
    if instance.messages.is_empty() {
        vec![Message {
            role: "user".into(),
            content: instance.prompt.clone(),
        }]
    } else {
        instance.messages.clone()
    }
}

/// The ground truth as the answer. The chunks of a C++ source share one reference, the whole
/// test file, and their answers are appended into one file (`scoring.join`), so the oracle
/// gives it once, as the answer to the first chunk, and answers the others with nothing.
pub fn oracle_answer(instance: &Instance) -> String {
    match instance.chunk() {
        Some(c) if c.join == JOIN_APPEND && c.index > 0 => String::new(),
        _ => instance.reference.clone(),
    }
}

fn scoring_str<'a>(instance: &'a Instance, key: &str) -> Option<&'a str> {
    instance.scoring.get(key).and_then(|v| v.as_str())
}

/// A trivial model's answer.
pub fn baseline_answer(baseline: Baseline, instance: &Instance) -> String {
    match (baseline, instance.task) {
        (Baseline::CopyOperand, Task::AssertionCloze) => scoring_str(instance, "other_operand")
            .filter(|s| !s.trim().is_empty())
            .unwrap_or("True")
            .to_string(),
        (_, Task::AssertionCloze) => "True".into(),
        // One test per chunk, named after it, so the chunks' answers appended into one
        // file do not define the same test twice.
        (_, Task::CppUnitTest) => format!(
            "#include <gtest/gtest.h>\n\nTEST(CloverBaseline, Chunk{}) {{\n  EXPECT_TRUE(true);\n}}\n",
            instance.chunk().map_or(0, |c| c.index)
        ),
        (_, Task::TargetedTest | Task::CoverageTest) => {
            let part = instance.answer_format == "part"
                || scoring_str(instance, "answer_format") == Some("part");
            if part {
                // A body; sandbox-run's assembly indents it to where the body goes.
                return "assert True\n".into();
            }
            let name = instance.problem_id.rsplit("::").next().unwrap_or("");
            match through_declaration(&instance.reference, name) {
                Some((head, indent)) => format!("{head}{indent}    assert True\n"),
                None => "def test_clover_baseline():\n    assert True\n".into(),
            }
        }
    }
}

/// The reference up to the end of test `name`'s declaration (everything before it — imports,
/// helpers, a class header — and its decorators and `def` line(s), through the line whose code
/// ends with the colon that opens its body), and the indentation of its `def`.
fn through_declaration(reference: &str, name: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = reference.split_inclusive('\n').collect();
    let is_def = |l: &str| {
        let t = l.trim_start();
        let t = t.strip_prefix("async ").unwrap_or(t);
        t.strip_prefix("def ").is_some_and(|rest| {
            rest.starts_with(&format!("{name}(")) || (name.is_empty() && rest.contains('('))
        })
    };
    let def = lines.iter().position(|l| is_def(l))?;
    let end = (def..lines.len()).find(|&i| lines[i].trim_end().ends_with(':'))?;
    let mut head: String = lines[..=end].concat();
    if !head.ends_with('\n') {
        head.push('\n');
    }
    let width = lines[def].len() - lines[def].trim_start().len();
    Some((head, " ".repeat(width)))
}

fn run_command(c: &CommandModel, instance: &Instance) -> Result<String, AnswerError> {
    use std::os::unix::process::CommandExt;
    let (program, args) = c.argv.split_first().expect("command is not empty");
    let mut child = Command::new(program)
        .args(args)
        .env("CLOVER_INSTANCE_ID", &instance.id)
        .env("CLOVER_TASK", task_name(instance.task))
        .env("CLOVER_SETTING", &instance.setting)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Its own process group, so a timeout kills whatever the command started too.
        .process_group(0)
        .spawn()
        .map_err(AnswerError::Spawn)?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = child.stdout.take().expect("piped");
    let mut stderr = child.stderr.take().expect("piped");
    let prompt = instance.prompt.clone();
    // Writing, reading and waiting happen at once: a command may print before it has read
    // all of a long prompt, and either pipe could fill.
    let writer = std::thread::spawn(move || {
        // A command that exits without reading its stdin is its own business.
        let _ = stdin.write_all(prompt.as_bytes());
    });
    let out_reader = std::thread::spawn(move || read_capped(&mut stdout));
    let err_reader = std::thread::spawn(move || read_capped(&mut stderr));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(AnswerError::Spawn)? {
            break Some(status);
        }
        if started.elapsed() > c.timeout {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = writer.join();
    let out = out_reader.join().unwrap_or_default();
    let err = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        return Err(AnswerError::CommandTimeout(c.timeout));
    };
    if !status.success() {
        let tail = String::from_utf8_lossy(&err);
        let tail = tail.trim();
        let start = tail
            .char_indices()
            .rev()
            .nth(500)
            .map(|(i, _)| i)
            .unwrap_or(0);
        return Err(AnswerError::CommandFailed {
            status: status.to_string(),
            stderr: tail[start..].to_string(),
        });
    }
    String::from_utf8(out).map_err(|_| AnswerError::NotUtf8)
}

fn read_capped(r: &mut impl Read) -> Vec<u8> {
    let mut buf = Vec::new();
    let _ = r.take(MAX_COMMAND_OUTPUT as u64).read_to_end(&mut buf);
    // Drain the rest so the command is never blocked on a full pipe.
    let _ = std::io::copy(r, &mut std::io::sink());
    buf
}

/// The wire name of a task (`assertion_cloze`, …).
pub fn task_name(task: Task) -> String {
    serde_json::to_value(task)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clover_protocol::{ExecSpec, RecordKind, SCHEMA_VERSION};

    fn instance(task: Task, reference: &str) -> Instance {
        Instance {
            kind: RecordKind::Instance,
            schema_version: SCHEMA_VERSION,
            id: "r/t.py::test_a#i0@po".into(),
            problem_id: "r/t.py::test_a".into(),
            repo: "r".into(),
            task,
            setting: "po".into(),
            answer_format: "full".into(),
            prompt: "write it".into(),
            messages: vec![],
            prompt_tokens: 3,
            context_files: vec![],
            reference: reference.into(),
            exec: ExecSpec::default(),
            scoring: Default::default(),
        }
    }

    #[test]
    fn baselines() {
        let mut i = instance(Task::AssertionCloze, "5");
        i.scoring.insert("other_operand".into(), "total".into());
        assert_eq!(baseline_answer(Baseline::CopyOperand, &i), "total");
        assert_eq!(baseline_answer(Baseline::AssertTrue, &i), "True");

        let mut i = instance(
            Task::TargetedTest,
            "import pytest\n\nclass TestX:\n    def helper(self):\n        pass\n\n    @pytest.mark.parametrize('a', [1])\n    def test_a(self,\n               a):\n        assert f(a)\n",
        );
        i.problem_id = "r/t.py::TestX::test_a".into();
        assert_eq!(
            baseline_answer(Baseline::AssertTrue, &i),
            "import pytest\n\nclass TestX:\n    def helper(self):\n        pass\n\n    @pytest.mark.parametrize('a', [1])\n    def test_a(self,\n               a):\n        assert True\n"
        );
        let mut i = instance(Task::CoverageTest, "x = 1\nassert x\n");
        i.answer_format = "part".into();
        assert_eq!(baseline_answer(Baseline::AssertTrue, &i), "assert True\n");
    }

    /// The chunks of a C++ source are appended into one file: the oracle's whole-file
    /// reference must arrive once, and the baseline's tests must not collide.
    #[test]
    fn cpp_chunks_join_into_one_valid_file() {
        let chunk = |index: u32| {
            let mut i = instance(Task::CppUnitTest, "TEST(A, B) {}\n");
            i.id = format!("r/src/a.cc#cpp_unit_test#po#{index}");
            i.scoring = serde_json::from_value(serde_json::json!(
                {"chunk_index": index, "chunk_count": 2, "join": "append"}))
            .unwrap();
            i
        };
        let (first, second) = (chunk(0), chunk(1));
        assert_eq!(
            Model::Oracle
                .answer(&first, &mut Generation::default())
                .unwrap(),
            "TEST(A, B) {}\n"
        );
        assert_eq!(
            Model::Oracle
                .answer(&second, &mut Generation::default())
                .unwrap(),
            ""
        );
        let whole = instance(Task::CppUnitTest, "TEST(A, B) {}\n");
        assert_eq!(
            Model::Oracle
                .answer(&whole, &mut Generation::default())
                .unwrap(),
            "TEST(A, B) {}\n"
        );
        let (a, b) = (
            baseline_answer(Baseline::CopyOperand, &first),
            baseline_answer(Baseline::CopyOperand, &second),
        );
        assert!(a.contains("\nTEST(CloverBaseline, Chunk0)"), "{a}");
        assert!(b.contains("\nTEST(CloverBaseline, Chunk1)"), "{b}");
        assert!(
            a.starts_with("#include <gtest/gtest.h>\n"),
            "it compiles on its own: {a}"
        );
    }

    #[test]
    fn command_model_reads_stdin_and_times_out() {
        let i = instance(Task::AssertionCloze, "5");
        let cat = CommandModel {
            argv: vec!["sh".into(), "-c".into(), "tr a-z A-Z".into()],
            timeout: Duration::from_secs(10),
        };
        assert_eq!(run_command(&cat, &i).unwrap(), "WRITE IT");
        let slow = CommandModel {
            argv: vec!["sh".into(), "-c".into(), "sleep 5 & sleep 5".into()],
            timeout: Duration::from_millis(200),
        };
        let t = Instant::now();
        assert!(matches!(
            run_command(&slow, &i),
            Err(AnswerError::CommandTimeout(_))
        ));
        assert!(t.elapsed() < Duration::from_secs(3));
        let fail = CommandModel {
            argv: vec!["sh".into(), "-c".into(), "echo oops >&2; exit 3".into()],
            timeout: Duration::from_secs(10),
        };
        let e = run_command(&fail, &i).unwrap_err().to_string();
        assert!(e.contains("oops"), "{e}");
    }
}
