"""The inspector's JSON tab shows the selected message's JSON, filled when the tab is shown."""
import json

from compactscope.widgets.inspector import Inspector


def test_json_tab_filled_when_shown(qtbot):
    ins = Inspector()
    qtbot.addWidget(ins)
    m = {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    ins.show_message(0, m)
    ins.tabs.setCurrentWidget(ins.json)
    assert json.loads(ins.json.toPlainText()) == m
    m2 = {"role": "assistant", "content": "bye"}
    ins.show_message(1, m2)                       # JSON tab is current: filled at once
    assert json.loads(ins.visible_text()) == m2
    ins.tabs.setCurrentWidget(ins.text)
    ins.show_message(2, m)
    ins.tabs.setCurrentWidget(ins.json)
    assert json.loads(ins.visible_text()) == m
