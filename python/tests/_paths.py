"""Shared paths for the reference's tests (importable from either test layout)."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(PYTHON_DIR)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

# repo_root/../shared/fixtures/upstream, overridable for other checkouts.
FIXTURES = os.environ.get("WASTE_UPSTREAM_FIXTURES",
                          os.path.join(os.path.dirname(REPO_ROOT), "shared", "fixtures", "upstream"))
FIXTURE_NAMES = ("tiny", "tiny-tok", "tiny-prefix")
