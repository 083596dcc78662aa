"""pytest configuration: the spec_map plugin records which clauses passing tests prove.

Under mutation testing (``MCP_REF_MAX_EXAMPLES`` set; see tests/_examples.py) a Hypothesis
profile caps the property tests that do not name their own count as well.
"""

from hypothesis import settings

from tests._examples import CAP

pytest_plugins = ["spec_map.pytest_plugin"]

if CAP is not None:
    settings.register_profile("mutation", max_examples=CAP)
    settings.load_profile("mutation")
