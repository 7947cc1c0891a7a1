"""The sandbox's own tests (run from a checkout)."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the checkout
