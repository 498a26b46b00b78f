"""The `kiln` command: `kiln bench ...` runs the benchmark harness, `kiln profile ...`
profiles a training script, `kiln launch ...` runs one data-parallel under mpiexec."""

import sys


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "launch":  # kiln launch -n N train.py: mpiexec, threads per rank
        from .launch import main as launch_main
        return launch_main(argv[1:])
    if argv and argv[0] == "profile":  # kiln profile script.py [--steps N] [--trace out.json]
        from .profile_script import main as profile_main
        return profile_main(argv[1:])
    if argv and argv[0] == "plot":  # kiln plot history.csv -o curves.png
        from .plot.__main__ import main as plot_main
        return plot_main(argv[1:])
    if not argv or argv[0] not in ("bench",):
        print("usage: kiln bench train --model mnist_cnn --format channels_last --steps 50\n"
              "       kiln profile script.py --steps 10 --trace step.json --png layers.png\n"
              "       kiln launch -n 2 train.py\n"
              "       kiln plot history.csv -o curves.png")
        return 2
    from .bench.__main__ import main as bench_main
    return bench_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main())
