"""``python -m tilesolve.specs [NAME]``: the ``tilesolve specs`` command."""
import sys

from .cli import main_specs

sys.exit(main_specs(prog="python -m tilesolve.specs"))
