"""torchvision ResNet18 inference under Debian's python3-torch, for stackprof's
end-to-end tests and benchmarks. Random weights (nothing is downloaded).

usage: /usr/bin/python3 resnet18_infer.py [--batch N] [--iters N] [--threads N]
Prints a deterministic checksum, and checks that a C++ exception still
reaches Python as IndexError (it must, with or without the profiler).
"""
import argparse
import time

import torch
import torchvision


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).eval()
    x = torch.randn(args.batch, 3, 224, 224)
    try:
        torch.zeros(2)[5]
        print("IndexError: not raised")
    except IndexError:
        print("IndexError: ok")
    times = []
    with torch.no_grad():
        model(x)  # warm-up: oneDNN generates its JIT kernels here
        for _ in range(args.iters):
            t0 = time.perf_counter()
            y = model(x)
            times.append(time.perf_counter() - t0)
    times.sort()
    print("checksum %.4f" % float(y.double().abs().sum()))
    print("median %.1f ms/iter" % (1000 * times[len(times) // 2]))


if __name__ == "__main__":
    main()
