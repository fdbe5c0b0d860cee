//! pack-context's tests read calibrated records of the fixtures that are checked in
//! (`crates/clover-pack-context/tests/data`). They were written by the real stages; this test
//! runs the same command again (`tests/data/regenerate.sh`) and requires the same records, so
//! the test data cannot drift from what `clover extract | clover calibrate` writes.

use crate::support::{assert_same_records, bin_dir, run_ok, sandbox_python};

#[test]
fn pack_context_test_data_is_what_the_stages_write() {
    let Some(python) = sandbox_python() else {
        return;
    };
    let data = clover_testkit::workspace_root().join("crates/clover-pack-context/tests/data");
    let out = tempfile::tempdir().unwrap();
    run_ok(
        std::process::Command::new(data.join("regenerate.sh"))
            .arg(bin_dir())
            .arg(out.path())
            .env("CLOVER_PYTHON", &python),
        0,
    );
    for name in ["calibrated_python.jsonl", "calibrated_cpp.jsonl"] {
        assert_same_records(&out.path().join(name), &data.join(name));
    }
}
