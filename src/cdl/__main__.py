"""``python -m cdl``: the ``cdl`` command (:func:`cdl.cli.main`)."""

from .cli import main

if __name__ == "__main__":
    main()
