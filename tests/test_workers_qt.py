"""The window's executor: tasks in a thread pool, callbacks in the GUI thread, and none delivered to a Qt
object that was deleted while its task ran (a window or controller closed mid-task)."""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject

from compactscope.app.workers import QtExecutor


class Receiver(QObject):
    def __init__(self):
        super().__init__()
        self.got = []

    def done(self, value):
        self.setObjectName(str(value))        # a Qt call: raises RuntimeError once the C++ object is gone
        self.got.append(value)


def test_callbacks_arrive_in_the_gui_thread(qtbot):
    ex = QtExecutor(defer=False)
    r = Receiver()
    threads = []

    def task():
        ex.post(lambda v: threads.append(threading.current_thread()) or r.done(v), 7)

    ex.submit(task)
    qtbot.waitUntil(lambda: r.got == [7], timeout=10000)
    assert threads == [threading.main_thread()]


def test_a_callback_to_a_deleted_object_is_dropped(qtbot):
    ex = QtExecutor(defer=False)
    alive, gone = Receiver(), Receiver()
    cb = gone.done
    started, release = threading.Event(), threading.Event()

    def task():
        started.set()
        release.wait(10)
        ex.post(cb, "late")             # its receiver was deleted meanwhile
        ex.post(alive.done, "ok")

    ex.submit(task)
    assert started.wait(10)
    gone.deleteLater()
    qtbot.waitUntil(lambda: not __import__("shiboken6").isValid(gone), timeout=10000)
    release.set()
    qtbot.waitUntil(lambda: alive.got == ["ok"], timeout=10000)   # no RuntimeError raised on the way
