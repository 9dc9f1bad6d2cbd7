#!/usr/bin/env bash
# Seed corpus for fuzz/fuzz_parser_model: tiny parser models saved by the
# library (with and without characters and a tagger, F32 and F16) and copies
# whose metadata alone was edited (huge layers, d_ff, label_dim, max_length;
# heads that do not divide d_model; a fractional size) or whose label weights
# are huge. The fuzz target writes them itself (when SYNATTN_FUZZ_WRITE_SEEDS
# is set), so they always carry the parser's current tensor names.
#
#   tools/make_parser_model_seeds.sh OUTDIR [FUZZ_PARSER_MODEL_PROGRAM]
#   (the program defaults to build/fuzz/fuzz/fuzz_parser_model, the fuzz preset's)
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 OUTDIR [FUZZ_PARSER_MODEL_PROGRAM]" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
program=${2:-$root/build/fuzz/fuzz/fuzz_parser_model}
if [[ ! -x $program ]]; then
  echo "$0: $program is not built (cmake --build --preset fuzz --target fuzz_parser_model)" >&2
  exit 1
fi
mkdir -p "$out"
SYNATTN_FUZZ_WRITE_SEEDS=$out "$program"
# (Not the shipped model: at 4.5 MB every mutated copy would take its time
# to load, for tensor names the tiny models share.)
echo "$(ls "$out" | wc -l) seeds in $out"
