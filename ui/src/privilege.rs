//! Least privilege for live capture.
//!
//! Opening a capture handle on an interface needs root (or CAP_NET_RAW and
//! CAP_NET_ADMIN); reading packets from the open handle does not. So right
//! after the live handle is opened, a kafkashark running as root becomes an
//! unprivileged user — `nobody` unless `--user NAME` says otherwise — before
//! it decodes a single captured byte: supplementary groups cleared, then the
//! user's group, then the user (in that order: once the uid is dropped, the
//! groups can no longer be changed). `--keep-root` opts out. Nothing happens
//! when kafkashark does not run as root (e.g. with file capabilities, see
//! docs/security.md).
//!
//! With `KAFKASHARK_DEBUG_PRIVILEGE` set in the environment, the outcome is
//! written to standard error (`kafkashark: privileges: ... uid=65534 euid=65534 ...`);
//! the integration test reads it.

use std::sync::OnceLock;

use nix::unistd::{self, Gid, Uid, User};

use crate::cli_error::CliError;

/// The command-line options of privilege dropping (live capture only).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct PrivilegeArgs {
    /// Live capture as root: once the interface is open, run as this user (default: nobody).
    #[arg(long, value_name = "NAME")]
    pub user: Option<String>,
    /// Live capture as root: keep running as root after the interface is open.
    #[arg(long, conflicts_with = "user")]
    pub keep_root: bool,
}

/// The user dropped to when none is named.
pub const DEFAULT_USER: &str = "nobody";

/// Environment variable that makes the outcome visible on standard error.
pub const DEBUG_ENV: &str = "KAFKASHARK_DEBUG_PRIVILEGE";

static SETTINGS: OnceLock<PrivilegeArgs> = OnceLock::new();

/// Records the options given on the command line (the first call wins).
pub fn configure(a: &PrivilegeArgs) {
    let _ = SETTINGS.set(a.clone());
}

/// What [`drop_after_open`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not running as root: nothing to drop.
    NotRoot,
    /// Root kept on request (`--keep-root`).
    Kept,
    /// Now running as this user.
    Dropped {
        /// User name.
        user: String,
        /// Its uid.
        uid: u32,
        /// Its primary gid.
        gid: u32,
    },
}

/// The account to switch to: name, uid and gid, looked up in the user database.
pub fn lookup(name: &str) -> Result<(String, Uid, Gid), CliError> {
    let bad = |why: String| CliError::Input {
        what: format!("--user {name}"),
        why,
    };
    let user = User::from_name(name)
        .map_err(|e| bad(format!("cannot look the user up: {e}")))?
        .ok_or_else(|| bad("no such user (give another with --user, or --keep-root)".into()))?;
    if user.uid.is_root() {
        return Err(bad(
            "is root; use --keep-root to keep root privileges".into()
        ));
    }
    Ok((user.name, user.uid, user.gid))
}

/// Call right after a live capture handle is opened: when running as root,
/// becomes the configured unprivileged user unless `--keep-root` was given.
pub fn drop_after_open() -> Result<Outcome, CliError> {
    let cfg = SETTINGS.get().cloned().unwrap_or_default();
    let outcome = drop_with(&cfg)?;
    if std::env::var_os(DEBUG_ENV).is_some() {
        eprintln!(
            "kafkashark: privileges: {outcome:?}; uid={} euid={} gid={} egid={}",
            unistd::getuid(),
            unistd::geteuid(),
            unistd::getgid(),
            unistd::getegid()
        );
    }
    Ok(outcome)
}

/// [`drop_after_open`] on the result of opening a live capture: the shells
/// wrap `LiveSource::open(..)` in this one call.
pub fn after_open<T>(opened: Result<T, kafkashark::capture::CaptureError>) -> Result<T, CliError> {
    let src = opened.map_err(CliError::Capture)?;
    drop_after_open()?;
    Ok(src)
}

fn drop_with(cfg: &PrivilegeArgs) -> Result<Outcome, CliError> {
    if !unistd::geteuid().is_root() && !unistd::getuid().is_root() {
        return Ok(Outcome::NotRoot);
    }
    if cfg.keep_root {
        return Ok(Outcome::Kept);
    }
    let name = cfg.user.as_deref().unwrap_or(DEFAULT_USER);
    let (user, uid, gid) = lookup(name)?;
    let bad = |why: String| CliError::Input {
        what: format!("--user {name}"),
        why,
    };
    let fail = |step: &str, e: nix::Error| bad(format!("{step} failed: {e}"));
    unistd::setgroups(&[]).map_err(|e| fail("setgroups", e))?;
    unistd::setgid(gid).map_err(|e| fail("setgid", e))?;
    unistd::setuid(uid).map_err(|e| fail("setuid", e))?;
    // setuid as root sets the real, effective and saved ids: root must be gone for good.
    if unistd::setuid(Uid::from_raw(0)).is_ok() || unistd::geteuid().is_root() {
        return Err(bad("root privileges could not be dropped".into()));
    }
    Ok(Outcome::Dropped {
        user,
        uid: uid.as_raw(),
        gid: gid.as_raw(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nobody_is_found_and_is_not_root() {
        // Every Linux user database has nobody; skip quietly elsewhere.
        match lookup(DEFAULT_USER) {
            Ok((name, uid, _)) => {
                assert_eq!(name, DEFAULT_USER);
                assert!(!uid.is_root());
            }
            Err(e) => eprintln!("skipping: {e}"),
        }
    }

    #[test]
    fn root_and_unknown_users_are_refused() {
        let e = lookup("root").expect_err("root is refused").to_string();
        assert!(
            e.contains("--user root") && e.contains("--keep-root"),
            "{e}"
        );
        let e = lookup("no-such-user-kafkashark")
            .expect_err("unknown user")
            .to_string();
        assert!(e.contains("no such user"), "{e}");
    }

    #[test]
    fn keep_root_keeps_and_non_root_is_untouched() {
        let keep = PrivilegeArgs {
            user: None,
            keep_root: true,
        };
        let got = drop_with(&keep).expect("no error");
        if unistd::geteuid().is_root() {
            assert_eq!(got, Outcome::Kept);
        } else {
            assert_eq!(got, Outcome::NotRoot);
        }
    }
}
