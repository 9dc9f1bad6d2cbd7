#!/usr/bin/env bash
# The distillation grid of docs/experiment.md "Distillation": what a plain
# Transformer (`none`) keeps of a tree-biased teacher's gain when it learns
# from the teacher and reads no tree at inference.
#
# Phase 1, per N and seed: `none`, and the `shared` teacher on gold trees
# and on the jackknifed parser trees (train and dev), each teacher's best
# epoch saved (--save-best).
# Phase 2, per teacher: two `none` students (--distill-from), with the
# teacher's T and A:
#   labelled      the same N labelled sentences, soft and gold targets mixed
#   + transfer    plus M further sentences of EWT train whose labels are never
#                 read, labelled by the teacher reading the parser's trees
#                 (what a user has for unlabelled text)
# Runs go JOBS at a time, one thread each, each appending to its own
# JSON-lines file under OUT/runs (a finished job is skipped, so a stopped grid
# resumes); OUT/distill.jsonl is their concatenation and OUT/table.md the
# tables (train_deprel --report).
#
#   tools/run_distill_grid.sh [--train-deprel PROG] [--out DIR] [--jobs J] [--sizes "500 2000"]
#                             [--seeds "1 2 3"] [--transfer-multiple K] [--temperature T] [--weight A]
#                             [--epochs E --patience P] [--only REGEX]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
prog=$here/build/release/examples/train_deprel
out=$here/distill-grid
jobs=2
sizes="500 2000"
seeds="1 2 3"
multiple=4
temperature=2
weight=0.5
schedule=()
only=.
while [[ $# -gt 0 ]]; do
  case $1 in
    --train-deprel) prog=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --seeds) seeds=$2; shift 2 ;;
    --transfer-multiple) multiple=$2; shift 2 ;;
    --temperature) temperature=$2; shift 2 ;;
    --weight) weight=$2; shift 2 ;;
    --epochs) schedule+=(--epochs "$2"); shift 2 ;;
    --patience) schedule+=(--patience "$2"); shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--train-deprel PROG] [--out DIR] [--jobs J] [--sizes LIST] [--seeds LIST]" \
         "[--transfer-multiple K] [--temperature T] [--weight A] [--epochs E] [--patience P] [--only REGEX]" >&2
       exit 2 ;;
  esac
done
[[ -x $prog ]] || { echo "$0: $prog is not an executable (build train_deprel first)" >&2; exit 2; }
mkdir -p "$out/runs" "$out/trees" "$out/teachers"
predicted_train=$out/trees/en_ewt-train.seed1.conllu
predicted_dev=$out/trees/en_ewt-dev.seed1.conllu
for f in "$predicted_train" "$predicted_dev"; do
  packed=$here/data/predicted/$(basename "$f").xz
  [[ -s $f ]] || { xz -dc "$packed" >"$f.tmp" && mv "$f.tmp" "$f"; }
done
predicted=(--train-trees "$predicted_train" --dev-trees "$predicted_dev")

# job PHASE NAME N SEED VARIANTS [train_deprel flags...]: one train_deprel
# invocation in OUT/jobs.PID/PHASE, leaving OUT/runs/NAME-NN-seedS.jsonl
# when it has finished (skipped when that file exists).
jobdir=$out/jobs.$$
mkdir -p "$jobdir/1" "$jobdir/2"
trap 'rm -rf "$jobdir"' EXIT
count=0
job() {
  local phase=$1 name=$2 n=$3 seed=$4 variants=$5
  shift 5
  [[ "$name" =~ $only ]] || return 0
  local file
  file=$out/runs/$(printf '%s' "$name" | tr -c 'A-Za-z0-9.' '-')-N$n-seed$seed.jsonl
  count=$((count + 1))
  {
    printf '[[ -f %q ]] && exit 0\n' "$file"
    printf 'rm -f %q.part\n' "$file"
    printf '%q' "$prog"
    printf ' %q' --train-size "$n" --seeds "$seed" --variants "$variants" --threads 1 "${schedule[@]}" "$@" \
      --json "$file.part"
    printf ' >%q.log 2>&1 && mv %q.part %q\n' "$file" "$file" "$file"
  } >"$jobdir/$phase/$(printf '%04d' $count).sh"
}
teacher() {  # teacher TREES N SEED: the --save-best file of that teacher
  printf '%s/teachers/%s-N%s-seed%s.safetensors' "$out" "$1" "$2" "$3"
}
distill=(--distill-temperature "$temperature" --distill-weight "$weight")
for n in $sizes; do
  m=$((multiple * n))
  for s in $seeds; do
    job 1 "none" "$n" "$s" none
    job 1 "teacher gold" "$n" "$s" shared --trees-name gold --save-best "$(teacher gold "$n" "$s")"
    job 1 "teacher predicted" "$n" "$s" shared --trees-name predicted "${predicted[@]}" \
      --save-best "$(teacher predicted "$n" "$s")"
    # Students read no tree; the trees given are the teacher's (the run
    # scores the teacher on dev with them).
    job 2 "student of gold" "$n" "$s" none --distill-from "$(teacher gold "$n" "$s")" "${distill[@]}"
    job 2 "student of gold + transfer" "$n" "$s" none --distill-from "$(teacher gold "$n" "$s")" "${distill[@]}" \
      --transfer-size "$m" --transfer-trees "$predicted_train"
    job 2 "student of predicted" "$n" "$s" none --trees-name predicted "${predicted[@]}" \
      --distill-from "$(teacher predicted "$n" "$s")" "${distill[@]}"
    job 2 "student of predicted + transfer" "$n" "$s" none --trees-name predicted "${predicted[@]}" \
      --distill-from "$(teacher predicted "$n" "$s")" "${distill[@]}" --transfer-size "$m"
  done
done

start=$(date +%s)
for phase in 1 2; do
  if compgen -G "$jobdir/$phase/*.sh" >/dev/null; then ls "$jobdir/$phase"/*.sh | xargs -P "$jobs" -n 1 bash; fi
done
cat "$out"/runs/*.jsonl >"$out/distill.jsonl"
"$prog" --report "$out/distill.jsonl" --out "$out" >"$out/table.md"
echo "$(wc -l <"$out/distill.jsonl") runs in $(($(date +%s) - start)) s; table: $out/table.md" >&2
