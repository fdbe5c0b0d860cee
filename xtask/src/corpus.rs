//! `cargo xtask corpus`: real open-source packages nobody here wrote, to test clover against.
//!
//! The list is a copy of the project's reference `shared/corpus.toml` (a user's machine has
//! only the project). Each package's sdist is fetched with `pip download`, checked against its
//! pinned sha256, unpacked under `target/corpus/src/`, and given its own virtual environment
//! under `target/corpus/venv/` with the pinned test tools, its extras, and the package itself
//! installed in editable mode, so the tests import the unpacked source (and coverage measures
//! it there).
//!
//! The C++ repositories come from Debian: the GoogleTest samples are copied out of the
//! installed `googletest` package (so nothing ever writes below `/usr`), and snappy's Debian
//! source package is fetched with `apt-get source` through a private copy of the machine's
//! Debian apt source with `deb-src` in its `Types:` line (private lists and cache under
//! `target/corpus/apt/`, so the machine's apt state is never touched), checked against a
//! pinned sha256 of its `.dsc` (whose hashes `dpkg-source -x` checks the tarballs against),
//! unpacked, and given the two headers its CMake build would generate.
//!
//! Every repository made ready on this machine is written into `target/corpus/clover.toml`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::step;

/// A pinned Python package of the corpus.
pub struct Package {
    pub name: &'static str,
    pub version: &'static str,
    pub sha256: &'static str,
    pub extras: &'static [&'static str],
    /// pytest and its plugins, when the package needs other pins than the default.
    pub test_tools: &'static [&'static str],
}

const TEST_TOOLS: &[&str] = clover_env::TEST_TOOLS;

pub const PACKAGES: &[Package] = &[
    Package {
        name: "itsdangerous",
        version: "2.2.0",
        sha256: "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173",
        extras: &["freezegun"],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "markupsafe",
        version: "3.0.4",
        sha256: "2e9ad7dd851bf45fab9f75cbff4cb493fee9979e8d8c7c9c3ee119022518edd6",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "toolz",
        version: "1.2.0",
        sha256: "9667a038e9d6ecba37995e26cb2f59ec6420b6ad8dd9677de59db9b956b08490",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "six",
        version: "1.17.0",
        sha256: "ff70335d468e7eb6ec65b95b99d3a2836546063f63acc5171de367e834932a81",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "jinja2",
        version: "3.1.6",
        sha256: "0137fb05990d35f1275a587e9aee6d56da821fc83491a0fb838183be43f66d6d",
        extras: &["trio"],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "click",
        version: "8.5.1",
        sha256: "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4",
        extras: &[],
        test_tools: TEST_TOOLS,
    },
    Package {
        name: "flask",
        version: "3.1.3",
        sha256: "0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb",
        extras: &["werkzeug==3.1.5", "asgiref", "greenlet", "python-dotenv"],
        // pytest 9.2 removed a name tests/test_cli.py imports.
        test_tools: &["pytest==9.0.2", "pytest-cov==7.1.0", "coverage==7.17.3"],
    },
];

/// The packages the test suite runs against (markupsafe: calibrate's fast path is checked
/// against its per-test path on it and itsdangerous, two packages without lazy caches).
pub const FOR_TESTS: &[&str] = &["itsdangerous", "toolz", "six", "markupsafe"];

/// A package made ready: its source tree and its interpreter.
pub struct Ready {
    pub name: String,
    pub dir: PathBuf,
    pub python: PathBuf,
}

/// Fetches, checks, unpacks and installs the named packages (all when `only` is empty).
pub fn ensure(root: &Path, only: &[String]) -> Result<Vec<Ready>> {
    let base = root.join("target/corpus");
    let downloads = base.join("downloads");
    std::fs::create_dir_all(&downloads)?;
    let python = crate::setup::base_python();
    let mut out = Vec::new();
    for p in PACKAGES {
        if !only.is_empty() && !only.iter().any(|o| o == p.name) {
            continue;
        }
        let dir = base.join("src").join(format!("{}-{}", p.name, p.version));
        let venv = base.join("venv").join(p.name);
        let venv_python = venv.join("bin/python");
        let stamp = venv.join("clover-corpus.txt");
        let wanted = format!(
            "{} {} {:?} {:?}\n",
            p.name, p.version, p.extras, p.test_tools
        );
        if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) && dir.is_dir()
        {
            out.push(Ready {
                name: p.name.into(),
                dir,
                python: venv_python,
            });
            continue;
        }
        step(&format!("corpus: {} {}", p.name, p.version));
        let sdist = fetch(&python, &downloads, p)?;
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let src = base.join("src");
        std::fs::create_dir_all(&src)?;
        duct::cmd!(
            &python,
            "-c",
            "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter='data')",
            &sdist,
            &src
        )
        .run()
        .with_context(|| format!("cannot unpack {}", sdist.display()))?;
        if !dir.is_dir() {
            bail!("{} did not unpack into {}", sdist.display(), dir.display());
        }
        if venv.exists() {
            std::fs::remove_dir_all(&venv)?;
        }
        duct::cmd!(&python, "-m", "venv", &venv).run()?;
        let mut args: Vec<String> = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]
            .map(String::from)
            .to_vec();
        args.extend(p.test_tools.iter().chain(p.extras).map(|s| s.to_string()));
        args.push("-e".into());
        args.push(dir.display().to_string());
        duct::cmd(&venv_python, &args)
            .run()
            .with_context(|| format!("cannot install {} into its environment", p.name))?;
        std::fs::write(&stamp, wanted)?;
        out.push(Ready {
            name: p.name.into(),
            dir,
            python: venv_python,
        });
    }
    write_manifest(&base)?;
    Ok(out)
}

/// `target/corpus/clover.toml`: every package and C++ repository made ready on this machine
/// (not only this call's), so tests and benchmarks name them with `--manifest` and nothing
/// else.
fn write_manifest(base: &Path) -> Result<()> {
    let mut text = String::from(
        "# Written by `cargo xtask corpus`: the corpus packages made ready on this machine.\n",
    );
    for p in PACKAGES {
        let venv = base.join("venv").join(p.name);
        let dir = base.join("src").join(format!("{}-{}", p.name, p.version));
        if !(venv.join("clover-corpus.txt").is_file() && dir.is_dir()) {
            continue;
        }
        text.push_str(&format!(
            "\n[[repo]]\nname = \"{}\"\npath = \"{}\"\nlanguage = \"python\"\npython = \"{}\"\ntimeout_secs = 300\n",
            p.name,
            dir.display(),
            venv.join("bin/python").display()
        ));
    }
    for r in CPP_REPOS {
        let dir = r.dir(base);
        let Ok(stamp) = std::fs::read_to_string(r.stamp(base)) else {
            continue;
        };
        if !dir.is_dir() {
            continue;
        }
        text.push_str(&r.manifest_entry(&dir, stamp.trim()));
    }
    std::fs::write(base.join("clover.toml"), text)?;
    Ok(())
}

/// The sdist of `p` in `downloads`, fetched if missing, checked against its sha256.
fn fetch(python: &str, downloads: &Path, p: &Package) -> Result<PathBuf> {
    clover_env::fetch_sdist(Path::new(python), downloads, p.name, p.version, p.sha256)
}

/// Where a C++ repository of the corpus comes from.
pub enum CppOrigin {
    /// A folder of an installed Debian package, copied out.
    Installed {
        package: &'static str,
        dir: &'static str,
    },
    /// A Debian source package, fetched with `apt-get source`.
    DebianSource {
        package: &'static str,
        version: &'static str,
        /// The sha256 of the `.dsc`, which in turn holds the tarballs' hashes.
        dsc_sha256: &'static str,
    },
}

/// A C++ repository of the corpus, with what the checks expect of it.
pub struct CppRepo {
    pub name: &'static str,
    pub origin: CppOrigin,
    /// The manifest's folders, relative to the repository.
    pub source_dirs: &'static [&'static str],
    pub test_dirs: &'static [&'static str],
    pub include_dirs: &'static [&'static str],
    pub cxxflags: &'static [&'static str],
    /// Libraries, without `-l`.
    pub link: &'static [&'static str],
    /// Translation units that are not part of the library under test (other programs).
    pub excludes: &'static [&'static str],
    /// Tests read data through `$srcdir` (snappy's `testdata/`).
    pub srcdir_env: bool,
    /// The source/test pairs (by base name, else by includes): (source, test), paths from
    /// the repository's root.
    pub pairs: &'static [(&'static str, &'static str)],
    /// Test files with no source of their base name.
    pub unpaired_tests: &'static [&'static str],
    /// Tests of each test file that pass in a bare run (`shared/corpus.toml`'s figures).
    pub passing: &'static [(&'static str, usize)],
}

pub const CPP_REPOS: &[CppRepo] = &[
    CppRepo {
        name: "googletest-samples",
        origin: CppOrigin::Installed {
            package: "googletest",
            dir: "/usr/src/googletest/googletest/samples",
        },
        source_dirs: &["."],
        test_dirs: &["."],
        include_dirs: &["."],
        cxxflags: &["-std=c++17", "-O0"],
        link: &["gtest_main", "gtest", "pthread"],
        excludes: &[],
        srcdir_env: false,
        pairs: &[
            ("sample1.cc", "sample1_unittest.cc"),
            ("sample2.cc", "sample2_unittest.cc"),
            ("sample4.cc", "sample4_unittest.cc"),
        ],
        // sample3 lives in sample3-inl.h; the others test headers of other names.
        unpaired_tests: &[
            "sample10_unittest.cc",
            "sample3_unittest.cc",
            "sample5_unittest.cc",
            "sample6_unittest.cc",
            "sample7_unittest.cc",
            "sample8_unittest.cc",
            "sample9_unittest.cc",
        ],
        passing: &[
            ("sample1_unittest.cc", 6),
            ("sample2_unittest.cc", 4),
            ("sample4_unittest.cc", 1),
        ],
    },
    CppRepo {
        name: "snappy",
        origin: CppOrigin::DebianSource {
            package: "snappy",
            version: "1.1.9-3",
            dsc_sha256: "7651f9ca32704e95b17e3d288858c374dad88a0d4f95fc6a04a96bc7b83c8e7e",
        },
        source_dirs: &["."],
        test_dirs: &["."],
        include_dirs: &["."],
        cxxflags: &["-std=c++14", "-O0", "-g", "-DHAVE_CONFIG_H"],
        link: &["gmock", "gtest_main", "gtest", "pthread"],
        // Programs with their own `main` or needing Google Benchmark or libFuzzer.
        excludes: &[
            "snappy_benchmark.cc",
            "snappy_test_tool.cc",
            "snappy_compress_fuzzer.cc",
            "snappy_uncompress_fuzzer.cc",
        ],
        srcdir_env: true,
        pairs: &[("snappy.cc", "snappy_unittest.cc")],
        unpaired_tests: &[],
        passing: &[("snappy_unittest.cc", 20)],
    },
    // Twelve GoogleTest files under test/ (and test/main.cpp, a main of its own that the
    // sandbox's gtest_main stands in for); the library in src/, its API in include/.
    CppRepo {
        name: "yaml-cpp",
        origin: CppOrigin::DebianSource {
            package: "yaml-cpp",
            version: "0.7.0+dfsg-8",
            dsc_sha256: "94bd9098d501f91c2570c8e8cb98d46bc6de7627c30e9f94ebb39dc0cd2d65c2",
        },
        source_dirs: &["src"],
        test_dirs: &["test"],
        include_dirs: &["include", "src", "test", "test/integration"],
        cxxflags: &["-std=c++11", "-O0"],
        link: &["gmock", "gtest_main", "gtest", "pthread"],
        excludes: &[],
        srcdir_env: false,
        pairs: &[
            ("src/emitter.cpp", "test/integration/emitter_test.cpp"),
            ("src/node.cpp", "test/node/node_test.cpp"),
            ("src/ostream_wrapper.cpp", "test/ostream_wrapper_test.cpp"),
            ("src/parser.cpp", "test/parser_test.cpp"),
            // By the headers it includes: regex_test.cpp includes regex_yaml.h.
            ("src/regex_yaml.cpp", "test/regex_test.cpp"),
        ],
        unpaired_tests: &[
            "test/integration/encoding_test.cpp",
            "test/integration/error_messages_test.cpp",
            "test/integration/gen_emitter_test.cpp",
            "test/integration/handler_spec_test.cpp",
            "test/integration/handler_test.cpp",
            "test/integration/load_node_test.cpp",
            "test/integration/node_spec_test.cpp",
        ],
        passing: &[
            ("test/integration/emitter_test.cpp", 129),
            ("test/node/node_test.cpp", 64),
            ("test/ostream_wrapper_test.cpp", 8),
            ("test/parser_test.cpp", 5),
            ("test/regex_test.cpp", 12),
        ],
    },
];

/// The C++ repositories the test suite checks.
pub const CPP_FOR_TESTS: &[&str] = &["googletest-samples", "snappy"];

impl CppRepo {
    /// The repository's folder under `target/corpus/src/`.
    pub fn dir(&self, base: &Path) -> PathBuf {
        match self.origin {
            CppOrigin::Installed { .. } => base.join("src").join(self.name),
            CppOrigin::DebianSource { version, .. } => {
                base.join("src").join(format!("{}-{version}", self.name))
            }
        }
    }

    fn stamp(&self, base: &Path) -> PathBuf {
        base.join("stamps").join(format!("{}.txt", self.name))
    }

    /// The `[[repo]]` table of the manifest; `version` is what the stamp recorded.
    fn manifest_entry(&self, dir: &Path, version: &str) -> String {
        let list = |xs: &[&str]| {
            xs.iter()
                .map(|x| format!("{x:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut t = format!(
            "\n# {version}\n[[repo]]\nname = \"{}\"\npath = \"{}\"\nlanguage = \"cpp\"\n\
             source_dirs = [{}]\ntest_dirs = [{}]\ninclude_dirs = [{}]\n\
             excludes = [{}]\ncxxflags = [{}]\nlink = [{}]\ntimeout_secs = 300\n",
            self.name,
            dir.display(),
            list(self.source_dirs),
            list(self.test_dirs),
            list(self.include_dirs),
            list(self.excludes),
            list(self.cxxflags),
            list(self.link),
        );
        if self.srcdir_env {
            t.push_str(&format!("[repo.env]\nsrcdir = \"{}\"\n", dir.display()));
        }
        t
    }
}

/// A C++ repository made ready: its source tree and the package version it came from.
pub struct CppReady {
    pub name: String,
    pub dir: PathBuf,
    /// `PACKAGE VERSION`, and how it was had.
    pub version: String,
}

/// Copies or fetches, checks and unpacks the named C++ repositories (all when `only` is
/// empty), then rewrites the manifest.
pub fn ensure_cpp(root: &Path, only: &[String]) -> Result<Vec<CppReady>> {
    let base = root.join("target/corpus");
    std::fs::create_dir_all(base.join("stamps"))?;
    for name in only {
        if !CPP_REPOS.iter().any(|r| r.name == name) {
            bail!(
                "no C++ corpus repository named `{name}`; there are: {}",
                CPP_REPOS
                    .iter()
                    .map(|r| r.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut out = Vec::new();
    for r in CPP_REPOS {
        if !only.is_empty() && !only.iter().any(|o| o == r.name) {
            continue;
        }
        let dir = r.dir(&base);
        let (label, wanted) = match r.origin {
            CppOrigin::Installed { package, .. } => {
                let label = format!("{package} {} (installed)", installed_version(package)?);
                (label.clone(), label)
            }
            CppOrigin::DebianSource {
                package,
                version,
                dsc_sha256,
            } => (
                format!("{package} {version} (source package)"),
                format!("{package} {version} (source package, .dsc sha256 {dsc_sha256})"),
            ),
        };
        let stamp = r.stamp(&base);
        let done = std::fs::read_to_string(&stamp).ok();
        if done.as_deref().map(str::trim) != Some(wanted.as_str()) || !dir.is_dir() {
            step(&format!("corpus: {} ({wanted})", r.name));
            std::fs::remove_file(&stamp).ok();
            if dir.exists() {
                std::fs::remove_dir_all(&dir)?;
            }
            match r.origin {
                CppOrigin::Installed { dir: from, .. } => copy_tree(Path::new(from), &dir)?,
                CppOrigin::DebianSource {
                    package,
                    version,
                    dsc_sha256,
                } => {
                    let dsc = fetch_debian_source(&base, package, version, dsc_sha256)?;
                    unpack_debian_source(&dsc, &dir)?;
                    if package == "snappy" {
                        snappy_generated_headers(&dir, version)?;
                    }
                }
            }
            std::fs::write(&stamp, format!("{wanted}\n"))?;
        }
        out.push(CppReady {
            name: r.name.into(),
            dir,
            version: label,
        });
    }
    write_manifest(&base)?;
    Ok(out)
}

/// The version of an installed Debian package.
fn installed_version(package: &str) -> Result<String> {
    let v = duct::cmd!("dpkg-query", "-W", "-f=${Version}", package)
        .stderr_null()
        .read()
        .ok()
        .filter(|v| !v.trim().is_empty())
        .with_context(|| {
            format!("the Debian package {package} is not installed; run `cargo xtask setup`")
        })?;
    Ok(v.trim().to_string())
}

/// Copies the regular files and folders below `from` into a new folder `to`.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    if !from.is_dir() {
        bail!(
            "{} is missing; run `cargo xtask setup` to install it",
            from.display()
        );
    }
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let ft = e.file_type()?;
        let target = to.join(e.file_name());
        if ft.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else if ft.is_file() {
            std::fs::copy(e.path(), &target)
                .with_context(|| format!("cannot copy {}", e.path().display()))?;
        }
    }
    Ok(())
}

/// The machine's Debian apt sources as one deb822 file that asks for source packages only.
/// One-line `deb` entries of `sources.list` files are converted; sources that are not
/// Debian's are left out, since only Debian's archive is reachable.
fn debian_source_stanzas(etc_apt: &Path) -> Result<String> {
    let mut files: Vec<PathBuf> = vec![etc_apt.join("sources.list")];
    if let Ok(rd) = std::fs::read_dir(etc_apt.join("sources.list.d")) {
        let mut more: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        more.sort();
        files.extend(more);
    }
    let mut out = String::new();
    for f in files {
        let name = f.to_string_lossy().to_string();
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if name.ends_with(".sources") {
            for stanza in text.split("\n\n") {
                let is_debian = stanza
                    .lines()
                    .any(|l| l.starts_with("URIs:") && l.contains("/debian"));
                let enabled = !stanza
                    .lines()
                    .any(|l| l.trim().eq_ignore_ascii_case("enabled: no"));
                if !is_debian || !enabled {
                    continue;
                }
                for line in stanza.lines() {
                    if line.starts_with("Types:") {
                        // The private lists only need the source indexes.
                        out.push_str("Types: deb-src\n");
                    } else if !line.starts_with('#') && !line.trim().is_empty() {
                        out.push_str(line);
                        out.push('\n');
                    }
                }
                out.push('\n');
            }
        } else if name.ends_with("sources.list") || name.ends_with(".list") {
            for line in text.lines() {
                let mut words = line.split_whitespace();
                if words.next() != Some("deb") {
                    continue;
                }
                let mut rest: Vec<&str> = words.collect();
                let mut signed_by = None;
                if rest.first().is_some_and(|w| w.starts_with('[')) {
                    while !rest.is_empty() {
                        let w = rest.remove(0);
                        let opt = w.trim_start_matches('[').trim_end_matches(']');
                        if let Some(v) = opt.strip_prefix("signed-by=") {
                            signed_by = Some(v.to_string());
                        }
                        if w.ends_with(']') {
                            break;
                        }
                    }
                }
                let [uri, suite, components @ ..] = rest.as_slice() else {
                    continue;
                };
                if !uri.contains("/debian") {
                    continue;
                }
                out.push_str(&format!(
                    "Types: deb-src\nURIs: {uri}\nSuites: {suite}\nComponents: {}\n",
                    components.join(" ")
                ));
                if let Some(s) = signed_by {
                    out.push_str(&format!("Signed-By: {s}\n"));
                }
                out.push('\n');
            }
        }
    }
    if out.is_empty() {
        bail!(
            "no Debian apt source found in {}: one is needed to fetch source packages",
            etc_apt.display()
        );
    }
    Ok(out)
}

/// The `.dsc` of `package` `version`, fetched with `apt-get source --download-only` when it
/// is not already downloaded, and checked against `dsc_sha256`.
fn fetch_debian_source(
    base: &Path,
    package: &str,
    version: &str,
    dsc_sha256: &str,
) -> Result<PathBuf> {
    let downloads = base.join("downloads").join(package);
    std::fs::create_dir_all(&downloads)?;
    // An epoch is not part of the file name.
    let file_version = version.split_once(':').map_or(version, |(_, v)| v);
    let dsc = downloads.join(format!("{package}_{file_version}.dsc"));
    let checked = |dsc: &Path| -> Result<bool> {
        Ok(dsc.is_file() && crate::setup::sha256(dsc)? == dsc_sha256)
    };
    if !checked(&dsc)? {
        if !crate::setup::is_root() {
            bail!("fetching the Debian source package {package} needs root (apt-get update)");
        }
        let apt = base.join("apt");
        for d in ["lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(apt.join(d))?;
        }
        let sources = apt.join("debian.sources");
        std::fs::write(&sources, debian_source_stanzas(Path::new("/etc/apt"))?)?;
        let opts: Vec<String> = vec![
            "-q".into(),
            "-o".into(),
            format!("Dir::Etc::SourceList={}", sources.display()),
            "-o".into(),
            "Dir::Etc::SourceParts=/dev/null".into(),
            "-o".into(),
            format!("Dir::State::Lists={}", apt.join("lists").display()),
            "-o".into(),
            format!("Dir::Cache={}", apt.join("cache").display()),
            // target/ is seldom readable by apt's `_apt` user; apt would fall back to root
            // with a warning anyway. What is fetched is checked against signed indexes.
            "-o".into(),
            "APT::Sandbox::User=root".into(),
        ];
        let mut update = opts.clone();
        update.push("update".into());
        duct::cmd("apt-get", &update)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .run()
            .context("apt-get update with the private deb-src list failed")?;
        let mut source = opts;
        source.extend([
            "source".into(),
            "--download-only".into(),
            format!("{package}={version}"),
        ]);
        duct::cmd("apt-get", &source)
            .dir(&downloads)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .run()
            .with_context(|| format!("apt-get source {package}={version} failed"))?;
        if !checked(&dsc)? {
            bail!(
                "{} does not have the pinned sha256 {dsc_sha256}; remove {} and retry, or update the pin",
                dsc.display(),
                downloads.display()
            );
        }
    }
    let text = std::fs::read_to_string(&dsc)?;
    let got = text
        .lines()
        .find_map(|l| l.strip_prefix("Version: "))
        .unwrap_or("");
    if got != version {
        bail!("{} is version {got}, expected {version}", dsc.display());
    }
    Ok(dsc)
}

/// Unpacks a Debian source package (its patches applied) into the new folder `to`.
/// `dpkg-source` checks every tarball against the hashes in the `.dsc`.
fn unpack_debian_source(dsc: &Path, to: &Path) -> Result<()> {
    let tmp = PathBuf::from(format!("{}.partial", to.display()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    duct::cmd!("dpkg-source", "--no-copy", "-x", dsc, &tmp)
        .stdout_to_stderr()
        .run()
        .with_context(|| {
            format!(
                "dpkg-source -x {} failed (is dpkg-dev installed? `cargo xtask setup`)",
                dsc.display()
            )
        })?;
    std::fs::rename(&tmp, to)?;
    Ok(())
}

/// The two headers snappy's CMake build generates: `snappy-stubs-public.h` from its `.in`
/// and `config.h` with what g++ on Debian has (no zlib, lzo or lz4 for the benchmarks, no
/// SSSE3/BMI2 code paths, little-endian).
fn snappy_generated_headers(dir: &Path, version: &str) -> Result<()> {
    let upstream = version.split('-').next().unwrap_or(version);
    let mut parts = upstream.split('.');
    let (major, minor, patch) = (
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
        parts.next().unwrap_or("0"),
    );
    let stubs = std::fs::read_to_string(dir.join("snappy-stubs-public.h.in"))?
        .replace("${HAVE_SYS_UIO_H_01}", "1")
        .replace("${PROJECT_VERSION_MAJOR}", major)
        .replace("${PROJECT_VERSION_MINOR}", minor)
        .replace("${PROJECT_VERSION_PATCH}", patch);
    if stubs.contains("${") {
        bail!("snappy-stubs-public.h.in has a placeholder this setup does not know");
    }
    std::fs::write(dir.join("snappy-stubs-public.h"), stubs)?;
    const DEFINED: &[&str] = &[
        "HAVE_ATTRIBUTE_ALWAYS_INLINE",
        "HAVE_BUILTIN_CTZ",
        "HAVE_BUILTIN_EXPECT",
        "HAVE_FUNC_MMAP",
        "HAVE_FUNC_SYSCONF",
        "HAVE_SYS_MMAN_H",
        "HAVE_SYS_RESOURCE_H",
        "HAVE_SYS_TIME_H",
        "HAVE_SYS_UIO_H",
        "HAVE_UNISTD_H",
    ];
    let mut config = String::new();
    for line in std::fs::read_to_string(dir.join("cmake/config.h.in"))?.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["#cmakedefine01", name] => config.push_str(&format!("#define {name} 0\n")),
            ["#cmakedefine", name, value] if DEFINED.contains(name) => {
                config.push_str(&format!("#define {name} {value}\n"))
            }
            ["#cmakedefine", name, ..] => config.push_str(&format!("/* #undef {name} */\n")),
            _ => {
                config.push_str(line);
                config.push('\n');
            }
        }
    }
    std::fs::write(dir.join("config.h"), config)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_sources_become_deb_src_stanzas() {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path();
        std::fs::create_dir_all(etc.join("sources.list.d")).unwrap();
        std::fs::write(
            etc.join("sources.list"),
            "deb [arch=amd64 signed-by=/k.gpg] http://deb.debian.org/debian bookworm main contrib\n\
             deb-src http://deb.debian.org/debian bookworm main\n\
             deb http://example.invalid/repo stable main\n",
        )
        .unwrap();
        std::fs::write(
            etc.join("sources.list.d/debian.sources"),
            "Types: deb\n# a comment\nURIs: http://deb.debian.org/debian-security\n\
             Suites: bookworm-security\nComponents: main\n\n\
             Types: deb\nURIs: https://other.invalid/x\nSuites: s\nComponents: main\n",
        )
        .unwrap();
        std::fs::write(
            etc.join("sources.list.d/nodesource.sources.disabled"),
            "Types: deb\nURIs: http://x.invalid/debian\nSuites: s\nComponents: main\n",
        )
        .unwrap();
        let got = debian_source_stanzas(etc).unwrap();
        assert_eq!(
            got,
            "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\n\
             Components: main contrib\nSigned-By: /k.gpg\n\n\
             Types: deb-src\nURIs: http://deb.debian.org/debian-security\n\
             Suites: bookworm-security\nComponents: main\n\n"
        );
    }
}
