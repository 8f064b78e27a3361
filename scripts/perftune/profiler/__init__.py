"""What the vendor tools write, read exactly: msprof / msOpProf / torch_npu tables and timelines, PyPTO simulator files.

Pure readers over text and objects (no subprocess, no clock); the tools are run by ``measure``.
May import: perftune.errors, perftune.fsio, perftune.argv, perftune.contract
"""
