"""stackprof's operator split against torch.profiler's, on one ResNet18 loop.

    agreement.py run --out torch.tsv [--rounds R] [--iters N] [--batch B]
        Runs torchvision ResNet18 inference on one thread, R rounds of two
        halves: N iterations under torch.profiler (its key_averages() self
        CPU per operator is summed into torch.tsv), then the same N under
        stackprof.profile(). Run it under `stackprof run --paused -F 1000`:
        only the stackprof halves are sampled. Taking turns in one process
        gives both profilers the same model, input, kernels and machine
        state, and a slow drift of the machine falls on both alike.

    agreement.py compare torch.tsv ops.folded [--bound P]
        ops.folded is `stackprof collapse --ops --metric us` of that profile.
        Prints both splits by operator family side by side, their total
        variation (half the sum of the absolute differences, in points) and
        what sampling alone would give (from the sample count), and exits 1
        when the total variation is above P (default 3).

Both splits are shares of the time spent in operators: torch.profiler sees
nothing else, and stackprof's samples outside every operator (the Python
around the calls) are left out and counted apart.
"""
import argparse
import sys

FAMILIES = ["convolution", "batch norm", "max pool", "linear", "ReLU", "add", "other"]


def family(op):
    """The family of an aten operator name ("aten::mkldnn_convolution")."""
    name = op[6:] if op.startswith("aten::") else op
    if "conv" in name:
        return "convolution"
    if "batch_norm" in name:
        return "batch norm"
    if name.startswith("max_pool"):
        return "max pool"
    if name in ("linear", "addmm", "matmul", "mm", "t", "transpose"):
        return "linear"
    if name in ("relu", "relu_", "clamp_min", "clamp_min_", "threshold", "threshold_"):
        return "ReLU"
    if name in ("add", "add_"):
        return "add"
    return "other"


def run(args):
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile

    import stackprof

    if not stackprof.active():
        print("agreement: run me under `stackprof run --paused -F 1000`", file=sys.stderr)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, 224, 224)
    self_us = {}
    with torch.no_grad():
        for _ in range(3):
            model(x)  # oneDNN makes its kernels here
        for r in range(args.rounds):
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                for _ in range(args.iters):
                    model(x)
            for e in prof.key_averages():
                self_us[e.key] = self_us.get(e.key, 0.0) + e.self_cpu_time_total
            with stackprof.profile():
                for _ in range(args.iters):
                    model(x)
            print("round %d of %d" % (r + 1, args.rounds), file=sys.stderr, flush=True)
    with open(args.out, "w") as f:
        for k, v in sorted(self_us.items()):
            f.write("%s\t%.3f\n" % (k, v))


def split(by_op):
    """Family shares (summing to 1) of a {operator: time} dict."""
    fam = dict.fromkeys(FAMILIES, 0.0)
    for op, t in by_op.items():
        fam[family(op)] += t
    total = sum(fam.values())
    return {k: (v / total if total else 0.0) for k, v in fam.items()}, total


def noise_tv(shares, n, reps=20000):
    """Total variation (points) between the shares and the split of n
    samples drawn from them: its mean and 99th percentile, by simulation."""
    import numpy

    p = numpy.array([shares[k] for k in FAMILIES])
    draws = numpy.random.default_rng(1).multinomial(n, p / p.sum(), size=reps) / n
    tv = 50.0 * numpy.abs(draws - p).sum(axis=1)
    return float(tv.mean()), float(numpy.percentile(tv, 99))


def compare(args):
    torch_ops = {}
    for line in open(args.torch_tsv):
        k, v = line.rstrip("\n").split("\t")
        if k.startswith("aten::"):
            torch_ops[k] = float(v)
    sp_ops, outside = {}, 0.0
    for line in open(args.folded):
        stack, _, v = line.rstrip("\n").rpartition(" ")
        leaf = stack.split(";")[-1]
        if leaf == "[no_operator]":
            outside += float(v)
        else:
            sp_ops[leaf] = sp_ops.get(leaf, 0.0) + float(v)
    n_in = n_out = 0
    if args.samples:
        for line in open(args.samples):
            stack, _, v = line.rstrip("\n").rpartition(" ")
            if stack.split(";")[-1] == "[no_operator]":
                n_out += int(v)
            else:
                n_in += int(v)
    t_split, t_total = split(torch_ops)
    s_split, s_total = split(sp_ops)
    tv = 50.0 * sum(abs(t_split[k] - s_split[k]) for k in FAMILIES)
    print("%-12s %14s %14s %8s" % ("family", "torch.profiler", "stackprof", "diff"))
    for k in FAMILIES:
        print("%-12s %13.2f%% %13.2f%% %+8.2f" % (k, 100 * t_split[k], 100 * s_split[k],
                                                 100 * (s_split[k] - t_split[k])))
    print("%-12s %12.1fms %12.1fms" % ("in operators", t_total / 1e3, s_total / 1e3))
    print("stackprof outside every operator (not in the split): %.1fms, %.1f%% of the loop%s"
          % (outside / 1e3, 100 * outside / (outside + s_total) if outside + s_total else 0,
             ", %d samples" % n_out if args.samples else ""))
    print("total variation: %.2f points (bound %.2f)" % (tv, args.bound))
    if n_in:
        mean, p99 = noise_tv(t_split, n_in)
        print("sampling noise for %d samples in operators: total variation %.2f points on "
              "average, %.2f at the 99th percentile" % (n_in, mean, p99))
    return 0 if tv <= args.bound else 1


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--rounds", type=int, default=6)
    r.add_argument("--iters", type=int, default=40)
    r.add_argument("--batch", type=int, default=1)
    c = sub.add_parser("compare")
    c.add_argument("torch_tsv")
    c.add_argument("folded")
    c.add_argument("--bound", type=float, default=3.0)
    c.add_argument("--samples", metavar="FOLDED",
                   help="collapse --ops --metric samples of the profile, for the noise estimate")
    args = ap.parse_args()
    sys.exit(run(args) if args.cmd == "run" else compare(args))


if __name__ == "__main__":
    main()
