"""Draws a fastinfer benchmark JSON: GPU time per case against the floor and the anchors.

usage: python3 plot_bench.py BENCH.json OUT.png [ROUTINE]

Reads the JSON that `fastinfer bench R --json F` or `fastinfer_bench all --json F` writes. Each
routine becomes one panel: cases along x (in the routine's order, usually growing size), time
(ms, log scale) up; fastinfer's time as a solid line, the floor dashed, every anchor dotted.
Embedded into the `fastinfer` program at build time (`fastinfer plot`, `fastinfer bench --plot`).
"""
import json
import sys

TIME_KEYS = ("ms", "median_ms", "best_ms", "best_total_ms", "total_ms", "cp_ms")
ANCHOR_WORDS = ("anchor", "cublas", "fla", "flashinfer", "non_cp", "old")


def rows_of(doc):
    if isinstance(doc, list):
        return [r for r in doc if isinstance(r, dict)]
    if isinstance(doc, dict):
        for key in ("rows", "results"):
            if isinstance(doc.get(key), list):
                return [r for r in doc[key] if isinstance(r, dict)]
    return []


def routines(doc, only):
    """(name, rows) for each routine in the file, or just `only`."""
    if rows_of(doc):  # one routine's file
        name = doc.get("routine", only or "bench") if isinstance(doc, dict) else (only or "bench")
        return [(name, rows_of(doc))]
    return [(k, rows_of(v)) for k, v in doc.items() if rows_of(v) and (not only or k == only)]


def number(x):
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


def time_of(row):
    for key in TIME_KEYS:
        if number(row.get(key)):
            return row[key]
    return None


def label_of(row, i):
    for key in ("label", "shape", "case"):
        if key in row:
            return str(row[key])
    dims = [f"{k}={row[k]}" for k in ("m", "n", "k", "batch", "tokens") if k in row]
    return " ".join(dims) or str(i)


def anchors_of(row):
    """{name: ms}; a generic "anchor_ms" takes its name from the row's "anchor" text."""
    found = {}
    for k, v in row.items():
        if k.endswith("_ms") and k not in TIME_KEYS and k != "floor_ms" and number(v) \
                and any(w in k.lower() for w in ANCHOR_WORDS):
            found[str(row["anchor"]) if k == "anchor_ms" and isinstance(row.get("anchor"), str) else k[:-3]] = v
    return found


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("plot: needs matplotlib in this python (pip install matplotlib==3.9.2), "
                 "or set FASTINFER_PYTHON to a python that has it")
    with open(argv[1]) as f:
        doc = json.load(f)
    panels = [(name, rows) for name, rows in routines(doc, argv[3] if len(argv) > 3 else None)
              if any(time_of(r) for r in rows)]
    if not panels:
        sys.exit(f"plot: no timed rows in {argv[1]}")
    env = doc.get("environment", {}) if isinstance(doc, dict) else {}
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, 4.2 * len(panels)), squeeze=False)
    for ax, (name, rows) in zip(axes[:, 0], panels):
        rows = [r for r in rows if time_of(r)]
        x = range(len(rows))
        ax.plot(x, [time_of(r) for r in rows], "o-", label="fastinfer", linewidth=2)
        floors = [number(r.get("floor_ms")) for r in rows]
        if any(floors):
            ax.plot(x, [f or float("nan") for f in floors], "k--", label="floor")
        for anchor in sorted({a for r in rows for a in anchors_of(r)}):
            ax.plot(x, [anchors_of(r).get(anchor, float("nan")) for r in rows], ":s", label=anchor, markersize=4)
        ax.set_yscale("log")
        ax.set_ylabel("ms")
        ax.set_title(name)
        ax.set_xticks(list(x))
        ax.set_xticklabels([label_of(r, i) for i, r in enumerate(rows)], rotation=60, ha="right", fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    where = " ".join(str(env[k]) for k in ("gpu", "gpu_name", "commit", "date") if k in env)
    if where:
        fig.suptitle(where, fontsize=9)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=110)
    print(f"plot: wrote {argv[2]} ({len(panels)} panel{'s' if len(panels) > 1 else ''})")


if __name__ == "__main__":
    main(sys.argv)
