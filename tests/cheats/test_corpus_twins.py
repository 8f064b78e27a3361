"""The legal twins of the cheat corpus (test_corpus.py; README.md): each twin PASSES stage5_check with the
re-measurement, so a false FAIL is tested too. Its own module, so the two halves of the corpus run side by
side under ``--dist loadfile``.
"""

from __future__ import annotations

import pytest

from test_corpus import CORPUS, load, verdict


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_legal_twin_passes(path, tmp_path):
    code, found = verdict(load(path)["twin"], tmp_path)
    assert (code, found["verdict"], found["failures"]) == (0, "PASS", []), found["failures"]
    assert found["remeasure"]["status"] == "run"
    attempts = found["provenance"]["final_attempts"]   # every final attempt counts (issue 35 item 6): all listed
    assert attempts["rounds"] and all(c["attempts"] == len(c["points"]) >= 1 for c in attempts["cases"].values())
