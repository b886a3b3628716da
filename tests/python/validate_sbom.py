"""Validates an SBOM written by `kernels export` against a vendored schema.

Usage: validate_sbom.py {cyclonedx|spdx} DOCUMENT SCHEMA_DIR

Exit 0 when valid; else every validation error on stderr and exit 1. The
CycloneDX schema refers to `spdx.schema.json` and `jsf-0.82.schema.json` by
URLs relative to its `$id`; they are served from SCHEMA_DIR, nothing is fetched.
"""

import json
import sys
from pathlib import Path

import jsonschema
from referencing import Registry, Resource

SCHEMAS = {"cyclonedx": "bom-1.5.schema.json", "spdx": "spdx-2.3.schema.json"}
REFERENCED = ["spdx.schema.json", "jsf-0.82.schema.json"]


def main() -> int:
    kind, document, schema_dir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    schema = json.loads((schema_dir / SCHEMAS[kind]).read_text())
    registry = Registry()
    for name in REFERENCED:
        contents = json.loads((schema_dir / name).read_text())
        registry = registry.with_resource(contents["$id"], Resource.from_contents(contents))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(
        schema, registry=registry, format_checker=validator_class.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(json.loads(document.read_text())), key=str)
    for error in errors:
        path = "/".join(str(p) for p in error.absolute_path)
        print(f"{document}: /{path}: {error.message}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
