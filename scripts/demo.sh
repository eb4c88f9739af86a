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
./build/release/tools/unimem devices
# The demo: stencil2d (2048 x 2048, 50 steps) split over every OpenCL device by unimem, the bytes of
# each part derived from the kernel's source by the analysis (no descriptors), next to the
# hand-written multi-device OpenCL version: verified?, bytes vs the minimum and vs whole-buffer
# coherence, time vs the hand-written version, bookkeeping overhead (Matz et al.'s alpha/beta/gamma).
# Medians over 9 repetitions with their spread; both versions reuse their buffers, and the runs
# that allocate afresh every time are reported apart ("fresh").
./build/release/tools/unimem bench stencil2d --strategy lazy
# A timeline of a small traced run (every kernel partition, copy, host access per device lane):
# Chrome trace JSON for ui.perfetto.dev, drawn as a picture by `unimem trace`.
trace="$root/build/release/stencil2d_trace.json"
timeline="$root/build/release/stencil2d_timeline.png"
./build/release/tools/unimem bench stencil2d --small --strategy lazy --iters 1 --no-overhead \
  --no-allocation --json --trace "$trace" > /dev/null
./build/release/tools/unimem trace "$trace" -o "$timeline"
echo "demo: trace written to $trace (open it in https://ui.perfetto.dev)"
echo "demo: timeline picture written to $timeline"
