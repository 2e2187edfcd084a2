"""One gpu.sparse run in its own process; MODE=2 makes the sweep's pick (and finalist) run with SPLIT_K_MODE 2 on a
fresh selection of the same config, as cuSPARSELt's search set it.   MODE=1|2 python3 .ab/s31_one.py SUITE OUTDIR"""
import os
import sys

from hwprobe import api
from hwprobe.probes.compute import sparse as S

orig = S.SparseGemm._sweep


def with_mode(self, alg_plan):
    lt, A = self.lt, self.lt.MatmulAlgAttribute
    cid = self._alg_attr(A.CONFIG_ID, alg=alg_plan[0])
    alg = lt.matmul_alg_selection_init(self.h, self.desc, lt.MatmulAlg.DEFAULT)
    self._alg_attr(A.CONFIG_ID, cid, alg)
    self._alg_attr(A.SPLIT_K_MODE, 2, alg)
    plan = lt.matmul_plan_init(self.h, self.desc, alg)
    self._fit_workspace(plan)
    return alg, plan


def sweep(self, rows):
    orig(self, rows)
    if os.environ.get("MODE") == "2":
        self.alg, self.plan = self._replace(self.alg, self.plan, *with_mode(self, (self.alg, self.plan)))
        self._matmul(self.lt.matmul, 0)
        self.check(rows)
        self.finalist = None


S.SparseGemm._sweep = sweep
api.run(device="0", suite=sys.argv[1], out=sys.argv[2])
