"""`memory-gate doctor`: checks of this install, each returning structured findings (what,
severity, mend), shared by the command and any other page that reports health.

May import: gate.claude, gate.context, gate.memory, gate.search, gate.engine, the ground floor.
"""
