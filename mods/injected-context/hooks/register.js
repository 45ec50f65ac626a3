// injected-context's mod: on each prompt the owner types, the rule files whose description
// covers the requested work go into prompt.submit's context, which the model reads in the same
// user message as the prompt. Once per session; again after /compact or /clear.
//
// The work lives in Python (`memory-gate inject Submit|Answered`, gate/context/): which rules
// are pending, the hybrid, embeddings or chat classifier, what the session was given. This file only
// asks it, and, when the configured classifier is Claude Code's own model, puts Python's
// questions to $.model.classify (one per pending rule; the model sees the description and the
// request, never the rule's name or body) and hands the answers back.
//
// Claude Code runs the settings UserPromptSubmit hooks inside this hook's next(): Python records
// the prompt as served by the mod first, so the plugin's own settings hook (there for hosts
// where mods do not run) and one in the owner's settings stay out of it.
//
// Every failure lets the prompt through unchanged, with one line for the owner.

const NOTICE = "injected-context: ";

// The plugin's launcher finds memory-gate whatever Claude Code's PATH is (bin/memory-gate).
function launcher(env) {
  return env.CLAUDE_PLUGIN_ROOT ? env.CLAUDE_PLUGIN_ROOT + "/bin/memory-gate" : "memory-gate";
}

async function askPython($, event, payload) {
  const env = await $.process.hookEnv();
  const stdin = JSON.stringify({
    session_id: await $.session.id(),
    cwd: env.CLAUDE_PROJECT_DIR ?? (await $.session.cwd()),
    ...payload,
  });
  const run = await $.process.run([launcher(env), "inject", event], { env, stdin, timeoutMs: 30000 });
  if (run.exitCode !== 0) throw new Error("memory-gate inject " + event + " exited with " + run.exitCode);
  const lines = run.stdout.trim().split("\n");
  return JSON.parse(lines[lines.length - 1] || "{}");
}

// One question per pending rule, all at once, each bounded by the classifier's time-out
// (MEMORY_GATE_CONTEXT_TIMEOUT, sent by Python as ask.timeoutMs): a rule the model does not label
// in time, labels with neither label, or refuses, goes back as null, and Python weighs it by
// words instead.
function withinTime(promise, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error("did not answer within " + ms / 1000 + " s"), { late: true })), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function askModel($, ask) {
  const labels = {};
  let reason = null;
  const ms = Number.isFinite(ask.timeoutMs) && ask.timeoutMs > 0 ? ask.timeoutMs : 5000;
  const answers = await Promise.allSettled(
    ask.rules.map((item) => withinTime($.model.classify(item.text, ask.labels, { model: ask.model }), ms)),
  );
  answers.forEach((answer, at) => {
    const rule = ask.rules[at].rule;
    if (answer.status === "fulfilled" && ask.labels.includes(answer.value)) {
      labels[rule] = answer.value;
      return;
    }
    labels[rule] = null;
    if (reason === null) {
      reason =
        answer.status === "fulfilled"
          ? "Claude Code's model named no label" + (answer.value ? " (" + String(answer.value).slice(0, 40) + ")" : "")
          : "Claude Code's model " + (answer.reason?.late ? "" : "failed: ") +
            String(answer.reason?.message ?? answer.reason).split("\n")[0].slice(0, 160);
    }
  });
  return { labels, reason };
}

async function rulesFor($, text) {
  let answer = await askPython($, "Submit", { prompt: text });
  if (answer.ask && Array.isArray(answer.ask.rules) && answer.ask.rules.length > 0) {
    answer = await askPython($, "Answered", await askModel($, answer.ask));
  }
  const notice = answer.notice ?? answer.systemMessage;
  if (typeof notice === "string" && notice) $.ui.log(notice);
  return Array.isArray(answer.context) ? answer.context.filter((entry) => typeof entry === "string" && entry) : [];
}

export function register(on) {
  on("prompt.submit", async ($, e, next) => {
    if (e.command || e.isMeta) return next(e); // slash commands and prompts nobody typed
    let added = [];
    try {
      added = await rulesFor($, e.text);
    } catch (error) {
      $.ui.log(NOTICE + "no rules injected for this prompt (" + String(error?.message ?? error).split("\n")[0] + ")");
    }
    return next(added.length > 0 ? { ...e, context: [...(e.context ?? []), ...added] } : e);
  }).catch(($, e, next) => next(e)); // failing, the prompt goes on as typed
}
