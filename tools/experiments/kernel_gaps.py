#!/usr/bin/env python3
"""Where a replayed model's time goes between kernels: the cost of one CUDA-graph node when its neighbours are the
same kernel (how the calibration curves are timed) against when they are other kernels (how a model runs).

Question (issue 20): real models' kernels take longer in a CUDA graph than the same kernels in hwprobe's
calibration replays (every graph case predicted low, a median 15.5%), and the profiler shows 0.2-0.8 us between
kernels in the models. Is that a cost of switching between library (cuBLAS/cuDNN) kernels and framework
(elementwise) kernels, of every node, or of particular kernels?

For each chain (a unit of kernels repeated, each consuming the previous output) it records: seconds per kernel
from CUDA events over a graph replay, and from the profiler's trace of one replay the mean kernel duration and
the mean gap between one kernel's end and the next one's start, per transition (previous -> next kernel).

    python3 tools/experiments/kernel_gaps.py --out DIR      # needs torch and a GPU; about 30 s
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

REPS = 96        # units per graph


def build(torch):
    F = torch.nn.functional
    h = torch.float16
    g = torch.Generator(device="cuda").manual_seed(1)
    r = lambda *s: (torch.rand(*s, device="cuda", generator=g) - 0.5).to(h)
    W = r(768, 768) / 14.0
    W2 = r(3072, 768) / 14.0
    W3 = r(768, 3072) / 28.0
    y = r(128, 768)
    lw, lb = r(768) + 1, r(768)
    cw = (r(64, 64, 3, 3) / 12.0).to(memory_format=torch.channels_last)
    cw1 = (r(256, 64, 1, 1) / 4.0).to(memory_format=torch.channels_last)
    cb = r(1, 64, 1, 1)
    cb1 = r(1, 256, 1, 1)
    x0 = r(128, 768)
    c0 = r(1, 64, 56, 56).to(memory_format=torch.channels_last)
    ops = {
        "add": lambda x: x + y,
        "relu": lambda x: torch.relu(x),
        "norm": lambda x: F.layer_norm(x, (768,), lw, lb),
        "linear": lambda x: F.linear(x, W),
        "linear_up": lambda x: F.linear(x, W2),
        "linear_down": lambda x: F.linear(x, W3),
        "gelu": lambda x: F.gelu(x),
        "conv3": lambda x: F.conv2d(x, cw, padding=1),
        "conv1_up": lambda x: F.conv2d(x, cw1),
        "bias_nhwc": lambda x: x + cb,
        "bias1_nhwc": lambda x: x + cb1,
        "crelu": lambda x: torch.relu(x),
        "cadd": lambda x: x + c0,
    }
    chains = {
        "add": ["add"], "relu": ["relu"], "norm": ["norm"], "linear": ["linear"],
        "add+relu": ["add", "relu"], "add+norm": ["add", "norm"],
        "linear+add": ["linear", "add"], "linear+relu": ["linear", "relu"], "linear+norm": ["linear", "norm"],
        "linear+add+norm": ["linear", "add", "norm"],
        "mlp": ["linear_up", "gelu", "linear_down", "add", "norm"],
        "conv3": ["conv3"], "bias_nhwc": ["bias_nhwc"], "crelu": ["crelu"],
        "conv3+bias": ["conv3", "bias_nhwc"], "conv3+bias+relu": ["conv3", "bias_nhwc", "crelu"],
        "bias+relu": ["bias_nhwc", "crelu"],
        "conv3+relu": ["conv3", "crelu"],
    }
    return ops, chains, x0, c0


def graph_of(torch, fn):
    """``fn`` captured as one CUDA graph after warm-up calls (tools/validate_models.capture_graph)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from validate_models import capture_graph

    return capture_graph(fn)[0]


def setup():
    """(output folder, torch) for a torch experiment: --out parsed, cuDNN's autotuner on, as the models run."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = Path(ap.parse_args().out)
    import torch

    torch.backends.cudnn.benchmark = True
    return out, torch


def save(out: Path, name: str, res: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(res, indent=1))


def timed(torch, gr, n=7, before=None):
    """Median seconds of ``n`` replays of ``gr``, each timed alone (``before()`` runs first, outside the window)."""
    out = []
    for _ in range(n):
        if before is not None:
            before()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        gr.replay()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(out)


def trace(torch, gr):
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        gr.replay()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.json"
        prof.export_chrome_trace(str(p))
        ev = json.loads(p.read_text()).get("traceEvents", [])
    return sorted(((e["ts"], float(e.get("dur", 0)), e.get("name", "")) for e in ev
                   if e.get("cat") == "kernel" and e.get("ph") == "X"), key=lambda x: x[0])


def run_chain(torch, ops, names, x0):
    st = {"x": x0}

    def unit():
        for n in names:
            st["x"] = ops[n](st["x"])

    def fn():
        for _ in range(REPS):
            unit()

    gr = graph_of(torch, fn)
    gr.replay()
    torch.cuda.synchronize()
    assert torch.isfinite(st["x"]).all().item(), "chain output not finite"
    per_kernel = timed(torch, gr) / (REPS * len(names))
    ks = trace(torch, gr)
    n = len(names)
    dur = {nm: [] for nm in names}
    gaps: dict[str, list[float]] = {}
    for i, (ts, d, _) in enumerate(ks):
        dur[names[i % n]].append(d)
        if i + 1 < len(ks):
            key = f"{names[i % n]}->{names[(i + 1) % n]}"
            gaps.setdefault(key, []).append(ks[i + 1][0] - (ts + d))
    span = (ks[-1][0] + ks[-1][1] - ks[0][0]) if ks else 0.0
    return {"kernels": names, "per_kernel_us": per_kernel * 1e6, "trace_kernels": len(ks),
            "trace_span_per_kernel_us": span / max(1, len(ks)),
            "duration_us": {k: statistics.median(v) for k, v in dur.items() if v},
            "gap_us": {k: statistics.median(v) for k, v in gaps.items()},
            "names": sorted({k[2][:90] for k in ks})}


def replay_sizes(torch, ops, x0, c0):
    """Replay time of graphs of 1..512 chained kernels (each replay timed alone, as a model is): the intercept is
    the fixed cost of a replay, the slope the cost of one more kernel."""
    out = {}
    for name, start in (("add", x0), ("crelu", c0), ("linear", x0)):
        rows = []
        for n in (1, 4, 16, 64, 96, 174, 512):
            st = {"x": start}

            def fn(n=n, st=st, name=name):
                for _ in range(n):
                    st["x"] = ops[name](st["x"])

            gr = graph_of(torch, fn)
            rows.append((n, timed(torch, gr, 21) * 1e6))
        import numpy as np

        slope, icpt = np.polyfit([r[0] for r in rows], [r[1] for r in rows], 1)
        out[name] = {"replay_us": rows, "slope_us": float(slope), "intercept_us": float(icpt)}
        print("replay", name, json.dumps(out[name]), flush=True)
    return out


def main():
    out, torch = setup()
    ops, chains, x0, c0 = build(torch)
    res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "reps": REPS, "chains": {}}
    with torch.inference_mode():
        for name, names in chains.items():
            start = c0 if names[0] in ("conv3", "bias_nhwc", "crelu", "cadd", "conv1_up", "bias1_nhwc") else x0
            try:
                res["chains"][name] = run_chain(torch, ops, names, start)
            except Exception as e:  # noqa: BLE001 - an experiment: record and go on
                res["chains"][name] = {"error": f"{type(e).__name__}: {e}"}
            r = res["chains"][name]
            print(name, json.dumps({k: r.get(k) for k in ("per_kernel_us", "duration_us", "gap_us", "error")}),
                  flush=True)
        res["replay"] = replay_sizes(torch, ops, x0, c0)
    save(out, "kernel_gaps.json", res)


if __name__ == "__main__":
    main()
