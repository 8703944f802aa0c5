"""Write the shipped ``configtuner`` instances (coopt/instances/configtuner/) from public data.

    python tools/configtuner_instances.py            rewrite every file

Sources (facts only; no code is copied):
- GPT-3 175B, Megatron 22B / 1T, Turing-NLG 530B, GPT-3 13B shapes: calculon-ai/calculon,
  models/*.json at commit caa4b11f8fe1fee3ba57adaacb7590d7deabd053 (hidden, feedforward, heads,
  blocks, seq_size), which take them from Korthikanti et al. 2022 (arXiv 2205.05198) Table 3.
- The Korthikanti Table 5 runs (GPUs, global batch): calculon validation/seqsel/tab5/*.json, same
  commit; vocabulary 51200 as in Korthikanti et al. sec. 3.
- Megatron-LM 1T on 3072 A100 (t 8, p 64, d 6, batch 3072): Narayanan et al. SC21, Table 1.
- GPT-1.3B (L24, h2048, a16): the GPT-3 paper's "GPT-3 XL" row (Brown et al. 2020, Table 2.1).
- Llama-2 7B/13B/70B: Touvron et al. 2023, Table 1 and the released config.json (hidden 4096 /
  5120 / 8192, layers 32 / 40 / 80, heads 32 / 40 / 64, kv heads 32 / 40 / 8, FFN 11008 / 13824 /
  28672, vocabulary 32000, sequence 4096).
- Mixtral-8x7B: Jiang et al. 2024 (arXiv 2401.04088) Table 1 (hidden 4096, 32 layers, 32 heads,
  8 kv heads, FFN 14336, 8 experts, top 2, vocabulary 32000).
- A100-80GB: 312 TFLOP/s bf16 dense, 2.039 TB/s HBM (NVIDIA A100 datasheet), NVLink3 300 GB/s per
  direction, 8 x 200 Gbit/s HDR per DGX node. H100 SXM: 989 TFLOP/s bf16 dense, 3.35 TB/s HBM3,
  NVLink4 450 GB/s per direction, 8 x 400 Gbit/s NDR (NVIDIA H100 datasheet). Achieved fractions
  (HBM 0.8, NVLink 0.77-0.8, NIC 0.9) are our defaults, stated in docs/configtuner.md.
"""

from __future__ import annotations

from pathlib import Path

import tomli_w

OUT = Path(__file__).resolve().parents[1] / "coopt" / "instances" / "configtuner"
CALCULON = "calculon-ai/calculon models/*.json and validation/seqsel/tab5/*.json @ caa4b11f"

A100 = {"gpus_per_node": 8, "gpu_memory_gib": 80.0, "peak_tflops": 312.0, "hbm_tbyte_per_s": 1.6,
        "nvlink_gbyte_per_s": 230.0, "nic_gbit_per_s": 180.0}
H100 = {"gpus_per_node": 8, "gpu_memory_gib": 80.0, "peak_tflops": 989.0, "hbm_tbyte_per_s": 2.7,
        "nvlink_gbyte_per_s": 360.0, "nic_gbit_per_s": 360.0, "gemm_max_utilization": 0.75,
        "gemm_half_gflop": 12.0}


def gpt(layers: int, hidden: int, heads: int, ffn: int | None = None, vocab: int = 51200, seq: int = 2048):
    return {"layers": layers, "hidden": hidden, "ffn_hidden": ffn or 4 * hidden, "heads": heads,
            "vocab": vocab, "seq_length": seq}


def llama(layers: int, hidden: int, heads: int, kv: int, ffn: int):
    return {"layers": layers, "hidden": hidden, "ffn_hidden": ffn, "heads": heads, "kv_heads": kv,
            "vocab": 32000, "seq_length": 4096, "gated_mlp": True, "tied_embeddings": False,
            "flash_attention": True}


MIXTRAL = {"layers": 32, "hidden": 4096, "ffn_hidden": 14336, "heads": 32, "kv_heads": 8, "vocab": 32000,
           "seq_length": 4096, "gated_mlp": True, "experts": 8, "top_k": 2, "tied_embeddings": False,
           "flash_attention": True}
ZERO = {"zero_stages": [0, 1, 2, 3]}

FILES = {
    "0-gpt1.3b-16xa100": ("GPT-3 XL (1.3B) on 16 A100-80GB, batch 512", "Brown et al. 2020 Table 2.1",
                          gpt(24, 2048, 16, vocab=50304), {**A100, "gpus": 16}, 512, {}),
    "0-llama2-7b-32xa100": ("Llama-2-7B on 32 A100-80GB, batch 256 of 4096 tokens",
                            "Touvron et al. 2023 Table 1; Llama-2-7b config.json",
                            llama(32, 4096, 32, 32, 11008), {**A100, "gpus": 32}, 256, {}),
    "0-mixtral-8x7b-16xh100": ("Mixtral-8x7B (EP) on 16 H100, batch 128 of 4096 tokens, ZeRO 0-3",
                               "Jiang et al. 2024 Table 1", MIXTRAL, {**H100, "gpus": 16}, 128, ZERO),
    "1-gpt13b-64xa100": ("GPT-3 13B on 64 A100-80GB, batch 1024", CALCULON + " (gpt3-13B)",
                         gpt(40, 5120, 40, 20480), {**A100, "gpus": 64}, 1024, {}),
    "1-llama2-13b-128xh100": ("Llama-2-13B on 128 H100, batch 1024", "Touvron et al. 2023 Table 1",
                              llama(40, 5120, 40, 40, 13824), {**H100, "gpus": 128}, 1024, ZERO),
    "1-korthikanti-22b-8xa100": ("Megatron 22B as in Korthikanti et al. 2022 Table 5 (8 GPUs, batch 4)",
                                 CALCULON + " (megatron-22B)", gpt(48, 6144, 64), {**A100, "gpus": 8}, 4, {}),
    "1-korthikanti-175b-64xa100": ("GPT-3 175B as in Korthikanti et al. 2022 Table 5 (64 GPUs, batch 64)",
                                   CALCULON + " (gpt3-175B)", gpt(96, 12288, 96), {**A100, "gpus": 64},
                                   64, {}),
    "1-korthikanti-530b-280xa100": ("Turing-NLG 530B as in Korthikanti et al. 2022 Table 5 (280 GPUs)",
                                    CALCULON + " (turing-530B)", gpt(105, 20480, 128), {**A100, "gpus": 280},
                                    280, {}),
    "1-korthikanti-1t-512xa100": ("Megatron 1T as in Korthikanti et al. 2022 Table 5 (512 GPUs, batch 512)",
                                  CALCULON + " (megatron-1T)", gpt(128, 25600, 160), {**A100, "gpus": 512},
                                  512, {}),
    "2-megatron-1t-3072xa100": ("Megatron-LM 1T on 3072 A100 (Narayanan et al. SC21 Table 1, batch 3072)",
                                "Narayanan et al. SC21 Table 1; shape " + CALCULON + " (megatron-1T)",
                                gpt(128, 25600, 160), {**A100, "gpus": 3072}, 3072, {}),
    "2-gpt3-175b-1024xa100": ("GPT-3 175B on 1024 A100-80GB, batch 1536", CALCULON + " (gpt3-175B)",
                              gpt(96, 12288, 96), {**A100, "gpus": 1024}, 1536, ZERO),
    "2-llama2-70b-1024xh100": ("Llama-2-70B on 1024 H100, batch 1024 of 4096 tokens",
                               "Touvron et al. 2023 Table 1; Llama-2-70b config.json",
                               llama(80, 8192, 64, 8, 28672), {**H100, "gpus": 1024}, 1024, ZERO),
    "2-mixtral-8x7b-256xh100": ("Mixtral-8x7B (EP) on 256 H100, batch 1024", "Jiang et al. 2024 Table 1",
                                MIXTRAL, {**H100, "gpus": 256}, 1024, ZERO),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (description, source, model, cluster, batch, search) in FILES.items():
        data = {"problem": "configtuner", "schema_version": 1, "description": description, "source": source,
                "model": model, "cluster": cluster, "training": {"global_batch": batch}}
        if search:
            data["search"] = search
        (OUT / f"{name}.toml").write_text(tomli_w.dumps(data))


if __name__ == "__main__":
    main()
