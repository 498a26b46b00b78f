"""Data-parallel training's engine side: gradient sums across MPI processes (collective.py)
and the watcher that names a rank that died (rank_watch.py). keras/distribution builds the
Keras API (DataParallel, `kiln launch`) on these."""
