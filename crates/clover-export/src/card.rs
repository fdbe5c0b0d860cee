//! The dataset card, `README.md`: the YAML header the Hub and `datasets` read (configs, their
//! files and declared features, the licenses) and a body for people (what the records are,
//! how to load them, where each repository came from, how absent values read).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use clover_protocol::SCHEMA_VERSION;

use crate::features::{quote, yaml_features};
use crate::Export;

/// The Hub's license ids for the SPDX identifiers [`crate::provenance`] recognizes.
const HUB_LICENSES: &[(&str, &str)] = &[
    ("MIT", "mit"),
    ("Apache-2.0", "apache-2.0"),
    ("BSD-2-Clause", "bsd-2-clause"),
    ("BSD-3-Clause", "bsd-3-clause"),
    ("GPL-2.0", "gpl-2.0"),
    ("GPL-3.0", "gpl-3.0"),
    ("LGPL-2.1", "lgpl-2.1"),
    ("LGPL-3.0", "lgpl-3.0"),
    ("MPL-2.0", "mpl-2.0"),
    ("ISC", "isc"),
];

/// The card's text.
pub fn write_card(name: &str, export: &Export) -> String {
    let mut out = String::from("---\n");
    let _ = writeln!(out, "pretty_name: {}", quote(name));
    out.push_str("license:\n");
    for license in hub_licenses(export) {
        let _ = writeln!(out, "- {license}");
    }
    out.push_str("tags:\n- code\n- unit-test-generation\n- clover\n");
    out.push_str("configs:\n");
    for (i, config) in export.configs.iter().enumerate() {
        let _ = writeln!(out, "- config_name: {}", quote(&config.name));
        if i == 0 {
            // `load_dataset(DIR)` without a config name loads this one.
            out.push_str("  default: true\n");
        }
        out.push_str("  data_files:\n");
        for split in config.splits.keys() {
            let _ = writeln!(out, "  - split: {}", quote(split));
            let _ = writeln!(out, "    path: {}", quote(&config.file(split)));
        }
    }
    out.push_str("dataset_info:\n");
    for config in &export.configs {
        let _ = writeln!(out, "- config_name: {}", quote(&config.name));
        out.push_str("  features:\n");
        out.push_str(&yaml_features(&config.features, 2));
        out.push_str("  splits:\n");
        for (split, n) in &config.splits {
            let _ = writeln!(out, "  - name: {}\n    num_examples: {n}", quote(split));
        }
    }
    out.push_str("---\n\n");

    let _ = writeln!(out, "# {name}\n");
    let _ = writeln!(
        out,
        "{} `{}` record(s) written by clover {} (schema version {SCHEMA_VERSION}), one JSON \
         object per line, as the `{}` stage writes them. Every column's type is declared \
         above, so loading infers nothing.\n",
        export.records(),
        export.kind,
        env!("CARGO_PKG_VERSION"),
        stage_of(export),
    );
    out.push_str("## Loading\n\n```python\nfrom datasets import load_dataset\n\n");
    let first = &export.configs[0];
    let split = first.splits.keys().next().map_or("test", String::as_str);
    let _ = writeln!(
        out,
        "ds = load_dataset(\"path/to/this/folder\", {}, split={})\n```\n",
        quote(&first.name),
        quote(split)
    );
    out.push_str("## Configs\n\n| config | split | records | file |\n|---|---|---:|---|\n");
    for config in &export.configs {
        for (split, n) in &config.splits {
            let _ = writeln!(
                out,
                "| {} | {split} | {n} | `{}` |",
                config.name,
                config.file(split)
            );
        }
    }
    out.push_str(
        "\n## Sources\n\nThe code in these records is the source repositories' own, under their \
         licenses.\n\n| repository | records | license | source |\n|---|---:|---|---|\n",
    );
    for s in &export.sources {
        let (license, source) = match &s.provenance {
            None => (
                "unknown (the export was not given the repository)".to_string(),
                "unknown".to_string(),
            ),
            Some(p) => (
                match (&p.license, &p.license_file) {
                    (Some(l), Some(f)) => format!("{l} (`{f}`)"),
                    (Some(l), None) => l.clone(),
                    _ => "unknown (no license file or metadata found)".into(),
                },
                p.source.clone().unwrap_or_else(|| "unknown".into()),
            ),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&s.repo),
            s.records,
            cell(&license),
            cell(&source)
        );
    }
    out.push_str(
        "\n## Reading the columns\n\n\
         - A value that is absent is written in its column's own type, never as `null`: `\"\"` \
         for text and names, `-1` for counts, codes and settings that are never negative \
         (`exit_code`, `signal`, `seed`, `max_tokens`, temperature, top_p), `-9` for a \
         frequency or presence penalty (their range, -2 to 2, holds -1).\n\
         - `scoring` holds the JSON text of an object whose keys depend on the task: \
         `json.loads(row[\"scoring\"])`.\n\
         - A list that can be empty in every record of a file (`tests`, `coverage`, \
         `context_files`, `selectors`, `stop`, …) holds the JSON text of the list, and a part \
         that belongs to one language only (a problem's `python` or `cpp`) the JSON text of the \
         part, `\"\"` in the other language's records: `json.loads(row[\"tests\"])`.\n",
    );
    out
}

/// The stage whose output the records are.
fn stage_of(export: &Export) -> &'static str {
    match export.kind.as_str() {
        "problem" => "extract",
        "calibrated_problem" => "calibrate",
        "instance" | "sft_example" => "pack-context",
        "response" => "generate",
        "run_result" => "sandbox-run",
        "score_row" => "score",
        _ => "clover",
    }
}

/// The `license:` list: the Hub's id of each source's license, `other` for a license it has
/// no id for, `unknown` when some source's is not known.
fn hub_licenses(export: &Export) -> BTreeSet<String> {
    export
        .sources
        .iter()
        .map(|s| {
            match s.provenance.as_ref().and_then(|p| p.license.as_deref()) {
                None => "unknown",
                Some(l) => HUB_LICENSES
                    .iter()
                    .find(|(spdx, _)| spdx.eq_ignore_ascii_case(l))
                    .map_or("other", |(_, hub)| hub),
            }
            .to_string()
        })
        .collect()
}

/// Text for a Markdown table cell.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}
