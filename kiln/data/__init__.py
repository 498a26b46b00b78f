"""Input-pipeline kernels: work on the training data before it reaches a plan (Keras 2's
ImageDataGenerator transforms), run in the feeder's worker threads beside the step."""
