//! The merge rule: which definition decodes which versions.
//!
//! The current release's files (the newest `kafka-<version>` folder) are
//! authoritative for every version they list. The Kafka 3.9 files fill in
//! only the versions that 4.0 dropped: for a request or response, the 3.9
//! versions below the current minimum (all of 3.9's versions when the current
//! release says `"none"` or has no file for that api key and kind) become a
//! second, "legacy" definition. Headers are one definition each: the current
//! fields, with the valid range stretched down to 3.9's
//! minimum (RequestHeader v0). Data schemas follow the request/response rule.
//! The result is a [`Plan`]: every definition to emit, in output order.

use std::collections::BTreeMap;
use std::path::Path;

use crate::model::{Kind, Message};
use crate::versions::Versions;
use crate::Error;

/// A parsed file and where it came from.
#[derive(Debug)]
pub struct Loaded {
    /// The file.
    pub path: std::path::PathBuf,
    /// Its definition.
    pub msg: Message,
}

/// Which release a definition is generated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Set {
    /// The release the tables follow.
    Current,
    /// Kafka 3.9, for the versions 4.0 removed.
    Legacy,
}

impl Set {
    /// The `SchemaSet` variant in the tables.
    pub fn rust(self) -> &'static str {
        match self {
            Set::Current => "SchemaSet::Current",
            Set::Legacy => "SchemaSet::Legacy",
        }
    }
}

/// One `MessageDef` to emit.
#[derive(Debug)]
pub struct Def<'a> {
    /// The file it comes from.
    pub file: &'a Path,
    /// The definition.
    pub msg: &'a Message,
    /// The release it comes from.
    pub set: Set,
    /// The versions this definition decodes (may differ from the file's validVersions).
    pub valid: Versions,
    /// The file's `latestVersionUnstable`.
    pub latest_unstable: bool,
    /// A comment explaining `valid` when it differs from the file.
    pub note: Option<String>,
    /// The name stem of this definition's statics (`PRODUCE_REQUEST`, `PRODUCE_REQUEST_K39`).
    pub prefix: String,
}

/// Everything to emit, in output order.
#[derive(Debug)]
pub struct Plan<'a> {
    /// The current release's version text (`4.3.0`).
    pub release: String,
    /// Requests and responses: by api key, request before response, current before 3.9.
    pub messages: Vec<Def<'a>>,
    /// The request header.
    pub request_header: Def<'a>,
    /// The response header.
    pub response_header: Def<'a>,
    /// Data schemas: by name, current before 3.9.
    pub data: Vec<Def<'a>>,
}

/// `SCREAMING_SNAKE_CASE` of a CamelCase name: `KRaftVersionRecord` → `K_RAFT_VERSION_RECORD`.
pub fn screaming_snake(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut out = String::with_capacity(name.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

/// The versions of `old` below the start of `current` (all of `old` when `current` is
/// absent or empty).
pub fn legacy_range(current: Option<Versions>, old: Versions) -> Versions {
    match current {
        Some(c) if !c.is_empty() => {
            if old.is_empty() || old.min >= c.min {
                Versions::NONE
            } else {
                Versions::new(old.min, old.max.min(c.min - 1))
            }
        }
        _ => old,
    }
}

fn def<'a>(l: &'a Loaded, set: Set, valid: Versions, note: Option<String>) -> Def<'a> {
    let mut prefix = screaming_snake(&l.msg.name);
    if set == Set::Legacy {
        prefix.push_str("_K39");
    }
    Def {
        file: &l.path,
        msg: &l.msg,
        set,
        valid,
        // The flag speaks of the file's newest version; keep it only if that version is in range.
        latest_unstable: l.msg.latest_unstable && valid.contains(l.msg.valid.max),
        note,
        prefix,
    }
}

fn schema_err(path: &Path, message: String) -> Error {
    Error::Schema {
        path: path.to_path_buf(),
        message,
    }
}

/// Indexes one set's requests/responses by (api key, kind) and its headers/data by name.
#[allow(clippy::type_complexity)]
fn index(
    set: &[Loaded],
) -> Result<
    (
        BTreeMap<(i16, Kind), &Loaded>,
        BTreeMap<&str, &Loaded>,
        BTreeMap<&str, &Loaded>,
    ),
    Error,
> {
    let mut apis = BTreeMap::new();
    let mut headers = BTreeMap::new();
    let mut data = BTreeMap::new();
    for l in set {
        let dup = match l.msg.kind {
            Kind::Request | Kind::Response => {
                let key = (l.msg.api_key.unwrap_or(-1), l.msg.kind);
                apis.insert(key, l).map(|d| d.path.clone())
            }
            Kind::Header => headers
                .insert(l.msg.name.as_str(), l)
                .map(|d| d.path.clone()),
            Kind::Data => data.insert(l.msg.name.as_str(), l).map(|d| d.path.clone()),
        };
        if let Some(other) = dup {
            return Err(schema_err(
                &l.path,
                format!("defines the same {:?} as {}", l.msg.kind, other.display()),
            ));
        }
    }
    Ok((apis, headers, data))
}

/// Applies the merge rule to the files of the current release (`current`,
/// Kafka `release`) and the 3.9 files (`legacy`).
pub fn plan<'a>(
    current: &'a [Loaded],
    legacy: &'a [Loaded],
    release: &str,
    dir: &Path,
) -> Result<Plan<'a>, Error> {
    let (cur_apis, cur_headers, cur_data) = index(current)?;
    let (old_apis, old_headers, old_data) = index(legacy)?;

    let mut messages = Vec::new();
    let mut keys: Vec<(i16, Kind)> = cur_apis.keys().chain(old_apis.keys()).copied().collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let cur = cur_apis.get(&key).copied();
        if let Some(c) = cur {
            if !c.msg.valid.is_empty() {
                messages.push(def(c, Set::Current, c.msg.valid, None));
            }
        }
        if let Some(o) = old_apis.get(&key).copied() {
            let valid = legacy_range(cur.map(|c| c.msg.valid), o.msg.valid);
            if !valid.is_empty() {
                let note = match cur.map(|c| c.msg.valid).filter(|v| !v.is_empty()) {
                    None => format!(
                        "Kafka 3.9 definition, {valid}: Kafka {release} lists no version of this API."
                    ),
                    Some(c) if valid == o.msg.valid => {
                        format!(
                            "Kafka 3.9 definition, {valid}: Kafka {release} starts at {}.",
                            c.min
                        )
                    }
                    Some(c) => format!(
                        "Kafka 3.9 definition for {valid} only (3.9 lists {}; {release} starts at {}).",
                        o.msg.valid, c.min
                    ),
                };
                messages.push(def(o, Set::Legacy, valid, Some(note)));
            }
        }
    }

    let header = |name: &str| -> Result<Def<'a>, Error> {
        let c = cur_headers
            .get(name)
            .copied()
            .ok_or_else(|| schema_err(dir, format!("no {name}.json with \"type\": \"header\"")))?;
        let mut valid = c.msg.valid;
        let mut note = None;
        if let Some(o) = old_headers.get(name) {
            let extra = legacy_range(Some(c.msg.valid), o.msg.valid);
            if !extra.is_empty() {
                valid = Versions::new(extra.min, c.msg.valid.max);
                let (which, verb) = if extra.min == extra.max {
                    ("version", "decodes")
                } else {
                    ("versions", "decode")
                };
                note = Some(format!(
                    "valid is {valid}, not {release}'s {}: Kafka 3.9 still lists {}; {which} {extra} {verb} \
                     with these {release} fields.",
                    c.msg.valid, o.msg.valid
                ));
            }
        }
        Ok(def(c, Set::Current, valid, note))
    };
    let request_header = header("RequestHeader")?;
    let response_header = header("ResponseHeader")?;
    for (name, l) in cur_headers.iter().chain(old_headers.iter()) {
        if *name != "RequestHeader" && *name != "ResponseHeader" {
            return Err(schema_err(&l.path, format!("unexpected header {name}")));
        }
    }

    let mut data = Vec::new();
    let mut names: Vec<&str> = cur_data.keys().chain(old_data.keys()).copied().collect();
    names.sort();
    names.dedup();
    for name in names {
        let cur = cur_data.get(name).copied();
        if let Some(c) = cur {
            if !c.msg.valid.is_empty() {
                data.push(def(c, Set::Current, c.msg.valid, None));
            }
        }
        if let Some(o) = old_data.get(name).copied() {
            let valid = legacy_range(cur.map(|c| c.msg.valid), o.msg.valid);
            if !valid.is_empty() {
                let note =
                    format!("Kafka 3.9 definition for {valid}, which {release} does not list.");
                data.push(def(o, Set::Legacy, valid, Some(note)));
            }
        }
    }

    Ok(Plan {
        release: release.to_string(),
        messages,
        request_header,
        response_header,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_names() {
        assert_eq!(screaming_snake("ProduceRequest"), "PRODUCE_REQUEST");
        assert_eq!(
            screaming_snake("KRaftVersionRecord"),
            "K_RAFT_VERSION_RECORD"
        );
        assert_eq!(screaming_snake("TopicProduceData"), "TOPIC_PRODUCE_DATA");
        assert_eq!(screaming_snake("Route53Thing"), "ROUTE53_THING");
        assert_eq!(screaming_snake("A"), "A");
    }

    #[test]
    fn legacy_ranges() {
        let v = |s| Versions::parse(s).unwrap();
        assert_eq!(legacy_range(Some(v("3-13")), v("0-11")), v("0-2"));
        assert_eq!(legacy_range(Some(v("none")), v("0-7")), v("0-7"));
        assert_eq!(legacy_range(None, v("0-3")), v("0-3"));
        assert_eq!(legacy_range(Some(v("0-13")), v("0-12")), Versions::NONE);
        assert_eq!(legacy_range(Some(v("1")), v("0")), v("0"));
        assert_eq!(legacy_range(Some(v("5+")), v("0-2")), v("0-2"));
    }
}
