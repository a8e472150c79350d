"""Compactscope's engine: pure Python, never imports Qt.

Data flows one way: file or live source -> ``loaders`` -> ``Conversation`` ->
``pipeline.Engine`` running a ``strategies`` entry's ``layers`` -> ``trace.Trace``.
"""
