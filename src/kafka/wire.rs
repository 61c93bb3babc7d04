//! Checked reads of Kafka's wire primitives.
//!
//! Place in the data path: the decoder, the record-set reader and the framing
//! plausibility checks read bytes only through [`Reader`]. Invariant: no read
//! can panic or allocate; every read checks the bytes that remain first and
//! reports what it needed, what was there and at which offset. Unsigned varints
//! are at most 5 bytes (a sixth byte or a value past `u32::MAX` is an overflow),
//! varlongs at most 10, as Kafka's `ByteUtils` reads them.

use std::fmt;

/// Why a primitive could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Fewer bytes remained than the primitive needs.
    Truncated {
        /// Offset of the read, counted from the start of the buffer.
        offset: usize,
        /// Bytes the read needed.
        needed: usize,
        /// Bytes that remained.
        remaining: usize,
    },
    /// A varint ran past its maximum width or value.
    VarintOverflow {
        /// Offset of the varint's first byte.
        offset: usize,
    },
}

impl WireError {
    /// The offset at which the failed read started.
    pub fn offset(&self) -> usize {
        match *self {
            WireError::Truncated { offset, .. } | WireError::VarintOverflow { offset } => offset,
        }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            WireError::Truncated {
                needed, remaining, ..
            } => write!(f, "needed {needed} bytes, {remaining} remain"),
            WireError::VarintOverflow { .. } => f.write_str("varint too long"),
        }
    }
}

impl std::error::Error for WireError {}

/// A cursor over a byte slice whose reads are all checked.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

macro_rules! be_read {
    ($(#[$m:meta])* $name:ident, $t:ty, $n:expr) => {
        $(#[$m])*
        pub fn $name(&mut self) -> Result<$t, WireError> {
            let b = self.take($n)?;
            let mut a = [0u8; $n];
            a.copy_from_slice(b);
            Ok(<$t>::from_be_bytes(a))
        }
    };
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// The current offset.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left to read.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The whole underlying buffer.
    pub fn buf(&self) -> &'a [u8] {
        self.buf
    }

    /// The bytes not yet read.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or(&[])
    }

    /// Takes the next `n` bytes, or fails without moving.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end.and_then(|e| self.buf.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(WireError::Truncated {
                offset: self.pos,
                needed: n,
                remaining: self.remaining(),
            }),
        }
    }

    /// Moves to the end of the buffer.
    pub fn skip_rest(&mut self) {
        self.pos = self.buf.len();
    }

    be_read!(/// A big-endian int16.
        i16, i16, 2);
    be_read!(/// A big-endian int32.
        i32, i32, 4);
    be_read!(/// A big-endian int64.
        i64, i64, 8);
    be_read!(/// A big-endian uint16.
        u16, u16, 2);
    be_read!(/// A big-endian uint32.
        u32, u32, 4);
    be_read!(/// A big-endian IEEE 754 float64.
        f64, f64, 8);

    /// An int8.
    pub fn i8(&mut self) -> Result<i8, WireError> {
        Ok(self.u8()? as i8)
    }

    /// A uint8.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        let b = self.take(1)?;
        Ok(b.first().copied().unwrap_or(0))
    }

    /// 16 bytes of a uuid.
    pub fn uuid(&mut self) -> Result<[u8; 16], WireError> {
        let b = self.take(16)?;
        let mut a = [0u8; 16];
        a.copy_from_slice(b);
        Ok(a)
    }

    /// The next byte when it is a whole varint (below 0x80), taken: the
    /// usual length and count, read without a call.
    #[inline(always)]
    fn one_byte(&mut self) -> Option<u8> {
        let b = self.buf.get(self.pos).copied().filter(|&b| b < 0x80)?;
        self.pos += 1;
        Some(b)
    }

    /// An unsigned varint of at most 5 bytes whose value fits in 32 bits.
    #[inline]
    pub fn uvarint(&mut self) -> Result<u32, WireError> {
        self.one_byte()
            .map_or_else(|| self.unsigned_long(5), |b| Ok(b.into()))
    }

    /// An unsigned varlong of at most 10 bytes.
    #[inline]
    pub fn uvarlong(&mut self) -> Result<u64, WireError> {
        self.one_byte()
            .map_or_else(|| self.unsigned_long(10), |b| Ok(b.into()))
    }

    /// An unsigned varint of any length up to `max` bytes (5 or 10) whose
    /// value fits in `T`; on an error the position is left where it was.
    #[inline(never)]
    fn unsigned_long<T: TryFrom<u64>>(&mut self, max: usize) -> Result<T, WireError> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..max {
            let Some(&b) = self.buf.get(self.pos) else {
                self.pos = start;
                return Err(WireError::Truncated {
                    offset: start,
                    needed: i + 1,
                    remaining: i,
                });
            };
            self.pos += 1;
            // The tenth byte may carry only the top bit of a 64-bit value.
            if i == 9 && b > 1 {
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                match T::try_from(value) {
                    Ok(v) => return Ok(v),
                    Err(_) => break,
                }
            }
        }
        self.pos = start;
        Err(WireError::VarintOverflow { offset: start })
    }

    /// A zigzag-encoded signed varint (32 bits).
    pub fn varint(&mut self) -> Result<i32, WireError> {
        let u = self.uvarint()?;
        Ok(((u >> 1) as i32) ^ -((u & 1) as i32))
    }

    /// A zigzag-encoded signed varlong (64 bits).
    pub fn varlong(&mut self) -> Result<i64, WireError> {
        let u = self.uvarlong()?;
        Ok(((u >> 1) as i64) ^ -((u & 1) as i64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_width_reads_are_big_endian_and_checked() {
        let mut r = Reader::new(&[0x00, 0x5a, 0xff, 0xff, 0xff, 0xfe, 0x01]);
        assert_eq!(r.i16(), Ok(90));
        assert_eq!(r.i32(), Ok(-2));
        assert_eq!(
            r.i16(),
            Err(WireError::Truncated {
                offset: 6,
                needed: 2,
                remaining: 1
            })
        );
        // A failed read does not move the cursor.
        assert_eq!(r.pos(), 6);
        assert_eq!(r.i8(), Ok(1));
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn uvarint_limits() {
        // 300 = 0b1_0010_1100: 0xac 0x02
        assert_eq!(Reader::new(&[0xac, 0x02]).uvarint(), Ok(300));
        // u32::MAX takes five bytes, the last 0x0f
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x0f]).uvarint(),
            Ok(u32::MAX)
        );
        // a fifth byte with more than 4 value bits overflows 32 bits
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0x1f]).uvarint(),
            Err(WireError::VarintOverflow { offset: 0 })
        );
        // six bytes is always too long
        assert_eq!(
            Reader::new(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]).uvarint(),
            Err(WireError::VarintOverflow { offset: 0 })
        );
        // a continuation bit at the end of the buffer is a truncation
        assert!(matches!(
            Reader::new(&[0x80]).uvarint(),
            Err(WireError::Truncated { offset: 0, .. })
        ));
    }

    /// A varint that fails leaves the reader where it was, whichever way
    /// it fails (both widths read through one loop).
    #[test]
    fn failed_varints_leave_the_position() {
        let cases: [(&[u8], bool); 4] = [
            (&[0xff, 0xff, 0xff, 0xff, 0x1f], false),
            (&[0x80, 0x80], false),
            (&[0xff; 10], true),
            (&[0x80; 3], true),
        ];
        for (bytes, long) in cases {
            let mut r = Reader::new(bytes);
            let failed = if long {
                r.uvarlong().is_err()
            } else {
                r.uvarint().is_err()
            };
            assert!(failed, "{bytes:?}");
            assert_eq!(r.pos(), 0, "{bytes:?}");
        }
    }

    #[test]
    fn zigzag() {
        assert_eq!(Reader::new(&[0x01]).varint(), Ok(-1));
        assert_eq!(Reader::new(&[0x02]).varint(), Ok(1));
        assert_eq!(Reader::new(&[0x03]).varlong(), Ok(-2));
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).varlong(),
            Ok(i64::MIN)
        );
        assert_eq!(
            Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).uvarlong(),
            Err(WireError::VarintOverflow { offset: 0 })
        );
    }

    #[test]
    fn take_never_overflows() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert!(r.take(usize::MAX).is_err());
        assert_eq!(r.take(2), Ok(&[1u8, 2][..]));
        assert_eq!(r.rest(), &[3]);
    }
}
