# gpufuzz: the make targets of the contract (cli.md). Everything builds in build/.
BUILD      ?= build
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

FUZZ_TIME    ?= 8h
FUZZ_BACKEND ?= auto
FUZZ_POLICY  ?= shipped
FUZZ_FAULTS  ?=
FUZZ_JOBS    ?= $(shell nproc)
FUZZ_OPS     ?= renderer
FUZZ_OUT     ?= findings
GPU_BUDGET   ?= 300

.PHONY: all deps configure build fuzz test test-gpu format clean

all: build

deps:
	@tools/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

fuzz: build
	$(BUILD)/bin/gpufuzz fuzz --time $(FUZZ_TIME) --backend $(FUZZ_BACKEND) \
	  --policy $(FUZZ_POLICY) $(if $(FUZZ_FAULTS),--faults $(FUZZ_FAULTS)) \
	  --jobs $(FUZZ_JOBS) --ops $(FUZZ_OPS) --out $(FUZZ_OUT)

test: build
	ctest --test-dir $(BUILD) -LE gpu --output-on-failure -j $(JOBS) --timeout 600

test-gpu: build
	tools/test-gpu $(BUILD) $(GPU_BUDGET)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu')

clean:
	rm -rf $(BUILD)
