# The two set-up commands (see README): `make run` and `make test`.
.PHONY: run test bench fuzz build dist clean

build:
	cargo build --release

run:
	bash scripts/run.sh

test:
	bash scripts/test.sh

fuzz:
	bash scripts/fuzz.sh

bench:
	bash scripts/bench.sh

dist:
	bash scripts/dist.sh

clean:
	cargo clean
	rm -rf .venv dist
