"""Around the stages: the orchestrator state machine, environment check, docs index, host installs.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract, perftune.verify (the Stage 5
gate re-derives the verifier's verdict: verify/rederive.py)
"""
