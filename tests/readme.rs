//! The README stays true to the repository: its quick start is `tethered-tokio`'s opening
//! doctest (both copies compile and run; this keeps them the same), and it lists every example.

/// The lines of the first block fenced by `fence` (e.g. "```rust") after `after`, without the
/// fences.
fn first_block_after<'a>(text: &'a str, after: &str, fence: &str) -> Vec<&'a str> {
    let start = text
        .find(after)
        .unwrap_or_else(|| panic!("`{after}` not found"));
    text[start..]
        .lines()
        .skip_while(|line| !line.starts_with(fence))
        .skip(1)
        .take_while(|line| !line.starts_with("```"))
        .collect()
}

#[test]
fn the_tokio_adapter_docs_open_with_the_readme_quick_start() {
    let readme = include_str!("../README.md");
    let quick_start = first_block_after(readme, "## Quick start", "```rust");
    let crate_docs: String = include_str!("../crates/tethered-tokio/src/lib.rs")
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    let opening_doctest = first_block_after(&crate_docs, "", "```");
    assert!(quick_start.len() > 10, "{quick_start:#?}");
    assert_eq!(
        opening_doctest, quick_start,
        "crates/tethered-tokio/src/lib.rs must open with the README's quick start"
    );
}

#[test]
fn the_readme_lists_every_example() {
    let readme = include_str!("../README.md");
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut names: Vec<String> = std::fs::read_dir(&examples)
        .expect("the examples directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect();
    names.sort();
    assert!(names.len() >= 12, "{names:?}");
    for name in names {
        assert!(
            readme.contains(&format!("[`{name}`](examples/")),
            "README.md does not list examples/{name}"
        );
    }
}
