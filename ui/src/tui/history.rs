//! The filter history kept between sessions: one filter per line in
//! `$XDG_STATE_HOME/kafkashark/filter-history` (`~/.local/state/…` when the
//! variable is unset), oldest first, at most [`super::app::HISTORY`] lines,
//! readable by its owner only.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::PathBuf;

use super::app::HISTORY;

/// Where the history is kept; `None` without `XDG_STATE_HOME` or `HOME`.
pub fn path() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_STATE_HOME").filter(|v| !v.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => {
            PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".local/state")
        }
    };
    Some(base.join("kafkashark").join("filter-history"))
}

/// The filters kept, oldest first; none when there is no file yet. A file
/// that cannot be read is an error naming it.
pub fn load() -> Result<Vec<String>, String> {
    let Some(p) = path() else {
        return Ok(Vec::new());
    };
    let text = match std::fs::read(&p) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("filter history {} not read: {e}", p.display())),
    };
    let lines: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let skip = lines.len().saturating_sub(HISTORY);
    Ok(lines.into_iter().skip(skip).collect())
}

/// Writes `filters` (oldest first) in place of the kept history.
pub fn save(filters: &[String]) -> Result<(), String> {
    let Some(p) = path() else {
        return Ok(());
    };
    let skip = filters.len().saturating_sub(HISTORY);
    // A filter is one line (the bar takes no newline).
    let text: String = (filters.iter().skip(skip))
        .map(|l| format!("{}\n", l.replace(['\n', '\r'], " ")))
        .collect();
    write_private(&p, &text).map_err(|e| format!("filter history {} not written: {e}", p.display()))
}

/// Writes `text` as the file `p`, readable by its owner only (its folder
/// made, owner only, if missing): to a new file beside it, then renamed
/// over it, so a crash leaves one or the other.
pub fn write_private(p: &std::path::Path, text: &str) -> std::io::Result<()> {
    if let Some(dir) = p.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let tmp = p.with_extension("new");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, p)
}
