#!/bin/sh
# The awk programs below are single-quoted on purpose: awk, not the shell, expands $1.
# shellcheck disable=SC2016
#
# Writes a seed corpus for fuzz/fuzz_raw_text.cpp into OUTDIR: the bundled
# sample's sentences as raw text (examples/data/en_ewt-dev-sample.conllu's
# "# text" lines: one file each, and paragraphs of several), a few Chinese
# GSD test sentences, and the oddities the program accepts (CRLF, BOM,
# tabs, blank-line paragraphs, Unicode spaces, multiword tokens, text
# without punctuation past 250 tokens, input that looks like CoNLL-U) and
# refuses (invalid UTF-8, NUL and control bytes, no text). Each seed is at
# most a few KB, so libFuzzer's default length limit stays small.
#
# usage: tools/make_raw_text_seeds.sh OUTDIR
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
sample="$root/examples/data/en_ewt-dev-sample.conllu"
gsd="$root/data/ud/UD_Chinese-GSD/zh_gsd-ud-test.conllu"
for f in "$sample" "$gsd"; do
  [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 1; }
done
mkdir -p "$out"

# One file per sentence's text, and paragraphs of five sentences each.
awk -v out="$out" 'sub(/^# text = /, "") {
    n++; f = sprintf("%s/text-%02d.txt", out, n); print > f; close(f)
    p = sprintf("%s/paragraph-%02d.txt", out, int((n - 1) / 5) + 1); printf "%s ", $0 >> p; close(p) }' "$sample"
count=$(find "$out" -maxdepth 1 -name 'text-*.txt' | wc -l)
[ "$count" -eq 50 ] || { echo "$0: expected 50 sentences, wrote $count" >&2; exit 1; }
awk -v out="$out" 'sub(/^# text = /, "") && ++n <= 5 {
    f = sprintf("%s/chinese-%d.txt", out, n); print > f; close(f) }' "$gsd"

t1="$out/text-01.txt"
t2="$out/text-02.txt"
t3="$out/text-03.txt"

# Documents: paragraphs between blank lines, line breaks inside them.
{ cat "$t1" "$t2"; printf '\n'; cat "$t3"; } > "$out/doc-paragraphs.txt"
{ cat "$t2" | tr ' ' '\n'; } > "$out/doc-line-per-word.txt"
awk '{ printf "%s\r\n", $0 }' "$out/doc-paragraphs.txt" > "$out/doc-crlf.txt"
{ printf '\357\273\277'; cat "$t1"; } > "$out/doc-bom.txt"
printf '%s' "$(cat "$t3")" > "$out/doc-no-final-newline.txt"
printf 'Tabs\tbetween\twords .\n\n\n\n   Indented paragraph .  \n' > "$out/doc-tabs-blank-lines.txt"
# Multiword tokens and contractions the expander splits.
printf "Dr. Smith's team didn't finish. They can't, won't and shouldn't!\nI'm sure it's fine, isn't it?\n" \
  > "$out/doc-multiword.txt"
# Unicode: no-break and ideographic spaces, combining marks, emoji, RTL, a
# byte-order mark inside the text.
printf 'a\302\240b c\343\200\200d e\314\201f \360\237\230\200\360\237\221\215 \327\251\327\234\327\225\327\235 mid\357\273\277bom .\n' \
  > "$out/doc-unicode.txt"
printf '\302\240\343\200\200\342\200\250\n' > "$out/doc-only-unicode-spaces.txt"
# No punctuation: one sentence past 250 tokens, cut by the tokenizer.
awk 'BEGIN { for (i = 0; i < 400; i++) printf "word%d ", i % 13; print "" }' > "$out/doc-no-punctuation.txt"
awk 'BEGIN { for (i = 0; i < 300; i++) printf "don'"'"'t "; print "" }' > "$out/doc-many-contractions.txt"
# Input --format auto reads as CoNLL-U (the raw path still takes it as text).
printf '# sent_id = 1\n1\tHello\t_\t_\t_\t_\t0\troot\t_\t_\n\n' > "$out/doc-conllu-like.txt"
printf '1.5\tnot a word line\n' > "$out/doc-number-tab.txt"

# Refused: invalid UTF-8 (overlong, surrogate, cut sequence, stray
# continuation), a NUL byte, other control characters, no text.
printf 'bad \300\257 overlong\n' > "$out/bad-overlong.txt"
printf 'surrogate \355\240\200 here\n' > "$out/bad-surrogate.txt"
printf 'cut \342\202\n' > "$out/bad-cut.txt"
printf 'stray \200 continuation\n' > "$out/bad-continuation.txt"
printf 'nul \000 byte\n' > "$out/bad-nul.txt"
printf 'bell \007 and escape \033[0m\n' > "$out/bad-control.txt"
printf 'delete \177 byte\n' > "$out/bad-delete.txt"
printf ' \t\r\n\n  \n' > "$out/bad-only-whitespace.txt"
: > "$out/bad-empty.txt"

echo "wrote $(find "$out" -maxdepth 1 -type f | wc -l) raw-text seeds to $out"
