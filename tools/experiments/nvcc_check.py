"""Compile hwprobe's kernel files with a local nvcc (no GPU needed) for sm_90, instantiating the templates the
probes name, so a syntax or ptxas error shows before device time is spent. Optionally dumps SASS.

    .venv/bin/python tools/experiments/nvcc_check.py mem_cache.cu hopper_mem.cu l2map.cu [--sass]
"""
import os
import re
import subprocess
import sys
import tempfile

from hwprobe.kernels import source

CUOBJDUMP = os.path.join(os.path.dirname(sys.executable), "..", "lib", f"python{sys.version_info.major}."
                         f"{sys.version_info.minor}", "site-packages", "nvidia", "cu13", "bin", "cuobjdump")
NAMES = {   # template instantiations the probes ask NVRTC for (name_expressions)
    "mem_cache.cu": ["sweep_read<0>", "sweep_read<1>", "chase<0>", "chase<1>"],
}


def instantiations(name: str) -> list[str]:
    if name == "mem_cache.cu":
        from hwprobe.probes.memory.l2plan import kernel_names

        return NAMES[name] + list(kernel_names())
    if name == "hopper_mem.cu":
        from hwprobe.probes.memory.hopper import DSM_CLUSTERS

        return [f"dsm_read<{c}>" for c in DSM_CLUSTERS]
    return []


def explicit(src: str, expr: str) -> str:
    """`template __global__ void f<...>(args);` from the template's own parameter list."""
    fname = expr.split("<")[0]
    m = re.search(rf"\b{fname}\s*\(([^)]*)\)", src)
    params = ", ".join(" ".join(p.split()[:-1]) if len(p.split()) > 1 else p for p in m.group(1).split(","))
    params = re.sub(r"__restrict__", "", params)
    return f"template __global__ void {expr}({params});"


def main(argv: list[str]) -> int:
    sass = "--sass" in argv
    files = [a for a in argv if not a.startswith("--")]
    bad = 0
    for name in files:
        src = source(name)
        src += "\n" + "\n".join(explicit(src, e) for e in instantiations(name)) + "\n"
        with tempfile.TemporaryDirectory() as d:
            cu, cubin = os.path.join(d, "k.cu"), os.path.join(d, "k.cubin")
            open(cu, "w").write(src)
            r = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-Xptxas", "-v", "-o", cubin, cu],
                               capture_output=True, text=True)
            print(f"== {name}: rc {r.returncode}")
            print("\n".join(line for line in r.stderr.splitlines() if "error" in line or "Used" in line
                            or "entry function" in line)[:8000])
            bad += r.returncode != 0
            if sass and r.returncode == 0:
                print(subprocess.run([CUOBJDUMP, "--dump-sass", cubin], capture_output=True, text=True).stdout)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
