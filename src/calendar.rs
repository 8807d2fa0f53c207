//! Where a fixed window that keeps to a clock ends: the multiples of a period since the Unix
//! epoch (`ALIGN`), or the calendar's days, ISO weeks, months and years, each in UTC or in a
//! local time a whole number of minutes off it (`OFFSET`). Pure: instants in and out, in
//! milliseconds since the epoch.
//!
//! A local time here is UTC moved by its offset, as ISO 8601 writes one (`+02:00` is 120
//! minutes ahead): its midnight falls `offset` before UTC's. No time-zone database is read,
//! so a zone that changes its offset (daylight saving) keeps the offset it was given.
//!
//! Months and years have their real lengths: the Gregorian calendar repeats every 400 years,
//! 146,097 days, and within such an era the day of a date follows from counting years that
//! start on the 1st of March, which puts the leap day last.

/// A calendar's unit of time, as CL.FIXED names it.
pub use crate::grammar::params::CalendarUnit as Unit;
pub use crate::time::DAY_MS;
use crate::time::MILLIS_PER_SECOND;

/// The farthest a local time may be from UTC, in minutes either way (the grammar's bound).
pub const MAX_OFFSET_MINUTES: i64 = crate::grammar::MAX_OFFSET_MINUTES as i64;

/// A minute, in milliseconds.
const MINUTE_MS: i64 = 60 * MILLIS_PER_SECOND;

/// Days in a 400-year Gregorian era.
const ERA_DAYS: i64 = 146_097;

/// Days from 0000-03-01, the first day of era 0 counted from March, to 1970-01-01.
const EPOCH_FROM_ERA_START: i64 = 719_468;

/// How a fixed window is laid on the clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// The windows are the multiples of `period_ms` since the epoch, in the local time
    /// `offset_ms` ahead of UTC.
    Aligned { period_ms: i64, offset_ms: i64 },
    /// The windows are the calendar's units, in the local time `offset_ms` ahead of UTC.
    Calendar { unit: Unit, offset_ms: i64 },
}

impl Grid {
    /// The grid of `OFFSET minutes` (already held to `MAX_OFFSET_MINUTES`) and a period or a
    /// calendar unit.
    pub fn aligned(period_ms: i64, offset_minutes: i64) -> Grid {
        Grid::Aligned {
            period_ms,
            offset_ms: offset_minutes.saturating_mul(MINUTE_MS),
        }
    }

    pub fn calendar(unit: Unit, offset_minutes: i64) -> Grid {
        Grid::Calendar {
            unit,
            offset_ms: offset_minutes.saturating_mul(MINUTE_MS),
        }
    }

    /// The end of the window that holds `now_ms`: the first instant after it that starts a
    /// window. `None` only past what an `i64` of milliseconds holds, or for a period under a
    /// millisecond.
    pub fn end_after(self, now_ms: i64) -> Option<i64> {
        let (offset_ms, local_end) = match self {
            Grid::Aligned {
                period_ms,
                offset_ms,
            } => {
                let local = now_ms.checked_add(offset_ms)?;
                let period = period_ms.checked_abs().filter(|&period| period > 0)?;
                let end = local
                    .div_euclid(period)
                    .checked_add(1)?
                    .checked_mul(period)?;
                (offset_ms, end)
            }
            Grid::Calendar { unit, offset_ms } => {
                let day = now_ms.checked_add(offset_ms)?.div_euclid(DAY_MS);
                (offset_ms, end_day(unit, day)?.checked_mul(DAY_MS)?)
            }
        };
        local_end.checked_sub(offset_ms)
    }
}

/// The first day (since the epoch) of the unit after the one that holds `day`.
fn end_day(unit: Unit, day: i64) -> Option<i64> {
    match unit {
        Unit::Day => day.checked_add(1),
        // 1970-01-01 was a Thursday: Mondays are the days 4 past a multiple of 7.
        Unit::Week => {
            let monday = day
                .checked_sub(4)?
                .div_euclid(7)
                .checked_mul(7)?
                .checked_add(4)?;
            monday.checked_add(7)
        }
        Unit::Month => {
            let (year, month, _) = date_of(day);
            match month {
                12 => day_of(year.checked_add(1)?, 1, 1),
                _ => day_of(year, month + 1, 1),
            }
        }
        Unit::Year => day_of(date_of(day).0.checked_add(1)?, 1, 1),
    }
}

/// The date (year, month 1 to 12, day 1 to 31) of `day` days since the epoch, for any day
/// an instant in milliseconds can fall on (within ±1.1·10^11 days; past that it saturates).
pub fn date_of(day: i64) -> (i64, i64, i64) {
    let from_era_start = day.saturating_add(EPOCH_FROM_ERA_START);
    let era = from_era_start.div_euclid(ERA_DAYS);
    let day_of_era = from_era_start.rem_euclid(ERA_DAYS);
    // Years of 365 days, with a leap day every 4th but the 100th, and the 400th again (the
    // era's last day, 146,096, would otherwise count as a fifth century).
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March: 31, 30, 31, 30, 31, 31, 30, 31, 30, 31, 31, 29 (or 28), whose
    // starts 153 days in every 5 months give.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day_of_month = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era.saturating_mul(400).saturating_add(year_of_era);
    (year + i64::from(month <= 2), month, day_of_month)
}

/// The day since the epoch of a date (month 1 to 12, day 1 to 31), `None` past an `i64`.
pub fn day_of(year: i64, month: i64, day: i64) -> Option<i64> {
    // Years counted from March: January and February belong to the year before.
    let march_year = year.checked_sub(i64::from(month <= 2))?;
    let era = march_year.div_euclid(400);
    let year_of_era = march_year.rem_euclid(400);
    let month_from_march = (month + 9) % 12;
    let day_of_year = ((153 * month_from_march + 2) / 5).checked_add(day)? - 1;
    let day_of_era =
        (365 * year_of_era + year_of_era / 4 - year_of_era / 100).checked_add(day_of_year)?;
    era.checked_mul(ERA_DAYS)?
        .checked_add(day_of_era)?
        .checked_sub(EPOCH_FROM_ERA_START)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The model: the Gregorian rule as the calendar states it, and months counted one by one.
    fn leap(year: i64) -> bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    fn month_days(year: i64, month: i64) -> i64 {
        match month {
            2 if leap(year) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// The first day of every month from 1900 to 2200, with its date, counted from 1970.
    fn month_starts() -> Vec<(i64, i64, i64)> {
        let mut before = Vec::new();
        let mut day = 0;
        for year in (1900..1970).rev() {
            for month in (1..=12).rev() {
                day -= month_days(year, month);
                before.push((day, year, month));
            }
        }
        before.reverse();
        let mut starts = before;
        day = 0;
        for year in 1970..=2200 {
            for month in 1..=12 {
                starts.push((day, year, month));
                day += month_days(year, month);
            }
        }
        starts
    }

    #[test]
    fn every_first_of_the_month_from_1900_to_2200_is_where_the_model_counts_it() {
        for (day, year, month) in month_starts() {
            assert_eq!(day_of(year, month, 1), Some(day), "{year}-{month}");
            assert_eq!(date_of(day), (year, month, 1), "{day}");
            let last = day + month_days(year, month) - 1;
            assert_eq!(date_of(last), (year, month, month_days(year, month)));
        }
    }

    #[test]
    fn known_instants() {
        // 2024-02-29 12:00 UTC: a leap day.
        let leap_noon = day_of(2024, 2, 29).unwrap() * DAY_MS + DAY_MS / 2;
        assert_eq!(leap_noon, 1_709_208_000_000);
        let month = Grid::calendar(Unit::Month, 0);
        assert_eq!(
            month.end_after(leap_noon),
            Some(day_of(2024, 3, 1).unwrap() * DAY_MS)
        );
        let year = Grid::calendar(Unit::Year, 0);
        // 2025-01-01.
        assert_eq!(year.end_after(leap_noon), Some(1_735_689_600_000));
        // Thursday 2024-02-29: its ISO week ends Monday 2024-03-04.
        let week = Grid::calendar(Unit::Week, 0);
        assert_eq!(
            week.end_after(leap_noon),
            Some(day_of(2024, 3, 4).unwrap() * DAY_MS)
        );
        // UTC+02:00's midnight is 22:00 UTC the day before; UTC-05:00's is 05:00 UTC.
        let plus_two = Grid::calendar(Unit::Day, 120);
        assert_eq!(
            plus_two.end_after(leap_noon),
            Some(day_of(2024, 3, 1).unwrap() * DAY_MS - 2 * 3_600_000)
        );
        let minus_five = Grid::calendar(Unit::Day, -300);
        assert_eq!(
            minus_five.end_after(leap_noon),
            Some(day_of(2024, 3, 1).unwrap() * DAY_MS + 5 * 3_600_000)
        );
        // At 23:30 UTC on the 29th it is already March 1st at UTC+02:00.
        let late = leap_noon + 11 * 3_600_000 + 1_800_000;
        assert_eq!(
            Grid::calendar(Unit::Month, 120).end_after(late),
            Some(day_of(2024, 4, 1).unwrap() * DAY_MS - 2 * 3_600_000)
        );
        // Aligned minutes start on the minute; at UTC+05:30, hours start at :30.
        let minute = Grid::aligned(60_000, 0);
        assert_eq!(minute.end_after(leap_noon + 1), Some(leap_noon + 60_000));
        assert_eq!(minute.end_after(leap_noon), Some(leap_noon + 60_000));
        let hour = Grid::aligned(3_600_000, 330);
        assert_eq!(hour.end_after(leap_noon), Some(leap_noon + 1_800_000));
    }

    #[test]
    fn no_grid_overflows_or_takes_a_period_under_a_millisecond() {
        assert_eq!(Grid::aligned(0, 0).end_after(5), None);
        assert_eq!(Grid::aligned(60_000, 0).end_after(i64::MAX), None);
        assert_eq!(
            Grid::calendar(Unit::Year, MAX_OFFSET_MINUTES).end_after(i64::MAX),
            None
        );
        for unit in [Unit::Day, Unit::Week, Unit::Month, Unit::Year] {
            for offset in [-MAX_OFFSET_MINUTES, 0, MAX_OFFSET_MINUTES] {
                let grid = Grid::calendar(unit, offset);
                assert!(grid.end_after(0).is_some_and(|end| end > 0));
                for now in [i64::MIN, i64::MIN + DAY_MS, i64::MAX - DAY_MS, i64::MAX] {
                    assert!(grid.end_after(now).is_none_or(|end| end > now), "{now}");
                }
            }
        }
    }

    /// The model's unit, laid out: the first day of each window from 1900 to 2200.
    fn starts_of(unit: Unit) -> Vec<i64> {
        let months = month_starts();
        match unit {
            Unit::Day => ((months[0].0)..=months[months.len() - 1].0).collect(),
            // 1900-01-01 was a Monday.
            Unit::Week => (months[0].0..=months[months.len() - 1].0)
                .step_by(7)
                .collect(),
            Unit::Month => months.iter().map(|&(day, _, _)| day).collect(),
            Unit::Year => months
                .iter()
                .filter(|&&(_, _, month)| month == 1)
                .map(|&(day, _, _)| day)
                .collect(),
        }
    }

    proptest! {
        #[test]
        fn a_calendar_window_ends_where_the_model_starts_the_next(
            unit in prop_oneof![Just(Unit::Day), Just(Unit::Week), Just(Unit::Month), Just(Unit::Year)],
            offset in -MAX_OFFSET_MINUTES..=MAX_OFFSET_MINUTES,
            // 1901 to 2199, to the millisecond.
            now in -2_177_452_800_000i64..7_258_118_400_000,
        ) {
            let starts = starts_of(unit);
            let local_day = (now + offset * MINUTE_MS).div_euclid(DAY_MS);
            let next = starts.iter().find(|&&start| start > local_day).copied().unwrap();
            let end = Grid::calendar(unit, offset).end_after(now).unwrap();
            prop_assert_eq!(end, next * DAY_MS - offset * MINUTE_MS);
            prop_assert!(end > now);
        }

        #[test]
        fn an_aligned_window_holds_now_and_is_one_period_long(
            period in 1i64..10_000_000_000,
            offset in -MAX_OFFSET_MINUTES..=MAX_OFFSET_MINUTES,
            now in 0i64..4_611_686_018_427,
        ) {
            let end = Grid::aligned(period, offset).end_after(now).unwrap();
            prop_assert!(now < end && end <= now + period);
            prop_assert_eq!((end + offset * MINUTE_MS).rem_euclid(period), 0);
        }
    }
}
