# gpufuzz: the make targets of the contract (docs/cli.md). Everything builds in build/.
BUILD      ?= build
JOBS       ?= $(shell nproc)
# Tests at once: three more than the cores, since a test waiting out a deadline leaves its core
# idle. On 2 cores a built suite took 345 s at 3 and 308 s at 5; at 8 a deadline-bound test failed
# (bench/RESULTS.md, "make test's jobs").
TEST_JOBS  ?= $(shell echo $$(( $$(nproc) + 3 )))
CMAKE_ARGS ?=

FUZZ_TIME    ?= 8h
FUZZ_BACKEND ?= auto
FUZZ_POLICY  ?= shipped
FUZZ_FAULTS  ?=
FUZZ_JOBS    ?= $(shell nproc)
FUZZ_OPS     ?= renderer
FUZZ_OUT     ?= findings
# Sequences a child runs in one process (--persistent): 1000 on cuda-async makes a night's run
# hundreds of times longer (bench/RESULTS.md).
FUZZ_PERSISTENT ?= 1
GPU_BUDGET   ?= 300
RUNTIME_ROOT ?= $(BUILD)/runtime-root

# Benchmarks: one executable of $(BUILD)/bin per line. Each writes
# bench/results/NAME-$(BENCH_TAG).json, NAME being the executable's name without gpufuzz-bench-.
BENCHES :=
BENCHES += gpufuzz-bench-teardown
BENCHES += gpufuzz-bench-throughput
BENCHES += gpufuzz-bench-generation
# Results are named for the machine: its GPU's name where nvidia-smi sees one, else `sim`.
BENCH_TAG  ?= $(or $(shell n=$$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null) && \
                echo "$$n" | head -n 1 | tr 'A-Z ' 'a-z-'),sim)
BENCH_ARGS ?=

.PHONY: all deps configure build fuzz test test-gpu test-tsan runtime-root bench format clean

all: build

deps:
	@tools/install-deps

# CMake's generator: Ninja once deps installed it, else make. A fresh build took 213 s with Ninja
# against 226 s with make (bench/RESULTS.md, "The first build").
GENERATOR  ?=
# $(call configure-in,DIR,OPTIONS): configures the build folder DIR. The generator is chosen when the
# recipe runs, since deps may have just installed Ninja.
configure-in = gen='$(GENERATOR)'; [ -n "$$gen" ] || { command -v ninja >/dev/null && gen=Ninja || gen='Unix Makefiles'; }; \
	cmake -S . -B $(1) -G "$$gen" -DCMAKE_BUILD_TYPE=RelWithDebInfo $(2) $(CMAKE_ARGS)

$(BUILD)/CMakeCache.txt: | deps
	$(call configure-in,$(BUILD),)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

fuzz: build
	$(BUILD)/bin/gpufuzz fuzz --time $(FUZZ_TIME) --backend $(FUZZ_BACKEND) \
	  --policy $(FUZZ_POLICY) $(if $(FUZZ_FAULTS),--faults $(FUZZ_FAULTS)) \
	  --jobs $(FUZZ_JOBS) --ops $(FUZZ_OPS) --persistent $(FUZZ_PERSISTENT) --out $(FUZZ_OUT) \
	  --html $(FUZZ_OUT)/report.html

test: build
	ctest --test-dir $(BUILD) -LE "gpu|rusticl|runtime-root" --output-on-failure -j $(TEST_JOBS) --timeout 600

# The build on current runtime releases, in a Debian 13 root (tools/runtime-root; as root, with
# the Debian archive reachable): made or reused at RUNTIME_ROOT, then the replays run inside it.
runtime-root: build
	GPUFUZZ_RUNTIME_ROOT=$(abspath $(RUNTIME_ROOT)) \
	  ctest --test-dir $(BUILD) -L runtime-root --output-on-failure --timeout 1800

test-gpu: build
	tools/test-gpu $(BUILD) $(GPU_BUDGET)

# gpufuzz and its runner under ThreadSanitizer, in a build of their own, race the runtimes on
# threaded campaigns (docs/threads.md). Not part of `make test`: a second build.
TSAN_BUILD ?= $(BUILD)-tsan
TSAN_RUNS  ?= 120
$(TSAN_BUILD)/CMakeCache.txt: | deps
	$(call configure-in,$(TSAN_BUILD),-DGPUFUZZ_SANITIZE=thread -DGPUFUZZ_BENCH=OFF)

test-tsan: deps $(TSAN_BUILD)/CMakeCache.txt
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target tsan-programs
	tests/tsan/tsan-campaigns $(TSAN_BUILD)/bin $(TSAN_RUNS)

# Each JSON is written beside its final name and moved there once complete, so a failed run leaves
# the previous results in place.
bench: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target $(BENCHES)
	@mkdir -p bench/results
	@set -e; for b in $(BENCHES); do \
	  out=bench/results/$${b#gpufuzz-bench-}-$(BENCH_TAG).json; \
	  echo "bench: $$b -> $$out"; \
	  $(BUILD)/bin/$$b --benchmark_out=$$out.tmp --benchmark_out_format=json $(BENCH_ARGS); \
	  mv $$out.tmp $$out; \
	done
	tools/plot-bench -o bench/results/teardown.svg bench/results/teardown-*.json
	tools/bench-summary bench/results/teardown-*.json
	cmake --build $(BUILD) -j $(JOBS) --target gpufuzz gpufuzz-runner
	bench/campaign-flat $(BUILD)/bin/gpufuzz bench/results/campaign-flat-$(BENCH_TAG).json
	bench/report-scale $(BUILD)/bin/gpufuzz bench/results/report-scale-$(BENCH_TAG).json
	bench/threads-throughput $(BUILD)/bin/gpufuzz bench/results/threads-throughput-$(BENCH_TAG).json

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu')

clean:
	rm -rf $(BUILD)
