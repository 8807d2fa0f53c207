//! What is particular to CL.FIXED, on real Redis 7.0 and Valkey 9 servers. The contract all
//! three commands share is in contract.rs.

use crate::harness::run;
use crate::harness::{error_of, limiter, server_now_ns, snapshot, Flavor, Server};

both_servers!(
    the_key_holds_the_count_and_expires_at_the_window_end,
    keys_left_by_the_incr_expire_recipe_keep_working,
    a_count_without_an_expiry_is_refused,
    ms_periods_and_waits_are_in_milliseconds,
);

fn the_key_holds_the_count_and_expires_at_the_window_end(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let before_ms = server_now_ns(&mut con) / 1_000_000;
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60"]),
        [0, 5, 4, -1, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60", "3"]),
        [0, 5, 1, -1, 60]
    );
    let after_ms = server_now_ns(&mut con) / 1_000_000;
    let (count, end) = snapshot(&mut con, b"f");
    assert_eq!(count.as_deref(), Some(&b"4"[..]));
    // The window opened at the first call and lasts 60 s.
    assert!(
        (before_ms + 60_000..=after_ms + 60_000).contains(&end),
        "{end}"
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60", "2"]),
        [1, 5, 1, 60, 60]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["f", "5", "60"]),
        [0, 5, 0, -1, 60]
    );
    assert_eq!(snapshot(&mut con, b"f"), (Some(b"5".to_vec()), end));
}

fn keys_left_by_the_incr_expire_recipe_keep_working(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    run::<()>(&mut con, ("INCRBY", &["recipe", "3"]));
    run::<()>(&mut con, ("PEXPIRE", &["recipe", "30500"]));
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["recipe", "4", "60"]),
        [0, 4, 0, -1, 31]
    );
    assert_eq!(
        limiter(&mut con, "CL.FIXED", &["recipe", "4", "60"]),
        [1, 4, 0, 31, 31]
    );
}

fn a_count_without_an_expiry_is_refused(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    // What the INCR + EXPIRE recipe leaves when it dies between its two commands: a window
    // that never ends. Refusing it shows the problem instead of locking users out forever.
    run::<()>(&mut con, ("SET", &["stuck", "2"]));
    let error = error_of(&mut con, "CL.FIXED", &[b"stuck", b"5", b"60"]);
    assert!(error.contains("not a valid state"), "{error}");
    run::<()>(&mut con, ("SET", &["negative", "-2", "PX", "5000"]));
    let error = error_of(&mut con, "CL.FIXED", &[b"negative", b"5", b"60"]);
    assert!(error.contains("not a valid state"), "{error}");
    assert_eq!(snapshot(&mut con, b"stuck"), (Some(b"2".to_vec()), -1));
}

fn ms_periods_and_waits_are_in_milliseconds(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let first = limiter(&mut con, "CL.FIXED", &["m", "2", "60000", "2", "MS"]);
    assert_eq!(first, [0, 2, 0, -1, 60000]);
    let denied = limiter(&mut con, "CL.FIXED", &["m", "2", "60000", "MS"]);
    assert_eq!(denied[..3], [1, 2, 0]);
    // A few milliseconds of real time may have passed.
    assert!((59_900..=60_000).contains(&denied[3]), "{denied:?}");
    assert_eq!(denied[3], denied[4]);
}

/// Its clock frozen where the test puts it.
#[test]
fn the_window_ends_exactly_one_period_after_it_opened_under_a_controlled_clock() {
    const BASE: i64 = 1_900_000_000_000;
    let server = Server::with_fake_clock(BASE);
    let mut con = server.connection();
    let mut at = |offset_ms: i64, quantity: &str| {
        server.set_clock_ms(BASE + offset_ms);
        limiter(&mut con, "CL.FIXED", &["w", "2", "1000", quantity, "MS"])
    };
    assert_eq!(at(0, "1"), [0, 2, 1, -1, 1000]);
    assert_eq!(at(500, "1"), [0, 2, 0, -1, 500]);
    assert_eq!(at(999, "1"), [1, 2, 0, 1, 1]);
    assert_eq!(at(999, "0"), [0, 2, 0, -1, 1]);
    // At the end the window is over, though the server keeps its key through this
    // millisecond: a new window opens here.
    assert_eq!(at(1_000, "0"), [0, 2, 2, -1, 0]);
    assert_eq!(at(1_000, "1"), [0, 2, 1, -1, 1000]);
    let mut con = server.connection();
    assert_eq!(
        snapshot(&mut con, b"w"),
        (Some(b"1".to_vec()), BASE + 2_000)
    );
}

/// With ALIGN the windows are the multiples of the period since the epoch: a window opened
/// mid-minute ends on the minute, the key expires there, and a key opened by the other form
/// keeps its count and its end until that window is over.
#[test]
fn aligned_windows_end_on_the_multiples_of_the_period_under_a_controlled_clock() {
    // A whole minute since the epoch, then 30.5 s into it.
    const MINUTE: i64 = 31_666_666 * 60_000;
    let server = Server::with_fake_clock(MINUTE + 30_500);
    let mut con = server.connection();
    let mut other = server.connection();
    let mut at = |offset_ms: i64, key: &str, align: bool| {
        server.set_clock_ms(MINUTE + offset_ms);
        let mut args = vec![key, "2", "60000", "1", "MS"];
        if align {
            args.push("ALIGN");
        }
        limiter(&mut con, "CL.FIXED", &args)
    };
    assert_eq!(at(30_500, "aligned", true), [0, 2, 1, -1, 29_500]);
    assert_eq!(at(59_999, "aligned", true), [0, 2, 0, -1, 1]);
    assert_eq!(at(60_000, "aligned", true), [0, 2, 1, -1, 60_000]);
    assert_eq!(
        snapshot(&mut other, b"aligned"),
        (Some(b"1".to_vec()), MINUTE + 120_000)
    );
    // Opened a period from its first call; ALIGN later keeps that window to its end.
    assert_eq!(at(60_010, "opened", false), [0, 2, 1, -1, 60_000]);
    assert_eq!(at(120_000, "opened", true), [0, 2, 0, -1, 10]);
    assert_eq!(at(120_005, "opened", true), [1, 2, 0, 5, 5]);
    // That window over, ALIGN opens the grid's.
    assert_eq!(at(125_000, "opened", true), [0, 2, 1, -1, 55_000]);
}

/// OFFSET lays the aligned grid in a local time: at UTC+05:30 an hour's windows start at half
/// past the hour (UTC), at UTC-05:00 on the hour again, and a key expires where the grid says.
#[test]
fn an_offset_moves_the_aligned_grid_under_a_controlled_clock() {
    const HOUR: i64 = 527_777 * 3_600_000;
    let server = Server::with_fake_clock(HOUR + 600_000);
    let mut con = server.connection();
    let mut other = server.connection();
    let mut at = |offset_ms: i64, key: &str, minutes: &str| {
        server.set_clock_ms(HOUR + offset_ms);
        limiter(
            &mut con,
            "CL.FIXED",
            &[key, "5", "3600", "1", "ALIGN", "OFFSET", minutes],
        )
    };
    // 00:10 past the hour (UTC): at +05:30 the local hour ends at 00:30 UTC; at -05:00, at
    // 01:00 UTC.
    assert_eq!(at(600_000, "india", "330"), [0, 5, 4, -1, 1_200]);
    assert_eq!(at(600_000, "east", "-300"), [0, 5, 4, -1, 3_000]);
    assert_eq!(
        snapshot(&mut other, b"india"),
        (Some(b"1".to_vec()), HOUR + 1_800_000)
    );
    assert_eq!(at(1_800_000, "india", "330"), [0, 5, 4, -1, 3_600]);
}

/// The model of a calendar window's end: days counted one by one from 1970, by the Gregorian
/// rule as the calendar states it.
mod model {
    pub const DAY_MS: i64 = 86_400_000;

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

    /// The day since the epoch of the 1st of a month, from 1970 on.
    fn first_of(year: i64, month: i64) -> i64 {
        let years: i64 = (1970..year).map(|y| if leap(y) { 366 } else { 365 }).sum();
        years + (1..month).map(|m| month_days(year, m)).sum::<i64>()
    }

    /// The year and month of a day since the epoch, from 1970 on.
    fn month_of(day: i64) -> (i64, i64) {
        let (mut year, mut month) = (1970, 1);
        while first_of(year + 1, 1) <= day {
            year += 1;
        }
        while month < 12 && first_of(year, month + 1) <= day {
            month += 1;
        }
        (year, month)
    }

    /// Where the window of `unit` in the local time `offset` minutes ahead of UTC that holds
    /// `now_ms` ends.
    pub fn end(unit: &str, offset: i64, now_ms: i64) -> i64 {
        let offset_ms = offset * 60_000;
        let day = (now_ms + offset_ms).div_euclid(DAY_MS);
        let (year, month) = month_of(day);
        let next = match unit {
            "DAY" => day + 1,
            // 1970-01-01 was a Thursday, the 4th day of its ISO week (Monday the 1st).
            "WEEK" => day + 7 - (day + 3).rem_euclid(7),
            "MONTH" if month == 12 => first_of(year + 1, 1),
            "MONTH" => first_of(year, month + 1),
            _ => first_of(year + 1, 1),
        };
        next * DAY_MS - offset_ms
    }
}

/// A calendar's word in the period's place: the window is the day, ISO week, month or year
/// that holds the call, in UTC or a local time either side of it, on the module and the
/// library alike. Each window holds through its end's last millisecond and is over at its
/// end; every reply and the key's expiry are the model's, across months of 28, 29, 30 and 31
/// days, a century that is no leap year, and year ends.
#[test]
fn calendar_windows_end_where_the_calendar_does_under_a_controlled_clock() {
    const INSTANTS: [i64; 9] = [
        1_799_019_000_000, // 2027-01-03 23:30, Sunday.
        1_801_425_600_000, // 2027-01-31 20:00: 31 days.
        1_803_859_199_000, // 2027-02-28 23:59:59, Sunday: February of 28 days.
        1_809_086_400_000, // 2027-04-30 12:00: 30 days.
        1_830_297_599_999, // 2027-12-31 23:59:59.999: a year's end.
        1_835_388_000_000, // 2028-02-28 22:00, Monday: a leap year.
        1_835_479_800_000, // 2028-02-29 23:30.
        1_861_835_400_000, // 2028-12-31 00:30: a leap year's end.
        4_107_499_200_000, // 2100-02-28 12:00: a century that is no leap year.
    ];
    const UNITS: [&str; 4] = ["DAY", "WEEK", "MONTH", "YEAR"];
    const OFFSETS: [i64; 5] = [0, 330, -300, 1439, -1439];
    let server = Server::with_fake_clock(INSTANTS[0]);
    let mut module = server.connection();
    let mut library = server.connection();
    let _: () = run(&mut library, ("SELECT", 1));
    crate::library::load_library(&mut library);
    let mut call = |key: &str, unit: &str, offset: i64| -> Vec<i64> {
        let mut args = vec![
            key.to_owned(),
            "10".into(),
            unit.into(),
            "1".into(),
            "MS".into(),
        ];
        if offset != 0 {
            args.extend(["OFFSET".to_owned(), offset.to_string()]);
        }
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        let by_module = limiter(&mut module, "CL.FIXED", &words);
        let fcall: Vec<&str> = ["FCALL", "cl_fixed", "1"]
            .into_iter()
            .chain(words.iter().copied())
            .collect();
        let by_library: Vec<i64> = run(&mut library, fcall);
        assert_eq!(by_library, by_module, "{args:?}");
        let expiry = snapshot(&mut module, key.as_bytes()).1;
        assert_eq!(snapshot(&mut library, key.as_bytes()).1, expiry, "{args:?}");
        by_module.into_iter().chain([expiry]).collect()
    };
    // Each key opens at its instant, is called again at its end's last millisecond and at its
    // end. The clock only moves on, as a server expires a key whose end it has passed.
    let mut calls = Vec::new();
    for (i, &now) in INSTANTS.iter().enumerate() {
        for unit in UNITS {
            for offset in OFFSETS {
                let key = format!("c{i}:{unit}:{offset}");
                let end = model::end(unit, offset, now);
                let next = model::end(unit, offset, end);
                calls.push((
                    now,
                    key.clone(),
                    unit,
                    offset,
                    [0, 10, 9, -1, end - now, end],
                ));
                calls.push((end - 1, key.clone(), unit, offset, [0, 10, 8, -1, 1, end]));
                calls.push((end, key, unit, offset, [0, 10, 9, -1, next - end, next]));
            }
        }
    }
    calls.sort_by_key(|call| call.0);
    for at_once in calls.chunk_by(|a, b| a.0 == b.0) {
        server.set_clock_ms(at_once[0].0);
        for (now, key, unit, offset, expected) in at_once {
            assert_eq!(call(key, unit, *offset), expected, "{key} at {now}");
        }
    }
}
