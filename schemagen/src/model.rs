//! The parsed form of one Kafka message-definition file.
//!
//! [`parse_message`] turns the JSON value of a file (comments already
//! stripped) into a [`Message`]: its top-level attributes, its fields as a
//! tree (inline struct definitions stay attached to the field that declares
//! them), and its `commonStructs`. Prose (`about`) and attributes that do not
//! affect decoding (`listeners`, `zeroCopy`) are dropped here. Any key this
//! module does not know is an error, so a new attribute in a future Kafka
//! release is noticed instead of silently lost.

use serde_json::{Map, Value};

use crate::versions::Versions;

/// What a definition file describes (its `"type"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `"request"`
    Request,
    /// `"response"`
    Response,
    /// `"header"`
    Header,
    /// `"data"`
    Data,
}

impl Kind {
    /// The `MessageKind` variant name in the tables.
    pub fn rust(self) -> &'static str {
        match self {
            Kind::Request => "MessageKind::Request",
            Kind::Response => "MessageKind::Response",
            Kind::Header => "MessageKind::Header",
            Kind::Data => "MessageKind::Data",
        }
    }
}

/// A primitive type name of the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prim {
    /// `bool`
    Bool,
    /// `int8`
    Int8,
    /// `int16`
    Int16,
    /// `uint16`
    Uint16,
    /// `int32`
    Int32,
    /// `uint32`
    Uint32,
    /// `int64`
    Int64,
    /// `float64`
    Float64,
    /// `uuid`
    Uuid,
    /// `string`
    String,
    /// `bytes`
    Bytes,
    /// `records`
    Records,
}

impl Prim {
    /// The primitive named `name` in the JSON, if it is one.
    pub fn from_name(name: &str) -> Option<Prim> {
        Some(match name {
            "bool" => Prim::Bool,
            "int8" => Prim::Int8,
            "int16" => Prim::Int16,
            "uint16" => Prim::Uint16,
            "int32" => Prim::Int32,
            "uint32" => Prim::Uint32,
            "int64" => Prim::Int64,
            "float64" => Prim::Float64,
            "uuid" => Prim::Uuid,
            "string" => Prim::String,
            "bytes" => Prim::Bytes,
            "records" => Prim::Records,
            _ => return None,
        })
    }

    /// The `Prim` variant expression in the tables.
    pub fn rust(self) -> &'static str {
        match self {
            Prim::Bool => "Prim::Bool",
            Prim::Int8 => "Prim::Int8",
            Prim::Int16 => "Prim::Int16",
            Prim::Uint16 => "Prim::Uint16",
            Prim::Int32 => "Prim::Int32",
            Prim::Uint32 => "Prim::Uint32",
            Prim::Int64 => "Prim::Int64",
            Prim::Float64 => "Prim::Float64",
            Prim::Uuid => "Prim::Uuid",
            Prim::String => "Prim::String",
            Prim::Bytes => "Prim::Bytes",
            Prim::Records => "Prim::Records",
        }
    }
}

/// The decoded shape of a field's type text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ty {
    /// `int32`, `string`, ...
    Prim(Prim),
    /// A bare struct name.
    Struct(String),
    /// `[]int32`, ...
    ArrayPrim(Prim),
    /// `[]SomeStruct`
    ArrayStruct(String),
}

impl Ty {
    /// Parses a type text such as `int16`, `[]string`, `[]TopicData` or `LeaderIdAndEpoch`.
    pub fn parse(text: &str) -> Result<Ty, String> {
        let (array, base) = match text.strip_prefix("[]") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if let Some(p) = Prim::from_name(base) {
            if array && p == Prim::Records {
                return Err(format!(
                    "type {text:?}: an array of records is not a Kafka type"
                ));
            }
            return Ok(if array { Ty::ArrayPrim(p) } else { Ty::Prim(p) });
        }
        if !is_struct_name(base) {
            return Err(format!("unknown type {text:?}"));
        }
        let name = base.to_string();
        Ok(if array {
            Ty::ArrayStruct(name)
        } else {
            Ty::Struct(name)
        })
    }

    /// The struct name, when the type is a struct or an array of structs.
    pub fn struct_name(&self) -> Option<&str> {
        match self {
            Ty::Struct(n) | Ty::ArrayStruct(n) => Some(n),
            Ty::Prim(_) | Ty::ArrayPrim(_) => None,
        }
    }
}

/// True for a struct type name: an ASCII letter-or-digit identifier starting upper case.
fn is_struct_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z')) && bytes.all(|b| b.is_ascii_alphanumeric())
}

/// One field, with everything that matters for decoding.
#[derive(Clone, Debug)]
pub struct Field {
    /// `name`.
    pub name: String,
    /// `type`, as written.
    pub type_name: String,
    /// `type`, parsed.
    pub ty: Ty,
    /// `versions`: where the field is present.
    pub versions: Versions,
    /// `nullableVersions`.
    pub nullable: Versions,
    /// `taggedVersions`.
    pub tagged: Versions,
    /// `tag`, for tagged fields.
    pub tag: Option<u32>,
    /// `Some` only when the field has its own `flexibleVersions`.
    pub flexible: Option<Versions>,
    /// The default as text (strings unquoted), empty when absent.
    pub default: String,
    /// `entityType` (`topicName`, `groupId`, …), empty when absent.
    pub entity_type: String,
    /// `mapKey`.
    pub map_key: bool,
    /// `ignorable`.
    pub ignorable: bool,
    /// The inline struct definition, when the field declares one.
    pub fields: Option<Vec<Field>>,
}

/// A named struct from `commonStructs`.
#[derive(Clone, Debug)]
pub struct CommonStruct {
    /// Its name.
    pub name: String,
    /// Its fields.
    pub fields: Vec<Field>,
}

/// One definition file.
#[derive(Clone, Debug)]
pub struct Message {
    /// `name` (`ProduceRequest`).
    pub name: String,
    /// `type`.
    pub kind: Kind,
    /// `apiKey`; requests and responses must have one, headers and data must not.
    pub api_key: Option<i16>,
    /// `validVersions`.
    pub valid: Versions,
    /// `flexibleVersions`.
    pub flexible: Versions,
    /// `deprecatedVersions`.
    pub deprecated: Versions,
    /// `latestVersionUnstable`.
    pub latest_unstable: bool,
    /// `fields`.
    pub fields: Vec<Field>,
    /// `commonStructs`.
    pub common: Vec<CommonStruct>,
}

const TOP_KEYS: &[&str] = &[
    "apiKey",
    "type",
    "listeners",
    "name",
    "validVersions",
    "flexibleVersions",
    "deprecatedVersions",
    "latestVersionUnstable",
    "fields",
    "commonStructs",
];

const FIELD_KEYS: &[&str] = &[
    "name",
    "type",
    "versions",
    "about",
    "fields",
    "default",
    "entityType",
    "ignorable",
    "nullableVersions",
    "mapKey",
    "tag",
    "taggedVersions",
    "zeroCopy",
    "flexibleVersions",
];

const COMMON_KEYS: &[&str] = &["name", "versions", "fields"];

fn check_keys(obj: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), String> {
    match obj.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("{what}: unknown key {k:?}")),
        None => Ok(()),
    }
}

fn as_object<'v>(v: &'v Value, what: &str) -> Result<&'v Map<String, Value>, String> {
    v.as_object()
        .ok_or_else(|| format!("{what}: expected a JSON object"))
}

fn req_str<'v>(obj: &'v Map<String, Value>, key: &str, what: &str) -> Result<&'v str, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(format!("{what}: \"{key}\" must be a string")),
        None => Err(format!("{what}: missing \"{key}\"")),
    }
}

fn opt_str<'v>(
    obj: &'v Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<&'v str>, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("{what}: \"{key}\" must be a string")),
        None => Ok(None),
    }
}

/// A boolean attribute, false when absent. The strings `"true"` and `"false"` are
/// accepted too: a few 4.2.1 files write `"ignorable": "true"`, which Kafka's own
/// (Jackson-based) generator coerces to a boolean.
fn opt_bool(obj: &Map<String, Value>, key: &str, what: &str) -> Result<bool, String> {
    match obj.get(key) {
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::String(s)) if s == "true" => Ok(true),
        Some(Value::String(s)) if s == "false" => Ok(false),
        Some(_) => Err(format!("{what}: \"{key}\" must be true or false")),
        None => Ok(false),
    }
}

fn opt_versions(
    obj: &Map<String, Value>,
    key: &str,
    what: &str,
) -> Result<Option<Versions>, String> {
    opt_str(obj, key, what)?
        .map(|s| Versions::parse(s).map_err(|e| format!("{what}: \"{key}\": {e}")))
        .transpose()
}

fn parse_fields(
    obj: &Map<String, Value>,
    what: &str,
    path: &str,
) -> Result<Option<Vec<Field>>, String> {
    match obj.get("fields") {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| parse_field(item, path))
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("{what}: \"fields\" must be an array")),
    }
}

/// Parses one field (and, recursively, its inline struct). `parent` is the
/// dotted path of the enclosing fields, for error messages.
fn parse_field(v: &Value, parent: &str) -> Result<Field, String> {
    let obj = as_object(v, &format!("a field of {}", or_top(parent)))?;
    let name = match obj.get("name") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(format!(
                "a field of {} has no string \"name\"",
                or_top(parent)
            ))
        }
    };
    let path = if parent.is_empty() {
        name.clone()
    } else {
        format!("{parent}.{name}")
    };
    let what = format!("field {path}");
    check_keys(obj, FIELD_KEYS, &what)?;

    let type_name = req_str(obj, "type", &what)?.to_string();
    let ty = Ty::parse(&type_name).map_err(|e| format!("{what}: {e}"))?;
    let versions_text = req_str(obj, "versions", &what)?;
    let versions =
        Versions::parse(versions_text).map_err(|e| format!("{what}: \"versions\": {e}"))?;
    let nullable = opt_versions(obj, "nullableVersions", &what)?.unwrap_or(Versions::NONE);
    let tagged = opt_versions(obj, "taggedVersions", &what)?.unwrap_or(Versions::NONE);
    let flexible = opt_versions(obj, "flexibleVersions", &what)?;
    // Kafka 3.9's BrokerHeartbeatRequest writes `"tag": "0"`; like Kafka's own
    // generator, accept a decimal string as well as a number.
    let tag_err = || format!("{what}: \"tag\" must be a non-negative 32-bit integer");
    let tag = match obj.get("tag") {
        None => None,
        Some(Value::Number(n)) => Some(
            n.as_u64()
                .and_then(|t| u32::try_from(t).ok())
                .ok_or_else(tag_err)?,
        ),
        Some(Value::String(s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
            Some(s.parse::<u32>().map_err(|_| tag_err())?)
        }
        Some(_) => return Err(tag_err()),
    };
    if tag.is_some() != obj.contains_key("taggedVersions") {
        return Err(format!(
            "{what}: \"tag\" and \"taggedVersions\" must come together"
        ));
    }
    let default = match obj.get("default") {
        None => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(_) => {
            return Err(format!(
                "{what}: \"default\" must be a string, number or bool"
            ))
        }
    };
    let entity_type = opt_str(obj, "entityType", &what)?.unwrap_or("").to_string();
    let map_key = opt_bool(obj, "mapKey", &what)?;
    let ignorable = opt_bool(obj, "ignorable", &what)?;
    opt_bool(obj, "zeroCopy", &what)?;
    if let Some(about) = obj.get("about") {
        if !about.is_string() {
            return Err(format!("{what}: \"about\" must be a string"));
        }
    }
    let fields = parse_fields(obj, &what, &path)?;
    if fields.is_some() && ty.struct_name().is_none() {
        return Err(format!(
            "{what}: has \"fields\" but its type {type_name:?} is not a struct"
        ));
    }
    Ok(Field {
        name,
        type_name,
        ty,
        versions,
        nullable,
        tagged,
        tag,
        flexible,
        default,
        entity_type,
        map_key,
        ignorable,
        fields,
    })
}

fn or_top(parent: &str) -> &str {
    if parent.is_empty() {
        "the message"
    } else {
        parent
    }
}

/// Parses a whole definition file (already comment-stripped and JSON-parsed).
///
/// The returned error text names the element at fault; the caller adds the file.
pub fn parse_message(v: &Value) -> Result<Message, String> {
    let obj = as_object(v, "top level")?;
    check_keys(obj, TOP_KEYS, "top level")?;
    let name = req_str(obj, "name", "top level")?.to_string();
    let kind = match req_str(obj, "type", "top level")? {
        "request" => Kind::Request,
        "response" => Kind::Response,
        "header" => Kind::Header,
        "data" => Kind::Data,
        other => return Err(format!("top level: unknown \"type\" {other:?}")),
    };
    let api_key = match obj.get("apiKey") {
        None => None,
        Some(Value::Number(n)) => Some(
            n.as_i64()
                .and_then(|k| i16::try_from(k).ok())
                .filter(|k| *k >= 0)
                .ok_or_else(|| {
                    "top level: \"apiKey\" must be a non-negative 16-bit integer".to_string()
                })?,
        ),
        Some(_) => return Err("top level: \"apiKey\" must be a number".to_string()),
    };
    match (kind, api_key) {
        (Kind::Request | Kind::Response, None) => {
            return Err("top level: a request or response needs an \"apiKey\"".to_string())
        }
        (Kind::Header | Kind::Data, Some(_)) => {
            return Err(
                "top level: a header or data schema must not have an \"apiKey\"".to_string(),
            )
        }
        _ => {}
    }
    let valid = opt_versions(obj, "validVersions", "top level")?
        .ok_or_else(|| "top level: missing \"validVersions\"".to_string())?;
    let flexible = opt_versions(obj, "flexibleVersions", "top level")?.unwrap_or(Versions::NONE);
    let deprecated =
        opt_versions(obj, "deprecatedVersions", "top level")?.unwrap_or(Versions::NONE);
    let latest_unstable = opt_bool(obj, "latestVersionUnstable", "top level")?;
    let fields = parse_fields(obj, "top level", "")?.unwrap_or_default();
    if !valid.is_empty() && !obj.contains_key("fields") {
        return Err("top level: missing \"fields\"".to_string());
    }

    let mut common = Vec::new();
    match obj.get("commonStructs") {
        None => {}
        Some(Value::Array(items)) => {
            for item in items {
                let cs = as_object(item, "commonStructs")?;
                let cs_name = req_str(cs, "name", "a common struct")?.to_string();
                let what = format!("common struct {cs_name}");
                check_keys(cs, COMMON_KEYS, &what)?;
                if !is_struct_name(&cs_name) {
                    return Err(format!("{what}: not a valid struct name"));
                }
                opt_versions(cs, "versions", &what)?;
                let fields = parse_fields(cs, &what, &cs_name)?
                    .ok_or_else(|| format!("{what}: missing \"fields\""))?;
                common.push(CommonStruct {
                    name: cs_name,
                    fields,
                });
            }
        }
        Some(_) => return Err("top level: \"commonStructs\" must be an array".to_string()),
    }

    Ok(Message {
        name,
        kind,
        api_key,
        valid,
        flexible,
        deprecated,
        latest_unstable,
        fields,
        common,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types() {
        assert_eq!(Ty::parse("int16"), Ok(Ty::Prim(Prim::Int16)));
        assert_eq!(Ty::parse("[]uuid"), Ok(Ty::ArrayPrim(Prim::Uuid)));
        assert_eq!(
            Ty::parse("[]TopicData"),
            Ok(Ty::ArrayStruct("TopicData".into()))
        );
        assert_eq!(
            Ty::parse("LeaderIdAndEpoch"),
            Ok(Ty::Struct("LeaderIdAndEpoch".into()))
        );
        assert!(Ty::parse("int128").is_err());
        assert!(Ty::parse("[][]int32").is_err());
        assert!(Ty::parse("[]records").is_err());
        assert!(Ty::parse("").is_err());
    }

    #[test]
    fn field_attributes() {
        let v: Value = serde_json::from_str(
            r#"{ "name": "X", "type": "request", "apiKey": 3, "validVersions": "0-2",
                 "flexibleVersions": "1+", "fields": [
                 { "name": "A", "type": "int64", "versions": "0+", "default": -1, "about": "a" },
                 { "name": "B", "type": "[]Part", "versions": "1+", "nullableVersions": "2+",
                   "tag": 0, "taggedVersions": "1+", "fields": [
                     { "name": "C", "type": "string", "versions": "0+", "default": "null",
                       "entityType": "topicName", "mapKey": true, "flexibleVersions": "none" } ] } ] }"#,
        )
        .unwrap();
        let m = parse_message(&v).unwrap();
        assert_eq!(m.api_key, Some(3));
        assert_eq!(m.flexible, Versions::new(1, i16::MAX));
        assert_eq!(m.fields[0].default, "-1");
        let b = &m.fields[1];
        assert_eq!(b.tag, Some(0));
        assert_eq!(b.nullable, Versions::new(2, i16::MAX));
        let c = &b.fields.as_ref().unwrap()[0];
        assert_eq!(c.default, "null");
        assert_eq!(c.flexible, Some(Versions::NONE));
        assert!(c.map_key && !c.ignorable);
    }

    #[test]
    fn string_booleans_are_coerced() {
        let v: Value = serde_json::from_str(
            r#"{ "name": "X", "type": "data", "validVersions": "0", "fields": [
                 { "name": "A", "type": "int8", "versions": "0+", "ignorable": "true", "mapKey": "false" },
                 { "name": "B", "type": "int8", "versions": "0+", "ignorable": "yes" } ] }"#,
        )
        .unwrap();
        let e = parse_message(&v).unwrap_err();
        assert!(e.contains("field B"), "{e}");
        let v: Value = serde_json::from_str(
            r#"{ "name": "X", "type": "data", "validVersions": "0", "fields": [
                 { "name": "A", "type": "int8", "versions": "0+", "ignorable": "true", "mapKey": "false" } ] }"#,
        )
        .unwrap();
        let a = &parse_message(&v).unwrap().fields[0];
        assert!(a.ignorable && !a.map_key);
    }

    #[test]
    fn rejects_unknown_keys_and_bad_tags() {
        let bad_key: Value = serde_json::from_str(
            r#"{ "name": "X", "type": "data", "validVersions": "0", "fields": [
                 { "name": "A", "type": "int8", "versions": "0+", "wireMagic": 1 } ] }"#,
        )
        .unwrap();
        let e = parse_message(&bad_key).unwrap_err();
        assert!(e.contains("field A") && e.contains("wireMagic"), "{e}");

        let lonely_tag: Value = serde_json::from_str(
            r#"{ "name": "X", "type": "data", "validVersions": "0", "fields": [
                 { "name": "A", "type": "int8", "versions": "0+", "tag": 1 } ] }"#,
        )
        .unwrap();
        assert!(parse_message(&lonely_tag).is_err());
    }
}
