#!/bin/sh
# The awk programs below are single-quoted on purpose: awk, not the shell, expands $1.
# shellcheck disable=SC2016
#
# Writes a seed corpus for fuzz/fuzz_conllu.cpp into OUTDIR: one file per
# sentence of the bundled sample (examples/data/en_ewt-dev-sample.conllu),
# plus variants that hit each error path and each tolerated oddity (CRLF,
# BOM, no final newline, empty nodes, comment-only blocks).
#
# usage: tools/make_fuzz_seeds.sh OUTDIR
set -eu

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
out=$1
root=$(cd "$(dirname "$0")/.." && pwd)
sample="$root/examples/data/en_ewt-dev-sample.conllu"
[ -r "$sample" ] || { echo "$0: cannot read $sample" >&2; exit 1; }
mkdir -p "$out"

# One file per sentence (awk paragraph mode: records are separated by blank lines).
awk -v out="$out" 'BEGIN { RS = ""; ORS = "" }
  { n++; f = sprintf("%s/sentence-%02d.conllu", out, n); print $0 "\n\n" > f; close(f) }' "$sample"
count=$(find "$out" -maxdepth 1 -name 'sentence-*.conllu' | wc -l)
[ "$count" -eq 50 ] || { echo "$0: expected 50 sentences, wrote $count" >&2; exit 1; }

s1="$out/sentence-01.conllu"  # 7 words: heads 3 3 4 0 6 4 4, word 4 is the root
s2="$out/sentence-02.conllu"
s3="$out/sentence-03.conllu"

# variant NAME AWK-PROGRAM: sentence 1 edited column-wise (word lines have 10 tab-separated fields).
variant() {
  awk -F '\t' -v OFS='\t' "$2" "$s1" > "$out/variant-$1.conllu"
}
variant columns-7    '$1 == "3" { print $1, $2, $3, $4, $5, $6, $7; next } { print }'
variant columns-11   '$1 == "3" { print $0 "\textra"; next } { print }'
variant id-x3        '$1 == "3" { $1 = "x3" } { print }'
variant id-huge      '$1 == "2" { $1 = "99999999999" } { print }'
variant head-1a      '$1 == "2" { $7 = "1a" } { print }'
variant head-empty   '$1 == "2" { $7 = "" } { print }'
variant head-huge    '$1 == "2" { $7 = "4294967296" } { print }'
variant head-range   '$1 == "5" { $7 = "12" } { print }'
variant head-neg     '$1 == "5" { $7 = "-1" } { print }'
variant ids-skip     '$1 ~ /^[0-9]+$/ && $1 >= 4 { $1 = $1 + 1 } { print }'
variant ids-repeat   '$1 == "3" { $1 = "2" } { print }'
variant cycle        '$1 == "3" { $7 = "5" } $1 == "5" { $7 = "3" } { print }'
variant self-loop    '$1 == "2" { $7 = "2" } { print }'
variant two-roots    '$1 == "7" { $7 = "0" } { print }'
variant no-root      '$1 == "4" { $7 = "1" } { print }'
variant form-empty   '$1 == "2" { $2 = "" } { print }'
variant mwt-bad      '$1 == "2" { print "2-x\tthe\t_\t_\t_\t_\t_\t_\t_\t_" } { print }'
variant mwt-only     '/^#/ { print; next } /^$/ { print; next } NR == 5 { print "1-2\tFrom\t_\t_\t_\t_\t_\t_\t_\t_" }'
variant empty-node   '{ print } $1 == "4" { print "4.1\tcame\tcome\tVERB\t_\t_\t_\t_\t4:conj\t_" }'
# Non-canonical IDs and HEADs the reader refuses.
variant id-leading-zero '$1 == "3" { $1 = "03" } { print }'
variant head-minus-zero '$1 == "4" { $7 = "-0" } { print }'
variant head-leading-zero '$1 == "2" { $7 = "03" } { print }'
variant mwt-reversed '$1 == "2" { print "3-2\tthe\t_\t_\t_\t_\t_\t_\t_\t_" } { print }'
variant mwt-single '$1 == "2" { print "2-2\tthe\t_\t_\t_\t_\t_\t_\t_\t_" } { print }'
variant empty-node-zero '{ print } $1 == "4" { print "4.0\tcame\tcome\tVERB\t_\t_\t_\t_\t4:conj\t_" }'
variant spaces       '$1 ~ /^[0-9]+$/ { gsub(/\t/, " ") } { print }'

# Line-end and framing oddities the reader accepts.
awk '{ printf "%s\r\n", $0 }' "$s2" > "$out/variant-crlf.conllu"
# CR-only line ends (refused, with a hint).
awk '{ printf "%s\r", $0 }' "$s2" > "$out/variant-cr-only.conllu"
printf '%s' "$(cat "$s3")" > "$out/variant-no-final-newline.conllu"
{ printf '\357\273\277'; cat "$s1"; } > "$out/variant-bom.conllu"
{ printf '# newdoc id = only-comments\n\n \t\n\n'; cat "$s1" "$s2"; } > "$out/variant-comment-block.conllu"

# Several sentences with bad ones between good ones (lenient mode's path).
cat "$s1" "$out/variant-cycle.conllu" "$s2" "$out/variant-columns-7.conllu" "$s3" \
  > "$out/variant-mixed.conllu"

# Text still to be parsed (parse::ConlluDocument): HEAD '_' on every word
# (accepted, DEPREL kept as read), on some words only (refused), and '_'
# heads beside multiword tokens and empty nodes, after a parsed sentence.
variant heads-blank  '$1 ~ /^[0-9]+$/ { $7 = "_"; $8 = "_" } { print }'
variant heads-blank-deprel '$1 ~ /^[0-9]+$/ { $7 = "_" } { print }'
variant heads-some-blank '$1 == "3" { $7 = "_" } { print }'
variant heads-first-blank '$1 == "1" { $7 = "_" } { print }'
awk -F '\t' -v OFS='\t' '$1 ~ /^[0-9]+$/ { $7 = "_"; $8 = "_" } { print }' "$s2" > "$out/variant-heads-blank-2.conllu"
{ cat "$s1"; cat "$out/variant-heads-blank-2.conllu"; cat "$out/variant-mwt-single.conllu"; } \
  > "$out/variant-heads-blank-mixed.conllu"
awk -F '\t' -v OFS='\t' '$1 ~ /^[0-9]+$/ { $7 = "_" } { print }' "$out/variant-empty-node.conllu" \
  > "$out/variant-heads-blank-empty-node.conllu"
# A BOM at the start of a later sentence (only the file's first line may have one).
{ cat "$s1"; printf '\357\273\277'; cat "$s2"; } > "$out/variant-bom-later.conllu"

# Long sentences for the batching target (fuzz/fuzz_batch.cpp), beyond what
# mutation reaches: a 140-word chain (depth 139, so int8 distances
# saturate at 127 and the saturating kernels run; over 60 words, so outside
# the training subset) and a 140-word star (every word a child of word 1).
awk 'BEGIN { print "# sent_id = deep-chain"; for (i = 1; i <= 140; i++)
  printf "%d\tw%d\t_\tX\t_\t_\t%d\t%s\t_\t_\n", i, i % 7, i - 1, (i == 1 ? "root" : "dep:chain"); print "" }' \
  > "$out/variant-deep-chain.conllu"
awk 'BEGIN { print "# sent_id = wide-star"; for (i = 1; i <= 140; i++)
  printf "%d\tw%d\t_\tX\t_\t_\t%d\t%s\t_\t_\n", i, i % 5, (i == 1 ? 0 : 1), (i == 1 ? "root" : "dep"); print "" }' \
  > "$out/variant-wide-star.conllu"

# Token text (parse::read_token_text): one sentence a line, tokens between
# spaces and tabs. Made from the sample's forms, then the oddities it
# accepts (CRLF, BOM, blank lines, tabs, no final newline, UTF-8) and
# refuses (bad UTF-8, control characters, CR-only line ends).
awk -F '\t' 'BEGIN { RS = ""; ORS = "" }
  NR <= 5 { n = split($0, lines, "\n"); s = "";
    for (i = 1; i <= n; i++) { split(lines[i], f, "\t"); if (f[1] ~ /^[0-9]+$/) s = s (s == "" ? "" : " ") f[2] }
    print s "\n" }' "$sample" > "$out/tokens-sample.txt"
printf 'The cat sat .\n\n  \t \nIt\tslept\t.  \n' > "$out/tokens-blank-lines.txt"
printf 'The cat sat .\r\nIt slept .\r\n' > "$out/tokens-crlf.txt"
printf '\357\273\277The cat sat .\nIt slept .' > "$out/tokens-bom-no-final-newline.txt"
printf 'Caf\303\251 \344\270\255\346\226\207 \360\237\230\200 a\302\240b\n' > "$out/tokens-utf8.txt"
printf 'bad \300\257 overlong\n' > "$out/tokens-bad-utf8.txt"
printf 'surrogate \355\240\200\ncut \342\202\n' > "$out/tokens-bad-utf8-2.txt"
printf 'bell \007 here\n' > "$out/tokens-control.txt"
printf 'one line\rtwo lines\r' > "$out/tokens-cr-only.txt"
printf '# not a comment\n1 2 3\n_ _\n' > "$out/tokens-conllu-like.txt"

echo "wrote $count sentence seeds, $(find "$out" -maxdepth 1 -name 'variant-*.conllu' | wc -l) variants and $(find "$out" -maxdepth 1 -name 'tokens-*.txt' | wc -l) token texts to $out"
