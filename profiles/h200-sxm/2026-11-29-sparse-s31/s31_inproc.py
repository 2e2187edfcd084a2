"""Issue 33 (31st session): gpu.sparse's FP8/INT8 16384 points as the probe measures them (dense baselines first,
settle, sustain), in ONE process, ROUNDS rounds over three variants in rotating order:
  sweep     the sweep's plan as committed
  sweep.m2  the sweep's chosen config on a fresh selection with SPLIT_K_MODE 2 (what the library search set)
  library   cusparseLtMatmulSearch
   python3 .ab/s31_inproc.py OUTDIR"""
import json
import sys

from hwprobe import api
from hwprobe.probes.compute import sparse as S

OUT = sys.argv[1]
ROUNDS = 3
MODE2 = {"on": False}
orig = S.SparseGemm._sweep


def sweep(self, rows):
    orig(self, rows)
    if not MODE2["on"]:
        return
    lt, A = self.lt, self.lt.MatmulAlgAttribute
    cid = self._alg_attr(A.CONFIG_ID)
    alg = lt.matmul_alg_selection_init(self.h, self.desc, lt.MatmulAlg.DEFAULT)
    self._alg_attr(A.CONFIG_ID, cid, alg)
    self._alg_attr(A.SPLIT_K_MODE, 2, alg)
    plan = lt.matmul_plan_init(self.h, self.desc, alg)
    self._fit_workspace(plan)
    self.alg, self.plan = self._replace(self.alg, self.plan, alg, plan)
    self._matmul(lt.matmul, 0)
    self.check(rows)


S.SparseGemm._sweep = sweep
variants = ["sweep", "sweep.m2", "library"]
rows = []
for r in range(ROUNDS):
    order = variants[r:] + variants[:r]
    for v in order:
        MODE2["on"] = v == "sweep.m2"
        res = api.run(device="0", suite=f".ab/s31_{'library' if v == 'library' else 'sweep'}.toml",
                      out=f"{OUT}/{v}-{r}")
        for m in res.measurements:
            if m.metric.endswith("sparse24.n16384") or ".dense." in m.metric:
                p = m.params
                row = {"round": r, "variant": v, "metric": m.metric, "value": round(m.value / 1e12, 1),
                       "sm_mhz": m.clocks.sm_mhz if m.clocks else None,
                       "power_w": m.clocks.power_w if m.clocks else None, "temp_c": m.clocks.temp_c if m.clocks else None,
                       "alg": p.get("cusparselt_alg"), "edges": [p.get(k) for k in p if "sentinel" in k][:3]}
                print(json.dumps(row), flush=True)
                rows.append(row)
        json.dump(rows, open(f"{OUT}/s31_inproc.json", "w"), indent=1)
