#!/usr/bin/env bash
# README command 1: set up, build (release), run the main demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh
jobs=$(nproc)
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DUNIMEM_BUILD_TESTS=OFF \
  -DUNIMEM_BUILD_BENCHMARKS=OFF
cmake --build build/release -j "$jobs" --target unimem_cli
./build/release/tools/unimem --version
./build/release/tools/unimem about
