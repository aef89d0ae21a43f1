"""The rules kernel and fairness verifier for 13-card rummy (rummy-pf/v1).

Pure and deterministic: standard library plus ``cryptography`` only, and it never
imports ``service``.  The table server runs these exact rules, so what the server
does is exactly what this package checks.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
