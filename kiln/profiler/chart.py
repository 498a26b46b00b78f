"""The per-layer forward / backward bar chart of a profile, as a PNG (matplotlib, the optional
`kiln[plot]` extra; imported only when a chart is asked for, on the Agg backend so no display
is needed)."""


def bar_chart(rows, path, title=None):
    """Draw (layer, forward_ms, backward_ms) rows as paired horizontal bars, first layer on
    top; returns the path written."""
    try:
        import matplotlib
    except ImportError as error:
        raise ImportError("kiln.profiler: the bar chart needs matplotlib "
                          "(pip install 'kiln[plot]')") from error
    matplotlib.use("Agg")
    from matplotlib import pyplot

    rows = list(rows)
    names = [row[0] for row in rows]
    positions = range(len(rows))
    figure, axes = pyplot.subplots(figsize=(8, 1.5 + 0.35 * len(rows)))
    try:
        height = 0.4
        axes.barh([p - height / 2 for p in positions], [row[1] for row in rows], height,
                  label="forward")
        axes.barh([p + height / 2 for p in positions], [row[2] for row in rows], height,
                  label="backward")
        axes.set_yticks(list(positions), names)
        axes.invert_yaxis()
        axes.set_xlabel("ms per step (median)")
        axes.legend(loc="lower right")
        if title:
            axes.set_title(title)
        figure.tight_layout()
        figure.savefig(path, dpi=100)
    finally:
        pyplot.close(figure)
    return path


def save_chart(profile, path):
    """The profile's layers (Profile.layer_rows) as a bar chart PNG at `path`."""
    rows = [(name, forward * 1e3, backward * 1e3)
            for name, forward, backward in profile.layer_rows()]
    summary = profile.summary()
    title = (f"{profile.model.name}: batch {summary['batch_size']}, step "
             f"{summary['recorded_step_seconds'] * 1e3:.1f} ms (recorded)")
    return bar_chart(rows, path, title)
