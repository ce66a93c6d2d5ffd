"""The package's version, in a module of its own so that every layer may read it without
importing the package root (the public facade, at the top: NOTE [the layer order] in
``tests/test_layering.py``). ``pyproject.toml`` states the same number for the wheel;
``tests/test_packaging.py`` holds the two equal."""

from __future__ import annotations

__version__ = "0.1.0"
