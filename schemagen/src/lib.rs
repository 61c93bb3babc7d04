//! `schemagen`: turns Kafka's JSON message definitions into kafkashark's
//! static schema tables.
//!
//! [`generate`] reads a schema directory laid out as
//!
//! ```text
//! SCHEMA_DIR/kafka-<release>/*.json  the newest release: authoritative
//! SCHEMA_DIR/kafka-3.9/*.json        Kafka 3.9 definitions (versions 4.0 removed)
//! ```
//!
//! The release the tables follow is the `kafka-<version>` subdirectory with
//! the highest version (besides `kafka-3.9`): adding a Kafka release is
//! adding its folder. Older release folders (such as `kafka-4.1.0/`, kept for
//! the differential test) and files at the top are not read. [`generate`]
//! returns the text of `src/kafka/schema/generated.rs`. The pipeline is: strip
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

/// The release of a `kafka-<version>` directory name (`kafka-4.3.0` →
/// `[4, 3, 0]`), if it is one.
fn release_of(name: &str) -> Option<Vec<u32>> {
    let v = name.strip_prefix("kafka-")?;
    v.split('.').map(|p| p.parse().ok()).collect()
}

/// The release the tables follow: the `kafka-<version>` subdirectory of
/// `schema_dir` with the highest version, besides [`LEGACY_DIR`]; its
/// version text (`4.3.0`) and path.
pub fn current_release(schema_dir: &Path) -> Result<(String, PathBuf), Error> {
    let io_err = |source| Error::Io {
        path: schema_dir.to_path_buf(),
        source,
    };
    let mut best: Option<(Vec<u32>, String, PathBuf)> = None;
    for entry in fs::read_dir(schema_dir).map_err(io_err)? {
        let entry = entry.map_err(io_err)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(v) = release_of(&name).filter(|_| name != LEGACY_DIR) else {
            continue;
        };
        if entry.file_type().map_err(io_err)?.is_dir()
            && best.as_ref().is_none_or(|(b, _, _)| v > *b)
        {
            let text = name["kafka-".len()..].to_string();
            best = Some((v, text, entry.path()));
        }
    }
    best.map(|(_, text, path)| (text, path))
        .ok_or_else(|| Error::Schema {
            path: schema_dir.to_path_buf(),
            message: format!("no kafka-<version> release folder here (besides {LEGACY_DIR})"),
        })
}

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
/// (the newest release's folder, see [`current_release`], and [`LEGACY_DIR`]).
pub fn generate(schema_dir: &Path) -> Result<String, Error> {
    let (release, dir) = current_release(schema_dir)?;
    let current = load_dir(&dir)?;
    let legacy = load_dir(&schema_dir.join(LEGACY_DIR))?;
    let plan = merge::plan(&current, &legacy, &release, schema_dir)?;
    emit::render(&plan)
}
