# fabricvp — top-level entry points. `make run` and `make test` work on a fresh
# Debian machine: missing packages are installed first (scripts/install-deps.sh).
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= 2
OUT        ?= out/groq-node

.PHONY: all deps build run test test-release test-asan bench reliability clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release > /dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# The default platform: a 64 MiB fp32 all-reduce on one GroqNode, checked, with its summary.
run: build
	$(BUILD)/bin/fabricvp run platforms/groq-node.yaml --workload allreduce --bytes 64MiB --dtype fp32 --out $(OUT)

# Whole suite: optimized build (gcc), then again under AddressSanitizer + UndefinedBehaviorSanitizer
# built by clang, with the libFuzzer targets and their smoke runs (tests/fuzz).
test: test-release test-asan

test-release: build
	cd $(BUILD) && ctest -j$(JOBS) --output-on-failure

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DFABRICVP_SANITIZE=ON \
		-DCMAKE_CXX_COMPILER=clang++ -DFABRICVP_FUZZ=ON > /dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		ctest -j$(JOBS) --output-on-failure

bench: build
	bench/run.sh $(BUILD)/bin/fabricvp

# docs/reliability.md's figures: determinism over every platform file, the
# BER sweep (about 4 min; add FUZZ_RUNS=1000000 and RUN_ASAN=1 for the rest).
reliability: build
	scripts/reliability.py --build $(BUILD) $(if $(FUZZ_RUNS),--fuzz-runs $(FUZZ_RUNS)) $(if $(RUN_ASAN),--run-asan)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) out
