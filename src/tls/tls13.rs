//! TLS 1.3 record protection (RFC 8446, 5.2 and 7): a direction's traffic
//! keys made from the key log's secrets, and its records decrypted in order.
//!
//! Place in the data path: after a connection's hellos ([`super::wire`]),
//! each direction's records go to its [`Decrypter`], made from the suite
//! the ServerHello chose and the direction's handshake and first
//! application traffic secrets ([`super::keylog`]). It opens the encrypted
//! handshake with the handshake keys, moves to the application keys after
//! the direction's Finished, and to the next generation at each KeyUpdate.
//!
//! Invariants: the ciphers and the key derivation are well-kept crates'
//! (`ring`'s AEADs through [`super::aead`], RustCrypto's `hkdf` and `sha2`),
//! nothing hand-written, each record opened in its own body (no copy); a
//! record that does not open (wrong key, damaged bytes) is an error for
//! that record and every later one of the direction (its sequence number
//! is lost), never plaintext guessed; no key material in `Debug`.

#![deny(clippy::indexing_slicing)]

use hkdf::Hkdf;
use sha2::{Sha256, Sha384};

use bytes::Bytes;

use super::aead::{Aead, Cipher};
use super::wire::{content, handshake, Handshakes, Record, HEADER};

/// The AEAD of a TLS 1.3 ServerHello's `cipher_suite`, when TLS 1.3
/// defines it (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384,
/// TLS_CHACHA20_POLY1305_SHA256; its hash is SHA-384 for AES-256-GCM).
pub fn suite(n: u16) -> Option<Aead> {
    match n {
        0x1301 => Some(Aead::Aes128Gcm),
        0x1302 => Some(Aead::Aes256Gcm),
        0x1303 => Some(Aead::Chacha20Poly1305),
        _ => None,
    }
}

/// HKDF-Expand-Label (RFC 8446, 7.1) with an empty context, in the suite's hash.
fn expand_label(suite: Aead, secret: &[u8], label: &str, len: usize) -> Option<Vec<u8>> {
    let full = [b"tls13 ", label.as_bytes()].concat();
    let mut info = Vec::with_capacity(4 + full.len());
    info.extend_from_slice(&u16::try_from(len).ok()?.to_be_bytes());
    info.push(u8::try_from(full.len()).ok()?);
    info.extend_from_slice(&full);
    info.push(0);
    let mut out = vec![0; len];
    match suite {
        Aead::Aes256Gcm => Hkdf::<Sha384>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
        _ => Hkdf::<Sha256>::from_prk(secret)
            .ok()?
            .expand(&info, &mut out)
            .ok()?,
    }
    Some(out)
}

/// One generation of a direction's keys: the cipher, the IV, the secret
/// they came from (for the next generation) and the next record's sequence
/// number.
struct Keys {
    suite: Aead,
    cipher: Cipher,
    iv: [u8; 12],
    secret: Vec<u8>,
    seq: u64,
}

impl Keys {
    /// The keys of a traffic secret; `None` for a secret of the wrong length.
    fn new(suite: Aead, secret: &[u8]) -> Option<Keys> {
        let key = expand_label(suite, secret, "key", suite.key_len())?;
        let iv: [u8; 12] = expand_label(suite, secret, "iv", 12)?.try_into().ok()?;
        let cipher = Cipher::new(suite, &key)?;
        Some(Keys {
            suite,
            cipher,
            iv,
            secret: secret.to_vec(),
            seq: 0,
        })
    }

    /// The next generation (a KeyUpdate): `application_traffic_secret_N+1`.
    fn next(&self) -> Option<Keys> {
        let len = self.secret.len();
        Keys::new(
            self.suite,
            &expand_label(self.suite, &self.secret, "traffic upd", len)?,
        )
    }

    /// Opens a record (its header, the additional data, and its body) in
    /// place: the inner plaintext's length (the body's first bytes), or
    /// `None` when it does not authenticate.
    fn open(&mut self, header: &[u8; HEADER], body: &mut [u8]) -> Option<usize> {
        let mut nonce = self.iv;
        for (n, s) in nonce.iter_mut().skip(4).zip(self.seq.to_be_bytes()) {
            *n ^= s;
        }
        let len = self.cipher.open(&nonce, body, header)?;
        self.seq += 1;
        Some(len)
    }
}

/// Why a direction's records stopped opening.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecryptError {
    /// The record at this stream offset did not authenticate with the keys
    /// the key log gave (a wrong or missing line, or damaged bytes).
    Failed(u64),
    /// The record at this stream offset opened to no content type (all padding).
    NoContentType(u64),
    /// A secret the key log gave does not make keys for the suite.
    BadSecret,
}

impl std::fmt::Display for DecryptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecryptError::Failed(at) => {
                write!(f, "decryption failed at the record at stream offset {at}")
            }
            DecryptError::NoContentType(at) => {
                write!(f, "the record at stream offset {at} holds no content type")
            }
            DecryptError::BadSecret => write!(f, "a key log secret does not fit the cipher suite"),
        }
    }
}

/// One direction of a TLS 1.3 connection, from its first record after the
/// hellos.
pub struct Decrypter {
    keys: Keys,
    /// The first application traffic secret, until the direction's Finished.
    application: Option<Vec<u8>>,
    handshakes: Handshakes,
    failed: Option<DecryptError>,
}

impl std::fmt::Debug for Decrypter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decrypter")
            .field("suite", &self.keys.suite)
            .field("seq", &self.keys.seq)
            .field("in_handshake", &self.application.is_some())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Decrypter {
    /// A direction in `suite` with its handshake and first application
    /// traffic secrets.
    pub fn new(suite: Aead, handshake: &[u8], application: &[u8]) -> Result<Self, DecryptError> {
        Ok(Decrypter {
            keys: Keys::new(suite, handshake).ok_or(DecryptError::BadSecret)?,
            application: Some(application.to_vec()),
            handshakes: Handshakes::new(),
            failed: None,
        })
    }

    /// Opens the direction's next record, decrypted in its own body: its
    /// content type and plaintext; `None` for a ChangeCipherSpec (sent in
    /// the clear for compatibility, not protected). Keys move on after the
    /// direction's Finished and at each KeyUpdate.
    pub fn record(&mut self, r: Record) -> Result<Option<(u8, Bytes)>, DecryptError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if r.content == content::CHANGE_CIPHER_SPEC {
            return Ok(None);
        }
        let len = u16::try_from(r.body.len()).map_err(|_| DecryptError::Failed(r.at))?;
        let [v0, v1] = r.version.to_be_bytes();
        let [l0, l1] = len.to_be_bytes();
        let header = [r.content, v0, v1, l0, l1];
        let mut body = r.body;
        let Some(n) = self.keys.open(&header, &mut body) else {
            return Err(*self.failed.insert(DecryptError::Failed(r.at)));
        };
        // TLSInnerPlaintext: content, the real type, zeros.
        let inner = body.get(..n).unwrap_or_default();
        let Some(end) = inner.iter().rposition(|&b| b != 0) else {
            return Err(*self.failed.insert(DecryptError::NoContentType(r.at)));
        };
        let ty = inner.get(end).copied().unwrap_or(0);
        if ty == content::HANDSHAKE {
            let mut msgs = Vec::new();
            self.handshakes
                .push(inner.get(..end).unwrap_or_default(), &mut msgs);
            for (t, _) in msgs {
                self.handshake(t)?;
            }
        }
        Ok(Some((ty, Bytes::from(body).slice(..end))))
    }

    /// Moves the keys on after a handshake message of type `t`.
    fn handshake(&mut self, t: u8) -> Result<(), DecryptError> {
        let next = match (t, self.application.take()) {
            (handshake::FINISHED, Some(app)) => Keys::new(self.keys.suite, &app),
            (handshake::KEY_UPDATE, None) => self.keys.next(),
            (_, app) => {
                self.application = app;
                return Ok(());
            }
        };
        self.keys = next.ok_or(DecryptError::BadSecret)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
