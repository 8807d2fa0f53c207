//! Decimal integers, as Redis reads and writes them: the stored states and the arguments are
//! decimal text.

/// Reads a decimal integer exactly as Redis does (`string2ll`): an optional `-`, then digits
/// with no leading zero, no sign on zero, no `+`, no spaces, and a value that fits in an `i64`.
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text {
        [b'-', rest @ ..] => (true, rest),
        _ => (false, text),
    };
    match digits {
        [b'0'] if !negative => return Some(0),
        [b'1'..=b'9', ..] => {}
        _ => return None,
    }
    let mut magnitude: u64 = 0;
    for &digit in digits {
        if !digit.is_ascii_digit() {
            return None;
        }
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// `value` in decimal, written at the right end of `buf` (20 bytes hold any i64). Every
/// THROTTLE write formats a 19-digit TAT and a 13-digit expiry, so the digits are made in
/// blocks of eight with 32-bit arithmetic, pairs from a table, at places known when compiled,
/// and the length is counted apart: about half the instructions of a loop over pairs.
pub fn decimal(value: i64, buf: &mut [u8; 20]) -> &[u8] {
    let magnitude = value.unsigned_abs();
    // A magnitude is at most 2^63: the highest block holds at most three digits.
    let (high, low) = (magnitude / EIGHT_DIGITS, (magnitude % EIGHT_DIGITS) as u32);
    eight(buf, 12, low);
    if high > 0 {
        eight(buf, 4, (high % EIGHT_DIGITS) as u32);
        let top = (high / EIGHT_DIGITS) as u32;
        if top > 0 {
            pair(buf, 0, top / 100);
            pair(buf, 2, top % 100);
        }
    }
    // At most 19 digits: a sign always fits before them.
    let mut start = buf.len().saturating_sub(digits(magnitude));
    if value < 0 {
        start = start.saturating_sub(1);
        if let Some(sign) = buf.get_mut(start) {
            *sign = b'-';
        }
    }
    buf.get(start..).unwrap_or_default()
}

const EIGHT_DIGITS: u64 = 100_000_000;

/// Writes `n` (below 10^8) as eight digits from `at`.
#[inline(always)]
fn eight(buf: &mut [u8; 20], at: usize, n: u32) {
    let (high, low) = (n / 10_000, n % 10_000);
    pair(buf, at, high / 100);
    pair(buf, at + 2, high % 100);
    pair(buf, at + 4, low / 100);
    pair(buf, at + 6, low % 100);
}

/// Writes the two digits of `n % 100` at `at`: every place is a constant once inlined, so
/// the slice's bound is checked when compiled.
#[inline(always)]
fn pair(buf: &mut [u8; 20], at: usize, n: u32) {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let from = (n % 100) as usize * 2;
    if let (Some(to), Some(digits)) = (buf.get_mut(at..at + 2), PAIRS.get(from..from + 2)) {
        to.copy_from_slice(digits);
    }
}

/// How many digits `n` has in decimal, 1 for 0: from its bit length, the power of ten just
/// below, and one comparison.
#[inline(always)]
fn digits(n: u64) -> usize {
    const POWERS: [u64; 20] = {
        let mut powers = [1u64; 20];
        let mut at = 1;
        while at < 20 {
            powers[at] = powers[at - 1] * 10;
            at += 1;
        }
        powers
    };
    let bits = 64 - (n | 1).leading_zeros() as usize;
    // bits · log10(2), rounded down: the digits of 2^bits, less one.
    let guess = (bits * 1233) >> 12;
    let below = POWERS.get(guess).is_some_and(|&power| n < power);
    (guess + 1 - usize::from(below)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn integers_are_read_as_redis_reads_them() {
        for (text, value) in [
            ("0", Some(0)),
            ("15", Some(15)),
            ("-7", Some(-7)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("-9223372036854775809", None),
            ("99999999999999999999999", None),
            ("", None),
            ("-", None),
            ("-0", None),
            ("007", None),
            ("+1", None),
            (" 1", None),
            ("1 ", None),
            ("1.5", None),
            ("1e3", None),
        ] {
            assert_eq!(parse_i64(text.as_bytes()), value, "{text:?}");
        }
    }
    #[test]
    fn non_utf8_text_is_rejected_not_misread() {
        assert_eq!(parse_i64(&[0xff, b'1']), None);
    }

    #[test]
    fn decimal_handles_the_extremes() {
        let mut buf = [0u8; 20];
        assert_eq!(decimal(i64::MIN, &mut buf), b"-9223372036854775808");
        assert_eq!(decimal(0, &mut buf), b"0");
    }

    #[test]
    fn decimal_is_exact_at_every_length() {
        // Each side of every power of ten, where the count of digits changes.
        let mut power = 1i64;
        for _ in 0..19 {
            for value in [power - 1, power, power + 1, -power + 1, -power, -power - 1] {
                let mut buf = [0u8; 20];
                assert_eq!(decimal(value, &mut buf), value.to_string().as_bytes());
            }
            power = power.saturating_mul(10);
        }
        for value in [
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
            99_999_999,
            100_000_000,
            1_795_910_400_123,
        ] {
            // On a buffer a former write left full.
            let mut buf = [b'7'; 20];
            assert_eq!(decimal(value, &mut buf), value.to_string().as_bytes());
        }
    }

    proptest! {
        #[test]
        fn every_i64_round_trips_through_its_decimal_form(value: i64) {
            prop_assert_eq!(parse_i64(value.to_string().as_bytes()), Some(value));
        }

        #[test]
        fn parsing_never_panics_and_agrees_with_the_canonical_form(text: Vec<u8>) {
            if let Some(value) = parse_i64(&text) {
                prop_assert_eq!(value.to_string().into_bytes(), text);
            }
        }

        #[test]
        fn decimal_matches_the_standard_formatting_and_parses_back(value: i64) {
            let mut buf = [0u8; 20];
            let text = decimal(value, &mut buf);
            let expected = value.to_string();
            prop_assert_eq!(text, expected.as_bytes());
            prop_assert_eq!(parse_i64(text), Some(value));
        }
    }
}
