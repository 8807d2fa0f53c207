//! The bytes of a CL.SMOOTH key: Guava's two fields of state, and the rate they were last
//! kept at, which a call at another rate rescales them from. 32 bytes, little-endian:
//!
//! ```text
//! 0..8    nextFreeTicketMicros   i64
//! 8..16   storedPermits          f64
//! 16..24  maxPermits             f64, at the rate last written
//! 24..32  cool-down, µs/permit   f64, at the rate last written; negative for a warm-up
//! ```
//!
//! The cool-down's sign carries the shape, so that the whole state fits in 32 bytes.

use crate::bytes::le_i64;
use crate::error::Error;

/// The length of every smooth limiter's value.
pub const LEN: usize = 32;

/// How far stored permits may exceed their maximum, relatively, and still be a state.
const ROUNDING: f64 = 1e-12;

/// More permits than any parameters store (2^63 permits a millisecond, stored for 2^62 ns,
/// is about 4·10^31): a larger maximum is no state, and would overflow a rescale.
const MAX_PERMITS: f64 = 1e40;

/// What a key holds: Guava's state, and the rate it is kept at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyState {
    pub next_free: i64,
    pub stored: f64,
    pub max_permits: f64,
    pub cool_down: f64,
    pub warming_up: bool,
}

impl KeyState {
    /// Reads a key's value. Anything else than 32 bytes of an instant since the epoch, a rate
    /// that parameters can give and stored permits between none and its maximum is not a
    /// smooth limiter's. (A rescale may leave
    /// the maximum exceeded by a rounding, which resync then caps: an ulp or two.)
    pub fn decode(value: &[u8]) -> Result<KeyState, Error> {
        let [next_free, stored, max_permits, cool_down] = words(value)?;
        let float = |word: i64| f64::from_bits(word as u64);
        let (stored, max_permits, cool_down) =
            (float(stored), float(max_permits), float(cool_down));
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let within = |stored: f64| (0.0..=most_stored(max_permits)).contains(&stored);
        let rate = positive(max_permits) && max_permits <= MAX_PERMITS && positive(cool_down.abs());
        // The clock never reads before the epoch, and waits only push the instant later.
        if !(rate && within(stored) && next_free >= 0) {
            return Err(Error::CorruptState);
        }
        Ok(KeyState {
            next_free,
            stored,
            max_permits,
            cool_down: cool_down.abs(),
            warming_up: cool_down.is_sign_negative(),
        })
    }

    pub fn encode(&self) -> [u8; LEN] {
        let cool_down = if self.warming_up {
            -self.cool_down
        } else {
            self.cool_down
        };
        let mut value = [0u8; LEN];
        let words = [
            self.next_free.to_le_bytes(),
            self.stored.to_le_bytes(),
            self.max_permits.to_le_bytes(),
            cool_down.to_le_bytes(),
        ];
        for (chunk, word) in value.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&word);
        }
        value
    }
}

/// The most permits a state may store under this maximum: a real one exceeds it by a rounding
/// of a rescale at most, far less than this; only a crafted one comes near.
pub fn most_stored(max_permits: f64) -> f64 {
    max_permits * (1.0 + ROUNDING)
}

/// The four 8-byte words of a 32-byte value.
fn words(value: &[u8]) -> Result<[i64; 4], Error> {
    if value.len() != LEN {
        return Err(Error::CorruptState);
    }
    let mut words = [0i64; 4];
    for (word, at) in words.iter_mut().zip((0..LEN).step_by(8)) {
        *word = le_i64(value, at);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_value_is_32_bytes_and_keeps_the_shape_in_the_sign() {
        let state = KeyState {
            next_free: 1_795_910_400_000_000,
            stored: 1.5,
            max_permits: 2.0,
            cool_down: 500_000.0,
            warming_up: true,
        };
        let value = state.encode();
        assert_eq!(value.len(), 32);
        assert_eq!(KeyState::decode(&value), Ok(state));
        let bursty = KeyState {
            warming_up: false,
            ..state
        };
        assert_eq!(KeyState::decode(&bursty.encode()), Ok(bursty));
    }

    #[test]
    fn other_values_are_refused() {
        let good = KeyState {
            next_free: 0,
            stored: 0.0,
            max_permits: 1.0,
            cool_down: 1.0,
            warming_up: false,
        };
        assert!(KeyState::decode(&good.encode()).is_ok());
        for bad in [
            KeyState {
                stored: -1.0,
                ..good
            },
            KeyState {
                stored: f64::NAN,
                ..good
            },
            KeyState {
                stored: f64::INFINITY,
                ..good
            },
            KeyState {
                max_permits: 0.0,
                ..good
            },
            KeyState {
                max_permits: f64::INFINITY,
                ..good
            },
            KeyState {
                cool_down: 0.0,
                ..good
            },
            KeyState {
                cool_down: f64::NAN,
                ..good
            },
        ] {
            assert_eq!(
                KeyState::decode(&bad.encode()),
                Err(Error::CorruptState),
                "{bad:?}"
            );
        }
        assert_eq!(
            KeyState::decode(b"1795910400000000000"),
            Err(Error::CorruptState)
        );
        assert_eq!(KeyState::decode(&[0u8; 33]), Err(Error::CorruptState));
    }

    proptest! {
        #[test]
        fn any_bytes_decode_or_are_refused_and_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(state) = KeyState::decode(&bytes) {
                prop_assert_eq!(KeyState::decode(&state.encode()), Ok(state));
            }
        }
    }
}
