"""SASS evidence: which machine instruction a probe's kernel really issues.

A rate is only meaningful for the instruction that ran. ptxas may rewrite an FMA chain (IMAD into
IADD3/LEA, HFMA2 into its tensor-pipe twin HFMA2.MMA), so a probe disassembles its own cubin and
counts the opcodes in the timed loop. NVRTC builds the cubin here; cuobjdump (which needs nvdisasm
beside it or on NVDISASM_PATH) turns it into text. Every step returns None when its tool is absent.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from hwprobe.flags import Code, first

# Base opcodes of CUDA-core arithmetic and logic; used to say how many *other* such instructions share
# the loop with the intended one (moves, branches, loads and NOPs are not counted).
ARITH_OPCODES = frozenset({
    "FFMA", "FMUL", "FADD", "FFMA2", "FMUL2", "FADD2", "DFMA", "DMUL", "DADD",
    "HFMA2", "HMUL2", "HADD2", "IMAD", "IADD3", "IADD", "LEA", "SHF", "IDP", "IMUL", "XMAD", "IABS",
    "LOP3", "FSEL", "FMNMX", "HMNMX2", "VIMNMX", "IMNMX",
})

_INSTR = re.compile(r"^\s*/\*([0-9a-fA-F]+)\*/\s+(.*?)\s*;")
_PRED = re.compile(r"^@!?U?P[T0-9]+\s+")
_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_ARCH = re.compile(r"code for (sm_\w+)|\.target\s+(sm_\w+)")
_BRA_TARGET = re.compile(r"(0x[0-9a-fA-F]+)\s*$")   # "0x100", "UP0, 0xf0" (sm_100+), "!P0, 0x2120"

# Where pip's nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm put their tools, relative to site-packages.
_WHEEL_BIN = ("nvidia/cu13/bin", "nvidia/cuda_cuobjdump/bin", "nvidia/cuda_nvdisasm/bin")


def cubin(source: str, options: tuple[str, ...], name_expressions: tuple[str, ...] = ()) -> bytes | None:
    """Compile ``source`` with NVRTC to a cubin (options must hold a real ``-arch=sm_XY``).

    Uses cuda-python's ``cuda.bindings.nvrtc`` when present, else CuPy's NVRTC wrapper; None when neither
    can produce a cubin (the probe then records no SASS evidence rather than failing).
    """
    for build in (_cubin_cuda_bindings, _cubin_cupy):
        try:
            out = build(source, tuple(options), tuple(name_expressions))
        except Exception:
            out = None
        if out:
            return out
    return None


def _cubin_cuda_bindings(source: str, options: tuple[str, ...], names: tuple[str, ...]) -> bytes | None:
    from cuda.bindings import nvrtc

    ok = nvrtc.nvrtcResult.NVRTC_SUCCESS
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"hwprobe.cu", 0, [], [])
    if err != ok:
        return None
    try:
        for n in names:
            nvrtc.nvrtcAddNameExpression(prog, n.encode())
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != ok:
            return None
        err, size = nvrtc.nvrtcGetCUBINSize(prog)
        if err != ok or not size:
            return None
        buf = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(prog, buf)
        return bytes(buf) if err == ok else None
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def _cubin_cupy(source: str, options: tuple[str, ...], names: tuple[str, ...]) -> bytes | None:
    from cupy_backends.cuda.libs import nvrtc

    prog = nvrtc.createProgram(source, "hwprobe.cu", (), ())
    try:
        for n in names:
            nvrtc.addNameExpression(prog, n)
        nvrtc.compileProgram(prog, list(options))
        return bytes(nvrtc.getCUBIN(prog))
    finally:
        nvrtc.destroyProgram(prog)


def _candidate_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("CUDA_HOME"):
        dirs.append(Path(os.environ["CUDA_HOME"]) / "bin")
    dirs.append(Path("/usr/local/cuda/bin"))
    for sp in sys.path:
        if sp and sp.endswith("site-packages"):
            dirs.extend(Path(sp) / rel for rel in _WHEEL_BIN)
    return dirs


def _find(tool: str) -> str | None:
    hit = shutil.which(tool)
    if hit:
        return hit
    for d in _candidate_dirs():
        p = d / tool
        if p.is_file() and os.access(p, os.X_OK):
            return str(p)
    return None


def find_cuobjdump() -> str | None:
    """cuobjdump from PATH, $CUDA_HOME/bin, /usr/local/cuda/bin or pip's nvidia-cuda-cuobjdump."""
    return _find("cuobjdump")


def find_nvdisasm() -> str | None:
    """nvdisasm, which CUDA 13's ``cuobjdump -sass`` calls to do the work."""
    return _find("nvdisasm")


@functools.cache
def can_disassemble() -> bool:
    """Whether ``disassemble`` can work here: cuobjdump, plus nvdisasm for CUDA 13's cuobjdump, which calls it."""
    tool = find_cuobjdump()
    if tool is None:
        return False
    if find_nvdisasm():
        return True
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    m = re.search(r"release (\d+)\.", out)
    return bool(m) and int(m.group(1)) < 13


def of_source(file: str, options: tuple[str, ...]) -> str | None:
    """SASS text of hwprobe/kernels' ``file`` compiled with exactly these NVRTC options (None where it can't be had
    here: no disassembler, or the build failed: the probe then says its SASS was not checked)."""
    from hwprobe.kernels import source

    if not can_disassemble():
        return None
    try:
        binary = cubin(source(file), options)
        return disassemble(binary) if binary else None
    except Exception:
        return None


def job(file: str, options: tuple[str, ...]) -> tuple:
    """(key, make) of ``of_source(file, options)``: what ``hwprobe.kernels.once`` runs once per process and
    ``ahead`` starts early on a worker, so a probe's SASS is ready when its samples end."""
    return ("sass", file, options), functools.partial(of_source, file, options)


def once_of(file: str, options: tuple[str, ...]) -> str | None:
    """``of_source`` once per process (waiting for an ``ahead`` already under way)."""
    from hwprobe.kernels import once

    return once(*job(file, options))


def disassemble(cubin_bytes: bytes) -> str | None:
    """``cuobjdump -sass`` of a cubin, or None when cuobjdump (or the nvdisasm it needs) is missing."""
    tool = find_cuobjdump()
    if tool is None or not cubin_bytes:
        return None
    env = dict(os.environ)
    nvd = find_nvdisasm()
    if nvd:
        env["NVDISASM_PATH"] = str(Path(nvd).parent)
        env["PATH"] = str(Path(nvd).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin_bytes)
        try:
            res = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True, env=env, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
    if res.returncode != 0 or "Function" not in res.stdout:
        return None
    return res.stdout


def parse(sass_text: str) -> dict[str, list[tuple[int, str, str]]]:
    """Instructions per function: ``{name: [(address, opcode, operands), ...]}`` (predicates dropped)."""
    funcs: dict[str, list[tuple[int, str, str]]] = {}
    cur: list[tuple[int, str, str]] | None = None
    for line in sass_text.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = _INSTR.match(line)
        if m is None or cur is None:
            continue
        text = _PRED.sub("", m.group(2).strip().lstrip("{").strip())
        if not text:
            continue
        op, _, rest = text.partition(" ")
        cur.append((int(m.group(1), 16), op, rest.strip()))
    return funcs


def arch(sass_text: str) -> str | None:
    m = _ARCH.search(sass_text)
    return (m.group(1) or m.group(2)) if m else None


def instructions(sass_text: str, function: str | None = None) -> list[tuple[int, str, str]]:
    """Instructions of one function (exact name, else the one function whose name contains it), or of all."""
    funcs = parse(sass_text)
    if function is None:
        return [ins for body in funcs.values() for ins in body]
    if function in funcs:
        return funcs[function]
    # Mangled template names (NVRTC name_expressions): accept a unique function containing the text.
    hits = [k for k in funcs if function in k]
    return funcs[hits[0]] if len(hits) == 1 else []


def loop_body(instrs: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    """The instructions of the largest loop: from a backward branch's target to the branch itself.

    The timed loop of a probe kernel is by far its largest loop; the ``BRA`` to itself that ptxas puts
    after ``EXIT`` is not a loop.
    """
    best: list[tuple[int, str, str]] = []
    for i, (addr, op, rest) in enumerate(instrs):
        if op.split(".")[0] != "BRA":
            continue
        m = _BRA_TARGET.search(rest)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        j = i   # walk back to the target, never past the start of this function (addresses restart there)
        while j > 0 and target < instrs[j][0] and instrs[j - 1][0] < instrs[j][0]:
            j -= 1
        if instrs[j][0] == target and i + 1 - j > len(best):
            best = instrs[j:i + 1]
    return best


def histogram(instrs: list[tuple[int, str, str]]) -> Counter:
    """Counts per opcode *prefix*: an ``HFMA2.MMA`` adds one to "HFMA2" and one to "HFMA2.MMA".

    So ``h["HFMA2"]`` counts every HFMA2 form, ``h["HFMA2.MMA"]`` only the tensor-pipe form, and
    ``h["IDP.4A"]`` matches ``IDP.4A.S8.S8``.
    """
    h: Counter = Counter()
    for _, op, _ in instrs:
        parts = op.split(".")
        for i in range(1, len(parts) + 1):
            h[".".join(parts[:i])] += 1
    return h


def opcode_histogram(sass_text: str, function: str | None = None, *, loop_only: bool = False) -> Counter:
    """Opcode counts (with and without modifiers, see ``histogram``) of one function or of all;
    ``loop_only`` keeps each function's largest loop."""
    if function is None and loop_only:
        return sum((histogram(loop_body(body)) for body in parse(sass_text).values()), Counter())
    instrs = instructions(sass_text, function)
    return histogram(loop_body(instrs) if loop_only else instrs)


def full_opcodes(instrs: list[tuple[int, str, str]]) -> Counter:
    """Counts per complete opcode (``HFMA2`` and ``HFMA2.MMA`` apart), for reports."""
    return Counter(op for _, op, _ in instrs)


def evidence(sass_text: str, function: str | None, expected_opcodes: tuple[str, ...] | list[str]) -> str:
    """One line for a measurement's notes, e.g. "SASS sm_90: 512 FFMA in loop body (517 instr), 0 other
    arithmetic". Counts the loop body when the function has a loop, the whole function otherwise."""
    instrs = instructions(sass_text, function)
    if not instrs:
        return f"SASS: function {function!r} not found"
    body = loop_body(instrs)
    where = "loop body" if body else "function"
    body = body or instrs
    full = full_opcodes(body)
    expected = tuple(expected_opcodes)

    def is_expected(op: str) -> bool:
        return any(op == e or op.startswith(e + ".") for e in expected)

    hits = sorted(((op, n) for op, n in full.items() if is_expected(op)), key=lambda t: -t[1])
    found = " + ".join(f"{n} {op}" for op, n in hits) or "0 " + "/".join(expected)
    other = sum(n for op, n in full.items() if not is_expected(op) and op.split(".")[0] in ARITH_OPCODES)
    return f"SASS {arch(sass_text) or '?'}: {found} in {where} ({len(body)} instr), {other} other arithmetic"


def has_opcodes(sass_text: str, function: str | None, expected_opcodes: tuple[str, ...] | list[str]) -> bool:
    """True when every expected opcode (prefix match) occurs in the function's loop body (or body)."""
    instrs = instructions(sass_text, function)
    h = histogram(loop_body(instrs) or instrs)
    return all(h[e] > 0 for e in expected_opcodes)


def invalidate(m) -> None:
    """A measurement whose timed loop is not the intended instruction: not a figure of that instruction.
    ``valid`` False and the typed status "invalid" (the first sass_mismatch flag is the reason)."""
    m.valid = False
    if hasattr(m, "status"):
        m.status = "invalid"
        m.reason = m.reason or first(m.flags, Code.SASS_MISMATCH) or Code.SASS_MISMATCH.value
