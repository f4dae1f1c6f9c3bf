//! Config overrides by path: `machine.tiers[1].capacity = "64G"`.
//!
//! One path syntax everywhere: the CLI's `tiermem sim --set PATH=VALUE`, Python's
//! `simulate(overrides=...)` and `sweep` grids (through `tiermem._native`), the
//! reproductions, and the field paths that config errors name. Table keys are joined by
//! dots, array elements are `[i]` (0-based): `machine.tiers[1].capacity` is `capacity` in
//! the second `[[machine.tiers]]`. A key is a TOML bare key (letters, digits, `_`, `-`).
//!
//! [`set_path`] creates missing tables on the way (`colloid.delta` adds `[colloid]`), but
//! never array elements; the simulator's schema (unknown fields are errors) then judges
//! the result. Every error is a config error naming the whole path and what is wrong.

use tiermem_core::{Error, Result};

/// One step of a path: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// The canonical text of `segments` (`machine.tiers[1].capacity`).
pub fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for s in segments {
        match s {
            Segment::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Segment::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn path_error(path: &str, what: impl std::fmt::Display) -> Error {
    Error::config(format!("field `{path}`: {what}"))
}

const SYNTAX: &str = "write table keys separated by dots and array elements as [i], e.g. `machine.tiers[1].capacity`";

/// Parse `machine.tiers[1].capacity` into segments.
pub fn parse_path(path: &str) -> Result<Vec<Segment>> {
    let bad = |what: String| path_error(path, format!("not a valid path: {what}; {SYNTAX}"));
    if path.trim().is_empty() {
        return Err(Error::config(format!("empty field path; {SYNTAX}")));
    }
    let chars: Vec<char> = path.chars().collect();
    let mut segs = Vec::new();
    let mut i = 0;
    // Expecting a key: at the start and after every dot.
    let mut want_key = true;
    while i < chars.len() {
        let c = chars[i];
        if want_key {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '-')
            {
                i += 1;
            }
            if i == start {
                return Err(bad(match c {
                    '.' => format!("empty key before the dot at position {}", i + 1),
                    '[' if segs.is_empty() => {
                        "it starts with an index; the config itself is a table".into()
                    }
                    _ => format!("`{c}` at position {} cannot start a key", i + 1),
                }));
            }
            segs.push(Segment::Key(chars[start..i].iter().collect()));
            want_key = false;
            continue;
        }
        match c {
            '.' => {
                want_key = true;
                i += 1;
                if i == chars.len() {
                    return Err(bad("it ends with a dot".into()));
                }
            }
            '[' => {
                let close = chars[i..].iter().position(|&ch| ch == ']').map(|p| p + i);
                let Some(close) = close else {
                    return Err(bad(format!(
                        "the `[` at position {} is never closed",
                        i + 1
                    )));
                };
                let inner: String = chars[i + 1..close].iter().collect();
                let index = inner.trim().parse::<usize>().map_err(|_| {
                    bad(format!(
                        "`[{inner}]` is not an array index (a number 0, 1, ...)"
                    ))
                })?;
                segs.push(Segment::Index(index));
                i = close + 1;
            }
            other => {
                return Err(bad(format!(
                    "`{other}` at position {} (a key is letters, digits, `_` and `-`)",
                    i + 1
                )))
            }
        }
    }
    Ok(segs)
}

/// What `node` is, for messages ("an integer", "a table").
fn kind_of(v: &toml::Value) -> String {
    let t = v.type_str();
    let article = if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {t}")
}

fn out_of_range(path: &str, at: &str, len: usize, index: usize) -> Error {
    let valid = if len == 0 {
        "it is empty".to_string()
    } else {
        format!("use 0..{}", len - 1)
    };
    path_error(
        path,
        format!("`{at}` has {len} entries, so index {index} does not exist; {valid}"),
    )
}

/// Set the value at `path` in `doc` (a TOML document), creating missing tables on the way.
///
/// Errors (config errors naming `path`): a malformed path, an index past the end of an
/// array, a key into something that is not a table (`machine.app_cores.x`), an index
/// into something that is not an array, a key into an array (`machine.tiers.1`: write
/// `machine.tiers[1]`), or an index into an array that does not exist yet.
pub fn set_path(doc: &mut toml::Value, path: &str, value: toml::Value) -> Result<()> {
    let segs = parse_path(path)?;
    let mut node = doc;
    for (depth, seg) in segs.iter().enumerate() {
        let at = render(&segs[..depth]);
        let last = depth + 1 == segs.len();
        node = match seg {
            Segment::Key(k) => {
                if let toml::Value::Array(a) = node {
                    return Err(path_error(
                        path,
                        format!(
                            "`{at}` is an array of {} entries, not a table: index it as `{at}[0]`, ...",
                            a.len()
                        ),
                    ));
                }
                if !node.is_table() {
                    return Err(path_error(
                        path,
                        format!(
                            "`{at}` is {}, not a table, so it has no field `{k}`",
                            kind_of(node)
                        ),
                    ));
                }
                let table = node.as_table_mut().expect("checked: a table");
                if last {
                    table.insert(k.clone(), value);
                    return Ok(());
                }
                if !table.contains_key(k) {
                    if let Segment::Index(i) = &segs[depth + 1] {
                        let here = render(&segs[..=depth]);
                        return Err(path_error(
                            path,
                            format!("`{here}` does not exist, so it has no element [{i}]; set the whole array instead"),
                        ));
                    }
                    table.insert(k.clone(), toml::Value::Table(Default::default()));
                }
                table.get_mut(k).expect("just checked or inserted")
            }
            Segment::Index(i) => {
                let len = match node {
                    toml::Value::Array(a) => a.len(),
                    other => {
                        return Err(path_error(
                            path,
                            format!(
                                "`{at}` is {}, not an array, so it has no element [{i}]",
                                kind_of(other)
                            ),
                        ))
                    }
                };
                if *i >= len {
                    return Err(out_of_range(path, &at, len, *i));
                }
                let a = node.as_array_mut().expect("matched an array");
                if last {
                    a[*i] = value;
                    return Ok(());
                }
                &mut a[*i]
            }
        };
    }
    unreachable!("a parsed path has at least one segment")
}

/// The value at `path` in `doc`; errors name the path and the first step that is missing.
pub fn get_path<'a>(doc: &'a toml::Value, path: &str) -> Result<&'a toml::Value> {
    let segs = parse_path(path)?;
    let mut node = doc;
    for (depth, seg) in segs.iter().enumerate() {
        let at = render(&segs[..depth]);
        let where_ = if at.is_empty() {
            "the config".to_string()
        } else {
            format!("`{at}`")
        };
        node = match (seg, node) {
            (Segment::Key(k), toml::Value::Table(t)) => t
                .get(k)
                .ok_or_else(|| path_error(path, format!("{where_} has no field `{k}`")))?,
            (Segment::Index(i), toml::Value::Array(a)) => a
                .get(*i)
                .ok_or_else(|| out_of_range(path, &at, a.len(), *i))?,
            (Segment::Key(_), toml::Value::Array(_)) => {
                return Err(path_error(
                    path,
                    format!("{where_} is an array: index it as `{at}[0]`, ..."),
                ))
            }
            (Segment::Key(k), other) => {
                return Err(path_error(
                    path,
                    format!(
                        "{where_} is {}, not a table, so it has no field `{k}`",
                        kind_of(other)
                    ),
                ))
            }
            (Segment::Index(i), other) => {
                return Err(path_error(
                    path,
                    format!(
                        "{where_} is {}, not an array, so it has no element [{i}]",
                        kind_of(other)
                    ),
                ))
            }
        };
    }
    Ok(node)
}

/// A command-line value: TOML (`42`, `1.5`, `true`, `"64G"`, `[1, 2]`, `{ delta = 0.1 }`),
/// or else the text itself as a string (`--set policy.policy=tpp`).
pub fn parse_value(text: &str) -> toml::Value {
    if let Ok(mut t) = format!("value = {text}").parse::<toml::Table>() {
        if t.len() == 1 {
            if let Some(v) = t.remove("value") {
                return v;
            }
        }
    }
    toml::Value::String(text.to_string())
}

/// `PATH=VALUE` (the CLI's `--set`): the path (checked) and the value ([`parse_value`]).
pub fn parse_assignment(arg: &str) -> Result<(String, toml::Value)> {
    let Some((path, value)) = arg.split_once('=') else {
        return Err(Error::usage(format!(
            "--set {arg}: expected PATH=VALUE, e.g. --set machine.tiers[1].capacity=64G"
        )));
    };
    let path = path.trim();
    parse_path(path)?;
    Ok((path.to_string(), parse_value(value.trim())))
}

/// Apply `overrides` in order to the TOML document `text` (from `origin`, named in a syntax
/// error) and return the new document's text.
pub fn apply_to_text(
    text: &str,
    origin: &str,
    overrides: &[(String, toml::Value)],
) -> Result<String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        Error::config(format!(
            "{origin}: {}",
            tiermem_core::config::one_line(e.message())
        ))
    })?;
    let mut doc = toml::Value::Table(table);
    for (path, value) in overrides {
        set_path(&mut doc, path, value.clone())?;
    }
    toml::to_string(&doc)
        .map_err(|e| Error::config(format!("{origin}: cannot write the overridden config: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> toml::Value {
        toml::from_str(
            r#"
seed = 1
[machine]
app_cores = 15
[[machine.tiers]]
name = "local"
capacity = "32G"
[[machine.tiers]]
name = "remote"
capacity = "96G"
[policy]
policy = "hemem"
"#,
        )
        .unwrap()
    }

    fn err(path: &str) -> String {
        let mut d = doc();
        set_path(&mut d, path, toml::Value::Integer(1))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn parses_and_renders_the_one_syntax() {
        let segs = parse_path("machine.tiers[1].capacity").unwrap();
        assert_eq!(
            segs,
            vec![
                Segment::Key("machine".into()),
                Segment::Key("tiers".into()),
                Segment::Index(1),
                Segment::Key("capacity".into())
            ]
        );
        assert_eq!(render(&segs), "machine.tiers[1].capacity");
        assert_eq!(parse_path("a[0][2]").unwrap().len(), 3);
        assert_eq!(
            parse_path("hot-set_2").unwrap(),
            vec![Segment::Key("hot-set_2".into())]
        );
    }

    #[test]
    fn malformed_paths_name_the_path_and_the_problem() {
        for (path, what) in [
            ("a..b", "empty key"),
            (".a", "empty key"),
            ("a.", "ends with a dot"),
            ("[0].a", "starts with an index"),
            ("a[x]", "`[x]` is not an array index"),
            ("a[-1]", "`[-1]` is not an array index"),
            ("a[1", "never closed"),
            ("a b", "` `"),
            ("a[0]b", "`b`"),
        ] {
            let e = parse_path(path).unwrap_err().to_string();
            assert!(
                e.contains(&format!("field `{path}`")) && e.contains(what),
                "{path}: {e}"
            );
        }
        assert!(parse_path("")
            .unwrap_err()
            .to_string()
            .contains("empty field path"));
    }

    #[test]
    fn sets_tables_array_elements_and_creates_missing_tables() {
        let mut d = doc();
        set_path(&mut d, "machine.tiers[1].capacity", "64G".into()).unwrap();
        set_path(&mut d, "seed", toml::Value::Integer(9)).unwrap();
        set_path(&mut d, "colloid.delta", toml::Value::Float(0.1)).unwrap();
        set_path(&mut d, "a.b.c", toml::Value::Boolean(true)).unwrap();
        assert_eq!(
            get_path(&d, "machine.tiers[1].capacity").unwrap().as_str(),
            Some("64G")
        );
        assert_eq!(
            get_path(&d, "machine.tiers[0].capacity").unwrap().as_str(),
            Some("32G")
        );
        assert_eq!(get_path(&d, "seed").unwrap().as_integer(), Some(9));
        assert_eq!(get_path(&d, "colloid.delta").unwrap().as_float(), Some(0.1));
        assert_eq!(get_path(&d, "a.b.c").unwrap().as_bool(), Some(true));
        // A whole element can be replaced too.
        set_path(
            &mut d,
            "machine.tiers[0]",
            toml::Value::Table(Default::default()),
        )
        .unwrap();
        assert!(get_path(&d, "machine.tiers[0].name").is_err());
    }

    #[test]
    fn impossible_paths_are_clear_errors() {
        let e = err("machine.tiers[5].capacity");
        assert!(e.contains("field `machine.tiers[5].capacity`"), "{e}");
        assert!(
            e.contains("`machine.tiers` has 2 entries, so index 5 does not exist; use 0..1"),
            "{e}"
        );
        let e = err("machine.tiers.1.capacity");
        assert!(e.contains("`machine.tiers` is an array of 2 entries, not a table: index it as `machine.tiers[0]`"), "{e}");
        let e = err("machine.app_cores.x");
        assert!(
            e.contains("`machine.app_cores` is an integer, not a table, so it has no field `x`"),
            "{e}"
        );
        let e = err("policy[0]");
        assert!(e.contains("`policy` is a table, not an array"), "{e}");
        let e = err("antagonist[0].cores");
        assert!(
            e.contains("`antagonist` does not exist, so it has no element [0]"),
            "{e}"
        );
        let e = get_path(&doc(), "machine.nope").unwrap_err().to_string();
        assert!(e.contains("`machine` has no field `nope`"), "{e}");
        assert!(get_path(&doc(), "nope")
            .unwrap_err()
            .to_string()
            .contains("the config has no field `nope`"));
        // The document is untouched by a failed set.
        let mut d = doc();
        let _ = set_path(&mut d, "machine.tiers[9].capacity", toml::Value::Integer(1));
        assert_eq!(d, doc());
    }

    #[test]
    fn command_line_values_are_toml_or_strings() {
        assert_eq!(parse_value("42"), toml::Value::Integer(42));
        assert_eq!(parse_value("1.5"), toml::Value::Float(1.5));
        assert_eq!(parse_value("true"), toml::Value::Boolean(true));
        assert_eq!(parse_value("\"64G\""), toml::Value::String("64G".into()));
        assert_eq!(parse_value("64G"), toml::Value::String("64G".into()));
        assert_eq!(parse_value("tpp"), toml::Value::String("tpp".into()));
        assert_eq!(parse_value("[1, 2]").as_array().map(|a| a.len()), Some(2));
        assert!(parse_value("{ delta = 0.1 }").is_table());
        // Text that would smuggle in another key stays one string.
        assert_eq!(
            parse_value("1\nseed = 2"),
            toml::Value::String("1\nseed = 2".into())
        );
        let (p, v) = parse_assignment("machine.tiers[1].capacity = 64G").unwrap();
        assert_eq!(
            (p.as_str(), v),
            (
                "machine.tiers[1].capacity",
                toml::Value::String("64G".into())
            )
        );
        assert!(parse_assignment("seed")
            .unwrap_err()
            .to_string()
            .contains("PATH=VALUE"));
        assert!(parse_assignment("a..b=1").is_err());
    }

    #[test]
    fn apply_to_text_round_trips() {
        let text = "seed = 1\n[machine]\napp_cores = 15\n";
        let out = apply_to_text(
            text,
            "x.toml",
            &[
                ("machine.app_cores".into(), toml::Value::Integer(4)),
                ("policy.policy".into(), "tpp".into()),
            ],
        )
        .unwrap();
        let back: toml::Value = toml::from_str(&out).unwrap();
        assert_eq!(
            get_path(&back, "machine.app_cores").unwrap().as_integer(),
            Some(4)
        );
        assert_eq!(
            get_path(&back, "policy.policy").unwrap().as_str(),
            Some("tpp")
        );
        assert!(apply_to_text("seed = [", "x.toml", &[])
            .unwrap_err()
            .to_string()
            .starts_with("x.toml: "));
    }
}
