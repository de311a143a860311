//! Where in `scene.toml` a parse error lies: the line that nests too
//! deep, and the table, header and key at an error's byte offset, so that
//! [`Scene::load`](super::Scene::load) names the field and the fix
//! (docs/scene.md).

/// The most a scene file nests keys, tables and arrays before it is
/// refused without parsing (the deepest real field, `views.camera.look_at`
/// in an inline table, is a handful).
const MAX_NESTING: usize = 64;

/// The first line (1-based) where keys (dotted), tables and arrays nest
/// deeper than [`MAX_NESTING`], with the depth: refused before parsing, so
/// that the error names the line (the parser's recursion limit names none).
pub(crate) fn deepest_nesting(text: &str) -> Option<(usize, usize)> {
    let mut open = 0usize;
    for (n, line) in text.lines().enumerate() {
        let mut quote: Option<char> = None;
        let mut dots = 0usize;
        let mut before_value = true;
        for c in line.chars() {
            let in_string = quote.is_some();
            match c {
                '"' | '\'' if quote == Some(c) => quote = None,
                '"' | '\'' if !in_string => quote = Some(c),
                '#' if !in_string => break,
                '=' if !in_string => before_value = false,
                '.' if !in_string && before_value => dots += 1,
                '{' | '[' if !in_string => open += 1,
                '}' | ']' if !in_string => open = open.saturating_sub(1),
                _ => {}
            }
            if open + dots > MAX_NESTING {
                return Some((n + 1, open + dots));
            }
        }
    }
    None
}

/// The table whose header (`[name]` or `[[name]]`) is the line at
/// `offset`, if that line is a header.
pub(crate) fn header_at(text: &str, offset: usize) -> Option<String> {
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?.trim();
    let name = line
        .strip_prefix("[[")
        .and_then(|l| l.split("]]").next())
        .or_else(|| line.strip_prefix('[').and_then(|l| l.split(']').next()))?
        .trim();
    // A header names a key path; an array row (`[0.0],`) does not.
    let key_path = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '"')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.\" ".contains(c));
    (key_path && !line.contains('=')).then(|| name.to_string())
}

/// The key of the `key = value` line holding byte `offset` of `text`, when
/// that line is one (a parse error's span points at the value).
pub(crate) fn key_at(text: &str, offset: usize) -> Option<String> {
    let start = text.get(..offset)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim();
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    plain.then(|| key.to_string())
}

/// The TOML path of the table that holds byte `offset` of `text` (e.g.
/// `views[1].camera`), from the last `[table]` / `[[array]]` header before
/// it; `[[views]]` entries are numbered. `None` at the top level.
pub(crate) fn table_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let mut current: Option<String> = None;
    // Entries seen so far of each array of tables (`[[views]]`,
    // `[[simulation.colliders]]`), numbered in the name.
    let mut entries: Vec<(String, usize)> = Vec::new();
    // A header names a key path; array rows in multi-line arrays (`[1, 0, 0],`) do not.
    let is_key_path = |name: &str| {
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_' || c == '"')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.\" ".contains(c))
    };
    for line in before.lines() {
        let line = line.trim();
        if let Some(name) = line.strip_prefix("[[").and_then(|l| l.split("]]").next()) {
            let name = name.trim();
            if !is_key_path(name) {
                continue;
            }
            match entries.iter_mut().find(|(array, _)| array == name) {
                Some((_, count)) => *count += 1,
                None => entries.push((name.to_string(), 1)),
            }
            current = Some(name.to_string());
        } else if let Some(name) = line.strip_prefix('[').and_then(|l| l.split(']').next()) {
            if is_key_path(name.trim()) {
                current = Some(name.trim().to_string());
            }
        }
    }
    let name = current?;
    // The longest array the table is, or is inside of.
    let array = entries
        .iter()
        .filter(|(array, _)| {
            name.strip_prefix(array.as_str())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
        })
        .max_by_key(|(array, _)| array.len());
    match array {
        Some((array, count)) => Some(format!("{array}[{}]{}", count - 1, &name[array.len()..])),
        None => Some(name),
    }
}
