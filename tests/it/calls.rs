//! Every command and every flag, each as a short run of calls on one key: what the shared
//! checks of writes (key specs, ACL, events, MULTI and scripts) go over. The limiter forms of
//! forms.rs come in plain; each flag comes once, on one form, so that the table grows by one
//! row per flag, not by every combination.

use crate::forms::{Algorithm, Form, FORMS};

/// Where a call's key goes in a step; contract.rs's script swaps it for `KEYS[1]`.
pub const KEY: &str = "{key}";

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A limiter form with no option: two units fit an hour, the third is denied, then a
    /// peek.
    Plain(Form),
    /// CL.LEASE, or CL.ALL deciding a LEASE limiter: two slots, the third holder denied.
    Lease {
        in_all: bool,
    },
    /// Two leases, one given back, then given back again (nothing left to give).
    Release,
    /// A lease, then its holders read in both units.
    Holders,
    Ms,
    /// A refund writes differently for each algorithm, so each has its row.
    Refund(Algorithm),
    DryRun,
    CountDenied,
    Block,
}

impl Call {
    /// Every row: each limiter form, each lease command, each flag.
    pub fn all() -> Vec<Call> {
        let mut calls: Vec<Call> = FORMS.into_iter().map(Call::Plain).collect();
        calls.extend([
            Call::Lease { in_all: false },
            Call::Lease { in_all: true },
            Call::Release,
            Call::Holders,
            Call::Ms,
            Call::Refund(Algorithm::Throttle),
            Call::Refund(Algorithm::Fixed),
            Call::Refund(Algorithm::Window),
            Call::Refund(Algorithm::Buckets),
            Call::DryRun,
            Call::CountDenied,
            Call::Block,
        ]);
        calls
    }

    /// For messages and key names.
    pub fn name(self) -> String {
        match self {
            Call::Plain(form) => form.name(),
            Call::Lease { in_all: false } => "CL.LEASE".into(),
            Call::Lease { in_all: true } => "CL.ALL LEASE".into(),
            Call::Release => "CL.RELEASE".into(),
            Call::Holders => "CL.HOLDERS".into(),
            Call::Ms => "CL.THROTTLE MS".into(),
            Call::Refund(algorithm) => format!("{} REFUND", Form::single(algorithm).name()),
            Call::DryRun => "CL.ALL FIXED DRYRUN".into(),
            Call::CountDenied => "CL.FIXED COUNTDENIED".into(),
            Call::Block => "CL.THROTTLE BLOCK".into(),
        }
    }

    /// The calls, in order, each a whole command with `KEY` where the key goes.
    pub fn steps(self) -> Vec<Vec<String>> {
        let on_key = |form: Form, params: &[String], quantity: Option<&str>, options: &[&str]| {
            let mut words = vec![form.command().to_owned()];
            words.extend(form.text_args(KEY, params, quantity, options));
            words
        };
        let words =
            |words: &[&str]| -> Vec<String> { words.iter().map(|w| w.to_string()).collect() };
        let lease = |holder: &str| words(&["CL.LEASE", KEY, "2", "3600", holder]);
        let throttle = Form::single(Algorithm::Throttle);
        match self {
            // Then a peek, which fires nothing.
            Call::Plain(form) => {
                let params = form.algorithm.params(2, "3600");
                let mut steps = vec![on_key(form, &params, None, &[]); 3];
                steps.push(on_key(form, &params, Some("0"), &[]));
                steps
            }
            Call::Lease { in_all: false } => ["a", "b", "c"].map(lease).to_vec(),
            Call::Lease { in_all: true } => ["a", "b", "c"]
                .map(|holder| words(&["CL.ALL", "1", KEY, "LEASE", "2", "3600", "HOLDER", holder]))
                .to_vec(),
            Call::Release => vec![
                lease("a"),
                lease("b"),
                words(&["CL.RELEASE", KEY, "a"]),
                words(&["CL.RELEASE", KEY, "a"]),
            ],
            Call::Holders => vec![
                lease("a"),
                words(&["CL.HOLDERS", KEY]),
                words(&["CL.HOLDERS", KEY, "MS"]),
            ],
            Call::Ms => {
                let params = throttle.algorithm.params(2, "3600000");
                vec![on_key(throttle, &params, None, &["MS"]); 3]
            }
            // Two units taken, then given back one at a time, and once more with nothing left
            // to give. A TAT given back to now would expire at once, so CL.THROTTLE gives back
            // only one.
            Call::Refund(algorithm) => {
                let form = Form::single(algorithm);
                let params = algorithm.params(3, "3600");
                let refunds = if algorithm == Algorithm::Throttle {
                    1
                } else {
                    3
                };
                let mut steps = vec![on_key(form, &params, Some("2"), &[])];
                steps.extend(vec![on_key(form, &params, Some("1"), &["REFUND"]); refunds]);
                steps
            }
            Call::DryRun => {
                let all = Form::all(Algorithm::Fixed);
                let params = all.algorithm.params(2, "3600");
                let (call, dry) = (
                    on_key(all, &params, None, &[]),
                    on_key(all, &params, None, &["DRYRUN"]),
                );
                vec![call.clone(), dry.clone(), call, dry]
            }
            // More than the limit on an empty key: denied, yet counted, so the window opens
            // and the next calls are denied too (uncounted, they would be admitted).
            Call::CountDenied => {
                let fixed = Form::single(Algorithm::Fixed);
                let params = fixed.algorithm.params(2, "3600");
                ["3", "1", "1"]
                    .map(|quantity| on_key(fixed, &params, Some(quantity), &["COUNTDENIED"]))
                    .to_vec()
            }
            // The third waits its 10 ms alone, and answers at once in a transaction or a
            // script.
            Call::Block => {
                let params = throttle.algorithm.params(2, "3600");
                vec![on_key(throttle, &params, None, &["BLOCK", "10"]); 3]
            }
        }
    }

    /// The steps on `key`.
    pub fn steps_on(self, key: &str) -> Vec<Vec<String>> {
        self.steps()
            .into_iter()
            .map(|step| {
                step.into_iter()
                    .map(|word| if word == KEY { key.to_owned() } else { word })
                    .collect()
            })
            .collect()
    }

    /// The keyspace events the steps fire on their key, in order: those of the server
    /// commands each write stands in for, and none for a peek, a denial or a dry run.
    pub fn fired(self) -> &'static [&'static str] {
        const TWO_SETS: &[&str] = &["set", "expire", "set", "expire"];
        const TWO_LEASES: &[&str] = &["cl.lease", "expire", "cl.lease", "expire"];
        match self {
            Call::Plain(form) => match form.algorithm {
                Algorithm::Throttle => TWO_SETS,
                // Opens a window, then counts into it.
                Algorithm::Fixed => &["incrby", "expire", "incrby"],
                Algorithm::Window => &["cl.window", "expire", "cl.window", "expire"],
                // The second call counts into the newest cell: the expiry stays.
                Algorithm::Buckets => &["cl.window", "expire", "cl.window"],
            },
            Call::Lease { .. } => TWO_LEASES,
            Call::Release => &[
                "cl.lease",
                "expire",
                "cl.lease",
                "expire",
                "cl.release",
                "expire",
            ],
            Call::Holders => &["cl.lease", "expire"],
            Call::Ms | Call::Block => TWO_SETS,
            Call::Refund(Algorithm::Throttle) => TWO_SETS,
            // A lower count keeps its expiry, as DECRBY does; the second refund empties the
            // key, and the third has nothing to give back.
            Call::Refund(Algorithm::Fixed) => &["incrby", "expire", "decrby", "del"],
            // The first refund leaves the newest cell the newest: the expiry stays.
            Call::Refund(Algorithm::Buckets) => &["cl.window", "expire", "cl.window", "del"],
            Call::Refund(Algorithm::Window) => {
                &["cl.window", "expire", "cl.window", "expire", "del"]
            }
            Call::DryRun => &["incrby", "expire", "incrby"],
            // A counted denial adds to the count as INCRBY would, and opens a window.
            Call::CountDenied => &["incrby", "expire", "incrby", "incrby"],
        }
    }
}
