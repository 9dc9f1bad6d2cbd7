"""README.md's Python example runs as written (its one ```python block, from the repository root)."""
import os
import re

from conftest import ROOT


def test_the_readme_python_example_runs(monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"^```python\n(.*?)^```$", f.read(), re.S | re.M)
    assert len(blocks) == 1, f"README.md has {len(blocks)} ```python blocks, expected 1"
    monkeypatch.chdir(ROOT)
    scope = {}
    exec(compile(blocks[0], "README.md (python block)", "exec"), scope)
    layer, x, y = scope["layer"], scope["x"], scope["y"]
    assert y.shape == (2, 5, 64) and x.grad is not None and layer.table.grad is not None
