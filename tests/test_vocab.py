"""One list of allowed values: the enums and the JSON Schema's enums say the same, and the code speaks them through
hwprobe.vocab, never as bare strings."""

import ast
import json
from pathlib import Path

import pytest

from hwprobe import vocab
from hwprobe.profile import schema

ROOT = Path(__file__).resolve().parents[1]
# Unit and path words, never written out: "cpu" is left out, being also a probe target and a device kind (far more
# often read in those senses); FP32 on a CPU says its unit through ExecUnit.CPU all the same.
WORDS = ({w for w in (*vocab.ExecUnit.values(), *vocab.Path.values()) if w != vocab.ExecUnit.CPU}
         | {p + vocab.SPARSE_SUFFIX for p in vocab.Path.values()} | {vocab.SPARSE_SUFFIX})
PRECISIONS = set(vocab.Precision.values())
# Where bare words stay, and why.
EXEMPT = {
    "hwprobe/vocab.py": "the words' one definition",
    # A typed calibration section is being built in these (issue 34, another branch); they take the vocabulary
    # once it lands, so that the two changes do not cross.
    "hwprobe/predict/calibration.py": "calibration section under way",
    "hwprobe/profile.py": "calibration section under way",
    "hwprobe/profile_build.py": "calibration section under way",
    "hwprobe/probes/calibration/": "calibration section under way",
}
MARK = "# not vocab"     # a line whose string only looks like a word (the NCCL library's path, a rule's name)


def bare_words(source: str) -> list[str]:
    """"line: word" for each unit or path word written out as a string (anywhere but a docstring), and for each
    tuple, list or set literal naming two or more precisions (one precision list: vocab's, or its members)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    hits = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and n.value in WORDS and id(n) not in docs:
            hits.append((n.lineno, n.value))
        elif isinstance(n, (ast.Tuple, ast.List, ast.Set)):
            precs = [e.value for e in n.elts if isinstance(e, ast.Constant) and e.value in PRECISIONS]
            if len(precs) >= 2:
                hits.append((n.lineno, tuple(precs)))
    return [f"{line}: {word!r}" for line, word in sorted(hits, key=str) if MARK not in lines[line - 1]]


def test_the_code_speaks_the_vocabulary():
    """Issue 34: "tensor_core" was written out 62 times against 6 uses of ExecUnit.TENSOR_CORE, "library" 51
    times and Path.LIBRARY never, the ten precisions four times."""
    found = []
    for f in sorted((ROOT / "hwprobe").rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if not any(rel.startswith(e) for e in EXEMPT):
            found += [f"{rel}:{h}" for h in bare_words(f.read_text())]
    assert not found, "use hwprobe.vocab (ExecUnit, Path, Precision, PROFILE_PRECISIONS, SPARSE_SUFFIX):\n" + (
        "\n".join(found))


@pytest.mark.parametrize("snippet", [
    'if unit == "tensor_core":\n    pass\n',
    'x = {"library": 1}\n',
    'ok = u in ("cuda_core", "cpu")\n',
    'def f(path="instruction"):\n    return path\n',
    'key = "library_sparse24"\n',
    'PRECS = ("fp16", "bf16", "int8")\n',
])
def test_a_bare_word_is_found(snippet):
    assert len(bare_words(snippet)) == 1, snippet


def test_the_words_through_vocab_pass():
    src = ('"""A docstring may say tensor_core."""\nfrom hwprobe.vocab import ExecUnit, Path, Precision\n'
           'if unit == ExecUnit.TENSOR_CORE and unit != "cpu":\n    key = Path.LIBRARY\n'
           'PRECS = (Precision.FP16, "fp16.f32acc")\nname = "library"  # not vocab\n')
    assert bare_words(src) == []


def test_words_are_written_as_their_values():
    """A member in JSON, a format or a message reads as the plain string (byte-identical output)."""
    u, p = vocab.ExecUnit.TENSOR_CORE, vocab.Precision.FP16
    assert json.dumps({u: [p]}) == '{"tensor_core": ["fp16"]}' == json.dumps({u: [p]}, indent=None)
    assert json.dumps([u], indent=1) == '[\n "tensor_core"\n]'
    assert f"{u} {u:>12} {u!r} %s" % p == "tensor_core  tensor_core 'tensor_core' fp16"
    assert {u: 1}["tensor_core"] == 1 and vocab.Path.LIBRARY + vocab.SPARSE_SUFFIX == "library_sparse24"


def test_schema_enums_match_the_vocabulary():
    s = schema()
    compute = s["properties"]["compute"]
    assert tuple(compute["propertyNames"]["enum"]) == vocab.PROFILE_PRECISIONS
    assert set(compute["additionalProperties"]["propertyNames"]["enum"]) == set(vocab.ExecUnit.values())
    paths = set(compute["additionalProperties"]["additionalProperties"]["propertyNames"]["enum"])
    assert paths == {p for base in vocab.Path.values() for p in (base, base + "_sparse24")}
    assert tuple(s["$defs"]["ceiling"]["properties"]["unit"]["enum"]) == vocab.CEILING_UNITS


def test_profile_precisions_are_the_measured_ones_with_fp8_folded():
    folded = {vocab.profile_precision(p) for p in vocab.Precision.values()}
    assert folded == set(vocab.PROFILE_PRECISIONS)


def test_words_compare_as_plain_strings():
    assert vocab.Status.ERROR == "error" and str(vocab.Kind.MAP) == "map"


def test_stop_reasons_are_the_schemas():
    enum = schema()["$defs"]["ceiling"]["properties"]["stop_reason"]["enum"]
    assert [e for e in enum if e is not None] == list(vocab.StopReason.values())
