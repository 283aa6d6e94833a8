"""Registers the test library's pytest plugin (ixgbe_testlib.pytest_plugin,
tests/lib: the options, fixtures and hooks the suites that boot guests share)
once for every suite under tests/. pytest finds tests/lib by pytest.ini."""

pytest_plugins = ["ixgbe_testlib.pytest_plugin"]
