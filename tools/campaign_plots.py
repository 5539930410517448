"""campaign_plots: the pictures of a campaign, drawn with matplotlib, for tools/plot-campaign
(files) and tools/report-campaign (images embedded in a page). One drawing code, two outputs.

- read_plot_data(path): plot_data's columns and rows (harness/campaign/PlotData.h).
- downsample(columns, rows, limit): at most `limit` rows, so a week of lines draws quickly.
- campaign_figure(plt, columns, rows, title): executions a second, unique findings, and
  sequences by outcome class over the campaign's run time.
- sources_figure(plt, series, title): the same for several campaigns (a merge's shards), a line
  each, failing sequences in the third panel.
- timeline_figure(plt, finding, name): one finding's confirmation run, operation by operation.
- save(fig, prefix): PREFIX.svg and PREFIX.png, each written beside its name, then moved there.
- png_bytes(fig): the PNG as bytes, for a data: URI.
The same input gives the same bytes: the SVG's hash salt and both files' metadata are fixed."""

import io
import os

# Rows a picture is drawn from: more points than pixels only slow the drawing down.
DRAWN_ROWS = 1500


def pyplot():
    """matplotlib's pyplot on the Agg back end, set up for reproducible files."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams.update({"svg.hashsalt": "plot-campaign", "font.size": 9})
    import matplotlib.pyplot as plt
    return plt


def read_plot_data(path):
    """plot_data's column names and rows of numbers; ValueError naming the file without a
    header."""
    columns, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                names = [c.strip() for c in line[1:].split(",")]
                if "unix_time" in names:
                    columns = names
                continue
            if line:
                rows.append([float(v) for v in line.split(",")])
    if columns is None:
        raise ValueError(f"{path}: no header naming the columns")
    return columns, rows


def downsample(columns, rows, limit=DRAWN_ROWS):
    """At most `limit` rows: consecutive rows joined into buckets of equal size. A bucket keeps
    its last row (the counts are cumulative) with the mean rate of its rows; the last row is
    always kept, so the picture ends where the campaign stands."""
    if len(rows) <= limit:
        return rows
    rate = columns.index("execs_per_sec")
    size = -(-len(rows) // limit)
    out = []
    for start in range(0, len(rows), size):
        bucket = rows[start:start + size]
        row = list(bucket[-1])
        row[rate] = sum(r[rate] for r in bucket) / len(bucket)
        out.append(row)
    return out


def campaign_figure(plt, columns, rows, title):
    """Three panels over run time (minutes): executions a second, unique findings, sequences by
    class (the classes that occurred)."""
    import matplotlib.ticker
    rows = downsample(columns, rows)
    col = {name: i for i, name in enumerate(columns)}
    minutes = [r[col["run_time_s"]] / 60 for r in rows]
    marker = "." if len(rows) <= 200 else None
    classes = columns[col["sequences"] + 1:col["unique_findings"]]
    fig, (rate, found, byclass) = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    rate.plot(minutes, [r[col["execs_per_sec"]] for r in rows], marker=marker, color="#4c72b0")
    rate.set_ylabel("executions / s")
    rate.set_ylim(bottom=0)
    found.step(minutes, [r[col["unique_findings"]] for r in rows], where="post", marker=marker,
               color="#c44e52")
    found.set_ylabel("unique findings")
    found.set_ylim(0, max(1, max(r[col["unique_findings"]] for r in rows)) * 1.1)
    found.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    for name in classes:
        series = [r[col[name]] for r in rows]
        if any(series):
            byclass.plot(minutes, series, marker=marker, label=name)
    byclass.set_ylabel("sequences by class")
    byclass.set_xlabel("run time (min, every campaign in the folder)")
    if byclass.get_legend_handles_labels()[0]:
        byclass.legend(loc="upper left")
    for ax in (rate, found, byclass):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def sources_figure(plt, series, title):
    """Executions a second, unique findings and failing sequences over run time (minutes), a
    line for each (label, columns, rows) of `series`."""
    import matplotlib.ticker
    fig, (rate, found, failing) = plt.subplots(3, 1, figsize=(8, 8), sharex=True)
    for label, columns, rows in series:
        rows = downsample(columns, rows)
        col = {name: i for i, name in enumerate(columns)}
        minutes = [r[col["run_time_s"]] / 60 for r in rows]
        marker = "." if len(rows) <= 200 else None
        rate.plot(minutes, [r[col["execs_per_sec"]] for r in rows], marker=marker, label=label)
        found.step(minutes, [r[col["unique_findings"]] for r in rows], where="post",
                   marker=marker, label=label)
        failing.plot(minutes, [r[col["sequences"]] - r[col["pass"]] for r in rows],
                     marker=marker, label=label)
    rate.set_ylabel("executions / s")
    rate.set_ylim(bottom=0)
    found.set_ylabel("unique findings")
    found.set_ylim(bottom=0)
    found.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    failing.set_ylabel("failing sequences")
    failing.set_xlabel("run time (min, every campaign of each source)")
    rate.legend(loc="upper left", fontsize=8)
    for ax in (rate, found, failing):
        ax.grid(True, alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def campaign_title(where, columns, rows):
    """"WHERE: N executions, N sequences, N findings", from the last row."""
    col = {name: i for i, name in enumerate(columns)}
    last = rows[-1]
    return (f"{where}: {int(last[col['executions']])} executions, "
            f"{int(last[col['sequences']])} sequences, "
            f"{int(last[col['unique_findings']])} findings")


FLOOR_MS = 1e-4  # a bar's left end on the log axis: operations faster than 0.1 µs
DRAWN_OPS = 60  # operations drawn of a longer minimal sequence (the failing one among them)


def timeline_figure(plt, finding, name):
    """One finding's confirmation run (finding.json's `timeline`): a horizontal bar per operation
    of its minimal sequence (latency, log scale), a tick at each one's deadline; the stuck
    operation red, watched until it counted as stuck, its deadline a dashed line; the failing
    one (crash, error, ...) marked; those never reached grey. None without a timeline."""
    timeline = finding.get("timeline")
    if not timeline:
        return None
    import matplotlib.ticker
    ops = [line for line in finding.get("sequence", "").split("\n") if line]
    done = {t["at"]: t for t in timeline["operations"]}
    stuck = timeline.get("stuck")
    failed_at = finding.get("at")
    shown = list(range(1, len(ops) + 1))
    if len(shown) > DRAWN_OPS:
        # The operations up to the failing one, ending there.
        last = failed_at if isinstance(failed_at, int) else len(ops)
        last = min(max(last, DRAWN_OPS), len(ops))
        shown = shown[last - DRAWN_OPS:last]
    height = 1.2 + 0.35 * max(1, len(shown))
    fig, ax = plt.subplots(figsize=(8, height))
    widest = 0
    top = max(FLOOR_MS * 10, *(t["deadline_ms"] for t in timeline["operations"]),
              *((stuck["watched_ms"], stuck["deadline_ms"]) if stuck else ()))
    for row, i in enumerate(shown):
        y = len(shown) - 1 - row
        label = f"{i}  {ops[i - 1]}"
        if len(label) > 48:
            label = label[:47] + "…"
        if stuck and stuck["at"] == i:
            width = max(stuck["watched_ms"], FLOOR_MS * 2)
            ax.barh(y, width - FLOOR_MS, left=FLOOR_MS, color="#c44e52", height=0.6)
            ax.axvline(stuck["deadline_ms"], color="#c44e52", linestyle="--", linewidth=1)
            ax.text(FLOOR_MS * 1.3, y, f"{finding['class']}: watched {stuck['watched_ms']:.0f} ms, "
                    f"deadline {stuck['deadline_ms']} ms", va="center", fontsize=8,
                    color="white")
        elif i in done:
            t = done[i]
            width = max(t["elapsed_ms"], FLOOR_MS * 1.01)
            ax.barh(y, width - FLOOR_MS, left=FLOOR_MS, color="#4c72b0", height=0.6)
            ax.plot([t["deadline_ms"]], [y], marker="|", markersize=12, color="#55a868")
            ax.text(width * 1.2, y, f"{t['elapsed_ms']:.3f} ms", va="center", fontsize=7)
        else:
            marked = failed_at == i
            ax.text(FLOOR_MS * 1.3, y, f"{finding['class']} here" if marked else "not reached",
                    va="center", fontsize=8, color="#c44e52" if marked else "#999999")
            label += "  <" if marked else ""
        ax.text(0, y, label + "  ", transform=ax.get_yaxis_transform(), ha="right",
                va="center", fontsize=8, family="monospace")
        widest = max(widest, len(label) + 2)
    ax.set_xscale("log")
    # Minor ticks of a log axis cost most of the drawing time and say little here.
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlim(FLOOR_MS, top * 3)
    ax.set_ylim(-0.7, len(shown) - 0.3)
    ax.set_yticks([])
    ax.set_xlabel("latency on confirmation (ms, log); | each operation's deadline")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title(f"{finding.get('id', name)}: {finding['class']} at {failed_at} "
                 f"({finding['op']}), {finding.get('confirmation', '')}", fontsize=9)
    # Margins computed, not measured (tight_layout): the labels are monospace, 0.6 em a
    # character at 8 pt; the axis title and label take fixed heights.
    left = min(0.6, (widest * 0.6 * 8 / 72 + 0.15) / 8)
    fig.subplots_adjust(left=left, right=0.97, bottom=0.55 / height, top=1 - 0.4 / height)
    return fig


def save(fig, prefix):
    """PREFIX.svg and PREFIX.png, each written beside its name and then moved there; their
    names printed."""
    for ext, extra in ((".svg", {"metadata": {"Date": None, "Creator": "tools/plot-campaign"}}),
                       (".png", {"dpi": 100, "metadata": {"Software": "tools/plot-campaign"}})):
        tmp = prefix + ext + ".tmp"
        fig.savefig(tmp, format=ext[1:], **extra)
        os.replace(tmp, prefix + ext)
        print(prefix + ext)


def png_bytes(fig, dpi=80):
    """The figure as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, metadata={"Software": "tools/report-campaign"})
    return buffer.getvalue()
