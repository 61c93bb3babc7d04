//! The message list's columns: which, in what order, and how wide.
//!
//! The set and its order are a comma-separated list of names
//! (`no,time,stream,route,api,kind,corr,size,latency,notes`, the default),
//! from `--columns`, the config file ([`load`], [`save`]: `columns = …` in
//! `$XDG_CONFIG_HOME/kafkashark/config`) or the TUI's `C` bar. Each column is
//! as wide as its content needs (the widest value loaded so far, or shown
//! on screen for the columns read from trees), up to a cap; [`layout`] fits
//! them to the terminal: where they do not fit, text columns narrow a
//! little, then the route goes, then text columns narrow to their least,
//! then whole columns go, least needed first; `notes` takes what is left.

use std::path::PathBuf;

/// One column of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Col {
    No,
    Time,
    Stream,
    Route,
    Client,
    Broker,
    Api,
    Kind,
    Corr,
    Size,
    Latency,
    ClientId,
    Topics,
    Partitions,
    Errors,
    Records,
    Throttle,
    Notes,
    Capture,
}

/// A column's name, header, alignment (right for numbers), the width its
/// text may be cut to when the list is narrow, and its widest.
pub struct Spec {
    pub col: Col,
    pub name: &'static str,
    pub header: &'static str,
    pub right: bool,
    pub min: usize,
    pub cap: usize,
}

const fn spec(
    col: Col,
    name: &'static str,
    header: &'static str,
    right: bool,
    min: usize,
    cap: usize,
) -> Spec {
    Spec {
        col,
        name,
        header,
        right,
        min,
        cap,
    }
}

/// Every column, in the order of [`Col`].
pub const SPECS: [Spec; 19] = [
    spec(Col::No, "no", "No.", true, 3, 20),
    spec(Col::Time, "time", "Time", true, 4, 32),
    spec(Col::Stream, "stream", "Str", false, 3, 21),
    spec(Col::Route, "route", "From → To", false, 9, 96),
    spec(Col::Client, "client", "Client", false, 6, 47),
    spec(Col::Broker, "broker", "Broker", false, 6, 47),
    spec(Col::Api, "api", "API", false, 12, 40),
    spec(Col::Kind, "kind", "Kind", false, 4, 4),
    spec(Col::Corr, "corr", "Corr", true, 4, 11),
    spec(Col::Size, "size", "Size", true, 4, 10),
    spec(Col::Latency, "latency", "Latency", true, 7, 12),
    spec(Col::ClientId, "client_id", "Client id", false, 9, 40),
    spec(Col::Topics, "topics", "Topics", false, 6, 60),
    spec(Col::Partitions, "partitions", "Partitions", false, 10, 40),
    spec(Col::Errors, "errors", "Errors", false, 6, 60),
    spec(Col::Records, "records", "Records", true, 7, 10),
    spec(Col::Throttle, "throttle", "Throttle", true, 8, 10),
    spec(Col::Notes, "notes", "Notes", false, 12, usize::MAX),
    spec(Col::Capture, "capture", "Capture", false, 7, 40),
];

impl Col {
    pub fn spec(self) -> &'static Spec {
        &SPECS[self as usize]
    }
}

/// The default set, as the list showed it before columns could be chosen.
pub const DEFAULT: [Col; 10] = [
    Col::No,
    Col::Time,
    Col::Stream,
    Col::Route,
    Col::Api,
    Col::Kind,
    Col::Corr,
    Col::Size,
    Col::Latency,
    Col::Notes,
];

/// Which columns go when the list is too narrow, first first: `no` and
/// `api` stay.
const DROP: [Col; 17] = [
    Col::Route,
    Col::Broker,
    Col::Client,
    Col::Capture,
    Col::ClientId,
    Col::Topics,
    Col::Partitions,
    Col::Records,
    Col::Throttle,
    Col::Errors,
    Col::Latency,
    Col::Size,
    Col::Corr,
    Col::Time,
    Col::Kind,
    Col::Stream,
    Col::Notes,
];

/// Every column's name.
pub fn names() -> Vec<&'static str> {
    SPECS.iter().map(|s| s.name).collect()
}

/// Why a column list does not parse, and at which character.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnsError {
    pub column: usize,
    pub message: String,
}

/// The columns a list of names gives (comma- or space-separated, any
/// case); an unknown or repeated name, or none, is an error at its column.
pub fn parse(text: &str) -> Result<Vec<Col>, ColumnsError> {
    let mut cols = Vec::new();
    let mut at = 0;
    for part in text.split(|c: char| c == ',' || c.is_whitespace()) {
        let col = at;
        at += part.chars().count() + 1;
        if part.is_empty() {
            continue;
        }
        let lower = part.to_ascii_lowercase();
        let Some(s) = SPECS.iter().find(|s| s.name == lower) else {
            let near = SPECS
                .iter()
                .map(|s| (strsim::osa_distance(&lower, s.name), s.name))
                .filter(|(d, _)| *d <= 2)
                .min_by_key(|(d, _)| *d)
                .map_or(String::new(), |(_, n)| format!("; did you mean '{n}'?"));
            return Err(ColumnsError {
                column: col,
                message: format!(
                    "unknown column '{part}'{near} (columns: {})",
                    names().join(" ")
                ),
            });
        };
        if cols.contains(&s.col) {
            return Err(ColumnsError {
                column: col,
                message: format!("'{}' is listed twice", s.name),
            });
        }
        cols.push(s.col);
    }
    if cols.is_empty() {
        return Err(ColumnsError {
            column: 0,
            message: format!("name at least one column ({})", names().join(" ")),
        });
    }
    Ok(cols)
}

/// The list's text: names joined by commas.
pub fn text(cols: &[Col]) -> String {
    let names: Vec<&str> = cols.iter().map(|c| c.spec().name).collect();
    names.join(",")
}

/// The columns shown in `avail` cells and their widths, in order: each
/// as wide as `want` (its content, at least its header, at most its cap),
/// one space between them. Too wide: the widest text column narrows to
/// what still reads well (an api to 20), then the route goes (the stream
/// names the connection), then text columns narrow to their least, then
/// the columns go in [`DROP`] order; `notes` takes what is left.
pub fn layout(cols: &[(Col, usize)], avail: usize) -> Vec<(Col, usize)> {
    let mut out: Vec<(Col, usize)> = cols
        .iter()
        .map(|&(c, want)| {
            let s = c.spec();
            let w = want.max(s.header.chars().count()).min(s.cap);
            (c, if c == Col::Notes { s.min } else { w })
        })
        .collect();
    let total =
        |o: &[(Col, usize)]| o.iter().map(|(_, w)| w).sum::<usize>() + o.len().saturating_sub(1);
    while total(&out) > avail {
        let excess = total(&out) - avail;
        // Text columns narrow to what still reads well, then sender →
        // receiver goes (the stream column names the connection), then
        // they narrow to their least.
        let route = out.iter().any(|(c, _)| *c == Col::Route);
        let least = |c: Col| if route { soft(c) } else { c.spec().min };
        let narrowable = out
            .iter_mut()
            .filter(|(c, w)| is_text(*c) && *w > least(*c))
            .max_by_key(|(_, w)| *w);
        if let Some((c, w)) = narrowable {
            *w = w.saturating_sub(excess).max(least(*c));
            continue;
        }
        if route {
            out.retain(|(c, _)| *c != Col::Route);
            continue;
        }
        let Some(gone) = DROP.iter().find(|d| out.iter().any(|(c, _)| c == *d)) else {
            break;
        };
        out.retain(|(c, _)| c != gone);
    }
    let left = avail.saturating_sub(total(&out));
    if let Some((_, w)) = out.iter_mut().find(|(c, _)| *c == Col::Notes) {
        *w += left;
    }
    out
}

/// The width a text column narrows to before the route goes.
fn soft(c: Col) -> usize {
    match c {
        Col::Api | Col::Topics => 20,
        Col::ClientId => 16,
        Col::Errors => 24,
        c => c.spec().min,
    }
}

/// Columns whose text may be cut when space is short (their values are
/// lists or names); the others hold numbers or short words, whole or not at all.
fn is_text(c: Col) -> bool {
    matches!(
        c,
        Col::ClientId | Col::Topics | Col::Partitions | Col::Errors | Col::Notes | Col::Api
    )
}

// ---------------------------------------------------------------- config file

/// The config file: `$XDG_CONFIG_HOME/kafkashark/config` (`~/.config/…` when
/// the variable is unset); `None` without either.
pub fn config_path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("kafkashark").join("config"))
}

/// The columns the config file names (`columns = …`), if it does; a file
/// that cannot be read or a list that does not parse is an error naming
/// the file and line.
pub fn load() -> Result<Option<Vec<Col>>, String> {
    config_path().map_or(Ok(None), |p| load_from(&p))
}

/// [`load`] from the file at `p`.
fn load_from(p: &std::path::Path) -> Result<Option<Vec<Col>>, String> {
    let text = match std::fs::read(p) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("config {} not read: {e}", p.display())),
    };
    for (n, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() == "columns" {
            return parse(value.trim())
                .map(Some)
                .map_err(|e| format!("config {} line {}: {}", p.display(), n + 1, e.message));
        }
    }
    Ok(None)
}

/// Writes `cols` as the config file's `columns = …` line, keeping its other
/// lines: to a new file beside it, then renamed over it.
pub fn save(cols: &[Col]) -> Result<(), String> {
    config_path().map_or(Ok(()), |p| save_to(&p, cols))
}

/// [`save`] to the file at `p`.
fn save_to(p: &std::path::Path, cols: &[Col]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("config {} not written: {e}", p.display());
    let old = match std::fs::read(p) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(fail(e)),
    };
    let line = format!("columns = {}", text(cols));
    let mut lines: Vec<String> = Vec::new();
    let mut put = false;
    for l in old.lines() {
        let ours = l
            .split_once('=')
            .is_some_and(|(k, _)| k.trim() == "columns");
        if ours && !put {
            lines.push(line.clone());
            put = true;
        } else if !ours {
            lines.push(l.to_string());
        }
    }
    if !put {
        lines.push(line);
    }
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    super::history::write_private(p, &text).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_print_and_name_their_mistakes() {
        let cols = parse("No, time stream,API ,latency,client_id").unwrap();
        assert_eq!(
            cols,
            [
                Col::No,
                Col::Time,
                Col::Stream,
                Col::Api,
                Col::Latency,
                Col::ClientId
            ]
        );
        assert_eq!(text(&cols), "no,time,stream,api,latency,client_id");
        assert_eq!(parse(&text(&DEFAULT)).unwrap(), DEFAULT);
        let e = parse("no,tiem").unwrap_err();
        assert_eq!(e.column, 3);
        assert!(e.message.contains("did you mean 'time'?"), "{}", e.message);
        let e = parse("no,api,no").unwrap_err();
        assert_eq!((e.column, e.message.as_str()), (7, "'no' is listed twice"));
        assert_eq!(parse(" , ").unwrap_err().column, 0);
        // Every spec is at its column's place.
        for (i, s) in SPECS.iter().enumerate() {
            assert_eq!(s.col as usize, i, "{}", s.name);
        }
    }

    /// The config file keeps its other lines; a list that does not parse
    /// names the file and line.
    #[test]
    fn the_config_file_keeps_the_columns_and_its_other_lines() {
        let dir = std::env::temp_dir().join(format!("ks-config-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let p = dir.join("kafkashark/config");
        assert_eq!(load_from(&p), Ok(None));
        save_to(&p, &[Col::No, Col::Api]).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "columns = no,api\n");
        std::fs::write(&p, "# mine\ntheme = dark\ncolumns = no\n").unwrap();
        assert_eq!(load_from(&p), Ok(Some(vec![Col::No])));
        save_to(&p, &[Col::Topics, Col::Notes]).unwrap();
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "# mine\ntheme = dark\ncolumns = topics,notes\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&p, "\ncolumns = no,tiem\n").unwrap();
        let e = load_from(&p).unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("did you mean 'time'"),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn columns_are_as_wide_as_their_content_until_the_terminal_is_full() {
        let want = [
            (Col::No, 5),
            (Col::Stream, 4),
            (Col::Route, 43),
            (Col::Api, 14),
            (Col::Topics, 30),
            (Col::Notes, 50),
        ];
        // Room for all: content widths, notes the rest.
        let wide = layout(&want, 200);
        assert_eq!(
            wide,
            [
                (Col::No, 5),
                (Col::Stream, 4),
                (Col::Route, 43),
                (Col::Api, 14),
                (Col::Topics, 30),
                (Col::Notes, 200 - 5 - 4 - 43 - 14 - 30 - 5)
            ]
        );
        // A little less room: the topics narrow to 20 and the route stays whole.
        let less = layout(&want, 105);
        let topics = |l: &[(Col, usize)]| l.iter().find(|c| c.0 == Col::Topics).map(|c| c.1);
        assert!(less.contains(&(Col::Route, 43)), "{less:?}");
        assert_eq!(topics(&less), Some(30 - 8), "{less:?}");
        // Less: the route (never cut) goes before the topics narrow further.
        let mid = layout(&want, 80);
        assert!(!mid.iter().any(|(c, _)| *c == Col::Route), "{mid:?}");
        assert!(topics(&mid).is_some_and(|w| w >= 20), "{mid:?}");
        // Less still: topics narrow to their least, then go.
        let narrow = layout(&want, 40);
        assert_eq!(
            narrow.iter().map(|(_, w)| w).sum::<usize>() + narrow.len() - 1,
            40
        );
        let tiny = layout(&want, 20);
        assert_eq!(
            tiny.iter().map(|c| c.0).collect::<Vec<_>>(),
            [Col::No, Col::Api]
        );
        for avail in 0..200 {
            let l = layout(&want, avail);
            let used = l.iter().map(|(_, w)| w).sum::<usize>() + l.len().saturating_sub(1);
            assert!(used <= avail.max(5 + 1 + 12), "{avail}: {l:?}");
        }
    }
}
