# Redis with redis-cell loaded: `docker build -t redis-cell .` then
# `docker run -p 6379:6379 redis-cell`.

FROM rust:1-bookworm AS builder
RUN apt-get update \
 && apt-get install -y --no-install-recommends libclang-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
RUN cargo build --release --locked

FROM redis:7.4-bookworm
COPY --from=builder /src/target/release/libredis_cell.so /usr/local/lib/redis/modules/libredis_cell.so
EXPOSE 6379
# In a container the published port is the only way in; protected mode would refuse it.
CMD ["redis-server", "--protected-mode", "no", "--loadmodule", "/usr/local/lib/redis/modules/libredis_cell.so"]
