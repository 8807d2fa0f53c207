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

/// `value` in decimal, written from the right end of `buf` (20 bytes hold any i64), two
/// digits at a time: every write formats two or three 13- to 19-digit numbers.
pub fn decimal(value: i64, buf: &mut [u8; 20]) -> &[u8] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut magnitude = value.unsigned_abs();
    let mut start = buf.len();
    while magnitude >= 10 {
        let pair = (magnitude % 100) as usize * 2;
        magnitude /= 100;
        start -= 2;
        buf[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if magnitude > 0 || start == buf.len() {
        start -= 1;
        buf[start] = b'0' + magnitude as u8;
    }
    if value < 0 {
        start -= 1;
        buf[start] = b'-';
    }
    &buf[start..]
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
