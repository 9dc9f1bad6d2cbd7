#!/usr/bin/env python3
"""The parser table of docs/benchmarks.md: accuracy of each model on UD English
EWT dev and test (`parse eval`, CoNLL 2018 conventions) and its speed on dev
(`bench_parser`, the whole file per iteration, decoding included) at one and
two threads, as Markdown rows.

  cmake --preset release -DSYNATTN_BUILD_BENCH=ON
  cmake --build --preset release --target parse bench_parser
  /usr/bin/python3 tools/bench_parser_table.py [--models models/en_ewt.parser.safetensors,OTHER.safetensors]
      [--build build/release] [--repetitions 3]

Speed is the median of --repetitions runs of each benchmark; accuracy does not
depend on the run. The model file's size and parameter count come from the
file and from bench_parser.
"""
import argparse
import json
import os
import re
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EWT = os.path.join(ROOT, "data", "ud", "UD_English-EWT")
RUN = re.compile(r"parse/([^/]+)/threads:(\d+)")
SCORE = re.compile(r"UAS ([0-9.]+) LAS ([0-9.]+) \((\d+) words")


def scores(parse, model, gold):
    out = subprocess.run([parse, "eval", "--model", model, "--gold", gold], check=True, capture_output=True,
                         text=True).stdout
    m = SCORE.search(out)
    if m is None:
        raise SystemExit(f"bench_parser_table: no 'UAS .. LAS ..' line in parse eval's output:\n{out}")
    return float(m.group(1)), float(m.group(2))


def speeds(bench, models, repetitions):
    out = subprocess.run([bench, "--synattn_models=" + ",".join(models), f"--benchmark_repetitions={repetitions}",
                          "--benchmark_report_aggregates_only=true", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    rows = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        # parse/<model file name>/threads:<t>[/min_time:...][/real_time]
        m = RUN.match(b["run_name"])
        if m:
            rows[(m.group(1), int(m.group(2)))] = (b["words/s"], b.get("parameters", 0))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=os.path.join(ROOT, "models", "en_ewt.parser.safetensors"))
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--repetitions", type=int, default=3)
    args = parser.parse_args()
    models = args.models.split(",")
    parse = os.path.join(args.build, "examples", "parse")
    bench = os.path.join(args.build, "bench", "bench_parser")
    for program in (parse, bench):
        if not os.access(program, os.X_OK):
            raise SystemExit(f"bench_parser_table: {program} is not built (see the usage above)")
    speed = speeds(bench, models, args.repetitions)
    print("| model | parameters | file | dev UAS / LAS | test UAS / LAS | parse, 1 thread | parse, 2 threads |")
    print("|---|---:|---:|---|---|---:|---:|")
    for model in models:
        dev = scores(parse, model, os.path.join(EWT, "en_ewt-ud-dev.conllu"))
        test = scores(parse, model, os.path.join(EWT, "en_ewt-ud-test.conllu"))
        name = os.path.basename(model)
        one = speed.get((name, 1))
        two = speed.get((name, 2))
        params = one[1] if one else 0
        mb = os.path.getsize(model) / 1e6
        def words(s):
            return f"{s[0]:,.0f} words/s" if s else "—"
        print(f"| {os.path.basename(model)} | {params / 1e6:.2f} M | {mb:.1f} MB | {dev[0]:.2f} / {dev[1]:.2f} | "
              f"{test[0]:.2f} / {test[1]:.2f} | {words(one)} | {words(two)} |")


if __name__ == "__main__":
    main()
