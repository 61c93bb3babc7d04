//! Rendering a [`Plan`] as the Rust source of `generated.rs`.
//!
//! Layout of the output: banner, imports, `MESSAGES`, the `ApiKey`
//! constants, the two header
//! definitions, `DATA_SCHEMAS` and the data definitions, then, definition by
//! definition, the body `StructDef` (`<PREFIX>_BODY`) followed by one
//! `StructDef` per struct it reaches (`<PREFIX>__<STRUCT>`), in the order a
//! depth-first walk of the fields first meets them. Only structs reachable
//! from the body are emitted. Nothing here iterates a hash map, so the text is
//! a pure function of the plan.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use crate::merge::{screaming_snake, Def, Plan};
use crate::model::{Field, Kind, Message, Ty};
use crate::Error;

/// The banner after its first line (which names the release).
const BANNER: &str = "\
// Regenerate from the workspace root with `cargo run -p schemagen`; `cargo run -p schemagen -- --check` verifies.
//
// Layout: MESSAGES (requests and responses), the ApiKey constants, REQUEST_HEADER, RESPONSE_HEADER, DATA_SCHEMAS, then for each
// definition its body StructDef (<NAME>_BODY) and the structs reached from it (<NAME>__<STRUCT>).
// Statics for Kafka 3.9 (legacy) definitions carry a _K39 suffix on <NAME>.
";

/// A Rust string literal for `s`.
fn lit(s: &str) -> String {
    format!("{s:?}")
}

/// One struct to emit: its static name, its Kafka name, its fields.
struct StructOut<'m> {
    static_name: String,
    name: &'m str,
    fields: &'m [Field],
}

/// Every named struct of a message: inline definitions and commonStructs.
fn registry(msg: &Message) -> Result<HashMap<&str, &[Field]>, String> {
    fn walk<'m>(
        fields: &'m [Field],
        reg: &mut HashMap<&'m str, &'m [Field]>,
    ) -> Result<(), String> {
        for f in fields {
            if let (Some(inner), Some(name)) = (&f.fields, f.ty.struct_name()) {
                if reg.insert(name, inner).is_some() {
                    return Err(format!("struct {name} is defined more than once"));
                }
                walk(inner, reg)?;
            }
        }
        Ok(())
    }
    let mut reg = HashMap::new();
    walk(&msg.fields, &mut reg)?;
    for cs in &msg.common {
        if reg.insert(cs.name.as_str(), cs.fields.as_slice()).is_some() {
            return Err(format!("struct {} is defined more than once", cs.name));
        }
        walk(&cs.fields, &mut reg)?;
    }
    Ok(reg)
}

fn struct_static(prefix: &str, name: &str) -> String {
    format!("{prefix}__{}", screaming_snake(name))
}

/// The body and the structs reachable from it, in depth-first order of first use.
fn structs<'m>(def: &Def<'m>) -> Result<Vec<StructOut<'m>>, String> {
    let msg = def.msg;
    let reg = registry(msg)?;

    // Two struct names that differ only in case patterns would get the same static name.
    let mut snakes: HashMap<String, &str> = HashMap::new();
    let mut names: Vec<&str> = reg.keys().copied().collect();
    names.sort_unstable();
    for name in names {
        if let Some(other) = snakes.insert(screaming_snake(name), name) {
            return Err(format!(
                "structs {other} and {name} map to the same Rust name"
            ));
        }
    }

    fn visit<'m>(
        fields: &'m [Field],
        reg: &HashMap<&'m str, &'m [Field]>,
        prefix: &str,
        seen: &mut HashSet<&'m str>,
        out: &mut Vec<StructOut<'m>>,
    ) -> Result<(), String> {
        for f in fields {
            let Some(name) = f.ty.struct_name() else {
                continue;
            };
            if !seen.insert(name) {
                continue;
            }
            let inner = reg.get(name).copied().ok_or_else(|| {
                format!(
                    "field {}: struct type {name} is neither defined inline nor in commonStructs",
                    f.name
                )
            })?;
            out.push(StructOut {
                static_name: struct_static(prefix, name),
                name,
                fields: inner,
            });
            visit(inner, reg, prefix, seen, out)?;
        }
        Ok(())
    }

    let mut out = vec![StructOut {
        static_name: format!("{}_BODY", def.prefix),
        name: &msg.name,
        fields: &msg.fields,
    }];
    let mut seen = HashSet::new();
    visit(&msg.fields, &reg, &def.prefix, &mut seen, &mut out)?;
    Ok(out)
}

fn kind_expr(f: &Field, prefix: &str) -> String {
    match &f.ty {
        Ty::Prim(p) => format!("FieldKind::Prim({})", p.rust()),
        Ty::ArrayPrim(p) => format!("FieldKind::Array(Elem::Prim({}))", p.rust()),
        Ty::Struct(n) => format!("FieldKind::Struct(&{})", struct_static(prefix, n)),
        Ty::ArrayStruct(n) => format!(
            "FieldKind::Array(Elem::Struct(&{}))",
            struct_static(prefix, n)
        ),
    }
}

fn write_field(out: &mut String, f: &Field, prefix: &str) {
    let tag = match f.tag {
        Some(t) => format!("Some({t})"),
        None => "None".to_string(),
    };
    let flexible = match f.flexible {
        Some(v) => format!("Some({})", v.rust()),
        None => "None".to_string(),
    };
    let _ = write!(
        out,
        "        FieldDef {{\n\
         \x20           name: {}, type_name: {}, kind: {},\n\
         \x20           versions: {}, nullable: {},\n\
         \x20           tagged: {}, tag: {tag}, flexible: {flexible},\n\
         \x20           default: {}, entity_type: {}, map_key: {}, ignorable: {},\n\
         \x20           marks: {},\n\
         \x20       }},\n",
        lit(&f.name),
        lit(&f.type_name),
        kind_expr(f, prefix),
        f.versions.rust(),
        f.nullable.rust(),
        f.tagged.rust(),
        lit(&f.default),
        lit(&f.entity_type),
        f.map_key,
        f.ignorable,
        marks_expr(&f.name, &f.entity_type),
    );
}

/// The `Marks` of a field (kafkashark's `Marks::of`, which a test of the
/// generated tables checks them against): what its decoders look for by
/// name and entity type.
fn marks_expr(name: &str, entity_type: &str) -> String {
    let marks = [
        (name.ends_with("ErrorCode"), "ERROR_CODE"),
        (name == "BatchIndex", "BATCH_INDEX"),
        (
            ["ThrottleTimeMs", "Acks", "MaxWaitMs", "MinBytes"].contains(&name),
            "TOP_INT",
        ),
        (
            [
                "FetchOffset",
                "HighWatermark",
                "LastStableOffset",
                "LogStartOffset",
                "CommittedOffset",
            ]
            .contains(&name),
            "PLACED_INT",
        ),
        (name == "TopicId", "TOPIC_ID"),
        (entity_type == "topicName", "TOPIC_NAME"),
        (
            ["Name", "Topic", "TopicName"].contains(&name),
            "PLACE_TOPIC",
        ),
        (
            ["PartitionIndex", "Partition", "Index"].contains(&name),
            "PLACE_PARTITION",
        ),
    ];
    let mut on = marks.iter().filter(|(on, _)| *on).map(|(_, m)| *m);
    match on.next() {
        None => "Marks::NONE".to_string(),
        Some(first) => on.fold(format!("Marks::{first}"), |e, m| {
            format!("{e}.with(Marks::{m})")
        }),
    }
}

fn write_struct(out: &mut String, s: &StructOut<'_>, prefix: &str) {
    let _ = writeln!(
        out,
        "pub static {}: StructDef = StructDef {{",
        s.static_name
    );
    let _ = writeln!(out, "    name: {},", lit(s.name));
    if s.fields.is_empty() {
        out.push_str("    fields: &[],\n");
    } else {
        out.push_str("    fields: &[\n");
        for f in s.fields {
            write_field(out, f, prefix);
        }
        out.push_str("    ],\n");
    }
    out.push_str("};\n");
}

/// The fields of a `MessageDef` literal, indented by `indent` spaces.
fn write_message_fields(out: &mut String, def: &Def<'_>, indent: &str) {
    let m = def.msg;
    let _ = write!(
        out,
        "{indent}name: {}, api_key: {}, kind: {},\n\
         {indent}valid: {}, flexible: {}, deprecated: {},\n\
         {indent}latest_unstable: {}, set: {}, body: &{}_BODY,\n",
        lit(&m.name),
        m.api_key.unwrap_or(-1),
        m.kind.rust(),
        def.valid.rust(),
        m.flexible.rust(),
        m.deprecated.rust(),
        def.latest_unstable,
        def.set.rust(),
        def.prefix,
    );
}

fn write_note(out: &mut String, def: &Def<'_>, indent: &str) {
    if let Some(note) = &def.note {
        let _ = writeln!(out, "{indent}// {note}");
    }
}

fn write_static_message(out: &mut String, def: &Def<'_>, doc: &str) {
    let _ = writeln!(out, "/// {doc}");
    write_note(out, def, "");
    let _ = writeln!(out, "pub static {}: MessageDef = MessageDef {{", def.prefix);
    write_message_fields(out, def, "    ");
    out.push_str("};\n\n");
}

/// One named constant per api key, from its request definitions' name
/// (`Produce` → `ApiKey::PRODUCE`), in key order.
fn write_api_keys(out: &mut String, plan: &Plan<'_>) {
    let _ = writeln!(out, "impl ApiKey {{");
    let mut last = None;
    for def in &plan.messages {
        let m = def.msg;
        let (Some(key), Kind::Request) = (m.api_key, m.kind) else {
            continue;
        };
        if last == Some(key) {
            continue;
        }
        last = Some(key);
        let name = m.name.strip_suffix("Request").unwrap_or(&m.name);
        let _ = writeln!(out, "    /// `{name}`.");
        let _ = writeln!(
            out,
            "    pub const {}: ApiKey = ApiKey({key});",
            screaming_snake(name)
        );
    }
    out.push_str("}\n\n");
}

/// Renders the whole file.
pub fn render(plan: &Plan<'_>) -> Result<String, Error> {
    let mut out = String::with_capacity(4 << 20);
    let _ = writeln!(
        out,
        "// @generated by schemagen from Kafka's JSON message definitions (Apache Kafka {}; \
         Kafka 3.9 for versions 4.0 removed). Do not edit by hand.",
        plan.release
    );
    out.push_str(BANNER);
    out.push('\n');
    out.push_str("#![allow(missing_docs)]\n\n");
    out.push_str(
        "use super::{\n    ApiKey, Elem, FieldDef, FieldKind, Marks, MessageDef, MessageKind, Prim, SchemaSet, StructDef,\n    Versions,\n};\n\n",
    );

    let _ = writeln!(
        out,
        "/// The Apache Kafka release the tables follow (`SchemaSet::Current`).\n\
         pub const KAFKA_RELEASE: &str = {};\n",
        lit(&plan.release)
    );
    // MESSAGES
    let _ = writeln!(
        out,
        "/// Every request and response definition: by api key, request before response, Kafka {}\n\
         /// before the Kafka 3.9 (legacy) definition of the versions 4.0 removed.",
        plan.release
    );
    out.push_str("pub static MESSAGES: &[MessageDef] = &[\n");
    for def in &plan.messages {
        write_note(&mut out, def, "    ");
        out.push_str("    MessageDef {\n");
        write_message_fields(&mut out, def, "        ");
        out.push_str("    },\n");
    }
    out.push_str("];\n\n");
    write_api_keys(&mut out, plan);

    // Headers
    write_static_message(
        &mut out,
        &plan.request_header,
        "The request header (api key, api version, correlation id, client id).",
    );
    write_static_message(
        &mut out,
        &plan.response_header,
        "The response header (correlation id).",
    );

    // Data schemas
    let _ = writeln!(
        out,
        "/// Every data schema (kind Data): by name, Kafka {} before any Kafka 3.9 definition.",
        plan.release
    );
    out.push_str("pub static DATA_SCHEMAS: &[&MessageDef] = &[\n");
    for def in &plan.data {
        let _ = writeln!(out, "    &{},", def.prefix);
    }
    out.push_str("];\n\n");
    for def in &plan.data {
        let doc = format!(
            "The {} data schema ({}).",
            def.msg.name,
            set_text(def, &plan.release)
        );
        write_static_message(&mut out, def, &doc);
    }

    // Structs, definition by definition.
    let mut statics: HashMap<String, &std::path::Path> = HashMap::new();
    for def in &plan.data {
        statics.insert(def.prefix.clone(), def.file);
    }
    statics.insert(plan.request_header.prefix.clone(), plan.request_header.file);
    statics.insert(
        plan.response_header.prefix.clone(),
        plan.response_header.file,
    );
    let all = plan
        .messages
        .iter()
        .chain([&plan.request_header, &plan.response_header])
        .chain(plan.data.iter());
    for def in all {
        let list = structs(def).map_err(|message| Error::Schema {
            path: def.file.to_path_buf(),
            message,
        })?;
        let _ = writeln!(
            out,
            "// ---- {} ({}, {}) ----\n",
            def.msg.name,
            set_text(def, &plan.release),
            def.valid
        );
        for s in &list {
            if let Some(other) = statics.insert(s.static_name.clone(), def.file) {
                return Err(Error::Schema {
                    path: def.file.to_path_buf(),
                    message: format!(
                        "static name {} collides with one generated for {}",
                        s.static_name,
                        other.display()
                    ),
                });
            }
            write_struct(&mut out, s, &def.prefix);
            out.push('\n');
        }
    }
    // Exactly one trailing newline.
    while out.ends_with("\n\n") {
        out.pop();
    }
    Ok(out)
}

fn set_text(def: &Def<'_>, release: &str) -> String {
    match def.set {
        crate::merge::Set::Current => format!("Kafka {release}"),
        crate::merge::Set::Legacy => "Kafka 3.9".to_string(),
    }
}
