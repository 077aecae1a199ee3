"""The tests. Helpers several test files share are in ``tests/support``, whose asserts pytest
rewrites as it does a test module's (its introspection in a failing check)."""

import pytest

pytest.register_assert_rewrite("tests.support")
