"""bench/publish.py compares two ways of publishing a hand; both must give the same
bytes (the script checks it before it times anything) and the figures be printed."""

from __future__ import annotations

import sys

import pytest

from bench import publish


def test_the_two_ways_of_publishing_give_the_same_transcript_and_the_figures_are_printed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["publish.py", "--hands", "2", "--rounds", "1"])
    publish.main()
    out = capsys.readouterr().out
    assert "| as dicts |" in out and "| as text |" in out and "as text / as dicts: CPU" in out
    rec, texts = publish._played(0)
    stored = publish._ready(rec, texts)
    assert len(stored) == len(texts) - 4 - 8  # as the server forgets (RECENT_KEPT)
    assert publish.as_text(rec, stored) == publish.as_dicts(rec, publish._ready(rec, texts))
