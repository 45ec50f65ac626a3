"""memory-gate: project memory for coding agents that keeps only what is still true."""

__version__ = "0.1.0"
