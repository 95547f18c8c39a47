# gort - convenience targets over CMake.
#   make demo   build, then run the demo (scheduler under load, schedtrace)
#   make test   build and run the whole test suite with ctest
#   make bench  run the benchmarks against their Go peers (needs Go)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=

.PHONY: all build demo test bench clean

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/examples/demo

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

bench:
	bench/run.sh

clean:
	rm -rf $(BUILD)
