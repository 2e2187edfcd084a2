"""33rd session, experiment (no committed code changed): does a pad of the point's own work, queued between the
settle (and the before-sentinel) and the timed window, remove the window's opening hump? Runs gpu.sparse (sweep,
steady settle) in-process with the pad patched in (P) or not (S), alternating.
    python3 .ab/s33c_pad.py OUTDIR VARIANT"""
import math
import sys

import hwprobe.api
from hwprobe.probes.compute import cublas, sparse

PAD_S = 0.03
out, variant = sys.argv[1], sys.argv[2]
pending = {}


def wrap_settle(real):
    def settle_runner(cp, runner, sustain):
        got = real(cp, runner, sustain)
        pending["runner"], pending["cp"] = runner, cp
        return got
    return settle_runner


def wrap_sentinel(real):
    def sentinel(ctx):
        got = real(ctx)
        r = pending.pop("runner", None)
        if r is not None and variant == "P":     # the before-window sentinel: queue the pad, no sync
            for _ in range(max(1, math.ceil(PAD_S / (r.per_call_s * r.reps)))):
                r.fn()
        return got
    return sentinel


for mod in (cublas, sparse):
    mod.settle_runner = wrap_settle(mod.settle_runner)
    mod.sentinel = wrap_sentinel(mod.sentinel)
hwprobe.api.run(device="0", suite=".ab/s33_S.toml", out=out)
