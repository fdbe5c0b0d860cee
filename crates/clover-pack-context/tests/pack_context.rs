//! Runs the real `clover-pack-context` binary on calibrated records of the fixtures and reads
//! its output back through the wire types; and proves the tokenizers equal to their reference
//! implementations and the count of a prompt by its parts equal to the count of the whole.
//!
//! `tests/data/*.jsonl` are the real `clover extract | clover calibrate` output on
//! `fixtures/python` and `fixtures/cpp`, written by `tests/data/regenerate.sh`; the e2e suite
//! checks that the stages still write exactly these records. Rules that need more than the
//! fixture has (an exclusion) are tested on real records changed here.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use clover_pack_context::{
    Options, Packer, Setting, Tokenizer, CLOZE_RESERVE, MASK, WRITE_RESERVE,
};
use clover_protocol::{
    AssertionForm, CalibratedProblem, ContextTier, Exclusion, ExclusionReason, Instance,
    RecordKind, RecordReader, Response, Task, DEFAULT_MAX_LINE_BYTES,
};

fn workspace() -> PathBuf {
    clover_testkit::workspace_root()
}

/// A file of `tests/data`, or `name` itself when it is an absolute path.
fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn model() -> Option<PathBuf> {
    clover_testkit::tokenizer_model()
}

fn read_records<T: clover_protocol::Record>(bytes: &[u8]) -> Vec<T> {
    let mut reader = RecordReader::new(bytes, "output", DEFAULT_MAX_LINE_BYTES);
    let mut out = Vec::new();
    while let Some(r) = reader.next_record::<T>() {
        out.push(r.expect("valid record").1);
    }
    out
}

fn calibrated(name: &str) -> Vec<CalibratedProblem> {
    read_records(&std::fs::read(data(name)).unwrap())
}

/// Runs the binary; returns stdout, and stderr on failure.
fn pack(model: &Path, input: &str, manifest: &str, extra: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(data(input))
        .arg("--manifest")
        .arg(workspace().join(manifest))
        .arg("--tokenizer")
        .arg(model)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

const PY: (&str, &str) = ("calibrated_python.jsonl", "fixtures/python/clover.toml");
const CPP: (&str, &str) = ("calibrated_cpp.jsonl", "fixtures/cpp/clover.toml");

fn py_instances(model: &Path, extra: &[&str]) -> Vec<Instance> {
    read_records(&pack(model, PY.0, PY.1, extra))
}

fn reserve(task: Task) -> u32 {
    match task {
        Task::AssertionCloze => CLOZE_RESERVE,
        _ => WRITE_RESERVE,
    }
}

/// A response to `inst` whose text is `text`, as generate writes it.
fn response(inst: &Instance, text: &str) -> Response {
    Response {
        kind: RecordKind::Response,
        schema_version: inst.schema_version,
        id: format!("{}@oracle", inst.id),
        instance_id: inst.id.clone(),
        model: "oracle".into(),
        task: inst.task,
        setting: inst.setting.clone(),
        repo: inst.repo.clone(),
        text: text.to_string(),
        error: None,
        generation: Default::default(),
        exec: inst.exec.clone(),
        scoring: inst.scoring.clone(),
    }
}

fn str_of(v: &serde_json::Value) -> &str {
    v.as_str().unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// tokenizer

/// Real source files: the fixtures, and every `.py` of a few packages in the test venv's
/// site-packages (third-party code nobody here wrote).
fn real_files(python: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in [
        "fixtures/python/src/ledger",
        "fixtures/python/tests",
        "fixtures/cpp/src",
        "fixtures/cpp/tests",
    ] {
        let mut v: Vec<_> = std::fs::read_dir(workspace().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        v.sort();
        files.extend(v);
    }
    let site = Command::new(python)
        .args(["-c", "import sentencepiece, os; print(os.path.dirname(os.path.dirname(sentencepiece.__file__)))"])
        .output()
        .unwrap();
    assert!(site.status.success(), "the venv has no sentencepiece");
    let site = PathBuf::from(String::from_utf8(site.stdout).unwrap().trim());
    for pkg in ["sentencepiece", "_pytest/assertion", "coverage", "pluggy"] {
        let dir = site.join(pkg);
        if let Ok(rd) = std::fs::read_dir(&dir) {
            let mut v: Vec<_> = rd
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "py"))
                .collect();
            v.sort();
            files.extend(v);
        }
    }
    assert!(files.len() > 60, "only {} files", files.len());
    files
}

/// Runs a Python script with the test venv: `script` gets `args` in `sys.argv[1:]`; returns
/// its stdout lines.
fn python_lines(python: &Path, script: &str, args: &[&std::ffi::OsStr]) -> Vec<String> {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("script.py");
    std::fs::write(&path, script).unwrap();
    let out = Command::new(python).arg(&path).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The Rust tokenizer gives the ids of the reference SentencePiece implementation, token for
/// token, on real source files, and on text with literal `<s>`, `</s>`, `<unk>`, CRLF, tabs
/// and non-ASCII.
#[test]
fn tokenizer_equals_sentencepiece() {
    let Some(model) = model() else { return };
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let special = tmp.path().join("special.txt");
    std::fs::write(
        &special,
        "x = '<s>' + \"</s>\"  # <unk> [INST] tokens are text\r\n\tif a<b and c>d:\n\
         \u{a0}½ ﬁ 😀 日本語   trailing   \n\n\n<s></s>",
    )
    .unwrap();
    let mut files: Vec<PathBuf> = vec![special];
    files.extend(real_files(&python));
    let mut args: Vec<&std::ffi::OsStr> = vec![model.as_os_str()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    let expected = python_lines(
        &python,
        "import sys, json, sentencepiece as spm\n\
         sp = spm.SentencePieceProcessor(model_file=sys.argv[1])\n\
         for f in sys.argv[2:]:\n\
         \x20   text = open(f, encoding='utf-8', newline='').read()\n\
         \x20   print(json.dumps(sp.encode(text)))\n",
        &args,
    );
    let tok = Tokenizer::from_path(&model).unwrap();
    let mut bytes = 0;
    for (file, line) in files.iter().zip(&expected) {
        let expected: Vec<u32> = serde_json::from_str(line).unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        bytes += text.len();
        assert_eq!(tok.encode(&text).unwrap(), expected, "{}", file.display());
        assert_eq!(tok.count(&text).unwrap(), expected.len());
    }
    assert_eq!(expected.len(), files.len());
    eprintln!("{} files, {bytes} bytes: identical ids", files.len());
}

/// Whether the line-break rule may be applied to `b` (mirrors the tokenizer's condition).
fn starts_clean(b: &str) -> bool {
    b.chars()
        .next()
        .is_some_and(|c| !c.is_whitespace() && c != '/')
}

/// The ids of `a + b` are the ids of `a` followed by those `b` has after a line break, token
/// for token, and `count_after_newline` says how many.
fn assert_joins(tok: &Tokenizer, a: &str, b: &str, what: &str) {
    let newline = tok.encode("\n").unwrap().len();
    let whole = tok.encode(&format!("{a}{b}")).unwrap();
    let mut parts = tok.encode(a).unwrap();
    let tail = tok.encode(&format!("\n{b}")).unwrap();
    parts.extend_from_slice(&tail[newline..]);
    assert_eq!(whole, parts, "{}: {what}", tok.name());
    assert_eq!(
        tok.count_after_newline(b).unwrap(),
        Some(tail.len() - newline),
        "{what}"
    );
}

/// The rule pack-context counts prompts by (`count(a + b) = count(a) + count("\n" + b) −
/// count("\n")` when `a` ends with a line break and `b` starts with neither whitespace nor
/// `/`), token for token on real files with every built-in tokenizer: each file cut at many
/// line starts, and files joined to each other the way context blocks are.
#[test]
fn counts_add_up_at_line_breaks() {
    let Some(model) = model() else { return };
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let texts: Vec<String> = real_files(&python)
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let tokenizers = [
        Tokenizer::from_path(&model).unwrap(),
        Tokenizer::load("cl100k").unwrap(),
        Tokenizer::load("o200k").unwrap(),
    ];
    for tok in &tokenizers {
        assert!(tok.joins_at_newlines(), "{}", tok.name());
        let mut checked = 0;
        for (i, text) in texts.iter().enumerate() {
            // Every line start that may follow a break, thinned to at most 12 per file.
            let cuts: Vec<usize> = text
                .match_indices('\n')
                .map(|(at, _)| at + 1)
                .filter(|&at| starts_clean(&text[at..]))
                .collect();
            let step = cuts.len().div_ceil(12).max(1);
            for &at in cuts.iter().step_by(step) {
                assert_joins(
                    tok,
                    &text[..at],
                    &text[at..],
                    &format!("file {i} cut at {at}"),
                );
                checked += 1;
            }
            let next = &texts[(i + 1) % texts.len()];
            if text.ends_with('\n') && starts_clean(next) {
                assert_joins(tok, text, next, &format!("file {i} + the next"));
                checked += 1;
            }
        }
        assert!(checked > 500, "{}: only {checked} joints", tok.name());
        // Where the condition does not hold, no count is claimed.
        for b in [" x\n", "\tx\n", "\nx\n", "// x\n", ""] {
            assert_eq!(tok.count_after_newline(b).unwrap(), None, "{b:?}");
        }
    }
    // Why `/` is excluded: o200k's punctuation chunk takes the line breaks and slashes after
    // it, and BPE merges across the joint in some of these.
    let o200k = &tokenizers[2];
    let broken = [
        "#\n", "*/\n", ")\n", "}\n", "```\n", ";\n", ":\n", "\"\"\"\n",
    ]
    .iter()
    .flat_map(|a| ["/", "//", "///", "/*", "/x"].map(|b| (*a, format!("{b} y\n"))))
    .filter(|(a, b)| {
        o200k.count(&format!("{a}{b}")).unwrap()
            != o200k.count(a).unwrap() + o200k.count(&format!("\n{b}")).unwrap() - 1
    })
    .count();
    assert!(broken > 0, "no joint before `/` breaks the rule");
}

/// cl100k and o200k are OpenAI's: the ids tiktoken's own tests publish, and the same ids as
/// kitoken's independent BPE reading the same ranks as a `.tiktoken` file, on real files.
#[test]
fn openai_encodings_equal_published_ids_and_kitoken() {
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let cl100k = Tokenizer::load("cl100k").unwrap();
    let o200k = Tokenizer::load("o200k").unwrap();
    assert_eq!(cl100k.encode("hello world").unwrap(), [15339, 1917]);
    assert_eq!(o200k.encode("hello world").unwrap(), [24912, 2375]);
    // Special-token look-alikes are text.
    assert!(cl100k.count("<|endoftext|>").unwrap() > 1);

    let tmp = tempfile::tempdir().unwrap();
    let files = real_files(&python);
    for (name, bpe, ranks) in [
        ("cl100k", tiktoken_rs::cl100k_base().unwrap(), 100_256u32),
        ("o200k", tiktoken_rs::o200k_base().unwrap(), 199_998),
    ] {
        let mut rank_file = String::new();
        for r in 0..ranks {
            let bytes = bpe.decode_bytes(&[r]).unwrap();
            rank_file.push_str(&format!("{} {r}\n", base64(&bytes)));
        }
        let path = tmp.path().join(format!("{name}.tiktoken"));
        std::fs::write(&path, rank_file).unwrap();
        let ours = Tokenizer::load(name).unwrap();
        let kit = Tokenizer::from_path(&path).unwrap();
        for f in &files {
            let text = std::fs::read_to_string(f).unwrap();
            assert_eq!(
                ours.encode(&text).unwrap(),
                kit.encode(&text).unwrap(),
                "{name}: {}",
                f.display()
            );
        }
    }
}

/// Standard base64 with padding, for writing a `.tiktoken` rank file.
fn base64(bytes: &[u8]) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (u32::from(b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A Hugging Face `tokenizer.json` (a byte-level BPE trained on the fixtures by the Python
/// `tokenizers` package) counts as `tokenizers` does, token for token; and pack-context run with
/// it — where no line-break rule is claimed, so every prompt is counted whole — records the
/// reference's count of every prompt and keeps every budget.
#[test]
fn tokenizer_json_equals_hugging_face_tokenizers() {
    let Some(python) = clover_testkit::python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("tokenizer.json");
    let files = real_files(&python);
    let mut args: Vec<&std::ffi::OsStr> = vec![json.as_os_str()];
    args.extend(files.iter().map(|f| f.as_os_str()));
    let expected = python_lines(
        &python,
        "import sys, json\n\
         from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders\n\
         tok = Tokenizer(models.BPE())\n\
         tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)\n\
         tok.decoder = decoders.ByteLevel()\n\
         trainer = trainers.BpeTrainer(vocab_size=2000, show_progress=False,\n\
         \x20   initial_alphabet=pre_tokenizers.ByteLevel.alphabet())\n\
         tok.train(sys.argv[2:30], trainer)\n\
         tok.save(sys.argv[1])\n\
         for f in sys.argv[2:]:\n\
         \x20   text = open(f, encoding='utf-8', newline='').read()\n\
         \x20   print(json.dumps(tok.encode(text).ids))\n",
        &args,
    );
    let tok = Tokenizer::load(json.to_str().unwrap()).unwrap();
    assert!(!tok.joins_at_newlines());
    assert_eq!(expected.len(), files.len());
    for (file, line) in files.iter().zip(&expected) {
        let want: Vec<u32> = serde_json::from_str(line).unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        assert_eq!(tok.encode(&text).unwrap(), want, "{}", file.display());
    }

    let instances = py_instances(&json, &["--settings", "po,2k,4k", "--cloze-per-repo", "6"]);
    assert!(instances.iter().any(|i| !i.context_files.is_empty()));
    let prompts = tmp.path().join("prompts.jsonl");
    std::fs::write(
        &prompts,
        instances
            .iter()
            .map(|i| serde_json::to_string(&i.prompt).unwrap() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let counts = python_lines(
        &python,
        "import sys, json\n\
         from tokenizers import Tokenizer\n\
         tok = Tokenizer.from_file(sys.argv[1])\n\
         for line in open(sys.argv[2], encoding='utf-8'):\n\
         \x20   print(len(tok.encode(json.loads(line)).ids))\n",
        &[json.as_os_str(), prompts.as_os_str()],
    );
    assert_eq!(counts.len(), instances.len());
    for (inst, count) in instances.iter().zip(&counts) {
        assert_eq!(inst.prompt_tokens.to_string(), *count, "{}", inst.id);
        if let Some(n) = inst.setting.parse::<Setting>().unwrap().length() {
            assert!(inst.prompt_tokens + reserve(inst.task) <= n, "{}", inst.id);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the Python tasks

/// Everything a scorer and a sandbox rely on, on every instance of a default run.
#[test]
fn python_instances_keep_every_rule() {
    let Some(model) = model() else { return };
    let tok = Tokenizer::from_path(&model).unwrap();
    let records: HashMap<String, CalibratedProblem> = calibrated(PY.0)
        .into_iter()
        .map(|r| (r.id.clone(), r))
        .collect();
    let instances = py_instances(&model, &["--task1-template", "filled,answer-only"]);
    let mut per_task: BTreeMap<Task, usize> = BTreeMap::new();
    let mut formats: BTreeMap<(Task, String), usize> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for inst in &instances {
        *per_task.entry(inst.task).or_default() += 1;
        assert!(ids.insert(inst.id.clone()), "duplicate id {}", inst.id);
        let rec = &records[&inst.problem_id];
        assert!(
            rec.exclusion.is_none(),
            "{} comes from an excluded problem",
            inst.id
        );
        let p = rec.problem.python.as_ref().unwrap();

        // The prompt: text and messages agree, the count is exact, the budget holds.
        assert_eq!(inst.messages.len(), 2);
        assert_eq!(inst.messages[0].role, "system");
        assert_eq!(inst.messages[1].role, "user");
        assert_eq!(
            inst.prompt,
            format!(
                "{}\n\n{}",
                inst.messages[0].content, inst.messages[1].content
            )
        );
        assert_eq!(
            inst.prompt_tokens as usize,
            tok.count(&inst.prompt).unwrap(),
            "{}",
            inst.id
        );
        let setting: Setting = inst.setting.parse().unwrap();
        match setting.length() {
            None => {
                assert!(inst.context_files.is_empty(), "{}: PO has files", inst.id);
                assert!(!inst.prompt.contains("### File:"), "{}", inst.id);
            }
            Some(n) => assert!(
                inst.prompt_tokens + reserve(inst.task) <= n,
                "{}: {} tokens + reserve over {n}",
                inst.id,
                inst.prompt_tokens
            ),
        }

        // Whole files, in tier order after the required ones, never the test itself.
        let tier: HashMap<&str, ContextTier> = rec
            .tiers
            .iter()
            .map(|t| (t.path.as_str(), t.tier))
            .collect();
        let required: Vec<String> = match inst.task {
            Task::TargetedTest => vec![str_of(&inst.scoring["target"]["path"]).to_string()],
            Task::CoverageTest => {
                let mut v: Vec<String> = Vec::new();
                for b in inst.scoring["blocks"].as_array().unwrap() {
                    let path = str_of(&b["path"]).to_string();
                    if !v.contains(&path) {
                        v.push(path);
                    }
                }
                v
            }
            _ => Vec::new(),
        };
        if setting.length().is_some() {
            assert_eq!(
                &inst.context_files[..required.len()],
                &required[..],
                "{}: required files first",
                inst.id
            );
        }
        let rest = &inst.context_files[required.len().min(inst.context_files.len())..];
        let ranks: Vec<ContextTier> = rest.iter().map(|f| tier[f.as_str()]).collect();
        assert!(
            ranks.windows(2).all(|w| w[0] <= w[1]),
            "{}: tiers {ranks:?}",
            inst.id
        );
        for f in &inst.context_files {
            assert_ne!(f, &p.test_file);
            let text =
                std::fs::read_to_string(workspace().join("fixtures/python").join(f)).unwrap();
            assert!(inst.prompt.contains(&text), "{}: {f} not whole", inst.id);
        }

        // The oracle's answer — the reference, bare or in a code block as a model writes it —
        // becomes, through the assembly sandbox-run and score use, the problem file byte for
        // byte.
        for text in [
            inst.reference.clone(),
            clover_pack_context::code_block(clover_protocol::Language::Python, &inst.reference),
        ] {
            let candidate = clover_answer::assemble_candidate(&response(inst, &text))
                .unwrap_or_else(|e| panic!("{}: {e}", inst.id));
            assert_eq!(candidate.text, p.problem_text, "{}", inst.id);
        }
        assert!(inst.exec.candidate_path.starts_with("tests/tmp_cand_"));
        // Prompts name the original test file, never the scratch problem file.
        assert!(inst
            .prompt
            .contains(&format!("### Test file: {}\n", p.test_file)));
        assert!(
            !inst.prompt.contains("tmp_test_"),
            "{}: names a scratch file",
            inst.id
        );
        match (inst.task, inst.answer_format.as_str()) {
            (Task::AssertionCloze, format) => {
                let indent = str_of(&inst.scoring["indent"]);
                match (format, str_of(&inst.scoring["template"])) {
                    ("line", "filled") => {
                        assert_eq!(str_of(&inst.scoring["reference_line"]), inst.reference);
                        assert!(inst.prompt.contains("Answer with the whole assertion line"));
                    }
                    ("operand", "answer_only") => {
                        assert_eq!(str_of(&inst.scoring["reference"]), inst.reference.trim());
                        assert!(inst.prompt.contains("Answer with that expression only"));
                        assert!(inst.id.ends_with("#answer_only"), "{}", inst.id);
                        // Its filled twin: the same candidate, asked the other way.
                        let twin = inst.id.strip_suffix("#answer_only").unwrap();
                        assert!(instances.iter().any(|i| i.id == twin), "{}", inst.id);
                    }
                    other => panic!("{}: unexpected template {other:?}", inst.id),
                }
                *formats.entry((inst.task, format.to_string())).or_default() += 1;
                let masked = str_of(&inst.scoring["masked_line"]);
                assert_eq!(
                    masked.replacen(MASK, str_of(&inst.scoring["reference"]), 1),
                    str_of(&inst.scoring["reference_line"])
                );
                // The masked line is the last code shown: nothing of the suffix follows it.
                let shown = format!("{}{indent}{masked}\n```", inst.exec.prefix);
                assert!(inst.prompt.contains(&shown), "{}", inst.id);
                let side = str_of(&inst.scoring["masked_side"]);
                assert!(["left", "right", "operand"].contains(&side));
                assert_eq!(
                    str_of(&inst.scoring["form"]) == "unary",
                    side == "operand" && inst.scoring["other_operand"].is_null()
                );
                assert_eq!(inst.exec.selectors.len(), 1);
            }
            (_, format) => {
                assert!(["part", "full"].contains(&format), "{}", inst.id);
                assert_eq!(str_of(&inst.scoring["answer_format"]), format);
                assert!(inst.id.ends_with(&format!("#{format}")), "{}", inst.id);
                // Both formats show the setup code and the declaration (the paper's s and f).
                let split = p.problem_text.len() - p.body.len();
                assert!(
                    inst.prompt
                        .contains(&format!("```python\n{}```", &p.problem_text[..split])),
                    "{}: setup and declaration not shown",
                    inst.id
                );
                if format == "part" {
                    assert!(inst.exec.selectors[0].starts_with(&inst.exec.candidate_path));
                    assert!(inst.prompt.contains("Answer with the function body only"));
                } else {
                    assert_eq!(inst.reference, p.problem_text);
                    assert!(inst.exec.prefix.is_empty() && inst.exec.selectors.is_empty());
                    assert!(inst.prompt.contains("Answer with the whole file"));
                }
                *formats.entry((inst.task, format.to_string())).or_default() += 1;
            }
        }
    }
    // Every write task is built in both formats, and Task I in both templates, for the same
    // problems.
    for (task, a, b) in [
        (Task::TargetedTest, "part", "full"),
        (Task::CoverageTest, "part", "full"),
        (Task::AssertionCloze, "line", "operand"),
    ] {
        let (a, b) = (
            formats[&(task, a.to_string())],
            formats[&(task, b.to_string())],
        );
        assert!(a > 0 && a == b, "{task:?}: {a} and {b}");
    }
    // Fixture facts: 6 problems own unique blocks, so Task III has 6 × 2 settings (64k and
    // 128k, the paper's only ones for it) × 2 formats.
    assert_eq!(per_task[&Task::CoverageTest], 6 * 2 * 2, "{per_task:?}");
    assert!(per_task[&Task::AssertionCloze] > 0 && per_task[&Task::TargetedTest] > 0);
}

/// Task II problem-only prompts name the target but neither its file nor its lines (the
/// paper's PO gives "not even the file name"); with context they name both.
#[test]
fn targeted_po_names_no_file() {
    let Some(model) = model() else { return };
    let instances = py_instances(&model, &["--tasks", "targeted_test", "--settings", "po,8k"]);
    let mut seen = BTreeSet::new();
    for inst in &instances {
        let target = &inst.scoring["target"];
        let (name, path) = (str_of(&target["name"]), str_of(&target["path"]));
        let place = format!(
            "defined in `{path}` (lines {}-{})",
            target["start_line"], target["end_line"]
        );
        assert!(inst.prompt.contains(&format!("`{name}`")), "{}", inst.id);
        if inst.setting == "po" {
            assert!(!inst.prompt.contains(path), "{}: PO names {path}", inst.id);
            assert!(!inst.prompt.contains("(lines "), "{}", inst.id);
        } else {
            assert!(inst.prompt.contains(&place), "{}", inst.id);
        }
        seen.insert(inst.setting.clone());
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
}

/// A Task III prompt marks exactly the lines the scorer requires (`blocks[].lines`), each
/// line numbered as in its file; lines of a block no test must run are shown unmarked. The
/// fixture's inventory block (lines 86-99) has one such line, 96 (an `else:`).
#[test]
fn coverage_prompts_mark_the_required_lines() {
    let Some(model) = model() else { return };
    let instances = py_instances(&model, &["--tasks", "coverage_test", "--settings", "po"]);
    assert!(!instances.is_empty());
    let mut unmarked = 0;
    for inst in &instances {
        assert!(!inst.prompt.contains("every line of each"), "{}", inst.id);
        let prompt_lines: Vec<&str> = inst.prompt.lines().collect();
        for b in inst.scoring["blocks"].as_array().unwrap() {
            let (start, end) = (
                b["start_line"].as_u64().unwrap(),
                b["end_line"].as_u64().unwrap(),
            );
            let required: Vec<u64> = b["lines"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|r| r[0].as_u64().unwrap()..=r[1].as_u64().unwrap())
                .collect();
            let width = end.to_string().len();
            for n in start..=end {
                let marked = required.contains(&n);
                let gutter = format!("{} {n:>width$} |", if marked { '>' } else { ' ' });
                assert!(
                    prompt_lines.iter().any(|l| l.starts_with(&gutter)),
                    "{}: line {n} of {} not shown as `{gutter}`",
                    inst.id,
                    b["path"]
                );
                unmarked += usize::from(!marked);
            }
        }
    }
    assert!(
        unmarked > 0,
        "the fixture has a block line no test must run"
    );
}

/// C++ fine-tuning data: the chunks of a source share its test file, and their answers are
/// appended, so the file goes with the first chunk only — every TEST of a pair's test file is
/// in the appended assistant turns exactly once (the fixture's tokenizer.cc has 2 chunks).
#[test]
fn sft_chunks_share_out_the_reference() {
    let Some(model) = model() else { return };
    let extra = ["--shot-max-tokens", "100000"];
    let instances: Vec<Instance> = read_records(&pack(&model, CPP.0, CPP.1, &extra));
    let out = pack(
        &model,
        CPP.0,
        CPP.1,
        &[&extra[..], &["--format", "sft"]].concat(),
    );
    let examples: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tests = |text: &str| {
        text.lines()
            .filter(|l| l.starts_with("TEST(") || l.starts_with("TEST_F("))
            .count()
    };
    let mut chunked = 0;
    for rec in calibrated(CPP.0) {
        let c = rec.problem.cpp.as_ref().unwrap();
        let of_pair: Vec<&serde_json::Value> = examples
            .iter()
            .filter(|e| str_of(&e["id"]).starts_with(&format!("{}#", rec.id)))
            .collect();
        let appended: String = of_pair
            .iter()
            .map(|e| str_of(&e["messages"][2]["content"]).to_string())
            .collect();
        assert!(tests(&c.unit_test) > 0, "{}", rec.id);
        assert_eq!(tests(&appended), tests(&c.unit_test), "{}", rec.id);
        let chunks = instances.iter().filter(|i| i.problem_id == rec.id).count();
        assert_eq!(of_pair.len(), 1, "{}: {chunks} chunks", rec.id);
        assert!(str_of(&of_pair[0]["id"]).ends_with("#0"));
        chunked += usize::from(chunks > 1);
    }
    assert!(chunked > 0, "the fixture has a source of several chunks");
}

/// `--sample N`: N problems of the whole input, the same for a seed whatever the input
/// order, another for another seed; a C++ pair keeps all its chunks; stdin is refused.
#[test]
fn sample_is_seeded_and_order_free() {
    let Some(model) = model() else { return };
    let problems = |bytes: &[u8]| {
        read_records::<Instance>(bytes)
            .into_iter()
            .map(|i| i.problem_id)
            .collect::<BTreeSet<_>>()
    };
    let args = [
        "--tasks",
        "coverage_test,targeted_test",
        "--settings",
        "po",
        "--sample",
        "8",
    ];
    let a = pack(&model, PY.0, PY.1, &args);
    assert_eq!(a, pack(&model, PY.0, PY.1, &args), "not deterministic");
    let chosen = problems(&a);
    assert!(!chosen.is_empty() && chosen.len() <= 8, "{chosen:?}");
    // The same records in reverse order give the same sample.
    let tmp = tempfile::tempdir().unwrap();
    let reversed = tmp.path().join("reversed.jsonl");
    let text = std::fs::read_to_string(data(PY.0)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.reverse();
    std::fs::write(&reversed, lines.join("\n") + "\n").unwrap();
    let r = pack(&model, reversed.to_str().unwrap(), PY.1, &args);
    assert_eq!(problems(&r), chosen);
    // Without --sample the same tasks hold more problems: the sample left some out.
    let all = problems(&pack(&model, PY.0, PY.1, &args[..4]));
    assert!(all.len() > 8);
    let other_seed = pack(&model, PY.0, PY.1, &[&args[..], &["--seed", "3"]].concat());
    assert_ne!(
        problems(&other_seed),
        chosen,
        "another seed, another sample"
    );

    let cpp = read_records::<Instance>(&pack(&model, CPP.0, CPP.1, &["--sample", "1"]));
    let pairs: BTreeSet<&str> = cpp.iter().map(|i| i.problem_id.as_str()).collect();
    assert_eq!(pairs.len(), 1);
    let rec = calibrated(CPP.0)
        .into_iter()
        .find(|r| pairs.contains(r.id.as_str()))
        .unwrap();
    assert_eq!(cpp.len(), rec.problem.cpp.unwrap().chunks.len().max(1));

    let out = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .args(["--sample", "2", "--manifest"])
        .arg(workspace().join(PY.1))
        .arg("--tokenizer")
        .arg(&model)
        .stdin(std::fs::File::open(data(PY.0)).unwrap())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs an input file"));
}

/// A problem calibrate excluded yields no instance. The fixture's records are all kept (its
/// flaky test is left out of them), so the exclusion is put on real records here: those of
/// every problem that had a Task III instance.
#[test]
fn excluded_problems_yield_no_instances() {
    let Some(model) = model() else { return };
    let args = ["--settings", "po", "--tasks", "coverage_test"];
    let kept = py_instances(&model, &args);
    let covered: BTreeSet<String> = kept.iter().map(|i| i.problem_id.clone()).collect();
    assert!(!covered.is_empty());
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("excluded.jsonl");
    let mut text = String::new();
    for mut r in calibrated(PY.0) {
        if covered.contains(&r.id) {
            r.exclusion = Some(Exclusion {
                reason: ExclusionReason::Flaky,
                detail: "outcome changed between runs: passed, failed".into(),
            });
        }
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    std::fs::write(&input, text).unwrap();
    let out: Vec<Instance> = read_records(&pack(&model, input.to_str().unwrap(), PY.1, &args));
    assert!(out.is_empty(), "{} instances", out.len());
    // A Python problem's tasks are made of its ground truth's run: judge-only is for C++.
    let judge_only = [&args[..], &["--judge-only-excluded"]].concat();
    let out: Vec<Instance> =
        read_records(&pack(&model, input.to_str().unwrap(), PY.1, &judge_only));
    assert!(out.is_empty(), "{} instances", out.len());
}

/// `--judge-only-excluded`: a C++ pair calibrate excluded is built, marked judge-only with
/// its exclusion reason; it is no other pair's demonstration, so every other instance is the
/// same byte for byte as without the flag; `--sample` draws from it too; and it makes no
/// fine-tuning example. The fixture's pairs all compile and pass, so the exclusion is put on
/// a real record here, as calibrate writes one (no coverage, no tiers).
#[test]
fn excluded_cpp_pairs_are_built_judge_only_when_asked() {
    let Some(model) = model() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("excluded.jsonl");
    let mut text = String::new();
    let mut excluded = String::new();
    for mut r in calibrated(CPP.0) {
        if r.id.ends_with("ring_buffer.cc") {
            r.exclusion = Some(Exclusion {
                reason: ExclusionReason::CompileError,
                detail: "tests/ring_buffer_test.cc:3: error: 'RingBuffer' was not declared".into(),
            });
            r.base.clear();
            r.empty.clear();
            r.tiers.clear();
            r.runs.clear();
            excluded = r.id.clone();
        }
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    assert!(!excluded.is_empty(), "the fixture has a ring_buffer pair");
    std::fs::write(&input, text).unwrap();
    let input = input.to_str().unwrap();
    // Every pair short enough to be a demonstration, so the excluded one would be picked.
    let shots = ["--shot-max-tokens", "100000"];
    let lines = |bytes: Vec<u8>| -> BTreeMap<String, String> {
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| {
                let i: Instance = serde_json::from_str(l).unwrap();
                (i.id, l.to_string())
            })
            .collect()
    };
    let without = lines(pack(&model, input, CPP.1, &shots));
    assert!(!without.is_empty());
    assert!(without.keys().all(|id| !id.starts_with(&excluded)));
    let flag = [&shots[..], &["--judge-only-excluded"]].concat();
    let with = lines(pack(&model, input, CPP.1, &flag));
    let judged: Vec<Instance> = with
        .iter()
        .filter(|(id, _)| !without.contains_key(*id))
        .map(|(_, l)| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!judged.is_empty(), "no instance of the excluded pair");
    for i in &judged {
        assert_eq!(i.problem_id, excluded);
        assert_eq!(i.judge_only(), Some("compile_error"), "{}", i.id);
        assert_eq!(i.task, Task::CppUnitTest);
        assert!(i.reference.contains("TEST"), "the judge's ground truth");
        assert!(
            i.prompt.contains("### Source: src/ring_buffer.cc"),
            "{}",
            i.prompt
        );
    }
    for (id, line) in &without {
        assert_eq!(with.get(id), Some(line), "{id} changed with the flag");
    }
    for line in with.values() {
        let i: Instance = serde_json::from_str(line).unwrap();
        let shots = i.scoring["shots"].as_array().unwrap();
        assert!(
            shots.iter().all(|s| str_of(s) != excluded),
            "{}: the judge-only pair is a demonstration",
            i.id
        );
        assert_eq!(i.judge_only().is_some(), i.problem_id == excluded);
    }

    // The sample's population holds the excluded pair only with the flag.
    let pairs = |extra: &[&str]| -> BTreeSet<String> {
        read_records::<Instance>(&pack(&model, input, CPP.1, extra))
            .into_iter()
            .map(|i| i.problem_id)
            .collect()
    };
    let all = calibrated(CPP.0).len();
    assert_eq!(pairs(&["--sample", "9"]).len(), all - 1);
    let sampled = pairs(&["--sample", "9", "--judge-only-excluded"]);
    assert_eq!(sampled.len(), all);
    assert!(sampled.contains(&excluded));

    let out = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(input)
        .arg("--manifest")
        .arg(workspace().join(CPP.1))
        .arg("--tokenizer")
        .arg(&model)
        .args(["--judge-only-excluded", "--format", "sft"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no fine-tuning example"), "{stderr}");
}

/// Task I: no kept reference occurs in more than 1% of the candidates; caps hold.
#[test]
fn cloze_frequency_filter_and_caps() {
    let Some(model) = model() else { return };
    let records = calibrated(PY.0);
    let mut refs: HashMap<String, usize> = HashMap::new();
    let mut total = 0;
    for r in records.iter().filter(|r| r.exclusion.is_none()) {
        for s in &r.problem.python.as_ref().unwrap().assertions {
            let n = if s.form == AssertionForm::Unary { 1 } else { 2 };
            for o in s.operands.iter().take(n) {
                *refs.entry(o.text.trim().to_string()).or_default() += 1;
                total += 1;
            }
        }
    }
    let frequent: Vec<&String> = refs
        .iter()
        .filter(|(_, &n)| n * 100 > total)
        .map(|(r, _)| r)
        .collect();
    assert!(
        !frequent.is_empty(),
        "the fixture has frequent references to drop"
    );
    let all = py_instances(
        &model,
        &[
            "--settings",
            "po",
            "--cloze-per-repo",
            "1000",
            "--tasks",
            "assertion_cloze",
        ],
    );
    for inst in &all {
        let r = str_of(&inst.scoring["reference"]);
        assert!(
            !frequent.iter().any(|f| f.as_str() == r),
            "{r} is too frequent"
        );
    }
    let rare = refs.values().filter(|&&n| n * 100 <= total).sum::<usize>();
    assert_eq!(
        all.len(),
        rare,
        "every rare candidate is drafted when the cap allows"
    );

    let capped = py_instances(
        &model,
        &[
            "--settings",
            "po,8k",
            "--cloze-per-repo",
            "7",
            "--targeted-per-repo",
            "3",
            "--coverage-per-repo",
            "2",
        ],
    );
    let distinct = |task: Task| {
        capped
            .iter()
            .filter(|i| i.task == task && i.setting == "po")
            .map(|i| {
                (
                    i.problem_id.clone(),
                    i.id.rsplit('#').next().unwrap().to_string(),
                )
            })
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(distinct(Task::AssertionCloze).len(), 7);
    let targeted: BTreeSet<_> = distinct(Task::TargetedTest)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(targeted.len(), 3);
    let covered: BTreeSet<_> = distinct(Task::CoverageTest)
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(covered.len(), 2);
    // Both answer formats for each targeted problem, in both settings.
    assert_eq!(
        capped
            .iter()
            .filter(|i| i.task == Task::TargetedTest)
            .count(),
        3 * 2 * 2
    );
}

/// Length-proportional sampling, through the builder: over many seeds with a cap of one,
/// the chosen references' mean length is the length-weighted mean (Σl²/Σl), not the plain
/// mean. The two differ by far more than the tolerance on this fixture.
#[test]
fn cloze_samples_proportional_to_reference_length() {
    let Some(model) = model() else { return };
    let tok = Tokenizer::from_path(&model).unwrap();
    let records: Vec<CalibratedProblem> = calibrated(PY.0)
        .into_iter()
        .filter(|r| r.exclusion.is_none())
        .collect();
    let repos =
        clover_manifest::RepoConfig::resolve(Some(&workspace().join(PY.1)), None, None).unwrap();
    let base = Options {
        tasks: vec![Task::AssertionCloze],
        settings: Some(vec![Setting::ProblemOnly]),
        cloze_per_repo: 1000,
        ..Options::default()
    };
    let lengths = |opts: Options| {
        let mut packer = Packer::new(&tok, opts, repos.clone());
        let mut out = Vec::new();
        packer
            .pack_repo("pyfix", &mut records.clone(), &mut |_, _| true, &mut |i| {
                out.push(str_of(&i.scoring["reference"]).chars().count() as f64);
                Ok(())
            })
            .unwrap();
        out
    };
    let pool = lengths(base.clone());
    let plain = pool.iter().sum::<f64>() / pool.len() as f64;
    let weighted = pool.iter().map(|l| l * l).sum::<f64>() / pool.iter().sum::<f64>();
    let mut chosen = Vec::new();
    for seed in 0..400 {
        chosen.extend(lengths(Options {
            seed,
            cloze_per_repo: 1,
            ..base.clone()
        }));
    }
    let mean = chosen.iter().sum::<f64>() / chosen.len() as f64;
    assert!(weighted - plain > 4.0, "plain {plain}, weighted {weighted}");
    assert!(
        (mean - weighted).abs() < 2.0,
        "mean {mean}, weighted {weighted}, plain {plain}"
    );
}

/// `--shard` keeps the chunks of a C++ source together (it hashes the file's id, as generate
/// and sandbox-run do), so a per-shard `pack-context | generate | sandbox-run` sees whole
/// files; the shards still add up to the whole.
#[test]
fn cpp_shards_keep_a_sources_chunks_together() {
    let Some(model) = model() else { return };
    let whole: Vec<Instance> = read_records(&pack(&model, CPP.0, CPP.1, &[]));
    assert!(whole.iter().any(|i| i.chunk().is_some_and(|c| c.count > 1)));
    let ids = |v: &[Instance]| v.iter().map(|i| i.id.clone()).collect::<BTreeSet<_>>();
    for n in 2..=5 {
        let mut joined = BTreeSet::new();
        let mut holder: BTreeMap<String, u32> = BTreeMap::new();
        for k in 0..n {
            let part: Vec<Instance> = read_records(&pack(
                &model,
                CPP.0,
                CPP.1,
                &["--shard", &format!("{k}/{n}")],
            ));
            for i in &part {
                let at = *holder.entry(i.file_instance_id().to_string()).or_insert(k);
                assert_eq!(at, k, "{n} shards: {} is in shards {at} and {k}", i.id);
            }
            joined.extend(ids(&part));
        }
        assert_eq!(joined, ids(&whole), "{n} shards");
    }
}

/// Two runs are byte-identical; another seed changes the selection; shards add up.
#[test]
fn deterministic_seeded_and_shardable() {
    let Some(model) = model() else { return };
    let args = ["--cloze-per-repo", "10", "--settings", "po,4k,16k"];
    let a = pack(&model, PY.0, PY.1, &args);
    let b = pack(&model, PY.0, PY.1, &args);
    assert!(a == b, "two runs differ");
    let other = pack(&model, PY.0, PY.1, &[&args[..], &["--seed", "7"]].concat());
    let ids = |bytes: &[u8]| {
        read_records::<Instance>(bytes)
            .into_iter()
            .filter(|i| i.task == Task::AssertionCloze)
            .map(|i| i.id)
            .collect::<BTreeSet<_>>()
    };
    assert_ne!(ids(&a), ids(&other), "the seed changes the selection");

    let lines = |bytes: &[u8]| {
        String::from_utf8(bytes.to_vec())
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect::<BTreeSet<_>>()
    };
    let s0 = pack(
        &model,
        PY.0,
        PY.1,
        &[&args[..], &["--shard", "0/2"]].concat(),
    );
    let s1 = pack(
        &model,
        PY.0,
        PY.1,
        &[&args[..], &["--shard", "1/2"]].concat(),
    );
    assert!(!s0.is_empty() && !s1.is_empty());
    let mut joined = lines(&s0);
    joined.extend(lines(&s1));
    assert_eq!(joined, lines(&a));
}

/// `--format sft`: the instance's messages plus the ground truth as the assistant turn, one
/// split per repository.
#[test]
fn sft_export() {
    let Some(model) = model() else { return };
    let out = pack(
        &model,
        PY.0,
        PY.1,
        &["--format", "sft", "--settings", "po", "--split", "0,1,0"],
    );
    let lines: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert_eq!(l["split"], "eval");
        let roles: Vec<&str> = l["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| str_of(&m["role"]))
            .collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
        assert!(str_of(&l["messages"][2]["content"]).starts_with("```python\n"));
    }
}

/// `--format sft -o FILE` over two repositories of very unequal size (the Python fixture's
/// hundreds of examples, the C++ fixture's few): the split weighs examples, so the big one is
/// train; each split is also a file of its own; stderr gives the sizes and warns that test is
/// empty and eval far below its share. Before, the split went by a hash of each repository's
/// name whatever its size, and said nothing.
#[test]
fn sft_split_weighs_examples_writes_a_file_per_split_and_warns_when_degenerate() {
    let Some(model) = model() else { return };
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("calibrated.jsonl");
    let both = [PY.0, CPP.0]
        .iter()
        .map(|f| std::fs::read_to_string(data(f)).unwrap())
        .collect::<String>();
    std::fs::write(&input, both).unwrap();
    let out = dir.path().join("sft.jsonl");
    let run = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(&input)
        .args(["--repo", "fixtures/python", "--repo", "fixtures/cpp"])
        .arg("--tokenizer")
        .arg(&model)
        .args(["--format", "sft", "--settings", "po", "-o"])
        .arg(&out)
        .current_dir(workspace())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");

    let read = |p: &Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let all = read(&out);
    let of = |split: &str| read(&dir.path().join(format!("sft.{split}.jsonl")));
    let (train, eval, test) = (of("train"), of("eval"), of("test"));
    assert!(train
        .iter()
        .all(|e| e["repo"] == "pyfix" && e["split"] == "train"));
    assert!(
        !eval.is_empty()
            && eval
                .iter()
                .all(|e| e["repo"] == "cppfix" && e["split"] == "eval")
    );
    assert!(test.is_empty());
    assert_eq!(train.len() + eval.len(), all.len());
    let in_all: Vec<&serde_json::Value> = all.iter().filter(|e| e["split"] == "train").collect();
    assert_eq!(in_all.len(), train.len());
    assert!(
        !dir.path().join("sft.spool.jsonl").exists(),
        "the spool is removed"
    );

    let pct = |n: usize| format!("{:.1}%", 100.0 * n as f64 / all.len() as f64);
    let sizes = format!(
        "sft split by repository, weighted by examples: train {} ({}, 1 repository), eval {} \
         ({}, 1 repository), test 0 (0.0%, 0 repositories)",
        train.len(),
        pct(train.len()),
        eval.len(),
        pct(eval.len())
    );
    assert!(stderr.contains(&sizes), "{stderr}");
    assert!(stderr.contains("warning: split `eval` holds"), "{stderr}");
    assert!(
        stderr.contains("warning: split `test` is empty (its share is 10%)"),
        "{stderr}"
    );

    // Decided over every example at the end: no resume, no shards.
    let again = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(&input)
        .args([
            "--repo",
            "fixtures/python",
            "--repo",
            "fixtures/cpp",
            "--tokenizer",
        ])
        .arg(&model)
        .args(["--format", "sft", "--shard", "0/2"])
        .current_dir(workspace())
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("cannot be resumed or sharded"));
}

/// C++: one instance per chunk, the join rule, few-shot demonstrations never of the pair
/// itself.
#[test]
fn cpp_chunks_and_shots() {
    let Some(model) = model() else { return };
    // The fixture's tokenizer.cc pair is longer than the default demonstration limit.
    let default: Vec<Instance> = read_records(&pack(&model, CPP.0, CPP.1, &[]));
    assert!(default
        .iter()
        .all(|i| !i.scoring["shots"].as_array().unwrap().is_empty()));
    let instances: Vec<Instance> = read_records(&pack(
        &model,
        CPP.0,
        CPP.1,
        &["--shot-max-tokens", "100000"],
    ));
    let records = calibrated(CPP.0);
    let chunks: usize = records
        .iter()
        .map(|r| r.problem.cpp.as_ref().unwrap().chunks.len())
        .sum();
    assert_eq!(instances.len(), chunks);
    for inst in &instances {
        assert_eq!(inst.task, Task::CppUnitTest);
        assert_eq!(inst.setting, "po");
        assert_eq!(inst.scoring["join"], "append");
        let focal = str_of(&inst.scoring["focal_source"]);
        assert!(inst.problem_id.ends_with(focal));
        let shots = inst.scoring["shots"].as_array().unwrap();
        assert_eq!(shots.len(), 2);
        assert!(shots.iter().all(|s| str_of(s) != inst.problem_id));
        // The candidate stands where the ground truth stands, under its name.
        let record = records.iter().find(|r| r.id == inst.problem_id).unwrap();
        assert_eq!(
            inst.exec.candidate_path,
            record.problem.cpp.as_ref().unwrap().test_path
        );
        assert!(inst.prompt.contains("### Example 2"));
    }
    let tk: Vec<&Instance> = instances
        .iter()
        .filter(|i| i.problem_id.ends_with("tokenizer.cc"))
        .collect();
    assert_eq!(tk.len(), 2);
    assert!(tk.iter().all(|i| i.scoring["chunk_count"] == 2));
    assert_eq!(
        tk[0].exec.candidate_path, tk[1].exec.candidate_path,
        "chunks join in one file"
    );
}

/// A tokenizer model that is not there: the message names the ways out, the built-in
/// encodings among them (a user of an installed pack-context did not know them).
#[test]
fn a_missing_tokenizer_says_how_to_get_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(data(PY.0))
        .arg("--manifest")
        .arg(workspace().join(PY.1))
        .args(["--tokenizer", "/nonexistent/tokenizer.model"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cargo xtask setup")
            && stderr.contains("--tokenizer cl100k")
            && stderr.contains("--tokenizer o200k"),
        "{stderr}"
    );
}

/// `--repo` repeats, as in calibrate and sandbox-run: the Python and the C++ fixture in one
/// run give what each gives alone.
#[test]
fn repo_repeats_like_the_other_stages() {
    let Some(model) = clover_testkit::tokenizer_model() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let both = dir.path().join("both.jsonl");
    let text = std::fs::read_to_string(data(PY.0)).unwrap()
        + &std::fs::read_to_string(data(CPP.0)).unwrap();
    std::fs::write(&both, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clover-pack-context"))
        .arg(&both)
        .arg("--repo")
        .arg(workspace().join("fixtures/python"))
        .arg("--repo")
        .arg(workspace().join("fixtures/cpp"))
        .arg("--tokenizer")
        .arg(&model)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = |bytes: &[u8]| {
        let mut l: Vec<String> = String::from_utf8_lossy(bytes)
            .lines()
            .map(String::from)
            .collect();
        l.sort();
        l
    };
    let mut alone = pack(&model, PY.0, PY.1, &[]);
    alone.extend(pack(&model, CPP.0, CPP.1, &[]));
    assert_eq!(lines(&out.stdout), lines(&alone));
}
