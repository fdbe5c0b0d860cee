use super::*;
use std::fs;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, text).unwrap();
}

fn parse_err(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("clover.toml");
    Manifest::parse(text, &path).unwrap_err().to_string()
}

/// No stage could run a `setup` command usefully (throwaway views, no network, a repository
/// never written), so the key is refused rather than accepted and ignored.
#[test]
fn setup_is_not_a_key() {
    let path = PathBuf::from("/nonexistent/clover.toml");
    let text = "[[repo]]\nname = \"x\"\nlanguage = \"python\"\nsetup = [\"pip install -e .\"]\n";
    let e = Manifest::parse(text, &path).unwrap_err().to_string();
    assert!(
        e.contains("unknown field `setup`") && e.contains("line 4"),
        "{e}"
    );
}

#[test]
fn reads_a_full_manifest() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "py/src/ledger/__init__.py", "");
    write(dir.path(), "cc/src/ring.cc", "");
    let text = r#"
[[repo]]
name = "pyfix"
path = "py"
language = "python"
source_dirs = ["src/ledger"]
test_dirs = ["tests"]
excludes = ["tests/slow/**"]
python = ".venv/bin/python"
timeout_secs = 30
memory_mb = 512
cpus = 0.5
[repo.env]
LEDGER_STRICT = "1"

[[repo]]
name = "ccfix"
path = "cc"
language = "cpp"
domain = "concurrency"
include_dirs = ["src"]
cxxflags = ["-std=c++17", "-O0"]
link = ["gtest_main", "gtest"]
"#;
    let path = dir.path().join("clover.toml");
    let m = Manifest::parse(text, &path).unwrap();
    assert_eq!(m.repos.len(), 2);
    let py = m.repo("pyfix").unwrap();
    assert_eq!(py.root, dir.path().join("py"));
    assert_eq!(py.language, Language::Python);
    assert_eq!(py.source_dirs, vec![PathBuf::from("src/ledger")]);
    assert_eq!(py.test_globs, vec!["test_*.py", "*_test.py"]);
    assert_eq!(py.python, Some(dir.path().join("py/.venv/bin/python")));
    assert_eq!(py.env.get("LEDGER_STRICT").map(String::as_str), Some("1"));
    assert_eq!(
        (py.timeout_secs, py.memory_mb, py.pids, py.cpus),
        (30, 512, DEFAULT_PIDS, 0.5)
    );
    let cc = m.repo("ccfix").unwrap();
    assert_eq!(
        cc.cpus, DEFAULT_CPUS,
        "one core per run unless the manifest says"
    );
    assert_eq!(cc.language, Language::Cpp);
    assert_eq!(cc.cxx, "g++");
    assert_eq!(cc.link, vec!["gtest_main", "gtest"]);
    assert_eq!(cc.test_globs[0], "*_test.cc");
    // A domain only when the manifest gives one (CPP-UT-Bench's Table 1).
    assert_eq!(cc.domain.as_deref(), Some("concurrency"));
    assert_eq!(py.domain, None);
    let err = m.repo("nope").unwrap_err().to_string();
    assert!(
        err.contains("no repository named `nope`") && err.contains("pyfix, ccfix"),
        "{err}"
    );
}

#[test]
fn a_typo_is_an_error_with_its_line() {
    let err = parse_err("[[repo]]\nname = \"x\"\nlanguge = \"python\"\n");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("unknown field `languge`"), "{err}");
}

#[test]
fn bad_values_are_errors() {
    let err = parse_err("[[repo]]\nname = \"x\"\nlanguage = \"rust\"\n");
    assert!(
        err.contains("line 3") && err.contains("unknown variant `rust`"),
        "{err}"
    );
    let err = parse_err("[[repo]]\nname = \"x\"\ntimeout_secs = \"ten\"\n");
    assert!(err.contains("line 3"), "{err}");
    let err = parse_err("name = 3");
    assert!(err.contains("unknown field `name`"), "{err}");
    let err = parse_err("");
    assert!(err.contains("no [[repo]] table"), "{err}");
    let err = parse_err("[[repo\nname = 1");
    assert!(err.contains("line 1"), "{err}");
    let err = parse_err("[[repo]]\nname = \"x\"\nlanguage = \"python\"\ncpus = -1.0\n");
    assert!(err.contains("cpus must be a number of cores"), "{err}");
}

#[test]
fn checks_names_paths_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a.py", "");
    let path = dir.path().join("clover.toml");
    let check = |text: &str| Manifest::parse(text, &path).unwrap_err().to_string();
    assert!(check("[[repo]]\nname = \"a/b\"\n").contains("hold no '/'"));
    assert!(check("[[repo]]\nname = \"a\"\n[[repo]]\nname = \"a\"\n").contains("used twice"));
    assert!(check("[[repo]]\nname = \"a\"\nsource_dirs = [\"../etc\"]\n").contains("stay inside"));
    assert!(check("[[repo]]\nname = \"a\"\nmemory_mb = 0\n").contains("at least 1"));
    assert!(check("[[repo]]\nname = \"a\"\npath = \"missing\"\n").contains("does not exist"));
}

#[test]
fn detects_a_src_layout_with_a_venv() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ledger-1.0");
    write(&root, "pyproject.toml", "");
    write(&root, "src/ledger/__init__.py", "");
    write(&root, "tests/test_core.py", "");
    write(&root, ".venv/bin/python", "");
    let r = RepoConfig::detect(&root).unwrap();
    assert_eq!(r.name, "ledger-1.0");
    assert_eq!(r.language, Language::Python);
    assert_eq!(r.source_dirs, vec![PathBuf::from("src/ledger")]);
    assert_eq!(r.test_dirs, vec![PathBuf::from("tests")]);
    assert_eq!(r.python, Some(root.join(".venv/bin/python")));
}

#[test]
fn detects_tests_inside_the_package_and_single_modules() {
    // toolz: tests inside the package, no tests/ folder.
    let dir = tempfile::tempdir().unwrap();
    let toolz = dir.path().join("toolz");
    write(&toolz, "setup.py", "");
    write(&toolz, "toolz/__init__.py", "");
    write(&toolz, "toolz/tests/test_x.py", "");
    let r = RepoConfig::detect(&toolz).unwrap();
    assert_eq!(r.source_dirs, vec![PathBuf::from("toolz")]);
    assert_eq!(r.test_dirs, vec![PathBuf::from(".")]);
    assert_eq!(r.python, None);
    // six: one module and one test file at the root.
    let six = dir.path().join("six");
    write(&six, "setup.py", "");
    write(&six, "six.py", "");
    write(&six, "test_six.py", "");
    write(&six, "venv/bin/python", "");
    let r = RepoConfig::detect(&six).unwrap();
    assert_eq!(r.source_dirs, vec![PathBuf::from("six.py")]);
    assert_eq!(r.python, Some(six.join("venv/bin/python")));
}

#[test]
fn detects_cpp_and_refuses_an_empty_folder() {
    let dir = tempfile::tempdir().unwrap();
    let cc = dir.path().join("cc");
    write(&cc, "src/ring.cc", "");
    write(&cc, "src/ring.h", "");
    write(&cc, "tests/ring_test.cc", "");
    let r = RepoConfig::detect(&cc).unwrap();
    assert_eq!(r.language, Language::Cpp);
    assert_eq!(r.source_dirs, vec![PathBuf::from("src")]);
    assert_eq!(r.test_dirs, vec![PathBuf::from("tests")]);
    assert_eq!(r.include_dirs, vec![PathBuf::from("src")]);
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let err = RepoConfig::detect(&empty).unwrap_err().to_string();
    assert!(err.contains("neither Python nor C++"), "{err}");
}

#[test]
fn resolve_prefers_a_manifest_in_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "src/p/__init__.py", "");
    write(
        dir.path(),
        "clover.toml",
        "[[repo]]\nname = \"named\"\nlanguage = \"python\"\n",
    );
    let r = RepoConfig::resolve(None, None, Some(dir.path())).unwrap();
    assert_eq!(r[0].name, "named");
    assert_eq!(r[0].source_dirs, vec![PathBuf::from("src/p")]);
}

#[test]
fn the_fixture_manifests_load() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let py = Manifest::load(&fixtures.join("python/clover.toml")).unwrap();
    assert_eq!(py.repos.len(), 1);
    assert_eq!(py.repos[0].language, Language::Python);
    assert!(py.repos[0].root.join("src/ledger/money.py").is_file());
    let cc = Manifest::load(&fixtures.join("cpp/clover.toml")).unwrap();
    assert_eq!(cc.repos[0].language, Language::Cpp);
    assert!(!cc.repos[0].link.is_empty());
    // Detection without the manifest finds the same layout.
    let detected = RepoConfig::detect(&fixtures.join("python")).unwrap();
    assert_eq!(detected.source_dirs, py.repos[0].source_dirs);
    assert_eq!(detected.test_dirs, py.repos[0].test_dirs);
}

#[test]
fn repo_args_gather_manifests_and_folders() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a/src/p/__init__.py", "");
    write(dir.path(), "b/x.py", "");
    write(
        dir.path(),
        "m/clover.toml",
        "[[repo]]\nname = \"named\"\npath = \"../a\"\n",
    );
    let args = RepoArgs {
        manifest: Some(dir.path().join("m/clover.toml")),
        repo: vec![dir.path().join("b")],
    };
    let repos = args.resolve().unwrap();
    assert_eq!(repos.keys().collect::<Vec<_>>(), vec!["b", "named"]);
    assert_eq!(repos["named"].root, dir.path().join("a"));
    let err = unknown_repo("zz", &repos);
    assert!(
        err.contains("unknown repository `zz`; known: b, named"),
        "{err}"
    );
    assert!(RepoArgs::default().resolve().is_err());
}
