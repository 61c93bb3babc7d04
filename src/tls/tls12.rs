//! TLS 1.2 record protection (RFC 5246; AEAD suites, RFC 5288 and 7905;
//! CBC suites with MAC-then-encrypt or, RFC 7366, encrypt-then-MAC): a
//! session's key block expanded from the key log's master secret, and a
//! direction's records decrypted in order after its ChangeCipherSpec.
//!
//! Place in the data path: after a connection's hellos ([`super::wire`]),
//! each direction's records go to its [`Decrypter`], made from the suite
//! the ServerHello chose, both randoms and the master secret
//! ([`super::keylog`]); the records after the direction's ChangeCipherSpec
//! are opened, its Finished first.
//!
//! Invariants: the ciphers, HMAC and hashes are well-kept crates' (`ring`'s
//! AEADs through [`super::aead`]; RustCrypto's `aes` and `cbc`, `hmac`,
//! `sha1`, `sha2`), each record opened in its own body (no copy); a record
//! that does not open (an AEAD's tag, a CBC
//! record's padding or MAC) is an error for it and every later record of
//! the direction, never plaintext guessed; no key material in `Debug`.

#![deny(clippy::indexing_slicing)]

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use std::ops::Range;

use bytes::Bytes;
use sha1::Sha1;
use sha2::{Sha256, Sha384};

use super::aead::{Aead, Cipher};
use super::tls13::DecryptError;
use super::wire::{content, Record};

/// A TLS 1.2 cipher suite's record protection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// An AEAD: AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305.
    Aead(Aead),
    /// AES in CBC mode with an HMAC (MAC-then-encrypt, or encrypt-then-MAC
    /// when the ServerHello agreed to RFC 7366's extension).
    Cbc {
        /// AES key length: 16 or 32.
        key_len: usize,
        /// The HMAC's hash.
        mac: MacHash,
    },
}

/// The hash of a CBC suite's HMAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MacHash {
    /// HMAC-SHA1.
    Sha1,
    /// HMAC-SHA256.
    Sha256,
    /// HMAC-SHA384.
    Sha384,
}

impl MacHash {
    fn len(self) -> usize {
        match self {
            MacHash::Sha1 => 20,
            MacHash::Sha256 => 32,
            MacHash::Sha384 => 48,
        }
    }
}

impl Suite {
    /// The PRF hashes with SHA-384 (the suites named `_SHA384`), else SHA-256.
    fn sha384(self) -> bool {
        matches!(
            self,
            Suite::Aead(Aead::Aes256Gcm)
                | Suite::Cbc {
                    mac: MacHash::Sha384,
                    ..
                }
        )
    }

    /// Bytes of a record's body before its plaintext: GCM's explicit
    /// nonce, CBC's IV.
    pub fn prefix(self) -> usize {
        match self {
            Suite::Aead(Aead::Aes128Gcm | Aead::Aes256Gcm) => 8,
            Suite::Aead(Aead::Chacha20Poly1305) => 0,
            Suite::Cbc { .. } => 16,
        }
    }
}

/// The record protection of a TLS 1.2 ServerHello's `cipher_suite`, when
/// decrypted here: AES-128-GCM and AES-256-GCM with RSA, ECDHE-RSA or
/// ECDHE-ECDSA key exchange, ChaCha20-Poly1305 with ECDHE, and AES-128/256
/// in CBC mode with HMAC-SHA1, SHA256 or SHA384 and the same key exchanges.
pub fn suite(n: u16) -> Option<Suite> {
    let cbc = |key_len, mac| Some(Suite::Cbc { key_len, mac });
    match n {
        0x009c | 0xc02b | 0xc02f => Some(Suite::Aead(Aead::Aes128Gcm)),
        0x009d | 0xc02c | 0xc030 => Some(Suite::Aead(Aead::Aes256Gcm)),
        0xcca8 | 0xcca9 => Some(Suite::Aead(Aead::Chacha20Poly1305)),
        0x002f | 0xc009 | 0xc013 => cbc(16, MacHash::Sha1),
        0x0035 | 0xc00a | 0xc014 => cbc(32, MacHash::Sha1),
        0x003c | 0xc023 | 0xc027 => cbc(16, MacHash::Sha256),
        0x003d => cbc(32, MacHash::Sha256),
        0xc024 | 0xc028 => cbc(32, MacHash::Sha384),
        _ => None,
    }
}

/// The IV the key block gives an AEAD: GCM's 4-byte salt, ChaCha20's
/// 12-byte nonce mask.
fn iv_len(a: Aead) -> usize {
    match a {
        Aead::Aes128Gcm | Aead::Aes256Gcm => 4,
        Aead::Chacha20Poly1305 => 12,
    }
}

/// P_hash (RFC 5246, 5) in `H`, `len` bytes.
fn p_hash<M: Mac + KeyInit + Clone>(secret: &[u8], seed: &[u8], len: usize) -> Option<Vec<u8>> {
    let mac = <M as Mac>::new_from_slice(secret).ok()?;
    let mut out = Vec::with_capacity(len + 64);
    let mut a = {
        let mut m = mac.clone();
        m.update(seed);
        m.finalize().into_bytes().to_vec()
    };
    while out.len() < len {
        let mut m = mac.clone();
        m.update(&a);
        m.update(seed);
        out.extend_from_slice(&m.finalize().into_bytes());
        let mut m = mac.clone();
        m.update(&a);
        a = m.finalize().into_bytes().to_vec();
    }
    out.truncate(len);
    Some(out)
}

/// The TLS 1.2 PRF of `suite` (SHA-384 or SHA-256).
fn prf(suite: Suite, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Option<Vec<u8>> {
    let full = [label, seed].concat();
    match suite.sha384() {
        true => p_hash::<Hmac<Sha384>>(secret, &full, len),
        false => p_hash::<Hmac<Sha256>>(secret, &full, len),
    }
}

/// A direction's record protection and its keys.
enum Keys {
    Aead {
        cipher: Cipher,
        iv: Vec<u8>,
    },
    Cbc {
        key: Vec<u8>,
        mac_key: Vec<u8>,
        mac: MacHash,
        etm: bool,
    },
}

/// HMAC of `parts` in `h` under `key`.
fn hmac(h: MacHash, key: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
    fn run<M: Mac + KeyInit>(key: &[u8], parts: &[&[u8]]) -> Option<Vec<u8>> {
        let mut m = <M as Mac>::new_from_slice(key).ok()?;
        for p in parts {
            m.update(p);
        }
        Some(m.finalize().into_bytes().to_vec())
    }
    match h {
        MacHash::Sha1 => run::<Hmac<Sha1>>(key, parts),
        MacHash::Sha256 => run::<Hmac<Sha256>>(key, parts),
        MacHash::Sha384 => run::<Hmac<Sha384>>(key, parts),
    }
}

/// Decrypts `data` in place by AES-CBC under `iv` (no padding removed);
/// `None` for a length that is no whole number of blocks or a key of the
/// wrong size.
fn cbc_decrypt(key: &[u8], iv: &[u8], data: &mut [u8]) -> Option<()> {
    use cbc::cipher::block_padding::NoPadding;
    use cbc::cipher::{BlockDecryptMut, KeyIvInit};
    match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_mut::<NoPadding>(data)
            .ok()?,
        32 => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_mut::<NoPadding>(data)
            .ok()?,
        _ => return None,
    };
    Some(())
}

/// The length of a CBC record's plaintext before its padding: the
/// padding's length is its last byte, every padding byte that value.
fn unpad(p: &[u8]) -> Option<usize> {
    let pad = usize::from(*p.last()?);
    let start = p.len().checked_sub(pad + 1)?;
    if p.get(start..)?.iter().any(|&b| usize::from(b) != pad) {
        return None;
    }
    Some(start)
}

/// One direction of a TLS 1.2 connection.
pub struct Decrypter {
    suite: Suite,
    keys: Keys,
    seq: u64,
    /// The direction's ChangeCipherSpec has come: its records are protected.
    on: bool,
    failed: Option<DecryptError>,
}

impl std::fmt::Debug for Decrypter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Decrypter")
            .field("suite", &self.suite)
            .field("seq", &self.seq)
            .field("protected", &self.on)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl Decrypter {
    /// The client's (`client` true) or the server's direction of a session
    /// in `suite`, from its master secret and the hellos' randoms; `etm`
    /// when the ServerHello agreed to encrypt-then-MAC (CBC suites).
    pub fn new(
        suite: Suite,
        master: &[u8],
        (client_random, server_random): (&[u8; 32], &[u8; 32]),
        client: bool,
        etm: bool,
    ) -> Result<Decrypter, DecryptError> {
        // The key block: client MAC key, server MAC key, client key, server
        // key, client IV, server IV (RFC 5246, 6.3; AEADs have no MAC key,
        // CBC's IVs are explicit per record in TLS 1.2).
        let (m, k, i) = match suite {
            Suite::Aead(a) => (0, a.key_len(), iv_len(a)),
            Suite::Cbc { key_len, mac } => (mac.len(), key_len, 0),
        };
        let seed = [&server_random[..], &client_random[..]].concat();
        let block = prf(suite, master, b"key expansion", &seed, 2 * (m + k + i))
            .ok_or(DecryptError::BadSecret)?;
        let part = |n: usize, at: usize| block.get(at..at + n).ok_or(DecryptError::BadSecret);
        let side = usize::from(!client);
        let mac_key = part(m, side * m)?;
        let key = part(k, 2 * m + side * k)?;
        let iv = part(i, 2 * (m + k) + side * i)?;
        let keys = match suite {
            Suite::Aead(a) => Keys::Aead {
                cipher: Cipher::new(a, key).ok_or(DecryptError::BadSecret)?,
                iv: iv.to_vec(),
            },
            Suite::Cbc { mac, .. } => Keys::Cbc {
                key: key.to_vec(),
                mac_key: mac_key.to_vec(),
                mac,
                etm,
            },
        };
        Ok(Decrypter {
            suite,
            keys,
            seq: 0,
            on: false,
            failed: None,
        })
    }

    /// The direction's next record: its content type and plaintext (in the
    /// clear before the direction's ChangeCipherSpec, opened in its own
    /// body after it); `None` for the ChangeCipherSpec itself.
    pub fn record(&mut self, r: Record) -> Result<Option<(u8, Bytes)>, DecryptError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if r.content == content::CHANGE_CIPHER_SPEC {
            self.on = true;
            return Ok(None);
        }
        if !self.on {
            return Ok(Some((r.content, Bytes::from(r.body))));
        }
        let (at, head) = (r.at, r.head());
        let mut body = r.body;
        let opened = match &self.keys {
            Keys::Aead { cipher, iv } => self.open_aead(cipher, iv, head, &mut body),
            Keys::Cbc {
                key,
                mac_key,
                mac,
                etm,
            } => self.open_cbc(key, (mac_key, *mac), *etm, head, &mut body),
        };
        match opened {
            Some(range) => {
                self.seq += 1;
                Ok(Some((head.0, Bytes::from(body).slice(range))))
            }
            None => Err(*self.failed.insert(DecryptError::Failed(at))),
        }
    }

    /// The MAC's (or AEAD's) additional data: sequence number, type,
    /// version and a length.
    fn header(&self, (content, version): (u8, u16), len: usize) -> Option<[u8; 13]> {
        let mut h = [0u8; 13];
        h.get_mut(..8)?.copy_from_slice(&self.seq.to_be_bytes());
        h[8] = content;
        h.get_mut(9..11)?.copy_from_slice(&version.to_be_bytes());
        h.get_mut(11..)?
            .copy_from_slice(&u16::try_from(len).ok()?.to_be_bytes());
        Some(h)
    }

    /// An AEAD record's body opened in place: where its plaintext lies.
    fn open_aead(
        &self,
        cipher: &Cipher,
        iv: &[u8],
        head: (u8, u16),
        body: &mut [u8],
    ) -> Option<Range<usize>> {
        // GCM: an 8-byte explicit nonce before the ciphertext.
        let (nonce, skip) = match self.suite {
            Suite::Aead(Aead::Aes128Gcm | Aead::Aes256Gcm) => {
                let mut n = [0u8; 12];
                n.get_mut(..4)?.copy_from_slice(iv.get(..4)?);
                n.get_mut(4..)?.copy_from_slice(body.get(..8)?);
                (n, 8)
            }
            _ => {
                let mut n: [u8; 12] = iv.try_into().ok()?;
                for (b, s) in n.iter_mut().skip(4).zip(self.seq.to_be_bytes()) {
                    *b ^= s;
                }
                (n, 0)
            }
        };
        let msg = body.get_mut(skip..)?;
        let aad = self.header(head, msg.len().checked_sub(16)?)?;
        let len = cipher.open(&nonce, msg, &aad)?;
        Some(skip..skip + len)
    }

    /// A CBC record's body opened in place: the IV, then (MAC-then-encrypt)
    /// the ciphertext of the plaintext, its MAC and padding, or
    /// (encrypt-then-MAC) the ciphertext of the plaintext and padding, then
    /// the MAC of IV and ciphertext. Where its plaintext lies.
    fn open_cbc(
        &self,
        key: &[u8],
        (mac_key, mac): (&[u8], MacHash),
        etm: bool,
        head: (u8, u16),
        body: &mut [u8],
    ) -> Option<Range<usize>> {
        let sealed_len = match etm {
            true => body.len().checked_sub(mac.len())?,
            false => body.len(),
        };
        if etm {
            let (sealed, tag) = body.split_at(sealed_len);
            let want = hmac(mac, mac_key, &[&self.header(head, sealed.len())?, sealed])?;
            if want != tag {
                return None;
            }
        }
        let (iv, ct) = body.get_mut(..sealed_len)?.split_at_mut_checked(16)?;
        cbc_decrypt(key, iv, ct)?;
        let text = 16 + unpad(ct)?;
        if etm {
            return Some(16..text);
        }
        let end = text.checked_sub(mac.len())?;
        let (plain, tag) = (body.get(16..end)?, body.get(end..text)?);
        let want = hmac(mac, mac_key, &[&self.header(head, plain.len())?, plain])?;
        (want == tag).then_some(16..end)
    }
}

#[cfg(test)]
mod tests;
