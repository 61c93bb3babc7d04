//! Driving the real binary in tmux for the terminal UI's end-to-end tests:
//! start a session, send keys, and poll the screen with a deadline (no fixed
//! sleeps). The server is killed when the handle is dropped.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// How long a screen may take to show what a test waits for.
pub const DEADLINE: Duration = Duration::from_secs(20);

/// A private tmux server (its own socket) with one session.
pub struct Tmux {
    /// The `-L` socket name, unique per test process and tag.
    pub socket: String,
    /// The session name used with `-t`.
    pub session: &'static str,
}

/// True when tmux is installed.
pub fn have_tmux() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

impl Tmux {
    /// A handle on the server `kafkashark-<tag>-<pid>` and session `session`.
    pub fn new(tag: &str, session: &'static str) -> Tmux {
        Tmux {
            socket: format!("kafkashark-{tag}-{}", std::process::id()),
            session,
        }
    }

    /// Runs a tmux command against this server.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs")
    }

    /// Starts the session, `width` x `height`, running `cmd` under `sh -c`.
    pub fn start(&self, width: u16, height: u16, cmd: &str) {
        let (w, h) = (width.to_string(), height.to_string());
        let out = self.run(&[
            "new-session",
            "-d",
            "-s",
            self.session,
            "-x",
            &w,
            "-y",
            &h,
            "sh",
            "-c",
            cmd,
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The session's screen text.
    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", self.session]).stdout)
            .into_owned()
    }

    /// Sends keys to the session.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.session];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    /// Waits until the screen satisfies `ok`; returns it.
    pub fn wait(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen contains `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait(text, |s| s.contains(text))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
