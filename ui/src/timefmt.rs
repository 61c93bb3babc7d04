//! How a message's time is written: relative to the first frame, delta to
//! the message shown before it, time of day or date and time (local or UTC),
//! or seconds since the epoch — tshark's `-t` formats, for `print` and the TUI.

use kafkashark::vocab::Timestamp;

/// A time format (`-t`, and the TUI's `t` key).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TimeFormat {
    /// Seconds since the capture's first frame.
    #[default]
    #[value(name = "r")]
    Relative,
    /// Seconds since the message shown before it.
    #[value(name = "d")]
    Delta,
    /// Local time of day.
    #[value(name = "a")]
    Absolute,
    /// Local date and time.
    #[value(name = "ad")]
    AbsoluteDate,
    /// UTC time of day.
    #[value(name = "u")]
    Utc,
    /// UTC date and time.
    #[value(name = "ud")]
    UtcDate,
    /// Seconds since 1970-01-01T00:00:00Z.
    #[value(name = "e")]
    Epoch,
}

impl TimeFormat {
    /// Every format, in the order the TUI's `t` steps through them.
    pub const ALL: [TimeFormat; 7] = [
        TimeFormat::Relative,
        TimeFormat::Delta,
        TimeFormat::Absolute,
        TimeFormat::AbsoluteDate,
        TimeFormat::Utc,
        TimeFormat::UtcDate,
        TimeFormat::Epoch,
    ];

    /// Its name in the status bar.
    pub fn name(self) -> &'static str {
        match self {
            TimeFormat::Relative => "relative",
            TimeFormat::Delta => "delta",
            TimeFormat::Absolute => "local time",
            TimeFormat::AbsoluteDate => "local date",
            TimeFormat::Utc => "UTC time",
            TimeFormat::UtcDate => "UTC date",
            TimeFormat::Epoch => "epoch",
        }
    }

    /// The widest text it writes for times of this era (for columns).
    pub fn width(self) -> usize {
        match self {
            TimeFormat::Relative | TimeFormat::Delta => 11,
            TimeFormat::Absolute | TimeFormat::Utc => 15,
            TimeFormat::AbsoluteDate | TimeFormat::UtcDate => 26,
            TimeFormat::Epoch => 17,
        }
    }

    /// `ts` written in this format, microseconds shown; `first` is the
    /// capture's first frame's time, `prev` the time of the message shown
    /// before (none for the first).
    pub fn text(self, ts: Timestamp, first: Option<Timestamp>, prev: Option<Timestamp>) -> String {
        let mut s = String::new();
        self.write(&mut s, ts, first, prev);
        s
    }

    /// [`TimeFormat::text`] appended to `out` (no allocation of its own:
    /// `print` writes one per message).
    pub fn write(
        self,
        out: &mut String,
        ts: Timestamp,
        first: Option<Timestamp>,
        prev: Option<Timestamp>,
    ) {
        use std::fmt::Write as _;
        let micros = ts.nanos / 1000;
        // Writing to a `String` cannot fail.
        let _ = match self {
            TimeFormat::Relative | TimeFormat::Delta => {
                let since = if self == TimeFormat::Relative {
                    first
                } else {
                    prev
                };
                let (s, n) = since.map_or((ts.secs, ts.nanos), |t| (t.secs, t.nanos));
                let d = i128::from(ts.secs) * 1_000_000_000 + i128::from(ts.nanos)
                    - (i128::from(s) * 1_000_000_000 + i128::from(n));
                let sign = if d < 0 { "-" } else { "" };
                let us = u64::try_from((d.unsigned_abs() + 500) / 1000).unwrap_or(u64::MAX);
                write!(out, "{sign}{}.{:06}", us / 1_000_000, us % 1_000_000)
            }
            TimeFormat::Epoch => write!(out, "{}.{micros:06}", ts.secs),
            _ => {
                let local = matches!(self, TimeFormat::Absolute | TimeFormat::AbsoluteDate);
                let offset = if local { local_offset(ts.secs) } else { 0 };
                let t = ts.secs.saturating_add(offset);
                let (days, sod) = (t.div_euclid(86_400), t.rem_euclid(86_400));
                if matches!(self, TimeFormat::AbsoluteDate | TimeFormat::UtcDate) {
                    let (y, m, d) = kafkashark::kafka::records::civil_from_days(days);
                    let _ = write!(out, "{y:04}-{m:02}-{d:02} ");
                }
                write!(
                    out,
                    "{:02}:{:02}:{:02}.{micros:06}",
                    sod / 3600,
                    sod / 60 % 60,
                    sod % 60
                )
            }
        };
    }
}

/// Seconds east of UTC of the local time zone at `secs` (the C library's
/// reading of `TZ` and the zone files); 0 where it cannot tell.
fn local_offset(secs: i64) -> i64 {
    use nix::libc;
    let Some(t) = libc::time_t::try_from(secs).ok() else {
        return 0;
    };
    // SAFETY: `tm` is a plain C struct for which all zero bytes are a valid
    // value, and `localtime_r` writes only into it, reading `t`; both live
    // across the call. It is the reentrant form: no shared buffer.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: as above: valid pointers to a time and a `tm` to fill.
    let done = unsafe { libc::localtime_r(&t, &mut tm) };
    if done.is_null() {
        0
    } else {
        tm.tm_gmtoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(secs: i64, nanos: u32) -> Timestamp {
        Timestamp { secs, nanos }
    }

    /// Each format against values worked out by hand (2026-11-29 12:07:42.110420 UTC
    /// is 1795954062.110420).
    #[test]
    fn formats_write_what_tshark_writes() {
        let t = ts(1_795_954_062, 110_420_000);
        let first = Some(ts(1_795_954_061, 900_000_000));
        let prev = Some(ts(1_795_954_062, 110_000_000));
        let f = |tf: TimeFormat| tf.text(t, first, prev);
        assert_eq!(f(TimeFormat::Relative), "0.210420");
        assert_eq!(f(TimeFormat::Delta), "0.000420");
        assert_eq!(f(TimeFormat::Utc), "12:07:42.110420");
        assert_eq!(f(TimeFormat::UtcDate), "2026-11-29 12:07:42.110420");
        assert_eq!(f(TimeFormat::Epoch), "1795954062.110420");
        // The first message shown has no delta; a message before the first
        // frame (sorted views) is negative.
        assert_eq!(TimeFormat::Delta.text(t, first, None), "0.000000");
        assert_eq!(
            TimeFormat::Relative.text(ts(1_795_954_061, 0), first, None),
            "-0.900000"
        );
        // Local time is UTC shifted by the zone's offset then.
        let shifted = ts(t.secs + local_offset(t.secs), t.nanos);
        let utc = |tf: TimeFormat| tf.text(shifted, None, None);
        assert_eq!(f(TimeFormat::Absolute), utc(TimeFormat::Utc));
        assert_eq!(f(TimeFormat::AbsoluteDate), utc(TimeFormat::UtcDate));
        // Appended, not replacing what is there.
        let mut out = String::from("at ");
        TimeFormat::Epoch.write(&mut out, t, None, None);
        assert_eq!(out, "at 1795954062.110420");
        for tf in TimeFormat::ALL {
            assert!(f(tf).chars().count() <= tf.width(), "{tf:?}");
        }
    }

    /// With `TZ` set, local time is that zone's (the test runs in a child
    /// process so the variable changes nothing else).
    #[test]
    fn local_time_follows_tz() {
        if std::env::var("KAFKASHARK_TZ_CHILD").is_ok() {
            let t = ts(1_795_954_062, 110_420_000);
            println!("{}", TimeFormat::AbsoluteDate.text(t, None, None));
            return;
        }
        let exe = std::env::current_exe().expect("test binary");
        let run = |tz: &str| {
            let out = std::process::Command::new(&exe)
                .args([
                    "timefmt::tests::local_time_follows_tz",
                    "--exact",
                    "--nocapture",
                ])
                .env("KAFKASHARK_TZ_CHILD", "1")
                .env("TZ", tz)
                .output()
                .expect("child");
            String::from_utf8_lossy(&out.stdout).to_string()
        };
        // Fixed offsets in POSIX TZ syntax (west is positive there).
        assert!(
            run("UTC0").contains("2026-11-29 12:07:42.110420"),
            "{}",
            run("UTC0")
        );
        assert!(
            run("XYZ-5:30").contains("2026-11-29 17:37:42.110420"),
            "{}",
            run("XYZ-5:30")
        );
        assert!(
            run("ABC+13").contains("2026-11-28 23:07:42.110420"),
            "{}",
            run("ABC+13")
        );
    }
}
