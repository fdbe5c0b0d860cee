//! Sections of generated documents: each command owns the text between its two markers.

use std::path::Path;

use anyhow::Result;

/// Replaces the text from `begin` to `end` (markers included) in `docs/BENCHMARKS.md` with
/// `section`, or appends `section` when the markers are not there yet.
pub fn replace_section(root: &Path, begin: &str, end: &str, section: &str) -> Result<()> {
    let path = root.join("docs/BENCHMARKS.md");
    let old = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Benchmarks\n".to_string());
    let new = match (old.find(begin), old.find(end)) {
        (Some(a), Some(b)) if a < b => format!(
            "{}{}{}",
            &old[..a],
            section,
            &old[b + end.len()..].trim_start_matches('\n')
        ),
        _ => format!(
            "{}\n{}",
            old.trim_end_matches('\n').to_string() + "\n",
            section
        ),
    };
    std::fs::write(&path, new)?;
    eprintln!("written to {}", path.display());
    Ok(())
}

/// One measured comparison of `cargo xtask bench`'s table: what clover took, what the
/// baseline of the same run took, their ratio and the target it is held to.
pub struct Row {
    pub name: String,
    pub measured: String,
    pub baseline: String,
    pub ratio: f64,
    pub target: String,
}
