//! Kafka message schemas as static tables.
//!
//! Place in the data path: consulted by framing (is this api key / version
//! plausible?), by the decoder (what comes next on the wire?) and by the views
//! (api names). The tables in `generated.rs` are written by the `schemagen`
//! tool from Kafka's own JSON message definitions (the newest Apache Kafka
//! release, [`KAFKA_RELEASE`], plus the Kafka 3.9 definitions for the
//! versions that 4.0 removed, KIP-896); this module only defines their types
//! and the lookups over them.
//!
//! Invariants: every `MessageDef` in [`MESSAGES`] covers a disjoint set of
//! versions for its (api key, kind); a current definition always wins over a
//! legacy one for a version both list.

#[rustfmt::skip]
mod generated;

pub use generated::{
    CONSUMER_PROTOCOL_ASSIGNMENT, CONSUMER_PROTOCOL_SUBSCRIPTION, CONTROL_RECORD_TYPE_SCHEMA,
    DATA_SCHEMAS, END_TXN_MARKER, KAFKA_RELEASE, K_RAFT_VERSION_RECORD, LEADER_CHANGE_MESSAGE,
    MESSAGES, REQUEST_HEADER, RESPONSE_HEADER, SNAPSHOT_FOOTER_RECORD, SNAPSHOT_HEADER_RECORD,
    VOTERS_RECORD,
};

/// A Kafka API key: the number a request header names. Its named
/// constants (`ApiKey::PRODUCE`) are generated from the request definitions;
/// [`ApiKey::name`] is the API's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ApiKey(pub i16);

impl ApiKey {
    /// The consumer-group APIs whose requests name a group: JoinGroup,
    /// Heartbeat, LeaveGroup, SyncGroup and ConsumerGroupHeartbeat (KIP-848).
    pub const GROUP: [ApiKey; 5] = [
        ApiKey::JOIN_GROUP,
        ApiKey::HEARTBEAT,
        ApiKey::LEAVE_GROUP,
        ApiKey::SYNC_GROUP,
        ApiKey::CONSUMER_GROUP_HEARTBEAT,
    ];

    /// The API's name (`Produce`), when the key is known.
    pub fn name(self) -> Option<&'static str> {
        api_name(self.0)
    }

    /// Whether this is one of the [`ApiKey::GROUP`] APIs.
    pub fn is_group(self) -> bool {
        ApiKey::GROUP.contains(&self)
    }
}

impl std::fmt::Display for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An inclusive range of versions; `min > max` means "none".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Versions {
    /// Lowest version in the range.
    pub min: i16,
    /// Highest version in the range (`i16::MAX` for an open range like `"3+"`).
    pub max: i16,
}

impl Versions {
    /// The empty range (`"none"`).
    pub const NONE: Versions = Versions { min: 0, max: -1 };
    /// Every version (`"0+"`).
    pub const ALL: Versions = Versions {
        min: 0,
        max: i16::MAX,
    };

    /// A range from `min` to `max` inclusive.
    pub const fn new(min: i16, max: i16) -> Versions {
        Versions { min, max }
    }

    /// True when `v` lies in the range.
    pub const fn contains(self, v: i16) -> bool {
        v >= self.min && v <= self.max
    }

    /// True when the range holds no version.
    pub const fn is_empty(self) -> bool {
        self.min > self.max
    }
}

impl std::fmt::Display for Versions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_empty() {
            f.write_str("none")
        } else if self.max == i16::MAX {
            write!(f, "{}+", self.min)
        } else if self.min == self.max {
            write!(f, "{}", self.min)
        } else {
            write!(f, "{}-{}", self.min, self.max)
        }
    }
}

/// A primitive wire type of Kafka's message definitions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Prim {
    /// `bool`: one byte, non-zero is true.
    Bool,
    /// `int8`
    Int8,
    /// `int16`, big-endian.
    Int16,
    /// `uint16`, big-endian.
    Uint16,
    /// `int32`, big-endian.
    Int32,
    /// `uint32`, big-endian.
    Uint32,
    /// `int64`, big-endian.
    Int64,
    /// `float64`, IEEE 754 big-endian.
    Float64,
    /// `uuid`: 16 bytes.
    Uuid,
    /// `string`: int16 length (or compact uvarint length+1 in flexible versions), UTF-8.
    String,
    /// `bytes`: int32 length (or compact uvarint length+1).
    Bytes,
    /// `records`: bytes holding a record set (RecordBatch v2 or a legacy message set).
    Records,
}

impl Prim {
    /// The name Kafka's JSON uses for this type.
    pub const fn name(self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Int8 => "int8",
            Prim::Int16 => "int16",
            Prim::Uint16 => "uint16",
            Prim::Int32 => "int32",
            Prim::Uint32 => "uint32",
            Prim::Int64 => "int64",
            Prim::Float64 => "float64",
            Prim::Uuid => "uuid",
            Prim::String => "string",
            Prim::Bytes => "bytes",
            Prim::Records => "records",
        }
    }
}

/// What an array holds.
#[derive(Clone, Copy, Debug)]
pub enum Elem {
    /// An array of primitives, e.g. `[]int32`.
    Prim(Prim),
    /// An array of structs, e.g. `[]TopicProduceData`.
    Struct(&'static StructDef),
}

/// The shape of a field.
#[derive(Clone, Copy, Debug)]
pub enum FieldKind {
    /// A single primitive value.
    Prim(Prim),
    /// A nested struct (not an array), e.g. ProduceResponse's `CurrentLeader`.
    Struct(&'static StructDef),
    /// An array, int32-counted or compact.
    Array(Elem),
}

/// A struct: a named, ordered list of fields.
#[derive(Debug)]
pub struct StructDef {
    /// The struct's type name (`TopicProduceData`), or the message name for a body.
    pub name: &'static str,
    /// The fields in wire order (tagged fields are listed too, in declaration order).
    pub fields: &'static [FieldDef],
}

/// One field of a struct, with everything Kafka's JSON says about it except its prose.
#[derive(Debug)]
pub struct FieldDef {
    /// Kafka's field name, verbatim (`ThrottleTimeMs`).
    pub name: &'static str,
    /// Kafka's type text, verbatim (`int16`, `[]TopicProduceData`, `LeaderIdAndEpoch`).
    pub type_name: &'static str,
    /// The decoded shape of the type.
    pub kind: FieldKind,
    /// Versions in which the field exists.
    pub versions: Versions,
    /// Versions in which the field may be null.
    pub nullable: Versions,
    /// Versions in which the field is sent as a tagged field.
    pub tagged: Versions,
    /// The tag number, for tagged fields.
    pub tag: Option<u32>,
    /// A field-level override of the message's flexible versions (RequestHeader's ClientId: none).
    pub flexible: Option<Versions>,
    /// The default value text (`"-1"`, `"null"`, `"false"`), empty when none is given.
    pub default: &'static str,
    /// The entity type (`topicName`, `groupId`, ...), empty when none is given.
    pub entity_type: &'static str,
    /// True when the field is the map key of its array element.
    pub map_key: bool,
    /// True when a sender may drop the field in versions that lack it.
    pub ignorable: bool,
    /// What the decoders look for in the field, from its name and entity
    /// type ([`Marks::of`]).
    pub marks: Marks,
}

/// What the decoders look for in a field: facts found by its name or entity
/// type, worked out once when the tables are generated, so that a decoder
/// tests a bit where it would compare strings for every field of every
/// message. `schemagen` writes [`Marks::of`] of each field (a test checks
/// every field of every table against it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Marks(u8);

/// Field names that name the topic of their struct (a fact's place).
pub const PLACE_TOPIC_NAMES: &[&str] = &["Name", "Topic", "TopicName"];
/// Field names that give the partition of their struct (a fact's place).
pub const PLACE_PARTITION_NAMES: &[&str] = &["PartitionIndex", "Partition", "Index"];
/// Field names whose top-level value the summary keeps (`decode::Summary`).
pub const TOP_INT_NAMES: &[&str] = &["ThrottleTimeMs", "Acks", "MaxWaitMs", "MinBytes"];
/// Field names whose values the summary keeps with their place, wherever
/// they are in a message of [`PLACED_INT_APIS`] (`decode::ScanFacts::ints`):
/// what consumer lag reads.
pub const PLACED_INT_NAMES: &[&str] = &[
    "FetchOffset",
    "HighWatermark",
    "LastStableOffset",
    "LogStartOffset",
    "CommittedOffset",
];

/// The APIs whose [`PLACED_INT_NAMES`] fields are kept.
pub const PLACED_INT_APIS: [ApiKey; 2] = [ApiKey::FETCH, ApiKey::OFFSET_COMMIT];

impl Marks {
    /// Nothing to look for.
    pub const NONE: Marks = Marks(0);
    /// A name ending in `ErrorCode`.
    pub const ERROR_CODE: Marks = Marks(1);
    /// `BatchIndex` (record-level errors, KIP-467).
    pub const BATCH_INDEX: Marks = Marks(1 << 1);
    /// One of [`TOP_INT_NAMES`].
    pub const TOP_INT: Marks = Marks(1 << 2);
    /// One of [`PLACED_INT_NAMES`].
    pub const PLACED_INT: Marks = Marks(1 << 3);
    /// `TopicId`.
    pub const TOPIC_ID: Marks = Marks(1 << 4);
    /// The entity type `topicName`.
    pub const TOPIC_NAME: Marks = Marks(1 << 5);
    /// One of [`PLACE_TOPIC_NAMES`].
    pub const PLACE_TOPIC: Marks = Marks(1 << 6);
    /// One of [`PLACE_PARTITION_NAMES`].
    pub const PLACE_PARTITION: Marks = Marks(1 << 7);

    /// Both marks.
    pub const fn with(self, other: Marks) -> Marks {
        Marks(self.0 | other.0)
    }

    /// True when `self` holds `m`.
    #[inline(always)]
    pub const fn has(self, m: Marks) -> bool {
        self.0 & m.0 != 0
    }

    /// The marks of a field of this name and entity type.
    pub fn of(name: &str, entity_type: &str) -> Marks {
        [
            (name.ends_with("ErrorCode"), Marks::ERROR_CODE),
            (name == "BatchIndex", Marks::BATCH_INDEX),
            (TOP_INT_NAMES.contains(&name), Marks::TOP_INT),
            (PLACED_INT_NAMES.contains(&name), Marks::PLACED_INT),
            (name == "TopicId", Marks::TOPIC_ID),
            (entity_type == "topicName", Marks::TOPIC_NAME),
            (PLACE_TOPIC_NAMES.contains(&name), Marks::PLACE_TOPIC),
            (
                PLACE_PARTITION_NAMES.contains(&name),
                Marks::PLACE_PARTITION,
            ),
        ]
        .into_iter()
        .filter(|&(on, _)| on)
        .fold(Marks::NONE, |m, (_, mark)| m.with(mark))
    }
}

/// Whether a definition is a request, a response, a header or a data schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// A request body.
    Request,
    /// A response body.
    Response,
    /// RequestHeader or ResponseHeader.
    Header,
    /// A data schema embedded in other bytes (ConsumerProtocolSubscription, ...).
    Data,
}

/// Which Kafka release a definition was generated from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaSet {
    /// The release the tables follow ([`KAFKA_RELEASE`]), the authoritative set.
    Current,
    /// Apache Kafka 3.9, used only for the versions 4.x no longer lists.
    Legacy,
}

/// A top-level message definition.
#[derive(Debug)]
pub struct MessageDef {
    /// The message name (`ProduceRequest`).
    pub name: &'static str,
    /// The API key, or -1 for headers and data schemas.
    pub api_key: i16,
    /// Request, response, header or data.
    pub kind: MessageKind,
    /// The versions this definition decodes (for legacy definitions: only those the current release lacks).
    pub valid: Versions,
    /// The flexible (compact + tagged fields) versions.
    pub flexible: Versions,
    /// Versions marked deprecated.
    pub deprecated: Versions,
    /// True when the newest version is marked unstable (`latestVersionUnstable`).
    pub latest_unstable: bool,
    /// The release this definition comes from.
    pub set: SchemaSet,
    /// The body: the top-level fields.
    pub body: &'static StructDef,
}

impl MessageDef {
    /// True when `version` is a flexible version of this message.
    pub fn is_flexible(&self, version: i16) -> bool {
        self.flexible.contains(version)
    }
}

/// The definition that decodes (`api_key`, `kind`, `version`), if any.
pub fn message(api_key: i16, kind: MessageKind, version: i16) -> Option<&'static MessageDef> {
    MESSAGES
        .iter()
        .find(|m| m.api_key == api_key && m.kind == kind && m.valid.contains(version))
}

/// Every definition for an api key and kind, current first, then legacy.
pub fn definitions(api_key: i16, kind: MessageKind) -> impl Iterator<Item = &'static MessageDef> {
    MESSAGES
        .iter()
        .filter(move |m| m.api_key == api_key && m.kind == kind)
}

/// The union of versions known for an api key's requests (current and legacy), if the key is known.
pub fn known_versions(api_key: i16) -> Option<Versions> {
    definitions(api_key, MessageKind::Request)
        .map(|m| m.valid)
        .reduce(|v, w| Versions::new(v.min.min(w.min), v.max.max(w.max)))
}

/// The API name for a key (`Produce`), from the request definition's name.
pub fn api_name(api_key: i16) -> Option<&'static str> {
    definitions(api_key, MessageKind::Request)
        .next()
        .map(|m| m.name.strip_suffix("Request").unwrap_or(m.name))
}

/// The request header version for an api key and version: 2 when flexible, else 1
/// (0 only for ControlledShutdown v0, which predates the client id).
pub fn request_header_version(api_key: i16, version: i16) -> i16 {
    match message(api_key, MessageKind::Request, version) {
        Some(m) if m.is_flexible(version) => 2,
        _ if ApiKey(api_key) == ApiKey::CONTROLLED_SHUTDOWN && version == 0 => 0,
        _ => 1,
    }
}

/// The response header version: 1 when flexible, else 0; ApiVersions (key 18) always
/// answers with header v0 so that a client can read it whatever version it asked for.
pub fn response_header_version(api_key: i16, version: i16) -> i16 {
    if ApiKey(api_key) == ApiKey::API_VERSIONS {
        return 0;
    }
    match message(api_key, MessageKind::Response, version) {
        Some(m) if m.is_flexible(version) => 1,
        _ => 0,
    }
}
