"""A profile as a trace: Chrome's Trace Event Format, which chrome://tracing, Perfetto
(ui.perfetto.dev) and TensorBoard's profile plugin read.

One process (the model's training step), one track per phase (forward, backward, update)
plus a track of whole steps; each call of each recorded step is a complete ("X") event named
after its Keras layer, with the call's label, primitive, implementation, kind, FLOPs and
bytes as args. Times are microseconds from the first recorded step's start.
"""

import gzip
import json
import os
import socket
import time

from .calls import PHASES

PROCESS = 1
STEP_TRACK = 0
TRACKS = {phase: index for index, phase in enumerate(PHASES, start=1)}


def trace_events(profile):
    """The {"traceEvents": [...], "displayTimeUnit": "ms"} dict of a Profile."""
    origin = profile.records[0].start
    events = [{"name": "process_name", "ph": "M", "pid": PROCESS,
               "args": {"name": f"kiln training step: {profile.model.name}, batch "
                                f"{profile.batch_size}"}}]
    for name, tid in (("steps", STEP_TRACK), *TRACKS.items()):
        events.append({"name": "thread_name", "ph": "M", "pid": PROCESS, "tid": tid,
                       "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": PROCESS, "tid": tid,
                       "args": {"sort_index": tid}})
    for number, record in enumerate(profile.records, start=1):
        events.append({"name": f"step {number}", "cat": "step", "ph": "X", "pid": PROCESS,
                       "tid": STEP_TRACK, "ts": (record.start - origin) / 1e3,
                       "dur": (record.end - record.start) / 1e3})
        for info, (start, end) in zip(profile.infos, record.times, strict=True):
            events.append({
                "name": info.name, "cat": info.phase, "ph": "X", "pid": PROCESS,
                "tid": TRACKS[info.phase], "ts": (start - origin) / 1e3,
                "dur": (end - start) / 1e3,
                "args": {"label": info.label, "layers": list(info.layers),
                         "primitive": info.primitive, "implementation": info.implementation,
                         "kind": info.kind, "flops": info.flops, "bytes": info.bytes,
                         "step": number}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def save_trace(profile, path):
    """Write the trace as JSON (gzip-compressed when `path` ends in .gz); returns the path."""
    text = json.dumps(trace_events(profile))
    path = os.fspath(path)
    if path.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return path


def save_tensorboard(profile, log_dir, run=None):
    """Write `<log_dir>/plugins/profile/<run>/<host>.trace.json.gz`, where TensorBoard's
    profile plugin looks for a run's trace; `run` defaults to the time, as TensorFlow names
    it. Returns the path written."""
    run = run or time.strftime("%Y_%m_%d_%H_%M_%S")
    folder = os.path.join(os.fspath(log_dir), "plugins", "profile", run)
    os.makedirs(folder, exist_ok=True)
    return save_trace(profile, os.path.join(folder, f"{socket.gethostname()}.trace.json.gz"))
