//! The bytes of a stored value, as the pure cores edit them in place: the buffer that holds
//! them, the longest the server stores, and how integers are laid in them (little-endian
//! fields of fixed width, LEB128 varints).

use crate::error::Error;

/// A growable byte buffer holding a stored value (a sliding window's log, a set of leases):
/// a `Vec<u8>` in tests, the key's string in Redis.
pub trait ByteBuffer {
    fn bytes_mut(&mut self) -> Result<&mut [u8], Error>;
    /// Grows (with zero bytes) or shrinks the buffer to exactly `len` bytes.
    fn resize(&mut self, len: usize) -> Result<(), Error>;

    /// As `resize`, with the bytes made again at exactly their new length: where the buffer
    /// would otherwise keep room to grow (the server doubles a string it grows), for a value
    /// that seldom changes length.
    fn reallocate(&mut self, len: usize) -> Result<(), Error> {
        self.resize(len)
    }

    /// Fills an empty buffer with `bytes`, made elsewhere whole: for a new key, so that the
    /// server sees it, and announces it, only with its value.
    fn fill_empty(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if !self.bytes_mut()?.is_empty() {
            return Err(Error::Internal);
        }
        self.reallocate(bytes.len())?;
        self.bytes_mut()?
            .get_mut(..bytes.len())
            .ok_or(Error::Internal)?
            .copy_from_slice(bytes);
        Ok(())
    }
}

impl ByteBuffer for Vec<u8> {
    fn bytes_mut(&mut self) -> Result<&mut [u8], Error> {
        Ok(self.as_mut_slice())
    }

    fn resize(&mut self, len: usize) -> Result<(), Error> {
        Vec::resize(self, len, 0);
        Ok(())
    }
}

/// The longest string the server stores (its `proto-max-bulk-len` default, and the most
/// `RedisModule_StringTruncate` makes): a log or a set of leases that would outgrow it is
/// refused before any byte changes.
pub const MAX_VALUE_LEN: usize = 512 * 1024 * 1024;

pub(crate) fn le_u32(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    if let Some(field) = bytes.get(at..at + 4) {
        word.copy_from_slice(field);
    }
    u32::from_le_bytes(word)
}

pub(crate) fn le_i64(bytes: &[u8], at: usize) -> i64 {
    let mut word = [0u8; 8];
    if let Some(field) = bytes.get(at..at + 8) {
        word.copy_from_slice(field);
    }
    i64::from_le_bytes(word)
}

/// Writes `value` at `offset` as a LEB128 varint of `len` bytes, its `varint_len`.
pub(crate) fn put_varint(
    bytes: &mut [u8],
    offset: usize,
    mut value: u64,
    len: usize,
) -> Result<(), Error> {
    let out = bytes.get_mut(offset..offset + len).ok_or(Error::Internal)?;
    // Most fields of a busy key's entries take one byte.
    if let [only] = out {
        *only = value as u8;
        return Ok(());
    }
    for byte in out.iter_mut() {
        *byte = value as u8 | 0x80;
        value >>= 7;
    }
    if let Some(last) = out.last_mut() {
        *last &= 0x7f;
    }
    Ok(())
}

pub(crate) fn varint_len(value: u64) -> usize {
    match value {
        0..0x80 => 1,
        _ => 1 + (63 - value.leading_zeros() as usize) / 7,
    }
}

/// A LEB128 varint at `offset`, and the offset after it; none if it runs off `bytes` or past
/// 64 bits.
#[inline]
pub(crate) fn read_varint(bytes: &[u8], offset: usize) -> Option<(u64, usize)> {
    // Most fields take one or two bytes, and a call may walk a block of them.
    match *bytes.get(offset..)? {
        [low, ..] if low < 0x80 => return Some((u64::from(low), offset + 1)),
        [low, high, ..] if high < 0x80 => {
            return Some((u64::from(low & 0x7f) | u64::from(high) << 7, offset + 2))
        }
        _ => {}
    }
    let (mut value, mut shift, mut at) = (0u64, 0u32, offset);
    loop {
        let byte = *bytes.get(at)?;
        at += 1;
        // The tenth byte holds the 64th bit alone.
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some((value, at));
        }
        shift += 7;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fields_past_the_end_read_as_zero() {
        let bytes = [1, 2, 3];
        assert_eq!(le_u32(&bytes, 0), 0);
        assert_eq!(le_i64(&bytes, 2), 0);
        assert_eq!(le_u32(&[1, 0, 0, 0, 2], 1), 2 << 24);
    }

    #[test]
    fn a_varint_past_64_bits_is_refused() {
        let mut too_long = [0xff; 10];
        too_long[9] = 0x02;
        assert_eq!(read_varint(&too_long, 0), None);
        too_long[9] = 0x01;
        assert_eq!(read_varint(&too_long, 0), Some((u64::MAX, 10)));
    }

    #[test]
    fn a_varint_that_runs_off_the_bytes_is_refused() {
        assert_eq!(read_varint(&[0x80, 0x80], 0), None);
        assert_eq!(read_varint(&[0x01], 1), None);
    }

    #[test]
    fn a_buffer_is_filled_only_when_empty() {
        let mut buffer = Vec::new();
        assert_eq!(buffer.fill_empty(b"abc"), Ok(()));
        assert_eq!(buffer, b"abc");
        assert_eq!(buffer.fill_empty(b"d"), Err(Error::Internal));
        assert_eq!(buffer, b"abc");
    }

    proptest! {
        #[test]
        fn a_varint_reads_back_as_written(value: u64, offset in 0usize..4) {
            let len = varint_len(value);
            let mut bytes = vec![0u8; offset + len + 1];
            put_varint(&mut bytes, offset, value, len).unwrap();
            prop_assert_eq!(read_varint(&bytes, offset), Some((value, offset + len)));
        }
    }
}
