//! Errors the command line reports: each names the file or argument and what was wrong.

use std::fmt;

/// Something the command could not do.
#[derive(Debug)]
pub enum CliError {
    /// A file could not be read.
    Io {
        /// The path.
        path: String,
        /// The OS error.
        err: std::io::Error,
    },
    /// Input that is not what it should be.
    Input {
        /// The file or argument.
        what: String,
        /// Why.
        why: String,
    },
    /// Arguments that do not fit together.
    Usage(String),
    /// Writing the output failed.
    Output(std::io::Error),
    /// The capture could not be opened or read.
    Capture(kafkashark::capture::CaptureError),
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Io { path, err } => write!(f, "{path}: {err}"),
            CliError::Input { what, why } => write!(f, "{what}: {why}"),
            CliError::Usage(s) => f.write_str(s),
            CliError::Output(e) => write!(f, "writing output: {e}"),
            CliError::Capture(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for CliError {}
