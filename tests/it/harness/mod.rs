//! The shared harness of the integration tests, by subject: the binaries (paths.rs), a server
//! process (server.rs), its fake clock (clock.rs), calls and readings (query.rs), replicas
//! and the AOF (replication.rs), a cluster (cluster.rs), seeded randomness (rng.rs), calls
//! that wait (waiting.rs), keyspace events (events.rs), Guava's RateLimiter (guava.rs).
#![allow(dead_code)]

pub mod clock;
pub mod cluster;
pub mod events;
pub mod guava;
pub mod paths;
pub mod query;
pub mod replication;
pub mod rng;
pub mod server;
pub mod waiting;

pub use paths::{conflicting_module_path, module_path, Flavor};
pub use query::{
    crate_version_number, dirty, dump, error_of, info_field, keyspace, limiter, log_lines,
    module_load, module_version, run, server_now_ns, snapshot, stats_field, stats_line, ServerKind,
};
pub use replication::{aof_options, replicate, resp_commands, wait_for_replica};
pub use rng::Rng;
pub use server::{DataDir, Options, Server};

/// One test body run against both servers: `both_servers!(name, body)` makes the tests
/// `name::redis` and `name::valkey`, each calling `body(Flavor)`.
#[macro_export]
macro_rules! both_servers {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[test]
                fn redis() {
                    super::$name($crate::harness::Flavor::Redis);
                }
                #[test]
                fn valkey() {
                    super::$name($crate::harness::Flavor::Valkey);
                }
            }
        )*
    };
}
