#![cfg(test)]
//! What the prose quotes of the code: the code spans and code-block lines of the README and
//! docs/, and the code spans of the doc comments in src/. The tests hold each quote to the one
//! home of its fact: a grammar to the command table, an error text to error.rs.

use std::path::{Path, PathBuf};

/// One quote, and where it was found.
pub struct Quote {
    pub text: String,
    pub place: String,
}

/// Every quote in the README, docs/*.md and the doc comments of src/.
pub fn all() -> Vec<Quote> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut quotes = Vec::new();
    let mut pages = vec![root.join("README.md")];
    pages.extend(files(&root.join("docs"), "md"));
    for page in pages {
        let text = read(&page);
        quotes.extend(in_markdown(&text, &place(root, &page)));
    }
    for source in files(&root.join("src"), "rs") {
        let comments = doc_comments(&read(&source));
        quotes.extend(in_spans(&comments, &place(root, &source)));
    }
    // The library's sources, not its generated forms (lua/dist), which repeat them.
    for source in files(&root.join("lua"), "lua") {
        if !source.starts_with(root.join("lua").join("dist")) {
            quotes.extend(in_lua(&read(&source), &place(root, &source)));
        }
    }
    quotes
}

/// The error texts a Lua source builds: each string literal that opens with an error code,
/// with the literals joined to it by `..`, and `…` for what is joined in between.
fn in_lua(source: &str, place: &str) -> Vec<Quote> {
    // A chain that goes on past a line's end is one line here.
    let mut joined = String::new();
    for line in source.lines() {
        joined.push_str(line);
        joined.push(if line.trim_end().ends_with("..") {
            ' '
        } else {
            '\n'
        });
    }
    let mut quotes = Vec::new();
    for line in joined.lines() {
        let mut rest = line;
        while let Some(at) = ["'ERR ", "\"ERR ", "'WRONGTYPE "]
            .iter()
            .filter_map(|opening| rest.find(opening))
            .min()
        {
            let (mut text, after) = lua_concatenation(&rest[at..]);
            // A code and placeholders alone would fit any template: a text built where
            // this cannot read it fails the check instead.
            if text.split_whitespace().skip(1).all(|word| word == "…") {
                text =
                    format!("ERR (an error text in {place} built where the check cannot read it)");
            }
            quotes.push(Quote {
                text,
                place: place.to_owned(),
            });
            rest = after;
        }
    }
    quotes
}

/// A chain of literals and names joined by `..`, from its first literal: its text, and what
/// follows the chain.
fn lua_concatenation(chain: &str) -> (String, &str) {
    let mut text = String::new();
    let mut rest = chain;
    loop {
        rest = rest.trim_start();
        if let Some(quote) = rest.chars().next().filter(|c| *c == '\'' || *c == '"') {
            let mut chars = rest.char_indices().skip(1);
            let mut end = rest.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            text.push(escaped);
                        }
                    }
                    c if c == quote => {
                        end = i + 1;
                        break;
                    }
                    c => text.push(c),
                }
            }
            rest = &rest[end..];
        } else {
            let name_end = rest
                .find(|c: char| !(c.is_alphanumeric() || "_.[]".contains(c)))
                .unwrap_or(rest.len());
            if name_end == 0 {
                break;
            }
            text.push('…');
            rest = &rest[name_end..];
        }
        match rest.trim_start().strip_prefix("..") {
            Some(after) => rest = after,
            None => break,
        }
    }
    (text, rest)
}

/// A page's code: each line of its fenced blocks, and each code span of the rest.
fn in_markdown(text: &str, place: &str) -> Vec<Quote> {
    let mut quotes = Vec::new();
    let mut prose = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            // Columns aligned with spaces read as one space each.
            quotes.push(Quote {
                text: line.split_whitespace().collect::<Vec<_>>().join(" "),
                place: place.to_owned(),
            });
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    quotes.extend(in_spans(&prose, place));
    quotes
}

/// The code spans of prose: text between single backticks, a span may run over a line's end.
fn in_spans(prose: &str, place: &str) -> Vec<Quote> {
    prose
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|span| Quote {
            text: span.split_whitespace().collect::<Vec<_>>().join(" "),
            place: place.to_owned(),
        })
        .collect()
}

/// The doc comments of a source file, as one text, a line each.
fn doc_comments(source: &str) -> String {
    source
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            line.strip_prefix("///")
                .or_else(|| line.strip_prefix("//!"))
        })
        .map(|line| format!("{line}\n"))
        .collect()
}

fn files(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path, extension));
        } else if path.extension().is_some_and(|e| e == extension) {
            found.push(path);
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn place(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
