#!/usr/bin/env bash
# Seed corpus for fuzz/fuzz_attention: the target reads its choices through
# FuzzedDataProvider (flags and sizes from the end of the input, values from
# the front), so seeds are byte strings: a few constant patterns (all-zero:
# the smallest tame layer; 0x78: every value 0.0) and deterministic
# pseudo-random strings of several lengths (an LCG, so the corpus is the same
# on every machine).
#
#   tools/make_attention_seeds.sh OUTDIR
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
mkdir -p "$out"
export LC_ALL=C

# pattern FILE BYTE COUNT: COUNT copies of BYTE (decimal).
pattern() {
  awk -v b="$2" -v n="$3" 'BEGIN { for (i = 0; i < n; i++) printf "%c", b }' >"$out/$1"
}
# lcg FILE SEED COUNT: COUNT bytes of a 32-bit LCG's high bits.
lcg() {
  awk -v s="$2" -v n="$3" 'BEGIN { for (i = 0; i < n; i++) { s = (s * 1103515245 + 12345) % 2147483648; printf "%c", int(s / 8388608) } }' >"$out/$1"
}

pattern zeros_64 0 64
pattern zeros_2k 0 2048
pattern value0_2k 120 2048
pattern ones_1k 255 1024
pattern mid_1k 128 1024
for seed in 1 2 3 4 5 6 7 8 9 10 11 12; do
  lcg "lcg_${seed}_small" "$seed" $((200 + seed * 37))
  lcg "lcg_${seed}_large" "$((seed * 7919))" $((3000 + seed * 511))
done
echo "wrote $(ls "$out" | wc -l) seeds to $out"
