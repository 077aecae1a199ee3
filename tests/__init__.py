"""The tests. Helpers several test files share are in ``tests/support``, whose asserts pytest
rewrites as it does a test module's (its introspection in a failing check)."""

try:
    import pytest
except ImportError:  # a helper imported in a node's container, which has no test runner
    pass
else:
    pytest.register_assert_rewrite("tests.support")
