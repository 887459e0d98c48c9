"""``python -m monitor``."""

from monitor.cli import main

raise SystemExit(main())
