"""The analysis' speed targets, timed end to end: ``python -m hwprobe.analysis.bench [PROFILE]``.

- ``hwprobe analyze resnet50 --profile PROFILE`` in under 2 s (the whole command: interpreter start included);
- a 100 MB ONNX model (built here with onnx.helper: weights embedded in the file) in under 10 s;
- a 10,000-row Nsight Systems kernel CSV (quoted names with commas) imported in under 2 s, and joined.
Prints one line per target and exits 1 if any is missed. A benchmark, not a unit test: timings depend on the
machine.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_PROFILE = "profiles/h200-sxm/2026-11-26-full/profile.json"


def big_onnx(path: Path, megabytes: float = 100.0) -> int:
    """A chain of 1024x1024 fully connected layers with ReLUs, its FP32 weights embedded: ~4 MB per layer."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    n = max(1, round(megabytes * 1e6 / (1024 * 1024 * 4)))
    rng = np.random.default_rng(0)
    nodes, inits, x = [], [], "x"
    for i in range(n):
        w = numpy_helper.from_array(rng.standard_normal((1024, 1024), dtype=np.float32), f"w{i}")
        inits.append(w)
        nodes += [helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"fc{i}"),
                  helper.make_node("Relu", [f"m{i}"], [f"r{i}"], name=f"relu{i}")]
        x = f"r{i}"
    g = helper.make_graph(nodes, "big", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1024])],
                          [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return path.stat().st_size


def big_kernel_csv(path: Path, rows: int = 10_000) -> None:
    names = ['"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, '
             'at::detail::Array<char*, 3>>(int, T2, T3) [{i}]"',
             "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_{i}",
             "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT_{i}", '"implicit_convolve_sgemm<float, float, {i}>"',
             "custom_kernel_{i}"]
    lines = ["Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"]
    for i in range(rows):
        t = 1000 + i
        lines.append(f"0.01,{t * 10},10,{t},{t},{t - 5},{t + 5},1.5," + names[i % len(names)].format(i=i))
    path.write_text("\n".join(lines) + "\n")


def _cli(*args: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "hwprobe", *args], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode:
        raise SystemExit(f"hwprobe {' '.join(args)} failed: {r.stderr.strip()}")
    return dt


def main(profile: str = DEFAULT_PROFILE) -> int:
    from hwprobe.analysis import analyze
    from hwprobe.analysis.timings import parse

    results = []
    _cli("analyze", "resnet50", "--profile", profile)              # warm the file cache once
    t = min(_cli("analyze", "resnet50", "--profile", profile) for _ in range(3))
    results.append(("hwprobe analyze resnet50 --profile (CLI, best of 3)", t, 2.0))
    with tempfile.TemporaryDirectory() as d:
        onx = Path(d) / "big.onnx"
        size = big_onnx(onx)
        t0 = time.perf_counter()
        a = analyze(onx, profile, precision="fp16")
        dt = time.perf_counter() - t0
        results.append((f"analyze a {size / 1e6:.0f} MB ONNX ({len(a.layers)} layers), library", dt, 10.0))
        results.append((f"hwprobe analyze {size / 1e6:.0f} MB ONNX (CLI)", _cli("analyze", str(onx), "--profile",
                                                                                 profile), 10.0))
        kcsv = Path(d) / "kern.csv"
        big_kernel_csv(kcsv)
        t0 = time.perf_counter()
        recs = parse(kcsv).records
        results.append((f"import a {len(recs)}-row nsys kernel CSV", time.perf_counter() - t0, 2.0))
        results.append(("hwprobe analyze resnet50 --times <10,000-row CSV> (CLI)",
                        _cli("analyze", "resnet50", "--profile", profile, "--times", str(kcsv)), 2.0))
    bad = 0
    for what, t, limit in results:
        ok = t < limit
        bad += not ok
        print(f"{'ok  ' if ok else 'SLOW'} {t:6.2f} s  (target < {limit:g} s)  {what}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
