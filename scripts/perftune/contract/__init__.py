"""What is frozen and how it is read: the manifest, protocol constants, aggregation, golden, schemas.

May import: perftune.errors, perftune.fsio, perftune.argv
"""
