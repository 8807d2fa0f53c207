pub mod args;
pub mod error;
pub mod gcra;
pub mod reply;
