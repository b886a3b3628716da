# Compatibility package: lets `import identity` find the flat build one level up.
import importlib.util
import sys
from pathlib import Path

_parent = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location(
    "identity._flat", _parent / "__init__.py", submodule_search_locations=[str(_parent)]
)
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)
globals().update({k: v for k, v in vars(_module).items() if not k.startswith('__')})
