#!/usr/bin/env python3
"""Create a new operator folder with every Stage 1-4 artefact in its format, placeholders marked.

Writes <DIR>/<NAME>/: SPEC.md, EXPLORE_REPORT.md, PRO_MATERIAL_INDEX.md, MEMORY.md,
KB_SELECTION.json (Stage 1), <NAME>_golden.py, <NAME>_golden_cpu.py (Stage 2), DESIGN.md,
DESIGN_BINDINGS.json, module_interfaces.yaml (Stage 3), test_<NAME>.py, KB_USAGE.json (Stage 4).
Every placeholder is `<FILL: what to write>`; validate_stage.py refuses a file while one is left.
Formats: docs/stage-artefacts.md. An existing folder is never overwritten.
--backend pypto-sim writes a real, running PyPTO operator instead of code placeholders, for any
signature: n named inputs of their own shapes and dtypes (integer inputs are indices), axes named
by --dims where two dimensions share a size; goldens (numpy; bfloat16 as float32 arrays of bfloat16
numbers), a test file whose @pypto.frontend.jit kernel (y = 2 * first input) simulates and passes as
written and whose wrapper allocates the outputs the golden returns, importing the shipped pypto
0.2.0 helper; SPEC.md's P0 case, three small cases valid for every input, the precision gate scaled
by the reduction length --reduction, work model, support range; the plan stub variants/variants.json
(docs/pypto-sim-backend.md, docs/spec-format.md).

usage:
  new_operator.py --op NAME --dir DIR [--backend cpu|pypto-sim] [--case-id ID] [--shape S] [--dims D]
                  [--dtype D] [--reduction K] [--json]

example:
  python3 scripts/new_operator.py --op rmsnorm --dir custom
  python3 scripts/new_operator.py --op rmsnorm --dir custom --backend pypto-sim \
      --case-id r64_c256_bf16 --shape 'x:[64,256],gamma:[256]' --dtype bfloat16 --reduction 256
  python3 scripts/new_operator.py --op mm --dir custom --backend pypto-sim --case-id m64_k512_n128_fp16 \
      --shape 'x:[M,K],w:[K,N]' --dims M=64,K=512,N=128 --dtype float16 --reduction K

exit codes: 0 created, 2 usage error (name not an identifier, folder exists).
"""

from __future__ import annotations

import sys

from perftune import fsio
from perftune.argv import add_json_flag, parser_from_doc, path_arg
from perftune.artefacts import scaffold, scaffold_pypto_sim
from perftune.errors import run_cli


def build_parser():
    parser = parser_from_doc(__doc__, "new_operator.py")
    parser.add_argument("--op", required=True, help="operator name (a Python identifier)")
    parser.add_argument("--dir", required=True, type=path_arg, help="parent folder (e.g. custom); <DIR>/<NAME> is created")
    parser.add_argument("--backend", choices=("cpu", "pypto-sim"), default="cpu", help="the code the scaffold writes")
    parser.add_argument("--case-id", default="r64_c256_fp32", help="pypto-sim: the P0 case id")
    parser.add_argument("--shape", default="x:[64,256]", help="pypto-sim: the P0 inputs, NAME:[axis,...] each; an axis "
                        "is a size or a --dims name")
    parser.add_argument("--dims", default="", help="pypto-sim: sizes of the named axes of --shape, e.g. M=64,K=512")
    parser.add_argument("--dtype", default="float32", help="pypto-sim: float32, float16, bfloat16; int32, int64 for "
                        "index inputs (one for all, or per name: x:bfloat16,idx:int32)")
    parser.add_argument("--reduction", default="1", help="pypto-sim: terms one output element sums (a --dims name "
                        "or a number; 1 element-wise): scales the precision gate's atol by its square root")
    add_json_flag(parser)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.backend == "pypto-sim":
        root, written = scaffold_pypto_sim.create(args.dir, args.op, args.case_id, args.shape, args.dtype,
                                                  args.dims, args.reduction)
    else:
        root, written = scaffold.create(args.dir, args.op)
    if args.json:
        print(fsio.dumps({"op_dir": str(root), "files": written}), end="")
    else:
        print(f"created {root} with {len(written)} files: {', '.join(written)}")
        print(f"next: fill every <FILL: ...>, then python3 scripts/validate_stage.py 1 --op-dir {root}")
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
