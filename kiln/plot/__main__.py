"""`kiln plot history.csv -o curves.png`: draws the curves of a CSVLogger file or a
TensorBoard log directory to a PNG."""

import argparse
import sys

from .drawing import plot_history
from .history_files import read_history


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="kiln plot",
        description="Draw loss and metric curves (train and validation) to a PNG.")
    parser.add_argument("source", help="a CSVLogger file or a TensorBoard callback's log_dir")
    parser.add_argument("-o", "--output", default="curves.png",
                        help="PNG file to write (default: curves.png)")
    parser.add_argument("--title", default=None, help="title over the panels")
    args = parser.parse_args(argv)
    try:
        epochs, history = read_history(args.source)
        plot_history(history, args.output, epochs=epochs, title=args.title)
    except (OSError, ValueError, ImportError) as error:
        print(f"kiln plot: {error}", file=sys.stderr)
        return 1
    print(f"kiln plot: wrote {args.output} ({', '.join(sorted(history))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
