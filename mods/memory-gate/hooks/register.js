// memory-gate's mod: a final answer that owes project memory is held back, and the model gets,
// in its place, a call to the mod's own tool saying what is missing (a search, a write, facts
// to answer for). The model does it and answers again; it never sees the held draft.
//
// The gate's rules live in Python (`memory-gate hook Hold|Status`, gate/claude/hooks.py); this file
// follows its verdict, or the server's (a write answered "nothing owed"), so that a compliant turn
// costs no extra process and its answer streams to the owner as the model writes it; only an
// answer that may owe memory is held until it is whole.
// What the turn did is this file's own record, kept in Claude Code's process from the memory
// tools' calls and answers as the host ran them (`seen` below): the gate rules on it, not on the
// turn ledger, a file any shell command of the session can rewrite. Python bounds the holds per
// turn (hooks.MAX_HOLDS, counted here), and every failure here lets the answer out: memory must
// never lock the owner out of their agent. The plugin's Stop hook stays as the last resort where
// this mod does not run, or did not rule.
//
// Of the plugin's four hooks a compliant turn starts only UserPromptSubmit's Python: the mod hands
// the server each memory call's turn itself (handOff), and, once it has ruled a final answer,
// leaves a mark so that bin/memory-gate answers the PreToolUse and Stop hooks at once. Each hook
// is still there, and runs in full, wherever the mod did not do its work.

const MEMORY_TOOLS = "mcp__plugin_memory-gate_memory__";
const MEMORY_TOOL_NAMES = [MEMORY_TOOLS + "memory_search", MEMORY_TOOLS + "memory_write"];
// The name Claude Code gives the gate tool this mod registers: mcp__<plugin name>__<name>.
const GATE_TOOL = "mcp__memory-gate__gate";
const GATE_DESCRIPTION =
  "memory-gate: says what this turn still owes project memory before the final answer " +
  "(a search, a write, or facts read that are not answered for). It is called for you when an " +
  "answer is held back; you may also call it yourself to check.";

const CLEAR = "Nothing owed for this turn: answer the owner."

let gateTool = null; // the registered name, as Claude Code returns it
const promptIds = new Map(); // turnId -> the hooks' prompt_id of that turn
const reasons = new Map(); // tool_use_id of a swapped-in call -> what it says
// prompt_ids whose last memory call was a write the server (Python) answered with "nothing owed",
// and that this file's own record finds met too: their final answer goes out without asking the
// gate again. A search after it clears the mark.
const clear = new Set();

// What each turn (by prompt_id) did with memory, as the host ran the calls: whether a search and
// a write were answered without error, the facts a search returned that no accepted write has
// answered for since (by the ids the server's answers name), how often the turn was held, and
// whether its answer was let out unmet. Subagents' calls count toward their turn, as in the ledger.
const seen = new Map();
function record(promptId) {
  let turn = seen.get(promptId);
  if (!turn) {
    turn = { searched: false, wrote: false, owed: new Set(), holds: 0, released: false, automated: false };
    seen.set(promptId, turn);
  }
  return turn;
}
function recordView(turn) {
  return { searched: turn.searched, wrote: turn.wrote, unanswered: [...turn.owed], holds: turn.holds, released: turn.released };
}
function met(turn) {
  return turn.searched && turn.wrote && turn.owed.size === 0;
}
// Claude Code feeds some events back as prompts of their own (gate/claude/hookio.py AUTOMATED):
// never gated.
const AUTOMATED = ["<task-notification>"];

function ids(values) {
  return Array.isArray(values) ? values.map(Number).filter(Number.isSafeInteger) : [];
}

// One memory call as the host ran it: its input and the server's answer, never a file.
function noteCall(turn, e, answer) {
  if (!answer || answer.isError || typeof answer.text !== "string") return;
  let parsed = null;
  try {
    parsed = JSON.parse(answer.text);
  } catch (error) {
    parsed = null; // a text answer: the ids come from the call's input
  }
  if (e.tool.endsWith("__memory_search")) {
    turn.searched = true;
    for (const id of ids(parsed?.must_answer)) turn.owed.add(id);
    return;
  }
  if (e.tool.endsWith("__memory_write")) {
    turn.wrote = true;
    const kept = parsed && Array.isArray(parsed.kept) ? parsed.kept : e.kept;
    const changed = parsed && Array.isArray(parsed.done) ? parsed.done : Array.isArray(e.ops) ? e.ops : [];
    for (const id of [...ids(kept), ...ids(changed.map((op) => op && op.id))]) turn.owed.delete(id);
    // Facts read this turn that another session deleted since, as the server found them: no
    // write can answer for them (one naming them is refused), so they are owed no more.
    for (const id of ids(parsed?.gone)) turn.owed.delete(id);
  }
}

// A line for the owner. Claude Code shows a mod's line after the plugin's name ("memory-gate: ..."),
// so the name the Python gate's lines start with is not said twice.
const OWN_NAME = "memory-gate: ";
function say($, line, options) {
  const text = line.startsWith(OWN_NAME) ? line.slice(OWN_NAME.length) : line;
  return options ? $.ui.log(text, options) : $.ui.log(text);
}

// The plugin's launcher finds memory-gate whatever Claude Code's PATH is (bin/memory-gate).
function launcher(env) {
  return env.CLAUDE_PLUGIN_ROOT ? env.CLAUDE_PLUGIN_ROOT + "/bin/memory-gate" : "memory-gate";
}

// Ask the Python gate. Resolves to its JSON answer, or null when it cannot answer (the answer
// then goes out: fail open).
async function askGate($, event, promptId, extra = {}) {
  if (!promptId) return null;
  const env = await $.process.hookEnv();
  const stdin = JSON.stringify({
    ...extra,
    session_id: await $.session.id(),
    prompt_id: promptId,
    cwd: env.CLAUDE_PROJECT_DIR ?? (await $.session.cwd()),
  });
  const run = await $.process.run([launcher(env), "hook", event, "--tools", MEMORY_TOOLS], {
    env,
    stdin,
    timeoutMs: 10000,
  });
  if (run.exitCode !== 0) return null;
  const lines = run.stdout.trim().split("\n");
  const answer = JSON.parse(lines[lines.length - 1] || "null");
  if (answer && answer.systemMessage) {
    await say($, answer.systemMessage);
    return null;
  }
  return answer;
}

// What the plugin's hooks would otherwise start Python for, done here: the server gets each memory
// tool call's turn as a note (gate/serve/handoff.py), and bin/memory-gate answers a hook whose
// work is done at once, seeing the mark this mod left for it (one a session and hook). A failure
// on the way leaves no mark, and the hook then runs as always.
const PLAIN = /^[A-Za-z0-9_-]{1,128}$/;
let dataFolder; // CLAUDE_PLUGIN_DATA, read once: null outside a plugin's data folder
async function pluginData($) {
  if (dataFolder === undefined) dataFolder = (await $.process.hookEnv()).CLAUDE_PLUGIN_DATA || null;
  return dataFolder;
}

async function mark($, hook, session, done) {
  const data = await pluginData($);
  if (!data || typeof session !== "string" || !PLAIN.test(session)) return false;
  await $.fs.write(`${data}/done/${hook}-${session}`, done ? "1" : "");
  return true;
}

// What the PreToolUse hook would record for the call (its session_id, prompt_id, tool_name and
// agent_id), from the session and the tool.call event, which carries the call's input (never
// written here), its tool, tool_use_id and, inside a subagent, agentId (classic.PreToolUse has no
// agentId: seen on 2.1.332).
async function handOff($, e) {
  const data = await pluginData($);
  if (!data || typeof e.tool_use_id !== "string" || !PLAIN.test(e.tool_use_id)) return;
  const session = await $.session.id();
  const info = await $.session.info();
  if (typeof session !== "string" || !PLAIN.test(session) || !info || typeof info.promptId !== "string") return;
  const note = {
    session_id: session,
    prompt_id: info.promptId,
    tool_name: e.tool,
    agent_id: typeof e.agentId === "string" && e.agentId ? e.agentId : null,
  };
  await $.fs.write(`${data}/calls/${e.tool_use_id}.json`, JSON.stringify(note));
  await mark($, "PreToolUse", session, true);
}

// The turn's final answer was ruled here (the server's "nothing owed", or the gate's pass or
// release): the Stop hook has nothing left to rule. Cleared at the next main-loop step, and at
// this process's first, since a mark an earlier process of the session left (an answer
// interrupted before its Stop hook ran, then `--resume`) must not stand for this one's.
let stopMarked; // the session whose Stop mark may be set: undefined until the first step clears it
async function markRuled($) {
  const session = await $.session.id();
  if (await mark($, "Stop", session, true)) stopMarked = session;
}
async function clearRuled($) {
  if (stopMarked === null) return;
  const session = stopMarked === undefined ? await $.session.id() : stopMarked;
  stopMarked = null;
  await mark($, "Stop", session, false);
}

async function rememberPrompt($, e) {
  const info = await $.session.info();
  if (!info || !info.promptId) return;
  promptIds.set(e.turnId, info.promptId);
  const text = typeof e.text === "string" ? e.text.trimStart() : "";
  if (AUTOMATED.some((start) => text.startsWith(start))) record(info.promptId).automated = true;
}

async function answerGateTool($, e) {
  const known = reasons.get(e.tool_use_id);
  if (known) {
    reasons.delete(e.tool_use_id);
    return { result: known };
  }
  const promptId = await currentPrompt($);
  const own = promptId ? { seen: recordView(record(promptId)) } : {};
  const status = await askGate($, "Status", promptId, own).catch(() => null);
  return { result: status?.reason ?? "memory-gate: nothing owed that it can see." };
}

// Keep the server's own verdict from a memory tool's answer: a write answered "nothing owed"
// marks the turn clear, any other memory call unmarks it (a search brings new facts to answer for).
async function noteVerdict($, e, answer) {
  const promptId = await currentPrompt($);
  if (!promptId) return;
  let verdict = null;
  if (e.tool.endsWith("__memory_write") && answer && typeof answer.text === "string") {
    // The JSON answer's `next`, or the text answer's last line: the same words either way.
    try {
      verdict = JSON.parse(answer.text).next;
    } catch (error) {
      const lines = answer.text.trim().split("\n");
      verdict = lines[lines.length - 1];
    }
  }
  const turn = record(promptId);
  noteCall(turn, e, answer);
  if (verdict === CLEAR && met(turn)) clear.add(promptId);
  else clear.delete(promptId);
}

async function currentPrompt($) {
  const info = await $.session.info().catch(() => null);
  return info?.promptId ?? null;
}

// The gate tool's registered name, registering it the first time it is needed; null when
// Claude Code refuses it (the owner is told why, once; the Stop hook still holds answers).
// `gateTool` is set once registered: tool.call serves calls of it from then on.
let registering = null;
// Claude Code refused the gate tool: the mod no longer asks (a hold it cannot make would be counted),
// and the Stop hook holds answers.
let refused = false;
function gateToolName($) {
  if (registering === null) {
    registering = $.tool
      .register({ name: "gate", description: GATE_DESCRIPTION, inputSchema: { type: "object", properties: {} }, isDeferred: false })
      .then(
        async (registered) => {
          if (registered.tool !== GATE_TOOL) {
            // Its calls would reach no hook of this mod (they are matched by name): say so.
            refused = true;
            await say($, `memory-gate: the gate tool was registered as ${registered.tool}, not ${GATE_TOOL}; only the Stop hook holds answers now.`)
              .catch(() => undefined);
            return null;
          }
          gateTool = registered.tool;
          return gateTool;
        },
        async (error) => {
          refused = true;
          // Never a silent off. The usual cause is `memory-gate install` too, whose MCP server
          // `memory-gate` owns the name.
          const why = error && error.message ? ` (${String(error.message).split("\n")[0].slice(0, 200)})` : "";
          await say(
            $,
              `memory-gate: the mod could not register its gate tool${why}; only the Stop hook holds answers now. ` +
                "If `memory-gate install` is also in place, run `memory-gate uninstall`: the plugin brings everything " +
                "(`memory-gate doctor` names the clash).",
          ).catch(() => undefined);
          return null;
        },
      );
  }
  return registering;
}

export function register(on) {
  // Each tool hook below is registered for memory's own tools only (a matcher on `tool`): a hook
  // for every tool made each of Claude Code's tools, described at every turn and called at any
  // time, wait on a hop to the mods' worker (30-50 ms while Claude Code starts; bench/turn.py).
  for (const name of MEMORY_TOOL_NAMES) {
    // Memory's tools in front (not behind ToolSearch), so the model can call them at once.
    on("tool.describe", { tool: name }, async ($, e, next) => ({ ...(await next(e)), isDeferred: false }));

    // Plugins cannot ship permission rules: the plugin's own memory tools need no prompt.
    on("tool.check", { tool: name }, async ($, e, next) => ({ decision: "allow", reason: "memory-gate's own memory tool" }))
      .catch(($, e, next) => next(e)); // failing, the session's own verdict stands

    on("tool.call", { tool: name }, async ($, e, next) => {
      // The PreToolUse hook's work, without its process: it runs inside next(e), after this.
      await handOff($, e).catch(() => undefined);
      const answer = await next(e);
      await noteVerdict($, e, answer).catch(() => undefined);
      return answer;
    }).catch(($, e, next) => next(e));
  }

  // The gate tool, once registered under this name (gateToolName checks it is the one). It is
  // registered at the first hold (Python ruled the answer owes memory), not at
  // the session's start: registering it (Claude Code starts a loopback MCP server for a mod's
  // tools) made every `claude -p` slower, also when no answer is ever held (bench/turn.py). A
  // registration that fails is said once.
  on("tool.call", { tool: GATE_TOOL }, async ($, e, next) => (gateTool === e.tool ? answerGateTool($, e) : next(e)))
    .catch(($, e, next) => (e.tool === gateTool ? { result: "memory-gate: could not read the gate; answer the owner." } : next(e)));

  on("turn.start", async ($, e, next) => {
    const result = await next(e);
    if (e.agentId === undefined) await rememberPrompt($, e).catch(() => undefined);
    return result;
  });

  on("turn.step", async function* ($, e, next) {
    const stream = next(e);
    const held = [];
    let passing = e.agentId !== undefined; // subagents are never gated
    let cleared = false; // known met before the step starts
    let holdingText = false; // the model's text is held (said once a step, in the debug log)
    if (!passing) await clearRuled($).catch(() => undefined);
    if (!passing && clear.has(promptIds.get(e.turnId))) {
      cleared = true;
      // Known met before the step starts (the server answered the turn's last memory call, a
      // write, with "nothing owed"): whatever the model says now streams to the owner as it comes.
      // Only a later memory call could make the turn owe again, and that comes as a tool call.
      passing = true;
      try {
        await say($, "memory-gate: the server said nothing is owed; the answer streams", { to: "debug" });
      } catch (error) {
        // the answer streams all the same
      }
    }
    for await (const chunk of stream) {
      if (passing) {
        yield chunk;
        continue;
      }
      if (chunk.kind === "tool") {
        // A tool call: not a final answer. Let everything through.
        passing = true;
        for (const early of held) yield early;
        held.length = 0;
        yield chunk;
        continue;
      }
      held.push(chunk);
      if (chunk.kind === "text" && !holdingText) {
        holdingText = true;
        try {
          await say($, "memory-gate: holding the answer until it is whole", { to: "debug" });
        } catch (error) {
          // held all the same
        }
      }
    }
    const result = await stream.result;
    if (passing) {
      if (cleared && result.stopReason === "end_turn" && !(result.toolUses && result.toolUses.length)) {
        await markRuled($).catch(() => undefined);
      }
      return result;
    }

    let verdict = null;
    let name = null;
    const stop = held.find((chunk) => chunk.kind === "stop");
    if (!stop) {
      // The stream ended with no stop: the owner pressed Esc (or the request failed) while the
      // answer was held. What the model had written is an unchecked draft: none of it goes to the
      // screen, and none into the conversation the model reads next (seen on 2.1.332: what a step
      // yields here is kept as the interrupted assistant message).
      return { ...result, answer: "" };
    }
    const promptId = promptIds.get(e.turnId);
    const turn = promptId ? record(promptId) : null;
    // An answer cut by max_tokens is a final answer in the making (Claude Code asks the model to
    // go on from it): held like a whole one, or its first part would reach the owner unmet.
    if (turn && turn.automated) {
      if (stop) verdict = { action: "pass" };
    } else if (turn && !refused && stop && (stop.stopReason === "end_turn" || stop.stopReason === "max_tokens")) {
      // step: this turn's model requests so far, so that Python can tell whether --max-turns
      // leaves room for a hold (a hold past it would lose the answer).
      const ask = (dry) =>
        askGate($, "Hold", promptId, { step: e.index + 1, seen: recordView(turn), ...(dry ? { dry: true } : {}) }).catch(() => null);
      // Before the gate tool is registered, a hold is asked for dry (ruled, not counted): Claude
      // Code may refuse the tool, and then no hold happens.
      const unregistered = gateTool === null;
      verdict = await ask(unregistered);
      // The gate tool only for a hold, which is a call of it: with memory off (no verdict) it is
      // never registered, so /mcp tells one story, the memory server's failure and its mend.
      // Refused (said once), the answer goes out and the Stop hook holds it, no hold counted.
      if (verdict && verdict.action === "hold") {
        name = await gateToolName($).catch(() => null);
        if (!name) verdict = null;
        else if (unregistered) verdict = await ask(false); // registered: the hold is made, and counted
      }
    }
    if (name && verdict && verdict.action === "hold" && typeof verdict.reason === "string") {
      const id = "toolu_memgate_" + e.turnId.slice(0, 8) + "_" + e.index;
      reasons.set(id, verdict.reason); // before yielding: the call starts before this resumes
      turn.holds += 1;
      yield { kind: "tool", index: 0, id, name };
      yield { kind: "input", index: 0, json: "{}" };
      yield { kind: "stop", stopReason: "tool_use", usage: stop.usage };
      return { ...result, answer: "", toolUses: [{ name, input: {} }], stopReason: "tool_use" };
    }
    if (verdict && verdict.action === "release") turn.released = true;
    if (verdict && verdict.action === "release" && typeof verdict.reason === "string") {
      // Out of holds: the answer goes out, and the owner is told in one line that memory is behind.
      try {
        await say($, verdict.reason);
      } catch (error) {
        // the answer goes out all the same
      }
    }
    if (verdict && (verdict.action === "pass" || verdict.action === "release") && stop.stopReason === "end_turn") {
      await markRuled($).catch(() => undefined);
    }
    for (const chunk of held) yield chunk;
    return result;
  });
}
