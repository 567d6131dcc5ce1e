"""fakebroker's pytest plugin, registered through the ``pytest11`` entry point: installing
fakebroker is enough for its fixtures, marker and options to be there.

It lives inside the package (rather than as a top-level ``pytest_plugin`` package) so that
its import name cannot collide with anyone else's.
"""
