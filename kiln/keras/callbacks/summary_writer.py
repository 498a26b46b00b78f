"""Writing TensorBoard event files without TensorFlow.

Keras's TensorBoard callback writes through `tf.summary`; kiln must not need TensorFlow, so it
writes through the `tensorboard` package itself (the optional extra `kiln[tensorboard]`):
`tensorboard.summary.writer.event_file_writer.EventFileWriter` frames and checksums the
records, and the plugins' `scalar_pb` / `histogram_pb` build the same summaries `tf.summary`
writes (tensor summaries tagged with the scalars / histograms plugin), so TensorBoard shows the
runs exactly as it shows Keras's. The `tensorboard` package was chosen over `tensorboardX`
because the reader (`EventAccumulator`) comes from it too: one dependency writes and reads,
and it is the format's reference implementation.
"""

import time

import numpy as np

from ...plot.tensorboard_package import import_tensorboard  # noqa: F401 (re-exported)


class SummaryWriter:
    """One TensorBoard run directory (e.g. `<log_dir>/train`): scalars, histograms and raw
    summaries, each at an integer step. The event file is created on the first write."""

    def __init__(self, logdir, owner="SummaryWriter"):
        self.logdir = str(logdir)
        self._owner = owner
        self._writer = None

    def _file_writer(self):
        if self._writer is None:
            import_tensorboard(self._owner)
            from tensorboard.summary.writer.event_file_writer import EventFileWriter
            self._writer = EventFileWriter(self.logdir)
        return self._writer

    def write_summary(self, summary, step):
        """Appends a `summary_pb2.Summary` as an event at `step`."""
        from tensorboard.compat.proto import event_pb2
        writer = self._file_writer()
        writer.add_event(event_pb2.Event(wall_time=time.time(), step=int(step),
                                         summary=summary))

    def scalar(self, tag, value, step):
        """A float scalar, as `tf.summary.scalar` writes it."""
        self._file_writer()
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        self.write_summary(scalar_pb(tag, np.float32(np.mean(value))), step)

    def histogram(self, tag, values, step, buckets=None):
        """A histogram of `values` (any shape), as `tf.summary.histogram` writes it."""
        self._file_writer()
        from tensorboard.plugins.histogram.summary_v2 import histogram_pb
        self.write_summary(histogram_pb(tag, np.asarray(values), buckets=buckets), step)

    def image(self, tag, images, step, max_outputs=3):
        """Images `(k, height, width, channels)` with values in [0, 1], PNG-encoded as
        `tf.summary.image` writes them: the first `max_outputs` only, floats scaled by 255.5
        and saturated to uint8 as `tf.image.convert_image_dtype` does (needs Pillow)."""
        self._file_writer()
        import io

        from PIL import Image
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.plugins.image import metadata
        from tensorboard.util import tensor_util

        images = np.asarray(images, dtype=np.float64)[:max_outputs]
        pixels = np.clip(images * 255.5, 0, 255).astype(np.uint8)
        encoded = []
        for picture in pixels:
            if picture.shape[-1] == 1:
                picture = picture[..., 0]
            buffer = io.BytesIO()
            Image.fromarray(picture).save(buffer, format="PNG")
            encoded.append(buffer.getvalue())
        height, width = images.shape[1:3]
        data = np.array([str(width).encode(), str(height).encode(), *encoded], dtype=object)
        summary = summary_pb2.Summary()
        summary.value.add(tag=tag, metadata=metadata.create_summary_metadata(
            display_name=None, description=None),
            tensor=tensor_util.make_tensor_proto(data, dtype=np.object_))
        self.write_summary(summary, step)

    def text_tensor(self, tag, text, step, plugin_name, content=b""):
        """A string tensor for `plugin_name` (e.g. the model JSON for `graph_keras_model`)."""
        self._file_writer()
        from tensorboard.compat.proto import summary_pb2
        from tensorboard.util import tensor_util

        metadata = summary_pb2.SummaryMetadata()
        metadata.plugin_data.plugin_name = plugin_name
        metadata.plugin_data.content = content
        summary = summary_pb2.Summary()
        summary.value.add(tag=tag, metadata=metadata, tensor=tensor_util.make_tensor_proto(
            np.array(text.encode("utf-8"), dtype=object), dtype=np.object_))
        self.write_summary(summary, step)

    def flush(self):
        if self._writer is not None:
            self._writer.flush()

    def close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
