"""The per-layer forward / backward bar chart of a profile, as a PNG: kiln.plot draws it
(matplotlib, the optional `kiln[plot]` extra, imported only when a chart is asked for)."""


def save_chart(profile, path):
    """The profile's layers (Profile.layer_rows) as a bar chart PNG at `path`."""
    from ..plot.drawing import plot_layer_times

    rows = [(name, forward * 1e3, backward * 1e3)
            for name, forward, backward in profile.layer_rows()]
    summary = profile.summary()
    title = (f"{profile.model.name}: batch {summary['batch_size']}, step "
             f"{summary['recorded_step_seconds'] * 1e3:.1f} ms (recorded, median)")
    return plot_layer_times(rows, path, title)
