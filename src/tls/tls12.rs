//! TLS 1.2 record protection with AEAD suites (RFC 5246, 5288, 7905): a
//! session's key block expanded from the key log's master secret, and a
//! direction's records decrypted in order after its ChangeCipherSpec.
//!
//! Place in the data path: after a connection's hellos ([`super::wire`]),
//! each direction's records go to its [`Decrypter`], made from the suite
//! the ServerHello chose, both randoms and the master secret
//! ([`super::keylog`]); the records after the direction's ChangeCipherSpec
//! are opened, its Finished first.
//!
//! Invariants: the ciphers, HMAC and hashes are RustCrypto's (`aes-gcm`,
//! `chacha20poly1305` through [`super::aead`], `hmac`, `sha2`); a record that does not open is an
//! error for it and every later record of the direction, never plaintext
//! guessed; no key material in `Debug`. CBC suites are not decrypted here
//! ([`suite`] gives `None`).

#![deny(clippy::indexing_slicing)]

use hmac::digest::KeyInit;
use hmac::{Hmac, Mac};
use sha2::{Sha256, Sha384};

use super::aead::{Aead, Cipher};
use super::tls13::DecryptError;
use super::wire::{content, Record};

/// The AEAD of a TLS 1.2 ServerHello's `cipher_suite`, when it is an AEAD
/// suite: AES-128-GCM and AES-256-GCM with RSA, ECDHE-RSA or ECDHE-ECDSA
/// key exchange, ChaCha20-Poly1305 with ECDHE (its PRF hashes with SHA-384
/// for AES-256-GCM, else SHA-256).
pub fn suite(n: u16) -> Option<Aead> {
    match n {
        0x009c | 0xc02b | 0xc02f => Some(Aead::Aes128Gcm),
        0x009d | 0xc02c | 0xc030 => Some(Aead::Aes256Gcm),
        0xcca8 | 0xcca9 => Some(Aead::Chacha20Poly1305),
        _ => None,
    }
}

/// The IV the key block gives: GCM's 4-byte salt, ChaCha20's 12-byte
/// nonce mask.
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

/// The TLS 1.2 PRF of `suite` (SHA-384 for AES-256-GCM, else SHA-256).
fn prf(suite: Aead, secret: &[u8], label: &[u8], seed: &[u8], len: usize) -> Option<Vec<u8>> {
    let full = [label, seed].concat();
    match suite {
        Aead::Aes256Gcm => p_hash::<Hmac<Sha384>>(secret, &full, len),
        _ => p_hash::<Hmac<Sha256>>(secret, &full, len),
    }
}

/// One direction of a TLS 1.2 connection with an AEAD suite.
pub struct Decrypter {
    suite: Aead,
    cipher: Cipher,
    iv: Vec<u8>,
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
    /// in `suite`, from its master secret and the hellos' randoms.
    pub fn new(
        suite: Aead,
        master: &[u8],
        client_random: &[u8; 32],
        server_random: &[u8; 32],
        client: bool,
    ) -> Result<Decrypter, DecryptError> {
        let (k, i) = (suite.key_len(), iv_len(suite));
        let seed = [&server_random[..], &client_random[..]].concat();
        let block = prf(suite, master, b"key expansion", &seed, 2 * (k + i))
            .ok_or(DecryptError::BadSecret)?;
        // client key, server key, client IV, server IV (no MAC keys).
        let (key, iv) = match client {
            true => (block.get(..k), block.get(2 * k..2 * k + i)),
            false => (block.get(k..2 * k), block.get(2 * k + i..2 * (k + i))),
        };
        let (Some(key), Some(iv)) = (key, iv) else {
            return Err(DecryptError::BadSecret);
        };
        let cipher = Cipher::new(suite, key).ok_or(DecryptError::BadSecret)?;
        Ok(Decrypter {
            suite,
            cipher,
            iv: iv.to_vec(),
            seq: 0,
            on: false,
            failed: None,
        })
    }

    /// The direction's next record: its content type and plaintext (in the
    /// clear before the direction's ChangeCipherSpec, opened after it);
    /// `None` for the ChangeCipherSpec itself.
    pub fn record(&mut self, r: &Record) -> Result<Option<(u8, Vec<u8>)>, DecryptError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if r.content == content::CHANGE_CIPHER_SPEC {
            self.on = true;
            return Ok(None);
        }
        if !self.on {
            return Ok(Some((r.content, r.body.clone())));
        }
        match self.open(r) {
            Some(plain) => {
                self.seq += 1;
                Ok(Some((r.content, plain)))
            }
            None => Err(*self.failed.insert(DecryptError::Failed(r.at))),
        }
    }

    fn open(&self, r: &Record) -> Option<Vec<u8>> {
        // GCM: an 8-byte explicit nonce before the ciphertext.
        let (nonce, msg): ([u8; 12], &[u8]) = match self.suite {
            Aead::Aes128Gcm | Aead::Aes256Gcm => {
                let explicit = r.body.get(..8)?;
                let mut n = [0u8; 12];
                n.get_mut(..4)?.copy_from_slice(self.iv.get(..4)?);
                n.get_mut(4..)?.copy_from_slice(explicit);
                (n, r.body.get(8..)?)
            }
            Aead::Chacha20Poly1305 => {
                let mut n: [u8; 12] = self.iv.as_slice().try_into().ok()?;
                for (b, s) in n.iter_mut().skip(4).zip(self.seq.to_be_bytes()) {
                    *b ^= s;
                }
                (n, r.body.as_slice())
            }
        };
        let len = u16::try_from(msg.len().checked_sub(16)?).ok()?;
        let mut aad = Vec::with_capacity(13);
        aad.extend_from_slice(&self.seq.to_be_bytes());
        aad.push(r.content);
        aad.extend_from_slice(&r.version.to_be_bytes());
        aad.extend_from_slice(&len.to_be_bytes());
        self.cipher.open(&nonce, msg, &aad)
    }
}

#[cfg(test)]
mod tests;
