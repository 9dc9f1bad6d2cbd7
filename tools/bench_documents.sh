#!/usr/bin/env bash
# Long documents, each benchmark in a process of its own so that its peak
# resident memory (bench_attention's layer_peak_MB) is its own: the packed
# input at n = 1024, 4096 and 16384 with sentence windows 0 and 1, the dense
# input at n = 1024 and 4096 on both paths; then PyTorch's n^2 path on the
# same documents (bench/pytorch_documents.py, window 1) when /usr/bin/python3
# has torch. Writes one JSON file per benchmark into OUT and prints a
# Markdown table.
#
#   tools/bench_documents.sh [BENCH_ATTENTION] [OUT]
#   (default build/release/bench/bench_attention, bench-documents)
set -euo pipefail
bench=${1:-build/release/bench/bench_attention}
out=${2:-bench-documents}
mkdir -p "$out"
mapfile -t names < <("$bench" --benchmark_list_tests | grep '^documents/')
for name in "${names[@]}"; do
  file="$out/$(tr '/:' '__' <<<"$name").json"
  echo "== $name" >&2
  "$bench" --benchmark_filter="^${name}\$" --benchmark_min_time=2 --benchmark_out="$file" \
    --benchmark_out_format=json >/dev/null
done
here=$(cd "$(dirname "$0")/.." && pwd)
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  for n in 1024 4096; do
    echo "== pytorch n:$n w:1" >&2
    /usr/bin/python3 "$here/bench/pytorch_documents.py" --n "$n" --window 1 --json "$out/pytorch_n$n.json" >/dev/null
  done
fi
/usr/bin/python3 - "$out" <<'PY'
import json, pathlib, sys
rows = []
cpu = "?"
for f in sorted(pathlib.Path(sys.argv[1]).glob("documents_*.json")):
    doc = json.loads(f.read_text())
    cpu = doc["context"].get("cpu", cpu)
    for b in doc["benchmarks"]:
        rows.append(b)
print(f"CPU: {cpu}")
print()
for f in sorted(pathlib.Path(sys.argv[1]).glob("pytorch_n*.json")):
    r = json.loads(f.read_text())
    r["name"] = f'pytorch {r["torch"]}/dense/n:{r["n"]}/w:{r["window"]}/omp:1'
    rows.append(r)
print("| benchmark | layer ms | projections ms | ratio | live pairs % | GFLOP/s (% of FMA peak) | layer peak MB |")
print("|---|---:|---:|---:|---:|---:|---:|")
for b in rows:
    name = b["name"].replace("/manual_time", "").replace("/iterations:3", "")
    proj = f'{b["projections_ms"]:.0f}' if "projections_ms" in b else ""
    ratio = f'{b["ratio_to_projections"]:.2f}' if "ratio_to_projections" in b else ""
    # Pairs computed: the packed input's live tiles; the dense paths compute all n^2 and mask.
    live = f'{b["live_pairs_pct"]:.1f}' if "ratio_to_projections" in b else "100"
    gf = f'{b["GFLOPs"]:.0f} ({b["pct_of_peak"]:.0f} %)' if "GFLOPs" in b else ""
    print(f'| {name} | {b["layer_ms"]:.0f} | {proj} | {ratio} | {live} | {gf} | {b["layer_peak_MB"]:.0f} |')
PY
