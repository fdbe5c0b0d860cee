use clover_sandbox::{RunSpec, Sandbox};
use std::time::{Duration, Instant};
fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}
fn main() {
    let sb = Sandbox::new().unwrap();
    let repo = std::env::args().nth(1).unwrap();
    let n: usize = std::env::args().nth(2).map_or(50, |s| s.parse().unwrap());
    let spec = RunSpec::new(&repo, ["/bin/true"]);
    let mut sand = Vec::new();
    let mut bare = Vec::new();
    for _ in 0..n {
        let t = Instant::now();
        std::process::Command::new("/bin/true").status().unwrap();
        bare.push(t.elapsed());
        let t = Instant::now();
        let o = sb.run(&spec).unwrap();
        assert!(o.exit.success());
        sand.push(t.elapsed());
    }
    let (b, s) = (median(bare), median(sand));
    println!(
        "bare {b:?} sandbox {s:?} overhead {:?}",
        s.saturating_sub(b)
    );
}
