"""Where an eager transformers step's host time goes, and where the host waits for the GPU (issue 32).

The eager runtimes (``eager``, and ``hf-compiled``'s prefill) are priced as a host queue: the host issues each kernel
in a fixed time and runs ahead while a long kernel runs (hwprobe.predict.model ``host_queue``). A step that copies a
device value to the host (``.item()``, ``.tolist()``, ``nonzero``, a boolean test of a tensor) breaks that: the host
stops until the GPU has drained its queue. qwen3-30b-a3b's eager steps took about twice a dense model's host time
per kernel on the H200 (13.4 ms for 384 kernels at 1 x 512 against Llama-3.2-1B's 5.0 ms for 184), and the queue
cannot say why without knowing where the step waits.

This runs one eager step of each model under torch.profiler (CPU and CUDA), as tools/validate_hf_llm.py builds it
(transformers' own classes from config.json, random BF16 weights made on the GPU, the layer count cut), and
reports per step: the wall time (unprofiled, and under the profiler), the host time of every blocking CUDA
runtime call (synchronizations and device-to-host copies) with the top-level aten op and Python module it sits
under, and the host time per top-level aten op kind.

The profiler's view of a wait is a threshold guess (a device-to-host copy that found the GPU idle takes as long as
an asynchronous one that queued), so each step is also run once, unprofiled, under PyTorch's sync debug mode
(``torch.cuda.set_sync_debug_mode("warn")``): every call that synchronizes warns, and ``syncs`` counts them by the
module they ran in and the transformers source line that made them. A third call times each module's own host
time (forward hooks, its children's taken out; ``module_host_us``), with no profiler in the way.

    python3 tools/hf_host_syncs.py --out DIR [--configs A,B] [--cases prefill:1x512,decode:1x1024] \
        [--runtime eager|hf-compiled]                                                              # on the GPU
    python3 tools/hf_host_syncs.py --table FILE                                                      # anywhere
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

DEFAULT_CONFIGS = "qwen3-30b-a3b.json,llama-3.2-1b.json"
DEFAULT_CASES = "prefill:1x512,decode:1x1024"
# CUDA runtime calls in which the host waits for the device
BLOCKING = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy",
            "cudaMemcpyAsync", "cudaStreamWaitEvent")


def parse_cases(text: str) -> list[tuple[str, int, int]]:
    """'prefill:1x512,decode:1x1024' -> [("prefill", 1, 512), ("decode", 1, 1024)]."""
    out = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        phase, _, shape = item.partition(":")
        try:
            b, n = (int(x) for x in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"bad case {item!r}: want PHASE:BATCHxLENGTH") from None
        if phase not in ("prefill", "decode") or b < 1 or n < 1:
            raise ValueError(f"bad case {item!r}: phase prefill or decode, batch and length >= 1")
        out.append((phase, b, n))
    return out


def summarize(events: list[dict], wall_s: float) -> dict:
    """One profiled step's events (``name``, ``kind`` cpu_op / runtime / kernel, ``us``, ``top``: the top-level aten
    op above it, ``module``: the innermost nn.Module) and its unprofiled wall time -> the step's figures. A blocking
    call's host time is how long the host waited there (under the profiler, which slows the host)."""
    kernels = [e for e in events if e["kind"] == "kernel"]
    blocking = [e for e in events if e["kind"] == "runtime" and e["name"].startswith(BLOCKING) and e.get("module")
                and not (e["name"].startswith("cudaMemcpyAsync") and e["us"] < 20)]      # an async copy that queued;
    #                                                      outside every module: the harness's own synchronize
    by_op: dict[str, list[float]] = {}
    launches: dict[tuple, dict] = {}             # (module, top op, op, shapes) -> calls, device work launched
    for e in events:
        if e["kind"] == "cpu_op" and e.get("depth", 0) == 0:
            by_op.setdefault(e["name"], []).append(e["us"])
        if e.get("launched"):
            r = launches.setdefault((e["module"], e["top"], e["name"], e.get("shapes", "")),
                                    {"calls": 0, "launched": 0, "us": 0.0, "names": set()})
            r["calls"] += 1
            r["launched"] += len(e["launched"])
            r["us"] += sum(us for _, us in e["launched"])
            r["names"] |= {n for n, _ in e["launched"]}
    return {"wall_us": wall_s * 1e6, "kernels": len(kernels), "kernel_us": sum(e["us"] for e in kernels),
            "op_launches": [{"module": m, "top": t, "op": o, "shapes": sh, **r, "names": sorted(r["names"])[:6]}
                            for (m, t, o, sh), r in launches.items()],
            "blocking": [{k: e.get(k) for k in ("name", "us", "top", "module")} for e in blocking],
            "blocking_us": sum(e["us"] for e in blocking),
            "host_ops": sorted(({"op": k, "calls": len(v), "us": sum(v)} for k, v in by_op.items()),
                               key=lambda r: -r["us"])}


MARK = "module:"                         # record_function markers around each nn.Module's forward (module_marks)


def events_of(prof) -> list[dict]:
    """torch.profiler's events as plain dicts: the kernels (counted as the validation counts them: hf_host's
    ``kernel_events``), the aten ops (``depth``: how many aten ops they run under; ``top``: the outermost of those;
    ``module``: the innermost nn.Module marked around them) and the CUDA runtime calls (the same). The module
    markers themselves are left out."""
    from hwprobe.probes.calibration.hf_host import kernel_events

    out = [{"name": n, "kind": "kernel", "us": us} for n, us in kernel_events(prof)]
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA") or e.name.startswith(MARK):
            continue
        chain, p = [], e.cpu_parent
        while p is not None:
            chain.append(p.name)
            p = p.cpu_parent
        ops = [c for c in chain if not c.startswith(MARK)]
        module = next((c[len(MARK):] for c in chain if c.startswith(MARK)), "")
        row = {"name": e.name, "kind": "runtime" if e.name.startswith("cuda") else "cpu_op",
               "us": float(e.cpu_time_total), "depth": len(ops), "top": ops[-1] if ops else e.name, "module": module}
        launched = [k for k in (getattr(e, "kernels", None) or []) if not k.name.startswith(("Memset", "cudaGraph"))]
        if row["kind"] == "cpu_op" and launched:          # the device work this op itself launched (memcpys too)
            row["launched"] = [[k.name[:80], float(getattr(k, "duration", 0.0) or 0.0)] for k in launched]
            row["shapes"] = str(getattr(e, "input_shapes", "") or "")[:160]
        out.append(row)
    return out


def sync_census(torch, model, call, reset) -> dict:
    """One unprofiled call under the sync debug mode: each synchronizing call counted by (module, transformers source
    line); then one more call with only the module hooks timing each module's own host seconds (its children's
    taken out, waits at its syncs included)."""
    import traceback
    import warnings

    stack: list = []                     # (module class, start, [children's seconds])
    host: dict[str, float] = {}
    found: dict[tuple[str, str], int] = {}

    def enter(mod, _inp):
        stack.append((type(mod).__name__, time.perf_counter(), [0.0]))

    def leave(_mod, _inp, _out):
        name, t0, child = stack.pop()
        dt = time.perf_counter() - t0
        host[name] = host.get(name, 0.0) + dt - child[0]
        if stack:
            stack[-1][2][0] += dt

    def show(message, category, filename, lineno, file=None, line=None):
        if "synchroniz" not in str(message):
            return
        frames = [f for f in traceback.extract_stack()[:-1] if "/transformers/" in f.filename]
        f = frames[-1] if frames else None
        where = f"{Path(f.filename).name}:{f.lineno} {(f.line or '').strip()}".strip() if f else \
            f"{Path(filename).name}:{lineno}"
        key = (stack[-1][0] if stack else "", where[:160])
        found[key] = found.get(key, 0) + 1

    hooks = [h for m in model.modules() for h in (m.register_forward_pre_hook(enter), m.register_forward_hook(leave))]
    try:
        reset()
        torch.cuda.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = show
            torch.cuda.set_sync_debug_mode("warn")
            try:
                call()
            finally:
                torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()
        host.clear()
        reset()
        torch.cuda.synchronize()
        call()
        torch.cuda.synchronize()
    finally:
        for h in hooks:
            h.remove()
    return {"syncs": [{"module": m, "where": w, "count": n} for (m, w), n in sorted(found.items())],
            "module_host_us": {k: round(v * 1e6, 1) for k, v in sorted(host.items(), key=lambda kv: -kv[1])}}


def module_marks(torch, model) -> list:
    """A record_function marker around every module's forward (forward hooks), so that each op and runtime call
    names the module it ran in (torch.profiler's with_modules covers TorchScript only). Returns the hook handles."""
    from torch.profiler import record_function

    stack: list = []

    def enter(mod, _inp):
        rf = record_function(MARK + type(mod).__name__)
        rf.__enter__()
        stack.append(rf)

    def leave(_mod, _inp, _out):
        stack.pop().__exit__(None, None, None)

    return [h for m in model.modules() for h in (m.register_forward_pre_hook(enter), m.register_forward_hook(leave))]


def measure(configs: str, cases: list[tuple[str, int, int]], layers: int, runtime: str = "eager") -> dict:
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile
    from validate_hf_llm import Bench, load_configs

    from hwprobe.probes.calibration.hf_host import event_times

    out = {"torch": torch.__version__, "transformers": transformers.__version__,
           "gpu": torch.cuda.get_device_name(), "layers": layers, "runtime": runtime, "steps": []}
    for name, c in load_configs(configs, layers).items():
        bench = Bench(c["config"], reps=20, warmup=3)
        for phase, batch, length in cases:
            if runtime == "hf-compiled" and phase == "decode":
                continue                             # compiled: a CUDA graph, no host in the step
            call, reset, _, _ = bench.step(runtime, phase, batch, length)
            with torch.inference_mode():
                for _ in range(3):                   # warm: the first calls load kernels and plan
                    reset()
                    call()
                torch.cuda.synchronize()
                reset()
                hooks = module_marks(torch, bench.model)
                with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
                    t0 = time.perf_counter()
                    call()
                    torch.cuda.synchronize()
                    wall = time.perf_counter() - t0
                for h in hooks:
                    h.remove()
                census = sync_census(torch, bench.model, call, reset)
                walls = event_times(torch, call, reset, 10)   # the step's own time, as the validation times it
            evs = events_of(prof)
            row = {"model": name, "phase": phase, "batch": batch, "length": length,
                   **summarize(evs, sorted(walls)[len(walls) // 2]), "profiled_wall_us": wall * 1e6, **census}
            out["steps"].append(row)
            print(f"{name} {phase} {batch}x{length}: {row['wall_us']:.0f} us wall, {len(row['blocking'])} "
                  f"blocking calls ({row['blocking_us']:.0f} us), {sum(x['count'] for x in row['syncs'])} syncs",
                  flush=True)
        del bench
        torch.cuda.empty_cache()
    return out


def table(doc: dict) -> str:
    """A run as Markdown. The kernel count and GPU time that ``summarize`` keeps are left out: torch.profiler with CPU
    activity lists more kernel events than the CUDA-only listing the validation counts (441 against 384 for
    qwen3-30b-a3b's eager 1 x 512 prefill on the H200), and their summed device times exceeded the step's wall time."""
    lines = [f"{doc['gpu']}, torch {doc['torch']}, transformers {doc['transformers']}, {doc['layers']} layers",
             "", "| model | phase | batch x length | wall us | profiled wall us | blocking calls | blocking us | "
             "where (top op: module) | most host time (top-level ops, profiled us) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for s in doc["steps"]:
        where = sorted({f"{b['top']}: {b['module']}" for b in s["blocking"]})
        ops = ", ".join(f"{o['op'].removeprefix('aten::')} {o['calls']}x {o['us']:.0f}" for o in s["host_ops"][:5])
        lines.append(f"| {s['model']} | {s['phase']} | {s['batch']} x {s['length']} | {s['wall_us']:.0f} | "
                     f"{s.get('profiled_wall_us', 0):.0f} | {len(s['blocking'])} | {s['blocking_us']:.0f} | "
                     f"{'; '.join(where)[:200]} | {ops} |")
    steps = [s for s in doc["steps"] if "syncs" in s]      # runs before the sync census have none
    if steps:
        lines += ["", "Synchronizing calls (sync debug mode, one unprofiled call) and each module's own host time "
                  "(us, unprofiled, its children's taken out):", "",
                  "| model | phase | batch x length | syncs (count x module: transformers line) | host us by module |",
                  "|---|---|---|---|---|"]
        for s in steps:
            syncs = "; ".join(f"{x['count']} x {x['module']}: {x['where']}" for x in s["syncs"]) or "none"
            host = ", ".join(f"{k} {v:.0f}" for k, v in list(s["module_host_us"].items())[:6])
            lines.append(f"| {s['model']} | {s['phase']} | {s['batch']} x {s['length']} | {syncs} | {host} |")
    steps = [s for s in doc["steps"] if s.get("op_launches")]
    if steps:
        lines += ["", "Ops that launch more than one kernel a call, or a copy (profiled; device us summed over the "
                  "calls):", "", "| model | phase | batch x length | module | op (under top op) | input shapes | "
                  "calls | launches | device us | launched |", "|---|---|---|---|---|---|---|---|---|---|"]
        for s in steps:
            for r in s["op_launches"]:
                if r["launched"] > r["calls"] or any(n.startswith("Memcpy") for n in r["names"]):
                    lines.append(f"| {s['model']} | {s['phase']} | {s['batch']} x {s['length']} | {r['module']} | "
                                 f"{r['op']} ({r['top']}) | {r['shapes'][:60]} | {r['calls']} | {r['launched']} | "
                                 f"{r['us']:.0f} | {'; '.join(n[:40] for n in r['names'])} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write DIR/hf_host_syncs.json (runs on the GPU)")
    ap.add_argument("--table", type=Path, help="print a run's JSON as a table")
    ap.add_argument("--configs", default=DEFAULT_CONFIGS, help="comma list of config.json names in "
                    "tests/data/llm_configs, paths, or built-in names")
    ap.add_argument("--cases", default=DEFAULT_CASES, help="PHASE:BATCHxLENGTH, comma separated")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--runtime", choices=("eager", "hf-compiled"), default="eager",
                    help="hf-compiled: its prefill, the static-cache forward launched op by op")
    args = ap.parse_args(argv)
    if (args.out is None) == (args.table is None):
        ap.error("give --out (measure) or --table (print)")
    if args.table:
        try:
            raw = gzip.decompress(args.table.read_bytes()) if args.table.suffix == ".gz" else args.table.read_bytes()
            print(table(json.loads(raw)))
        except (OSError, ValueError, KeyError) as e:
            ap.error(f"{args.table}: {e}")
        return 0
    try:
        cases = parse_cases(args.cases)
    except ValueError as e:
        ap.error(str(e))
    from validate_hf_llm import DATA

    configs = ",".join(str(DATA / c) if (DATA / c).exists() else c for c in args.configs.split(",") if c)
    doc = measure(configs, cases, args.layers, args.runtime)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "hf_host_syncs.json").write_text(json.dumps(doc, indent=1) + "\n")
    print(table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
