#!/usr/bin/env bash
# Seed corpus for fuzz/fuzz_safetensors: the Python-written reference file
# and small hand-made files covering every dtype, scalars, empty tensors,
# metadata, padding and a few near-misses (overlap, gap, truncation).
#
#   tools/make_safetensors_seeds.sh OUTDIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
install -m 0644 "$here/../tests/golden/safetensors/python_written.safetensors" "$out/python_written.safetensors"

# Little-endian bytes of $1 as printf escapes, 8 bytes wide.
le64() {
  local value=$1 i s=""
  for ((i = 0; i < 8; i++)); do
    s+=$(printf '\\x%02x' $(((value >> (8 * i)) & 255)))
  done
  printf '%s' "$s"
}

# seed FILE HEADER DATA: the header length, HEADER, then DATA (printf escapes).
seed() {
  local file=$1 header=$2 data=$3
  {
    printf "$(le64 ${#header})"
    printf '%s' "$header"
    printf "$data"
  } >"$out/$file"
}

seed f32_2x2.safetensors '{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}' \
  '\x00\x00\x80\x3f\x00\x00\x00\xc0\x00\x00\xc0\x7f\x00\x00\x80\xff'
seed f64_scalar_meta.safetensors '{"__metadata__":{"step":"5","format":"synattn.checkpoint.v1"},"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}}    ' \
  '\x66\x66\x66\x66\x66\x66\xe6\x3f'
seed mixed.safetensors '{"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]},"c":{"dtype":"BF16","shape":[1],"data_offsets":[12,14]},"d":{"dtype":"U8","shape":[2],"data_offsets":[14,16]}}' \
  '\x00\x00\x00\x00\x00\x00\xf0\x3f\x01\x00\x00\x00\x80\x3f\x01\x02'
seed small_types.safetensors '{"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"I8","shape":[1],"data_offsets":[1,2]},"c":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[2,3]},"d":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[3,4]},"e":{"dtype":"I16","shape":[1],"data_offsets":[4,6]},"f":{"dtype":"U16","shape":[1],"data_offsets":[6,8]},"g":{"dtype":"F16","shape":[1],"data_offsets":[8,10]},"h":{"dtype":"U32","shape":[1],"data_offsets":[10,14]},"i":{"dtype":"I64","shape":[1],"data_offsets":[14,22]},"j":{"dtype":"U64","shape":[1],"data_offsets":[22,30]}}' \
  '\x01\xff\x38\x3c\x01\x00\x02\x00\x00\x3c\x03\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00'
seed empty_tensor.safetensors '{"e":{"dtype":"F32","shape":[0,3],"data_offsets":[0,0]},"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}' \
  '\x00\x00\x80\x3f'
seed no_tensors.safetensors '{}' ''
seed overlap.safetensors '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}' \
  '\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00'
seed gap.safetensors '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}' '\x00\x00\x00\x00\x00\x00\x80\x3f'
seed truncated.safetensors '{"a":{"dtype":"F64","shape":[4],"data_offsets":[0,32]}}' '\x00\x00\x00\x00\x00\x00\xf0\x3f'
seed duplicate.safetensors '{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}' '\x01\x02'

echo "wrote $(find "$out" -maxdepth 1 -name '*.safetensors' | wc -l) seeds to $out"
