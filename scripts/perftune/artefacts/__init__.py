"""The Stage 1-4 artefacts Stage 5 reads: their formats, the per-stage validators, the scaffold.

Formats are documented in docs/stage-artefacts.md (one owner section per artefact); the JSON and
YAML ones also have a schema in schemas/. Readers are pure functions over text and objects that
return :class:`.problems.Problem` lists; :mod:`.validate` is the I/O edge that reads an operator
directory, and :mod:`.scaffold` writes a new one.

May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract
"""
