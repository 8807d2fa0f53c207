//! A libfaketime clock, for the servers that run under one.

use std::path::PathBuf;

/// A libfaketime clock file: the server reads its wall-clock time from here, frozen until
/// the test moves it. Valkey only (Debian's redis-server deadlocks under libfaketime).
pub struct FakeClock {
    pub(super) file: PathBuf,
}

pub(super) const LIBFAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

impl FakeClock {
    /// Sets the server's wall clock to the start of millisecond `unix_ms`. libfaketime reads
    /// the fraction as a double and truncates it to the nanosecond (.151 s would read as
    /// 150999999 ns, in the millisecond before): half a microsecond more keeps every reading
    /// to the microsecond on the millisecond.
    /// The file is written whole beside it and renamed into place, so that the server never
    /// reads a half-written one.
    pub fn set_ms(&self, unix_ms: i64) {
        let next = self.file.with_extension("next");
        std::fs::write(&next, format!("{}0005\n", civil_time(unix_ms))).expect("write clock");
        std::fs::rename(&next, &self.file).expect("move clock into place");
    }

    /// Sets the server's wall clock to microsecond `unix_us` (and half of one more, as
    /// `set_ms` does).
    pub fn set_us(&self, unix_us: i64) {
        let next = self.file.with_extension("next");
        let (ms, us) = (unix_us.div_euclid(1000), unix_us.rem_euclid(1000));
        std::fs::write(&next, format!("{}{us:03}5\n", civil_time(ms))).expect("write clock");
        std::fs::rename(&next, &self.file).expect("move clock into place");
    }
}

/// `YYYY-MM-DD hh:mm:ss.mmm` in UTC, the absolute form libfaketime freezes the clock at.
fn civil_time(unix_ms: i64) -> String {
    let (days, ms_of_day) = (
        unix_ms.div_euclid(86_400_000),
        unix_ms.rem_euclid(86_400_000),
    );
    // Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's civil_from_days).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, ms) = (
        ms_of_day / 3_600_000,
        ms_of_day / 60_000 % 60,
        ms_of_day / 1000 % 60,
        ms_of_day % 1000,
    );
    format!("{year:04}-{month:02}-{day:02} {h:02}:{m:02}:{s:02}.{ms:03}")
}

#[cfg(test)]
mod tests {
    use super::civil_time;

    #[test]
    fn civil_time_formats_utc() {
        assert_eq!(civil_time(0), "1970-01-01 00:00:00.000");
        assert_eq!(civil_time(1_767_225_600_250), "2026-01-01 00:00:00.250");
        assert_eq!(civil_time(951_782_400_000), "2000-02-29 00:00:00.000");
    }
}
