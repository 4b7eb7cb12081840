"""Server-side tests reuse the integration helpers (private Jupyter dirs,
kernelspecs started through jupyter_client, message collectors)."""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "kg_integration_helpers", os.path.join(HERE, "..", "integration", "conftest.py"))
helpers = importlib.util.module_from_spec(_spec)
sys.modules["kg_integration_helpers"] = helpers
_spec.loader.exec_module(helpers)

env = helpers.env  # the fixture
