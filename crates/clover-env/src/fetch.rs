//! A recipe's source distribution, fetched by the ecosystem's own client, checked by its
//! sha256, and unpacked.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// `python -m pip download` of `requirement` alone (no dependencies) into `into`: its wheel
/// (`wheel`) or its source distribution. The ecosystem's own client, so a registry mirror
/// or `PIP_*` settings apply.
pub fn pip_download(python: &Path, into: &Path, requirement: &str, wheel: bool) -> Result<()> {
    let status = Command::new(python)
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
            if wheel {
                "--only-binary"
            } else {
                "--no-binary"
            },
            ":all:",
            "-d",
        ])
        .arg(into)
        .arg(requirement)
        .status()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !status.success() {
        bail!("pip download of {requirement} failed ({status})");
    }
    Ok(())
}

/// The source distribution of `project` `version` in `downloads`, fetched when it is not
/// there, and checked against `sha256`: one that does not match is removed and refused.
pub fn fetch_sdist(
    python: &Path,
    downloads: &Path,
    project: &str,
    version: &str,
    sha256: &str,
) -> Result<PathBuf> {
    std::fs::create_dir_all(downloads)
        .with_context(|| format!("cannot make {}", downloads.display()))?;
    // The registry normalizes names in file names (`SQLAlchemy` → `sqlalchemy`, `-` → `_`).
    let stem = format!("{project}-{version}")
        .to_lowercase()
        .replace(['-', '.'], "_");
    let find = || -> Option<PathBuf> {
        std::fs::read_dir(downloads)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|f| {
                let n = f
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or("")
                    .to_lowercase()
                    .replace(['-', '.'], "_");
                n.starts_with(&stem) && n.ends_with("_tar_gz")
            })
    };
    if find().is_none() {
        pip_download(python, downloads, &format!("{project}=={version}"), false)?;
    }
    let sdist = find().with_context(|| {
        format!(
            "no source distribution of {project} {version} in {}",
            downloads.display()
        )
    })?;
    let bytes =
        std::fs::read(&sdist).with_context(|| format!("cannot read {}", sdist.display()))?;
    let got = clover_protocol::sha256_hex(&bytes);
    if got != sha256 {
        std::fs::remove_file(&sdist).ok();
        bail!(
            "{} has sha256 {got}, expected {sha256}; removed it",
            sdist.display()
        );
    }
    Ok(sdist)
}

/// Unpacks the source distribution `sdist` (a `.tar.gz` with one top folder) as `into`,
/// through a folder beside it, so that `into` is whole or not there.
pub fn unpack(sdist: &Path, into: &Path) -> Result<()> {
    let parent = into.parent().context("the unpack folder has no parent")?;
    std::fs::create_dir_all(parent)?;
    let tmp = parent.join(format!(
        ".{}.partial",
        into.file_name().unwrap_or_default().to_string_lossy()
    ));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
    }
    std::fs::create_dir_all(&tmp)?;
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(sdist)
        .arg("-C")
        .arg(&tmp)
        .status()
        .context("cannot run tar")?;
    if !status.success() {
        std::fs::remove_dir_all(&tmp).ok();
        bail!("tar could not unpack {} ({status})", sdist.display());
    }
    let tops: Vec<PathBuf> = std::fs::read_dir(&tmp)?
        .flatten()
        .map(|e| e.path())
        .collect();
    let [top] = tops.as_slice() else {
        std::fs::remove_dir_all(&tmp).ok();
        bail!("{} does not hold one top folder", sdist.display());
    };
    std::fs::rename(top, into)
        .with_context(|| format!("cannot move the unpacked tree to {}", into.display()))?;
    std::fs::remove_dir_all(&tmp).ok();
    Ok(())
}
