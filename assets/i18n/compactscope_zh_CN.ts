<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name></name>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Open…</source>
        <translation>打开(&amp;O)…</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>Open &amp;Fleet…</source>
        <translation>打开批量结果(&amp;F)…</translation>
    </message>
    <message>
        <source>Open the results of compactscope fleet (a Parquet file): the whole archive&apos;s distribution</source>
        <translation>打开 compactscope fleet 的结果（Parquet 文件）：整个归档的分布</translation>
    </message>
    <message>
        <source>Load &amp;Strategy from File…</source>
        <translation>从文件加载策略(&amp;S)…</translation>
    </message>
    <message>
        <source>Your own compactor: a Python file with a function messages -&gt; messages (docs/plugins.md)</source>
        <translation>你自己的压缩器：一个包含 messages -&gt; messages 函数的 Python 文件（docs/plugins.md）</translation>
    </message>
    <message>
        <source>Recent S&amp;trategies</source>
        <translation>最近的策略(&amp;T)</translation>
    </message>
    <message>
        <source>Open &amp;Example</source>
        <translation>打开示例(&amp;E)</translation>
    </message>
    <message>
        <source>Export as &amp;PNG…</source>
        <translation>导出为 PNG(&amp;P)…</translation>
    </message>
    <message>
        <source>A screenshot of the window</source>
        <translation>窗口截图</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>Zoom &amp;In</source>
        <translation>放大(&amp;I)</translation>
    </message>
    <message>
        <source>Zoom &amp;Out</source>
        <translation>缩小(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Reset Zoom</source>
        <translation>重置缩放(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Dark palette</source>
        <translation>深色配色(&amp;D)</translation>
    </message>
    <message>
        <source>&amp;Presenter mode</source>
        <translation>演示模式(&amp;P)</translation>
    </message>
    <message>
        <source>Large type; the inspector and parameters hidden; the narration shown in a lesson</source>
        <translation>大号字体；隐藏检查器和参数；课程中显示讲解</translation>
    </message>
    <message>
        <source>&amp;Navigate</source>
        <translation>导航(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Find…</source>
        <translation>查找(&amp;F)…</translation>
    </message>
    <message>
        <source>Find &amp;Next</source>
        <translation>查找下一个(&amp;N)</translation>
    </message>
    <message>
        <source>Find &amp;Previous</source>
        <translation>查找上一个(&amp;P)</translation>
    </message>
    <message>
        <source>Jump to tool &amp;partner</source>
        <translation>跳到配对的工具消息(&amp;P)</translation>
    </message>
    <message>
        <source>Run the pipeline &amp;again</source>
        <translation>重新运行流水线(&amp;A)</translation>
    </message>
    <message>
        <source>Clear</source>
        <translation>清除</translation>
    </message>
    <message>
        <source>L&amp;esson</source>
        <translation>课程(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;Next slide</source>
        <translation>下一张(&amp;N)</translation>
    </message>
    <message>
        <source>Page Down, or a presenter remote&apos;s next key</source>
        <translation>Page Down，或演示遥控器的“下一张”键</translation>
    </message>
    <message>
        <source>&amp;Previous slide</source>
        <translation>上一张(&amp;P)</translation>
    </message>
    <message>
        <source>Page Up, or a presenter remote&apos;s previous key</source>
        <translation>Page Up，或演示遥控器的“上一张”键</translation>
    </message>
    <message>
        <source>&amp;Close lesson</source>
        <translation>关闭课程(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Language</source>
        <translation>语言(&amp;L)</translation>
    </message>
    <message>
        <source>HTML report (*.html)</source>
        <translation>HTML 报告 (*.html)</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown (*.md)</translation>
    </message>
    <message>
        <source>Nothing to export: no conversation is open.</source>
        <translation>没有可导出的内容：尚未打开任何对话。</translation>
    </message>
    <message>
        <source>Open a transcript first.</source>
        <translation>请先打开一个对话记录。</translation>
    </message>
    <message>
        <source>Export a {upper} report</source>
        <translation>导出 {upper} 报告</translation>
    </message>
    <message>
        <source>Nothing to export: {e}.</source>
        <translation>没有可导出的内容：{e}。</translation>
    </message>
    <message>
        <source>Writing the {upper} report to {path}…</source>
        <translation>正在把 {upper} 报告写入 {path}…</translation>
    </message>
    <message>
        <source>Exported the {upper} report to {path} ({size:,} bytes, {dt:.1f} s)</source>
        <translation>已把 {upper} 报告导出到 {path}（{size:,} 字节，{dt:.1f} 秒）</translation>
    </message>
    <message>
        <source>The report could not be written: {what}</source>
        <translation>无法写入报告：{what}</translation>
    </message>
    <message>
        <source>Choose another file or folder (one you can write to).</source>
        <translation>请选择另一个（你有写入权限的）文件或文件夹。</translation>
    </message>
    <message>
        <source>Copied {what} as Markdown ({n_text:,} chars)</source>
        <translation>已把{what}复制为 Markdown（{n_text:,} 个字符）</translation>
    </message>
    <message>
        <source>Select a message to copy it as Markdown</source>
        <translation>请先选择一条消息，再把它复制为 Markdown</translation>
    </message>
    <message>
        <source>Nothing has run yet</source>
        <translation>还没有运行任何内容</translation>
    </message>
    <message>
        <source>No compaction summary here: no layer made one and the file records none</source>
        <translation>这里没有压缩摘要：没有层生成摘要，文件中也没有记录</translation>
    </message>
    <message>
        <source>Export as &amp;HTML…</source>
        <translation>导出为 HTML(&amp;H)…</translation>
    </message>
    <message>
        <source>Export as &amp;Markdown…</source>
        <translation>导出为 Markdown(&amp;M)…</translation>
    </message>
    <message>
        <source>A self-contained report of what is on screen: every layer, the summaries, the chart</source>
        <translation>屏幕内容的独立报告：每一层、所有摘要和图表</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>Copy Message as &amp;Markdown</source>
        <translation>把消息复制为 Markdown(&amp;M)</translation>
    </message>
    <message>
        <source>Copy &amp;Edits as Markdown</source>
        <translation>把修改复制为 Markdown(&amp;E)</translation>
    </message>
    <message>
        <source>Copy &amp;Summary as Markdown</source>
        <translation>把摘要复制为 Markdown(&amp;S)</translation>
    </message>
    <message>
        <source>Compactscope fleet — {name} ({n:,} sessions)</source>
        <translation>Compactscope 批量分析 — {name}（{n:,} 个会话）</translation>
    </message>
    <message>
        <source>Open &amp;fleet…</source>
        <translation>打开批量结果(&amp;F)…</translation>
    </message>
    <message>
        <source>&amp;Close</source>
        <translation>关闭(&amp;C)</translation>
    </message>
    <message>
        <source>Drag the slider (or the red line) to re-evaluate the fleet at another threshold; double-click a session to open it in the debugger</source>
        <translation>拖动滑块（或红线）在另一个阈值下重新评估全部会话；双击一个会话即可在调试器中打开</translation>
    </message>
    <message>
        <source>opened {name} at call {call} in the debugger</source>
        <translation>已在调试器中打开 {name}，定位到第 {call} 次调用</translation>
    </message>
    <message>
        <source>Could not open the fleet: {e}</source>
        <translation>无法打开批量结果：{e}</translation>
    </message>
    <message>
        <source>Open a results file written by compactscope fleet --out RESULTS.parquet.</source>
        <translation>请打开由 compactscope fleet --out RESULTS.parquet 写出的结果文件。</translation>
    </message>
    <message>
        <source>Compactscope fleet</source>
        <translation>Compactscope 批量分析</translation>
    </message>
    <message>
        <source>Open a fleet&apos;s results</source>
        <translation>打开批量分析结果</translation>
    </message>
    <message>
        <source>Fleet results (*.parquet);;All files (*)</source>
        <translation>批量结果 (*.parquet);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Pick a lesson from the Lesson menu (compactscope lessons lists them).</source>
        <translation>请从“课程”菜单中选择一门课程（compactscope lessons 会列出全部课程）。</translation>
    </message>
    <message>
        <source>A turn is still running in the current session.</source>
        <translation>当前会话中仍有一轮对话在运行。</translation>
    </message>
    <message>
        <source>Wait for it (or press Stop) before changing the workspace or the recording.</source>
        <translation>请等它结束（或按“停止”），再更改工作区或录制文件。</translation>
    </message>
    <message>
        <source>The workspace folder {workdir!r} does not exist.</source>
        <translation>工作区文件夹 {workdir!r} 不存在。</translation>
    </message>
    <message>
        <source>Pick an existing folder with Browse…; the agent can only touch files in it.</source>
        <translation>请用“浏览…”选择一个已存在的文件夹；Agent 只能操作其中的文件。</translation>
    </message>
    <message>
        <source>Cannot write the recording {path}: {v}</source>
        <translation>无法写入录制文件 {path}：{v}</translation>
    </message>
    <message>
        <source>Pick another recording file or folder.</source>
        <translation>请选择另一个录制文件或文件夹。</translation>
    </message>
    <message>
        <source>Cannot start the agent: {e}</source>
        <translation>无法启动 Agent：{e}</translation>
    </message>
    <message>
        <source>Check the settings.</source>
        <translation>请检查设置。</translation>
    </message>
    <message>
        <source>new session in {workdir} with {model}, strategy {name}; recording to {path}</source>
        <translation>在 {workdir} 中开始新会话，模型 {model}，策略 {name}；录制到 {path}</translation>
    </message>
    <message>
        <source>Strategy {name}: {e}</source>
        <translation>策略 {name}：{e}</translation>
    </message>
    <message>
        <source>Fix the parameter in the strategy panel.</source>
        <translation>请在策略面板中修正这个参数。</translation>
    </message>
    <message>
        <source>strategy is now {name}; the conversation is kept</source>
        <translation>策略现在是 {name}；对话保留</translation>
    </message>
    <message>
        <source>from the next call: </source>
        <translation>从下一次调用起：</translation>
    </message>
    <message>
        <source>queued: sent when the current turn ends</source>
        <translation>已排队：当前这一轮结束后发送</translation>
    </message>
    <message>
        <source>running the pipeline, then calling the model…</source>
        <translation>正在运行流水线，然后调用模型…</translation>
    </message>
    <message>
        <source>new session in {workdir}; the recording continues</source>
        <translation>在 {workdir} 中开始新会话；录制继续</translation>
    </message>
    <message>
        <source>new session: send a message</source>
        <translation>新会话：请发送一条消息</translation>
    </message>
    <message>
        <source>waiting for you to allow a shell command</source>
        <translation>等待你允许一条 shell 命令</translation>
    </message>
    <message>
        <source>stopped; the conversation so far is kept (every tool call has its result)</source>
        <translation>已停止；目前的对话保留（每个工具调用都有结果）</translation>
    </message>
    <message>
        <source>stopped; send a message to continue</source>
        <translation>已停止；发送一条消息即可继续</translation>
    </message>
    <message>
        <source>done; {n} model call(s) in this session</source>
        <translation>完成；本会话共 {n} 次模型调用</translation>
    </message>
    <message>
        <source>This is a bug in Compactscope; the recording keeps what happened.</source>
        <translation>这是 Compactscope 的缺陷；录制文件保留了发生的一切。</translation>
    </message>
    <message>
        <source>the turn ended with an error; nothing recorded so far is lost</source>
        <translation>这一轮以错误结束；已录制的内容都没有丢失</translation>
    </message>
    <message>
        <source>call {n}: {seconds:.1f} s, context {_fmt} tokens, output {_fmt2} tokens, stop {stop_reason}</source>
        <translation>第 {n} 次调用：{seconds:.1f} 秒，上下文 {_fmt} 个 token，输出 {_fmt2} 个 token，停止原因 {stop_reason}</translation>
    </message>
    <message>
        <source>The proxy did not start: {e}</source>
        <translation>代理没有启动：{e}</translation>
    </message>
    <message>
        <source>Pick another port, or check the upstream URL.</source>
        <translation>请换一个端口，或检查上游 URL。</translation>
    </message>
    <message>
        <source>proxy on {url} → {upstream}; recording to {path}</source>
        <translation>代理 {url} → {upstream}；录制到 {path}</translation>
    </message>
    <message>
        <source>proxy listening on {url}; run ANTHROPIC_BASE_URL={url} claude (or any client)</source>
        <translation>代理在 {url} 监听；运行 ANTHROPIC_BASE_URL={url} claude（或任何客户端）</translation>
    </message>
    <message>
        <source>proxy stopped after {n} call(s)</source>
        <translation>代理在 {n} 次调用后停止</translation>
    </message>
    <message>
        <source>proxy stopped</source>
        <translation>代理已停止</translation>
    </message>
    <message>
        <source>{path}: no such file.</source>
        <translation>{path}：文件不存在。</translation>
    </message>
    <message>
        <source>Pick the session file to follow.</source>
        <translation>请选择要跟踪的会话文件。</translation>
    </message>
    <message>
        <source>following {path}</source>
        <translation>正在跟踪 {path}</translation>
    </message>
    <message>
        <source>following {path}: the views update as complete lines arrive</source>
        <translation>正在跟随 {path}：每收到完整的一行，视图就更新</translation>
    </message>
    <message>
        <source>stopped following</source>
        <translation>已停止跟踪</translation>
    </message>
    <message>
        <source>Wait for the file to come back (following goes on), or stop following.</source>
        <translation>等文件恢复（跟随继续），或者停止跟随。</translation>
    </message>
    <message>
        <source>waiting</source>
        <translation>等待中</translation>
    </message>
    <message>
        <source>the session compacted: segment {s} starts at message {m}</source>
        <translation>会话压缩了：第 {s} 段从消息 {m} 开始</translation>
    </message>
    <message>
        <source>&amp;Live</source>
        <translation>实时(&amp;L)</translation>
    </message>
    <message>
        <source>&amp;Agent (chat with the s08 agent)…</source>
        <translation>Agent（与 s08 Agent 对话）(&amp;A)…</translation>
    </message>
    <message>
        <source>Recording &amp;proxy…</source>
        <translation>录制代理(&amp;P)…</translation>
    </message>
    <message>
        <source>&amp;Follow a session file…</source>
        <translation>跟踪会话文件(&amp;F)…</translation>
    </message>
    <message>
        <source>Compactscope</source>
        <translation>Compactscope</translation>
    </message>
    <message>
        <source>Before / after</source>
        <translation>前后对比</translation>
    </message>
    <message>
        <source>Snip boundary</source>
        <translation>裁剪边界</translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation>时间线</translation>
    </message>
    <message>
        <source>Inspector</source>
        <translation>检查器</translation>
    </message>
    <message>
        <source>Strategy and parameters</source>
        <translation>策略与参数</translation>
    </message>
    <message>
        <source>Narration</source>
        <translation>讲解</translation>
    </message>
    <message>
        <source>Size and tokens</source>
        <translation>大小与 token</translation>
    </message>
    <message>
        <source>API findings</source>
        <translation>API 检查结果</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Load a compactor (a Python file)</source>
        <translation>加载压缩器（Python 文件）</translation>
    </message>
    <message>
        <source>Python files (*.py);;All files (*)</source>
        <translation>Python 文件 (*.py);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Strategy {name}: {v}</source>
        <translation>策略 {name}：{v}</translation>
    </message>
    <message>
        <source>Fix the file and load it again (docs/plugins.md describes what a compactor is).</source>
        <translation>请修正文件后重新加载（docs/plugins.md 说明了什么是压缩器）。</translation>
    </message>
    <message>
        <source>{name} defines no compactor.</source>
        <translation>{name} 没有定义任何压缩器。</translation>
    </message>
    <message>
        <source>A compactor is a function messages -&gt; messages, a list of them, or an object with &apos;layers&apos; (docs/plugins.md).</source>
        <translation>压缩器是一个 messages -&gt; messages 函数、由这种函数组成的列表，或带有 &apos;layers&apos; 的对象（docs/plugins.md）。</translation>
    </message>
    <message>
        <source>Which compactor?</source>
        <translation>使用哪个压缩器？</translation>
    </message>
    <message>
        <source>{name} defines several:</source>
        <translation>{name} 定义了多个：</translation>
    </message>
    <message>
        <source>Strategy {short_label}: {v}</source>
        <translation>策略 {short_label}：{v}</translation>
    </message>
    <message>
        <source>Fix the plugin and load it again, or pick another strategy.</source>
        <translation>请修正插件后重新加载，或选择另一个策略。</translation>
    </message>
    <message>
        <source>Open a transcript</source>
        <translation>打开对话记录</translation>
    </message>
    <message>
        <source>Transcripts (*.json *.jsonl *.eval *.db *.sqlite);;All files (*)</source>
        <translation>对话记录 (*.json *.jsonl *.eval *.db *.sqlite);;所有文件 (*)</translation>
    </message>
    <message>
        <source>No file is open and the bundled example is missing.</source>
        <translation>没有打开任何文件，内置示例也不见了。</translation>
    </message>
    <message>
        <source>Open a transcript with File &gt; Open, or run assets/examples/generate.py to create {name}.</source>
        <translation>请用“文件 &gt; 打开”打开一个对话记录，或运行 assets/examples/generate.py 生成 {name}。</translation>
    </message>
    <message>
        <source>Compactscope — {v}</source>
        <translation>Compactscope — {v}</translation>
    </message>
    <message>
        <source>{n_problems} problem(s) while loading: {problems}</source>
        <translation>加载时发现 {n_problems} 个问题：{problems}</translation>
    </message>
    <message>
        <source>Message #{n} of the previous stage is not in this one (the layer removed or replaced it). Select a message or a block.</source>
        <translation>上一阶段的消息 #{n} 不在这一阶段里（这一层删除或替换了它）。请选择一条消息或一个块。</translation>
    </message>
    <message>
        <source>replaying every model call ({n} run{v})</source>
        <translation>正在回放每一次模型调用（{n} 组运行）</translation>
    </message>
    <message>
        <source>The screenshot could not be written to {path}.</source>
        <translation>截图无法写入 {path}。</translation>
    </message>
    <message>
        <source>Choose another file or folder (one you can write to; not a symbolic link).</source>
        <translation>请选择另一个文件或文件夹（可写入的，不是符号链接）。</translation>
    </message>
    <message>
        <source>{name} cross-check: running…</source>
        <translation>{name} 交叉校验：运行中…</translation>
    </message>
    <message>
        <source>{name} cross-check of this run: {text}</source>
        <translation>本次运行的 {name} 交叉校验：{text}</translation>
    </message>
    <message>
        <source>(before the layer)</source>
        <translation>（进入这一层之前）</translation>
    </message>
    <message>
        <source>(after the layer)</source>
        <translation>（经过这一层之后）</translation>
    </message>
    <message>
        <source>{name} cross-check: {v}

{description}</source>
        <translation>{name} 交叉校验：{v}

{description}</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>What to do: {todo}</source>
        <translation>怎么办：{todo}</translation>
    </message>
    <message>
        <source> — the stepper shows the pipeline run before this call</source>
        <translation> — 层步进器显示的是这次调用之前运行的流水线</translation>
    </message>
    <message>
        <source>Save a screenshot</source>
        <translation>保存截图</translation>
    </message>
    <message>
        <source>PNG (*.png)</source>
        <translation>PNG (*.png)</translation>
    </message>
    <message>
        <source>kept</source>
        <translation>保留</translation>
    </message>
    <message>
        <source>changed</source>
        <translation>已更改</translation>
    </message>
    <message>
        <source>removed</source>
        <translation>已删除</translation>
    </message>
    <message>
        <source>inserted</source>
        <translation>已插入</translation>
    </message>
    <message>
        <source>duplicated</source>
        <translation>重复</translation>
    </message>
    <message>
        <source>hide unchanged rows</source>
        <translation>隐藏未改变的行</translation>
    </message>
    <message>
        <source>Original: step right (→) to see what each layer did</source>
        <translation>原始对话：向右（→）逐层查看每一层做了什么</translation>
    </message>
    <message>
        <source>messages: </source>
        <translation>消息：</translation>
    </message>
    <message>
        <source>no messages</source>
        <translation>没有消息</translation>
    </message>
    <message>
        <source>before (layer input)</source>
        <translation>之前（层的输入）</translation>
    </message>
    <message>
        <source>after (layer output)</source>
        <translation>之后（层的输出）</translation>
    </message>
    <message>
        <source>removed by this layer</source>
        <translation>被这一层删除</translation>
    </message>
    <message>
        <source>inserted by this layer</source>
        <translation>由这一层插入</translation>
    </message>
    <message>
        <source>REMOVED</source>
        <translation>已删除</translation>
    </message>
    <message>
        <source>INSERTED</source>
        <translation>已插入</translation>
    </message>
    <message>
        <source>CHANGED</source>
        <translation>已更改</translation>
    </message>
    <message>
        <source>DUPLICATED (appears twice)</source>
        <translation>重复（出现两次）</translation>
    </message>
    <message>
        <source>{n} chars</source>
        <translation>{n} 个字符</translation>
    </message>
    <message>
        <source>persisted {a} → {b} chars</source>
        <translation>已持久化 {a} → {b} 个字符</translation>
    </message>
    <message>
        <source>replaced {a} → {b} chars</source>
        <translation>已替换 {a} → {b} 个字符</translation>
    </message>
    <message>
        <source>+{n} more</source>
        <translation>另有 {n} 个</translation>
    </message>
    <message>
        <source>Original: the conversation as loaded. Step right (→) to see what each layer does:</source>
        <translation>原始对话：加载时的样子。向右（→）逐层查看每一层做了什么：</translation>
    </message>
    <message>
        <source>what it does: {description}</source>
        <translation>作用：{description}</translation>
    </message>
    <message>
        <source>summary written by {who}</source>
        <translation>摘要作者：{who}</translation>
    </message>
    <message>
        <source> (cached)</source>
        <translation>（缓存）</translation>
    </message>
    <message>
        <source>, model {model}</source>
        <translation>，模型 {model}</translation>
    </message>
    <message>
        <source>, summary text {chars} chars</source>
        <translation>，摘要正文 {chars} 个字符</translation>
    </message>
    <message>
        <source>… {n_edits} more edits: every one is marked in the before/after table and the message list</source>
        <translation>… 另有 {n_edits} 处修改：每一处都已在前后对比表和消息列表中标出</translation>
    </message>
    <message>
        <source>no edits: this layer changed nothing</source>
        <translation>没有修改：这一层什么也没改变</translation>
    </message>
    <message>
        <source>size {a} → {b} chars, tokens {ta} → {tb}; {na} → {nb} messages; took {ms:.1f} ms</source>
        <translation>大小 {a} → {b} 个字符，token {ta} → {tb}；消息 {na} → {nb} 条；耗时 {ms:.1f} 毫秒</translation>
    </message>
    <message>
        <source>✔ no findings {where}: the API would accept this list</source>
        <translation>✔ {where}没有发现问题：API 会接受这个列表</translation>
    </message>
    <message>
        <source>{n} finding(s) {where}</source>
        <translation>{where}发现 {n} 个问题</translation>
    </message>
    <message>
        <source>, {errors} error(s): the API would reject this list</source>
        <translation>，其中 {errors} 个错误：API 会拒绝这个列表</translation>
    </message>
    <message>
        <source>{n} problem(s) while loading the file (lines skipped, values made valid):</source>
        <translation>加载文件时发现 {n} 个问题（跳过的行、修正为有效的值）：</translation>
    </message>
    <message>
        <source>… and {n} more (compactscope info FILE lists them all)</source>
        <translation>…… 另有 {n} 个（compactscope info FILE 会全部列出）</translation>
    </message>
    <message>
        <source>Red lines in the message list mark compress_start and compress_end: what lies between them is replaced by one summary.</source>
        <translation>消息列表中的红线标出 compress_start 和 compress_end：两者之间的内容会被一条摘要替换。</translation>
    </message>
    <message>
        <source>cross-check:</source>
        <translation>交叉校验：</translation>
    </message>
    <message>
        <source>broken tool pairs after this cut:</source>
        <translation>这次裁剪之后断开的工具调用配对：</translation>
    </message>
    <message>
        <source>every tool_use still has its tool_result</source>
        <translation>每个 tool_use 仍有对应的 tool_result</translation>
    </message>
    <message>
        <source>Snip boundary: where the cut landed and why</source>
        <translation>裁剪边界：切在哪里，为什么</translation>
    </message>
    <message>
        <source>Red lines in the message list mark the head and tail cuts; dashed lines mark where they started before the guards moved them.</source>
        <translation>消息列表中的红线标出头部和尾部的切口；虚线标出守卫移动它们之前的起始位置。</translation>
    </message>
    <message>
        <source>guarded (the course code)</source>
        <translation>带守卫（课程代码）</translation>
    </message>
    <message>
        <source>What if the threshold were</source>
        <translation>如果阈值是</translation>
    </message>
    <message>
        <source>Sessions replayed with</source>
        <translation>回放所用策略</translation>
    </message>
    <message>
        <source>{strategy}: {n:,} session(s) ({formats})</source>
        <translation>{strategy}：{n:,} 个会话（{formats}）</translation>
    </message>
    <message>
        <source>The figures, the slider and the at-T columns are about one strategy&apos;s sessions at a time: each strategy compacts at its own scale</source>
        <translation>图表、滑块和“阈值 T 下”各列一次只显示一种策略的会话：每种策略按自己的量级压缩</translation>
    </message>
    <message>
        <source>Drag to re-evaluate these sessions at another threshold (from the stored token series, without replaying)</source>
        <translation>拖动即可在另一个阈值下重新评估这些会话（使用已保存的 token 序列，无需回放）</translation>
    </message>
    <message>
        <source>each at its own (as replayed)</source>
        <translation>各用各的阈值（与回放时相同）</translation>
    </message>
    <message>
        <source>Every session at the threshold it was replayed with (inferred from its version)</source>
        <translation>每个会话都使用回放时的阈值（由其版本推断）</translation>
    </message>
    <message>
        <source>Drag: the what-if threshold</source>
        <translation>拖动：假设的阈值</translation>
    </message>
    <message>
        <source>Filter sessions: words in the file, version, model or error</source>
        <translation>筛选会话：文件中的词、版本、模型或错误</translation>
    </message>
    <message>
        <source>Double-click: open the session in the debugger at that call (a call column&apos;s, else the first real compaction&apos;s)</source>
        <translation>双击：在调试器中打开该会话，定位到那次调用（调用列中的那次，否则是第一次真实压缩）</translation>
    </message>
    <message>
        <source>each session at its own threshold: </source>
        <translation>每个会话用它自己的阈值：</translation>
    </message>
    <message>
        <source>what-if {fmt_num}</source>
        <translation>假设 {fmt_num}</translation>
    </message>
    <message>
        <source>sessions</source>
        <translation>会话数</translation>
    </message>
    <message>
        <source>compactions</source>
        <translation>压缩次数</translation>
    </message>
    <message>
        <source>{unit} sent over every call of every session</source>
        <translation>所有会话所有调用发送的{unit}</translation>
    </message>
    <message>
        <source>{rowCount:,} of {n_table:,} rows</source>
        <translation>{rowCount:,} / {n_table:,} 行</translation>
    </message>
    <message>
        <source>[... {n} more chars not shown; copy the JSON to get all]</source>
        <translation>[……还有 {n} 个字符未显示；复制 JSON 可得到全部]</translation>
    </message>
    <message>
        <source>Select a message or a block</source>
        <translation>请选择一条消息或一个块</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy the text of the visible tab</source>
        <translation>复制当前标签页的文本</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>JSON</source>
        <translation>JSON</translation>
    </message>
    <message>
        <source>Persisted file</source>
        <translation>持久化文件</translation>
    </message>
    <message>
        <source>message #{n}</source>
        <translation>消息 #{n}</translation>
    </message>
    <message>
        <source>, block {n} ({type})</source>
        <translation>，块 {n}（{type}）</translation>
    </message>
    <message>
        <source>result of {id}</source>
        <translation>{id} 的结果</translation>
    </message>
    <message>
        <source>Persisted file ✓</source>
        <translation>持久化文件 ✓</translation>
    </message>
    <message>
        <source>This block was not persisted to a file.</source>
        <translation>这个块没有被持久化到文件。</translation>
    </message>
    <message>
        <source>(no picture: a URL or file source)</source>
        <translation>（没有图片：来源是 URL 或文件）</translation>
    </message>
    <message>
        <source>(no picture: the data is not a readable image)</source>
        <translation>（没有图片：数据不是可读的图像）</translation>
    </message>
    <message>
        <source>This message is the summary written at this real compaction ({badge}).</source>
        <translation>这条消息是这次真实压缩时写下的摘要（{badge}）。</translation>
    </message>
    <message>
        <source>This is the first message of the context after this real compaction.</source>
        <translation>这是这次真实压缩之后上下文的第一条消息。</translation>
    </message>
    <message>
        <source>recorded at {where}</source>
        <translation>记录于 {where}</translation>
    </message>
    <message>
        <source>Agent</source>
        <translation>Agent</translation>
    </message>
    <message>
        <source>Proxy</source>
        <translation>代理</translation>
    </message>
    <message>
        <source>Follow file</source>
        <translation>跟踪文件</translation>
    </message>
    <message>
        <source>The live session appears here: your messages, the agent&apos;s answers and tool calls, and every compaction.</source>
        <translation>实时会话显示在这里：你的消息、Agent 的回答和工具调用，以及每一次压缩。</translation>
    </message>
    <message>
        <source>Message the agent (Enter sends, Shift+Enter for a new line)</source>
        <translation>给 Agent 发消息（Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop the agent after the current step (Esc)</source>
        <translation>在当前步骤之后停止 Agent（Esc）</translation>
    </message>
    <message>
        <source>idle</source>
        <translation>空闲</translation>
    </message>
    <message>
        <source>calling</source>
        <translation>调用中</translation>
    </message>
    <message>
        <source>tool</source>
        <translation>工具</translation>
    </message>
    <message>
        <source>request</source>
        <translation>请求</translation>
    </message>
    <message>
        <source>path</source>
        <translation>路径</translation>
    </message>
    <message>
        <source>identifier</source>
        <translation>标识符</translation>
    </message>
    <message>
        <source>number</source>
        <translation>数字</translation>
    </message>
    <message>
        <source>Events</source>
        <translation>事件</translation>
    </message>
    <message>
        <source>Kept and lost</source>
        <translation>保留与丢失</translation>
    </message>
    <message>
        <source>Watch</source>
        <translation>追踪</translation>
    </message>
    <message>
        <source>Next &amp;event</source>
        <translation>下一个事件(&amp;E)</translation>
    </message>
    <message>
        <source>Previous e&amp;vent</source>
        <translation>上一个事件(&amp;V)</translation>
    </message>
    <message>
        <source>The replay failed ({e}): only the real compactions are listed.</source>
        <translation>重放失败（{e}）：只列出真实压缩。</translation>
    </message>
    <message>
        <source>Opened at the first real compaction: </source>
        <translation>打开在第一次真实压缩处：</translation>
    </message>
    <message>
        <source>Opened at the first real compaction (before call {call}); F8 goes to the next event.</source>
        <translation>打开在第一次真实压缩处（第 {call} 次调用之前）；按 F8 转到下一个事件。</translation>
    </message>
    <message>
        <source>Real compaction before call {call} (segment {segment})</source>
        <translation>第 {call} 次调用之前的真实压缩（第 {segment} 段）</translation>
    </message>
    <message>
        <source>The replay made no compaction near this one.</source>
        <translation>重放在这附近没有压缩。</translation>
    </message>
    <message>
        <source>Simulated compaction before call {call}</source>
        <translation>第 {call} 次调用之前的模拟压缩</translation>
    </message>
    <message>
        <source>Real summary (the file&apos;s), before call {call}</source>
        <translation>真实摘要（文件中的），第 {call} 次调用之前</translation>
    </message>
    <message>
        <source>Simulated by {strategy}, before call {call}</source>
        <translation>由 {strategy} 模拟，第 {call} 次调用之前</translation>
    </message>
    <message>
        <source>Shown: segment {segment}, the message the finding is about selected.</source>
        <translation>显示：第 {segment} 段，已选中这条发现所指的消息。</translation>
    </message>
    <message>
        <source>Shown: the replay&apos;s pipeline before call {call} (the timeline&apos;s cursor is there), at the layer {layer}.</source>
        <translation>显示：重放中第 {call} 次调用之前的流水线（时间线的光标在那里），停在 {layer} 层。</translation>
    </message>
    <message>
        <source>Shown: the replay&apos;s pipeline before call {call} (the timeline&apos;s cursor is there), at the layer that compacts.</source>
        <translation>显示：重放中第 {call} 次调用之前的流水线（时间线的光标在那里），停在执行压缩的那一层。</translation>
    </message>
    <message>
        <source>segment {before}, what the real compaction before call {call} replaced, at the layer that compacts it (its summary opens segment {segment}).</source>
        <translation>第 {before} 段，即第 {call} 次调用之前的真实压缩所替换的内容，停在压缩它的那一层（它的摘要是第 {segment} 段的开头）。</translation>
    </message>
    <message>
        <source>segment {k}: absent</source>
        <translation>第 {k} 段：没有</translation>
    </message>
    <message>
        <source>segment {k}: present from message {m}, sent to no call</source>
        <translation>第 {k} 段：从消息 {m} 起就有，但没有发给任何调用</translation>
    </message>
    <message>
        <source>segment {k}: present from message {m}, in the contexts of calls {a}-{b}</source>
        <translation>第 {k} 段：从消息 {m} 起就有，在第 {a}-{b} 次调用的上下文中</translation>
    </message>
    <message>
        <source>none</source>
        <translation>无</translation>
    </message>
    <message>
        <source>in the {strategy} replay&apos;s context at calls: {calls}</source>
        <translation>在 {strategy} 重放的上下文中的调用：{calls}</translation>
    </message>
    <message>
        <source>removed before call {call} by the {by}</source>
        <translation>在第 {call} 次调用之前被{by}移除</translation>
    </message>
    <message>
        <source>removed before call {call} by {strategy}&apos;s {layer} layer (simulated)</source>
        <translation>在第 {call} 次调用之前被 {strategy} 的 {layer} 层移除（模拟）</translation>
    </message>
    <message>
        <source>“{term}” is in {n} of {m} real context(s); removed {k} time(s).</source>
        <translation>“{term}”出现在 {m} 个真实上下文中的 {n} 个里；被移除 {k} 次。</translation>
    </message>
    <message>
        <source>(the simulated pipeline is still being replayed)</source>
        <translation>（模拟流水线还在重放中）</translation>
    </message>
    <message>
        <source>The watch failed: {e}</source>
        <translation>追踪失败：{e}</translation>
    </message>
    <message>
        <source>compacting</source>
        <translation>压缩中</translation>
    </message>
    <message>
        <source>stopping</source>
        <translation>停止中</translation>
    </message>
    <message>
        <source>error</source>
        <translation>错误</translation>
    </message>
    <message>
        <source>listening</source>
        <translation>监听中</translation>
    </message>
    <message>
        <source>following</source>
        <translation>跟踪中</translation>
    </message>
    <message>
        <source>idle: pick a workspace folder and send a message</source>
        <translation>空闲：请选择工作区文件夹并发送一条消息</translation>
    </message>
    <message>
        <source>the folder the agent may read, write and run commands in</source>
        <translation>智能体可以在其中读写文件和运行命令的文件夹</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>from ANTHROPIC_API_KEY</source>
        <translation>来自 ANTHROPIC_API_KEY</translation>
    </message>
    <message>
        <source>ANTHROPIC_API_KEY is not set: type a key (kept for this session only)</source>
        <translation>ANTHROPIC_API_KEY 未设置：请输入密钥（只在本次会话中保留）</translation>
    </message>
    <message>
        <source>Used for this session only: never saved, never recorded</source>
        <translation>只用于本次会话：不会保存，也不会被录制</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <source>Base URL</source>
        <translation>基础 URL</translation>
    </message>
    <message>
        <source>recording file (default: a new one in the user cache)</source>
        <translation>录制文件（默认：在用户缓存中新建一个）</translation>
    </message>
    <message>
        <source>Record to</source>
        <translation>录制到</translation>
    </message>
    <message>
        <source>New session</source>
        <translation>新会话</translation>
    </message>
    <message>
        <source>Forget the conversation and start again (the recording goes on)</source>
        <translation>丢弃这段对话重新开始（录制继续进行）</translation>
    </message>
    <message>
        <source>Port</source>
        <translation>端口</translation>
    </message>
    <message>
        <source>https://api.anthropic.com</source>
        <translation>https://api.anthropic.com</translation>
    </message>
    <message>
        <source>Upstream</source>
        <translation>上游</translation>
    </message>
    <message>
        <source>Start proxy</source>
        <translation>启动代理</translation>
    </message>
    <message>
        <source>Listens on 127.0.0.1 only. Then run a client against it, e.g.
ANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude</source>
        <translation>只监听 127.0.0.1。然后让客户端连接它，例如
ANTHROPIC_BASE_URL=http://127.0.0.1:8788 claude</translation>
    </message>
    <message>
        <source>Follow</source>
        <translation>跟踪</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Workspace folder for the agent</source>
        <translation>Agent 的工作区文件夹</translation>
    </message>
    <message>
        <source>Follow a session file</source>
        <translation>跟踪一个会话文件</translation>
    </message>
    <message>
        <source>Sessions (*.jsonl);;All files (*)</source>
        <translation>会话 (*.jsonl);;所有文件 (*)</translation>
    </message>
    <message>
        <source>No workspace folder is chosen.</source>
        <translation>还没有选择工作区文件夹。</translation>
    </message>
    <message>
        <source>Pick the folder the agent may work in (Browse…).</source>
        <translation>请选择 Agent 可以工作的文件夹（浏览…）。</translation>
    </message>
    <message>
        <source>stopping after the current step…</source>
        <translation>将在当前步骤之后停止…</translation>
    </message>
    <message>
        <source>Stop proxy</source>
        <translation>停止代理</translation>
    </message>
    <message>
        <source>No file to follow.</source>
        <translation>没有要跟踪的文件。</translation>
    </message>
    <message>
        <source>Pick a session file (Browse…).</source>
        <translation>请选择一个会话文件（浏览…）。</translation>
    </message>
    <message>
        <source>Stop following</source>
        <translation>停止跟踪</translation>
    </message>
    <message>
        <source>Listening on {url} (loopback only). Point a client at it:
ANTHROPIC_BASE_URL={url2} claude</source>
        <translation>正在监听 {url}（仅本机回环）。让客户端指向它：
ANTHROPIC_BASE_URL={url2} claude</translation>
    </message>
    <message>
        <source>Queue</source>
        <translation>排队</translation>
    </message>
    <message>
        <source>Run a shell command?</source>
        <translation>运行 shell 命令？</translation>
    </message>
    <message>
        <source>The agent wants to run this command in its workspace folder
{text}:</source>
        <translation>Agent 想在它的工作区文件夹
{text} 中运行这条命令：</translation>
    </message>
    <message>
        <source>Run once</source>
        <translation>运行一次</translation>
    </message>
    <message>
        <source>Allow for this session</source>
        <translation>本次会话都允许</translation>
    </message>
    <message>
        <source>Don&apos;t run</source>
        <translation>不运行</translation>
    </message>
    <message>
        <source>all roles</source>
        <translation>所有角色</translation>
    </message>
    <message>
        <source>any block</source>
        <translation>任意块</translation>
    </message>
    <message>
        <source>Search (Ctrl+F; Enter: next, Shift+Enter: previous)</source>
        <translation>搜索（Ctrl+F；Enter：下一个，Shift+Enter：上一个）</translation>
    </message>
    <message>
        <source>Enter: next match · Shift+Enter: previous match</source>
        <translation>Enter：下一个匹配 · Shift+Enter：上一个匹配</translation>
    </message>
    <message>
        <source>after layer</source>
        <translation>本层之后</translation>
    </message>
    <message>
        <source>before layer</source>
        <translation>本层之前</translation>
    </message>
    <message>
        <source>Show the conversation as this layer left it, or as it entered the layer</source>
        <translation>显示这一层输出的对话，或进入这一层时的对话</translation>
    </message>
    <message>
        <source>Only messages this layer changed or inserted</source>
        <translation>只显示这一层更改或插入的消息</translation>
    </message>
    <message>
        <source>matches</source>
        <translation>匹配项</translation>
    </message>
    <message>
        <source>Only messages matching the search</source>
        <translation>只显示与搜索匹配的消息</translation>
    </message>
    <message>
        <source>Expand</source>
        <translation>展开</translation>
    </message>
    <message>
        <source>Expand all blocks (double-click or Space: one message)</source>
        <translation>展开所有块（双击或空格：展开一条消息）</translation>
    </message>
    <message>
        <source>Collapse</source>
        <translation>折叠</translation>
    </message>
    <message>
        <source>Collapse all: one line per block</source>
        <translation>全部折叠：每个块一行</translation>
    </message>
    <message>
        <source>⇄ Partner</source>
        <translation>⇄ 配对</translation>
    </message>
    <message>
        <source>Jump to the other half of the selected tool pair (Ctrl+J)</source>
        <translation>跳到所选工具调用配对的另一半（Ctrl+J）</translation>
    </message>
    <message>
        <source>1 match</source>
        <translation>1 个匹配</translation>
    </message>
    <message>
        <source>{n} matches</source>
        <translation>{n} 个匹配</translation>
    </message>
    <message>
        <source>message #{mi} holds no tool pair</source>
        <translation>消息 #{mi} 没有工具调用配对</translation>
    </message>
    <message>
        <source>DUPLICATED</source>
        <translation>重复</translation>
    </message>
    <message>
        <source>{n} finding(s)</source>
        <translation>{n} 个问题</translation>
    </message>
    <message>
        <source>+ {n} more block(s) (see the inspector)</source>
        <translation>另有 {n} 个块（见检查器）</translation>
    </message>
    <message>
        <source>block {n}: </source>
        <translation>块 {n}：</translation>
    </message>
    <message>
        <source>The layers in the order they run. Drag one (or select it and press ↑/↓) to run them in another order: e.g. L2 micro before L3 budget loses the results budget would have persisted.</source>
        <translation>各层按运行顺序排列。拖动一层（或选中后按 ↑/↓）即可换一种顺序运行：例如把 L2 micro 放在 L3 budget 之前，就会丢失 budget 本来会持久化的结果。</translation>
    </message>
    <message>
        <source>Run the selected layer earlier</source>
        <translation>让选中的层更早运行</translation>
    </message>
    <message>
        <source>Run the selected layer later</source>
        <translation>让选中的层更晚运行</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>重置</translation>
    </message>
    <message>
        <source>The strategy&apos;s own order</source>
        <translation>策略自己的顺序</translation>
    </message>
    <message>
        <source>Strategy</source>
        <translation>策略</translation>
    </message>
    <message>
        <source>offline = deterministic, no LLM; anthropic[:MODEL] needs ANTHROPIC_API_KEY; fixed:TEXT for tests</source>
        <translation>offline = 确定性的离线摘要，不调用 LLM；anthropic[:MODEL] 需要 ANTHROPIC_API_KEY；fixed:TEXT 用于测试</translation>
    </message>
    <message>
        <source>Summarizer</source>
        <translation>摘要器</translation>
    </message>
    <message>
        <source>Run the strategy another way (s08: the seed README&apos;s snip)</source>
        <translation>用另一种方式运行策略（s08：种子 README 里的 snip）</translation>
    </message>
    <message>
        <source>Variant</source>
        <translation>变体</translation>
    </message>
    <message>
        <source>Layer order</source>
        <translation>层顺序</translation>
    </message>
    <message>
        <source>Reset to defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <source>from: {origin}</source>
        <translation>来源：{origin}</translation>
    </message>
    <message>
        <source>not reproduced: {what} (hover for why)</source>
        <translation>未复现：{what}（悬停查看原因）</translation>
    </message>
    <message>
        <source>not reproduced: {what}</source>
        <translation>未复现：{what}</translation>
    </message>
    <message>
        <source>main (the strategy&apos;s own)</source>
        <translation>主流程（策略本身）</translation>
    </message>
    <message>
        <source>L1, L2, ... are the course&apos;s names for the layers (seed 000); left to right is the order they run in</source>
        <translation>L1、L2……是课程给各层起的名字（种子 000）；从左到右是它们运行的顺序</translation>
    </message>
    <message>
        <source>, so the numbers are not in order</source>
        <translation>，所以编号不是按顺序排列的</translation>
    </message>
    <message>
        <source>First stage (Home)</source>
        <translation>第一阶段（Home）</translation>
    </message>
    <message>
        <source>Previous layer (Left)</source>
        <translation>上一层（←）</translation>
    </message>
    <message>
        <source>Play</source>
        <translation>播放</translation>
    </message>
    <message>
        <source>Play through the layers (P)</source>
        <translation>逐层播放（P）</translation>
    </message>
    <message>
        <source>Next layer (Right)</source>
        <translation>下一层（→）</translation>
    </message>
    <message>
        <source>Last stage (End)</source>
        <translation>最后阶段（End）</translation>
    </message>
    <message>
        <source>Pause</source>
        <translation>暂停</translation>
    </message>
    <message>
        <source>Play the replay call by call (Space); arrows step</source>
        <translation>逐次调用播放回放（空格）；方向键单步</translation>
    </message>
    <message>
        <source>/s</source>
        <translation>/秒</translation>
    </message>
    <message>
        <source>Playback speed: model calls per second</source>
        <translation>播放速度：每秒模型调用次数</translation>
    </message>
    <message>
        <source>tokens</source>
        <translation>token</translation>
    </message>
    <message>
        <source>size (chars)</source>
        <translation>大小（字符）</translation>
    </message>
    <message>
        <source>y axis: estimated tokens, or len(str(messages)) characters</source>
        <translation>纵轴：估算的 token 数，或 len(str(messages)) 字符数</translation>
    </message>
    <message>
        <source>raw</source>
        <translation>原始</translation>
    </message>
    <message>
        <source>The whole recorded history up to each call, never compacted</source>
        <translation>每次调用之前录制的完整历史，从不压缩</translation>
    </message>
    <message>
        <source>before</source>
        <translation>之前</translation>
    </message>
    <message>
        <source>The running context before the pipeline ran at each call</source>
        <translation>每次调用时流水线运行之前的上下文</translation>
    </message>
    <message>
        <source>free-running</source>
        <translation>自由运行</translation>
    </message>
    <message>
        <source>Off: after each real compaction the replay goes on from the real context (the real summary and what followed), so each real compaction is predicted from the start the agent really had. On: from its own summaries all the way (replay --free).</source>
        <translation>关：每次真实压缩之后，回放从真实的上下文（真实的摘要及其后的内容）继续，所以每次真实压缩都从代理真正的起点预测。开：全程基于它自己的摘要（replay --free）。</translation>
    </message>
    <message>
        <source>legend</source>
        <translation>图例</translation>
    </message>
    <message>
        <source>model call</source>
        <translation>模型调用</translation>
    </message>
    <message>
        <source>raw growth (no compaction)</source>
        <translation>原始增长（不压缩）</translation>
    </message>
    <message>
        <source>before the pipeline</source>
        <translation>流水线之前</translation>
    </message>
    <message>
        <source>sent (after the pipeline)</source>
        <translation>发送的（流水线之后）</translation>
    </message>
    <message>
        <source>real context (usage)</source>
        <translation>真实上下文（用量）</translation>
    </message>
    <message>
        <source>real compaction (preTokens)</source>
        <translation>真实压缩（preTokens）</translation>
    </message>
    <message>
        <source>no replay</source>
        <translation>没有回放</translation>
    </message>
    <message>
        <source>real {trigger} compaction, preTokens {n}</source>
        <translation>真实的 {trigger} 压缩，preTokens {n}</translation>
    </message>
    <message>
        <source>threshold {approx}{n} tokens</source>
        <translation>阈值 {approx}{n} 个 token</translation>
    </message>
    <message>
        <source>threshold {approx}{n} chars</source>
        <translation>阈值 {approx}{n} 个字符</translation>
    </message>
    <message>
        <source>{name} fired</source>
        <translation>{name} 触发</translation>
    </message>
    <message>
        <source>{name} fired ({n})</source>
        <translation>{name} 触发（{n} 次）</translation>
    </message>
    <message>
        <source>run {n}</source>
        <translation>第 {n} 组运行</translation>
    </message>
    <message>
        <source>{label} (sent)</source>
        <translation>{label}（发送的）</translation>
    </message>
    <message>
        <source>{label}: strategy {strategy}, tokens by {estimator}</source>
        <translation>{label}：策略 {strategy}，token 估算方式 {estimator}</translation>
    </message>
    <message>
        <source>; calibrated: +{n} tokens not in the file</source>
        <translation>；已校准：另加 {n} 个文件中没有的 token</translation>
    </message>
    <message>
        <source>{label}: {calls} calls, {compactions} compactions, {summaries} summaries, peak {peak} tokens</source>
        <translation>{label}：{calls} 次调用，{compactions} 次压缩，{summaries} 次摘要，峰值 {peak} 个 token</translation>
    </message>
    <message>
        <source>; {n} real compaction(s)</source>
        <translation>；{n} 次真实压缩</translation>
    </message>
    <message>
        <source>context ({unit})</source>
        <translation>上下文（{unit}）</translation>
    </message>
    <message>
        <source>real {trigger} compaction</source>
        <translation>真实的 {trigger} 压缩</translation>
    </message>
    <message>
        <source>nothing fired</source>
        <translation>没有层触发</translation>
    </message>
    <message>
        <source>, real {n}</source>
        <translation>，真实 {n}</translation>
    </message>
    <message>
        <source>call {index} (message {message_index}): {tokens_before} -&gt; {tokens_after} tokens{real}; {fired}{_iter_text}</source>
        <translation>第 {index} 次调用（消息 {message_index}）：{tokens_before} -&gt; {tokens_after} 个 token{real}；{fired}{_iter_text}</translation>
    </message>
    <message>
        <source>; turn {turn}</source>
        <translation>；第 {turn} 轮</translation>
    </message>
    <message>
        <source>; turn {turn}: iterations {used}/{cap}</source>
        <translation>；第 {turn} 轮：迭代 {used}/{cap}</translation>
    </message>
    <message>
        <source> (+{n} refunded)</source>
        <translation>（返还 {n} 次）</translation>
    </message>
    <message>
        <source> over the cap</source>
        <translation> 超过上限</translation>
    </message>
    <message>
        <source>model call {index} (before message #{m})</source>
        <translation>第 {index} 次模型调用（在消息 #{m} 之前）</translation>
    </message>
    <message>
        <source>context {a} -&gt; {b} messages, {ta} -&gt; {tb} tokens</source>
        <translation>上下文 {a} -&gt; {b} 条消息，{ta} -&gt; {tb} 个 token</translation>
    </message>
    <message>
        <source> (real {n})</source>
        <translation>（真实 {n}）</translation>
    </message>
    <message>
        <source>fired: {what}</source>
        <translation>触发：{what}</translation>
    </message>
    <message>
        <source>nothing</source>
        <translation>无</translation>
    </message>
    <message>
        <source>iteration budget, user </source>
        <translation>迭代预算，用户 </translation>
    </message>
    <message>
        <source>{label}: {n} tokens sent</source>
        <translation>{label}：发送 {n} 个 token</translation>
    </message>
    <message>
        <source>total input tokens = the tokens sent summed over every call (a cost proxy)</source>
        <translation>输入 token 总数 = 每次调用发送的 token 之和（成本的近似）</translation>
    </message>
    <message>
        <source>Compare with:</source>
        <translation>对比：</translation>
    </message>
    <message>
        <source>Replay the same conversation under other strategies or parameter sets; their &apos;sent&apos; curves are overlaid and the table below compares them</source>
        <translation>用其他策略或参数组合回放同一段对话；它们的“发送”曲线会叠加显示，下方的表格会对比它们</translation>
    </message>
    <message>
        <source>also replay with {name} and its default parameters</source>
        <translation>也用 {name} 及其默认参数回放</translation>
    </message>
    <message>
        <source>more runs: [LABEL=]NAME:KEY=VALUE,...; ...  (Enter)</source>
        <translation>更多运行：[标签=]名称:键=值,...; ...（Enter）</translation>
    </message>
    <message>
        <source>e.g.  small=s08:context_limit=20000; hermes:context_length=32000
Runs separated by &apos;;&apos;, each a strategy with optional parameters</source>
        <translation>例如  small=s08:context_limit=20000; hermes:context_length=32000
各组运行用 &apos;;&apos; 分隔，每组是一个策略加可选参数</translation>
    </message>
    <message>
        <source>Compare</source>
        <translation>对比</translation>
    </message>
    <message>
        <source>Replay every run and overlay the curves (runs in the background)</source>
        <translation>回放每一组运行并叠加曲线（在后台运行）</translation>
    </message>
    <message>
        <source>follow</source>
        <translation>跟随</translation>
    </message>
    <message>
        <source>The stepper and the message list follow the timeline cursor: the context of the selected (or playing) model call, layer by layer, as if live</source>
        <translation>层步进器和消息列表跟随时间线光标：逐层显示所选（或正在播放的）那次模型调用的上下文，就像实时一样</translation>
    </message>
    <message>
        <source>size after the stage</source>
        <translation>这一阶段之后的大小</translation>
    </message>
    <message>
        <source>tokens (est.) after the stage</source>
        <translation>这一阶段之后的 token（估算）</translation>
    </message>
    <message>
        <source>message</source>
        <translation>消息</translation>
    </message>
    <message>
        <source>tokens (estimate)</source>
        <translation>token（估算）</translation>
    </message>
    <message>
        <source>bars, characters per message:</source>
        <translation>柱子（每条消息的字符数）：</translation>
    </message>
    <message>
        <source>after each stage</source>
        <translation>每个阶段之后</translation>
    </message>
    <message>
        <source>chars</source>
        <translation>字符</translation>
    </message>
    <message>
        <source>threshold</source>
        <translation>阈值</translation>
    </message>
    <message>
        <source> (drag the red line)</source>
        <translation>（可拖动红线）</translation>
    </message>
    <message>
        <source>chars (click a bar)</source>
        <translation>字符（点击柱子）</translation>
    </message>
    <message>
        <source>◀ Previous</source>
        <translation>◀ 上一张</translation>
    </message>
    <message>
        <source>Previous slide (Page Up)</source>
        <translation>上一张（Page Up）</translation>
    </message>
    <message>
        <source>Next ▶</source>
        <translation>下一张 ▶</translation>
    </message>
    <message>
        <source>Next slide (Page Down)</source>
        <translation>下一张（Page Down）</translation>
    </message>
    <message>
        <source>Showing:</source>
        <translation>显示：</translation>
    </message>
    <message>
        <source>The conversation, the real API context and the model call the pipeline runs on</source>
        <translation>流水线运行所用的对话、真实 API 上下文和模型调用</translation>
    </message>
    <message>
        <source>Which conversation of the file: the main one, then each subagent or sidechain</source>
        <translation>文件中的哪一段对话：先是主对话，然后是每个子代理或旁支</translation>
    </message>
    <message>
        <source>Which real API context: a segment between real compactions (the last one is what the agent would send next), or the whole history, which was never sent as one request</source>
        <translation>哪一个真实 API 上下文：两次真实压缩之间的一段（最后一段是代理下一次会发送的内容），或整个历史（它从未作为一个请求发送过）</translation>
    </message>
    <message>
        <source>Exactly what was sent at one model call (numbered over the whole history, as the replay and run --call number them)</source>
        <translation>某次模型调用时实际发送的内容（按整个历史编号，与回放和 run --call 相同）</translation>
    </message>
    <message>
        <source>call: none, the whole context</source>
        <translation>调用：无，整个上下文</translation>
    </message>
    <message>
        <source>call: none, the whole conversation</source>
        <translation>调用：无，整个对话</translation>
    </message>
    <message>
        <source>Chart</source>
        <translation>图表</translation>
    </message>
    <message>
        <source>Findings</source>
        <translation>检查结果</translation>
    </message>
    <message>
        <source>real compaction</source>
        <translation>真实压缩</translation>
    </message>
    <message>
        <source>simulated compaction</source>
        <translation>模拟压缩</translation>
    </message>
    <message>
        <source>layer changed</source>
        <translation>层有改动</translation>
    </message>
    <message>
        <source>API finding</source>
        <translation>API 发现</translation>
    </message>
    <message>
        <source>divergence</source>
        <translation>分歧</translation>
    </message>
    <message>
        <source>compaction loop</source>
        <translation>压缩循环</translation>
    </message>
    <message>
        <source>◀ Previous (Shift+F8)</source>
        <translation>◀ 上一个（Shift+F8）</translation>
    </message>
    <message>
        <source>Next (F8) ▶</source>
        <translation>下一个（F8）▶</translation>
    </message>
    <message>
        <source>Go to the previous event: the stepper, the list and the timeline follow</source>
        <translation>转到上一个事件：步进器、列表和时间线都会跟着走</translation>
    </message>
    <message>
        <source>Go to the next event: the stepper, the list and the timeline follow</source>
        <translation>转到下一个事件：步进器、列表和时间线都会跟着走</translation>
    </message>
    <message>
        <source>Call</source>
        <translation>调用</translation>
    </message>
    <message>
        <source>Segment</source>
        <translation>段</translation>
    </message>
    <message>
        <source>Event</source>
        <translation>事件</translation>
    </message>
    <message>
        <source>What happened</source>
        <translation>发生了什么</translation>
    </message>
    <message>
        <source>end</source>
        <translation>结尾</translation>
    </message>
    <message>
        <source>{n} event(s): {parts}</source>
        <translation>{n} 个事件：{parts}</translation>
    </message>
    <message>
        <source>No event yet.</source>
        <translation>还没有事件。</translation>
    </message>
    <message>
        <source>Nothing happened: no compaction, no layer changed the context, no API finding.</source>
        <translation>什么也没发生：没有压缩，没有层改变上下文，也没有 API 发现。</translation>
    </message>
    <message>
        <source>(replaying the simulated compactions…)</source>
        <translation>（正在重放模拟压缩……）</translation>
    </message>
    <message>
        <source>✔ kept</source>
        <translation>✔ 保留</translation>
    </message>
    <message>
        <source>✘ LOST</source>
        <translation>✘ 丢失</translation>
    </message>
    <message>
        <source>The user&apos;s last request</source>
        <translation>用户的最后一个请求</translation>
    </message>
    <message>
        <source>{k} item(s) kept, {n} lost</source>
        <translation>保留 {k} 项，丢失 {n} 项</translation>
    </message>
    <message>
        <source>… and {n} more</source>
        <translation>……还有 {n} 项</translation>
    </message>
    <message>
        <source>The summary</source>
        <translation>摘要</translation>
    </message>
    <message>
        <source>What each compaction kept (✔, in the summary or restored after it) and lost (✘): the real one beside the simulated one.</source>
        <translation>每次压缩保留了什么（✔，在摘要里或在它之后恢复的内容里），丢失了什么（✘）：真实的和模拟的并排显示。</translation>
    </message>
    <message>
        <source>Computing…</source>
        <translation>正在计算……</translation>
    </message>
    <message>
        <source>No compaction, real or simulated: nothing was replaced.</source>
        <translation>没有压缩，无论真实的还是模拟的：什么都没有被替换。</translation>
    </message>
    <message>
        <source>The file records no real compaction here.</source>
        <translation>文件在这里没有记录真实压缩。</translation>
    </message>
    <message>
        <source>A path, a tool id, a phrase (as the file writes it)…</source>
        <translation>一个路径、一个工具 id 或一句话（按文件中的写法）……</translation>
    </message>
    <message>
        <source>Follow:</source>
        <translation>追踪：</translation>
    </message>
    <message>
        <source>Type a term: the watch says in which real contexts and calls it is, and which compaction or layer removed it.</source>
        <translation>输入一个词：追踪会告诉你它在哪些真实上下文和调用中，以及是哪次压缩或哪一层把它移除了。</translation>
    </message>
    <message>
        <source>Following “{term}”…</source>
        <translation>正在追踪“{term}”……</translation>
    </message>
    <message>
        <source>Click to go there</source>
        <translation>点击转到那里</translation>
    </message>
</context>
</TS>
