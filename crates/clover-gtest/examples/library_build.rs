//! Times a cold build of a C++ repository's library under test, in the sandbox, with a given
//! number of parallel compiles (run as root):
//!
//! ```text
//! library_build MANIFEST NAME JOBS…   # e.g. target/corpus/clover.toml snappy 1 2
//! ```
//!
//! Each build starts from an empty cache; prints one line per job count: seconds and objects.

use std::time::Instant;

use clover_gtest::{CppProject, LibraryCache};
use clover_sandbox::{Limits, Sandbox};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [manifest, name, jobs @ ..] = args.as_slice() else {
        eprintln!("usage: library_build MANIFEST NAME JOBS...");
        std::process::exit(2);
    };
    let cfg = clover_manifest::RepoConfig::resolve(
        Some(std::path::Path::new(manifest)),
        Some(name),
        None,
    )
    .expect("the manifest names the repository")
    .remove(0);
    let project = CppProject::from_config(&cfg);
    let sb = Sandbox::new().expect("the sandbox needs root");
    let limits = Limits {
        wall: std::time::Duration::from_secs(1200),
        cpu_secs: 2400,
        ..Limits::default()
    };
    for j in jobs {
        let j: usize = j.parse().expect("JOBS are numbers");
        let dir = tempfile::tempdir().expect("a temporary folder");
        let cache = LibraryCache::new(dir.path())
            .expect("a library cache")
            .with_jobs(j);
        let t = Instant::now();
        let lib = cache
            .library(&sb, &project, &limits)
            .expect("the library builds");
        println!(
            "jobs {j}: {:.2} s, {} objects",
            t.elapsed().as_secs_f64(),
            lib.sources().count()
        );
    }
}
