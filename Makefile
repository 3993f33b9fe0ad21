# iotame: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: setup build demo test clean

setup:
	./scripts/setup.sh

build:
	cmake --build build -j2

demo: setup
	./scripts/demo.sh

test: setup
	./tests/run_all.sh

clean:
	rm -rf build .venv
