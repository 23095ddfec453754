# Entry points a new user needs; see README.md. Everything builds with CMake into ./build.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
DATA_DIR ?= ./data
LISTEN ?= 127.0.0.1:50051

.PHONY: deps configure build run test test-asan clean format lint bench fuzz-build fuzz fuzz-smoke

deps:
	./scripts/install_deps.sh

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Installs what is missing, builds, and starts the stack: the coordinator on an embedded RocksDB
# in ./data, the green and purple agents with the sample tasks; runs one sample evaluation and
# prints its score, then serves until Ctrl-C (scripts/run_stack.sh).
run: build
	BUILD_DIR=$(BUILD_DIR) DATA_DIR=$(DATA_DIR) LISTEN=$(LISTEN) ./scripts/run_stack.sh

# Installs what is missing, builds, and runs every test.
test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The sample task bundles (examples/) are left as they are: their ground truth names line numbers.
SOURCES = $$(git ls-files '*.h' '*.cc' ':!:examples/')

# Every test again on an AddressSanitizer + UndefinedBehaviorSanitizer build (in build-asan).
test-asan:
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp $(MAKE) BUILD_DIR=build-asan CMAKE_ARGS=-DCOORD_ASAN=ON test

# libFuzzer harnesses (fuzz/) on a clang ASan+UBSan build in build-fuzz. `make fuzz` runs each
# one for FUZZ_SECONDS on its seed corpus (new inputs go to a scratch copy, crashes are kept);
# fuzz-smoke is the short run CI does.
FUZZ_BUILD_DIR ?= build-fuzz
FUZZ_SECONDS ?= 20
fuzz-build: deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCOORD_FUZZ=ON
	cmake --build $(FUZZ_BUILD_DIR) --target fuzzers -j $(JOBS)

fuzz: fuzz-build
	./fuzz/run.sh $(FUZZ_BUILD_DIR)/bin $(FUZZ_SECONDS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=20

# Benchmarks against the peers, side by side in one run (bench/run.sh, about 10-15 minutes):
# writes bench/RESULTS.md, bench/throughput.png and bench/results.jsonl.
bench: configure
	BUILD_DIR=$(BUILD_DIR) ./bench/run.sh

format:
	clang-format -i $(SOURCES)

# Fails when a source file is not formatted as .clang-format says.
lint:
	clang-format --dry-run --Werror $(SOURCES)

clean:
	rm -rf $(BUILD_DIR)
