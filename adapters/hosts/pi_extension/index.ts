/**
 * pi-hermes-memory for Pi (issue 30, ADR 0091). Installed by `pi-hermes-memory setup pi`.
 *
 * Durable memory for Pi through one long-lived Python process per Pi session: the library's
 * `pi-hermes-memory bridge`, which answers one JSON line per request on stdin/stdout. This
 * file holds no memory logic: the tools (names, descriptions, JSON schemas) come from the
 * bridge, each tool call is forwarded to it, and Pi's events are mapped to the library's
 * lifecycle (recall before a turn, capture and review after it, flush before compaction and
 * at shutdown).
 *
 * - The bridge is started on first need, restarted when it dies; its stderr is kept (the
 *   last lines, for the "memory unavailable" message) and never shown in the TUI.
 * - When the bridge cannot run (no Python, a broken install), a memory tool answers
 *   "memory unavailable: …" and the session goes on; event handlers never throw.
 * - Inside one of the library's own LLM children (PI_HERMES_MEMORY_CHILD set: `pi -p` used
 *   as the memory's LLM) the extension registers nothing: no recursion.
 * - Installed twice (user and project scope), only the first one loaded (the project's)
 *   registers anything.
 *
 * `bridge.json` beside this file (written by setup) holds `command`: the absolute argv that
 * starts the library's CLI, and `tools`: the tool schemas when setup ran (used only until the
 * bridge answers, so that tools exist even when it cannot start).
 */

import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const CHILD_ENV = "PI_HERMES_MEMORY_CHILD";
const LOADED = Symbol.for("pi-hermes-memory.extension.loaded");
const STDERR_KEPT = 2000;
const CALL_TIMEOUT_MS = 60_000;
const EVENT_TIMEOUT_MS = 30_000;
const SHUTDOWN_TIMEOUT_MS = 20_000;
/** after this many failed starts in a row, wait RETRY_AFTER_MS before the next attempt */
const MAX_FAILED_STARTS = 3;
const RETRY_AFTER_MS = 30_000;

/** the seed's slash commands, each run as a CLI command */
const COMMANDS: Record<string, [string, string]> = {
	"memory-insights": ["insights", "what memory holds, per target"],
	"memory-consolidate": ["consolidate", "merge near-duplicate memories with the LLM"],
	"memory-doctor": ["doctor", "check the memory store and its wiring"],
	"memory-index-sessions": ["index-sessions", "index past Pi sessions for session_search"],
	"memory-interview": ["interview", "onboarding interview for the user profile"],
	"memory-preview-context": ["preview-context", "the memory block of the system prompt"],
	"memory-review-status": ["review-status", "the last background review"],
	"memory-skills": ["skills", "list procedural skills"],
	"memory-skill-stats": ["skill-stats", "skill usage statistics"],
	"memory-skill-visibility": ["skill-visibility", "hide or show a skill per project"],
	"memory-skill-governance": ["skill-governance", "skill curation status and actions"],
	"memory-switch-project": ["switch-project", "memories per project"],
	"memory-sync-markdown": ["sync-markdown", "import hand edits of the Markdown files"],
};

type Json = any;

interface ToolSpec {
	name: string;
	label?: string;
	description: string;
	parameters: Json;
}

interface Settings {
	command: string[];
	tools: ToolSpec[];
}

function here(): string {
	if (typeof __dirname === "string") return __dirname;
	return dirname(fileURLToPath(import.meta.url));
}

function readSettings(): Settings {
	try {
		const raw = JSON.parse(readFileSync(join(here(), "bridge.json"), "utf8"));
		const command = Array.isArray(raw?.command) ? raw.command.filter((a: unknown) => typeof a === "string") : [];
		const tools = Array.isArray(raw?.tools) ? raw.tools : [];
		return { command, tools };
	} catch {
		return { command: ["pi-hermes-memory"], tools: [] };
	}
}

function messageText(message: Json): string {
	const content = message?.content;
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((part: Json) => part?.type === "text" && typeof part.text === "string")
		.map((part: Json) => part.text)
		.join("\n");
}

class Unavailable extends Error {}

/** One bridge process: JSON lines out, answers matched by id. */
class BridgeClient {
	private proc: ChildProcessWithoutNullStreams | undefined;
	private pending = new Map<number, { resolve: (v: Json) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
	private nextId = 1;
	private buffer = "";
	private stderrTail = "";
	private failedStarts = 0;
	private lastFailure = "";
	private closed = false;
	private retryAt = 0;
	/** sent again first after a restart, so the new process knows the session */
	sessionStart: Json | undefined;

	constructor(
		private readonly command: string[],
		private cwd: string,
	) {}

	setCwd(cwd: string) {
		this.cwd = cwd;
	}

	private fail(reason: string) {
		for (const [, p] of this.pending) {
			clearTimeout(p.timer);
			p.reject(new Unavailable(reason));
		}
		this.pending.clear();
	}

	private why(prefix: string): string {
		const tail = this.stderrTail.trim().split("\n").slice(-3).join(" | ");
		return tail ? `${prefix}: ${tail}` : prefix;
	}

	/** a bridge with nothing to answer never keeps Pi running (print mode exits when done) */
	private hold(on: boolean) {
		const proc = this.proc;
		if (!proc) return;
		for (const handle of [proc, proc.stdin, proc.stdout, proc.stderr] as Json[]) {
			if (on) handle?.ref?.();
			else handle?.unref?.();
		}
	}

	private start(): boolean {
		if (this.proc) return false;
		if (this.closed) throw new Unavailable("the Pi session has ended");
		if (Date.now() < this.retryAt) throw new Unavailable(this.lastFailure);
		if (this.command.length === 0) throw new Unavailable("no bridge command; run `pi-hermes-memory setup pi` again");
		this.stderrTail = "";
		this.buffer = "";
		let proc: ChildProcessWithoutNullStreams;
		try {
			proc = spawn(this.command[0], [...this.command.slice(1), "bridge"], {
				cwd: this.cwd,
				env: process.env,
				stdio: ["pipe", "pipe", "pipe"],
			});
		} catch (error) {
			this.noteFailure(`cannot start ${this.command[0]}: ${(error as Error).message}`);
			throw new Unavailable(this.lastFailure);
		}
		this.proc = proc;
		proc.stdout.setEncoding("utf8");
		proc.stderr.setEncoding("utf8");
		proc.stdout.on("data", (chunk: string) => this.onData(chunk));
		proc.stderr.on("data", (chunk: string) => {
			this.stderrTail = (this.stderrTail + chunk).slice(-STDERR_KEPT);
		});
		proc.stdin.on("error", () => {}); // a dead bridge: its exit handler reports it
		proc.on("error", (error) => {
			if (this.proc === proc) this.proc = undefined;
			this.noteFailure(`cannot start ${this.command[0]}: ${error.message}`);
			this.fail(this.lastFailure);
		});
		proc.on("exit", (code, signal) => {
			if (this.proc === proc) this.proc = undefined;
			if (this.pending.size > 0 || code !== 0) {
				this.noteFailure(this.why(`the memory bridge exited (${signal ?? `status ${code}`})`));
			}
			this.fail(this.lastFailure || "the memory bridge exited");
		});
		this.hold(false);
		return true;
	}

	private noteFailure(reason: string) {
		this.lastFailure = reason;
		this.failedStarts += 1;
		if (this.failedStarts >= MAX_FAILED_STARTS) this.retryAt = Date.now() + RETRY_AFTER_MS;
	}

	private onData(chunk: string) {
		this.buffer += chunk;
		let newline = this.buffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.buffer.slice(0, newline);
			this.buffer = this.buffer.slice(newline + 1);
			newline = this.buffer.indexOf("\n");
			let answer: Json;
			try {
				answer = JSON.parse(line);
			} catch {
				continue; // never ours: the bridge writes only answers
			}
			const waiting = this.pending.get(answer?.id);
			if (!waiting) continue;
			this.pending.delete(answer.id);
			clearTimeout(waiting.timer);
			if (this.pending.size === 0) this.hold(false);
			if (answer.error) {
				const error = answer.error;
				waiting.reject(error.code === "unavailable" ? new Unavailable(error.message) : new Error(error.message));
			} else {
				this.failedStarts = 0;
				this.retryAt = 0;
				waiting.resolve(answer.result);
			}
		}
	}

	private send(method: string, params: Json, timeoutMs: number): Promise<Json> {
		const proc = this.proc;
		if (!proc) return Promise.reject(new Unavailable(this.lastFailure || "the memory bridge is not running"));
		const id = this.nextId++;
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.pending.delete(id);
				if (this.pending.size === 0) this.hold(false);
				reject(new Unavailable(`the memory bridge did not answer ${method} within ${timeoutMs / 1000} s`));
			}, timeoutMs);
			timer.unref?.();
			this.pending.set(id, { resolve, reject, timer });
			this.hold(true);
			proc.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
		});
	}

	async request(method: string, params: Json = {}, timeoutMs = EVENT_TIMEOUT_MS): Promise<Json> {
		const started = this.start();
		if (started && this.sessionStart && method !== "session_start") {
			await this.send("session_start", this.sessionStart, EVENT_TIMEOUT_MS);
		}
		return this.send(method, params, timeoutMs);
	}

	/** end of the session: the bridge flushes on shutdown, then exits at end of input */
	async close(): Promise<void> {
		this.closed = true; // no restart after the session ended
		const proc = this.proc;
		if (!proc) return;
		try {
			await this.send("shutdown", {}, SHUTDOWN_TIMEOUT_MS);
		} catch {
			// best effort: the bridge flushes at end of input too
		}
		proc.stdin.end();
		this.proc = undefined;
	}
}

export default function piHermesMemory(pi: Json) {
	if (process.env[CHILD_ENV]) return; // one of our own LLM children: no tools, no hooks
	const loaded: WeakSet<object> = ((globalThis as Json)[LOADED] ??= new WeakSet<object>());
	const bus = pi.events as object;
	if (bus && loaded.has(bus)) return; // installed twice: the first copy loaded does it all
	if (bus) loaded.add(bus);

	const settings = readSettings();
	const bridge = new BridgeClient(settings.command, process.cwd());
	const registered = new Set<string>();
	let warned = false;
	let lastPrompt = "";

	const quietly = async (ctx: Json, work: () => Promise<void>) => {
		try {
			await work();
		} catch (error) {
			if (warned || !(error instanceof Unavailable)) return;
			warned = true;
			try {
				if (ctx?.hasUI) ctx.ui.notify(`memory unavailable: ${error.message}`, "warning");
			} catch {
				// a ctx that went stale (session replaced): nothing to tell
			}
		}
	};

	const register = (tool: ToolSpec) => {
		if (!tool || typeof tool.name !== "string") return;
		registered.add(tool.name);
		pi.registerTool({
			name: tool.name,
			label: tool.label ?? tool.name,
			description: tool.description ?? "",
			parameters: tool.parameters ?? { type: "object", properties: {} },
			async execute(_toolCallId: string, params: Json) {
				let result: Json;
				try {
					result = await bridge.request("call", { name: tool.name, arguments: params ?? {} }, CALL_TIMEOUT_MS);
				} catch (error) {
					throw new Error(`memory unavailable: ${(error as Error).message}`);
				}
				return { content: [{ type: "text", text: JSON.stringify(result) }], details: result };
			},
		});
	};

	// tools exist from load on (setup's snapshot); the bridge's own list replaces it at session start
	for (const tool of settings.tools) register(tool);

	pi.on("session_start", async (_event: Json, ctx: Json) => {
		const cwd = ctx?.cwd ?? process.cwd();
		bridge.setCwd(cwd);
		let sessionId: string | undefined;
		try {
			sessionId = ctx?.sessionManager?.getSessionId?.();
		} catch {
			sessionId = undefined;
		}
		bridge.sessionStart = { session_id: sessionId ?? null, cwd };
		await quietly(ctx, async () => {
			await bridge.request("session_start", bridge.sessionStart);
			const answer = await bridge.request("tools");
			for (const tool of answer?.tools ?? []) register(tool);
		});
	});

	pi.on("before_agent_start", async (event: Json, ctx: Json) => {
		lastPrompt = typeof event?.prompt === "string" ? event.prompt : "";
		let blocks: string[] = [];
		await quietly(ctx, async () => {
			const answer = await bridge.request("before_agent_start", { prompt: lastPrompt });
			blocks = [answer?.system_prompt, answer?.recall].filter((b) => typeof b === "string" && b.trim());
		});
		if (blocks.length === 0) return;
		return { systemPrompt: `${event.systemPrompt}\n\n${blocks.join("\n\n")}` };
	});

	pi.on("message_end", async (event: Json, ctx: Json) => {
		const role = event?.message?.role;
		if (role !== "user" && role !== "assistant") return;
		const text = messageText(event.message);
		if (!text) return;
		await quietly(ctx, () => bridge.request(role === "user" ? "user_message" : "assistant_message", { text }));
	});

	pi.on("tool_execution_end", async (event: Json, ctx: Json) => {
		if (typeof event?.toolName !== "string") return;
		await quietly(ctx, () => bridge.request("tool_call", { name: event.toolName }));
	});

	pi.on("agent_end", async (event: Json, ctx: Json) => {
		const messages: Json[] = Array.isArray(event?.messages) ? event.messages : [];
		const assistants = messages.filter((m) => m?.role === "assistant");
		const last = assistants[assistants.length - 1];
		const success = !last || (last.stopReason !== "error" && last.stopReason !== "aborted");
		const assistantText = assistants.map(messageText).filter(Boolean).join("\n");
		await quietly(ctx, () =>
			bridge.request("agent_end", { user_text: lastPrompt, assistant_text: assistantText, success }),
		);
	});

	pi.on("session_before_compact", async (_event: Json, ctx: Json) => {
		await quietly(ctx, () => bridge.request("before_compact"));
		// nothing returned: Pi compacts as it would without us
	});

	pi.on("session_shutdown", async () => {
		if (bus) loaded.delete(bus); // a reload loads this extension again
		await bridge.close();
	});

	for (const [name, [cli, description]] of Object.entries(COMMANDS)) {
		pi.registerCommand(name, {
			description: `memory: ${description}`,
			handler: async (args: string, ctx: Json) => {
				const argv = [...settings.command.slice(1), cli, ...(args ?? "").split(/\s+/).filter(Boolean)];
				let text: string;
				try {
					const done = await pi.exec(settings.command[0], argv, { cwd: ctx?.cwd });
					text = `${done.stdout ?? ""}${done.code === 0 ? "" : done.stderr ?? ""}`.trim();
					if (!text) text = done.code === 0 ? "done" : `failed (exit status ${done.code})`;
				} catch (error) {
					text = `memory unavailable: ${(error as Error).message}`;
				}
				if (ctx?.hasUI) ctx.ui.notify(text, "info");
				else console.log(text);
			},
		});
	}
}
