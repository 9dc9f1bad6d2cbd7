#!/usr/bin/env bash
# Seed corpus for fuzz/fuzz_checkpoint: checkpoints saved by the library
# (float and double, each optimiser, steps 0, 1 and 3, diverged runs saved on
# purpose, F16 weights) and mutated ones (truncated, wrong shapes and dtypes,
# huge or signed step counts, missing and unexpected tensors, another
# optimiser or format, NaN). The fuzz target writes them itself (when
# SYNATTN_FUZZ_WRITE_SEEDS is set), so they always carry its model's names.
#
#   tools/make_checkpoint_seeds.sh OUTDIR [FUZZ_CHECKPOINT_PROGRAM]
#   (the program defaults to build/fuzz/fuzz/fuzz_checkpoint, the fuzz preset's)
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 OUTDIR [FUZZ_CHECKPOINT_PROGRAM]" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
program=${2:-$root/build/fuzz/fuzz/fuzz_checkpoint}
if [[ ! -x $program ]]; then
  echo "$0: $program is not built (cmake --build --preset fuzz --target fuzz_checkpoint)" >&2
  exit 1
fi
mkdir -p "$out"
SYNATTN_FUZZ_WRITE_SEEDS=$out "$program"
