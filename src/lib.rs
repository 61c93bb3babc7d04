//! kafkashark's engine: everything between packets and the views.
//!
//! The data path runs one way: frames (`capture`) → per-connection byte
//! streams (`flow`) → size-prefixed Kafka messages (`kafka::framing`) →
//! decoded field trees with byte spans (`kafka::decode`) → request/response
//! exchanges (`pairing`) → figures (`stats`). Apart from the capture adapters
//! the core is sans-IO: a pure function of the frames fed to it. No terminal
//! code lives here; the `kafkashark` binary in `ui/` is a thin shell.

#![forbid(unsafe_code)]

pub mod analyzer;
pub mod capture;
pub mod export;
pub mod flow;
pub mod kafka;
pub mod pairing;
pub mod pipeline;
pub mod shard;
pub mod stats;
pub mod tls;
pub mod topics;
pub mod twins;
pub mod vocab;

#[cfg(test)]
mod test_captures;
