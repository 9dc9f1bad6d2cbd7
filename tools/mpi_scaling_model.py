#!/usr/bin/python3
"""Analytic scaling model of data-parallel training (synattn::mpi) for the
README's "Training across processes" section: per-step compute against the
ring all-reduce of the gradients, with and without overlapping the reduction
with the backward pass, at 10 / 25 / 100 Gb/s and P = 2..64 ranks.

    tools/mpi_scaling_model.py                 # the README table (Markdown)
    tools/mpi_scaling_model.py --step-ms 66.8 --latency-us 20 --bandwidth-gbps 10,25,100

Model (every assumption is a flag):
- Compute. FLOPs per step = 3 x forward (backward = 2 x forward) over the
  global batch's tokens; forward per token and layer = 2 (4 d^2 + 2 n d +
  2 d d_ff), classifier 2 d C. The effective rate F (FLOP/s of one core) is
  calibrated on the measured one-process step of the experiment's model
  (--step-ms) and used for both models (a bigger model's larger GEMMs run
  faster, so this overstates its compute time: optimistic for scaling).
- Strong scaling with the recipe's global batch of 32 sentences: each rank
  computes ceil(32 / P) sentences' worth (at P = 64 half the ranks idle).
- Replicated work: every rank takes the whole Adam step and zeroes the whole
  (dense) gradient: --replicated-ns per parameter per step, not divided by P.
- Communication: ring all-reduce, 2 (P-1)/P x 4 bytes x parameters sent and
  received per rank, at the link's bandwidth, plus 2 (P-1) latencies per
  bucket (one bucket per stage: classifier + final norm, each layer, the
  embedding).
- Overlap: stage s's bucket is ready when the backward pass has finished it
  (backward time split over the stages by their FLOPs; the embedding, which
  holds most parameters of small models, is ready only at the very end);
  buckets go over the link one after another. Exposed time = when the last
  bucket is done minus the end of the backward pass. Without overlap the
  whole reduction is exposed.
"""
import argparse
import math


def model_stages(d, layers, d_ff, vocab, classes, n_mean, buckets=11):
    """[(name, parameters, forward FLOPs per token)] in backward order (top first)."""
    layer_params = 4 * d * d + 4 * d + buckets + 1 + 2 * 2 * d + 2 * d * d_ff + d_ff + d
    layer_flops = 2 * (4 * d * d + 2 * n_mean * d + 2 * d * d_ff)
    stages = [("classifier+norm", d * classes + classes + 2 * d, 2 * d * classes)]
    for l in reversed(range(layers)):
        stages.append((f"layer {l}", layer_params, layer_flops))
    stages.append(("embedding", vocab * d, 0))
    return stages


def step_time(stages, tokens, flops_per_s, P, bandwidth_Bps, latency_s, replicated_s_per_param, overlap, batch=32,
              weak=False):
    params = sum(p for _, p, _ in stages)
    fwd_flops_token = sum(f for _, _, f in stages)
    # This rank's fraction of the 32-sentence batch; weak scaling: a whole
    # batch per rank (global batch 32 P), speed-up then counts P batches.
    share = 1.0 if weak else math.ceil(batch / P) / batch
    compute = 3 * fwd_flops_token * tokens * share / flops_per_s
    replicated = replicated_s_per_param * params
    if P == 1:
        return compute + replicated, compute, 0.0, 0.0
    ring = 2 * (P - 1) / P
    comm = [ring * 4 * p / bandwidth_Bps + 2 * (P - 1) * latency_s for _, p, _ in stages]
    total_comm = sum(comm)
    forward = compute / 3
    backward = compute - forward
    if not overlap:
        return compute + total_comm + replicated, compute, total_comm, total_comm
    # Backward order: stage i is final when the backward has done its FLOPs.
    done_flops, t_link, t_end_backward = 0.0, 0.0, backward
    for (_, _, f), c in zip(stages, comm):
        done_flops += f
        ready = backward * done_flops / fwd_flops_token if fwd_flops_token else backward
        t_link = max(t_link, ready) + c
    exposed = max(0.0, t_link - t_end_backward)
    return compute + exposed + replicated, compute, total_comm, exposed


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--step-ms", type=float, default=66.8,
                    help="measured one-process step of the experiment's model, 1 thread (default: 7,600 tok/s "
                         "at 508 tokens per step, N = 2000)")
    ap.add_argument("--tokens", type=float, default=508, help="tokens per global batch (32 x 15.9 EWT words)")
    ap.add_argument("--n-mean", type=float, default=17, help="mean padded sentence length in a batch")
    ap.add_argument("--vocab", type=int, default=6127, help="vocabulary (N = 2000 subset)")
    ap.add_argument("--classes", type=int, default=36)
    ap.add_argument("--latency-us", type=float, default=20.0, help="per message (TCP)")
    ap.add_argument("--replicated-ns", type=float, default=3.0,
                    help="Adam step + gradient zeroing per parameter per step (every rank does all of it)")
    ap.add_argument("--bandwidth-gbps", default="10,25,100")
    ap.add_argument("--ranks", default="2,4,8,16,32,64")
    ap.add_argument("--weak", action="store_true",
                    help="32 sentences per rank (global batch 32 P) instead of one global batch of 32; "
                         "the speed-up then counts sentences per second")
    a = ap.parse_args()

    models = [
        ("experiment (d 128, 2 layers, FFN 256)", model_stages(128, 2, 256, a.vocab, a.classes, a.n_mean)),
        ("d 512, 6 layers, FFN 2048", model_stages(512, 6, 2048, a.vocab, a.classes, a.n_mean)),
    ]
    exp_stages = models[0][1]
    exp_flops = 3 * sum(f for _, _, f in exp_stages) * a.tokens
    exp_replicated = a.replicated_ns * 1e-9 * sum(p for _, p, _ in exp_stages)
    flops_per_s = exp_flops / (a.step_ms * 1e-3 - exp_replicated)
    print(f"Calibration: {exp_flops / 1e9:.2f} GFLOP per step of the experiment's model in "
          f"{a.step_ms:.1f} ms -> {flops_per_s / 1e9:.1f} GFLOP/s per core; replicated work "
          f"{a.replicated_ns:g} ns/parameter; latency {a.latency_us:g} us per message.\n")
    ranks = [int(x) for x in a.ranks.split(",")]
    bands = [float(x) for x in a.bandwidth_gbps.split(",")]
    for name, stages in models:
        params = sum(p for _, p, _ in stages)
        t1 = step_time(stages, a.tokens, flops_per_s, 1, 1, 0, a.replicated_ns * 1e-9, True)[0]
        print(f"**{name}**: {params / 1e6:.2f} M parameters ({sum(p for s, p, _ in stages if s == 'embedding') / params:.0%} "
              f"embedding), {4 * params / 1e6:.1f} MB of float gradients, one process {t1 * 1e3:.1f} ms per step.\n")
        head = "| P | MB sent per rank | compute per rank (ms) |"
        sep = "|---|---|---|"
        for b in bands:
            head += f" {b:g} Gb/s: reduce / exposed, overlap / exposed, none (ms) | speed-up (overlap) |"
            sep += "---|---|"
        print(head)
        print(sep)
        for P in ranks:
            row = f"| {P} | {2 * (P - 1) / P * 4 * params / 1e6:.1f} |"
            first = True
            for b in bands:
                Bps = b * 1e9 / 8
                t, comp, comm, exposed = step_time(stages, a.tokens, flops_per_s, P, Bps, a.latency_us * 1e-6,
                                                   a.replicated_ns * 1e-9, True, weak=a.weak)
                _, _, _, exposed_none = step_time(stages, a.tokens, flops_per_s, P, Bps, a.latency_us * 1e-6,
                                                  a.replicated_ns * 1e-9, False, weak=a.weak)
                if a.weak:
                    t /= P  # P batches per step
                if first:
                    row += f" {comp * 1e3:.1f} |"
                    first = False
                row += f" {comm * 1e3:.1f} / {exposed * 1e3:.1f} / {exposed_none * 1e3:.1f} | {t1 / t:.2f}x |"
            print(row)
        print()


if __name__ == "__main__":
    main()
