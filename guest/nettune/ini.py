"""The INI files other tools keep (systemd .link files, NetworkManager keyfiles,
tuned profiles), read one way: blank lines and lines starting with '#' or ';'
skipped, "[section]" headers, "key = value" assignments with both sides stripped.
Each reader keeps its own rules for what a section or a key means."""

from __future__ import annotations

from typing import Iterator, Optional, Tuple


def entries(text: str) -> Iterator[Tuple[str, Optional[str], str]]:
    """(section, None, "") at each header, (section, key, value) at each
    assignment; an assignment before any header has section ""."""
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            yield section, None, ""
            continue
        key, sep, value = line.partition("=")
        if sep:
            yield section, key.strip(), value.strip()
