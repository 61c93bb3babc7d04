//! The `schemagen` command: regenerates (or, with `--check`, verifies)
//! kafkashark's schema tables.
//!
//! Usage: `schemagen [--check] [SCHEMA_DIR] [OUT_FILE]`
//!
//! * `SCHEMA_DIR` defaults to `../shared/kafka-message-schemas` and `OUT_FILE`
//!   to `src/kafka/schema/generated.rs`, both relative to the workspace root
//!   (found at compile time, so `cargo run -p schemagen` works from anywhere).
//! * Without `--check` the output file is written, unless it already holds
//!   exactly the generated text (then it is left alone so its mtime does not
//!   trigger a rebuild).
//! * With `--check` nothing is written; the exit status is 1 when the file
//!   differs from what would be generated.
//!
//! Exit status: 0 success, 1 out of date (`--check`) or generation failed,
//! 2 bad usage.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "usage: schemagen [--check] [SCHEMA_DIR] [OUT_FILE]

Generates src/kafka/schema/generated.rs from Kafka's JSON message definitions.
  SCHEMA_DIR  defaults to <workspace>/../shared/kafka-message-schemas
  OUT_FILE    defaults to <workspace>/src/kafka/schema/generated.rs
  --check     compare instead of writing; exit 1 if OUT_FILE is out of date";

fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn main() -> ExitCode {
    let mut check = false;
    let mut positional: Vec<PathBuf> = Vec::new();
    for arg in std::env::args_os().skip(1) {
        if arg == *"--check" {
            check = true;
        } else if arg == *"-h" || arg == *"--help" {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        } else if arg.to_string_lossy().starts_with('-') {
            eprintln!(
                "schemagen: unknown option {}\n{USAGE}",
                arg.to_string_lossy()
            );
            return ExitCode::from(2);
        } else {
            positional.push(PathBuf::from(arg));
        }
    }
    if positional.len() > 2 {
        eprintln!("schemagen: too many arguments\n{USAGE}");
        return ExitCode::from(2);
    }
    let root = workspace_root();
    let mut args = positional.into_iter();
    let schema_dir = args.next().unwrap_or_else(|| {
        root.parent()
            .unwrap_or(&root)
            .join("shared/kafka-message-schemas")
    });
    let out_file = args
        .next()
        .unwrap_or_else(|| root.join("src/kafka/schema/generated.rs"));

    let text = match schemagen::generate(&schema_dir) {
        Ok(text) => text,
        Err(e) => {
            eprintln!("schemagen: {e}");
            return ExitCode::FAILURE;
        }
    };
    let existing = fs::read_to_string(&out_file).ok();
    let up_to_date = existing.as_deref() == Some(text.as_str());

    if check {
        if up_to_date {
            println!("schemagen: {} is up to date", out_file.display());
            ExitCode::SUCCESS
        } else {
            eprintln!(
                "schemagen: {} is {} (schemas: {}); run `cargo run -p schemagen` to regenerate",
                out_file.display(),
                if existing.is_some() {
                    "out of date"
                } else {
                    "missing"
                },
                schema_dir.display()
            );
            ExitCode::FAILURE
        }
    } else if up_to_date {
        println!("schemagen: {} unchanged", out_file.display());
        ExitCode::SUCCESS
    } else {
        match fs::write(&out_file, &text) {
            Ok(()) => {
                println!(
                    "schemagen: wrote {} ({} lines)",
                    out_file.display(),
                    text.lines().count()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("schemagen: cannot write {}: {e}", out_file.display());
                ExitCode::FAILURE
            }
        }
    }
}
