//! Where a repository came from and under which license, read from its own files.
//!
//! `clover.toml` names a repository and its folder, nothing more, so the card says what the
//! folder itself says: the distribution's metadata (`PKG-INFO` of an sdist, `pyproject.toml`),
//! a Debian source package's `debian/copyright` and `debian/changelog`, a git checkout's
//! `HEAD` and `origin`, and the license text (`LICENSE*`, `COPYING*`), recognized by the
//! sentences each common license opens with. Nothing is fetched and nothing is guessed beyond
//! those: what is not found is said to be unknown.

use std::path::Path;

/// What the card says of one source repository.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Provenance {
    /// An SPDX identifier (`MIT`, `Apache-2.0`), or the license's own words when they are no
    /// identifier clover knows.
    pub license: Option<String>,
    /// The file the license was read from, relative to the repository root.
    pub license_file: Option<String>,
    /// Where the code came from: `itsdangerous 2.2.0 (PyPI sdist, https://…)`, a Debian
    /// source package and version, or a git remote and commit.
    pub source: Option<String>,
}

/// Reads what `root` says of itself.
pub fn read(root: &Path) -> Provenance {
    let mut p = Provenance::default();
    let text = |name: &str| std::fs::read_to_string(root.join(name)).ok();

    if let Some(pkg) = text("PKG-INFO") {
        let field = |key: &str| header_field(&pkg, key);
        if let (Some(name), Some(version)) = (field("Name"), field("Version")) {
            let url = field("Home-page").or_else(|| {
                pkg.lines()
                    .filter_map(|l| l.strip_prefix("Project-URL:"))
                    .find_map(|l| l.split_once(',').map(|(_, u)| u.trim().to_string()))
            });
            p.source = Some(match url {
                Some(url) => format!("{name} {version} (Python sdist; {url})"),
                None => format!("{name} {version} (Python sdist)"),
            });
        }
        p.license = field("License-Expression")
            .or_else(|| {
                pkg.lines()
                    .filter_map(|l| l.strip_prefix("Classifier: License :: OSI Approved :: "))
                    .find_map(spdx_of_classifier)
            })
            .or_else(|| field("License").filter(|l| !l.is_empty() && l.len() < 40));
        if p.license.is_some() {
            p.license_file = Some("PKG-INFO".into());
        }
    }
    let pyproject = text("pyproject.toml").unwrap_or_default();
    if p.license.is_none() {
        if let Some(license) = project_field(&pyproject, "license") {
            p.license = Some(license);
            p.license_file = Some("pyproject.toml".into());
        }
    }
    if let Some(changelog) = text("debian/changelog") {
        // `snappy (1.1.9-3) unstable; urgency=medium`
        if let Some((name, rest)) = changelog.lines().next().and_then(|l| l.split_once(" (")) {
            if let Some((version, _)) = rest.split_once(')') {
                p.source = Some(format!("{name} {version} (Debian source package)"));
            }
        }
    }
    if p.license.is_none() {
        if let Some(license) = text("debian/copyright").and_then(|t| debian_license(&t)) {
            p.license = Some(license);
            p.license_file = Some("debian/copyright".into());
        }
    }
    if p.source.is_none() {
        p.source = git_source(root);
    }
    if p.source.is_none() {
        let name = project_field(&pyproject, "name");
        if let (Some(name), Some(version)) = (name, project_field(&pyproject, "version")) {
            p.source = Some(format!("{name} {version} (pyproject.toml)"));
        }
    }
    if p.license.is_none() {
        if let Some((file, license)) = license_file(root) {
            p.license = Some(license);
            p.license_file = Some(file);
        }
    }
    p
}

/// `Key: value` of an RFC 822 header block (PKG-INFO), up to the first blank line.
fn header_field(text: &str, key: &str) -> Option<String> {
    text.lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty() && v != "UNKNOWN")
}

fn spdx_of_classifier(name: &str) -> Option<String> {
    let id = match name.trim() {
        "MIT License" => "MIT",
        "Apache Software License" => "Apache-2.0",
        "BSD License" => "BSD-3-Clause",
        "ISC License (ISCL)" => "ISC",
        "Mozilla Public License 2.0 (MPL 2.0)" => "MPL-2.0",
        "GNU General Public License v3 (GPLv3)" => "GPL-3.0",
        "GNU General Public License v2 (GPLv2)" => "GPL-2.0",
        "GNU Lesser General Public License v3 (LGPLv3)" => "LGPL-3.0",
        "Python Software Foundation License" => "PSF-2.0",
        _ => return None,
    };
    Some(id.to_string())
}

/// A short text `key = "…"` (or `key = { text = "…" }`, the old form of `license`) of
/// `pyproject.toml`'s `[project]` table, read by line: no TOML parser for three fields.
fn project_field(text: &str, key: &str) -> Option<String> {
    let mut in_project = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_project = line == "[project]";
            continue;
        }
        let Some(value) = line
            .strip_prefix(key)
            .map(str::trim_start)
            .and_then(|l| l.strip_prefix('='))
        else {
            continue;
        };
        if !in_project {
            continue;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('{')
            .and_then(|v| v.split_once("text"))
            .map(|(_, v)| v.trim_start().trim_start_matches('=').trim())
            .unwrap_or(value);
        let quoted = value.trim_matches(|c| c == '}' || c == ' ');
        let inner = quoted.trim_matches('"').trim_matches('\'');
        if !inner.is_empty() && inner.len() < 40 && !inner.contains('\n') {
            return Some(inner.to_string());
        }
    }
    None
}

/// The `License:` of the `Files: *` paragraph of a machine-readable `debian/copyright`.
fn debian_license(text: &str) -> Option<String> {
    text.split("\n\n")
        .find(|para| para.lines().any(|l| l.trim() == "Files: *"))
        .and_then(|para| {
            para.lines()
                .find_map(|l| l.strip_prefix("License:"))
                .map(|l| l.trim().to_string())
        })
        .filter(|l| !l.is_empty())
}

/// `origin`'s URL and the commit `HEAD` names, read from `.git` without running git.
fn git_source(root: &Path) -> Option<String> {
    let git = root.join(".git");
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let commit = match head.strip_prefix("ref: ") {
        Some(r) => std::fs::read_to_string(git.join(r))
            .ok()
            .map(|c| c.trim().to_string())
            .or_else(|| {
                let packed = std::fs::read_to_string(git.join("packed-refs")).ok()?;
                packed
                    .lines()
                    .find_map(|l| l.strip_suffix(r).map(|c| c.trim().to_string()))
            })?,
        None => head.to_string(),
    };
    let config = std::fs::read_to_string(git.join("config")).unwrap_or_default();
    let url = config.split("[remote \"origin\"]").nth(1).and_then(|s| {
        s.lines()
            .take_while(|l| !l.trim_start().starts_with('['))
            .find_map(|l| l.trim().strip_prefix("url = ").map(str::to_string))
    });
    Some(match url {
        Some(url) => format!("git {url} at {commit}"),
        None => format!("git commit {commit}"),
    })
}

/// A license file at the root, recognized by the words its license is written in.
fn license_file(root: &Path) -> Option<(String, String)> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            let upper = n.to_ascii_uppercase();
            upper.starts_with("LICENSE")
                || upper.starts_with("LICENCE")
                || upper.starts_with("COPYING")
        })
        .collect();
    names.sort();
    for name in names {
        let Ok(text) = std::fs::read_to_string(root.join(&name)) else {
            continue;
        };
        if let Some(id) = spdx_of_text(&text) {
            return Some((name, id.to_string()));
        }
    }
    None
}

/// The license a text is, by the sentences that set each apart.
pub fn spdx_of_text(text: &str) -> Option<&'static str> {
    let t: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let has = |s: &str| t.contains(s);
    Some(if has("Apache License") && has("Version 2.0") {
        "Apache-2.0"
    } else if has("Permission is hereby granted, free of charge") {
        "MIT"
    } else if has("Redistribution and use in source and binary forms") {
        if has("Neither the name") || has("may be used to endorse or promote") {
            "BSD-3-Clause"
        } else {
            "BSD-2-Clause"
        }
    } else if has("GNU LESSER GENERAL PUBLIC LICENSE") {
        if has("Version 3") {
            "LGPL-3.0"
        } else {
            "LGPL-2.1"
        }
    } else if has("GNU GENERAL PUBLIC LICENSE") {
        if has("Version 3") {
            "GPL-3.0"
        } else {
            "GPL-2.0"
        }
    } else if has("Mozilla Public License Version 2.0") {
        "MPL-2.0"
    } else if has("Permission to use, copy, modify, and/or distribute this software") {
        "ISC"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_sdist_says_its_name_version_url_and_license() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("PKG-INFO"),
            "Metadata-Version: 2.1\nName: ledger\nVersion: 1.2.0\n\
             Project-URL: Source, https://example.org/ledger\n\
             Classifier: License :: OSI Approved :: BSD License\n\nlong description\n",
        )
        .unwrap();
        let p = read(dir.path());
        assert_eq!(
            p.source.as_deref(),
            Some("ledger 1.2.0 (Python sdist; https://example.org/ledger)")
        );
        assert_eq!(p.license.as_deref(), Some("BSD-3-Clause"));
        assert_eq!(p.license_file.as_deref(), Some("PKG-INFO"));
    }

    #[test]
    fn a_debian_package_and_a_license_text_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("debian")).unwrap();
        std::fs::write(
            dir.path().join("debian/changelog"),
            "snappy (1.1.9-3) unstable; urgency=medium\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("COPYING"),
            "Copyright 2011 Google Inc.\n\nRedistribution and use in source and binary\n\
             forms, with or without modification ... Neither the name of Google Inc. ...",
        )
        .unwrap();
        let p = read(dir.path());
        assert_eq!(
            p.source.as_deref(),
            Some("snappy 1.1.9-3 (Debian source package)")
        );
        assert_eq!(p.license.as_deref(), Some("BSD-3-Clause"));
        assert_eq!(p.license_file.as_deref(), Some("COPYING"));
    }

    #[test]
    fn a_git_checkout_gives_its_remote_and_commit_and_nothing_found_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), Provenance::default());
        let git = dir.path().join(".git");
        std::fs::create_dir_all(git.join("refs/heads")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(git.join("refs/heads/main"), "0123abcd\n").unwrap();
        std::fs::write(
            git.join("config"),
            "[core]\n\tbare = false\n[remote \"origin\"]\n\turl = https://example.org/r.git\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[tool.x]\nlicense = \"no\"\n[project]\nname = \"r\"\nlicense = { text = \"MIT\" }\n",
        )
        .unwrap();
        let p = read(dir.path());
        assert_eq!(
            p.source.as_deref(),
            Some("git https://example.org/r.git at 0123abcd")
        );
        assert_eq!(p.license.as_deref(), Some("MIT"));
    }
}
