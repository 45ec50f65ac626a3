// memory-gate's mod: a final answer that owes project memory is held back, and the model gets,
// in its place, a call to the mod's own tool saying what is missing (a search, a write, facts
// to answer for). The model does it and answers again; it never sees the held draft.
//
// The gate itself lives in Python (`memory-gate hook Hold|Status`, gate/claude/hooks.py), which reads
// the turn ledger the settings hooks and the MCP server keep; this file only follows its verdict,
// or the server's (a write answered "nothing owed"), so that a compliant turn costs no extra process
// and its answer streams to the owner as the model writes it; only an answer that may owe memory
// is held until it is whole.
// Python also bounds the holds per turn (hooks.MAX_HOLDS), and every failure here lets the answer
// out: memory must never lock the owner out of their agent. The settings Stop hook stays as the
// last resort where this mod does not run.

const MEMORY_TOOLS = "mcp__plugin_memory-gate_memory__";
const MEMORY_TOOL_NAMES = [MEMORY_TOOLS + "memory_search", MEMORY_TOOLS + "memory_write"];
const GATE_DESCRIPTION =
  "memory-gate: says what this turn still owes project memory before the final answer " +
  "(a search, a write, or facts read that are not answered for). It is called for you when an " +
  "answer is held back; you may also call it yourself to check.";

const CLEAR = "Nothing owed for this turn: answer the owner."

let gateTool = null; // the registered name, as Claude Code returns it
const promptIds = new Map(); // turnId -> the hooks' prompt_id of that turn
const reasons = new Map(); // tool_use_id of a swapped-in call -> what it says
// prompt_ids whose last memory call was a write the server (Python) answered with "nothing owed":
// their final answer goes out without asking the gate again. A search after it clears the mark.
const clear = new Set();

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
    await $.ui.log(answer.systemMessage);
    return null;
  }
  return answer;
}

async function rememberPrompt($, turnId) {
  const info = await $.session.info();
  if (info && info.promptId) promptIds.set(turnId, info.promptId);
}

async function answerGateTool($, e) {
  const known = reasons.get(e.tool_use_id);
  if (known) {
    reasons.delete(e.tool_use_id);
    return { result: known };
  }
  const promptId = await currentPrompt($);
  const status = await askGate($, "Status", promptId).catch(() => null);
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
  if (verdict === CLEAR) clear.add(promptId);
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
function gateToolName($) {
  if (registering === null) {
    registering = $.tool
      .register({ name: "gate", description: GATE_DESCRIPTION, inputSchema: { type: "object", properties: {} }, isDeferred: false })
      .then(
        (registered) => {
          gateTool = registered.tool;
          return gateTool;
        },
        async (error) => {
          // Never a silent off. The usual cause is `memory-gate install` too, whose MCP server
          // `memory-gate` owns the name.
          const why = error && error.message ? ` (${String(error.message).split("\n")[0].slice(0, 200)})` : "";
          await $.ui
            .log(
              `memory-gate: the mod could not register its gate tool${why}; only the Stop hook holds answers now. ` +
                "If `memory-gate install` is also in place, run `memory-gate uninstall`: the plugin brings everything " +
                "(`memory-gate doctor` names the clash).",
            )
            .catch(() => undefined);
          return null;
        },
      );
  }
  return registering;
}

export function register(on) {
  // The gate tool is registered when a first final answer may owe memory (one the server has
  // not cleared), not at the session's start: registering it (Claude Code starts a loopback MCP
  // server for a mod's tools) made every `claude -p` slower, also when no answer is ever held
  // (bench/turn.py). A registration that fails is said once.
  on("session.start", async ($, e, next) => next(e));

  // Memory's tools in front (not behind ToolSearch), so the model can call them at once.
  on("tool.describe", async ($, e, next) => {
    const described = await next(e);
    return MEMORY_TOOL_NAMES.includes(e.tool) ? { ...described, isDeferred: false } : described;
  });

  // Plugins cannot ship permission rules: the plugin's own memory tools need no prompt.
  on("tool.check", async ($, e, next) =>
    e.tool.startsWith(MEMORY_TOOLS) ? { decision: "allow", reason: "memory-gate's own memory tool" } : next(e),
  ).catch(($, e, next) => next(e)); // failing, the session's own verdict stands

  on("tool.call", async ($, e, next) => {
    if (MEMORY_TOOL_NAMES.includes(e.tool)) {
      const answer = await next(e);
      await noteVerdict($, e, answer).catch(() => undefined);
      return answer;
    }
    if (gateTool === null || e.tool !== gateTool) return next(e);
    return answerGateTool($, e);
  }).catch(($, e, next) =>
    e.tool === gateTool ? { result: "memory-gate: could not read the gate; answer the owner." } : next(e),
  );

  on("turn.start", async ($, e, next) => {
    const result = await next(e);
    if (e.agentId === undefined) await rememberPrompt($, e.turnId).catch(() => undefined);
    return result;
  });

  on("turn.step", async function* ($, e, next) {
    const stream = next(e);
    const held = [];
    let passing = e.agentId !== undefined; // subagents are never gated
    if (!passing && clear.has(promptIds.get(e.turnId))) {
      // Known met before the step starts (the server answered the turn's last memory call, a
      // write, with "nothing owed"): whatever the model says now streams to the owner as it comes.
      // Only a later memory call could make the turn owe again, and that comes as a tool call.
      passing = true;
      try {
        await $.ui.log("memory-gate: the server said nothing is owed; the answer streams", { to: "debug" });
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
    }
    const result = await stream.result;
    if (passing) return result;

    let verdict = null;
    let name = null;
    const stop = held.find((chunk) => chunk.kind === "stop");
    const promptId = promptIds.get(e.turnId);
    // An answer cut by max_tokens is a final answer in the making (Claude Code asks the model to
    // go on from it): held like a whole one, or its first part would reach the owner unmet.
    if (stop && (stop.stopReason === "end_turn" || stop.stopReason === "max_tokens")) {
      // The gate tool first: a hold is a call of it. Refused (said once), the answer goes out
      // unasked, and the Stop hook holds it; asked, Python would count a hold that never was.
      name = await gateToolName($).catch(() => null);
      try {
        // step: this turn's model requests so far, so that Python can tell whether --max-turns
        // leaves room for a hold (a hold past it would lose the answer).
        verdict = name ? await askGate($, "Hold", promptId, { step: e.index + 1 }) : null;
      } catch (error) {
        verdict = null;
      }
    }
    if (name && verdict && verdict.action === "hold" && typeof verdict.reason === "string") {
      const id = "toolu_memgate_" + e.turnId.slice(0, 8) + "_" + e.index;
      reasons.set(id, verdict.reason); // before yielding: the call starts before this resumes
      yield { kind: "tool", index: 0, id, name };
      yield { kind: "input", index: 0, json: "{}" };
      yield { kind: "stop", stopReason: "tool_use", usage: stop.usage };
      return { ...result, answer: "", toolUses: [{ name, input: {} }], stopReason: "tool_use" };
    }
    if (verdict && verdict.action === "release" && typeof verdict.reason === "string") {
      // Out of holds: the answer goes out, and the owner is told in one line that memory is behind.
      try {
        await $.ui.log(verdict.reason);
      } catch (error) {
        // the answer goes out all the same
      }
    }
    for (const chunk of held) yield chunk;
    return result;
  });
}
