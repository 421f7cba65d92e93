"""What spreads the rounds of real gates: the per-round data of ``gate_power.py --rounds-out``.

For every scenario and design of the file, on the per-pair log ratios (candidate over
reference, in round order) of each gate:

* ``sd pair``: the spread of one pair's ratio (pooled within gates);
* ``lag1``: the correlation of neighbouring pairs within a gate (pooled); positive values
  make a gate's mean vary more than ``sd / sqrt(n)`` says;
* ``order``: in alternating gates, the mean ratio of pairs measured reference first (R C)
  minus that of pairs measured candidate first (C R): what being second in a pair does;
* ``first``: the first pair's ratio minus the gate's mean of the others (warm-up);
* ``z sd``: the spread of the gates' estimates, each as the t statistic of its distance
  from the mean of all gates with the standard error it claimed (trimmed-mean SE at its
  last look), turned into a standard normal quantile through its t distribution; about 1.0
  when each gate's interval is as wide as the spread between gates says it should be;
* ``red``: gates red after the default policy.

Usage: python benchmarks/rounds_anatomy.py rounds.jsonl [more.jsonl ...]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import special

from pytest_netperf.verdict.estimators import trimmed_mean


def log_ratios(gate: dict) -> np.ndarray:
    """The gate's per-pair log ratios, candidate over reference, in round order."""
    cand, ref = np.asarray(gate["values"]["candidate"]), np.asarray(gate["values"]["reference"])
    n = min(cand.size, ref.size)
    return np.log(cand[:n] / ref[:n])


def pooled_lag1(series: list[np.ndarray]) -> float:
    """Correlation of neighbouring values, each series centred on its own mean."""
    products, squares = 0.0, 0.0
    for values in series:
        centred = values - values.mean()
        products += float(centred[1:] @ centred[:-1])
        squares += float(centred @ centred)
    return products / squares if squares else math.nan


def anatomy(gates: list[dict]) -> dict[str, float]:
    series = [log_ratios(g) for g in gates if len(g["values"].get("candidate", [])) >= 2]
    if not series:
        return {}
    within = [float(np.std(s, ddof=1)) for s in series]
    first = [float(s[0] - s[1:].mean()) for s in series if s.size >= 3]
    # pair i of an alternating gate: i even measures R then C, i odd C then R (ABBA)
    rc = [float(v) for s in series for v in s[0::2]]
    cr = [float(v) for s in series for v in s[1::2]]
    estimates, claimed = [], []
    for s in series:
        center, squared_se, kept = trimmed_mean(s)
        estimates.append(center)
        claimed.append((math.sqrt(squared_se), kept - 1))
    middle = statistics.mean(estimates)
    z = [
        float(special.ndtri(special.stdtr(df, (e - middle) / se)))
        for e, (se, df) in zip(estimates, claimed, strict=True)
        if 0 < se < math.inf
    ]
    return {
        "gates": len(series),
        "pairs": statistics.mean(s.size for s in series),
        "mean": math.exp(statistics.mean(estimates)),
        "sd pair": math.sqrt(statistics.mean(w * w for w in within)),
        "lag1": pooled_lag1(series),
        "order": statistics.mean(rc) - statistics.mean(cr) if rc and cr else math.nan,
        "first": statistics.mean(first) if first else math.nan,
        "z sd": statistics.stdev(z) if len(z) > 1 else math.nan,
        "red": sum(g["status"] == "FAIL" for g in gates),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for path in args.files:
        for line in path.read_text().splitlines():
            if line.strip():
                gate = json.loads(line)
                groups[(gate["scenario"], gate["design"])].append(gate)
    columns = ("gates", "pairs", "mean", "sd pair", "lag1", "order", "first", "z sd", "red")
    print(f"{'scenario':32} {'design':12} " + " ".join(f"{c:>14}" for c in columns))
    for (scenario, design), gates in sorted(groups.items()):
        figures = anatomy(gates)
        cells = []
        for column in columns:
            value = figures.get(column, math.nan)
            if column in ("sd pair", "order", "first"):
                cells.append(f"{value:>13.2%} ")
            elif column in ("gates", "red"):
                cells.append(f"{value:>14d}")
            else:
                cells.append(f"{value:>14.3f}")
        print(f"{scenario:32} {design:12} " + " ".join(cells))


if __name__ == "__main__":
    main()
