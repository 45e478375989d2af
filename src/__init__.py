"""pegboard: run a command on remote compute as if it were local."""

__version__ = "0.2.0"
