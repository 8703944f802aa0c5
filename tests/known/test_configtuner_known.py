"""configtuner against published numbers and a hand computation.

* Korthikanti et al. 2022 (arXiv 2205.05198) Table 5: iteration times of four models on A100s,
  full recompute against sequence parallel + selective recompute, in the configurations Calculon
  ships (calculon-ai/calculon validation/seqsel/tab5/*.json @ caa4b11f); Figure 1: parameter +
  optimizer memory and activation memory per GPU (the values Calculon's validation.py lists).
* Narayanan et al. SC21 Table 1: Megatron-LM 1T on 3072 A100 at 163 TFLOP/s per GPU, counting the
  recomputed forward pass (their eq. 3 with the factor 96), so the comparable figure is our HFU.
* A one-layer model priced by hand.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from coopt.instance import load
from coopt.problems.configtuner import model
from coopt.problems.configtuner.model import GIB
from coopt.shipped import shipped

#: model -> (GPUs, t, p, v, b, Table 5 full recompute s, Table 5 seq+sel s, Fig. 1 memory GiB:
#: params+optimizer, activations without recompute, activations with seq+sel)
KORTHIKANTI = {
    "22b": (8, 8, 1, 1, 4, 1.42, 1.10, 45.5625, 59.25, 9.5625),
    "175b": (64, 8, 8, 3, 1, 18.13, 13.75, 45.5625, 66.84375, 12.3515625),
    "530b": (280, 8, 35, 3, 1, 49.05, 37.83, 31.640625, 114.0234375, 23.076171875),
    "1t": (512, 8, 64, 1, 1, 94.42, 71.49, 32.958984375, 131.25, 26.5625),
}


def korthikanti(name: str):
    gpus = KORTHIKANTI[name][0]
    path = next(p for p in shipped("configtuner") if p.stem == f"1-korthikanti-{name}-{gpus}xa100")
    return load(path).instance


def config(name: str, recompute: str, sequence_parallel: bool) -> dict:
    _, t, p, v, b, *_ = KORTHIKANTI[name]
    return {"tp": t, "pp": p, "dp": 1, "ep": 1, "microbatch": b, "interleave": v, "recompute": recompute,
            "sequence_parallel": sequence_parallel, "zero": 0}


def predict(instance, cfg) -> dict:
    return model.evaluate(instance, model.space_of(cfg))


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_korthikanti_table_5_iteration_times_within_5_percent(name):
    instance = korthikanti(name)
    *_, full, seqsel, _, _, _ = KORTHIKANTI[name]
    for cfg, measured in ((config(name, "full", False), full), (config(name, "selective", True), seqsel)):
        assert model.check(instance, {"config": cfg}) == []  # the published run fits and obeys every rule
        assert predict(instance, cfg)["time"][0] == pytest.approx(measured, rel=0.05)


@pytest.mark.parametrize("name", sorted(KORTHIKANTI))
def test_korthikanti_figure_1_memory(name):
    instance = korthikanti(name)
    *_, states, act_none, act_seqsel = KORTHIKANTI[name]
    none = predict(instance, config(name, "none", False))
    seqsel = predict(instance, config(name, "selective", True))
    layers_per_stage = instance.layers // KORTHIKANTI[name][2]
    # Figure 1 counts the transformer layers' weights, gradients and Adam states (no embedding)
    assert layers_per_stage * none["layer_states"][0] / GIB == pytest.approx(states, rel=2e-3)
    assert none["activations"][0] / GIB == pytest.approx(act_none, rel=2e-3)
    assert seqsel["activations"][0] / GIB == pytest.approx(act_seqsel, rel=2e-3)


def test_megatron_1t_on_3072_a100_at_163_tflops_counting_recompute():
    path = next(p for p in shipped("configtuner") if p.stem == "2-megatron-1t-3072xa100")
    instance = load(path).instance
    cfg = {"tp": 8, "pp": 64, "dp": 6, "ep": 1, "microbatch": 1, "interleave": 1, "recompute": "full",
           "sequence_parallel": False, "zero": 0}
    assert model.check(instance, {"config": cfg}) == []
    out = predict(instance, cfg)
    hardware_tflops = out["hfu"][0] * instance.peak_flops / 1e12
    assert hardware_tflops == pytest.approx(163, rel=0.10)
    assert out["mfu"][0] == pytest.approx(out["hfu"][0] * 3 / 4, rel=0.02)  # 72 / 96 of the FLOPs


def test_one_layer_by_hand():
    """L 1, h 4, h_f 16, a 1, V 8, s 2, batch 2 on one GPU at 1 kFLOP/s with U = 1 and no memory
    traffic: per micro-batch (b 1) the layer's forward is 2*1*2*4*(4+4+4+4) = 256 (QKV + proj) +
    2*1*2*4*16*2 = 512 (FFN) + 4*1*2^2*4 = 64 (scores) FLOPs, the head 2*1*2*4*8 = 128; forward +
    backward = 3 x (832 + 128) = 2880 FLOPs, two micro-batches 5760 FLOPs = 5.76 s. Narayanan's
    72 B s L h^2 (1 + s/6h + V/12Lh) = 72*2*2*16*(1 + 1/12 + 1/6) = 5760 too: MFU = 1."""
    base = model.generate(0, 1)
    instance = replace(base, layers=1, hidden=4, ffn_hidden=16, heads=1, kv_heads=1, vocab=8, seq_length=2,
                       gpus=1, global_batch=2, peak_flops=1e3, gemm_max_utilization=1.0, gemm_half_flop=0.0,
                       elementwise_traffic=0.0, optimizer_bytes=0.0, flash_attention=False)
    cfg = {"tp": 1, "pp": 1, "dp": 1, "ep": 1, "microbatch": 1, "interleave": 1, "recompute": "none",
           "sequence_parallel": False, "zero": 0}
    out = predict(instance, cfg)
    assert out["time"][0] == pytest.approx(5.76, rel=1e-12)
    assert out["model_flops"][0] == pytest.approx(5760, rel=1e-12)
    assert out["mfu"][0] == pytest.approx(1.0, rel=1e-12)
    full = predict(instance, {**cfg, "recompute": "full"})
    assert full["time"][0] == pytest.approx(5.76 + 2 * 832 / 1e3, rel=1e-12)  # one more layer forward
