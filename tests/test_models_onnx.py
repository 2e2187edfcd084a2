"""ONNX import: a model built here with onnx.helper, analyzed and checked against the same layers as a CSV;
not-modelled ops, symbolic batch, external data, and bad files (one line, exit 2)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto as T  # noqa: E402
from onnx import helper as h  # noqa: E402
from onnx import numpy_helper as nh  # noqa: E402

from hwprobe.analysis import analyze, load_model  # noqa: E402
from hwprobe.errors import InputError  # noqa: E402
from tests.refs import H200_FULL  # noqa: E402

TINY_CSV = Path(__file__).parent / "data" / "tiny_layers.csv"
PROFILE = str(H200_FULL / "profile.json")


def _init(name, *shape, dtype=np.float32):
    return nh.from_array(np.zeros(shape, dtype), name)


def tiny_model(extra_nodes=(), extra_inits=(), batch="N"):
    """The tiny_layers.csv network: conv-bn-relu-pool, strided conv, depthwise conv, residual add, pooling, FC."""
    nodes = [
        h.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        h.make_node("BatchNormalization", ["c1", "s", "bb", "mu", "var"], ["n1"], name="bn1"),
        h.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        h.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        h.make_node("Conv", ["p1", "w2"], ["c2"], name="conv2", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                    strides=[2, 2]),
        h.make_node("Conv", ["c2", "w3"], ["c3"], name="dw3", kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32),
        h.make_node("Add", ["c2", "c3"], ["a"], name="add"),
        h.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
        h.make_node("Flatten", ["g"], ["f"], name="flatten"),
        h.make_node("Gemm", ["f", "wf", "bf"], ["y0"], name="fc", transB=1),
        h.make_node("Softmax", ["y0"], ["y"], name="softmax"),
        *extra_nodes,
    ]
    inits = [_init("w1", 16, 3, 3, 3), _init("b1", 16), _init("s", 16), _init("bb", 16), _init("mu", 16),
             _init("var", 16), _init("w2", 32, 16, 3, 3), _init("w3", 32, 1, 3, 3), _init("wf", 10, 32),
             _init("bf", 10), *extra_inits]
    outs = [h.make_tensor_value_info("y", T.FLOAT, None)] + [
        h.make_tensor_value_info(n.output[0], T.FLOAT, None) for n in extra_nodes]
    g = h.make_graph(nodes, "tiny", [h.make_tensor_value_info("x", T.FLOAT, [batch, 3, 32, 32])], outs, inits)
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


@pytest.fixture
def tiny_onnx(tmp_path):
    p = tmp_path / "tiny.onnx"
    onnx.save(tiny_model(), str(p))
    return p


@pytest.mark.parametrize("convention", ["standard", "seed"])
@pytest.mark.parametrize("batch", [1, 3])
def test_onnx_matches_the_same_layers_as_csv(tiny_onnx, convention, batch):
    a = analyze(tiny_onnx, PROFILE, precision="fp16", batch=batch, convention=convention)
    b = analyze(TINY_CSV, PROFILE, precision="fp16", batch=batch, convention=convention)
    cols = ["name", "op", "macs", "ops", "bytes", "weights", "inputs", "outputs", "unit", "path", "time_s"]
    assert a.layers[cols].to_dict("records") == b.layers[cols].to_dict("records")
    assert a.totals["ops"] == b.totals["ops"] and a.totals["time_s"] == pytest.approx(b.totals["time_s"])


def test_onnx_counts(tiny_onnx):
    m = {x.name: x for x in load_model(tiny_onnx, batch=2).layers}
    assert m["conv1"].macs == 2 * 32 * 32 * 16 * 3 * 9 and m["conv1"].weights == 16 * 27 + 16
    assert m["dw3"].depthwise and m["dw3"].macs == 2 * 8 * 8 * 32 * 9
    assert m["bn1"].weights == 64 and m["bn1"].state == 32          # scale, bias, mean, var; mean/var are state
    assert m["fc"].op == "gemm" and m["fc"].macs == 2 * 32 * 10 and m["fc"].rows == 2
    assert m["flatten"].op == "reshape" and m["flatten"].macs == 0 and m["flatten"].elem_ops == 0
    assert m["gap"].outputs == 2 * 32


def test_not_modelled_ops_keep_their_bytes(tmp_path):
    extra = [h.make_node("Resize", ["r1", "", "scales"], ["up"], name="resize", mode="nearest")]
    scales = nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")
    p = tmp_path / "m.onnx"
    onnx.save(tiny_model(extra, [scales]), str(p))
    m = load_model(p)
    r = next(x for x in m.layers if x.name == "resize")
    assert not r.modelled and r.op == "other" and r.macs == 0 and r.elem_ops == 0
    assert r.outputs == 16 * 64 * 64 and r.inputs == 16 * 32 * 32 and r.weights == 4
    assert any("Resize" in n for n in m.notes)
    a = analyze(p, PROFILE)
    assert a.totals["not_modelled"] == 1
    row = a.layers.set_index("name").loc["resize"]
    assert row["bytes"] == (16 * 64 * 64 + 16 * 32 * 32 + 4) * 4 and row["bound"] == "memory"


def test_unnamed_nodes_and_matmul(tmp_path):
    nodes = [h.make_node("MatMul", ["a", "b"], ["c"]), h.make_node("LayerNormalization", ["c", "g", "be"], ["d"])]
    g = h.make_graph(nodes, "mm", [h.make_tensor_value_info("a", T.FLOAT, [4, 64, 128]),
                                   h.make_tensor_value_info("b", T.FLOAT, [4, 128, 32])],
                     [h.make_tensor_value_info("d", T.FLOAT, None)], [_init("g", 32), _init("be", 32)])
    p = tmp_path / "mm.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(p))
    mm, ln = load_model(p).layers
    assert mm.name == "MatMul_0" and mm.op == "matmul" and mm.macs == 4 * 64 * 32 * 128
    assert mm.weights == 0 and mm.inputs == 4 * 64 * 128 + 4 * 128 * 32      # both operands are activations
    assert ln.op == "layernorm" and ln.weights == 64 and ln.elem_ops == 6 * 4 * 64 * 32


def test_convtranspose_and_transposed_gemm_counts(tmp_path):
    """Issue 35 (mutation check): ConvTranspose's MACs are every input element times its Cout/g x kernel taps
    (W is [Cin, Cout/g, k...]), not the output's count as for Conv; Gemm with transA=1 reads K from A's first dim."""
    nodes = [h.make_node("ConvTranspose", ["x", "wt"], ["up"], name="up", kernel_shape=[3, 3], strides=[2, 2],
                         group=2),
             h.make_node("Gemm", ["at", "wg", "bg"], ["y"], name="fc_t", transA=1)]
    g = h.make_graph(nodes, "tr", [h.make_tensor_value_info("x", T.FLOAT, [2, 8, 4, 4]),
                                   h.make_tensor_value_info("at", T.FLOAT, [32, 6])],
                     [h.make_tensor_value_info("up", T.FLOAT, None), h.make_tensor_value_info("y", T.FLOAT, None)],
                     [_init("wt", 8, 4, 3, 3), _init("wg", 32, 10), _init("bg", 10)])
    p = tmp_path / "tr.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(p))
    up, fc = load_model(p).layers
    assert up.op == "convtranspose" and (up.cin, up.cout, up.groups, up.kernel) == (8, 8, 2, (3, 3))
    assert up.out_hw == (9, 9) and up.outputs == 2 * 8 * 9 * 9             # (4 - 1) x 2 + 3 = 9
    assert up.macs == (2 * 8 * 4 * 4) * 4 * 9                              # inputs x Cout/g x taps
    assert up.macs != 2 * 8 * 9 * 9 * 4 * 9                                # not Conv's rule on the output
    assert fc.op == "gemm" and (fc.rows, fc.cin, fc.cout) == (6, 32, 10) and fc.macs == 6 * 10 * 32
    assert fc.weights == 32 * 10 + 10 and fc.inputs == 32 * 6 and fc.outputs == 6 * 10


def test_external_data_is_never_read(tmp_path):
    m = tiny_model()
    big = nh.from_array(np.ones((256, 256), np.float32), "wbig")
    m.graph.initializer.append(big)
    onnx.save(m, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="ext.bin", size_threshold=1024)
    (tmp_path / "ext.bin").write_bytes(b"")                   # truncated weights: a reader of data would fail
    a = analyze(tmp_path / "ext.onnx", PROFILE)
    assert a.model.params > 0 and len(a.layers) == 11


def _reshape_model():
    """x [2, 3, 4] -> Reshape to Concat([2], [12]) (shape arithmetic on two constants) -> MatMul by W [12, 5]: the
    MatMul's rows and K are known only where the constants were read."""
    a, b = nh.from_array(np.array([2], np.int64), "a"), nh.from_array(np.array([12], np.int64), "b")
    nodes = [h.make_node("Concat", ["a", "b"], ["shape"], name="cat", axis=0),
             h.make_node("Reshape", ["x", "shape"], ["r"], name="flat"),
             h.make_node("MatMul", ["r", "w"], ["y"], name="mm")]
    g = h.make_graph(nodes, "rs", [h.make_tensor_value_info("x", T.FLOAT, [2, 3, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [_init("w", 12, 5), a, b])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 17)])


def test_small_constants_in_external_data_are_read_from_their_offset(tmp_path):
    """Issue 35 (mutation run): a shape constant kept in the external data file (after the weight, so at an
    offset) is read from there, at its offset and length; where the file is gone the shape stays unknown."""
    onnx.save(_reshape_model(), str(tmp_path / "m.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="m.bin", size_threshold=0)
    info = {e.key: e.value for t in onnx.load(str(tmp_path / "m.onnx"), load_external_data=False).graph.initializer
            if t.name == "b" for e in t.external_data}
    assert int(info["offset"]) > 0                                  # the test needs the constant past the start
    cat, flat, mm = load_model(tmp_path / "m.onnx").layers
    assert cat.shape_only and mm.modelled and mm.macs == 2 * 5 * 12 and mm.cin == 12 and mm.rows == 2
    assert flat.outputs == 24
    (tmp_path / "m.bin").unlink()
    mm = load_model(tmp_path / "m.onnx").layers[-1]
    assert not mm.modelled and mm.macs == 0


MODELLED_OPS = {"Conv": ["w4"], "ConvTranspose": ["w4"], "Gemm": ["w2"], "MatMul": ["w2"],
                "BatchNormalization": ["s", "s", "s", "s"], "Concat": ["x"], "Softmax": [], "LogSoftmax": [],
                "LayerNormalization": ["s"], "Relu": [], "Add": ["x"], "MaxPool": [], "GlobalAveragePool": [],
                "Transpose": []}


@pytest.mark.parametrize("op", sorted(MODELLED_OPS))
def test_a_modelled_op_without_a_shape_says_so(tmp_path, op):
    """Issue 35 (mutation run): each op hwprobe models, fed an input of unknown shape, is kept with its bytes and
    the reason (shape not inferred), not called an op hwprobe does not model."""
    attrs = {"axis": 0} if op == "Concat" else {"kernel_shape": [2, 2]} if op == "MaxPool" else {}
    node = h.make_node(op, ["x", *MODELLED_OPS[op]], ["y"], name="n", **attrs)
    g = h.make_graph([node], "u", [h.make_tensor_value_info("x", T.FLOAT, None)],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [_init("w4", 4, 3, 3, 3), _init("w2", 8, 8), _init("s", 3)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "u.onnx"))
    (layer,) = load_model(tmp_path / "u.onnx").layers
    assert layer.op == "other" and not layer.modelled
    assert layer.note == f"{op}: shape not inferred (symbolic or unknown dims); bytes only (partly unknown)"


def test_an_op_hwprobe_does_not_model_says_so(tmp_path):
    node = h.make_node("Resize", ["x", "", "sc"], ["y"], name="up", mode="nearest")
    g = h.make_graph([node], "r", [h.make_tensor_value_info("x", T.FLOAT, [1, 3, 4, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc")])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "r.onnx"))
    (layer,) = load_model(tmp_path / "r.onnx").layers
    assert layer.note == "Resize: not modelled; bytes only" and layer.outputs == 3 * 8 * 8


def test_asymmetric_kernels_and_odd_operands_by_hand(tmp_path):
    """Issue 35 (mutation run): a 3x5 convolution into a 6x4 output, a 2x3 pool, a three-input Sum, LogSoftmax,
    and a MatMul by a vector (n = 1): each count by hand."""
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], name="conv", kernel_shape=[3, 5], pads=[0, 0, 0, 0]),
             h.make_node("MaxPool", ["c", ], ["p"], name="pool", kernel_shape=[2, 3], strides=[2, 1]),
             h.make_node("Sum", ["p", "p", "p"], ["s"], name="sum3"),
             h.make_node("LogSoftmax", ["s"], ["l"], name="lsm", axis=-1),
             h.make_node("Reshape", ["l", "flat"], ["f"], name="flat"),
             h.make_node("MatMul", ["f", "v"], ["y"], name="mv")]
    g = h.make_graph(nodes, "asym", [h.make_tensor_value_info("x", T.FLOAT, [1, 2, 8, 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)],
                     [_init("w", 4, 2, 3, 5), nh.from_array(np.array([1, 4 * 3 * 2], np.int64), "flat"),
                      _init("v", 24)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "a.onnx"))
    m = {x.name: x for x in load_model(tmp_path / "a.onnx").layers}
    conv = m["conv"]
    assert conv.kernel == (3, 5) and conv.out_hw == (6, 4) and conv.groups == 1
    assert conv.macs == 4 * 6 * 4 * 2 * 15 and (conv.cin, conv.cout) == (2, 4)
    pool = m["pool"]
    assert pool.op == "pool" and pool.kernel == (2, 3) and pool.outputs == 4 * 3 * 2 and pool.elem_ops == 24 * 6
    assert m["sum3"].op == "eltwise" and m["sum3"].elem_ops == 24 * 2
    assert m["lsm"].op == "softmax" and m["lsm"].modelled
    mv = m["mv"]
    assert mv.op == "gemm" and (mv.cin, mv.cout, mv.rows) == (24, 1, 1) and mv.macs == 24


def test_duplicate_node_names_are_numbered(tmp_path):
    """ONNX allows two nodes one name; a layer table does not: the second and third get #1 and #2."""
    nodes = [h.make_node("Relu", ["x"], ["a"], name="act"), h.make_node("Relu", ["a"], ["b"], name="act"),
             h.make_node("Relu", ["b"], ["c"], name="other"), h.make_node("Relu", ["c"], ["y"], name="act")]
    g = h.make_graph(nodes, "dup", [h.make_tensor_value_info("x", T.FLOAT, [1, 4])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "d.onnx"))
    assert [x.name for x in load_model(tmp_path / "d.onnx").layers] == ["act", "act#1", "other", "act#2"]


def test_missing_and_malformed_onnx(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_model(tmp_path / "none.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage that is not a protobuf \xff\xff\xff")
    with pytest.raises(InputError, match="malformed|no graph nodes"):
        load_model(bad)


def test_cli_bad_onnx_is_one_line(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_text("not onnx")
    r = subprocess.run([sys.executable, "-m", "hwprobe", "analyze", str(bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("hwprobe: error: ") and "bad.onnx" in lines[0]


# ---- issue 35 (mutation run on the merged code): counts by hand, refusals and notes word for word

def _save(tmp_path, nodes, inputs, inits=(), opset=17, name="m", outputs=("y",)):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in inputs],
                     [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs], list(inits))
    p = tmp_path / f"{name}.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", opset)]), str(p))
    return p


def _fields(x):
    return (x.op, x.macs, x.weights, x.inputs, x.outputs, x.cin, x.cout, x.rows, x.source_op,
            x.extra.get("gemm_batch"))


def test_einsum_as_the_batched_gemm_torch_runs_by_hand(tmp_path):
    """Q K^T written with spaces (batch b h = 2 x 3, M 5, N 6, K 4) between two activations; x W with W a weight
    (batch 1: no batch entry); a letter of size 1 in both operands; and an equation hwprobe does not model (an
    ellipsis) on known shapes, called "not modelled" (before: "shape not inferred", though every shape was)."""
    nodes = [h.make_node("Einsum", ["q", "k"], ["s"], name="qk", equation="bhqd, bhkd -> bhqk"),
             h.make_node("Einsum", ["x", "w"], ["xw"], name="xw", equation="ij,jk->ik"),
             h.make_node("Einsum", ["u", "v"], ["uv"], name="uv", equation="bij,bjk->bik"),
             h.make_node("Einsum", ["x", "w"], ["e"], name="ell", equation="...j,jk->...k")]
    p = _save(tmp_path, nodes, [("q", [2, 3, 5, 4]), ("k", [2, 3, 6, 4]), ("x", [7, 4]), ("u", [1, 5, 4]),
                                ("v", [1, 4, 6])], [_init("w", 4, 6)], opset=17, outputs=("s", "xw", "uv", "e"))
    m = {x.name: x for x in load_model(p).layers}
    assert _fields(m["qk"]) == ("matmul", 6 * 5 * 6 * 4, 0, 6 * 5 * 4 + 6 * 6 * 4, 6 * 5 * 6, 4, 6, 30,
                                "Einsum", 6)
    assert _fields(m["xw"]) == ("gemm", 7 * 6 * 4, 24, 28, 42, 4, 6, 7, "Einsum", None)
    assert _fields(m["uv"]) == ("matmul", 5 * 6 * 4, 0, 20 + 24, 30, 4, 6, 5, "Einsum", None)
    ell = m["ell"]
    assert ell.op == "other" and not ell.modelled and ell.note == "Einsum: not modelled; bytes only"
    assert ell.macs == 0 and ell.weights == 24 and ell.inputs == 28 and ell.outputs == 42


def test_matmul_shapes_by_hand(tmp_path):
    """A rank-3 input times a vector (N = 1, rows 2 x 3); two activations of rank 3 (bmm: batch 4) and an
    activation of rank 3 times a 2-D activation (one GEMM of 4 x 64 rows, no batch)."""
    nodes = [h.make_node("MatMul", ["a", "v"], ["av"], name="av"),
             h.make_node("MatMul", ["b3", "c3"], ["bc"], name="bmm"),
             h.make_node("MatMul", ["b3", "c2"], ["b2"], name="mm2")]
    p = _save(tmp_path, nodes, [("a", [2, 3, 24]), ("v", [24]), ("b3", [4, 64, 128]), ("c3", [4, 128, 32]),
                                ("c2", [128, 32])], outputs=("av", "bc", "b2"))
    m = {x.name: x for x in load_model(p).layers}
    assert _fields(m["av"]) == ("matmul", 6 * 24, 0, 6 * 24 + 24, 6, 24, 1, 6, "MatMul", None)
    assert _fields(m["bmm"]) == ("matmul", 4 * 64 * 32 * 128, 0, 4 * 64 * 128 + 4 * 128 * 32, 4 * 64 * 32, 128, 32,
                                 256, "MatMul", 4)
    assert _fields(m["mm2"]) == ("matmul", 4 * 64 * 32 * 128, 0, 4 * 64 * 128 + 128 * 32, 4 * 64 * 32, 128, 32,
                                 256, "MatMul", None)


def test_1d_and_3d_convolutions_and_pools_by_hand(tmp_path):
    """Conv1d (kernel 3 over 10 -> 8), Conv3d with a 1x3x5 kernel, a 2x2x3 MaxPool after it: kernel is
    (first, last) spatial size, out_hw (first, last) spatial output; a scalar Add has no channel count."""
    nodes = [h.make_node("Conv", ["x1", "w1"], ["c1"], name="c1d", kernel_shape=[3]),
             h.make_node("Conv", ["x3", "w3"], ["c3"], name="c3d", kernel_shape=[1, 3, 5]),
             h.make_node("MaxPool", ["c3"], ["p3"], name="p3d", kernel_shape=[2, 2, 3], strides=[2, 2, 3]),
             h.make_node("Add", ["s1", "s2"], ["s"], name="scalar")]
    p = _save(tmp_path, nodes, [("x1", [1, 2, 10]), ("x3", [1, 2, 4, 6, 9]), ("s1", []), ("s2", [])],
              [_init("w1", 4, 2, 3), _init("w3", 4, 2, 1, 3, 5)], outputs=("c1", "p3", "s"))
    m = {x.name: x for x in load_model(p).layers}
    c1 = m["c1d"]
    assert (c1.kernel, c1.out_hw, c1.macs, c1.cout) == ((3, 3), (8, 8), 4 * 8 * 2 * 3, 4)
    c3 = m["c3d"]                                                    # y: [1, 4, 4, 4, 5]
    assert (c3.kernel, c3.out_hw, c3.macs) == ((1, 5), (4, 5), 4 * 4 * 4 * 5 * 2 * 15)
    p3 = m["p3d"]                                                    # [1, 4, 2, 2, 1]
    assert (p3.kernel, p3.outputs, p3.elem_ops) == ((2, 3), 16, 16 * 12)
    s = m["scalar"]
    assert s.op == "eltwise" and s.cout is None and s.outputs == 1


def test_attention_nodes_keep_their_heads_and_causality(tmp_path):
    nodes = [h.make_node("Attention", ["q", "k", "v"], ["o"], name="att", q_num_heads=8, kv_num_heads=2,
                         is_causal=1),
             h.make_node("MultiHeadAttention", ["o", "o", "o"], ["y"], name="mha", domain="com.microsoft",
                         num_heads=8, unidirectional=1)]
    g = h.make_graph(nodes, "a", [h.make_tensor_value_info(n, T.FLOAT, [1, 16, 512 if n == "q" else 128])
                                  for n in "qkv"], [h.make_tensor_value_info("y", T.FLOAT, None)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 23), h.make_opsetid("com.microsoft", 1)]),
              str(tmp_path / "a.onnx"))
    att, mha = load_model(tmp_path / "a.onnx").layers
    assert att.extra["io"]["attrs"] == {"q_num_heads": 8, "kv_num_heads": 2, "is_causal": 1}
    assert mha.extra["io"]["attrs"] == {"num_heads": 8, "unidirectional": 1}


def test_the_model_and_its_notes_word_for_word(tmp_path):
    """The model's name, source and batch; free dimensions named in the note; --dim pins a free dimension after a
    fixed one, past an initializer listed as a graph input (old exporters)."""
    node = h.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    g = h.make_graph([node], "free", [h.make_tensor_value_info("w", T.FLOAT, [8, 8]),
                                      h.make_tensor_value_info("x", T.FLOAT, ["N", "s", "t", 8])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [_init("w", 8, 8)])
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)]), str(tmp_path / "free.onnx"))
    m = load_model(tmp_path / "free.onnx", batch=2)
    assert (m.name, m.source, m.batch) == ("free", "onnx", 2)
    assert m.notes[0] == ("free input dimension(s) without a value: s, t (give --dim NAME=VALUE); layers that "
                          "depend on them have no shape")
    pinned = load_model(tmp_path / "free.onnx", batch=2, dims={"s": 3, "t": 5}).layers[0]
    assert pinned.modelled and pinned.rows == 2 * 3 * 5 and pinned.macs == 30 * 8 * 8
    with pytest.raises(InputError) as e:
        load_model(tmp_path / "free.onnx", dims={"seq": 3})
    assert str(e.value) == "--dim seq: no graph input has a free dimension of that name; free dimensions: N, s, t"
    with pytest.raises(InputError) as e:
        load_model(_save(tmp_path, [node], [("x", [2, 8])], [_init("w", 8, 8)], name="fixed"), dims={"seq": 3})
    assert str(e.value).endswith("free dimensions: none")
    x = onnx.load(str(tmp_path / "fixed.onnx"))
    x.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "b"
    onnx.save(x, str(tmp_path / "fixed.onnx"))
    with pytest.raises(InputError, match=r"free dimensions: b$"):
        load_model(tmp_path / "fixed.onnx", dims={"seq": 3})


def test_refusals_name_the_file_word_for_word(tmp_path, monkeypatch):
    missing = tmp_path / "none.onnx"
    with pytest.raises(InputError) as e:
        load_model(missing)
    assert str(e.value) == f"ONNX file {str(missing)!r} does not exist"
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(InputError) as e:
        load_model(bad)
    assert str(e.value).startswith(f"ONNX file {str(bad)!r} is malformed (not an ONNX protobuf): ")
    folder = tmp_path / "dir.onnx"
    folder.mkdir()
    with pytest.raises(InputError) as e:
        load_model(folder)
    assert str(e.value).startswith(f"cannot read ONNX file {str(folder)!r}: ")
    empty = tmp_path / "empty.onnx"
    onnx.save(h.make_model(h.make_graph([], "e", [], [])), str(empty))
    with pytest.raises(InputError) as e:
        load_model(empty)
    assert str(e.value) == f"ONNX file {str(empty)!r} has no graph nodes (malformed or empty)"
    monkeypatch.setitem(sys.modules, "onnx", None)                   # the onnx extra not installed
    with pytest.raises(InputError) as e:
        load_model(bad)
    assert str(e.value) == "reading ONNX needs the onnx package: pip install 'hwprobe[models]'"


def test_a_shape_constant_without_an_offset_key_is_read_from_the_file_start(tmp_path):
    """ONNX's external data keys: offset is optional (0 when absent); a writer that leaves it out at the start
    of the file still gets its shape constant read."""
    m = _reshape_model()
    b = next(t for t in m.graph.initializer if t.name == "b")
    (tmp_path / "b.bin").write_bytes(np.array([12], np.int64).tobytes())
    b.ClearField("raw_data")
    b.ClearField("int64_data")
    b.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", "b.bin"), ("length", "8")):
        b.external_data.add(key=k, value=v)
    onnx.save(m, str(tmp_path / "m.onnx"))
    mm = load_model(tmp_path / "m.onnx").layers[-1]
    assert mm.modelled and mm.macs == 2 * 5 * 12 and mm.rows == 2
