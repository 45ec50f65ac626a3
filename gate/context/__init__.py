"""injected-context: rule files put into the prompt when a classifier says they apply.

Owners keep long domain rules ("how we write migrations") as Markdown files whose frontmatter
`description:` says what work they cover. On each prompt, every file the session has not been
given yet is weighed against the request by a classifier that sees the description and the
request (with the owner's two previous requests), never the file's name or body; the bodies of
the files that apply go into the prompt. Once per session, again after compaction or /clear.

rules.py reads the files, classify.py (with chat.py) decides, state.py remembers per session,
inject.py puts one prompt's work together, hook.py is the per-prompt entry point.

May import: gate.claude (hookio, the fail-open skeleton every hook process shares), gate.search
(the embeddings and chat clients), gate.engine and the ground floor. hook.py's path imports the
standard library and apsw only.
"""
