# Top-level entry points. `make demo` and `make test` do all set-up on a fresh
# Debian machine: missing packages are installed, then CMake/Ninja build and run.
# `make`, `make demo` and `make install` build the release flavour only (target og_release:
# no failpoints or test hooks); `make test` and `make bench` build everything, the testing
# flavour (-DOG_TESTING) the suites link included (docs/architecture.md, "Build flavours").
#   make test SANITIZE=1   build with ASan+UBSan (in build-san/) and run the suite
#   make test TSAN=1       build with ThreadSanitizer (in build-tsan/) and run the suites that
#                          start threads (ctest label threads)
#   make test CC=clang     build with clang (in build-clang/)
#   make bench             run the benchmarks in bench/
#   make format            apply .clang-format to every C file we write (ctest checks it)
#   make install           install the libraries, header, CLI and omnigraph.pc under PREFIX
#                          (default /usr/local; DESTDIR=... stages the files elsewhere)

SANITIZE ?= 0
TSAN ?= 0
BUILD_TYPE ?= RelWithDebInfo
CMAKE_ARGS :=

ifeq ($(SANITIZE),1)
BUILD ?= build-san
CMAKE_ARGS += -DOG_SANITIZE=ON
BUILD_TYPE := Debug
endif
ifeq ($(TSAN),1)
BUILD ?= build-tsan
CMAKE_ARGS += -DOG_TSAN=ON
BUILD_TYPE := RelWithDebInfo
CTEST_ARGS += -L threads
endif
ifneq ($(filter command line environment,$(origin CC)),)
BUILD ?= build-$(notdir $(CC))
CMAKE_ARGS += -DCMAKE_C_COMPILER=$(CC)
endif
BUILD ?= build
JOBS ?= 2
CTEST_ARGS ?=
PREFIX ?= /usr/local

.PHONY: all deps test-deps configure build build-all demo test bench fuzz fuzz-run install format clean

all: build

# deps: what the build and the demo need; test-deps adds what only the tests use
# (scripts/deps.sh says which).
deps:
	@scripts/deps.sh

test-deps:
	@scripts/deps.sh test

configure: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >/dev/null; \
	fi

build: configure
	@cmake --build $(BUILD) -j $(JOBS) --target og_release

build-all: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: test-deps build-all
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# libFuzzer targets (clang) in build-fuzz/; run one with scripts/fuzz.sh NAME SECONDS, or every
# one for FUZZ_SECONDS each on its seed corpus with `make fuzz-run` (CI does).
FUZZ_SECONDS ?= 15
fuzz: test-deps
	@if [ ! -f build-fuzz/build.ninja ]; then \
	  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DOG_FUZZ=ON >/dev/null; \
	fi
	@cmake --build build-fuzz -j $(JOBS) --target og_fuzzers

fuzz-run: fuzz
	@scripts/fuzz_all.sh build-fuzz $(FUZZ_SECONDS)

bench: build-all
	@bench/run.sh $(BUILD)

format: test-deps
	@git ls-files '*.c' '*.h' | grep -v '^src/lance/proto/' | xargs clang-format -i

install: build
	@cmake --install $(BUILD) --prefix "$(PREFIX)"

clean:
	rm -rf build build-san build-tsan build-clang build-gcc build-cc build-fuzz
