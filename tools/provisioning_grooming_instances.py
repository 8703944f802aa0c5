"""Write the large-tier ``provisioning_grooming`` instances (coopt/instances/provisioning_grooming/2-*).

    python tools/provisioning_grooming_instances.py

The networks are the shipped large ``provisioning`` files' (NSFNET, the 22-link DeepRMSA/Chen
variant, and USNET, 24 nodes / 43 links; research notes f.2, f.3, sources in those files), read
from ``coopt/instances/provisioning/2-*-static.toml`` with their modulation table and classes.
The grooming layer is set as the research notes' suggested settings have it (c.3, f.1):
lightpath widths {3, 5, 9} slots with a guard band of 1 (2, 4 and 8 data slots), at most two
lightpath hops per request, degradation on, 16 slots (the smallest of the notes' exact-run
sizes, 16-64, e.1: the bound's LP relaxation grows with the slots, 23 s on NSFNET at 16 and 36 s
at 32), 6 transponders per node, and requests drawn with a seeded ``random.Random``: uniform
source/destination pairs, sub-wavelength rates {10, 25, 40, 60, 100} Gbit/s (so that several
requests share a lightpath), classes 1-3 uniformly, holding times 0.05 + Exp(1). The seed and the
draw are named in each file's ``description``.
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

from coopt import registry
from coopt.instance import load, to_toml
from coopt.problems.provisioning import grooming_model as G
from coopt.problems.provisioning import model as P

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "coopt" / "instances" / "provisioning_grooming"
NETWORKS = ROOT / "coopt" / "instances" / "provisioning"

#: (file stem, network file, requests, slots, transponders per node, seed)
CASES = (
    ("2-nsfnet-grooming", "2-nsfnet-static.toml", 100, 16, 6, 1),
    ("2-usnet-grooming", "2-usnet-static.toml", 140, 16, 6, 2),
)
WIDTHS = (3, 5, 9)
RATES_GBIT = (10, 25, 40, 60, 100)


def grooming_instance(network: P.Instance, requests: int, slots: int, transponders: int, seed: int
                      ) -> G.Instance:
    """``requests`` seeded requests on ``network``'s topology with the grooming layer of the module
    docstring."""
    rng = random.Random(seed)
    drawn = []
    for _ in range(requests):
        s, d = rng.sample(network.nodes, 2)
        rate = rng.choice(RATES_GBIT) * G.GBPS
        holding = round(rng.expovariate(1.0) + 0.05, 4)
        drawn.append(P.Request(s, d, rate, holding, 0.0, rng.randint(1, len(network.classes))))
    return G.Instance(network.nodes, network.links, slots, network.slot_width_hz, 1, network.k_paths,
                      network.modulations, network.classes, WIDTHS, 2, transponders, True, tuple(drawn))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    problem = registry.get("provisioning_grooming")
    for stem, network_file, requests, slots, transponders, seed in CASES:
        network = load(NETWORKS / network_file).instance
        instance = grooming_instance(network, requests, slots, transponders, seed)
        name = network_file.split("-")[1].upper()
        description = (
            f"Model C on {name} ({len(network.nodes)} nodes, {len(network.links)} links), {requests} "
            f"requests of {{10, 25, 40, 60, 100}} Gbit/s on {slots} slots, widths {list(WIDTHS)}, "
            f"{transponders} transponders per node; requests drawn by "
            f"tools/provisioning_grooming_instances.py, random.Random({seed})")
        source = f"topology, modulation table and classes: coopt/instances/provisioning/{network_file}"
        path = args.out / f"{stem}.toml"
        path.write_text(to_toml(problem, instance, description=description, source=source))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
