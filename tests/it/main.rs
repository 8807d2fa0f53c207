//! The integration tests, against real servers with the module loaded: one binary, so that
//! the harness compiles once. Each module is one subject; contract.rs states what every
//! command and flag shares, over the tables of forms.rs and calls.rs, and the others what is
//! particular to one command or one concern.

#[macro_use]
mod harness;

mod all;
mod atmost;
mod ban;
mod block;
mod buckets;
mod calls;
mod cluster;
mod contract;
mod countdenied;
mod docker;
mod dockerfiles;
mod dryrun;
mod examples;
mod exporter;
mod fixed;
mod forms;
mod guard;
mod lease;
mod library;
mod lifecycle;
mod operability;
mod randomized;
mod refund;
mod reliability;
mod smooth;
mod throttle;
mod top;
mod window;
