"""`python -m iotame …` is the `iotame` command."""
import sys

from .cli import main

sys.exit(main())
