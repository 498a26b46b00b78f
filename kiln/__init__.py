"""kiln: Keras-compatible training on the CPU, compiled to fused oneDNN primitives.

The package is layered; each layer imports only the ones before it:

    binding  ->  ops  ->  graph  ->  plan  ->  runtime  ->  keras (front end)
"""

__version__ = "0.1.0"
