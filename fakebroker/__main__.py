"""The ``fakebroker`` command's entry point (also ``python -m fakebroker``)."""

from __future__ import annotations


def main() -> None:
    from .cli.memory import serve_with_malloc

    serve_with_malloc()  # first: it may start the process again, before anything is imported
    from .cli.command import main as command

    command()


if __name__ == "__main__":
    main()
