//! Every limiter form the shared contract runs over: the single-key limiters (CL.WINDOW exact
//! and with `BUCKETS n`), and CL.ALL deciding each of them. A form builds its own call, with
//! its keys where it takes them, so that one test body states a contract once for all eight.

/// A limiter's algorithm, as its own command and as a CL.ALL limiter keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    Throttle,
    Fixed,
    Window,
    /// CL.WINDOW with `BUCKETS n`: its options name the cells.
    Buckets,
}

/// The cells of the bucketed form: they cut every period the tests use (whole seconds, or
/// milliseconds in multiples of 4).
pub const BUCKETS: &str = "4";

impl Algorithm {
    /// The algorithm a CL.ALL limiter keyword names.
    pub fn of(keyword: &str) -> Algorithm {
        match keyword {
            "THROTTLE" => Algorithm::Throttle,
            "FIXED" => Algorithm::Fixed,
            _ => Algorithm::Window,
        }
    }

    pub fn command(self) -> &'static str {
        match self {
            Algorithm::Throttle => "CL.THROTTLE",
            Algorithm::Fixed => "CL.FIXED",
            Algorithm::Window | Algorithm::Buckets => "CL.WINDOW",
        }
    }

    pub fn keyword(self) -> &'static str {
        match self {
            Algorithm::Throttle => "THROTTLE",
            Algorithm::Fixed => "FIXED",
            Algorithm::Window | Algorithm::Buckets => "WINDOW",
        }
    }

    /// The options that make the limiter what it is, after its numbers: `BUCKETS n`.
    pub fn options(self) -> &'static [&'static str] {
        match self {
            Algorithm::Buckets => &["BUCKETS", BUCKETS],
            _ => &[],
        }
    }

    /// The parameters for `limit` units per `period`: a GCRA with a burst of `limit` that
    /// refills one unit per period, or a window of `limit` units.
    pub fn params(self, limit: i64, period: &str) -> Vec<String> {
        match self {
            Algorithm::Throttle => vec![(limit - 1).to_string(), "1".into(), period.into()],
            Algorithm::Fixed | Algorithm::Window | Algorithm::Buckets => {
                vec![limit.to_string(), period.into()]
            }
        }
    }
}

/// One way to call a limiter: its own command, or CL.ALL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Form {
    pub algorithm: Algorithm,
    pub in_all: bool,
}

pub const FORMS: [Form; 8] = [
    Form::single(Algorithm::Throttle),
    Form::single(Algorithm::Fixed),
    Form::single(Algorithm::Window),
    Form::single(Algorithm::Buckets),
    Form::all(Algorithm::Throttle),
    Form::all(Algorithm::Fixed),
    Form::all(Algorithm::Window),
    Form::all(Algorithm::Buckets),
];

impl Form {
    pub const fn single(algorithm: Algorithm) -> Form {
        Form {
            algorithm,
            in_all: false,
        }
    }

    pub const fn all(algorithm: Algorithm) -> Form {
        Form {
            algorithm,
            in_all: true,
        }
    }

    /// The command the form calls.
    pub fn command(self) -> &'static str {
        if self.in_all {
            "CL.ALL"
        } else {
            self.algorithm.command()
        }
    }

    /// `CL.FIXED`, or `CL.ALL FIXED`: for messages and key names.
    pub fn name(self) -> String {
        let options = self.algorithm.options().join(" ");
        let name = if self.in_all {
            format!("CL.ALL {}", self.algorithm.keyword())
        } else {
            self.command().to_owned()
        };
        if options.is_empty() {
            name
        } else {
            format!("{name} {options}")
        }
    }

    /// How many keys one call may take.
    pub fn max_keys(self) -> usize {
        if self.in_all {
            16
        } else {
            1
        }
    }

    /// The arguments of a call on `keys` (one, unless the form takes more), each with the
    /// limiter `params`, taking `quantity` (its default when `None`), then `options` (`MS`).
    pub fn args(
        self,
        keys: &[&[u8]],
        params: &[String],
        quantity: Option<&str>,
        options: &[&str],
    ) -> Vec<Vec<u8>> {
        assert!(
            (1..=self.max_keys()).contains(&keys.len()),
            "{} takes 1 to {} keys",
            self.name(),
            self.max_keys()
        );
        let words = |words: &[&str]| -> Vec<Vec<u8>> {
            words.iter().map(|word| word.as_bytes().to_vec()).collect()
        };
        let params: Vec<&str> = params.iter().map(String::as_str).collect();
        let mut args = Vec::new();
        if self.in_all {
            args.push(keys.len().to_string().into_bytes());
            args.extend(keys.iter().map(|key| key.to_vec()));
            for _ in keys {
                args.push(self.algorithm.keyword().as_bytes().to_vec());
                args.extend(words(&params));
                args.extend(words(self.algorithm.options()));
            }
            if let Some(quantity) = quantity {
                args.extend(words(&["QUANTITY", quantity]));
            }
        } else {
            args.push(keys[0].to_vec());
            args.extend(words(&params));
            args.extend(quantity.map(|quantity| quantity.as_bytes().to_vec()));
            args.extend(words(self.algorithm.options()));
        }
        args.extend(words(options));
        args
    }

    /// The arguments of a call on one key that waits up to `timeout_ms` (`BLOCK`), as text,
    /// for a waiter to send.
    pub fn waiting_args(
        self,
        key: &str,
        params: &[String],
        quantity: Option<&str>,
        timeout_ms: &str,
    ) -> Vec<String> {
        self.text_args(key, params, quantity, &["BLOCK", timeout_ms])
    }

    /// The arguments of a call on one key, as text.
    pub fn text_args(
        self,
        key: &str,
        params: &[String],
        quantity: Option<&str>,
        options: &[&str],
    ) -> Vec<String> {
        self.args(&[key.as_bytes()], params, quantity, options)
            .into_iter()
            .map(|word| String::from_utf8(word).expect("text arguments"))
            .collect()
    }

    /// A call as a command ready to send.
    pub fn cmd(
        self,
        keys: &[&[u8]],
        params: &[String],
        quantity: Option<&str>,
        options: &[&str],
    ) -> redis::Cmd {
        let mut cmd = redis::cmd(self.command());
        cmd.arg(self.args(keys, params, quantity, options));
        cmd
    }

    /// Calls the limiter on one key and returns its five integers.
    pub fn call(
        self,
        con: &mut impl redis::ConnectionLike,
        key: &str,
        params: &[String],
        quantity: Option<&str>,
    ) -> Vec<i64> {
        let reply = self
            .cmd(&[key.as_bytes()], params, quantity, &[])
            .query(con)
            .unwrap_or_else(|e| panic!("{} {key}: {e}", self.name()));
        self.as_exact(reply, params)
    }

    /// Gives `quantity` back on one key (`REFUND`) and returns its five integers.
    pub fn refund(
        self,
        con: &mut impl redis::ConnectionLike,
        key: &str,
        params: &[String],
        quantity: &str,
    ) -> Vec<i64> {
        self.call_with(con, key, params, quantity, &["REFUND"])
    }

    /// Calls the limiter on one key with these options (`REFUND`, `DRYRUN`) and returns its
    /// five integers.
    pub fn call_with(
        self,
        con: &mut impl redis::ConnectionLike,
        key: &str,
        params: &[String],
        quantity: &str,
        options: &[&str],
    ) -> Vec<i64> {
        let reply = self
            .cmd(&[key.as_bytes()], params, Some(quantity), options)
            .query(con)
            .unwrap_or_else(|e| panic!("{} {key} {options:?}: {e}", self.name()));
        self.as_exact(reply, params)
    }

    /// A reply read as the exact window's: the bucketed form's units leave when their cell
    /// does, within the last cell of the period after they came, so a wait of the whole period
    /// reads as one more than `period − period / n` (units rounded up), never more than the
    /// period. Those waits become the period; any other is left as it is, and fails where the
    /// exact window's would differ. The exact values are tests/it/buckets.rs's, under a
    /// controlled clock.
    pub fn as_exact(self, mut reply: Vec<i64>, params: &[String]) -> Vec<i64> {
        if self.algorithm != Algorithm::Buckets {
            return reply;
        }
        let period: i64 = params[1].parse().expect("a period");
        let cells: i64 = BUCKETS.parse().expect("a count of cells");
        for wait in reply.iter_mut().skip(3) {
            if (period - period / cells + 1..=period).contains(wait) {
                *wait = period;
            }
        }
        reply
    }

    /// The error a call on one key answers with; panics if it succeeds.
    pub fn error(
        self,
        con: &mut redis::Connection,
        key: &[u8],
        params: &[String],
        quantity: Option<&str>,
    ) -> String {
        let args = self.args(&[key], params, quantity, &[]);
        let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        crate::harness::error_of(con, self.command(), &args)
    }
}
