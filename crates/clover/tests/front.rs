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

/// Every stage (and export) under the name `clover NAME` runs it by, with its command line as
/// its library defines it (and its binary parses it).
fn stages() -> Vec<(&'static str, clap::Command)> {
    use clap::CommandFactory;
    vec![
        ("extract", clover_extract::cli::Cli::command()),
        ("calibrate", clover_calibrate::cli::Cli::command()),
        ("pack-context", clover_pack_context::cli::Cli::command()),
        ("generate", clover_generate::cli::Cli::command()),
        ("sandbox-run", clover_sandbox_run::cli::Cli::command()),
        ("score", clover_score::cli::Cli::command()),
        ("export", clover_export::cli::Cli::command()),
    ]
}

/// Every `--long` flag of a command, `--help` and `--version` included.
fn long_flags(cmd: &clap::Command) -> Vec<String> {
    let mut cmd = cmd.clone();
    cmd.build();
    let flags: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(|l| format!("--{l}"))
        .collect();
    assert!(flags.len() > 3, "{flags:?}");
    flags
}

fn clover_out(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_clover"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What bash completes for `words` (the last one being completed), with the script
/// `clover completions bash` prints loaded as bash-completion would load it.
fn bash_completes(script: &Path, words: &[&str]) -> Vec<String> {
    let words_arr: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let line = words.join(" ");
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{line}'; \
         COMP_POINT=${{#COMP_LINE}}; _clover clover '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        words_arr.join(" "),
        words.len() - 1,
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let out = Command::new("bash")
        .args(["--norc", "-c", &program])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn bash_completes_every_stage_and_every_flag_of_it() {
    // It runs processes: see SERIAL.
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let (code, script, err) = clover_out(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    let path = tmp.path().join("clover.bash");
    fs::write(&path, &script).unwrap();
    let names = bash_completes(&path, &["clover", ""]);
    for (name, cmd) in stages() {
        assert!(names.iter().any(|n| n == name), "no {name} in {names:?}");
        let flags = bash_completes(&path, &["clover", name, "--"]);
        for flag in long_flags(&cmd) {
            assert!(
                flags.contains(&flag),
                "`clover {name} --` lacks {flag}: {flags:?}"
            );
        }
    }
    // A few by name, so the test does not rest on the Cli alone.
    for (name, flag) in [
        ("extract", "--write-problem-files"),
        ("calibrate", "--per-test"),
        ("pack-context", "--tokenizer"),
        ("generate", "--model-name"),
        ("sandbox-run", "--test-file"),
        ("score", "--judge-base-url"),
        ("export", "--split"),
    ] {
        let prefix = &flag[..5];
        let got = bash_completes(&path, &["clover", name, prefix]);
        assert!(
            got.iter().any(|f| f == flag),
            "clover {name} {prefix}: {got:?}"
        );
    }
    assert_eq!(
        bash_completes(&path, &["clover", "completions", "fi"]),
        ["fish"]
    );
}

#[test]
fn completions_for_every_shell_and_a_wrong_shell_is_usage() {
    // It runs processes: see SERIAL.
    let _serial = serial();
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let (code, out, err) = clover_out(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for word in ["pack-context", "sandbox-run", "model-name", "test-file"] {
            assert!(out.contains(word), "{shell} completions lack {word}");
        }
    }
    let (code, out, err) = clover_out(&["completions", "tcsh"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.contains("bash, zsh, fish, elvish or powershell"),
        "{err}"
    );
    let (code, _, _) = clover_out(&["completions"]);
    assert_eq!(code, 2);
}

#[test]
fn man_pages_for_clover_and_each_stage_name_its_flags() {
    // It runs processes: see SERIAL.
    let _serial = serial();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let (code, _, err) = clover_out(&["man", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let clover = fs::read_to_string(dir.join("clover.1")).unwrap();
    assert!(
        clover.starts_with(".ie") || clover.contains(".TH clover 1"),
        "{clover}"
    );
    for (name, cmd) in stages() {
        // roff writes a `-` as `\-`.
        let listed = format!("clover\\-{}(1)", name.replace('-', "\\-"));
        assert!(clover.contains(&listed), "clover.1 does not list {listed}");
        let page = dir.join(format!("clover-{name}.1"));
        let page = fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        assert!(page.contains(&format!(".TH clover-{name} 1")), "{page}");
        for flag in long_flags(&cmd) {
            let roff = flag.replace('-', "\\-");
            assert!(page.contains(&roff), "clover-{name}.1 lacks {flag}");
        }
    }
    // Without a folder, clover.1 on stdout (for `clover man | man -l -`).
    let (code, out, _) = clover_out(&["man"]);
    assert_eq!(code, 0);
    assert_eq!(out, clover);
}

/// What `clover-NAME FLAG` prints for `--help` or `-h`: clap's own answer to the flag (the
/// long form only when some help has a long form), under the binary's name.
fn help_for(cmd: &clap::Command, name: &str, flag: &str) -> String {
    let bin = format!("clover-{name}");
    let err = cmd
        .clone()
        .try_get_matches_from([bin.as_str(), flag])
        .expect_err("help is an early exit");
    assert_eq!(err.kind(), clap::error::ErrorKind::DisplayHelp);
    err.render().to_string()
}

/// Each stage's `--help` and `-h`, as its binary printed them before its command line moved
/// from `main.rs` into its library (tests/data/help; `CLOVER_BLESS=1` rewrites them after a
/// deliberate change of flags or help).
#[test]
fn stage_help_is_the_binary_help_before_the_move() {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/help");
    let bless = std::env::var_os("CLOVER_BLESS").is_some_and(|v| v == "1");
    for (name, cmd) in stages() {
        for (file, flag) in [
            (format!("{name}.txt"), "--help"),
            (format!("{name}.short.txt"), "-h"),
        ] {
            let help = help_for(&cmd, name, flag);
            let path = data.join(file);
            if bless {
                fs::write(&path, &help).unwrap();
                continue;
            }
            let want = fs::read_to_string(&path).unwrap();
            assert_eq!(
                help,
                want,
                "{} changed; if meant, rerun with CLOVER_BLESS=1",
                path.display()
            );
        }
    }
}
