# SPDX-License-Identifier: MIT
# gort - convenience targets over CMake.
#   make demo   build, then run the demo (scheduler under load, schedtrace)
#   make test   build and run the whole test suite with ctest
#   make bench  run the benchmarks against their Go peers (needs Go)
#   make soak   build, then run the soak program for SOAK_SECONDS over
#               GOMAXPROCS 1-4 (tests/soak/soak.sh; docs/testing.md)
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
SOAK_SECONDS ?= 600

.PHONY: all build demo test bench soak clean

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

soak: build
	tests/soak/soak.sh $(BUILD)/tests/soak $(SOAK_SECONDS)

clean:
	rm -rf $(BUILD)
