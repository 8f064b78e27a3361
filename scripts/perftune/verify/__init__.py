"""Verifier gates as functions returning results (DESIGN §8).

``stage4`` holds the machine-checkable Stage 4 static gates on ``test_<op>.py`` (ast only, plus
one delivery-import probe in a subprocess); ``stage5`` runs them, IN and P1-P10 (check ids: ``checks``).

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.profiler, perftune.measure, perftune.decide, perftune.terminal, perftune.report, perftune.artefacts
"""
