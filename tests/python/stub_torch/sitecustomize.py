"""Stub `platform` for tests, loaded at start-up when this directory is on PYTHONPATH.

STUB_PLATFORM_SYSTEM (`platform.system()`, e.g. "Darwin" or "Windows"),
STUB_PLATFORM_MACHINE (`platform.machine()`, e.g. "arm64" or "AMD64") and
STUB_PLATFORM_MAC_VER (`platform.mac_ver()[0]`, e.g. "15.5"; "" for none).
Unset variables leave the real function. `apply()` re-reads the variables.
"""

import os
import platform

_REAL = (platform.system, platform.machine, platform.mac_ver)


def apply():
    system = os.environ.get("STUB_PLATFORM_SYSTEM")
    machine = os.environ.get("STUB_PLATFORM_MACHINE")
    mac_ver = os.environ.get("STUB_PLATFORM_MAC_VER")
    platform.system = (lambda: system) if system else _REAL[0]
    platform.machine = (lambda: machine) if machine else _REAL[1]
    if mac_ver is None:
        platform.mac_ver = _REAL[2]
    else:
        platform.mac_ver = lambda *args, **kwargs: (mac_ver, ("", "", ""), "")


apply()
