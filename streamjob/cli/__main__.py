"""``python -m streamjob.cli``: the ``streamjob`` command."""

from . import main

if __name__ == "__main__":  # pragma: no cover
    main()
