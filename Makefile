# Entry points a new user needs; see README.md. Everything builds with CMake into ./build.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
# Tests at once: twice the cores. Most tests wait on child processes, sockets and fsyncs (the
# release suite keeps 2 cores 75% busy at -j2), and every test passes with two CPU-burning loops
# beside it (docs/ci.md), so the suites take the idle time.
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
DATA_DIR ?= ./data
LISTEN ?= 127.0.0.1:50051

.PHONY: deps configure build run run-cluster test test-release test-asan clean format lint bench fuzz-build fuzz fuzz-smoke \
	image stack-test task-image

deps:
	./scripts/install_deps.sh

# The release build's compilers: clang, with whose precompiled headers (their template
# instantiations included) a build takes half of gcc's time here (docs/ci.md). A build directory
# keeps the compilers it was first configured with; `make clean` first to switch. gcc builds it
# too: `make RELEASE_CC=gcc RELEASE_CXX=g++ BUILD_DIR=build-gcc build`.
RELEASE_CC ?= clang
RELEASE_CXX ?= clang++
configure: deps
	CC=$(RELEASE_CC) CXX=$(RELEASE_CXX) cmake -S . -B $(BUILD_DIR) -G Ninja \
		-DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs what is missing, builds, and starts the stack: the coordinator on an embedded RocksDB
# in ./data, the green and purple agents with the sample tasks; runs one sample evaluation and
# prints its score, then serves until Ctrl-C (scripts/run_stack.sh).
run: build
	BUILD_DIR=$(BUILD_DIR) DATA_DIR=$(DATA_DIR) LISTEN=$(LISTEN) ./scripts/run_stack.sh

# The same stack on a 3-member etcd cluster on loopback with two coordinator replicas
# (scripts/run_cluster.sh; data in ./data-cluster, kept across runs).
run-cluster: build
	BUILD_DIR=$(BUILD_DIR) ./scripts/run_cluster.sh

# ctest starts the tests it knows to be longest first. A fresh build directory knows none, so it
# starts from tests/ctest_costs.txt (seconds each, measured here; scripts/ctest_costs.sh writes it
# again): else a 100 s test may start last and the run waits for it alone.
seed_costs = mkdir -p $(1)/Testing/Temporary && { [ -f $(1)/Testing/Temporary/CTestCostData.txt ] || \
	cp tests/ctest_costs.txt $(1)/Testing/Temporary/CTestCostData.txt; }

# Installs what is missing, builds, and runs every test once, each on the build where it finds the
# most (docs/ci.md). On the release build: the tests labelled RELEASE_LABELS, whose subject the
# sanitizers do not look into or which test our code again on other ground: the etcd-cluster
# twins (tests of the store contract's users run again on etcd; their RocksDB originals and the
# etcd backend's own tests run under the sanitizers), the JavaScript SDK interop and the browser
# test (their subject is the foreign client or the page's script), the containers (the image
# holds the release binaries) and the ARIA drop-in scripts against their transcripts (compat:
# their subject is the scripts; the coordctl commands they drive run under the sanitizers in
# RetryBreakerProcessTest). Then every other test, every unit and process test of our own code,
# on the sanitizer build (test-asan). The release phase builds only what it runs
# (coord_release_tests, tests/CMakeLists.txt).
RELEASE_LABELS = ^(etcd_twin|interop|browser|containers|compat)$$
test: configure
	@start=$$(date +%s); cmake --build $(BUILD_DIR) --target coord_release_tests -j $(JOBS) && \
		echo "make: the release build took $$(( $$(date +%s) - start )) s"
	$(call seed_costs,$(BUILD_DIR))
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 --no-tests=error \
		-L '$(RELEASE_LABELS)'
	$(MAKE) test-asan

# Every test on the release build alone: one build, the quick loop while changing code.
test-release: build
	$(call seed_costs,$(BUILD_DIR))
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(TEST_JOBS) --timeout 600

# The sample task bundles (examples/) are left as they are: their ground truth names line numbers.
SOURCES = $$(git ls-files '*.h' '*.cc' ':!:examples/')

# The sanitizer build (build-asan): clang with AddressSanitizer + UndefinedBehaviorSanitizer and
# libFuzzer's coverage instrumentation. One build serves both `make test-asan` (the sanitizer part
# of `make test`) and the libFuzzer harnesses (`make fuzz`, fuzz/), so CI compiles the code twice
# (release and sanitizers), not three times. -O1 with line tables only: what ASan recommends, and
# quicker to build. A gcc ASan build without libFuzzer:
# `make BUILD_DIR=build-gcc-asan CMAKE_ARGS=-DCOORD_ASAN=ON test-release`.
SAN_BUILD_DIR ?= build-asan
SAN_CMAKE = CC=clang CXX=clang++ cmake -S . -B $(SAN_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" -DCOORD_FUZZ=ON $(CMAKE_ARGS)

# The sanitizers run what they add to (`make test` runs the rest on the release build):
# SAN_EXCLUDE_LABELS (ctest -LE) leaves out RELEASE_LABELS. SAN_EXCLUDE_LABELS= runs everything
# under them. docs/ci.md.
SAN_EXCLUDE_LABELS ?= $(RELEASE_LABELS)
test-asan: deps
	$(SAN_CMAKE)
	@start=$$(date +%s); cmake --build $(SAN_BUILD_DIR) -j $(JOBS) && \
		echo "make: the sanitizer build took $$(( $$(date +%s) - start )) s"
	$(call seed_costs,$(SAN_BUILD_DIR))
	cd $(SAN_BUILD_DIR) && LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp \
		ctest --output-on-failure -j $(TEST_JOBS) --timeout 600 \
		$(if $(SAN_EXCLUDE_LABELS),-LE '$(SAN_EXCLUDE_LABELS)')

# libFuzzer harnesses (fuzz/) from the sanitizer build. `make fuzz` runs each one for
# FUZZ_SECONDS on its seed corpus (new inputs go to a scratch copy, crashes are kept), FUZZ_JOBS
# at a time; fuzz-smoke is the short run CI does.
FUZZ_SECONDS ?= 20
FUZZ_JOBS ?= $(JOBS)
fuzz-build: deps
	$(SAN_CMAKE)
	cmake --build $(SAN_BUILD_DIR) --target fuzzers -j $(JOBS)

fuzz: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) ./fuzz/run.sh $(SAN_BUILD_DIR)/bin $(FUZZ_SECONDS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=10

# Benchmarks against the peers, side by side in one run (bench/run.sh, about 10-15 minutes):
# writes bench/RESULTS.md, bench/throughput.png and bench/results.jsonl.
# PostgreSQL is the bench's own dependency (its durable A2A peer), not the tests'.
bench: configure
	./scripts/install_deps.sh postgresql
	BUILD_DIR=$(BUILD_DIR) ./bench/run.sh

# The container image coordinator:latest (scripts/make_image.sh, docs/containers.md): the
# multi-stage build from source, or with IMAGE_FROM=build/bin only the runtime stage from
# binaries already built here (Debian 12), as CI does. Base images come from debootstrap, cached.
IMAGE_FROM ?=
image:
	./scripts/make_image.sh $(IMAGE_FROM)

# The stack of docker-compose.yml in containers, from the image `make image` built (IMAGE): an
# evaluation through a crash and restart of the coordinator's container and a `down` / `up`
# (tests/stack_test.sh; coordctl from $(BUILD_DIR)/bin drives it from the host). Exits 77 with
# "SKIPPED: ..." when no container engine works here.
IMAGE ?= coordinator:latest
stack-test:
	./tests/stack_test.sh $(BUILD_DIR)/bin $(IMAGE)

# The sample task image coordinator-task:latest that evaluations run in when the green agent
# starts a container per evaluation (docker/task-image.Dockerfile, from debian:bookworm-slim and
# the bundles in examples/tasks; docs/containers.md). Built only when missing or changed.
task-image:
	./docker/make_task_image.sh

format:
	clang-format -i $(SOURCES)

# Fails when a source file is not formatted as .clang-format says.
# A hex escape followed by a hex digit ("\xa9cho") reads as one escape: gcc takes the wrong byte
# silently, clang refuses it. Split such literals ("\xa9" "cho").
lint:
	clang-format --dry-run --Werror $(SOURCES)
	@! grep -nP '\\x[0-9A-Fa-f]{2}[0-9A-Fa-f]' $(SOURCES) || \
	  { echo 'lint: a hex escape runs into the next character (split the literal)'; exit 1; }

clean:
	rm -rf $(BUILD_DIR)
