"""errors: exit categories, the one-line format and primary-category priority."""

import errno
import os

import pytest

from perftune import errors


def test_line_format_names_file_field_problem_and_fix():
    exc = errors.ContractError("a/PERFORMANCE_CASES.json", "cases[0].id", "is empty", "give an id")
    assert exc.line() == "a/PERFORMANCE_CASES.json: cases[0].id: is empty (give an id)"
    assert exc.exit_code == 2


def test_exit_codes_per_family():
    assert errors.CheckFailed("f", "x", "y").exit_code == 1
    assert errors.EnvError("msprof", "PATH", "missing").exit_code == 3


def test_run_cli_prints_one_line_and_returns_code(capsys):
    def main(argv):
        raise errors.EnvError("msprof", "PATH", "not found", "install CANN")

    assert errors.run_cli(main, []) == 3
    err = capsys.readouterr().err
    assert err == "error: msprof: PATH: not found (install CANN)\n"


def test_there_are_24_unique_categories():
    assert len(errors.FAILURE_CATEGORIES) == 24 == len(set(errors.FAILURE_CATEGORIES))
    assert sorted(errors.CATEGORY_PRIORITY) == sorted(errors.FAILURE_CATEGORIES)


@pytest.mark.parametrize("present, stage5, expected", [
    (["cheating", "kb_selection_invalid"], False, "kb_selection_invalid"),
    (["cheating", "golden_failure", "design_violation"], False, "golden_failure"),
    (["performance_evidence_invalid", "wrapper_boundary_violation"], False, "wrapper_boundary_violation"),
    (["env_error", "precision_failure"], False, "precision_failure"),
    (["env_error"], False, "env_error"),
    (["env_error", "other"], False, "other"),
    (["cheating", "stage5_contract_blocked"], True, "stage5_contract_blocked"),
    (["cheating", "stage5_contract_blocked"], False, "cheating"),
    ([], False, None),
])
def test_primary_category(present, stage5, expected):
    assert errors.primary_category(present, stage5=stage5) == expected


def test_unknown_category_is_refused():
    with pytest.raises(ValueError):
        errors.primary_category(["made_up"])


@pytest.mark.parametrize("code,exit_code", [(errno.ENOSPC, 3), (errno.EACCES, 3), (errno.EROFS, 3),
                                            (errno.ENOTDIR, 2), (errno.EEXIST, 2)])
def test_an_unhandled_os_error_is_one_line_with_the_path_and_the_right_exit_code(capsys, code, exit_code):
    def main(_argv):
        raise OSError(code, os.strerror(code), "/op/docs/perf/round_001")

    assert errors.run_cli(main, []) == exit_code
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: /op/docs/perf/round_001: -: " + os.strerror(code))
