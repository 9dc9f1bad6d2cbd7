#!/usr/bin/env bash
# Installs what synattn needs to build its tests, examples and benchmarks on
# Debian (run as root, or with sudo available). Does nothing when everything
# is already there, so it is cheap to run before every build.
set -euo pipefail

# pkg-config: the packaging test checks the installed synattn.pc with it
# (dpkg-deb, which it also uses, is part of every Debian system).
# libsentencepiece-dev: the raw-text test trains a SentencePiece model to
# show word spans becoming subword distances.
# The Python package (python/, SYNATTN_PYTHON=AUTO) and its pytest suite:
# pybind11, NumPy and the headers to build it, torch, pytest and
# SentencePiece (the subword test trains a tiny model) to test it; pip and
# setuptools for `pip install --no-build-isolation --no-deps ./python`.
packages=(cmake ninja-build g++ make libeigen3-dev catch2 libbenchmark-dev nlohmann-json3-dev pkg-config
  libsentencepiece-dev
  python3-dev python3-pybind11 pybind11-dev python3-numpy python3-torch python3-pytest python3-sentencepiece
  python3-pip python3-setuptools)
# The fuzz preset needs clang with libFuzzer and its sanitizer runtimes.
if [[ "${SYNATTN_WITH_FUZZ:-0}" == 1 ]]; then
  packages+=(clang libclang-rt-dev)
fi
# The attention benchmark's extras: the `blas` preset (OpenBLAS), the
# PyTorch reference (Debian's python3-torch, run with /usr/bin/python3) and
# bench_attention's LibTorch peer (libtorch-dev, found by find_package(Torch)).
if [[ "${SYNATTN_WITH_BENCH_EXTRAS:-0}" == 1 ]]; then
  packages+=(libopenblas-dev python3-torch python3-numpy libtorch-dev)
fi
# The AArch64 cross build of the kernel tests, run under qemu-user
# (tools/toolchains/aarch64-linux-gnu.cmake).
if [[ "${SYNATTN_WITH_AARCH64:-0}" == 1 ]]; then
  packages+=(g++-aarch64-linux-gnu qemu-user)
fi

# Data-parallel training across processes (synattn::mpi, its tests and
# `mpirun -np P train_deprel`): Open MPI. The release preset finds it and
# registers the MPI tests when it is installed.
if [[ "${SYNATTN_WITH_MPI:-0}" == 1 ]]; then
  packages+=(openmpi-bin libopenmpi-dev)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
