"""Content-scanner benchmark: recall per class and the false-positive rate.

    python -m tests.bench.scanner [--seed N] [--small] [--show-heldout-misses] [--json PATH]

Runs `pi_hermes_memory.domain.scanning.scanner.scan` over the corpora of
`tests.bench.scanner_corpus`
(generated from a seed; no literal secret is stored) and prints:

* secrets: recall over all kinds, per split, and the kinds with misses;
* injection: recall per language and per class (override, persistence, exfiltration,
  role-play), per split;
* invisible Unicode: dangerous samples handled (refused, or the character removed from the
  stored text) and legitimate samples kept (not refused, stored text equal to the NFC input);
* benign: the false-positive rate (refused, or text changed) and the warning rate;
* that no finding or message contains the refused value (the secret, or the injected text).

Targets (issue 10): secrets >= 99 % over >= 75 kinds, injection >= 95 %, false positives
<= 0.5 %, every dangerous Unicode sample handled and every legitimate one kept. The exit
status is 1 when a target is missed (only on the full corpus, not with `--small`).
Misses of the held-out split are summarised by count only unless `--show-heldout-misses`.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pi_hermes_memory.domain.scanning.scanner import ScanCategory, scan

from tests.bench.scanner_corpus import HELDOUT, TUNE, Sample, build

SECRET_TARGET = 0.99
INJECTION_TARGET = 0.95
FP_TARGET = 0.005
MIN_SECRET_KINDS = 75

_INJECTION_CATEGORIES = frozenset(
    (
        ScanCategory.PROMPT_INJECTION,
        ScanCategory.EXFILTRATION,
        ScanCategory.PERSISTENCE,
        ScanCategory.ROLE_MARKER,
    )
)


def _ratio(hit: int, total: int) -> float:
    return hit / total if total else 1.0


def _pct(hit: int, total: int) -> str:
    return f"{100 * _ratio(hit, total):6.2f} % ({hit}/{total})"


def _secret_part(sample: Sample) -> str:
    """What must never be echoed back: the secret, or for a PEM block one of its lines."""
    if "\n" in sample.secret:
        return max(sample.secret.split("\n"), key=len)
    return sample.secret


def evaluate(samples: Sequence[Sample]) -> dict[str, Any]:
    secrets: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    secret_misses: list[Sample] = []
    injection: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    injection_misses: list[Sample] = []
    unicode_bad: list[tuple[Sample, bool]] = []
    unicode_ok: list[tuple[Sample, bool]] = []
    benign_fp: list[tuple[Sample, str]] = []
    benign_warn: list[tuple[Sample, str]] = []
    benign_total = 0
    benign_families: dict[str, int] = {}
    echoes: list[str] = []
    started = time.perf_counter()
    for sample in samples:
        result = scan(sample.text)
        message = result.message()
        if sample.cls == "secret":
            hit = result.blocked and any(f.category is ScanCategory.SECRET for f in result.findings)
            secrets[sample.kind][sample.split].append(hit)
            if not hit:
                secret_misses.append(sample)
            part = _secret_part(sample)
            if len(part) >= 6 and (part in message or part in repr(result.findings)):
                echoes.append(sample.kind)
        elif sample.cls == "injection":
            hit = result.blocked and any(
                f.category in _INJECTION_CATEGORIES for f in result.findings
            )
            injection[(sample.lang, sample.kind, sample.split)].append(hit)
            if not hit:
                injection_misses.append(sample)
            if sample.text.strip()[:24] in message:
                echoes.append(f"injection:{sample.kind}")
        elif sample.cls == "unicode_bad":
            handled = result.blocked or not any(c in result.text for c in sample.dangerous)
            unicode_bad.append((sample, handled))
        elif sample.cls == "unicode_ok":
            kept = not result.blocked and result.text == unicodedata.normalize("NFC", sample.text)
            unicode_ok.append((sample, kept))
        else:
            benign_total += 1
            benign_families[sample.kind] = benign_families.get(sample.kind, 0) + 1
            changed = result.text != unicodedata.normalize("NFC", sample.text)
            if result.blocked or changed:
                benign_fp.append((sample, ",".join(result.rule_ids()) or "text changed"))
            elif result.warnings:
                benign_warn.append((sample, ",".join(result.rule_ids())))
    elapsed = time.perf_counter() - started

    def split_recall(
        rows: dict[str, list[bool]] | list[list[bool]], split: str | None
    ) -> tuple[int, int]:
        hit = total = 0
        values = rows.values() if isinstance(rows, dict) else rows
        for v in values:
            hit += sum(v)
            total += len(v)
        return hit, total

    secret_by_split = {
        split: split_recall([v[split] for v in secrets.values()], split)
        for split in (TUNE, HELDOUT)
    }
    secret_all = (
        sum(h for h, _ in secret_by_split.values()),
        sum(t for _, t in secret_by_split.values()),
    )
    inj_by: dict[str, dict[str, tuple[int, int]]] = {"lang": {}, "class": {}, "split": {}}
    for (lang, cls, split), hits in injection.items():
        for axis, key in (("lang", lang), ("class", cls), ("split", split)):
            h, t = inj_by[axis].get(key, (0, 0))
            inj_by[axis][key] = (h + sum(hits), t + len(hits))
    inj_all = (sum(sum(v) for v in injection.values()), sum(len(v) for v in injection.values()))
    return {
        "samples": len(samples),
        "seconds": elapsed,
        "secret_kinds": len(secrets),
        "secret_recall": secret_all,
        "secret_by_split": secret_by_split,
        "secret_kind_misses": {
            kind: (sum(v[TUNE]) + sum(v[HELDOUT]), len(v[TUNE]) + len(v[HELDOUT]))
            for kind, v in sorted(secrets.items())
            if not all(v[TUNE]) or not all(v[HELDOUT])
        },
        "secret_misses": secret_misses,
        "injection_recall": inj_all,
        "injection_by": inj_by,
        "injection_misses": injection_misses,
        "unicode_bad": unicode_bad,
        "unicode_ok": unicode_ok,
        "benign_total": benign_total,
        "benign_families": benign_families,
        "benign_fp": benign_fp,
        "benign_warn": benign_warn,
        "echoes": echoes,
    }


def targets_met(r: dict[str, Any]) -> list[str]:
    missed: list[str] = []
    if r["secret_kinds"] < MIN_SECRET_KINDS:
        missed.append(f"secret kinds {r['secret_kinds']} < {MIN_SECRET_KINDS}")
    if _ratio(*r["secret_recall"]) < SECRET_TARGET:
        missed.append("secret recall")
    if _ratio(*r["injection_recall"]) < INJECTION_TARGET:
        missed.append("injection recall")
    if _ratio(len(r["benign_fp"]), r["benign_total"]) > FP_TARGET:
        missed.append("false-positive rate")
    if not all(ok for _, ok in r["unicode_bad"]):
        missed.append("dangerous Unicode kept")
    if not all(ok for _, ok in r["unicode_ok"]):
        missed.append("legitimate Unicode refused or changed")
    if r["echoes"]:
        missed.append("a message echoed the refused value")
    return missed


def _short(text: str, n: int = 90) -> str:
    flat = ascii(text)[1:-1]
    return flat if len(flat) <= n else flat[: n - 1] + "…"


def render(r: dict[str, Any], *, show_heldout: bool = False) -> str:
    lines: list[str] = []
    add = lines.append
    add(f"# Content scanner benchmark ({r['samples']} samples, {r['seconds']:.2f} s)")
    add("")
    add(f"## Secrets ({r['secret_kinds']} kinds)")
    add(f"recall            {_pct(*r['secret_recall'])}")
    for split, (h, t) in r["secret_by_split"].items():
        add(f"  {split:<16}{_pct(h, t)}")
    for kind, (h, t) in r["secret_kind_misses"].items():
        add(f"  missed kind {kind}: {h}/{t}")
    for s in r["secret_misses"]:
        if s.split == TUNE or show_heldout:
            add(f"  miss [{s.split}] {s.kind}: {_short(s.text)}")
    add("")
    add("## Prompt injection")
    add(f"recall            {_pct(*r['injection_recall'])}")
    for axis in ("split", "class", "lang"):
        for key, (h, t) in sorted(r["injection_by"][axis].items()):
            add(f"  {axis} {key:<14}{_pct(h, t)}")
    for s in r["injection_misses"]:
        if s.split == TUNE or show_heldout:
            add(f"  miss [{s.split}] {s.lang}/{s.kind}: {_short(s.text)}")
    held = sum(1 for s in r["injection_misses"] if s.split == HELDOUT)
    if held and not show_heldout:
        add(f"  ({held} held-out misses not shown; --show-heldout-misses)")
    add("")
    add("## Invisible Unicode")
    bad_ok = sum(ok for _, ok in r["unicode_bad"])
    add(f"dangerous handled {_pct(bad_ok, len(r['unicode_bad']))}")
    for s, ok in r["unicode_bad"]:
        if not ok:
            add(f"  kept dangerous {s.kind}: {_short(s.text)}")
    good_ok = sum(ok for _, ok in r["unicode_ok"])
    add(f"legitimate kept   {_pct(good_ok, len(r['unicode_ok']))}")
    for s, ok in r["unicode_ok"]:
        if not ok:
            add(f"  broke legitimate {s.kind}: {_short(s.text)}")
    add("")
    add("## Benign")
    fp, total = len(r["benign_fp"]), r["benign_total"]
    add(f"false positives   {_pct(fp, total)}")
    add(f"warnings          {_pct(len(r['benign_warn']), total)}")
    for family, count in sorted(r["benign_families"].items()):
        flagged = sum(1 for s, _ in r["benign_fp"] if s.kind == family)
        add(f"  family {family:<18}{_pct(flagged, count)} false positives")
    seen: set[str] = set()
    for s, why in r["benign_fp"] + r["benign_warn"]:
        key = why + s.text[:30]
        if key not in seen:
            seen.add(key)
            add(f"  flagged ({why}): {_short(s.text)}")
    add("")
    add(f"messages echoing a refused value: {len(r['echoes'])}")
    return "\n".join(lines)


def summary(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "samples": r["samples"],
        "secret_kinds": r["secret_kinds"],
        "secret_recall": _ratio(*r["secret_recall"]),
        "secret_recall_by_split": {k: _ratio(*v) for k, v in r["secret_by_split"].items()},
        "injection_recall": _ratio(*r["injection_recall"]),
        "injection_recall_by": {
            axis: {k: _ratio(*v) for k, v in d.items()} for axis, d in r["injection_by"].items()
        },
        "unicode_dangerous_handled": _ratio(
            sum(ok for _, ok in r["unicode_bad"]), len(r["unicode_bad"])
        ),
        "unicode_legitimate_kept": _ratio(
            sum(ok for _, ok in r["unicode_ok"]), len(r["unicode_ok"])
        ),
        "false_positive_rate": _ratio(len(r["benign_fp"]), r["benign_total"]),
        "warning_rate": _ratio(len(r["benign_warn"]), r["benign_total"]),
        "echoes": len(r["echoes"]),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--small", action="store_true", help="a tiny corpus (smoke run)")
    parser.add_argument("--show-heldout-misses", action="store_true")
    parser.add_argument("--json", help="also write the summary figures to this file")
    args = parser.parse_args(argv)
    if args.small:
        samples = build(args.seed, per_kind=1, per_template=1, benign=200)
    else:
        samples = build(args.seed)
    r = evaluate(samples)
    print(render(r, show_heldout=args.show_heldout_misses))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(summary(r), f, indent=2)
    missed = targets_met(r)
    print()
    print("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if missed and not args.small else 0


if __name__ == "__main__":
    sys.exit(main())
