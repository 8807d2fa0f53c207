//! The two Dockerfiles: Dockerfile.bundle is the Dockerfile's last stage with a module of
//! the release bundle in place of the compiled one, and is held to it here, where no Docker
//! engine is needed (the Docker lane builds and runs both, tests/it/docker.rs).

/// Where both images put the module.
const MODULE: &str = "/usr/local/lib/redis/modules/libredis_cell.so";

/// Dockerfile.bundle is the Dockerfile's last stage with the bundle's module for the build's:
/// the same base, port, command and place for the module.
#[test]
fn the_bundle_s_dockerfile_ends_as_the_dockerfile_does() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |name: &str| std::fs::read_to_string(format!("{root}/{name}")).unwrap();
    // From the last FROM on, without comments and with the module's source left out.
    let last_stage = |text: &str| -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let from = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
        lines[from..]
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.starts_with('#') && !l.starts_with("ARG "))
            .map(|l| match l.strip_prefix("COPY ") {
                Some(copy) => format!("COPY … {}", copy.rsplit(' ').next().unwrap()),
                None => l.to_string(),
            })
            .collect()
    };
    let built = last_stage(&read("Dockerfile"));
    assert_eq!(last_stage(&read("Dockerfile.bundle")), built);
    assert!(
        built.iter().any(|l| l == &format!("COPY … {MODULE}")),
        "{built:?}"
    );
    // And the same default base.
    let base = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("ARG SERVER_IMAGE="))
            .map(str::to_owned)
    };
    assert_eq!(base(&read("Dockerfile.bundle")), base(&read("Dockerfile")));
}
