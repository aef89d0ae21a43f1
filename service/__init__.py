"""The table server: aiohttp WebSockets and REST over a PostgreSQL ledger.

It runs the rules of :mod:`verifier` and never reimplements them.
"""
