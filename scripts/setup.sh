#!/usr/bin/env bash
# Installs the Debian packages unimem needs (only those missing), for a fresh Debian 12 as root.
# Usage: scripts/setup.sh
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-15 libclang-common-15-dev clang-format clang-tidy
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  llvm-15-dev libclang-15-dev libisl-dev nlohmann-json3-dev libcairo2-dev valgrind
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} > 0)); then
  echo "unimem setup: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "unimem setup: these packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "unimem setup: all packages present"
fi
