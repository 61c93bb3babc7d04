//! TLS: what a capture of Kafka over TLS shows, and with the session keys,
//! its Kafka bytes.
//!
//! Place in the data path: a connection's bytes become TLS records and
//! handshake messages ([`wire`]); a front end feeds key logs to
//! [`keylog::KeyLog`], where a session's secrets are found by its client
//! random; with them, a TLS 1.3 direction's records are decrypted
//! ([`tls13::Decrypter`]), and a TLS 1.2 one's with an AEAD suite
//! ([`tls12::Decrypter`]).

pub mod aead;
pub mod conn;
pub mod keylog;
pub mod tls12;
pub mod tls13;
pub mod wire;
