"""`kiln bench soak`: a long training run killed at random moments, resumed each time.

A worker process trains a small CNN for `--epochs` epochs with `fit`, a `ModelCheckpoint`
(the whole model as a `.keras` file) and a `BackupAndRestore`, and appends one JSON line per
event to a log: when it starts (the epoch it resumes at and a hash of the weights it resumed
with) and at each epoch end (the epoch, the weights' hash and the process's resident memory).
The driver starts the worker, lets it run a random number of epochs, sends SIGKILL at a random
moment inside the next epoch (often while a checkpoint is being written), and starts it again,
until every epoch has run. It checks:

  - after each kill, the `.keras` checkpoint loads and the backup files read back;
  - each resume starts at the epoch after the last backed-up one (at most the epoch that was
    being written is lost) and with exactly the weights logged at the end of that epoch;
  - resident memory does not grow from epoch to epoch: the slope of RSS over epochs, fitted
    within each run of the worker after its first epochs (one intercept per run, one common
    slope), in KiB per epoch.

    python -m kiln.bench soak --epochs 100 --seed 0

The last line is `soak: epochs=... kills=... resumes_verified=.../... rss_slope_kib_per_epoch=...
ok=True|False`; the exit status is 0 only when every check held.
"""

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

WARMUP_EPOCHS = 2  # epochs of each run left out of the RSS slope (plans, caches, kernels)


# -- the worker: one process of the training run ------------------------------------------------
def _resident_kib():
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def weights_hash(weights):
    digest = hashlib.sha256()
    for array in weights:
        digest.update(np.ascontiguousarray(array, dtype=np.float32).tobytes())
    return digest.hexdigest()[:16]


def _backed_up_epoch(weights_path):
    """The epoch counter BackupAndRestore stored in its weights file (0 before any backup)."""
    if not os.path.exists(weights_path):
        return 0
    import h5py

    with h5py.File(weights_path, "r") as h5_file:
        return int(json.loads(h5_file.attrs["training_metadata"])["epoch"])


def _data(samples):
    """Learnable synthetic images: the class is the quadrant with the brightest mean."""
    rng = np.random.default_rng(0)
    x = rng.random((samples, 16, 16, 1), dtype=np.float32)
    labels = rng.integers(0, 4, samples)
    for i, label in enumerate(labels):
        row, col = divmod(int(label), 2)
        x[i, row * 8:(row + 1) * 8, col * 8:(col + 1) * 8] += 0.5
    return x, np.eye(4, dtype=np.float32)[labels]


def run_worker(folder, epochs, samples):
    from .. import keras

    keras.utils.set_random_seed(0)
    x, y = _data(samples)
    model = keras.Sequential([
        keras.Input((16, 16, 1)),
        keras.layers.Conv2D(8, 3, activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(16, 3, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(4, activation="softmax"),
    ])
    model.compile(keras.optimizers.Adam(1e-3), "categorical_crossentropy", metrics=["accuracy"])
    log = open(os.path.join(folder, "events.jsonl"), "a", buffering=1, encoding="utf-8")
    backup = os.path.join(folder, "backup")

    def write(event):
        log.write(json.dumps({"pid": os.getpid(), **event}) + "\n")

    def on_train_begin(logs):
        # after BackupAndRestore has restored (its callback comes before this one): the
        # weights it restored and the epoch it resumes at, read as it reads it, from the
        # counter inside its weights file (a run killed after its last epoch resumes with
        # nothing left to train, and still counts)
        epoch = _backed_up_epoch(os.path.join(backup, "latest.weights.h5"))
        write({"event": "start", "epoch": epoch, "hash": weights_hash(model.get_weights()),
               "rss_kib": _resident_kib()})

    def on_epoch_end(epoch, logs):
        # written before the checkpoints below: a kill between the two loses this epoch's
        # backup, and the resume must then start one epoch earlier, which the driver allows
        write({"event": "epoch", "epoch": epoch, "hash": weights_hash(model.get_weights()),
               "rss_kib": _resident_kib(), "loss": float(logs["loss"]), "time": time.time()})

    callbacks = [
        keras.callbacks.LambdaCallback(on_epoch_end=on_epoch_end),
        keras.callbacks.ModelCheckpoint(os.path.join(folder, "model.keras")),
        keras.callbacks.BackupAndRestore(backup, delete_checkpoint=False),
        keras.callbacks.LambdaCallback(on_train_begin=on_train_begin),
    ]
    model.fit(x, y, batch_size=32, epochs=epochs, shuffle=False, verbose=0,
              callbacks=callbacks)
    write({"event": "done"})


# -- the driver ---------------------------------------------------------------------------------
def _events(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as file:
        # a line cut by the kill is incomplete: the event did not happen as far as we know
        return [json.loads(line) for line in file if line.endswith("\n")]


def _check_checkpoints(folder):
    """Both checkpoints read back after a kill: the .keras model file and the backup."""
    from .. import keras

    problems = []
    model_path = os.path.join(folder, "model.keras")
    if os.path.exists(model_path):
        try:
            keras.models.load_model(model_path)
        except Exception as error:  # noqa: BLE001 (any failure to load is the finding)
            problems.append(f"model.keras does not load: {error!r}")
    backup = os.path.join(folder, "backup", "latest.weights.h5")
    if os.path.exists(backup):
        import h5py

        try:
            with h5py.File(backup, "r") as h5_file:
                json.loads(h5_file.attrs["training_metadata"])
        except Exception as error:  # noqa: BLE001
            problems.append(f"backup does not read: {error!r}")
    return problems


def within_run_slope(runs):
    """Least-squares slope of RSS (KiB) over epochs with one intercept per run: each run's
    epochs and RSS are centred on their own means before one common slope is fitted."""
    xs, ys = [], []
    for points in runs:
        points = points[WARMUP_EPOCHS:]
        if len(points) < 2:
            continue
        epochs = np.array([p[0] for p in points], dtype=float)
        rss = np.array([p[1] for p in points], dtype=float)
        xs.append(epochs - epochs.mean())
        ys.append(rss - rss.mean())
    if not xs:
        return float("nan"), 0
    x, y = np.concatenate(xs), np.concatenate(ys)
    return float(np.dot(x, y) / max(np.dot(x, x), 1e-12)), len(x)


def _verify_resume(previous_events, start_event):
    """A resume continues from an intact checkpoint when it starts one epoch after the last
    epoch logged (or at that epoch, if the kill came before its backup was written) with the
    weights logged at the end of the epoch before it."""
    ends = {}
    for event in previous_events:
        if event["event"] == "epoch":
            ends[event["epoch"]] = event["hash"]  # the last run to finish an epoch wins
    if not ends:
        return start_event["epoch"] == 0, "no epoch finished before the kill"
    last = max(ends)
    epoch = start_event["epoch"]
    if epoch not in (last, last + 1):
        return False, f"resumed at epoch {epoch}, the last finished epoch was {last}"
    expected = ends.get(epoch - 1) if epoch > 0 else None
    if epoch > 0 and start_event["hash"] != expected:
        return False, f"resumed at epoch {epoch} with weights unlike epoch {epoch - 1}'s"
    return True, f"resumed at epoch {epoch}"


def soak(epochs, seed, kill_every, samples, folder, out=print):
    rng = random.Random(seed)
    log_path = os.path.join(folder, "events.jsonl")
    command = [sys.executable, "-m", "kiln.bench.soak", "--worker", folder, str(epochs),
               str(samples)]
    kills, resumes, verified, problems, runs = 0, 0, 0, [], []
    while True:
        seen = len(_events(log_path))
        worker = subprocess.Popen(command)
        target = rng.randint(1, 2 * kill_every - 1)  # epochs to let finish, mean kill_every
        killed = False
        while worker.poll() is None:
            events = _events(log_path)[seen:]
            finished = [e for e in events if e["event"] == "epoch"]
            if len(finished) >= target:
                # a random moment of the next epoch, the checkpoint writes at its start
                time.sleep(rng.random() * _epoch_seconds(finished))
                worker.send_signal(signal.SIGKILL)
                worker.wait()
                killed = True
                break
            time.sleep(0.01)
        events = _events(log_path)
        run = events[seen:]
        start = next((e for e in run if e["event"] == "start"), None)
        if start is not None and seen:
            resumes += 1
            good, why = _verify_resume(events[:seen], start)
            verified += good
            if not good:
                problems.append(why)
        runs.append([(e["epoch"], e["rss_kib"]) for e in run if e["event"] == "epoch"])
        if killed:
            kills += 1
            found = _check_checkpoints(folder)
            problems += found
            last = max((e["epoch"] for e in run if e["event"] == "epoch"), default=None)
            out(f"kill {kills}: after epoch {last}, checkpoints "
                f"{'intact' if not found else 'BROKEN'}")
            continue
        if worker.returncode != 0:
            problems.append(f"the worker exited with status {worker.returncode}")
            break
        if any(e["event"] == "done" for e in run):
            break
    slope, points = within_run_slope(runs)
    all_rss = [rss for run in runs for _, rss in run]
    finished_epochs = {e["epoch"] for e in _events(log_path) if e["event"] == "epoch"}
    if len(finished_epochs) != epochs:
        problems.append(f"{len(finished_epochs)} of {epochs} epochs finished")
    for problem in problems:
        out(f"problem: {problem}")
    ok = not problems
    out(f"RSS: {min(all_rss) / 1024:.1f}-{max(all_rss) / 1024:.1f} MiB over "
        f"{len(runs)} runs; slope within runs {slope:+.1f} KiB/epoch ({points} epochs after "
        f"each run's first {WARMUP_EPOCHS})")
    out(f"soak: epochs={epochs} kills={kills} resumes_verified={verified}/{resumes} "
        f"rss_slope_kib_per_epoch={slope:+.1f} ok={ok}")
    return ok, {"kills": kills, "resumes": resumes, "verified": verified, "slope": slope,
                "problems": problems}


def _epoch_seconds(finished):
    """The worker's epoch duration (checkpoints included): the median spacing of its epoch
    ends, or a guess before it has two."""
    times = [event["time"] for event in finished]
    if len(times) < 2:
        return 0.5
    return float(np.median(np.diff(times)))


def add_parser(sub):
    parser = sub.add_parser("soak", help="long fit with checkpoints, killed and resumed at "
                                         "random moments; RSS slope and resume checks")
    parser.add_argument("--epochs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kill-every", type=int, default=6,
                        help="mean number of epochs between kills")
    parser.add_argument("--samples", type=int, default=1024)
    parser.add_argument("--dir", default=None, help="working folder (default: a new temporary "
                                                    "one, removed afterwards)")


def command(args):
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        ok, _ = soak(args.epochs, args.seed, args.kill_every, args.samples, args.dir)
    else:
        with tempfile.TemporaryDirectory(prefix="kiln-soak-") as folder:
            ok, _ = soak(args.epochs, args.seed, args.kill_every, args.samples, folder)
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        run_worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("usage: python -m kiln.bench soak [--epochs N] [--seed S]")
