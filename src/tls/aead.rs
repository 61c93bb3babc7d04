//! The AEAD ciphers TLS 1.2 and 1.3 protect records with, RustCrypto's
//! (`aes-gcm`, `chacha20poly1305`), behind one type for both versions.

use aes_gcm::aead::{Aead as _, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use chacha20poly1305::ChaCha20Poly1305;

/// An AEAD cipher of a TLS suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aead {
    /// AES-128-GCM.
    Aes128Gcm,
    /// AES-256-GCM (its suites hash with SHA-384).
    Aes256Gcm,
    /// ChaCha20-Poly1305.
    Chacha20Poly1305,
}

impl Aead {
    /// The key's length in bytes.
    pub fn key_len(self) -> usize {
        match self {
            Aead::Aes128Gcm => 16,
            Aead::Aes256Gcm | Aead::Chacha20Poly1305 => 32,
        }
    }
}

/// An AEAD with its key (`Debug` shows only which).
pub(crate) enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    Chacha(Box<ChaCha20Poly1305>),
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cipher::Aes128(_) => "Aes128Gcm",
            Cipher::Aes256(_) => "Aes256Gcm",
            Cipher::Chacha(_) => "Chacha20Poly1305",
        })
    }
}

impl Cipher {
    /// `aead` with `key`; `None` for a key of the wrong length.
    pub(crate) fn new(aead: Aead, key: &[u8]) -> Option<Cipher> {
        Some(match aead {
            Aead::Aes128Gcm => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(key).ok()?)),
            Aead::Aes256Gcm => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(key).ok()?)),
            Aead::Chacha20Poly1305 => {
                Cipher::Chacha(Box::new(ChaCha20Poly1305::new_from_slice(key).ok()?))
            }
        })
    }

    /// The plaintext of `msg` (ciphertext and tag) under `nonce` with
    /// additional data `aad`; `None` when it does not authenticate.
    pub(crate) fn open(&self, nonce: &[u8; 12], msg: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        let payload = Payload { msg, aad };
        match self {
            Cipher::Aes128(c) => c.decrypt(nonce.into(), payload),
            Cipher::Aes256(c) => c.decrypt(nonce.into(), payload),
            Cipher::Chacha(c) => c.decrypt(nonce.into(), payload),
        }
        .ok()
    }
}
