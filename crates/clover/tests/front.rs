//! Runs the real `clover` binary against tools written for the test.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// Writing an executable while another test thread forks can leave the new file open for
/// writing in that thread's child until it execs, and running the file then fails with
/// ETXTBSY. The tests write and run executables one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn tool(dir: &Path, name: &str, script: &str) {
    let p = dir.join(format!("clover-{name}"));
    fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
}

/// A copy of `clover` in its own folder, so "beside the executable" is a folder we control.
fn installed(dir: &Path) -> std::path::PathBuf {
    let bin = dir.join("bin");
    fs::create_dir_all(&bin).unwrap();
    let clover = bin.join("clover");
    fs::copy(env!("CARGO_BIN_EXE_clover"), &clover).unwrap();
    clover
}

fn run(clover: &Path, path_dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(clover)
        .args(args)
        .env("PATH", format!("{}:/usr/bin:/bin", path_dir.display()))
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn dispatches_to_a_tool_on_path_with_args_env_and_exit_code() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let clover = installed(tmp.path());
    let onpath = tmp.path().join("onpath");
    fs::create_dir(&onpath).unwrap();
    tool(
        &onpath,
        "echo",
        "echo \"args=$*\"; echo \"clover=$CLOVER\"; exit 7",
    );
    let (code, out, _) = run(&clover, &onpath, &["echo", "a b", "--flag", "-"]);
    assert_eq!(code, 7, "the tool's exit code passes through");
    assert!(out.contains("args=a b --flag -"), "{out}");
    assert!(
        out.contains(&format!("clover={}", clover.display())),
        "{out}"
    );
}

#[test]
fn a_tool_beside_clover_wins_over_path() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let clover = installed(tmp.path());
    let onpath = tmp.path().join("onpath");
    fs::create_dir(&onpath).unwrap();
    tool(&onpath, "which", "echo path");
    tool(&tmp.path().join("bin"), "which", "echo beside");
    let (code, out, _) = run(&clover, &onpath, &["which"]);
    assert_eq!((code, out.trim()), (0, "beside"));
}

#[test]
fn list_and_help() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let clover = installed(tmp.path());
    let onpath = tmp.path().join("onpath");
    fs::create_dir(&onpath).unwrap();
    tool(
        &onpath,
        "alpha",
        "if [ \"$1\" = --help ]; then printf '\\nAlpha does a thing\\n\\nUsage: clover-alpha\\n'; fi",
    );
    tool(
        &tmp.path().join("bin"),
        "beta",
        "[ \"$1\" = --help ] && echo 'Beta summary'",
    );
    // Not tools: not executable, cargo's hashed copies and dep files.
    fs::write(onpath.join("clover-notexec"), "").unwrap();
    tool(&onpath, "gamma-0123456789abcdef", "echo hashed");
    fs::write(onpath.join("clover-alpha.d"), "").unwrap();
    let (code, out, _) = run(&clover, &onpath, &["--list"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        vec!["alpha  Alpha does a thing", "beta   Beta summary"],
        "{out}"
    );
    let (code, out, _) = run(&clover, &onpath, &["help", "alpha"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: clover-alpha"), "{out}");
}

#[test]
fn an_unknown_name_lists_what_is_installed() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let clover = installed(tmp.path());
    let onpath = tmp.path().join("onpath");
    fs::create_dir(&onpath).unwrap();
    tool(&onpath, "alpha", "true");
    let (code, out, err) = run(&clover, &onpath, &["nosuch", "x"]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("no such tool `nosuch`"), "{err}");
    assert!(err.contains("installed: alpha"), "{err}");
    let (code, _, err) = run(&clover, &onpath, &["--bogus"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown flag"), "{err}");
    let (code, _, _) = run(&clover, &onpath, &[]);
    assert_eq!(code, 2);
}

#[test]
fn a_signal_ending_the_tool_ends_clover_the_same_way() {
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let clover = installed(tmp.path());
    let onpath = tmp.path().join("onpath");
    fs::create_dir(&onpath).unwrap();
    tool(&onpath, "die", "kill -TERM $$");
    let out = Command::new(&clover)
        .arg("die")
        .env("PATH", format!("{}:/usr/bin:/bin", onpath.display()))
        .output()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(out.status.signal(), Some(15));
}
