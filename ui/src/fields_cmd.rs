//! `kafkashark fields [API]`: the names to write filters and read trees with.
//!
//! Without an api: the display filter's fields, words and api names
//! (`filter::listing`, made from the parser's own tables). With one: every
//! field of its request and response bodies as a dotted path from the body
//! (`TopicData.PartitionData.Index`), with its type and the versions that
//! carry it, from the schema tables the decoder reads: the names `print -V`,
//! the JSONL `fields` and the TUI's tree show.

use std::fmt::Write as _;

use kafkashark::kafka::schema::{self, Elem, FieldKind, MessageKind, SchemaSet, StructDef};

use crate::cli_error::CliError;

/// The arguments of `kafkashark fields`.
#[derive(clap::Args, Debug)]
pub struct FieldsArgs {
    /// An api name or key (`Produce`, `fetch`, `3`): list the fields of its
    /// request and response instead of the filter's.
    api: Option<String>,
}

/// Prints the listing.
pub fn run(a: &FieldsArgs) -> Result<(), CliError> {
    let text = match &a.api {
        None => crate::filter::listing(),
        Some(word) => {
            let key = crate::filter::api_key(word).map_err(CliError::Usage)?;
            api_fields(key)
        }
    };
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(CliError::Output)
}

/// The fields of api `key`'s request and response bodies, each definition
/// (the current release's, then Kafka 3.9's for the versions 4.x removed)
/// under a title naming it and its versions; then, for an api with record
/// sets, the names under a records field.
pub fn api_fields(key: i16) -> String {
    let mut s = String::new();
    let mut has_records = false;
    for kind in [MessageKind::Request, MessageKind::Response] {
        for m in schema::definitions(key, kind) {
            let from = match m.set {
                SchemaSet::Current => "",
                SchemaSet::Legacy => ", from Kafka 3.9 (versions 4.x removed)",
            };
            let _ = writeln!(s, "{} v{}{from}:", m.name, m.valid);
            let mut rows = Vec::new();
            walk(m.body, "", &mut rows, 0);
            has_records |= rows.iter().any(|r| r.1 == "records");
            let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
            let ty_width = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(0);
            for (path, ty, versions) in rows {
                let _ = writeln!(s, "  {path:width$}  {ty:ty_width$}  {versions}");
            }
            s.push('\n');
        }
    }
    if has_records {
        s.push_str("Under a records field (as in …Records.RecordBatch.crc):\n");
        let rows = crate::filter::record_set_paths();
        let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
        for (path, holds) in rows {
            let _ = writeln!(s, "  {path:width$}  {holds}");
        }
    }
    s
}

/// Deepest nesting walked (the schemas nest well under this; a struct that
/// contained itself would stop here).
const MAX_DEPTH: usize = 32;

/// Appends a row (path, type, versions) for each field of `st` and of the
/// structs under it, paths after `prefix`.
fn walk(st: &StructDef, prefix: &str, rows: &mut Vec<(String, String, String)>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    for f in st.fields {
        let path = format!("{prefix}{}", f.name);
        let mut versions = format!("v{}", f.versions);
        if !f.nullable.is_empty() {
            let _ = write!(versions, ", nullable v{}", f.nullable);
        }
        if let Some(tag) = f.tag {
            let _ = write!(versions, ", tagged (tag {tag}) v{}", f.tagged);
        }
        rows.push((path.clone(), f.type_name.to_string(), versions));
        match f.kind {
            FieldKind::Struct(inner) | FieldKind::Array(Elem::Struct(inner)) => {
                walk(inner, &format!("{path}."), rows, depth + 1);
            }
            FieldKind::Prim(_) | FieldKind::Array(Elem::Prim(_)) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn produce_lists_its_paths_types_and_versions_from_the_schema() {
        let text = api_fields(0);
        // Produce v13 names topics by id; the partition index is there at every version.
        let line = |path: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(path))
                .unwrap_or_else(|| panic!("no {path} in\n{text}"))
                .to_string()
        };
        assert!(text.starts_with("ProduceRequest v"), "{text}");
        assert!(text.contains("\nProduceResponse v"), "{text}");
        let index = line("TopicData.PartitionData.Index");
        assert_eq!(
            index.split_whitespace().collect::<Vec<_>>(),
            ["TopicData.PartitionData.Index", "int32", "v0+"]
        );
        assert!(line("TopicData.TopicId").contains("uuid"));
        assert!(line("TransactionalId").contains("nullable"));
        assert!(line("Responses.PartitionResponses.CurrentLeader.LeaderId").contains("int32"));
        // Every field of every definition is a row, nothing more: count them
        // from the schema tables independently of the walk's order.
        fn count(st: &StructDef) -> usize {
            st.fields
                .iter()
                .map(|f| match f.kind {
                    FieldKind::Struct(s) | FieldKind::Array(Elem::Struct(s)) => 1 + count(s),
                    _ => 1,
                })
                .sum()
        }
        let want: usize = [MessageKind::Request, MessageKind::Response]
            .into_iter()
            .flat_map(|k| schema::definitions(0, k))
            .map(|m| count(m.body) + 2)
            .sum();
        let records = crate::filter::record_set_paths();
        assert!(records
            .iter()
            .any(|r| r.0 == "RecordBatch.Record.Header.headerKey"));
        assert_eq!(text.lines().count(), want + 1 + records.len());
        // An api without record sets lists none.
        assert!(!api_fields(3).contains("RecordBatch"));
    }

    #[test]
    fn the_filter_listing_names_every_field_and_word() {
        let text = crate::filter::listing();
        for word in [
            "latency",
            "hol, hol_wait",
            "topic",
            "longpoll",
            "acks0",
            "Produce",
        ] {
            assert!(text.contains(word), "{word} missing:\n{text}");
        }
        // Every word the completion offers is listed.
        for w in crate::filter::completions("") {
            assert!(
                text.to_lowercase().contains(&w.to_lowercase()),
                "{w} missing"
            );
        }
    }

    #[test]
    fn apis_are_named_as_the_filter_names_them() {
        assert_eq!(crate::filter::api_key("produce"), Ok(0));
        assert_eq!(crate::filter::api_key("API_VERSIONS"), Ok(18));
        assert_eq!(crate::filter::api_key("1"), Ok(1));
        let e = crate::filter::api_key("prodcue").unwrap_err();
        assert!(e.contains("did you mean 'Produce'"), "{e}");
        assert!(crate::filter::api_key("999").is_err());
    }
}
