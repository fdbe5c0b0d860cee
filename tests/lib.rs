//! End-to-end tests of the clover tools; this library is empty on purpose.
//!
//! The tests in `e2e/` (the workspace's top-level `tests/e2e/`) run the real stage binaries (`target/<profile>/clover-*`, built
//! once by the test itself with `cargo build --bins`) the way users do: killed with SIGKILL and
//! resumed, split into shards and joined, fed bad input, run twice for byte-identical output,
//! driven by the Slurm (by hand and on a real one-machine Slurm), Kubernetes, GNU parallel
//! and Makefile examples of `docs/examples/`, and installed from the `clover-bench` wheel into
//! a fresh virtual environment.
//! What one stage does on its own is tested in that stage's crate; here only what crosses
//! stages or needs several runs of one.
//!
//! It deliberately holds no code that a tool uses.
