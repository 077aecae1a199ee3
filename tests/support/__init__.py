"""What several test files share: scenario and master builders, run checks, stand-ins and
references. ``conftest.py`` files hold only fixtures, and import from here."""
