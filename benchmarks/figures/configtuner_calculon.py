"""ConfigTuner beside Calculon on the same models and clusters: the best configuration each picks,
the time each predicts, our model's price of Calculon's pick, and the search time of each.

    python benchmarks/figures/configtuner_calculon.py --calculon PATH [--python PY] [--timeout 900]
                                              [--cache F] [--only MODEL ...] [--update-docs]
    python benchmarks/figures/configtuner_calculon.py              ours only (says that Calculon was not run)

Calculon (calculon-ai/calculon, Apache-2.0) is neither installed nor vendored: PATH is a local
checkout of it, run as a separate process (``bin/calculon llm-optimal-execution MODEL N BATCH
float16 systems/a100_80g.json OUT -c 1 -n``, one CPU) with the interpreter given by ``--python``
(Calculon needs ``psutil``). Its models and system file come from the checkout itself (the shapes
our shipped Korthikanti instances use; commit caa4b11f was read), its A100 system with the host
memory set to 0 GiB and ``--no-tp-overlap --no-dp-overlap``: no offload and no overlap, as in our
model and in Korthikanti's runs. Calculon still searches knobs we do not (TP communication type,
fused activations), so its pick may be outside our space; the table says when our checker rejects
it and why.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from coopt.instance import load  # noqa: E402
from coopt.problem import SolveOptions  # noqa: E402
from coopt.problems.configtuner import exact as exact_c1  # noqa: E402
from coopt.problems.configtuner import model  # noqa: E402
from coopt.shipped import shipped  # noqa: E402

DOC = HERE.parents[1] / "docs" / "configtuner.md"
BEGIN, END = "<!-- calculon:begin -->", "<!-- calculon:end -->"

#: (Calculon model file, our shipped instance, GPUs, global batch)
CASES = (
    ("megatron-22B", "1-korthikanti-22b-8xa100", 8, 4),
    ("gpt3-175B", "1-korthikanti-175b-64xa100", 64, 64),
    ("turing-530B", "1-korthikanti-530b-280xa100", 280, 280),
    ("megatron-1T", "1-korthikanti-1t-512xa100", 512, 512),
)
RECOMPUTE = {"none": "none", "attn_only": "selective", "full": "full"}
INVERSE = {ours: theirs for theirs, ours in RECOMPUTE.items()}


def cached(args: argparse.Namespace, name: str, gpus: int, batch: int) -> dict:
    """Calculon's search for one case, from ``--cache`` if it holds it (a search takes minutes)."""
    store = json.loads(args.cache.read_text()) if args.cache and args.cache.exists() else {}
    key = f"{name}/{gpus}/{batch}"
    if key not in store:
        store[key] = calculon(args.calculon, args.python, name, gpus, batch, args.timeout)
        if args.cache and "error" not in store[key]:
            args.cache.write_text(json.dumps(store, indent=1))
    return store[key]


def ours(stem: str) -> dict:
    """Our exact search on the instance, its space widened to Calculon's: every micro-batch and
    every interleaving (Calculon tries every factor of the local batch and of L/p)."""
    instance = load(next(p for p in shipped("configtuner") if p.stem == stem)).instance
    instance = replace(instance, max_microbatch=instance.global_batch, max_interleave=instance.layers)
    exact_c1.exact(instance, SolveOptions())  # warm-up: the one-off lambdify
    t0 = time.perf_counter()
    solution = exact_c1.exact(instance, SolveOptions()).solution
    return {"instance": instance, "solution": solution, "seconds": time.perf_counter() - t0}


def calculon(checkout: Path, python: str, name: str, gpus: int, batch: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "best.json"
        system_file = Path(tmp) / "a100_80g_no_offload.json"
        system_file.write_text(json.dumps(no_offload_system(checkout)))
        command = [python, str(checkout / "bin" / "calculon"), "llm-optimal-execution",
                   str(checkout / "models" / f"{name}.json"), str(gpus), str(batch), "float16",
                   str(system_file), str(out), "-c", "1", "-n", "--no-tp-overlap", "--no-dp-overlap"]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        t0 = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                                  check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"no answer within {timeout:g} s"}
        seconds = time.perf_counter() - t0
        log = done.stdout + done.stderr
        if done.returncode != 0 or not out.exists():
            return {"error": f"exit {done.returncode}: {log.strip().splitlines()[-1] if log.strip() else ''}"}
        best = json.loads(out.read_text())["0"]
    count = re.search(r"Total executions: (\d+)", log)
    return {"execution": best["execution"], "time": best["stats"]["total_time"], "seconds": seconds,
            "executions": int(count.group(1)) if count else None}


def calculon_price(checkout: Path, python: str, name: str, instance, config: dict,
                   timeout: float) -> float | None:
    """Calculon's time for our configuration (``bin/calculon llm``, one execution; TP, PP and DP on
    network 0, NVLink, when the group fits in a node, else network 1)."""
    t, p, d = config["tp"], config["pp"], config["dp"]
    node = instance.gpus_per_node
    execution = {
        "num_procs": instance.gpus, "tensor_par": t, "pipeline_par": p, "data_par": d,
        "tensor_par_net": 0 if t <= node else 1, "pipeline_par_net": 0 if t * d * p <= node else 1,
        "data_par_net": 0 if t * d <= node else 1, "batch_size": instance.global_batch,
        "microbatch_size": config["microbatch"], "datatype": "float16", "fused_activation": True,
        "attention_type": "multihead", "activation_recompute": INVERSE[config["recompute"]],
        "pipeline_interleaving": config["interleave"], "optimizer_sharding": config["zero"] >= 1,
        "tensor_par_comm_type": "rs_ag" if config["sequence_parallel"] else "ar",
        "tensor_par_overlap": "none",
        "seq_par_ag_redo": config["sequence_parallel"] and config["recompute"] != "full",
        "data_par_overlap": False, "weight_offload": False, "activations_offload": False,
        "optimizer_offload": False, "training": True,
    }
    with tempfile.TemporaryDirectory() as tmp:
        exe, stats = Path(tmp) / "exe.json", Path(tmp) / "stats.json"
        exe.write_text(json.dumps(execution))
        system = Path(tmp) / "system.json"
        system.write_text(json.dumps(no_offload_system(checkout)))
        command = [python, str(checkout / "bin" / "calculon"), "llm",
                   str(checkout / "models" / f"{name}.json"), str(exe), str(system), str(stats)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                              env={**os.environ, "PYTHONPATH": str(checkout)})
        if done.returncode != 0 or not stats.exists():
            return None
        return float(json.loads(stats.read_text())["total_time"])


def no_offload_system(checkout: Path) -> dict:
    """The checkout's A100 system without host memory: no offload, as in our model and in
    Korthikanti's runs (Calculon searches offload only where the second memory has capacity)."""
    system = json.loads((checkout / "systems" / "a100_80g.json").read_text())
    system["mem2"]["GiB"] = 0
    return system


def translated(execution: dict) -> dict:
    """Calculon's execution as our configuration (EP 1; optimizer sharding = ZeRO-1)."""
    return {"tp": execution["tensor_par"], "pp": execution["pipeline_par"], "dp": execution["data_par"],
            "ep": 1,
            "microbatch": execution["microbatch_size"], "interleave": execution["pipeline_interleaving"],
            "recompute": RECOMPUTE[execution["activation_recompute"]],
            "sequence_parallel": execution["tensor_par_comm_type"] in ("rs_ag", "p2p_rs_ag"),
            "zero": 1 if execution["optimizer_sharding"] else 0}


def text(c: dict) -> str:
    return (f"t{c['tp']} p{c['pp']} d{c['dp']} b{c['microbatch']} v{c['interleave']} {c['recompute'][:3]}"
            + (" SP" if c["sequence_parallel"] else "") + f" Z{c['zero']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calculon", type=Path, help="a local checkout of calculon-ai/calculon")
    parser.add_argument("--python", default="python3", help="the interpreter that runs Calculon")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per Calculon search")
    parser.add_argument("--update-docs", action="store_true", help=f"also write the table into {DOC.name}")
    parser.add_argument("--cache", type=Path,
                        help="a JSON file keeping Calculon's search results between runs")
    parser.add_argument("--only", nargs="*", metavar="MODEL",
                        help=f"models to run, from {', '.join(c[0] for c in CASES)}")
    args = parser.parse_args(argv)
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    if args.calculon is None:
        say("Calculon not run: no --calculon PATH given (a local checkout of calculon-ai/calculon); "
            "our side only.\n")
    say("| model | GPUs | batch | ours: best | ours [s] | ours: search [s] | Calculon: best | "
          "Calculon [s] | our price of Calculon's pick [s] | Calculon's price of our pick [s] | "
          "Calculon: executions, search [s] |")
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, stem, gpus, batch in CASES:
        if args.only and name not in args.only:
            continue
        mine = ours(stem)
        cells = [name, str(gpus), str(batch), text(mine["solution"]["config"]),
                 f"{mine['solution']['objective']:.2f}",
                 f"{mine['seconds']:.4f}"]
        if args.calculon is None:
            cells += ["-", "-", "-", "-", "-"]
        else:
            theirs = cached(args, name, gpus, batch)
            if "error" in theirs:
                cells += [theirs["error"], "-", "-", "-", "-"]
            else:
                pick = translated(theirs["execution"])
                violations = model.check(mine["instance"], {"config": pick})
                value = model.objective(mine["instance"], {"config": pick})
                ratio = value / mine["solution"]["objective"]
                price = (f"{value:.2f} ({ratio:.2f}x ours)" if not violations
                         else "outside our rules: " + "; ".join(str(v) for v in violations))
                searched = f"{theirs['executions']}, {theirs['seconds']:.1f}"
                mine_there = calculon_price(args.calculon, args.python, name, mine["instance"],
                                            mine["solution"]["config"], args.timeout)
                there = ("-" if mine_there is None
                         else f"{mine_there:.2f} ({mine_there / theirs['time']:.2f}x theirs)")
                cells += [text(pick), f"{theirs['time']:.2f}", price, there, searched]
        say("| " + " | ".join(cells) + " |")
    if args.update_docs:
        doc = DOC.read_text(encoding="utf-8")
        head, rest = doc.split(BEGIN, 1)
        table = "\n".join(lines)
        DOC.write_text(head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1], encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
