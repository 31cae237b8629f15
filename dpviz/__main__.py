"""``python -m dpviz``: see :mod:`dpviz.cli`."""

from dpviz.cli import main

raise SystemExit(main())
