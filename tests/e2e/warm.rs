//! sandbox-run's warm path against its cold path (`--cold`) on the Python fixture's
//! problem-only instances, answered by the oracle and both baselines: the same result records,
//! timing and console output aside (issue 18: a verdict never depends on the path that ran
//! it).

use crate::support::*;

#[test]
fn warm_and_cold_runs_write_the_same_results() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let Some(tokenizer) = clover_testkit::tokenizer_model() else {
        return;
    };
    let oracle = python_oracle_responses(&python, &tokenizer);
    let instances = shared_dir().join("po-instances.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let mut responses = vec![oracle.to_path_buf()];
    for model in ["copy-operand", "assert-true"] {
        let path = dir.path().join(format!("{model}.jsonl"));
        run_ok(
            tool("generate")
                .arg(&instances)
                .args(["--model", model])
                .arg("-o")
                .arg(&path),
            0,
        );
        responses.push(path);
    }
    for input in &responses {
        let warm = dir.path().join("warm.jsonl");
        let cold = dir.path().join("cold.jsonl");
        run_ok(&mut sandbox_run(&python, input, &warm), 0);
        run_ok(sandbox_run(&python, input, &cold).arg("--cold"), 0);
        // Object addresses in failure messages differ between any two processes.
        for path in [&warm, &cold] {
            let text = std::fs::read_to_string(path).unwrap();
            std::fs::write(path, without_addresses(&text)).unwrap();
        }
        assert_same_records(&warm, &cold);
        std::fs::remove_file(&warm).unwrap();
        std::fs::remove_file(&cold).unwrap();
    }
}
