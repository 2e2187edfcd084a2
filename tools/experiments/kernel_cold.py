#!/usr/bin/env python3
"""Are a model's kernels slower than the calibration's because their parameters come cold from DRAM?

In a replayed model every kernel reads its own weights (or bias, norm scale) once per forward, and the rest of
the forward evicts them from L2 before the next replay; the calibration replays one kernel on one weight tensor,
hot in L2. This times chains of one kind of kernel two ways: 'hot' (every kernel on the same parameters, as the
calibration) and 'cold' (each kernel on its own parameters, and a 512 MiB write between replays so nothing of the
last replay is left in L2). It also times hwprobe's own calibration point for the same kernel in the same
process (gpu.torch_kernels' _graph_time and _case), with the SM clock read by NVML around every figure.

    python3 tools/experiments/kernel_cold.py --out DIR      # torch and a GPU; about 40 s
"""
from __future__ import annotations

import json

from kernel_gaps import graph_of, save, setup, timed

REPS = 256


def clock():
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        return pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    except Exception:  # noqa: BLE001
        return None


def main():
    out, torch = setup()
    F = torch.nn.functional
    h = torch.float16
    gen = torch.Generator(device="cuda").manual_seed(3)
    r = lambda *s: (torch.rand(*s, device="cuda", generator=gen) - 0.5).to(h)
    flush = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    nhwc = lambda t: t.to(memory_format=torch.channels_last)

    # kind: (make parameter, step(x, p), first input)
    kinds = {
        "conv3_64": (lambda: nhwc(r(64, 64, 3, 3) / 12), lambda x, p: F.conv2d(x, p, padding=1),
                     nhwc(r(1, 64, 56, 56))),
        "conv1_256": (lambda: nhwc(r(256, 256, 1, 1) / 8), lambda x, p: F.conv2d(x, p), nhwc(r(1, 256, 14, 14))),
        "conv3_256": (lambda: nhwc(r(256, 256, 3, 3) / 24), lambda x, p: F.conv2d(x, p, padding=1),
                      nhwc(r(1, 256, 14, 14))),
        "linear_768": (lambda: r(768, 768) / 14, lambda x, p: F.linear(x, p), r(128, 768)),
        "linear_3072x768": (lambda: r(768, 3072) / 28, lambda x, p: F.linear(x.repeat(1, 4), p), r(128, 768)),
        "bias_nhwc": (lambda: r(1, 64, 1, 1), lambda x, p: x + p, nhwc(r(1, 64, 56, 56))),
        "norm_768": (lambda: (r(768) + 1, r(768)), lambda x, p: F.layer_norm(x, (768,), p[0], p[1]), r(128, 768)),
        "relu": (lambda: None, lambda x, p: torch.relu(x), nhwc(r(1, 64, 56, 56))),
    }
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "reps": REPS, "kinds": {}}

    def graph(fn):
        return graph_of(torch, fn)

    with torch.inference_mode():
        for name, (make, step, x0) in kinds.items():
            row = {}
            for mode in ("hot", "cold"):
                params = [make()] * REPS if mode == "hot" else [make() for _ in range(REPS)]
                st = {"x": x0}

                def fn(params=params, st=st, step=step):
                    for p in params:
                        st["x"] = step(st["x"], p)

                g = graph(fn)
                c0 = clock()
                t = timed(torch, g, 15, before=(lambda: flush.fill_(1)) if mode == "cold" else None)
                row[mode] = {"per_kernel_us": t / REPS * 1e6, "sm_mhz": [c0, clock()]}
                assert torch.isfinite(st["x"]).all().item(), f"{name} {mode}: output not finite"
                del g
            row["cold_minus_hot_us"] = row["cold"]["per_kernel_us"] - row["hot"]["per_kernel_us"]
            res["kinds"][name] = row
            print(name, json.dumps(row), flush=True)
        # hwprobe's own calibration point beside the same kernel, in this process
        try:
            from hwprobe.probes.calibration import torch_kernels as tk

            for kind, nb in (("elementwise", 1 << 19), ("unary", 1 << 20), ("bias", 1 << 20)):
                fn, moved, _, shape = tk._case(torch, kind, nb)
                c0 = clock()
                t, reps = tk._graph_time(torch, fn)
                res.setdefault("calibration", {})[kind] = {"bytes": moved, "per_kernel_us": t * 1e6, "reps": reps,
                                                           "shape": shape, "sm_mhz": [c0, clock()]}
                print("calibration", kind, json.dumps(res["calibration"][kind]), flush=True)
        except Exception as e:  # noqa: BLE001
            res["calibration_error"] = f"{type(e).__name__}: {e}"
            print(res["calibration_error"])
    save(out, "kernel_cold.json", res)


if __name__ == "__main__":
    main()
