//! What is particular to CL.WINDOW with `BUCKETS n`, the window of sub-windows. Its replies
//! at cell edges, expiry, grids that change and waits run under a controlled clock (Valkey 9);
//! the contract it shares with the other forms (bad input, events, replicas, AOF, ACL, key
//! specs, MULTI) runs over forms.rs's table, where it has its rows.

use crate::harness::waiting::{connect, Waiter};
use crate::harness::{dump, limiter, run, server_now_ns, snapshot, Flavor, Server};

both_servers!(cells_are_aligned_to_the_epoch_whatever_the_first_call,);

/// 2030-03-17T17:46:40Z: a multiple of every cell width the tests use.
const BASE: i64 = 1_900_000_000_000;

/// A server under a controlled clock, and a connection that calls CL.WINDOW on it at
/// `BASE + offset_ms`.
struct Cells<'a> {
    server: &'a Server,
    con: redis::Connection,
}

impl<'a> Cells<'a> {
    fn on(server: &'a Server) -> Cells<'a> {
        Cells {
            con: server.connection(),
            server,
        }
    }

    fn at(&mut self, offset_ms: i64, key: &str, args: &[&str]) -> Vec<i64> {
        self.server.set_clock_ms(BASE + offset_ms);
        let mut words = vec![key];
        words.extend(args);
        limiter(&mut self.con, "CL.WINDOW", &words)
    }

    fn strlen(&mut self, key: &str) -> i64 {
        run(&mut self.con, ("STRLEN", key))
    }
}

#[test]
fn replies_at_cell_edges_and_the_expiry_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    // Three per second in four cells of 250 ms.
    let w = |quantity: &'static str| [quantity, "BUCKETS", "4", "MS"];
    let mut at = |offset: i64, quantity: &'static str| {
        let mut args = vec!["3", "1000"];
        args.extend(w(quantity));
        cells.at(offset, "w", &args)
    };
    assert_eq!(at(100, "1"), [0, 3, 2, -1, 900]);
    // Cell 2 (500..749) leaves at 1,500.
    assert_eq!(at(600, "2"), [0, 3, 0, -1, 900]);
    // The unit of cell 0 leaves at 1,000, those of cell 2 at 1,500.
    assert_eq!(at(999, "1"), [1, 3, 0, 1, 501]);
    assert_eq!(at(999, "3"), [1, 3, 0, 501, 501]);
    assert_eq!(at(999, "4"), [1, 3, 0, -1, 501]);
    assert_eq!(at(1_000, "0"), [0, 3, 1, -1, 500]);
    assert_eq!(at(1_000, "1"), [0, 3, 0, -1, 1_000]);
    assert_eq!(at(1_499, "1"), [1, 3, 0, 1, 501]);
    assert_eq!(at(1_500, "0"), [0, 3, 2, -1, 500]);
    let mut con = server.connection();
    // The key expires when its newest cell leaves, when the count is 0.
    let (value, expiry) = snapshot(&mut con, b"w");
    assert_eq!(expiry, BASE + 2_000);
    let value = value.expect("a value");
    assert!(value.starts_with(b"CLB\x01"), "{value:?}");
    // Cells 0, 2 and 4 are slots 0, 2 and 0 of a key whose first cell was 0.
    assert_eq!(value.len(), 32 + 3);
    assert_eq!(at(1_999, "0"), [0, 3, 2, -1, 1]);
    // At 2,000 the window is empty; the server drops the key the millisecond after, as it
    // drops every key whose expiry has passed.
    assert_eq!(at(2_000, "0"), [0, 3, 3, -1, 0]);
    server.set_clock_ms(BASE + 2_001);
    assert_eq!(snapshot(&mut con, b"w"), (None, -2));
}

/// `limit` at the end of one cell and `limit` again when it leaves: twice the limit within
/// one period, as the bound allows; never more than `limit` within `(n − 1)` cells.
#[test]
fn the_bound_holds_over_n_minus_one_cells_and_not_a_whole_period_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    let mut at = |offset: i64, quantity: &'static str| {
        cells.at(offset, "b", &["10", "1000", quantity, "BUCKETS", "4", "MS"])[0]
    };
    assert_eq!(at(249, "10"), 0);
    // Within (n − 1)·w = 750 ms of the first, nothing more.
    for offset in [250, 500, 749, 998, 999] {
        assert_eq!(at(offset, "1"), 1, "{offset}");
    }
    // Cell 0 leaves at 1,000: 751 ms after its units came, the whole limit fits again.
    assert_eq!(at(1_000, "10"), 0);
}

#[test]
fn another_period_or_count_of_cells_moves_units_only_later_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    // Cells of 250 ms: a unit in cell 0, two in cell 1.
    cells.at(10, "g", &["10", "1000", "1", "BUCKETS", "4", "MS"]);
    cells.at(260, "g", &["10", "1000", "2", "BUCKETS", "4", "MS"]);
    assert_eq!(cells.strlen("g"), 32 + 2);
    // Cells of 500 ms: both go to the cell of 499, which leaves at 1,000.
    assert_eq!(
        cells.at(300, "g", &["10", "1000", "0", "BUCKETS", "2", "MS"]),
        [0, 10, 7, -1, 700]
    );
    assert_eq!(
        cells.at(300, "g", &["10", "1000", "1", "BUCKETS", "2", "MS"]),
        [0, 10, 6, -1, 700]
    );
    assert_eq!(cells.strlen("g"), 32 + 2);
    // Cells of a second: everything moves to the cell that holds 999, leaving at 2,000.
    assert_eq!(
        cells.at(300, "g", &["10", "2", "0", "BUCKETS", "2"]),
        [0, 10, 6, -1, 2]
    );
    // The same width, fewer cells: only the last n′ count.
    cells.at(10, "s", &["10", "1000", "1", "BUCKETS", "4", "MS"]);
    cells.at(510, "s", &["10", "1000", "2", "BUCKETS", "4", "MS"]);
    assert_eq!(
        cells.at(510, "s", &["10", "500", "0", "BUCKETS", "2", "MS"]),
        [0, 10, 8, -1, 490]
    );
    // More cells of the same width: none is lost.
    assert_eq!(
        cells.at(510, "s", &["10", "2000", "0", "BUCKETS", "8", "MS"]),
        [0, 10, 7, -1, 1_990]
    );
    // Cells that hold more take more bytes: the limit grows past a byte's.
    cells.at(520, "s", &["100000", "2000", "70000", "BUCKETS", "8", "MS"]);
    assert_eq!(cells.strlen("s"), 32 + 8 * 4);
}

/// Cells narrower than the stored ones: the stored units go to the new cell that holds their
/// old cell's last millisecond, as the contract has it, so they count until that cell leaves,
/// up to one old cell past the new period; units admitted meanwhile join the newest cell.
#[test]
fn narrower_cells_hold_the_old_units_until_their_last_millisecond_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    // Two cells of 10 s: 9 units in cell 0, which ends at 9,999.
    cells.at(1_000, "n", &["10", "20000", "9", "BUCKETS", "2", "MS"]);
    let narrow = |quantity: &'static str| ["10", "2000", quantity, "BUCKETS", "2", "MS"];
    // Two cells of 1 s: the 9 units are in cell 9, which leaves at 11,000.
    assert_eq!(cells.at(1_500, "n", &narrow("0")), [0, 10, 1, -1, 9_500]);
    assert_eq!(cells.at(1_500, "n", &narrow("1")), [0, 10, 0, -1, 9_500]);
    assert_eq!(cells.at(10_999, "n", &narrow("1")), [1, 10, 0, 1, 1]);
    assert_eq!(cells.at(11_000, "n", &narrow("10")), [0, 10, 0, -1, 2_000]);
}

#[test]
fn refund_dry_run_and_cl_all_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    let five = |quantity: &'static str, flag: &'static str| {
        let mut args = vec!["5", "1000", quantity, "BUCKETS", "4", "MS"];
        args.extend((!flag.is_empty()).then_some(flag));
        args
    };
    cells.at(0, "r", &five("2", ""));
    cells.at(300, "r", &five("2", ""));
    // A dry run answers as the call would, and changes nothing.
    let before = dump(&mut cells.con, b"r");
    assert_eq!(cells.at(400, "r", &five("1", "DRYRUN")), [0, 5, 0, -1, 850]);
    assert_eq!(
        cells.at(400, "r", &five("2", "DRYRUN")),
        [1, 5, 1, 600, 850]
    );
    assert_eq!(dump(&mut cells.con, b"r"), before);
    // Three back: the two of cell 1 and one of cell 0, which leaves at 1,000.
    assert_eq!(cells.at(400, "r", &five("3", "REFUND")), [0, 5, 4, -1, 600]);
    assert_eq!(snapshot(&mut cells.con, b"r").1, BASE + 1_000);
    assert_eq!(cells.at(400, "r", &five("9", "REFUND")), [0, 5, 5, -1, 0]);
    assert_eq!(snapshot(&mut cells.con, b"r"), (None, -2));

    // CL.ALL decides a bucketed limiter as CL.WINDOW does, and writes the same bytes.
    server.set_clock_ms(BASE + 100);
    let all: Vec<Vec<i64>> = run(
        &mut cells.con,
        (
            "CL.ALL",
            &[
                "2", "a", "b", "WINDOW", "5", "1000", "BUCKETS", "4", "FIXED", "5", "1000",
                "QUANTITY", "2", "MS", "DETAIL",
            ],
        ),
    );
    assert_eq!(all, [[0, 5, 3, -1, 900], [0, 5, 3, -1, 1_000]]);
    cells.at(100, "c", &five("2", ""));
    assert_eq!(
        snapshot(&mut cells.con, b"a"),
        snapshot(&mut cells.con, b"c")
    );
}

/// A waiter on a full bucketed window is admitted when the cell that frees its units leaves,
/// not a millisecond before.
#[test]
fn a_waiter_is_admitted_when_a_cell_leaves_under_a_controlled_clock() {
    let server = Server::with_exact_fake_clock(BASE);
    let mut con = connect(&server);
    let args = ["q", "2", "1000", "1", "BUCKETS", "4", "MS"];
    assert_eq!(limiter(&mut con, "CL.WINDOW", &args)[0], 0);
    server.set_clock_ms(BASE + 300);
    assert_eq!(limiter(&mut con, "CL.WINDOW", &args)[0], 0);
    let waiter = Waiter::parked(
        &server,
        &mut con,
        1,
        "CL.WINDOW",
        &["q", "2", "1000", "1", "BUCKETS", "4", "MS", "BLOCK", "0"],
    );
    server.set_clock_ms(BASE + 999);
    std::thread::sleep(std::time::Duration::from_millis(150));
    assert_eq!(crate::harness::waiting::waiting_field(&mut con, "now"), 1);
    // Cell 0 leaves at 1,000: its unit is the waiter's.
    server.set_clock_ms(BASE + 1_000);
    let (reply, _) = waiter.reply();
    assert_eq!(reply, [0, 2, 0, -1, 1_000]);
}

/// "10,000 a month" in 30 cells of a day: a new key holds its first cell, the value grows a
/// cell a day, and a month of traffic leaves it at 32 bytes of header and 2 a cell, however
/// many calls came. At 8 bytes a cell, the widest, 1,024 cells take 32 + 8,192 bytes.
#[test]
fn a_month_of_ten_thousand_takes_a_few_bytes_whatever_the_traffic_under_a_controlled_clock() {
    const DAY: i64 = 86_400_000;
    let server = Server::with_exact_fake_clock(BASE);
    let mut cells = Cells::on(&server);
    let month = |quantity: &'static str| ["10000", "2592000", quantity, "BUCKETS", "30"];
    assert_eq!(cells.at(0, "api", &month("1"))[0], 0);
    assert_eq!(cells.strlen("api"), 32 + 2);
    for day in 0..40 {
        for quantity in ["100", "140"] {
            cells.at(day * DAY + 1_000, "api", &month(quantity));
        }
        let expected = 32 + 2 * (day + 1).min(30);
        assert_eq!(cells.strlen("api"), expected, "day {day}");
    }
    // The window holds the calls of the last 29 days, as the day of the reading has none.
    let reply = cells.at(40 * DAY, "api", &month("0"));
    assert_eq!(reply[..3], [0, 10_000, 10_000 - 29 * 240]);

    // A limit of 2^40: cells of 8 bytes.
    let wide = ["1099511627776", "1024", "1", "BUCKETS", "1024", "MS"];
    for ms in 0..1_024 {
        cells.at(50 * DAY + ms, "wide", &wide);
    }
    assert_eq!(cells.strlen("wide"), 32 + 1_024 * 8);
}

/// The first call's reset is the time to its cell's end plus the rest of the period: cells
/// start at multiples of their width since the epoch, not at the key's first call. Read
/// against the server's clock before and after each call, until a call's readings cannot
/// both fall on a cell's start (where a grid drawn from the first call would answer alike).
fn cells_are_aligned_to_the_epoch_whatever_the_first_call(flavor: Flavor) {
    let server = Server::start(flavor);
    let mut con = server.connection();
    let mut checked = 0;
    for attempt in 0..50 {
        let key = format!("aligned:{attempt}");
        let before = server_now_ns(&mut con) / 1_000_000;
        let reply = limiter(
            &mut con,
            "CL.WINDOW",
            &[&key, "10", "1000", "BUCKETS", "4", "MS"],
        );
        let after = server_now_ns(&mut con) / 1_000_000;
        let expected: Vec<i64> = (before..=after)
            .map(|t| (t.div_euclid(250) + 4) * 250 - t)
            .collect();
        assert!(
            expected.contains(&reply[4]),
            "{reply:?} not in {expected:?}"
        );
        if !expected.contains(&1_000) {
            checked += 1;
            if checked == 3 {
                return;
            }
        }
    }
    panic!("no call fell off a cell's start");
}
