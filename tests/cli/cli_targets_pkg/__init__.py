"""A package for the command line's target tests (tests/cli/test_cli_target.py)."""
