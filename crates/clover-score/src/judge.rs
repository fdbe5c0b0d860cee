//! LLM-as-judge, as CPP-UT-Bench evaluates: a judge model sees the ground truth and two
//! answers, A and B, and says which is closer to the ground truth.
//!
//! Two readings ([`JudgeOrder`]). clover's (`both`, the headline): every pair is asked in both
//! orders so position bias cancels; a model wins a pair only when both orders pick it, and a
//! disagreement or a tie answer is a tie. The paper's (`single`): each pair is asked once,
//! the first model (by name) in position A — or, with a seed, A and B swapped for a seeded
//! half of the pairs — and the answer counts as it is.
//!
//! A pair with a failed request or an answer the judge did not give in a readable form has no
//! verdict: it is `undecided`, counted apart and in no rate (it used to pass as a tie).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use clover_generate::{task_name, ChatClient, Sampling};
use clover_protocol::{Message, Task};
use serde_json::{json, Value};

/// One model's answer to one instance, kept for judging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeItem {
    pub instance_id: String,
    pub task: Task,
    pub setting: String,
    pub model: String,
    pub answer: String,
    /// The instance is judge-only (outcome `judge_only`): its ground truth never ran, so the
    /// judge is all that scores it.
    pub judge_only: bool,
}

/// What the judge said of one ordered pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    A,
    B,
    Tie,
}

/// Win/tie/loss of `model` against `opponent` on a task in a setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JudgeRow {
    pub model: String,
    pub opponent: String,
    pub task: Task,
    pub setting: String,
    pub win: u64,
    pub tie: u64,
    pub loss: u64,
    /// Pairs without a verdict because a request failed or an answer could not be read:
    /// counted apart, in no rate and not in `n`.
    pub undecided: u64,
    /// Requests per pair: 2 (both orders) or 1 (the paper's single order).
    pub orders: u8,
    /// Pairs (decided or not) on judge-only instances, whose ground truth calibrate could not
    /// run: they count here as any other pair, and in no execution metric.
    pub judge_only: u64,
}

impl JudgeRow {
    pub fn n(&self) -> u64 {
        self.win + self.tie + self.loss
    }

    pub fn rate(&self, k: u64) -> f64 {
        if self.n() == 0 {
            0.0
        } else {
            k as f64 / self.n() as f64
        }
    }

    /// The 95% Wilson score interval of the win rate.
    pub fn win_ci(&self) -> (f64, f64) {
        wilson(self.win, self.n())
    }

    pub fn to_json(&self) -> Value {
        let r = |v: f64| json!((v * 1e6).round() / 1e6);
        let (lo, hi) = self.win_ci();
        let (llo, lhi) = wilson(self.loss, self.n());
        json!({
            "model": self.model,
            "opponent": self.opponent,
            "task": task_name(self.task),
            "setting": self.setting,
            "n": self.n(),
            "win": self.win,
            "tie": self.tie,
            "loss": self.loss,
            "undecided": self.undecided,
            "orders": self.orders,
            "judge_only": self.judge_only,
            "win_rate": r(self.rate(self.win)),
            "tie_rate": r(self.rate(self.tie)),
            "loss_rate": r(self.rate(self.loss)),
            "win_ci95": [r(lo), r(hi)],
            "loss_ci95": [r(llo), r(lhi)],
        })
    }
}

/// The 95% Wilson score interval of `k` successes in `n` trials; `(0, 1)` when `n` is 0.
pub fn wilson(k: u64, n: u64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = 1.959_963_984_540_054_f64;
    let n = n as f64;
    let p = k as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((center - half).max(0.0), (center + half).min(1.0))
}

/// Reads the judge's answer: `A`, `B` or `TIE` (also `[[A]]`, `Answer: B`, `**A**`, …).
pub fn parse_choice(text: &str) -> Option<Choice> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_uppercase())
        .collect();
    let pick = |w: &str| match w {
        "A" => Some(Choice::A),
        "B" => Some(Choice::B),
        "TIE" | "C" => Some(Choice::Tie),
        _ => None,
    };
    // A one-word answer is the common case; otherwise the word after "answer"/"verdict",
    // else the first letter-word of the text, else the last.
    if let [one] = words.as_slice() {
        return pick(one);
    }
    for pair in words.windows(2) {
        if matches!(
            pair[0].as_str(),
            "ANSWER" | "VERDICT" | "CHOICE" | "RESPONSE" | "IS"
        ) {
            if let Some(c) = pick(&pair[1]) {
                return Some(c);
            }
        }
    }
    words
        .first()
        .and_then(|w| pick(w))
        .or_else(|| words.last().and_then(|w| pick(w)))
}

/// The judge's prompt for one ordered pair.
pub fn judge_messages(task: Task, reference: &str, a: &str, b: &str) -> Vec<Message> {
    let what = match task {
        Task::CppUnitTest => "C++ GoogleTest unit tests",
        _ => "Python pytest tests",
    };
    vec![
        Message {
            role: "system".into(),
            content: "You are an impartial expert reviewer of unit tests.".into(),
        },
        Message {
            role: "user".into(),
            content: format!(
                "Below are a ground-truth set of {what} and two candidate answers, A and B, \
written for the same code. Which candidate is closer to the ground truth in what it tests \
(the functions, cases and edge cases exercised) and in how well it tests them?\n\n\
### Ground truth\n```\n{reference}\n```\n\n### Candidate A\n```\n{a}\n```\n\n\
### Candidate B\n```\n{b}\n```\n\n\
Answer with exactly one word: A, B, or TIE."
            ),
        },
    ]
}

/// How many times, and in which order, each pair is put to the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JudgeOrder {
    /// Both orders; a win needs both (clover's reading, the default).
    Both,
    /// Once, as the paper does: the first model (by name) in position A, or, with
    /// `swap_seed`, A and B swapped for the pairs a seeded hash picks.
    Single { swap_seed: Option<u64> },
}

/// The judge model and how hard to drive it.
#[derive(Debug, Clone)]
pub struct Judge {
    pub client: ChatClient,
    pub concurrency: usize,
    pub order: JudgeOrder,
}

/// What the judge said to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Said {
    Choice(Choice),
    /// An answer that names none of A, B and TIE.
    Unreadable,
    /// The request failed (after its retries).
    Failed,
}

/// One request: a pair in one order (`swapped`: the pair's second model is shown as A).
struct Job {
    pair: usize,
    swapped: bool,
    messages: Vec<Message>,
}

/// Whether the single order shows pair (`instance`, `a`, `b`) swapped, for `seed`: a hash,
/// so the choice is the same on every machine and in every run.
fn swapped(seed: u64, instance: &str, a: &str, b: &str) -> bool {
    let key = format!("{seed}\u{0}{instance}\u{0}{a}\u{0}{b}");
    clover_protocol::fnv1a64(key.as_bytes()) & 1 == 1
}

/// What judging saw overall: requests that failed and answers that could not be read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JudgeFailures {
    pub failed_requests: u64,
    pub unreadable_answers: u64,
}

/// Judges every pair of models that answered the same instance, in the order `judge.order`
/// says. Models in `exclude` (the oracle, whose answer *is* the ground truth) are left out;
/// instances with no reference are skipped and counted in the second value returned; the
/// third says how many requests failed and answers could not be read.
pub fn run_judge(
    judge: &Judge,
    items: &[JudgeItem],
    references: &HashMap<String, String>,
    exclude: &[String],
) -> (Vec<JudgeRow>, u64, JudgeFailures) {
    let mut by_instance: BTreeMap<&str, Vec<&JudgeItem>> = BTreeMap::new();
    for it in items.iter().filter(|i| !exclude.contains(&i.model)) {
        by_instance.entry(&it.instance_id).or_default().push(it);
    }
    let mut pairs: Vec<(&JudgeItem, &JudgeItem)> = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut missing = 0u64;
    for (id, mut group) in by_instance {
        group.sort_by(|x, y| x.model.cmp(&y.model));
        group.dedup_by(|x, y| x.model == y.model);
        if group.len() < 2 {
            continue;
        }
        let Some(reference) = references.get(id) else {
            missing += 1;
            continue;
        };
        for i in 0..group.len() {
            for j in i + 1..group.len() {
                let (a, b) = (group[i], group[j]);
                let pair = pairs.len();
                pairs.push((a, b));
                let orders = match judge.order {
                    JudgeOrder::Both => vec![false, true],
                    JudgeOrder::Single { swap_seed: None } => vec![false],
                    JudgeOrder::Single {
                        swap_seed: Some(seed),
                    } => vec![swapped(seed, id, &a.model, &b.model)],
                };
                for swapped in orders {
                    let (x, y) = if swapped { (b, a) } else { (a, b) };
                    jobs.push(Job {
                        pair,
                        swapped,
                        messages: judge_messages(a.task, reference, &x.answer, &y.answer),
                    });
                }
            }
        }
    }
    let sampling = Sampling {
        temperature: 0.0,
        top_p: 1.0,
        max_tokens: 64,
        ..Sampling::default()
    };
    let answers: Vec<Mutex<Said>> = jobs.iter().map(|_| Mutex::new(Said::Failed)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..judge.concurrency.max(1) {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(k) else { break };
                let said = match judge.client.complete(&job.messages, &sampling) {
                    Ok(c) => parse_choice(&c.text).map_or(Said::Unreadable, Said::Choice),
                    Err(_) => Said::Failed,
                };
                *answers[k].lock().expect("no panics") = said;
            });
        }
    });
    let mut failures = JudgeFailures::default();
    // Per pair, what each of its requests said, turned into "the pair's first model won".
    let mut said: Vec<Vec<Option<Option<bool>>>> = vec![Vec::new(); pairs.len()];
    for (job, answer) in jobs.iter().zip(answers) {
        let verdict = match answer.into_inner().expect("no panics") {
            Said::Failed => {
                failures.failed_requests += 1;
                None
            }
            Said::Unreadable => {
                failures.unreadable_answers += 1;
                None
            }
            Said::Choice(Choice::Tie) => Some(None),
            Said::Choice(c) => Some(Some((c == Choice::A) != job.swapped)),
        };
        said[job.pair].push(verdict);
    }
    let orders = match judge.order {
        JudgeOrder::Both => 2,
        JudgeOrder::Single { .. } => 1,
    };
    let mut rows: BTreeMap<(String, String, Task, String), JudgeRow> = BTreeMap::new();
    for (k, (a, b)) in pairs.iter().enumerate() {
        // `None`: no verdict; `Some(None)`: a tie; `Some(Some(w))`: `a` won when `w`. In both
        // orders a win needs the two requests to agree.
        let undecided = said[k].iter().any(Option::is_none);
        let outcome: Option<Option<bool>> = if undecided {
            None
        } else {
            let mut ws = said[k].iter().map(|v| v.expect("decided"));
            let first = ws.next().expect("one request a pair");
            Some(if ws.all(|w| w == first) { first } else { None })
        };
        for (me, other, won) in [(a, b, outcome), (b, a, outcome.map(|o| o.map(|w| !w)))] {
            let row = rows
                .entry((
                    me.model.clone(),
                    other.model.clone(),
                    me.task,
                    me.setting.clone(),
                ))
                .or_insert_with(|| JudgeRow {
                    model: me.model.clone(),
                    opponent: other.model.clone(),
                    task: me.task,
                    setting: me.setting.clone(),
                    win: 0,
                    tie: 0,
                    loss: 0,
                    undecided: 0,
                    orders,
                    judge_only: 0,
                });
            row.judge_only += u64::from(me.judge_only || other.judge_only);
            match won {
                Some(Some(true)) => row.win += 1,
                Some(Some(false)) => row.loss += 1,
                Some(None) => row.tie += 1,
                None => row.undecided += 1,
            }
        }
    }
    let mut out: Vec<JudgeRow> = rows.into_values().collect();
    out.sort_by(|x, y| {
        (&x.model, &x.opponent, x.task)
            .cmp(&(&y.model, &y.opponent, y.task))
            .then_with(|| crate::setting::setting_order(&x.setting, &y.setting))
    });
    (out, missing, failures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_interval() {
        let (lo, hi) = wilson(8, 10);
        assert!(
            (lo - 0.4902).abs() < 1e-3 && (hi - 0.9433).abs() < 1e-3,
            "{lo} {hi}"
        );
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        let (lo, hi) = wilson(0, 5);
        assert_eq!(lo, 0.0);
        assert!(hi > 0.4 && hi < 0.5);
    }

    #[test]
    fn choices() {
        assert_eq!(parse_choice("A"), Some(Choice::A));
        assert_eq!(parse_choice(" b.\n"), Some(Choice::B));
        assert_eq!(parse_choice("[[A]]"), Some(Choice::A));
        assert_eq!(parse_choice("**TIE**"), Some(Choice::Tie));
        assert_eq!(parse_choice("Answer: B"), Some(Choice::B));
        assert_eq!(parse_choice("The better one is B"), Some(Choice::B));
        assert_eq!(parse_choice("I cannot decide"), None);
    }
}
