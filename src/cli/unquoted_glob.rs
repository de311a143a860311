//! A hint for `render --splats` given an unquoted pattern: the shell
//! expands `--splats out/frame_*.ply` into one argument per file before
//! physfit runs, and clap then sees the second file as an unexpected
//! argument. physfit cannot undo the expansion, but it can recognise it and
//! say to quote the pattern.

/// The hint when `args` (the command line, program first) hold `--splats`
/// followed by more than one file-like argument (not a flag): what the
/// shell made of a pattern. `None` otherwise.
pub fn unquoted_glob_hint(args: &[String]) -> Option<String> {
    let at = args.iter().position(|a| a == "--splats")?;
    let files: Vec<&String> = args[at + 1..]
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .filter(|a| a.ends_with(".ply"))
        .collect();
    if files.len() < 2 {
        return None;
    }
    Some(format!(
        "hint: the shell expanded the pattern after --splats into {} files ({}, {}, …) before \
         physfit saw it; quote the pattern so that physfit reads it whole: --splats '{}'",
        files.len(),
        files[0],
        files[1],
        pattern_of(files[0])
    ))
}

/// `path` with the last run of digits in its file name replaced by `*`
/// (`out/frame_0003.ply` → `out/frame_*.ply`): the pattern the user most
/// likely typed.
fn pattern_of(path: &str) -> String {
    let name_start = path.rfind('/').map_or(0, |i| i + 1);
    let name = &path[name_start..];
    let Some(end) = name.rfind(|c: char| c.is_ascii_digit()) else {
        return path.to_string();
    };
    let start = name[..=end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    format!(
        "{}{}*{}",
        &path[..name_start],
        &name[..start],
        &name[end + 1..]
    )
}

#[cfg(test)]
mod tests {
    use super::unquoted_glob_hint;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn an_expanded_pattern_gets_a_hint_to_quote_it() {
        let hint = unquoted_glob_hint(&args(
            "physfit render s.toml --splats out/x/frame_0000.ply out/x/frame_0001.ply \
             out/x/frame_0002.ply --out r",
        ))
        .unwrap();
        assert!(hint.contains("3 files"), "{hint}");
        assert!(hint.contains("--splats 'out/x/frame_*.ply'"), "{hint}");
    }

    #[test]
    fn a_quoted_pattern_or_another_command_gets_none() {
        assert_eq!(
            unquoted_glob_hint(&args(
                "physfit render s.toml --splats out/frame_*.ply --out r"
            )),
            None
        );
        assert_eq!(
            unquoted_glob_hint(&args("physfit render a.ply b.ply")),
            None
        );
    }
}
