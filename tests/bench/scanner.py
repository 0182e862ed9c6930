"""Content-scanner benchmark: recall per class and the false-positive rate.

    python -m tests.bench.scanner [--seed N] [--small] [--show-heldout-misses] [--json PATH]
                                  [--baseline GIT_REF]

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

A second section measures the structural corpus of `tests.bench.scanner_structures` (issue 26
§5, ADR 0066): recall per class and split for secrets and injections, and false positives per
benign family and split. With `--baseline main` the scanner of that git revision
(`domain/scanning/` at the ref, loaded from `git show` into a private package) runs on the same
corpora in the same process, so the figures and the scan time compare before and after.

Targets (issue 10): secrets >= 99 % over >= 75 kinds, injection >= 95 %, false positives
<= 0.5 %, every dangerous Unicode sample handled and every legitimate one kept. The exit
status is 1 when a target is missed (only on the full corpus, not with `--small`).
Misses of the held-out split are summarised by count only unless `--show-heldout-misses`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pi_hermes_memory.domain.scanning.scanner import ScanCategory, ScanResult, scan

from tests.bench.scanner_corpus import HELDOUT, TUNE, Sample, build
from tests.bench.scanner_structures import build_structural

ScanFn = Callable[[str], ScanResult]

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


_INJECTION_VALUES = frozenset(c.value for c in _INJECTION_CATEGORIES)


def _ratio(hit: int, total: int) -> float:
    return hit / total if total else 1.0


def _pct(hit: int, total: int) -> str:
    return f"{100 * _ratio(hit, total):6.2f} % ({hit}/{total})"


def _secret_part(sample: Sample) -> str:
    """What must never be echoed back: the secret, or for a PEM block one of its lines."""
    if "\n" in sample.secret:
        return max(sample.secret.split("\n"), key=len)
    return sample.secret


def evaluate(samples: Sequence[Sample], scan_fn: ScanFn = scan) -> dict[str, Any]:
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
        result = scan_fn(sample.text)
        message = result.message()
        if sample.cls == "secret":
            # By value: a baseline scanner (--baseline) has its own enum classes.
            hit = result.blocked and any(
                f.category.value == ScanCategory.SECRET.value for f in result.findings
            )
            secrets[sample.kind][sample.split].append(hit)
            if not hit:
                secret_misses.append(sample)
            part = _secret_part(sample)
            if len(part) >= 6 and (part in message or part in repr(result.findings)):
                echoes.append(sample.kind)
        elif sample.cls == "injection":
            hit = result.blocked and any(
                f.category.value in _INJECTION_VALUES for f in result.findings
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


# --------------------------------------------------------------------------------------------
# The structural corpus, and the scanner of another revision


def load_baseline(ref: str) -> ScanFn:
    """`scan` of `domain/scanning/` at git revision `ref`, imported as a private package.

    Its modules import each other as `pi_hermes_memory.domain.scanning.*`; the copy is rewritten
    to import `_baseline_scanning.*` so that the two versions live side by side."""
    root = Path(__file__).resolve().parents[2]
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{ref}:domain/scanning"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    target = Path(tempfile.mkdtemp(prefix="scanner-baseline-")) / "_baseline_scanning"
    target.mkdir()
    for name in names:
        if not name.endswith(".py"):
            continue
        source = subprocess.run(
            ["git", "show", f"{ref}:domain/scanning/{name}"],
            cwd=root,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = source.replace("pi_hermes_memory.domain.scanning", "_baseline_scanning")
        (target / name).write_text(text, encoding="utf-8")
    sys.path.insert(0, str(target.parent))
    module = importlib.import_module("_baseline_scanning.scanner")
    fn: ScanFn = module.scan
    return fn


def _blocked_as(result: ScanResult, cls: str) -> bool:
    if cls == "secret":
        return result.blocked and any(f.category.value == "secret" for f in result.findings)
    return result.blocked and any(f.category.value in _INJECTION_VALUES for f in result.findings)


def evaluate_structural(samples: Sequence[Sample], scan_fn: ScanFn = scan) -> dict[str, Any]:
    """Hits per (class, kind, split); for benign samples a hit is a false positive."""
    table: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    by_lang: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    misses: list[Sample] = []
    echoes = 0
    started = time.perf_counter()
    for sample in samples:
        result = scan_fn(sample.text)
        if sample.cls == "benign":
            changed = result.text != unicodedata.normalize("NFC", sample.text)
            hit = result.blocked or changed
        else:
            hit = _blocked_as(result, sample.cls)
            if sample.cls == "secret" and len(sample.secret) >= 6:
                echoes += sample.secret in result.message()
        row = table[(sample.cls, sample.kind, sample.split)]
        row[0] += hit
        row[1] += 1
        if sample.cls == "injection":
            lang = by_lang[(sample.lang, sample.split)]
            lang[0] += hit
            lang[1] += 1
        if (sample.cls != "benign") != hit:
            misses.append(sample)
    return {
        "seconds": time.perf_counter() - started,
        "samples": len(samples),
        "table": dict(table),
        "by_lang": dict(by_lang),
        "misses": misses,
        "echoes": echoes,
    }


def _totals(r: dict[str, Any], cls: str, split: str) -> tuple[int, int]:
    hit = total = 0
    for (c, _kind, s), (h, t) in r["table"].items():
        if c == cls and s == split:
            hit, total = hit + h, total + t
    return hit, total


def render_structural(
    r: dict[str, Any], base: dict[str, Any] | None = None, *, show_heldout: bool = False
) -> str:
    lines: list[str] = []
    add = lines.append
    head = f"# Structural corpus ({r['samples']} samples, {r['seconds']:.2f} s"
    head += f"; baseline {base['seconds']:.2f} s)" if base else ")"
    add(head)
    add("")
    add("recall per class (secret, injection) or false positives (benign), per split")
    add(f"{'class':<34}{'split':<9}{'after':>24}" + (f"{'before':>24}" if base else ""))
    for cls in ("secret", "injection", "benign"):
        keys = sorted({(k, s) for (c, k, s) in r["table"] if c == cls})
        for kind, split in keys:
            h, t = r["table"][(cls, kind, split)]
            row = f"{cls + ' ' + kind:<34}{split:<9}{_pct(h, t):>24}"
            if base:
                bh, bt = base["table"].get((cls, kind, split), (0, 0))
                row += f"{_pct(bh, bt):>24}"
            add(row)
        for split in (TUNE, HELDOUT):
            h, t = _totals(r, cls, split)
            row = f"{cls + ' (all)':<34}{split:<9}{_pct(h, t):>24}"
            if base:
                row += f"{_pct(*_totals(base, cls, split)):>24}"
            add(row)
    add("")
    add("injection recall per language (tune / heldout)")
    langs = sorted({lang for lang, _ in r["by_lang"]})
    for lang in langs:
        parts = []
        for split in (TUNE, HELDOUT):
            h, t = r["by_lang"].get((lang, split), (0, 0))
            parts.append(f"{h}/{t}")
        add(f"  {lang:<4}{' / '.join(parts)}")
    for s in r["misses"]:
        if s.split == TUNE or show_heldout:
            what = "false positive" if s.cls == "benign" else "miss"
            add(f"  {what} [{s.split}] {s.cls}/{s.kind}/{s.lang}: {_short(s.text)}")
    held = sum(1 for s in r["misses"] if s.split == HELDOUT)
    if held and not show_heldout:
        add(f"  ({held} held-out misses or false positives not shown; --show-heldout-misses)")
    add(f"messages echoing a refused value: {r['echoes']}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--small", action="store_true", help="a tiny corpus (smoke run)")
    parser.add_argument("--show-heldout-misses", action="store_true")
    parser.add_argument("--json", help="also write the summary figures to this file")
    parser.add_argument(
        "--baseline", help="also run the scanner of this git revision (e.g. main) to compare"
    )
    args = parser.parse_args(argv)
    if args.small:
        samples = build(args.seed, per_kind=1, per_template=1, benign=200)
        structural = build_structural(args.seed, per_template=1)
    else:
        samples = build(args.seed)
        structural = build_structural(args.seed)
    baseline = load_baseline(args.baseline) if args.baseline else None
    r = evaluate(samples)
    print(render(r, show_heldout=args.show_heldout_misses))
    if baseline is not None:
        b = evaluate(samples, baseline)
        print()
        print(f"## Baseline {args.baseline} on the same corpus ({b['seconds']:.2f} s)")
        for label, after, before in (
            ("secret recall", r["secret_recall"], b["secret_recall"]),
            ("injection recall", r["injection_recall"], b["injection_recall"]),
            (
                "false positives",
                (len(r["benign_fp"]), r["benign_total"]),
                (len(b["benign_fp"]), b["benign_total"]),
            ),
        ):
            print(f"{label:<18}after {_pct(*after)}   before {_pct(*before)}")
    s_after = evaluate_structural(structural)
    s_before = evaluate_structural(structural, baseline) if baseline is not None else None
    print()
    print(render_structural(s_after, s_before, show_heldout=args.show_heldout_misses))
    if args.json:
        figures = summary(r)
        figures["structural"] = {
            f"{c}/{k}/{s}": _ratio(h, t) for (c, k, s), (h, t) in s_after["table"].items()
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
    missed = targets_met(r)
    if s_after["echoes"]:
        missed.append("a message echoed a refused value (structural corpus)")
    print()
    print("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return 1 if missed and not args.small else 0


if __name__ == "__main__":
    sys.exit(main())
