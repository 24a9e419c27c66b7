"""A JSON file checked against its JSON Schema, wrong ones refused with the place named.

The manifests (the spec's, `resumecheck.specmanifest`; the traces', `resumecheck.tracemanifest`)
are edited by hand and by tools; one reader gives them one kind of error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from resumecheck.errors import UsageError


def load_checked(path: Path, schema: dict[str, Any]) -> Any:
    """`path`'s JSON value, valid under `schema`; a UsageError naming the file and the place
    that is wrong otherwise."""
    import jsonschema  # 40 ms to import: only a command that reads a manifest pays it

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        jsonschema.validate(data, schema)
    except json.JSONDecodeError as error:
        raise UsageError(f"{path}: not JSON: {error}") from None
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path) or "top level"
        raise UsageError(f"{path}: {where}: {error.message}") from None
    return data
