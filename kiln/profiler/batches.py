"""`profile_batch` of the TensorBoard callback: record some batches of a fit and write their
trace where TensorBoard's profile plugin reads it.

Keras's spelling: an integer N (that batch), a pair (start, stop) or the string
"start,stop"; batches count over the whole fit from 1; 0 profiles nothing. The batches right
after the recorded ones (as many) run plain and timed, for the overhead in the table.
"""

from .recorder import PLAIN, RECORD, SKIP, Session
from .report import Profile


def batch_range(profile_batch, owner="TensorBoard"):
    """(start, stop) of Keras's `profile_batch` argument; (0, 0) means off."""
    message = (f"{owner}: argument profile_batch must be a non-negative integer or a pair of "
               f"positive integers (start, stop) with start <= stop, got {profile_batch!r}")
    value = profile_batch
    if isinstance(value, str):
        try:
            value = [int(part) for part in value.split(",")]
        except ValueError:
            raise ValueError(message) from None
        value = value[0] if len(value) == 1 else value
    if isinstance(value, int) and not isinstance(value, bool):
        start = stop = value
    elif isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        start, stop = value
    else:
        raise ValueError(message)
    if start < 0 or stop < start:
        raise ValueError(message)
    return start, stop


class BatchProfiler:
    """Records batches start..stop of a fit (see module docstring).

    Args:
        profile_batch: Keras's argument.
        peaks: the peaks to take percentages of (measured when the trace is written if None).
    """

    def __init__(self, profile_batch, owner="TensorBoard", peaks=None):
        self.start, self.stop = batch_range(profile_batch, owner)
        self.enabled = self.stop > 0
        self.peaks = peaks
        self.session = None
        self.profile = None
        self.path = None

    def _schedule(self, index):
        batch = index + 1  # the session starts with the fit
        if self.start <= batch <= self.stop:
            return RECORD
        if self.stop < batch <= 2 * self.stop - self.start + 1:
            return PLAIN
        return SKIP

    def begin(self, model):
        """At the start of fit: watch the model's training steps."""
        if self.session is not None:  # a fit that raised never reached on_train_end
            self.session.stop()
            self.session = None
        if self.enabled:
            self.session = Session(model, self._schedule).start()

    def after_batch(self, batch, log_dir):
        """After global batch `batch`: once the plain batches are done, write the trace."""
        if self.session is not None and batch >= 2 * self.stop - self.start + 1:
            self.finish(log_dir)

    def finish(self, log_dir):
        """Stop watching; write the trace if a batch was recorded. Returns its path or None."""
        session, self.session = self.session, None
        if session is None:
            return None
        session.stop()
        if session.records:
            from . import measure_peaks
            self.profile = Profile(session.model, session.records, session.plain_ns,
                                   self.peaks or measure_peaks())
            self.path = self.profile.save_tensorboard(log_dir)
        return self.path
