"""Every environment variable Steward reads is documented for operators."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READS = re.compile(r"""env(?:_int|_bool)?\(\s*["']([A-Z][A-Z0-9_]+)["']""")
ENVIRON = re.compile(r"""environ(?:\.get\(|\[)\s*["']((?:STEWARD|DATABASE|REDIS)_[A-Z0-9_]+)["']""")


def test_every_setting_read_is_in_the_operations_guide():
    sources = [ROOT / "portal" / "settings.py", ROOT / "portal" / "devstack.py"]
    names = set()
    for source in sources:
        text = source.read_text()
        names |= set(READS.findall(text)) | set(ENVIRON.findall(text))
    assert len(names) > 30  # the patterns still find what settings.py reads
    guide = (ROOT / "docs" / "operations.md").read_text()
    missing = sorted(name for name in names if f"`{name}`" not in guide)
    assert missing == [], f"document these in docs/operations.md (Settings): {missing}"
