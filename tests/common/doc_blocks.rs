//! The fenced blocks of README.md and docs/*.md, and the physfit commands
//! of their `sh` blocks: what the documentation tests run (tests/cpu/
//! doc_examples.rs loads the TOML examples, tests/gpu_mpm/doc_commands.rs
//! runs the commands).

use std::path::{Path, PathBuf};

/// The repository's top.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The documents whose examples must run.
pub fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// A fenced block: where it starts, its info string, its text.
pub struct Block {
    /// `file:line` of its opening fence.
    pub place: String,
    /// What follows the opening fence (`toml scene`, `sh`).
    pub info: String,
    /// Its lines.
    pub text: String,
}

/// The fenced blocks of the document at `path`.
pub fn blocks(path: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(repo()).unwrap().display().to_string();
    let mut found = Vec::new();
    let mut open: Option<(usize, String, String)> = None;
    for (n, line) in text.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((n + 1, info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => {
                let (line, info, text) = open.take().unwrap();
                found.push(Block {
                    place: format!("{name}:{line}"),
                    info,
                    text,
                });
            }
            (Some((_, _, text)), None) => {
                text.push_str(line);
                text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{name}: a fenced block is not closed");
    found
}

/// The fenced blocks of every document.
pub fn all_blocks() -> Vec<Block> {
    documents().iter().flat_map(|d| blocks(d)).collect()
}

/// The words of a shell command line: whitespace-separated, with `"…"` and
/// `'…'` quoting (enough for the documents' commands).
pub fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                started = true;
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '#') if !started => break,
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        out.push(word);
    }
    out
}

/// Every physfit command of the `sh` blocks, continuation lines joined:
/// its place and its arguments after the program.
pub fn commands() -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    for block in all_blocks().into_iter().filter(|b| b.info == "sh") {
        let joined = block.text.replace("\\\n", " ");
        for line in joined.lines() {
            let w = words(line);
            let start = w.iter().position(|w| {
                w == "physfit" || w.ends_with("/physfit") || w == "--" && line.contains("cargo run")
            });
            if let Some(start) = start {
                found.push((block.place.clone(), w[start + 1..].to_vec()));
            }
        }
    }
    found
}
