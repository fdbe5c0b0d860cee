//! End-to-end tests of the clover tools: the real binaries, run the way users run them.

mod bad_input;
mod cpp_pipeline;
mod determinism;
mod examples;
mod max_context;
mod pack_data;
mod pipeline;
mod relative_paths;
mod resume;
mod shards;
mod support;
mod warm;
mod wheel;
