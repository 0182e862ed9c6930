"""A fake LLM that is a real child process: deterministic, driven by its arguments.

Run it as `[sys.executable, FAKE_LLM, *options]` (standard library only, so it starts fast).
Options are applied in this order:

    --record PATH        write {"argv": [...], "stdin": "..."} to PATH once stdin is read
                         (FAKE_LLM_RECORD in the environment too)
    --stdin all|none     read all of stdin (default) or none of it
    --ignore-term        ignore SIGTERM (only SIGKILL stops it)
    --grandchild PATH    start a grandchild that sleeps 60 s holding stdout/stderr open, and
                         write its pid to PATH
    --sleep SECONDS      sleep before answering
    --stderr TEXT        write TEXT to stderr
    --stderr-flood N     write N bytes to stderr
    --reply TEXT         write TEXT to stdout (UTF-8); FAKE_LLM_REPLY in the environment too
    --echo               write what stdin held to stdout
    --rerank WORD        answer the LLM reranker's prompt (its last line, JSON): score 1 for
                         each memory whose text holds WORD, 0 for the others
    --garbage N          write N bytes that are not UTF-8 to stdout
    --huge N             write N bytes ("x") to stdout in 64 KiB chunks
    --signal N           kill itself with signal N
    --exit CODE          exit with CODE (default 0)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

FAKE_LLM = str(Path(__file__).resolve())


def _options(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fake_llm")
    parser.add_argument("--record")
    parser.add_argument("--stdin", choices=["all", "none"], default="all")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--grandchild")
    parser.add_argument("--sleep", type=float, default=0.0)
    parser.add_argument("--stderr")
    parser.add_argument("--stderr-flood", type=int, default=0)
    parser.add_argument("--reply")
    parser.add_argument("--echo", action="store_true")
    parser.add_argument("--rerank")
    parser.add_argument("--garbage", type=int, default=0)
    parser.add_argument("--huge", type=int, default=0)
    parser.add_argument("--signal", type=int)
    parser.add_argument("--exit", type=int, default=0)
    # the pi preset's flags, accepted and ignored (the fake stands in for `pi` too)
    parser.add_argument("-p", action="store_true")
    parser.add_argument("--no-session", action="store_true")
    parser.add_argument("--no-tools", action="store_true")
    parser.add_argument("--model")
    parser.add_argument("--thinking")
    return parser.parse_args(argv)


def _write(data: bytes) -> None:
    out = sys.stdout.buffer
    for start in range(0, len(data), 65536):
        out.write(data[start : start + 65536])
    out.flush()


def main(argv: list[str]) -> int:
    opts = _options(argv)
    received = sys.stdin.buffer.read() if opts.stdin == "all" else b""
    record = opts.record or os.environ.get("FAKE_LLM_RECORD")
    if record:
        text = received.decode("utf-8", errors="replace")
        Path(record).write_text(json.dumps({"argv": argv, "stdin": text}), encoding="utf-8")
    if opts.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if opts.grandchild:
        code = "import time; time.sleep(60)"
        child = subprocess.Popen([sys.executable, "-c", code])  # inherits stdout and stderr
        Path(opts.grandchild).write_text(str(child.pid), encoding="utf-8")
    if opts.sleep:
        time.sleep(opts.sleep)
    if opts.stderr:
        sys.stderr.write(opts.stderr)
        sys.stderr.flush()
    if opts.stderr_flood:
        sys.stderr.buffer.write(b"e" * opts.stderr_flood)
        sys.stderr.flush()
    reply = opts.reply if opts.reply is not None else os.environ.get("FAKE_LLM_REPLY")
    if reply is not None:
        _write(reply.encode("utf-8"))
    if opts.echo:
        _write(received)
    if opts.rerank is not None:
        prompt = json.loads(received.decode("utf-8").strip().splitlines()[-1])
        word = opts.rerank.lower()
        scores = [1.0 if word in m["text"].lower() else 0.0 for m in prompt["memories"]]
        _write(("```json\n" + json.dumps({"scores": scores}) + "\n```").encode("utf-8"))
    if opts.garbage:
        _write(bytes([0xFF, 0xFE, 0x80]) * (opts.garbage // 3) + b"\xc3" * (opts.garbage % 3))
    if opts.huge:
        _write(b"x" * opts.huge)
    if opts.signal is not None:
        os.kill(os.getpid(), opts.signal)
        time.sleep(5)
    return opts.exit


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
