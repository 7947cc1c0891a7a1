"""Local-first sandbox and test harness for a change-data-capture data lake."""

__version__ = "0.1.0"
