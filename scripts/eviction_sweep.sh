#!/bin/bash
# Eviction sweep: every strategy, 1..16 devices, several seeds, cap 1536 (3 x 512) with 24 buffers.
BIN=${1:-build/dev/tools/unimem}; fail=0; runs=0; ev=0
for strat in lazy balance batch adaptive; do
  for dev in 1 2 3 5 8 16; do
    for seed in 1 2 3 4 5; do
      out=$($BIN selftest coherence --seed $seed --devices $dev --buffers 24 --device-memory 1536 --ops 200 --strategy $strat)
      runs=$((runs+1))
      echo "$out" | grep -q '"ok":true,' || { fail=$((fail+1)); echo "FAIL $strat $dev $seed $out"; }
      e=$(echo "$out" | sed 's/.*"evictions":\([0-9]*\).*/\1/'); ev=$((ev+e))
    done
  done
done
echo "runs=$runs failed=$fail evictions=$ev"
[ $fail -eq 0 ]
