"""What several test files share: scenario and master builders, run checks, stand-ins and
references. ``conftest.py`` files hold only fixtures, and import from here.

Its asserts are rewritten as a test module's are (pytest's introspection in a failing check).
"""

import pytest

pytest.register_assert_rewrite("tests.support")
