"""injected-context: rule files put into the prompt when a classifier says they apply.

Owners keep long domain rules ("how we write migrations") as Markdown files whose frontmatter
`description:` says what work they cover. On each prompt, every file the session has not been
given yet is weighed against the request by a classifier that sees the description and the
request (with the owner's two previous requests), never the file's name or body; the bodies of
the files that apply go into the prompt. Once per session, again after compaction or /clear.

gate.context.rules reads the files, gate.context.classify (with gate.context.chat) decides,
gate.context.state remembers per session, gate.context.inject puts one prompt's work together,
gate.context.hook is the per-prompt entry point.

May import: gate.claude (hookio, the fail-open skeleton every hook process shares), gate.search
(the embeddings and chat clients), gate.engine and the ground floor. gate.context.hook's path
imports the standard library and apsw only.
"""
