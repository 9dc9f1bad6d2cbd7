#!/usr/bin/env bash
# The grid of docs/experiment.md "Trees a parser drew": train_deprel on the
# README recipe over tree conditions, three seeds each, and its
# table and plot:
#
#   gold                        the treebank's trees (N = 500, 2000, 8000)
#   predicted                   jackknifed parser trees, train and dev (N = 500, 2000, 8000)
#   noise P                     gold trees corrupted with P = 0.05 ... 0.32 (N = 500, 2000)
#   train gold, dev predicted   what a user gets who trains on a treebank (N = 500, 2000)
#   predicted + train noise Q   predicted trees, the training ones corrupted afresh each epoch
#   predicted, parser seed V    the trees of a second parser (another seed), shared only (N = 500, 2000, 8000)
#   predicted, one parser twice fusion of the first parser's trees with themselves: the control that
#                               tells what the second parser's trees add from what the split table does
#
# Variants fixed, shared and directed in every condition, none once per N;
# in the predicted condition also fusion, whose bias fuses the trees of both
# parsers (the second parser's as tree view 1).
# Runs go JOBS at a time, one thread each, each job appending to its own
# JSON-lines file under OUT/runs; OUT/trees.jsonl is their concatenation and
# OUT/ gets the table (results.md) and figures (train_deprel --report).
# A job whose file is already complete is skipped, so a stopped grid resumes;
# --only REGEX keeps the jobs whose "NAME VARIANTS" matches (e.g. 'fusion|seed 2').
#
#   tools/run_tree_grid.sh [--train-deprel PROG] [--out DIR] [--jobs J] [--sizes "500 2000"]
#                          [--seeds "1 2 3"] [--predicted-seed S] [--view-seed V] [--only REGEX]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
prog=$here/build/release/examples/train_deprel
out=$here/tree-grid
jobs=2
sizes="500 2000 8000"
seeds="1 2 3"
pseed=1
vseed=2
only=.
while [[ $# -gt 0 ]]; do
  case $1 in
    --train-deprel) prog=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --predicted-seed) pseed=$2; shift 2 ;;
    --view-seed) vseed=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--train-deprel PROG] [--out DIR] [--jobs J] [--sizes LIST] [--seeds LIST] [--predicted-seed S] [--view-seed V] [--only REGEX]" >&2
       exit 2 ;;
  esac
done
[[ -x $prog ]] || { echo "$0: $prog is not an executable (build train_deprel first)" >&2; exit 2; }
mkdir -p "$out/runs" "$out/trees"
predicted_train=$out/trees/en_ewt-train.seed$pseed.conllu
predicted_dev=$out/trees/en_ewt-dev.seed$pseed.conllu
view_train=$out/trees/en_ewt-train.seed$vseed.conllu
view_dev=$out/trees/en_ewt-dev.seed$vseed.conllu
for f in "$predicted_train" "$predicted_dev" "$view_train" "$view_dev"; do
  packed=$here/data/predicted/$(basename "$f").xz
  if [[ ! -s $f && -f $packed ]]; then
    xz -dc "$packed" >"$f.tmp" && mv "$f.tmp" "$f"
  elif [[ ! -s $f ]]; then
    echo "$0: $packed is missing (tools/make_predicted_trees.sh makes it): the predicted rows will fail" >&2
  fi
done

# job NAME N SEED VARIANTS [train_deprel flags...]: writes OUT/jobs.PID/K.sh,
# one train_deprel invocation that leaves OUT/runs/NAME-NN-seedS-VARIANTS.jsonl when
# it has finished (and is skipped when that file exists). Each invocation
# has its own job folder, so passes with disjoint --only can run at once.
jobdir=$out/jobs.$$
mkdir -p "$jobdir"
trap 'rm -rf "$jobdir"' EXIT
count=0
job() {
  local name=$1 n=$2 seed=$3 variants=$4
  shift 4
  [[ "$name $variants" =~ $only ]] || return 0  # --only matches "NAME VARIANTS", e.g. "predicted fusion"
  local file
  file=$out/runs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9.' '-')-N$n-seed$seed-$(printf '%s' "$variants" | tr ',' '-').jsonl
  count=$((count + 1))
  {
    printf '[[ -f %q ]] && exit 0\n' "$file"
    printf 'rm -f %q.part\n' "$file"
    printf '%q' "$prog"
    printf ' %q' --train-size "$n" --seeds "$seed" --variants "$variants" --threads 1 --trees-name "$name" "$@" \
      --json "$file.part"
    printf ' >%q.log 2>&1 && mv %q.part %q\n' "$file" "$file" "$file"
  } >"$jobdir/$(printf '%04d' $count).sh"
}
biased=fixed,shared,directed
noise_rows() {  # noise_rows N SEED
  for p in 0.05 0.1 0.16 0.21 0.32; do
    job "noise $p" "$1" "$2" $biased --tree-noise "$p"
  done
}
# In the order the results matter: the smallest N whole first; the noise
# rows of larger N last, the most runs for the least news.
for n in $sizes; do
  for s in $seeds; do
    job "gold" "$n" "$s" none
    job "gold" "$n" "$s" $biased
    job "predicted" "$n" "$s" $biased --train-trees "$predicted_train" --dev-trees "$predicted_dev"
    job "predicted" "$n" "$s" fusion --train-trees "$predicted_train" --dev-trees "$predicted_dev" \
      --train-view-trees "$view_train" --dev-view-trees "$view_dev"
    job "predicted, parser seed $vseed" "$n" "$s" shared --train-trees "$view_train" --dev-trees "$view_dev"
    job "predicted, one parser twice" "$n" "$s" fusion --train-trees "$predicted_train" \
      --dev-trees "$predicted_dev" --train-view-trees "$predicted_train" --dev-view-trees "$predicted_dev"
    [[ $n -le 2000 ]] || continue
    job "train gold, dev predicted" "$n" "$s" $biased --dev-trees "$predicted_dev"
    job "predicted + train noise 0.1" "$n" "$s" $biased --train-trees "$predicted_train" \
      --dev-trees "$predicted_dev" --train-tree-noise 0.1
    [[ $n -le 500 ]] && noise_rows "$n" "$s"
  done
done
for n in $sizes; do
  [[ $n -gt 500 && $n -le 2000 ]] || continue
  for s in $seeds; do noise_rows "$n" "$s"; done
done

start=$(date +%s)
ls "$jobdir"/*.sh | xargs -P "$jobs" -n 1 bash
cat "$out"/runs/*.jsonl >"$out/trees.jsonl"
"$prog" --report "$out/trees.jsonl" --out "$out" >"$out/table.md"
echo "$(wc -l <"$out/trees.jsonl") runs in $(($(date +%s) - start)) s; table: $out/table.md" >&2
