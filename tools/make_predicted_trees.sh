#!/usr/bin/env bash
# Predicted trees for UD English EWT, jackknifed, so that train_deprel can
# train and evaluate on trees a parser drew (examples/train_deprel, --train-trees
# and --dev-trees; docs/experiment.md "Trees a parser drew").
#
# Train is split into FOLDS folds round-robin (sentence k goes to fold k mod
# FOLDS). For each fold a parser is trained on the other folds and parses
# that fold, so no training sentence is parsed by a model that saw its gold
# tree; dev is parsed by a parser trained on all of train. Every parser uses
# EWT dev for early stopping, as `parse train` always does. The outputs
# keep only what the trees need: the sent_id comment and, per word, ID,
# FORM, HEAD and DEPREL (the other columns '_'), xz-compressed:
#
#   OUT/en_ewt-train.seedS.conllu.xz   every train sentence, in train's order
#   OUT/en_ewt-dev.seedS.conllu.xz     every dev sentence
#   OUT/en_ewt.seedS.log               the parsers' training logs and scores
#
#   tools/make_predicted_trees.sh [--parse PROG] [--out DIR] [--seed S] [--folds K] [--threads T]
#                                 [--epochs E] [-- parse train options...]
#
# The parser configuration (after --) defaults to the small, fast one of
# docs/experiment.md: d_model 128, 2 layers, 4 heads.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
parse=$here/build/release/examples/parse
out=$here/data/predicted
seed=1
folds=5
threads=1
epochs=30
ewt=$here/data/ud/UD_English-EWT
model_options=(--d-model 128 --layers 2 --heads 4 --d-ff 256 --arc-dim 128 --label-dim 32 --word-dim 64
  --char-filters 32 --patience 5)
while [[ $# -gt 0 ]]; do
  case $1 in
    --parse) parse=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --folds) folds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --) shift; model_options=("$@"); break ;;
    *) echo "usage: $0 [--parse PROG] [--out DIR] [--seed S] [--folds K] [--threads T] [--epochs E] [-- options]" >&2
       exit 2 ;;
  esac
done
[[ -x $parse ]] || { echo "$0: $parse is not an executable (build the parse example first)" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LC_ALL=C
log=$out/en_ewt.seed$seed.log
: >"$log"
start=$(date +%s)

train=$ewt/en_ewt-ud-train.conllu
dev=$ewt/en_ewt-ud-dev.conllu
# Sentences are paragraphs (awk's RS=): fold k holds sentences k, k + K, ...
for ((k = 0; k < folds; k++)); do
  awk -v RS= -v ORS='\n\n' -v k=$k -v n="$folds" '(NR - 1) % n == k' "$train" >"$work/fold$k.conllu"
  awk -v RS= -v ORS='\n\n' -v k=$k -v n="$folds" '(NR - 1) % n != k' "$train" >"$work/rest$k.conllu"
done

train_parser() {  # train_parser TRAIN MODEL
  "$parse" train --train "$1" --dev "$dev" --model "$2" --epochs "$epochs" --threads "$threads" --seed "$seed" \
    "${model_options[@]}" >>"$log" 2>&1
}
for ((k = 0; k < folds; k++)); do
  echo "== fold $k: train on the other $((folds - 1)) folds, parse fold $k" >>"$log"
  train_parser "$work/rest$k.conllu" "$work/model$k.safetensors"
  "$parse" --model "$work/model$k.safetensors" --input "$work/fold$k.conllu" --output "$work/parsed$k.conllu" \
    --threads "$threads" >>"$log" 2>&1
  "$parse" eval --model "$work/model$k.safetensors" --gold "$work/fold$k.conllu" --threads "$threads" \
    >"$work/eval$k.txt"
  head -3 "$work/eval$k.txt" >>"$log"  # (not a pipe: head closing it early would fail the run under pipefail)
done
echo "== all of train: parse dev" >>"$log"
train_parser "$train" "$work/model-all.safetensors"
"$parse" --model "$work/model-all.safetensors" --input "$dev" --output "$work/parsed-dev.conllu" \
  --threads "$threads" >>"$log" 2>&1
"$parse" eval --model "$work/model-all.safetensors" --gold "$dev" --threads "$threads" >"$work/eval-dev.txt"
head -3 "$work/eval-dev.txt" >>"$log"

# Only the sent_id and the columns a tree needs; multiword-token and empty-node lines dropped.
minimal() {
  awk -F'\t' -v OFS='\t' '/^# sent_id/ { print; next } /^#/ { next }
    /^$/ { print; next } $1 ~ /^[0-9]+$/ { print $1, $2, "_", "_", "_", "_", $7, $8, "_", "_" }'
}
# Back into train's order: sentence r of fold k is train sentence k + r * K.
for ((k = 0; k < folds; k++)); do echo "$work/parsed$k.conllu"; done | xargs awk -v RS= -v ORS='\n\n' -v n="$folds" '
  FNR == 1 { fold++ } { s[(FNR - 1) * n + fold - 1] = $0; total++ }
  END { for (i = 0; i < total; i++) print s[i] }' | minimal | xz -9 >"$work/train.xz"
minimal <"$work/parsed-dev.conllu" | xz -9 >"$work/dev.xz"
# Both files only when both are whole: a failure above leaves the previous ones.
mv "$work/train.xz" "$out/en_ewt-train.seed$seed.conllu.xz"
mv "$work/dev.xz" "$out/en_ewt-dev.seed$seed.conllu.xz"
echo "== done in $(($(date +%s) - start)) s of wall time, $threads thread(s)" >>"$log"
