"""Experiment (not hwprobe code): DynamicCache's torch.cat of the cache with a new token, the new part contiguous or
a strided view of a fused qkv output (Phi-3 at batch > 1). Times each with CUDA events, checks each output."""
import json
import sys

import torch


def time_ms(fn, reps=20):
    fn(); torch.cuda.synchronize()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(2 * reps)]
    out = []
    for i in range(reps):
        ev[2 * i].record(); fn(); ev[2 * i + 1].record()
    torch.cuda.synchronize()
    out = sorted(ev[2 * i].elapsed_time(ev[2 * i + 1]) for i in range(reps))
    return out[len(out) // 2]


if __name__ == "__main__":
    path = sys.argv[1]
    rows = []
    for d, kvh, h in ((96, 32, 32), (128, 8, 32), (128, 4, 28), (256, 8, 16)):
        for b, n in ((1, 1024), (16, 1024), (64, 1024), (1, 8192), (16, 8192), (64, 4096), (4, 512), (256, 256)):
            cache = torch.randn(b, kvh, n - 1, d, device="cuda", dtype=torch.bfloat16)
            qkv = torch.randn(b, 1, (h + 2 * kvh) * d, device="cuda", dtype=torch.bfloat16)
            v_fused = qkv[..., (h + kvh) * d:].view(b, 1, kvh, d).transpose(1, 2)
            v_own = torch.randn(b, 1, kvh * d, device="cuda", dtype=torch.bfloat16).view(b, 1, kvh, d).transpose(1, 2)
            for name, new in (("fused", v_fused), ("own", v_own), ("contig", v_fused.contiguous())):
                y = torch.cat((cache, new), dim=2)
                ok = torch.equal(y[:, :, :-1], cache) and torch.equal(y[:, :, -1:], new)
                ms = time_ms(lambda: torch.cat((cache, new), dim=2))
                nbytes = 2 * y.numel() * 2
                r = dict(d=d, kvh=kvh, b=b, n=n, new=name, contiguous=new.is_contiguous(), ms=ms,
                         tbs=nbytes / ms / 1e9, bytes=nbytes, ok=bool(ok))
                rows.append(r)
                print(json.dumps(r), flush=True)
            del cache, qkv
    # the kernel names, one of each
    from torch.profiler import ProfilerActivity, profile
    b, kvh, d, h, n = 16, 32, 96, 32, 1024
    cache = torch.randn(b, kvh, n - 1, d, device="cuda", dtype=torch.bfloat16)
    qkv = torch.randn(b, 1, (h + 2 * kvh) * d, device="cuda", dtype=torch.bfloat16)
    v = qkv[..., (h + kvh) * d:].view(b, 1, kvh, d).transpose(1, 2)
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        torch.cat((cache, v), dim=2); torch.cat((cache, v.contiguous()), dim=2); torch.cuda.synchronize()
    names = [e.name for e in p.events() if e.device_type.name == "CUDA"]
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
        f.write(json.dumps({"kernels": names}) + "\n")
