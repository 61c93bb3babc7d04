//! `schemagen`: turns Kafka's JSON message definitions into kafkashark's
//! static schema tables.
//!
//! [`generate`] reads a schema directory laid out as
//!
//! ```text
//! SCHEMA_DIR/*.json            Apache Kafka 4.2.1 definitions (authoritative)
//! SCHEMA_DIR/kafka-3.9/*.json  Kafka 3.9 definitions (versions 4.0 removed)
//! ```
//!
//! (any other subdirectory, such as `kafka-4.1.0/`, is ignored) and returns
//! the text of `src/kafka/schema/generated.rs`. The pipeline is: strip
//! comments ([`jsonc`]), parse JSON, read each file into a [`model::Message`],
//! decide which definition decodes which versions ([`merge`]), then render the
//! Rust tables (`emit`). The output depends only on the input files, never
//! on directory listing order, hash order or the clock.

pub mod jsonc;
pub mod merge;
pub mod model;
pub mod versions;

mod emit;

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

pub use jsonc::strip_comments;
pub use versions::Versions;

/// The subdirectory holding the Kafka 3.9 definitions.
pub const LEGACY_DIR: &str = "kafka-3.9";

/// Why generation failed; every variant names the file (or directory) at fault.
#[derive(Debug)]
pub enum Error {
    /// A file or directory could not be read.
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// A file is not valid JSON once its comments are stripped.
    Json {
        /// The file.
        path: PathBuf,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// A file is valid JSON but not a definition this generator understands.
    Schema {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        message: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: cannot read: {source}", path.display()),
            Error::Json { path, source } => {
                write!(
                    f,
                    "{}: invalid JSON (after stripping comments): {source}",
                    path.display()
                )
            }
            Error::Schema { path, message } => write!(f, "{}: {message}", path.display()),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Json { source, .. } => Some(source),
            Error::Schema { .. } => None,
        }
    }
}

/// Reads and parses one definition file.
pub fn load_file(path: &Path) -> Result<model::Message, Error> {
    let text = fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&strip_comments(&text)).map_err(|source| Error::Json {
            path: path.to_path_buf(),
            source,
        })?;
    model::parse_message(&value).map_err(|message| Error::Schema {
        path: path.to_path_buf(),
        message,
    })
}

/// Reads every `*.json` file directly in `dir` (not in subdirectories), sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<merge::Loaded>, Error> {
    let io_err = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && entry.file_type().map_err(io_err)?.is_file()
        {
            paths.push(path);
        }
    }
    paths.sort();
    if paths.is_empty() {
        return Err(Error::Schema {
            path: dir.to_path_buf(),
            message: "no *.json message definitions here".to_string(),
        });
    }
    paths
        .into_iter()
        .map(|path| load_file(&path).map(|msg| merge::Loaded { path, msg }))
        .collect()
}

/// Generates the text of `generated.rs` from the schema directory `schema_dir`
/// (4.2.1 files at the top, 3.9 files in [`LEGACY_DIR`]).
pub fn generate(schema_dir: &Path) -> Result<String, Error> {
    let current = load_dir(schema_dir)?;
    let legacy = load_dir(&schema_dir.join(LEGACY_DIR))?;
    let plan = merge::plan(&current, &legacy, schema_dir)?;
    emit::render(&plan)
}
