"""The held-out model zoo: models hwprobe's predictor was not tuned on, timed in PyTorch on the GPU and exported
to ONNX exactly as tools/validate_models.py does (its timing, export and stripping; this file only lists the
models), so `hwprobe analyze` can be set against them and the error a prediction prints can come from cases
it never saw (issue 31). A device-side tool: it needs torch, torchvision and transformers (the GPU image's);
nothing is downloaded, every model has random weights built from its config.

    python3 tools/zoo_heldout.py --out DIR                          # every held-out model (shard it: below)
    python3 tools/zoo_heldout.py --out DIR --family cnn --shard 1/3   # a third of the CNNs
    python3 tools/zoo_heldout.py --out DIR --only swin_t,qwen2_small --no-export
    python3 tools/zoo_heldout.py --list                               # the catalogue, no torch needed

Then, on this side, per GPU:

    python3 tools/compare_predictions.py --measured DIR/validate_models.json --onnx DIR/onnx \\
        --profile profiles/<gpu>/<date>-predict --variants bn_folded,bn_folded_nhwc,default \\
        --out profiles/<gpu>/<date>-zoo/predictions.md --summary hwprobe/predict/validation.json \\
        --where profiles/<gpu>/<date>-zoo

The seen/held-out rule (written here, applied by split_of, recorded per case in hwprobe/predict/validation.json):
  A model is *seen* once anyone has looked at its per-kernel numbers (the torch.profiler kernel list, a kernel's
  measured against predicted time, the predictor's per-kernel table) while changing the predictor or its
  calibration. A seen model never returns to the held-out set. Whole-model errors of a held-out run may be read
  (that is what the set is for); the moment a held-out model's kernels are opened to find out why it is off,
  it moves to SEEN below, in the same commit as the change it motivated, and the README's held-out figure is
  recomputed without it. Models of tools/validate_models.py are seen: the predictor was built on their kernels.

Catalogue (each: family, source, batches; CNNs timed BN-folded in NCHW and channels-last, transformers as
built): torchvision classifiers with grouped, depthwise (3x3, 5x5, 7x7), dense and squeeze-excitation blocks,
BN-before-conv and concatenation; detection (FPN) and segmentation backbones; a U-Net-like net with bilinear
upsampling and skip concatenation; plain and windowed vision transformers; HF encoders (SDPA and eager
attention) and decoders (MHA, GQA, sliding window). 37 models. The whole zoo takes longer than one device
command (about 30-40 s per CNN with both batches and layouts, 5-15 s per transformer, plus 3-10 s per export):
run it in shards (--shard i/n) into separate directories and compare each.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Entry:
    """One zoo model: its family (cnn or transformer), where it comes from, its batches and what it exercises."""

    name: str
    family: str
    source: str                  # torchvision.models.<fn> / transformers <Class>(<Config>(...)) / tools (built here)
    batches: tuple[int, ...]
    exercises: str
    input: str = "image224"      # image<side> | tokens<seq>:<vocab> | pixels224


def _tv(fn: str) -> str:
    return f"torchvision.models.{fn}(weights=None)"


CATALOGUE: tuple[Entry, ...] = (
    # torchvision classifiers
    Entry("resnext50_32x4d", "cnn", _tv("resnext50_32x4d"), (1, 32), "grouped 3x3 (32 groups of 4-32 channels)"),
    Entry("regnet_x_1_6gf", "cnn", _tv("regnet_x_1_6gf"), (1, 32), "grouped 3x3 (group width 24)"),
    Entry("regnet_y_800mf", "cnn", _tv("regnet_y_800mf"), (1, 32), "grouped 3x3 + squeeze-excitation"),
    Entry("efficientnet_b0", "cnn", _tv("efficientnet_b0"), (1, 32), "depthwise 3x3/5x5, SE, SiLU"),
    Entry("efficientnet_v2_s", "cnn", _tv("efficientnet_v2_s"), (1, 16), "fused-MBConv, depthwise, SE"),
    Entry("mnasnet1_0", "cnn", _tv("mnasnet1_0"), (1, 64), "depthwise 3x3/5x5"),
    Entry("mobilenet_v3_large", "cnn", _tv("mobilenet_v3_large"), (1, 64), "depthwise 3x3/5x5, SE, hardswish"),
    Entry("shufflenet_v2_x1_0", "cnn", _tv("shufflenet_v2_x1_0"), (1, 64), "depthwise, channel shuffle, concat"),
    Entry("densenet121", "cnn", _tv("densenet121"), (1, 32), "BN before conv (not foldable), heavy concat"),
    Entry("convnext_tiny", "cnn", _tv("convnext_tiny"), (1, 32), "depthwise 7x7, LayerNorm, 4x4/4 stem"),
    Entry("vgg16_bn", "cnn", _tv("vgg16_bn"), (1, 16), "dense 3x3 at full resolution, large FC"),
    Entry("squeezenet1_1", "cnn", _tv("squeezenet1_1"), (1, 64), "1x1/3x3 fire modules, concat"),
    Entry("googlenet", "cnn", "torchvision.models.googlenet(weights=None, aux_logits=False)", (1, 32),
          "inception branches, 5x5, concat"),
    Entry("inception_v3", "cnn", "torchvision.models.inception_v3(weights=None, aux_logits=False)", (1, 16),
          "1x7/7x1 convolutions, concat", "image299"),
    Entry("wide_resnet50_2", "cnn", _tv("wide_resnet50_2"), (1, 32), "dense, wide bottlenecks"),
    Entry("resnet101", "cnn", _tv("resnet101"), (1, 32), "dense, deep"),
    Entry("alexnet", "cnn", _tv("alexnet"), (1, 64), "11x11/4 stem, 5x5"),
    # detection and segmentation backbones, a U-Net
    Entry("fcn_resnet50", "cnn", "torchvision.models.segmentation.fcn_resnet50(weights=None, "
          "weights_backbone=None)['out']", (1, 8), "dilated 3x3, bilinear resize"),
    Entry("deeplabv3_mobilenet_v3_large", "cnn", "torchvision.models.segmentation.deeplabv3_mobilenet_v3_large("
          "weights=None, weights_backbone=None)['out']", (1, 8), "dilated depthwise, ASPP, resize"),
    Entry("lraspp_mobilenet_v3_large", "cnn", "torchvision.models.segmentation.lraspp_mobilenet_v3_large("
          "weights=None, weights_backbone=None)['out']", (1, 16), "depthwise, resize"),
    Entry("resnet50_fpn", "cnn", "torchvision.models.detection.backbone_utils.resnet_fpn_backbone(backbone_name="
          "'resnet50', weights=None, norm_layer=BatchNorm2d), levels concatenated", (1, 4), "FPN, nearest upsample",
          "image512"),
    Entry("mobilenet_v3_fpn", "cnn", "torchvision.models.detection.backbone_utils.mobilenet_backbone(backbone_name="
          "'mobilenet_v3_large', weights=None, fpn=True, norm_layer=BatchNorm2d), levels concatenated", (1, 8),
          "FPN on depthwise, nearest upsample", "image512"),
    Entry("unet_small", "cnn", "tools/zoo_heldout.py UNet (4 levels, 32-256 channels)", (1, 8),
          "bilinear upsample, skip concat, BN", "image256"),
    # vision transformers
    Entry("vit_b_32", "transformer", _tv("vit_b_32"), (1, 32), "plain ViT, 32x32/32 patch stem"),
    Entry("vit_l_16", "transformer", _tv("vit_l_16"), (1, 8), "plain ViT, d=1024"),
    Entry("swin_t", "transformer", _tv("swin_t"), (1, 32), "windowed attention (explicit matmul-softmax-matmul)"),
    Entry("swin_v2_t", "transformer", _tv("swin_v2_t"), (1, 16), "windowed cosine attention, log-CPB"),
    Entry("maxvit_t", "transformer", _tv("maxvit_t"), (1, 16), "MBConv + block/grid attention"),
    Entry("clip_vit_b32", "transformer", "transformers CLIPVisionModel(CLIPVisionConfig(patch_size=32))", (1, 32),
          "HF ViT, quick-GELU, 32x32 stem", "pixels224"),
    # HF encoders
    Entry("distilbert", "transformer", "transformers DistilBertModel(DistilBertConfig())", (1, 32),
          "6-layer encoder, SDPA", "tokens128:30522"),
    Entry("distilbert_eager", "transformer", "transformers DistilBertModel(DistilBertConfig(), "
          "attn_implementation='eager')", (1, 32), "explicit attention: bmm, softmax, bmm", "tokens128:30522"),
    Entry("roberta_base", "transformer", "transformers RobertaModel(RobertaConfig())", (1, 16),
          "12-layer encoder at seq 256", "tokens256:50265"),
    Entry("t5_encoder", "transformer", "transformers T5EncoderModel(T5Config(d_model=512, num_layers=6))", (1, 32),
          "relative position bias, RMS norm, ReLU FFN", "tokens256:32128"),
    # HF decoders (prefill)
    Entry("qwen2_small", "transformer", "transformers Qwen2Model(Qwen2Config(hidden 1024, 8 layers, 16/2 heads))",
          (1, 8), "GQA 8:1, SwiGLU, RMS norm", "tokens512:32000"),
    Entry("opt_350m", "transformer", "transformers OPTModel(OPTConfig(hidden 1024, 24 layers, ffn 4096))", (1, 8),
          "learned positions, ReLU FFN, project_in/out", "tokens512:50272"),
    Entry("gpt_neox_small", "transformer", "transformers GPTNeoXModel(GPTNeoXConfig(hidden 1024, 8 layers))", (1, 8),
          "parallel attention + MLP, partial rotary", "tokens512:50304"),
    Entry("mistral_small", "transformer", "transformers MistralModel(MistralConfig(hidden 1024, 6 layers, "
          "16/4 heads, sliding window 256))", (1, 4), "sliding-window attention, GQA", "tokens512:32000"),
)

# Models whose per-kernel numbers have been looked at while changing the predictor (the rule above). The
# validate_models.py set first; a zoo model moves here in the commit of the change it motivated.
SEEN = frozenset({"resnet50", "resnet18", "mobilenet_v2", "vit_b_16", "bert_base", "gpt2", "llama_prefill",
                  "llama_prefill_gqa",
                  "convnext_tiny",    # its NCHW b32 kernel list: channels-last convs after a permute (issue 31)
                  "t5_encoder"})      # its b32 kernel list (2026-11-27, thirteenth session): attention in FP32


def split_of(model: str) -> str:
    """'seen' or 'held_out' for a model name (the rule in this file's docstring)."""
    return "seen" if model in SEEN else "held_out"


def held_out() -> list[Entry]:
    return [e for e in CATALOGUE if e.name not in SEEN]


# ---------------------------------------------------------------- builders (torch imported lazily, device side)

def _inputs(kind: str):
    """batch -> example inputs on the CPU, from an Entry.input."""
    def make(batch: int):
        import torch

        if kind.startswith("image"):
            side = int(kind[5:])
            return (torch.randn(batch, 3, side, side),)
        if kind.startswith("pixels"):
            side = int(kind[6:])
            return (torch.randn(batch, 3, side, side),)
        seq, vocab = (int(x) for x in kind[6:].split(":"))
        return (torch.randint(1, vocab, (batch, seq), dtype=torch.long),)   # token 0 never: no zeros
    return make


def _output(fn):
    """A torch module returning fn(inner(x)): a dict's 'out', feature maps flattened and concatenated."""
    def wrap(inner):
        import torch

        class _Out(torch.nn.Module):
            def __init__(self, m) -> None:
                super().__init__()
                self.m = m

            def forward(self, x):
                return fn(self.m(x))

        return _Out(inner)
    return wrap


def _levels(out):
    import torch

    return torch.cat([v.flatten(1) for v in out.values()], 1)


def _unet():
    import torch
    from torch import nn

    def block(a: int, b: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(a, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
                             nn.Conv2d(b, b, 3, padding=1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True))

    class UNet(nn.Module):
        """Four levels down (max pooling), bilinear upsampling back, each level's skip concatenated."""

        def __init__(self, widths=(32, 64, 128, 256)) -> None:
            super().__init__()
            self.down = nn.ModuleList([block(a, b) for a, b in zip((3,) + widths[:-1], widths, strict=True)])
            self.up = nn.ModuleList([block(widths[i] + widths[i + 1], widths[i]) for i in range(len(widths) - 1)])
            self.head = nn.Conv2d(widths[0], 2, 1)

        def forward(self, x):
            skips = []
            for i, d in enumerate(self.down):
                x = d(x if i == 0 else nn.functional.max_pool2d(x, 2))
                skips.append(x)
            for i in reversed(range(len(self.up))):
                x = nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
                x = self.up[i](torch.cat([skips[i], x], 1))
            return self.head(x)

    return UNet()


def _hf(cls_name: str, cfg_name: str, kwargs: dict, pixels: bool = False, attn: str = "sdpa"):
    def build():
        import transformers

        cfg = getattr(transformers, cfg_name)(**kwargs)
        model_cls = getattr(transformers, cls_name)
        cfg._attn_implementation = attn if attn == "eager" or getattr(model_cls, "_supports_sdpa", False) else "eager"
        model = model_cls(cfg)
        key = "pixel_values" if pixels else "input_ids"
        return _output(lambda o: o.last_hidden_state)(_keyword(model, key))
    return build


def _keyword(model, key: str):
    """A torch module calling a transformers model with its one input by keyword (input_ids or pixel_values)."""
    import torch

    class _K(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.m = model

        def forward(self, x):
            return self.m(**{key: x})

    return _K()


def builders() -> dict:
    """name -> a zero-argument builder (random weights), for every catalogue entry."""
    import torchvision
    from torch import nn

    tv = torchvision.models

    def t(fn):
        return lambda: getattr(tv, fn)(weights=None)

    def seg(fn):
        return lambda: _output(lambda o: o["out"])(getattr(tv.segmentation, fn)(weights=None, weights_backbone=None))

    def fpn_resnet():
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

        return _output(_levels)(resnet_fpn_backbone(backbone_name="resnet50", weights=None, norm_layer=nn.BatchNorm2d,
                                                    trainable_layers=5))

    def fpn_mobilenet():
        from torchvision.models.detection.backbone_utils import mobilenet_backbone

        return _output(_levels)(mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True,
                                                   norm_layer=nn.BatchNorm2d, trainable_layers=6))

    out = {e.name: t(e.name) for e in CATALOGUE if e.source == _tv(e.name)}
    for fn in ("googlenet", "inception_v3"):      # no auxiliary heads (the BN calibration forward runs in training
        out[fn] = (lambda fn=fn: getattr(tv, fn)(weights=None, aux_logits=False, init_weights=True))   # mode)
    out.update({
        "fcn_resnet50": seg("fcn_resnet50"), "deeplabv3_mobilenet_v3_large": seg("deeplabv3_mobilenet_v3_large"),
        "lraspp_mobilenet_v3_large": seg("lraspp_mobilenet_v3_large"), "resnet50_fpn": fpn_resnet,
        "mobilenet_v3_fpn": fpn_mobilenet, "unet_small": _unet,
        "clip_vit_b32": _hf("CLIPVisionModel", "CLIPVisionConfig", {"patch_size": 32}, pixels=True),
        "distilbert": _hf("DistilBertModel", "DistilBertConfig", {}),
        "distilbert_eager": _hf("DistilBertModel", "DistilBertConfig", {}, attn="eager"),
        "roberta_base": _hf("RobertaModel", "RobertaConfig", {"max_position_embeddings": 514}),
        "t5_encoder": _hf("T5EncoderModel", "T5Config", {"d_model": 512, "num_layers": 6, "num_heads": 8,
                                                        "d_ff": 2048, "use_cache": False}),
        "qwen2_small": _hf("Qwen2Model", "Qwen2Config", {
            "hidden_size": 1024, "intermediate_size": 2816, "num_hidden_layers": 8, "num_attention_heads": 16,
            "num_key_value_heads": 2, "vocab_size": 32000, "use_cache": False}),
        "opt_350m": _hf("OPTModel", "OPTConfig", {"hidden_size": 1024, "ffn_dim": 4096, "num_hidden_layers": 24,
                                                  "num_attention_heads": 16, "word_embed_proj_dim": 512,
                                                  "use_cache": False}),
        "gpt_neox_small": _hf("GPTNeoXModel", "GPTNeoXConfig", {
            "hidden_size": 1024, "intermediate_size": 4096, "num_hidden_layers": 8, "num_attention_heads": 16,
            "use_cache": False}),
        "mistral_small": _hf("MistralModel", "MistralConfig", {
            "hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 6, "num_attention_heads": 16,
            "num_key_value_heads": 4, "vocab_size": 32000, "sliding_window": 256, "use_cache": False}),
    })
    return out


def specs(vm, names: list[Entry]):
    """validate_models.ModelSpec per entry (``vm``: the loaded validate_models module)."""
    built = builders()
    return [vm.ModelSpec(e.name, e.family, e.batches, built[e.name], _inputs(e.input), e.input) for e in names]


def choose(only: str = "", family: str = "", shard: str = "") -> list[Entry]:
    """The held-out entries to run: --only names (each must be in the catalogue and held out), --family, then
    --shard i/n (every n-th from the i-th, 1-based)."""
    names = [n.strip() for n in only.split(",") if n.strip()]
    seen = [n for n in names if n in SEEN]
    if seen:
        raise ValueError(f"--only: {seen[0]!r} is seen (tools/zoo_heldout.py SEEN), not held out")
    known = {e.name for e in CATALOGUE}
    bad = [n for n in names if n not in known]
    if bad:
        raise ValueError(f"--only: unknown model {bad[0]!r} (known: {', '.join(sorted(known))})")
    if family and family not in ("cnn", "transformer"):
        raise ValueError(f"--family must be cnn or transformer, got {family!r}")
    out = [e for e in held_out() if (not names or e.name in names) and (not family or e.family == family)]
    if shard:
        try:
            i, n = (int(x) for x in shard.split("/"))
        except ValueError:
            raise ValueError(f"--shard must be i/n (e.g. 1/3), got {shard!r}") from None
        if not 1 <= i <= n:
            raise ValueError(f"--shard {shard!r}: i must be 1..n")
        out = out[i - 1::n]
    return out


def _validate_models():
    path = HERE / "validate_models.py"
    spec = importlib.util.spec_from_file_location("validate_models", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["validate_models"] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], add_help=True)
    ap.add_argument("--list", action="store_true", help="print the catalogue with each model's split and exit")
    ap.add_argument("--family", default="")
    ap.add_argument("--shard", default="")
    a, rest = ap.parse_known_args(argv)
    if a.list:
        for e in CATALOGUE:
            print(f"{e.name:30s} {e.family:12s} {split_of(e.name):9s} b{','.join(map(str, e.batches)):8s} "
                  f"{e.exercises}  [{e.source}]")
        return 0
    only = ""
    if "--only" in rest:
        i = rest.index("--only")
        only = rest[i + 1] if i + 1 < len(rest) else ""
        rest = rest[:i] + rest[i + 2:]
    try:
        chosen = choose(only, a.family, a.shard)
    except ValueError as e:
        print(f"zoo_heldout: {e}", file=sys.stderr)
        return 2
    vm = _validate_models()
    return vm.main(rest, catalogue=lambda: specs(vm, chosen), tool="tools/zoo_heldout.py")


if __name__ == "__main__":
    sys.exit(main())
