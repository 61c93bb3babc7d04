//! The Kafka protocol: schema tables, wire primitives, the field tree, the
//! schema-driven decoder, record sets and the protocols embedded in bytes fields.

pub mod decode;
pub mod errors;
pub mod framing;
pub mod records;
pub mod schema;
pub mod stream_json;
pub mod stream_text;
pub mod tree;
pub mod wire;

pub use decode::{
    decode_request, decode_response, DecodeError, DecodeOptions, DecodeWarning, Decoded,
};
pub use tree::{ByteSource, Node, Role, Value};
