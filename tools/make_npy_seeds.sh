#!/usr/bin/env bash
# Seed corpus for fuzz/fuzz_npy: a few small golden arrays written by NumPy
# plus tiny hand-made files covering every dtype, the 2.0/3.0 headers and
# some near-misses (Fortran order, big endian, truncation).
#
#   tools/make_npy_seeds.sh OUTDIR
#
# The golden arrays are the repository's own (tests/golden/mha/tiny).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"

golden=$here/../tests/golden/mha/tiny
if [[ -d $golden ]]; then
  for name in x lengths heads_array scale table bq probs; do
    install -m 0644 "$golden/$name.npy" "$out/golden_tiny_$name.npy"
  done
else
  echo "warning: $golden not found; writing hand-made seeds only" >&2
fi

# Little-endian bytes of $1 as printf escapes, $2 bytes wide.
le_bytes() {
  local value=$1 width=$2 i s=""
  for ((i = 0; i < width; i++)); do
    s+=$(printf '\\x%02x' $(((value >> (8 * i)) & 255)))
  done
  printf '%s' "$s"
}

# seed FILE MAJOR DICT DATA: a header padded like NumPy's (data on a 64-byte
# boundary), then DATA given as printf escapes.
seed() {
  local file=$1 major=$2 dict=$3 data=$4
  local width=2
  ((major > 1)) && width=4
  local prefix=$((8 + width))
  local text=$((${#dict} + 1))
  local pad=$((64 - (prefix + text) % 64))
  local padding
  padding=$(printf '%*s' "$pad" '')
  {
    printf '\x93NUMPY'
    printf "$(printf '\\x%02x' "$major")\\x00"
    printf "$(le_bytes $((text + pad)) "$width")"
    printf '%s%s\n' "$dict" "$padding"
    printf "$data"
  } >"$out/$file"
}

dict() {  # dict DESCR SHAPE [FORTRAN]
  printf "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" "$1" "${3:-False}" "$2"
}

seed f4_2x2.npy 1 "$(dict '<f4' '(2, 2)')" '\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\xc0\x7f\x00\x00\x80\xff'
seed f8_0d.npy 1 "$(dict '<f8' '()')" '\x66\x66\x66\x66\x66\x66\xe6\x3f'
seed i1_3.npy 1 "$(dict '|i1' '(3,)')" '\x80\x00\x7f'
seed u1_2x1x2.npy 1 "$(dict '|u1' '(2, 1, 2)')" '\x00\x01\xfe\xff'
seed i2_2.npy 1 "$(dict '<i2' '(2,)')" '\xff\xff\x2c\x01'
seed i4_1.npy 1 "$(dict '<i4' '(1,)')" '\x00\x00\x00\x80'
seed i8_2x0.npy 1 "$(dict '<i8' '(2, 0)')" ''
seed v2_f8.npy 2 "$(dict '<f8' '(1,)')" '\x00\x00\x00\x00\x00\x00\xf0\x3f'
seed v3_i4.npy 3 "{'shape': (2,), 'descr': '<i4', 'fortran_order': False}" '\x01\x00\x00\x00\x02\x00\x00\x00'
seed fortran.npy 1 "$(dict '<f4' '(1, 2)' True)" '\x00\x00\x80\x3f\x00\x00\x00\x40'
seed big_endian.npy 1 "$(dict '>f8' '(1,)')" '\x3f\xf0\x00\x00\x00\x00\x00\x00'
# Values out of range for narrower types: int64 300 and -129 (int8 would wrap
# them), float64 1e300 (inf in float32).
seed i8_out_of_int8.npy 1 "$(dict '<i8' '(2,)')" '\x2c\x01\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff\xff\xff\xff\xff'
seed f8_1e300.npy 1 "$(dict '<f8' '(1,)')" '\x9c\x75\x00\x88\x3c\xe4\x37\x7e'
seed truncated.npy 1 "$(dict '<f8' '(4,)')" '\x00\x00\x00\x00\x00\x00\xf0\x3f'

echo "wrote $(find "$out" -maxdepth 1 -name '*.npy' | wc -l) seeds to $out"
