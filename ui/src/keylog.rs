//! `--tls-keylog FILE`: the TLS key log read for the pipeline, whole for a
//! capture file, and for a live capture re-read as it grows on a thread of
//! its own (connections opened after the start decrypt too).
//!
//! Lines that cannot be read are said on standard error with the file's
//! name and their line number, never their text (key material).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use kafkashark::tls::keylog::{KeyLog, Keys, LineError};

use crate::cli_error::CliError;

/// How often a live capture's key log is looked at for new lines: often,
/// as a connection whose key comes after it closed is not decrypted (a
/// look is one `stat`).
const POLL: Duration = Duration::from_millis(20);

/// The key log at `path` (none: no keys), read whole, or for a `live`
/// capture read now and then followed as it grows.
pub fn open(path: Option<&Path>, live: bool) -> Result<Keys, CliError> {
    let Some(path) = path else {
        return Ok(Keys::default());
    };
    let name = path.display().to_string();
    let io = |err| CliError::Io {
        path: name.clone(),
        err,
    };
    let mut file = File::open(path).map_err(io)?;
    let mut log = KeyLog::new();
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(io)?;
    report(&name, log.feed(&bytes));
    if !live {
        report(&name, log.finish());
        if log.is_empty() {
            eprintln!("kafkashark: {name}: no TLS session keys in it");
        }
        return Ok(Keys::new(log, false));
    }
    let keys = Keys::new(log, true);
    let shared = keys.clone();
    let path = path.to_path_buf();
    let at = bytes.len() as u64;
    std::thread::Builder::new()
        .name("keylog".into())
        .spawn(move || follow(path, at, &shared))
        .map_err(|err| CliError::Io { path: name, err })?;
    Ok(keys)
}

/// Reads what the key log at `path` grows by, from `at`, for as long as the
/// process runs; a file that shrank (rewritten) is read again from its start.
fn follow(path: PathBuf, mut at: u64, keys: &Keys) {
    let name = path.display().to_string();
    let mut buf = Vec::new();
    loop {
        std::thread::sleep(POLL);
        let Ok(mut f) = File::open(&path) else {
            continue;
        };
        let Ok(len) = f.metadata().map(|m| m.len()) else {
            continue;
        };
        if len < at {
            at = 0;
        }
        if len == at || f.seek(SeekFrom::Start(at)).is_err() {
            continue;
        }
        buf.clear();
        if let Ok(n) = f.take(len - at).read_to_end(&mut buf) {
            at += n as u64;
            report(&name, keys.with(|k| k.feed(&buf)));
        }
    }
}

fn report(name: &str, errors: Vec<LineError>) {
    for e in errors {
        eprintln!("kafkashark: {name}: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A live capture's key log is followed as its writer appends to it
    /// (here, a second session's line written in two pieces); a
    /// capture file's is read once.
    #[test]
    fn a_live_key_log_is_followed_as_it_grows() {
        let dir = std::env::temp_dir().join(format!("kafkashark-keylog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("k.log");
        let line = |label: &str, r: u8| {
            format!(
                "{label} {} {}\n",
                format!("{r:02x}").repeat(32),
                "ab".repeat(32)
            )
        };
        std::fs::write(&path, line("CLIENT_HANDSHAKE_TRAFFIC_SECRET", 1)).unwrap();
        let live = open(Some(&path), true).unwrap();
        let file = open(Some(&path), false).unwrap();
        assert!(live.growing() && !file.growing());
        assert_eq!((live.with(|k| k.len()), file.with(|k| k.len())), (1, 1));
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        // A line in two writes: read whole once its end comes.
        let second = line("SERVER_HANDSHAKE_TRAFFIC_SECRET", 2);
        let (a, b) = second.split_at(40);
        f.write_all(a.as_bytes()).unwrap();
        f.flush().unwrap();
        std::thread::sleep(3 * POLL);
        f.write_all(b.as_bytes()).unwrap();
        f.flush().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while live.with(|k| k.len()) < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(POLL);
        }
        assert_eq!(live.with(|k| k.len()), 2);
        assert!(live
            .get(&[2; 32])
            .is_some_and(|s| s.server_handshake.is_some()));
        assert_eq!(file.with(|k| k.len()), 1, "a file's key log is read once");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
