# Redis with redis-cell loaded: `docker build -t redis-cell .`, then
# `docker run -p 6379:6379 redis-cell`. The two base images are build arguments: the Rust
# image the module is built in, and the server image it is loaded into (Valkey: see
# docs/operations.md, "Docker"). Their defaults are the official images.
ARG BUILDER_IMAGE=rust:1-bookworm
ARG SERVER_IMAGE=redis:7.4-bookworm

FROM ${BUILDER_IMAGE} AS builder
# redis-module runs bindgen, which needs libclang.
RUN if ! ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1; then \
      apt-get update \
      && apt-get install -y --no-install-recommends libclang-dev \
      && rm -rf /var/lib/apt/lists/*; \
    fi
WORKDIR /src
# What .dockerignore lets in: the manifest, the lock, the sources, and .cargo (and vendor/
# when the crates are vendored).
COPY . .
# A context that carries vendored crates (vendor/, and the .cargo/config.toml that
# `cargo vendor` prints) builds offline from them; any other fetches from crates.io.
RUN if [ -d vendor ]; then offline=--offline; fi; \
    cargo build --release --locked ${offline:-}

FROM ${SERVER_IMAGE}
COPY --from=builder /src/target/release/libredis_cell.so /usr/local/lib/redis/modules/libredis_cell.so
EXPOSE 6379
# In a container the published port is the only way in; protected mode would refuse it. The
# image's entrypoint runs redis-server as its own user, not as root.
CMD ["redis-server", "--protected-mode", "no", "--loadmodule", "/usr/local/lib/redis/modules/libredis_cell.so"]
