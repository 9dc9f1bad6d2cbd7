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
# A NUL byte inside the header, with a second header behind it (a shell
# string cannot hold the NUL, so it is written between two halves).
nul_first='{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
nul_second='{"b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
{
  printf "$(le64 $((${#nul_first} + 1 + ${#nul_second})))"
  printf '%s' "$nul_first"
  printf '\x00'
  printf '%s' "$nul_second"
  printf '\x01'
} >"$out/nul_in_header.safetensors"

# Parser model metadata (parse/parser_model.hpp): parser.options and
# parser.vocabulary are JSON texts inside the header's JSON strings.
options='{\"num_words\":5,\"num_chars\":10,\"num_upos\":2,\"num_labels\":2,\"word_dim\":8,\"char_dim\":4,\"char_filters\":8,\"char_width\":3,\"use_chars\":true,\"d_model\":16,\"heads\":2,\"d_ff\":32,\"layers\":1,\"relative_bias\":true,\"bias_per_head\":true,\"absolute_positions\":true,\"arc_dim\":8,\"label_dim\":4,\"leaky_slope\":0.1,\"embedding_dropout\":0.33,\"encoder_dropout\":0.1,\"attention_dropout\":0.1,\"mlp_dropout\":0.33,\"upos_weight\":1.0,\"max_length\":512,\"seed\":1}'
vocabulary='{\"words\":[\"<pad>\",\"<unk>\",\"<root>\",\"the\",\"cat\"],\"word_counts\":[0,0,0,3,2],\"chars\":[97,99,101,104,116],\"upos\":[\"DET\",\"NOUN\"],\"labels\":[\"det\",\"root\"]}'
seed parser_model.safetensors "{\"__metadata__\":{\"format\":\"synattn.checkpoint.v1\",\"parser.format\":\"synattn.parser.v1\",\"parser.options\":\"$options\",\"parser.vocabulary\":\"$vocabulary\"},\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}" \
  '\x00\x00\x80\x3f'
# Near-misses: a missing key, wrong types, out-of-range and fractional numbers, a duplicate.
seed parser_bad_options.safetensors "{\"__metadata__\":{\"parser.options\":\"{\\\"num_words\\\":5,\\\"num_chars\\\":-1,\\\"heads\\\":2.5}\",\"parser.vocabulary\":\"{\\\"words\\\":[\\\"<pad>\\\",\\\"<unk>\\\",\\\"<root>\\\",\\\"a\\\",\\\"a\\\"],\\\"word_counts\\\":[0,0,0,1,1],\\\"chars\\\":[97],\\\"upos\\\":[],\\\"labels\\\":[\\\"dep\\\"]}\"}}" ''
# Numbers no integer field can hold (a plain cast of 1e300 to int is undefined behaviour).
seed parser_huge_numbers.safetensors "{\"__metadata__\":{\"parser.options\":\"{\\\"num_words\\\":1e300,\\\"seed\\\":-1}\",\"parser.vocabulary\":\"{\\\"words\\\":[\\\"<pad>\\\",\\\"<unk>\\\",\\\"<root>\\\"],\\\"word_counts\\\":[1e300,0,0],\\\"chars\\\":[-1e300],\\\"upos\\\":[],\\\"labels\\\":[\\\"dep\\\"]}\"}}" ''
seed parser_wrong_types.safetensors "{\"__metadata__\":{\"parser.options\":\"[1,2,3]\",\"parser.vocabulary\":\"{\\\"words\\\":\\\"none\\\",\\\"word_counts\\\":[],\\\"chars\\\":[-1],\\\"upos\\\":[],\\\"labels\\\":[]}\"}}" ''

echo "wrote $(find "$out" -maxdepth 1 -name '*.safetensors' | wc -l) seeds to $out"
