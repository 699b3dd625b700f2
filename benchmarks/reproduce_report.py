"""benchmarks/RESULTS.md from the finished cells of `benchmarks/reproduce.py`: each claim beside the paper.

Per claim and measurement: the mean over seeds of A and of B, the paired difference A - B with a
95% percentile bootstrap interval over seeds (`clzoo.eval.bootstrap`), how many seeds have
A > B, and a verdict computed from the interval and the paper's direction.
"""

import dataclasses
import json
import os
import time
import warnings

import numpy as np

from clzoo.eval import bootstrap


@dataclasses.dataclass(frozen=True)
class Row:
    """One measurement of a claim: the cell key it reads, and the paper's figures and direction.

    `direction` is what the paper reports for A relative to B: ">" (A higher), "<" (A lower)
    or "=" (no meaningful difference).
    """

    key: str
    label: str
    direction: str
    paper: str
    percent: bool = False


@dataclasses.dataclass(frozen=True)
class Claim:
    title: str
    a: str
    b: str
    source: str
    rows: tuple
    why: str = ""


CLAIMS = ()  # filled below, kept apart from the machinery
HEADER = "# Results\n\nScale: {train_per_class} train / {test_per_class} test images per class, {epochs} epochs, batch {batch_size}."


def _interval(values):
    """(mean, low, high) of a 95% percentile bootstrap of the mean over seeds."""
    values = np.asarray(values, dtype=np.float64)
    mean = float(values.mean())
    if values.size < 2 or np.ptp(values) == 0:
        return mean, mean, mean
    with warnings.catch_warnings():  # 3 seeds: scipy warns that few resamples are distinct
        warnings.simplefilter("ignore")
        r = bootstrap(values, resamples=2000)
    return mean, r.low, r.high


def _fmt(value, percent):
    return f"{value:.2%}" if percent else f"{value:.4f}"


def verdict(direction, low, high):
    """'agrees' / 'disagrees' / 'not resolved' from the paper's direction and our interval of A - B."""
    spans_zero = low <= 0.0 <= high
    if direction == "=":
        return "agrees (no difference)" if spans_zero else "disagrees (a difference)"
    if spans_zero:
        return "not resolved (interval spans 0)"
    return "agrees" if (low > 0) == (direction == ">") else "disagrees"


def claim_rows(claim, by_config):
    """Markdown rows of one claim's table; `by_config[key]` is `{seed: numbers}`."""
    a, b = by_config.get(claim.a, {}), by_config.get(claim.b, {})
    seeds = sorted(set(a) & set(b))
    lines = []
    for row in claim.rows:
        paired = [s for s in seeds if row.key in a[s] and row.key in b[s]]
        if not paired:
            lines.append(f"| {row.label} | {row.paper} | - | - | - | - | not run |")
            continue
        va = np.array([a[s][row.key] for s in paired])
        vb = np.array([b[s][row.key] for s in paired])
        ma, mb, (md, lo, hi) = va.mean(), vb.mean(), _interval(va - vb)
        f = lambda v: _fmt(v, row.percent)  # noqa: E731
        lines.append(f"| {row.label} | {row.paper} | {f(ma)} | {f(mb)} | {f(md)} [{f(lo)}, {f(hi)}] "
                     f"| {int(np.sum(va > vb))}/{len(paired)} | {verdict(row.direction, lo, hi)} |")
    return lines


def _claim_section(claim, by_config, labels, commands):
    a, b = labels[claim.a], labels[claim.b]
    lines = [f"## {claim.title}", "", f"A = {a}, B = {b}. Paper: {claim.source}.", "",
             "| measurement | paper | A (mean) | B (mean) | A - B [95% interval] | seeds A > B | "
             "verdict |", "| --- | --- | --- | --- | --- | --- | --- |"]
    lines += claim_rows(claim, by_config)
    lines += ["", "Commands (S = seed 0, 1, 2):", "", "```bash"]
    lines += [f"clzoo {' '.join(commands[k])}" for k in (claim.a, claim.b)]
    lines += ["```", ""]
    if claim.why:
        lines += [claim.why, ""]
    return lines


def render(cells, scale, labels, commands, header):
    """The whole RESULTS.md text."""
    by_config = {}
    for cell in cells:
        by_config.setdefault(cell["config"], {})[cell["seed"]] = cell
    lines = [header.format(**dataclasses.asdict(scale)), ""]
    for claim in CLAIMS:
        lines += _claim_section(claim, by_config, labels, commands)
    return "\n".join(lines).rstrip() + "\n"


def _atomic_write(path, text):
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def write(cells, scale, cells_json, results_md, commands, labels, header=None):
    """Write the cells' numbers (JSON) and RESULTS.md, both atomically."""
    cells = sorted(cells, key=lambda c: (c["config"], c["seed"]))
    _atomic_write(cells_json, json.dumps({"date": time.strftime("%Y-%m-%d"),
                                          "scale": dataclasses.asdict(scale), "cells": cells},
                                         indent=1) + "\n")
    _atomic_write(results_md, render(cells, scale, labels, commands, header or HEADER))
