#!/usr/bin/env bash
# The pointer layer's fault handler and double mapping under AddressSanitizer and ThreadSanitizer
# (tests/pointer/sanitizers/): builds the handler, the mapping and a four-thread fault storm with
# each sanitizer, runs it, then makes it fault outside the mapping and checks that the sanitizer
# (the previous SIGSEGV handler) reports it. Usage: scripts/pointer_sanitizers.sh [CXX]
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${1:-g++}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
srcs="tests/pointer/sanitizers/fault_handler_under_sanitizers.cpp src/pointer/fault_handler.cpp src/pointer/host_mapping.cpp"
for san in address thread; do
  # shellcheck disable=SC2086
  $cxx -std=c++20 -O1 -g -fsanitize=$san -Isrc -Iinclude $srcs -o "$out/$san" -pthread
  echo "== $san: fault storm"
  "$out/$san"
  echo "== $san: a foreign fault reaches the sanitizer"
  if "$out/$san" foreign > "$out/log" 2>&1; then
    echo "FAILED: the foreign fault was swallowed"; exit 1
  fi
  grep -m1 -E "SEGV on unknown address|ThreadSanitizer:DEADLYSIGNAL|AddressSanitizer:DEADLYSIGNAL" "$out/log"
done
echo "pointer sanitizers: ok"
