"""The plots of the benchmark report: tokens/s against concurrency, and per-step time distributions
(how many steps are slower than a given time).

Inputs are result documents in result_json's format; outputs are PNG files. matplotlib runs
headless (Agg) and the PNGs carry no timestamp, so an unchanged input gives the same image.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import NullFormatter, ScalarFormatter  # noqa: E402

PNG_METADATA = {"Software": None}  # no matplotlib version or date in the file


def throughput_plot(document: dict, out: Path) -> Path | None:
    """One line per engine row: generated tokens/s against the number of concurrent requests."""
    series = document.get("series") or []
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    styles = _line_styles([line["name"] for line in series])
    for line, style in zip(series, styles):
        xs, ys = zip(*line["points"])
        ax.plot(xs, ys, marker="o", label=_short(line["name"]), **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({x for line in series for x, _ in line["points"]}))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(series[0]["x_label"])
    ax.set_ylabel(series[0]["y_label"])
    ax.set_title(document.get("title", document["benchmark"]), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return _save(fig, out)


def distribution_plot(document: dict, out: Path) -> Path | None:
    """Tail of every per-step time distribution: the fraction of steps slower than a time, log-log,
    so the slow steps (p99, p99.9) that set a batch's pace are as visible as the median."""
    distributions = document.get("distributions") or []
    if not distributions:
        return None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for dist in distributions:
        points = [(v, 1 - q / 100) for q, v in dist["quantiles"] if v > 0 and q < 100]
        if points:
            later = any(word in dist["name"] for word in ("again", "cached"))  # a second pass over the same text
            ax.plot(*zip(*points), marker=".", linestyle="--" if later else "-",
                    label=f"{dist['name']} (n={dist['count']:,})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"time per step ({distributions[0]['unit']})")
    ax.set_ylabel("fraction of steps slower")
    ax.set_ylim(5e-5, 1.05)
    ax.set_title(document.get("title", document["benchmark"]), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    return _save(fig, out)


def _line_styles(names: list[str]) -> list[dict]:
    """A colour per line; for names of the form "group, variant, ..." (the speculation benchmark's
    "copied, scheduled, float32") a colour per group and a line style per variant, so that twelve
    lines stay apart instead of cycling through ten colours."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    parts = [name.split(", ") for name in names]
    if len(names) <= len(colours) or any(len(p) < 2 for p in parts):
        return [{"color": colours[i % len(colours)]} for i in range(len(names))]
    groups = list(dict.fromkeys(p[0] for p in parts))
    variants = list(dict.fromkeys(p[1] for p in parts))
    dashes = ["-", "--", ":", "-."]
    return [{"color": colours[groups.index(p[0]) % len(colours)],
             "linestyle": dashes[variants.index(p[1]) % len(dashes)]} for p in parts]


def _short(name: str) -> str:
    for long, short in (("invariant", "inv"), ("prefix cache", "prefix"), ("jump-forward", "jf"),
                        ("speculative", "spec")):
        name = name.replace(long, short)
    return name


def _save(fig, out: Path) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110, metadata=PNG_METADATA)
    plt.close(fig)
    return out
