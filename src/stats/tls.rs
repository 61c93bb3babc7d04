//! The TLS table of `stats`: per TLS connection what its handshake showed
//! (version, suite, server name, ALPN, resumption, handshake time), whether
//! it was decrypted and if not why, its alerts, and what each direction
//! carried — with or without the session keys.
//!
//! Place in the data path: fed the analyzer's [`Notice::Tls`]
//! (crate::analyzer::Notice::Tls) by [`super::Stats::notice`]; reported as
//! the `tls` list of the JSON and the TLS section of the text.
//!
//! Invariants: at most `max` connections (more are counted in the report's
//! overflow), a connection's alerts at most [`MAX_ALERTS`]; rows in stream
//! order.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Serialize;

use crate::tls::conn::TlsEvent;
use crate::tls::wire::{alert_name, suite_name, version_name};

/// Alerts kept per connection.
pub const MAX_ALERTS: usize = 8;

/// One TLS connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TlsReport {
    /// Connection index.
    pub stream: u64,
    /// Client endpoint.
    pub client: String,
    /// Broker endpoint.
    pub broker: String,
    /// Frame of the ClientHello.
    pub frame: u64,
    /// Version chosen (`TLS 1.3`), or the highest offered when no
    /// ServerHello came (`offered` then says so).
    pub version: Option<String>,
    /// No ServerHello: the version is the client's offer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub offered: bool,
    /// Cipher suite chosen.
    pub suite: Option<String>,
    /// Server name (SNI).
    pub server_name: Option<String>,
    /// ALPN protocols offered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alpn: Vec<String>,
    /// The client offered to resume a session.
    pub resumption_offered: bool,
    /// The session was resumed.
    pub resumed: bool,
    /// ClientHello to both directions protected, in milliseconds.
    pub handshake_ms: Option<f64>,
    /// `decrypted`, `no key`, `not decrypted` (a suite kafkashark does not
    /// decrypt), `failed` (a record that did not open, or bytes missing),
    /// or `no handshake` (it never got that far).
    pub keys: &'static str,
    /// Why, for `no key` (the client random), `not decrypted` and `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The server certificate's subject, issuer and validity (epoch
    /// seconds), when its Certificate message was read (TLS 1.2 in the
    /// clear; TLS 1.3 decrypted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<CertReport>,
    /// Alerts: `client fatal handshake_failure`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alerts: Vec<String>,
    /// KeyUpdates per direction (client's, server's), TLS 1.3 (seen when
    /// decrypted).
    pub key_updates: [u64; 2],
    /// Records per direction (client's, server's), when it closed.
    pub records: [u64; 2],
    /// TLS bytes per direction.
    pub bytes: [u64; 2],
    /// Application data decrypted per direction.
    pub decrypted: [u64; 2],
}

/// A server certificate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CertReport {
    /// Subject.
    pub subject: String,
    /// Issuer.
    pub issuer: String,
    /// Not valid before (epoch seconds).
    pub not_before: i64,
    /// Not valid after (epoch seconds).
    pub not_after: i64,
    /// The last day it is valid, UTC.
    pub until: String,
    /// Not valid when it was sent (expired, or not yet valid).
    pub invalid: bool,
}

/// The TLS connections seen.
#[derive(Debug, Default)]
pub struct TlsTable {
    rows: BTreeMap<u64, TlsReport>,
    /// Connections not kept (past `max`).
    pub overflow: u64,
}

impl TlsTable {
    /// One event of connection `stream` (client and broker endpoints) at
    /// `frame`; at most `max` connections kept.
    pub fn add(
        &mut self,
        (stream, client, broker): (u64, SocketAddr, SocketAddr),
        frame: u64,
        what: &TlsEvent,
        max: usize,
    ) {
        let len = self.rows.len();
        let row = match self.rows.entry(stream) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(_) if len >= max => {
                if matches!(what, TlsEvent::ClientHello { .. }) {
                    self.overflow += 1;
                }
                return;
            }
            std::collections::btree_map::Entry::Vacant(v) => v.insert(TlsReport {
                stream,
                client: client.to_string(),
                broker: broker.to_string(),
                frame,
                version: None,
                offered: false,
                suite: None,
                server_name: None,
                alpn: Vec::new(),
                resumption_offered: false,
                resumed: false,
                handshake_ms: None,
                keys: "no handshake",
                detail: None,
                certificate: None,
                alerts: Vec::new(),
                key_updates: [0; 2],
                records: [0; 2],
                bytes: [0; 2],
                decrypted: [0; 2],
            }),
        };
        match what {
            TlsEvent::ClientHello {
                version,
                server_name,
                alpn,
                resumption,
                ..
            } => {
                row.frame = frame;
                row.version = Some(version_name(*version));
                row.offered = true;
                row.server_name.clone_from(server_name);
                row.alpn.clone_from(alpn);
                row.resumption_offered = *resumption;
            }
            TlsEvent::ServerHello {
                version,
                suite,
                resumed,
                retry: false,
            } => {
                row.version = Some(version_name(*version));
                row.offered = false;
                row.suite = Some(suite_name(*suite));
                row.resumed = *resumed;
            }
            TlsEvent::ServerHello { .. } => {}
            TlsEvent::Certificate { cert, invalid } => {
                row.certificate = Some(CertReport {
                    subject: cert.subject.clone(),
                    issuer: cert.issuer.clone(),
                    not_before: cert.not_before,
                    not_after: cert.not_after,
                    until: cert.until.clone(),
                    invalid: *invalid,
                });
            }
            TlsEvent::Decrypting => row.keys = "decrypted",
            TlsEvent::NoKey { .. } => {
                row.keys = "no key";
                row.detail = Some(what.to_string());
            }
            TlsEvent::Unsupported { .. } => {
                row.keys = "not decrypted";
                row.detail = Some(what.to_string());
            }
            TlsEvent::Established { ns } => row.handshake_ms = Some(*ns as f64 / 1e6),
            TlsEvent::KeyUpdate { from_client, .. } => {
                if let Some(n) = row.key_updates.get_mut(usize::from(!from_client)) {
                    *n += 1;
                }
            }
            TlsEvent::Alert {
                from_client,
                level,
                description,
            } => {
                if row.alerts.len() < MAX_ALERTS {
                    let side = if *from_client { "client" } else { "server" };
                    let level = if *level == 2 { "fatal" } else { "warning" };
                    let name = alert_name(*description);
                    row.alerts.push(format!("{side} {level} {name}"));
                }
            }
            TlsEvent::Stopped { .. } => {
                if row.keys != "failed" {
                    row.keys = "failed";
                    row.detail = Some(what.to_string());
                }
            }
            TlsEvent::Closed {
                records,
                bytes,
                plaintext,
            } => {
                row.records = *records;
                row.bytes = *bytes;
                row.decrypted = *plaintext;
            }
        }
    }

    /// Connection `stream`, if it is TLS (and kept).
    pub fn get(&self, stream: u64) -> Option<&TlsReport> {
        self.rows.get(&stream)
    }

    /// The connections, in stream order.
    pub fn report(&self) -> Vec<TlsReport> {
        self.rows.values().cloned().collect()
    }
}
