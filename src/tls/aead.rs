//! The AEAD ciphers TLS 1.2 and 1.3 protect records with, `ring`'s (its
//! AES-GCM and ChaCha20-Poly1305 use the CPU's AES, carry-less multiply and
//! vector instructions: decrypting a capture costs about what reading it
//! does), behind one type for both versions.

use ring::aead::{
    Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM, AES_256_GCM, CHACHA20_POLY1305,
};

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
pub(crate) struct Cipher {
    aead: Aead,
    /// Boxed: ring's key schedule is large, and a connection holds two.
    key: Box<LessSafeKey>,
}

impl std::fmt::Debug for Cipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.aead)
    }
}

impl Cipher {
    /// `aead` with `key`; `None` for a key of the wrong length.
    pub(crate) fn new(aead: Aead, key: &[u8]) -> Option<Cipher> {
        let alg = match aead {
            Aead::Aes128Gcm => &AES_128_GCM,
            Aead::Aes256Gcm => &AES_256_GCM,
            Aead::Chacha20Poly1305 => &CHACHA20_POLY1305,
        };
        let key = Box::new(LessSafeKey::new(UnboundKey::new(alg, key).ok()?));
        Some(Cipher { aead, key })
    }

    /// Decrypts `msg` (ciphertext, then its 16-byte tag) in place under
    /// `nonce` with additional data `aad`: the plaintext is `msg`'s bytes
    /// before the tag, its length returned; `None` when it does not
    /// authenticate.
    pub(crate) fn open(&self, nonce: &[u8; 12], msg: &mut [u8], aad: &[u8]) -> Option<usize> {
        let nonce = Nonce::assume_unique_for_key(*nonce);
        let plain = self.key.open_in_place(nonce, Aad::from(aad), msg).ok()?;
        Some(plain.len())
    }
}
