# iotame: the two commands a newcomer needs are `make demo` and `make test`.
.PHONY: setup build demo test test-all faults soak clean

setup:
	./scripts/setup.sh

build:
	cmake --build build -j2

demo: setup
	./scripts/demo.sh

# Every layer, the long matrices sampled (IOTAME_SAMPLE_SEED, default the day); test-all: every case of each, the
# fault matrix and the death cases included (docs/reliability.md, "Running the tests").
test: setup
	./tests/run_all.sh

test-all: setup
	IOTAME_FULL_MATRIX=1 ./tests/run_all.sh

# The whole fault matrix, the message faults, the HDF5 fault cases and every death case (make test runs a sample of
# each; docs/reliability.md).
faults: setup
	IOTAME_FULL_MATRIX=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/preload/test_fault_matrix.py \
	  tests/preload/test_message_faults.py tests/preload/test_hdf5_faults.py tests/preload/test_deaths.py
	IOTAME_FULL_MATRIX=1 .venv/bin/python -m pytest -q -p no:cacheprovider tests/openmpi/test_openmpi.py -k "fault_matrix or message_fault"

# Faults and the differential program in a loop for SOAK_MINUTES (default 60), then the counts; then, where the
# testbed's CephFS can run (root, the Ceph packages), the CephFS hang's IOR in a loop for SOAK_CEPH_MINUTES
# (default 20; docs/reliability.md, "The CephFS hang").
soak: setup
	IOTAME_SOAK_MINUTES=$${SOAK_MINUTES:-60} .venv/bin/python -m pytest -q -s -p no:cacheprovider \
	  tests/preload/test_fault_matrix.py -k test_soak
	IOTAME_SOAK_MINUTES=$${SOAK_CEPH_MINUTES:-20} .venv/bin/python -m pytest -q -s -p no:cacheprovider \
	  tests/testbed/test_cephfs.py -k test_the_issues_ior_ends_every_time

clean:
	rm -rf build .venv
