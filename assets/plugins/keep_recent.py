"""Keep the first message and the last N messages, never splitting a tool call from its result.

A compactor as most agents write it: a plain function over the message list. Works on either
dialect (Anthropic blocks or OpenAI ``tool`` messages), so it declares none.

    compactscope run FILE --strategy assets/plugins/keep_recent.py:keep_recent --set keep=20
"""


def _is_result(m) -> bool:
    if m.get("role") == "tool":
        return True
    content = m.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                             for b in content)


def keep_recent(messages, keep: int = 40, placeholder: bool = True):
    """Keep the first message and the last ``keep`` messages.

    Args:
        keep: how many of the most recent messages survive (the cut moves back past tool results,
            so a result never loses its call)
        placeholder: put a one-line note where the middle was cut
    """
    if len(messages) <= keep + 1:
        return messages
    start = len(messages) - keep
    while start > 1 and _is_result(messages[start]):
        start -= 1
    if start <= 1:
        return messages
    head = messages[:1]
    note = [{"role": "user", "content": f"[{start - 1} earlier messages were removed to save context]"}]
    tail = messages[start:]
    if placeholder and head[0].get("role") == "user" and tail[0].get("role") == "user":
        note = []                # two user messages in a row would be merged by the API anyway
    return head + (note if placeholder else []) + tail
