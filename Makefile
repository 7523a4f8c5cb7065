# Top-level entry points. `make demo` and `make test` do all set-up on a fresh
# Debian machine: missing packages are installed, then CMake/Ninja build and run.
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

.PHONY: all deps configure build demo test bench fuzz install format clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	@if [ ! -f $(BUILD)/build.ninja ]; then \
	  cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS) >/dev/null; \
	fi

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) $(CTEST_ARGS)

# libFuzzer targets (clang) in build-fuzz/; run one with scripts/fuzz.sh NAME SECONDS.
fuzz: deps
	@if [ ! -f build-fuzz/build.ninja ]; then \
	  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DOG_FUZZ=ON >/dev/null; \
	fi
	@cmake --build build-fuzz -j $(JOBS)

bench: build
	@bench/run.sh $(BUILD)

format: deps
	@git ls-files '*.c' '*.h' | grep -v '^src/lance/proto/' | xargs clang-format -i

install: build
	@cmake --install $(BUILD) --prefix "$(PREFIX)"

clean:
	rm -rf build build-san build-tsan build-clang build-gcc build-cc build-fuzz
