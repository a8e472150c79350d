"""Bundled files: example conversations (made by examples/generate.py), lessons, translations, fonts."""
