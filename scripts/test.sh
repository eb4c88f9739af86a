#!/usr/bin/env bash
# README command 2: set up, build with sanitizers and run every test.
#   1. address+undefined sanitizer build (invariant checks on): the whole GoogleTest suite
#   2. thread sanitizer build: the tests labelled "concurrency"
#   3. libFuzzer targets (clang-15), each for UNIMEM_FUZZ_SECONDS (default 60) seconds
# Environment: UNIMEM_FUZZ_SECONDS, UNIMEM_SKIP_TSAN=1, UNIMEM_SKIP_FUZZ=1 (for quick local runs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
jobs=$(nproc)
fuzz_seconds=${UNIMEM_FUZZ_SECONDS:-60}
start=$(date +%s)
stage() { echo; echo "=== $* ($(($(date +%s) - start)) s elapsed)"; }

stage "address+undefined sanitizer build"
cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNIMEM_SANITIZE_ADDRESS=ON \
  -DUNIMEM_INVARIANT_CHECKS=ON -DUNIMEM_WARNINGS_AS_ERRORS=ON
cmake --build build/asan -j "$jobs"
stage "test suite (asan+ubsan)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# POCL and fontconfig keep state alive for the process: suppress exactly that (see the file).
export LSAN_OPTIONS=suppressions=$root/scripts/lsan.supp
ctest --test-dir build/asan -j "$jobs" --output-on-failure --timeout 1500

if [[ "${UNIMEM_SKIP_TSAN:-0}" != 1 ]]; then
  stage "thread sanitizer build"
  # Only the layers with concurrent code (the word mutex, device drivers, memory, coherence,
  # runtime) have concurrency tests; the LLVM-based analysis is single-threaded per call and is
  # left out of this build.
  cmake -S . -B build/tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DUNIMEM_SANITIZE_THREAD=ON \
    -DUNIMEM_INVARIANT_CHECKS=ON -DUNIMEM_BUILD_BENCHMARKS=OFF -DUNIMEM_WITH_ANALYSIS=OFF
  cmake --build build/tsan -j "$jobs" --target unimem_tests_common unimem_tests_device \
    unimem_tests_memory unimem_tests_coherence unimem_tests_api unimem_tests_selftest \
    unimem_tests_platform unimem_tests_pointer
  stage "concurrency tests (tsan)"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  ctest --test-dir build/tsan -j "$jobs" --output-on-failure -L concurrency --timeout 1500 \
    --no-tests=ignore
fi

if [[ "${UNIMEM_SKIP_FUZZ:-0}" != 1 ]]; then
  stage "libFuzzer build (clang-15)"
  CC=clang-15 CXX=clang++-15 cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DUNIMEM_SANITIZE_ADDRESS=ON -DUNIMEM_INVARIANT_CHECKS=ON -DUNIMEM_BUILD_FUZZERS=ON \
    -DUNIMEM_BUILD_TESTS=OFF -DUNIMEM_BUILD_BENCHMARKS=OFF -DUNIMEM_WITH_ANALYSIS=OFF \
    -DUNIMEM_WITH_OPENCL=OFF
  fuzz_targets=$(cd fuzz && ls ./*.cpp | sed 's|^./|unimem_fuzz_|; s|\.cpp$||')
  # shellcheck disable=SC2086
  cmake --build build/fuzz -j "$jobs" --target $fuzz_targets
  for f in build/fuzz/fuzz/unimem_fuzz_*; do
    [[ -x "$f" ]] || continue
    stage "fuzzing $(basename "$f") for ${fuzz_seconds} s"
    mkdir -p "build/fuzz/corpus/$(basename "$f")"
    "$f" -max_total_time="$fuzz_seconds" -print_final_stats=1 "build/fuzz/corpus/$(basename "$f")"
  done
fi
stage "all tests passed"
