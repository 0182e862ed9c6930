"""Rule tables of the write scanner: secrets (reliability.md §4) and injection (§5).

Pure: standard library and attrs only. Every regex is bounded (no unbounded repetition, no
nested unbounded quantifiers; word fillers are `(?:\\w++\\s++){0,8}`), because Python's `re`
backtracks. Each rule has lower-case `keywords`: the regex runs only when one of them occurs in
the lower-cased text (the cheap prefilter gitleaks uses).

Secret rules run case-sensitively (scoped `(?i:...)` where a provider is case-insensitive) with
ASCII `\\b`/`\\w`, on the NFKC, invisible-stripped copy and on the merely stripped copy. Injection
and role-marker rules are written in lower case and run on the ASCII-lower-cased NFKC copy.
Entropy is only a confirmation: it never flags free text on its own.

`scanning.SECRET_RULES` / `scanning.INJECTION_RULES` are the full tables: these plus the provider
and context rules of `scan_secrets_extra` and the multilingual intent rules of
`scan_injection_i18n` (ADR 0025).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable

import attrs
from pi_hermes_memory.domain.scanning.lazy_re import lazy_compile

# --------------------------------------------------------------------------------------------
# Helpers


def shannon_entropy(s: str) -> float:
    """Shannon entropy of `s` in bits per character (0.0 for the empty string)."""
    if not s:
        return 0.0
    n = len(s)
    return -sum((c / n) * math.log2(c / n) for c in Counter(s).values())


_PLACEHOLDER_WORDS = (
    "example",
    "placeholder",
    "redacted",
    "changeme",
    "change_me",
    "your",
    "dummy",
    "sample",
    "fake",
    "xxxx",
    "****",
    "<",
    ">",
    "todo",
    "fixme",
    "replace",
    "insert",
)
_SEQUENTIAL = ("0123456789", "123456789", "abcdefghij", "qwerty")
_SAME_CHAR_RUN = lazy_compile(r"(.)\1{9}")


def is_placeholder(s: str) -> bool:
    """Vendor documentation placeholders and obvious fillers (AKIA...EXAMPLE, xxxx, <token>)."""
    lower = s.lower()
    if any(w in lower for w in _PLACEHOLDER_WORDS) or any(q in lower for q in _SEQUENTIAL):
        return True
    return _SAME_CHAR_RUN.search(s) is not None


_UUID = lazy_compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = lazy_compile(r"[0-9a-f]{7,128}|[0-9A-F]{7,128}")
_ENV_NAME = lazy_compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_IDENT_PATH = lazy_compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_FILE_SUFFIX = lazy_compile(
    r".*\.(?:pem|key|pub|json|ya?ml|toml|txt|env|cfg|ini|conf|crt|cer|p12|pfx|gpg|asc|md)",
    re.IGNORECASE,
)


def is_reference(value: str) -> bool:
    """A value that names where a secret lives rather than being one.

    `${VAR}`, `$VAR`, `{{templated}}`, `%(name)s`, ENV_VAR_NAMES, URLs, paths, dotted code
    references (settings.API_KEY) and file names.
    """
    if value.startswith(("$", "/", "~", "./", "../", "%(", "<")):
        return True
    if any(t in value for t in ("${", "{{", "}}", "%(", "<%", "://")):
        return True
    if _ENV_NAME.fullmatch(value) or _IDENT_PATH.fullmatch(value):
        return True
    return len(value) <= 200 and _FILE_SUFFIX.fullmatch(value) is not None


def is_uuid(value: str) -> bool:
    return _UUID.fullmatch(value) is not None


def is_hex_digest(value: str) -> bool:
    """Git SHAs and content hashes: lower- or upper-case hex, 7 to 128 characters."""
    return _HEX.fullmatch(value) is not None


def _has_digit_and_letter(s: str) -> bool:
    return any(c.isdigit() for c in s) and any(c.isalpha() for c in s)


# --------------------------------------------------------------------------------------------
# Secret rules


@attrs.frozen(kw_only=True)
class SecretRule:
    """One provider or heuristic secret rule.

    `group` names the secret part of a match (0 = whole match); its entropy must exceed
    `min_entropy`; `check(match)` may reject a candidate (allowlists, context).
    """

    rule_id: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    group: int | str = 0
    min_entropy: float = 0.0
    check: Callable[[re.Match[str]], bool] | None = None


def _rx(pattern: str) -> re.Pattern[str]:
    return lazy_compile(pattern, re.ASCII)


_B = r"(?<![A-Za-z0-9_])"  # not preceded by a token character
_E = r"(?![A-Za-z0-9_])"  # not followed by a token character
_ED = r"(?![A-Za-z0-9_-])"  # ... nor by a dash


def _not_placeholder(m: re.Match[str]) -> bool:
    return not is_placeholder(m.group(0))


def _mixed_case(m: re.Match[str]) -> bool:
    s = m.group(0)
    return not is_placeholder(s) and any(c.isupper() for c in s) and any(c.islower() for c in s)


_AWS_CONTEXT = lazy_compile(r"aws[\s\S]{0,48}?(?:key|secret|pwd|pw|pass|token|credential)")


def _aws_secret_context(m: re.Match[str]) -> bool:
    value = m.group(1)
    if is_placeholder(value) or is_hex_digest(value):
        return False
    window = m.string[max(0, m.start() - 96) : m.start()].lower()
    return _AWS_CONTEXT.search(window) is not None


def _jwt_header_is_json(m: re.Match[str]) -> bool:
    header = m.group(0).split(".", 1)[0]
    padded = header + "=" * (-len(header) % 4)
    try:
        decoded = base64.urlsafe_b64decode(padded.encode("ascii"))
    except (binascii.Error, ValueError):
        return False
    return decoded.lstrip()[:1] == b"{" and not is_placeholder(m.group(0))


_DEFAULT_PASSWORDS = frozenset(
    (
        "password",
        "passwd",
        "pass",
        "pwd",
        "pw",
        "secret",
        "token",
        "changeme",
        "postgres",
        "root",
        "admin",
        "guest",
        "test",
        "dev",
        "user",
        "mysql",
        "redis",
        "x",
    )
)


def _url_password_is_real(m: re.Match[str]) -> bool:
    user, password = m.group("user"), m.group("pw")
    if is_reference(password) or is_placeholder(password) or user.startswith(("$", "{", "%")):
        return False
    if password == user or password.lower() in _DEFAULT_PASSWORDS:
        return False
    return not (password.isdigit() and len(password) <= 5)  # host:port@ noise


def _curl_password_is_real(m: re.Match[str]) -> bool:
    """`-u user:password` on a line that runs curl before it."""
    text = m.string
    floor = max(0, m.start() - 512)
    line_start = text.rfind("\n", floor, m.start()) + 1 or floor
    at = text.rfind("curl", line_start, m.start())
    if at < 0 or (at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")):
        return False
    user, password = m.group("user"), m.group("value")
    if is_reference(password) or is_placeholder(password) or user.startswith(("$", "{", "%")):
        return False
    return password != user and password.lower() not in _DEFAULT_PASSWORDS


_STRONG_KEYWORDS = lazy_compile(
    r"api|access|secret|token|pass|pwd|cred|private|auth", re.IGNORECASE
)
_HASHY_NAME = lazy_compile(r"sha|hash|digest|checksum|commit|etag|fingerprint|revision|rev\b", re.I)


def _generic_value_is_secret(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    name = m.group("name")
    if is_hex_digest(value):
        # Hex needs a credential word in the name (TWILIO_AUTH_TOKEN, api_key), not a hash one.
        if _STRONG_KEYWORDS.search(name) is None or _HASHY_NAME.search(name) is not None:
            return False
        return len(value) >= 16 and shannon_entropy(value) > 3.0
    if shannon_entropy(value) <= 3.5 and not (
        _STRONG_KEYWORDS.search(name) is not None and len(value) <= 16 and _random_shape(value)
    ):
        return False
    if _has_digit_and_letter(value):
        return True
    # Letters only: a secret when the capitals are many (IwwubIIGHKRxAvZVbCu), not camelCase.
    return _STRONG_KEYWORDS.search(name) is not None and _random_shape(value)


def _random_shape(value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    lower = len(letters) - upper
    if not (len(value) >= 10 and upper >= 3 and lower >= 2 and upper >= 0.3 * len(letters)):
        return _has_digit_and_letter(value) and len(value) >= 10
    return True


def _assignment_value_is_secret(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    return _has_digit_and_letter(value)


_GENERIC_ASSIGNMENT = (
    r"(?<![A-Za-z0-9_.-])"
    r"(?P<name>[A-Za-z0-9_.-]{0,40}?"
    r"(?P<kw>(?i:api[_.-]?key|apikey|access[_.-]?key|secret|token|passw(?:or)?d|pwd|auth"
    r"|credentials?|creds|private[_.-]?key|key))"
    r"[A-Za-z0-9_.-]{0,20}?)"
    r"[\"']?[ \t]{0,4}(?::=|=>|=|:)[ \t]{0,4}[\"'`]?"
    r"(?P<value>[A-Za-z0-9_.=+/~@%!#*^&$-]{8,200}+)"
    r"(?![^\s\"'`;,)\]}>])"
)

SECRET_RULES: tuple[SecretRule, ...] = (
    # Private keys first: the header alone is enough.
    SecretRule(
        rule_id="private-key",
        keywords=("-----begin",),
        pattern=_rx(r"(?i:-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----)"),
    ),
    SecretRule(
        rule_id="putty-private-key",
        keywords=("putty-user-key-file-",),
        pattern=_rx(r"PuTTY-User-Key-File-[23]:"),
    ),
    SecretRule(
        rule_id="age-secret-key",
        keywords=("age-secret-key-1",),
        pattern=_rx(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ),
    # AWS
    SecretRule(
        rule_id="aws-access-token",
        keywords=("akia", "asia", "abia", "acca", "a3t"),
        pattern=_rx(_B + r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="aws-bedrock-api-key",
        keywords=("absk",),
        pattern=_rx(_B + r"ABSK[A-Za-z0-9+/]{109,269}={0,2}(?![A-Za-z0-9+/=])"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="aws-secret-access-key",
        keywords=("aws",),
        pattern=_rx(r"(?<![A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
        group=1,
        min_entropy=4.0,
        check=_aws_secret_context,
    ),
    # GitHub
    SecretRule(
        rule_id="github-pat",
        keywords=("ghp_",),
        pattern=_rx(_B + r"ghp_[0-9A-Za-z]{36}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="github-oauth",
        keywords=("gho_",),
        pattern=_rx(_B + r"gho_[0-9A-Za-z]{36}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="github-app-token",
        keywords=("ghu_", "ghs_"),
        pattern=_rx(_B + r"(?:ghu|ghs)_[0-9A-Za-z]{36}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="github-refresh-token",
        keywords=("ghr_",),
        pattern=_rx(_B + r"ghr_[0-9A-Za-z]{36}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="github-fine-grained-pat",
        keywords=("github_pat_",),
        pattern=_rx(_B + r"github_pat_[0-9A-Za-z_]{82}" + _E),
        check=_not_placeholder,
    ),
    # GitLab
    SecretRule(
        rule_id="gitlab-pat",
        keywords=("glpat-",),
        pattern=_rx(_B + r"glpat-[0-9A-Za-z_-]{20,300}+(?:\.[0-9a-z]{9})?" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="gitlab-token",
        keywords=(
            "gldt-",
            "glrt-",
            "glsoat-",
            "glft-",
            "glcbt-",
            "glffct-",
            "glimt-",
            "glagent-",
            "gloas-",
            "glptt-",
            "gr1348941",
        ),
        pattern=_rx(
            _B + r"(?:(?:gldt|glrt|glsoat|glft|glcbt|glffct|glimt|glagent|gloas)"
            r"-[0-9A-Za-z_-]{20,300}+|glptt-[0-9a-f]{40}|GR1348941[0-9A-Za-z_-]{20,64}+)" + _ED
        ),
        check=_not_placeholder,
    ),
    # OpenAI and friends
    SecretRule(
        rule_id="openai-api-key",
        keywords=("sk-proj-", "sk-svcacct-", "sk-admin-"),
        pattern=_rx(_B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,400}+" + _ED),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="openai-legacy-api-key",
        keywords=("t3blbkfj",),
        pattern=_rx(_B + r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="anthropic-admin-api-key",
        keywords=("sk-ant-admin",),
        pattern=_rx(_B + r"sk-ant-admin01-[A-Za-z0-9_-]{80,200}+" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="anthropic-api-key",
        keywords=("sk-ant-",),
        pattern=_rx(_B + r"sk-ant-(?!admin)[a-z]{2,8}[0-9]{2}-[A-Za-z0-9_-]{80,200}+" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="openrouter-api-key",
        keywords=("sk-or-v1-",),
        pattern=_rx(_B + r"sk-or-v1-[a-f0-9]{64}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="groq-api-key",
        keywords=("gsk_",),
        pattern=_rx(_B + r"gsk_[A-Za-z0-9]{52}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="xai-api-key",
        keywords=("xai-",),
        pattern=_rx(_B + r"xai-[A-Za-z0-9]{80}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="perplexity-api-key",
        keywords=("pplx-",),
        pattern=_rx(_B + r"pplx-[A-Za-z0-9]{48}" + _E),
        check=_not_placeholder,
    ),
    # Slack
    SecretRule(
        rule_id="slack-bot-token",
        keywords=("xoxb-",),
        pattern=_rx(_B + r"xoxb-[0-9]{10,13}-[0-9]{10,13}[A-Za-z0-9-]{0,64}+"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="slack-user-token",
        keywords=("xoxp-", "xoxe-"),
        pattern=_rx(_B + r"xox[pe](?:-[0-9]{10,13}){3}-[A-Za-z0-9-]{28,34}"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="slack-token",
        keywords=("xox",),
        pattern=_rx(_B + r"(?i:xox[abposr]-(?:[0-9]{1,20}-){1,6}[a-z0-9]{4,100}+)"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="slack-app-token",
        keywords=("xapp-",),
        pattern=_rx(_B + r"(?i:xapp-[0-9]-[a-z0-9]{1,32}-[0-9]{1,20}-[a-z0-9]{16,100}+)"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="slack-webhook-url",
        keywords=("hooks.slack.com",),
        pattern=_rx(
            r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}"
        ),
        check=_not_placeholder,
    ),
    # Google
    SecretRule(
        rule_id="gcp-api-key",
        keywords=("aiza",),
        pattern=_rx(_B + r"AIza[0-9A-Za-z_-]{35}" + _ED),
        min_entropy=4.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="gcp-oauth-client-secret",
        keywords=("gocspx-",),
        pattern=_rx(_B + r"GOCSPX-[A-Za-z0-9_-]{28}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="gcp-oauth-access-token",
        keywords=("ya29.",),
        pattern=_rx(_B + r"ya29\.[0-9A-Za-z_-]{20,2048}+"),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    # Payments, registries, SaaS
    SecretRule(
        rule_id="stripe-access-token",
        keywords=("sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_"),
        pattern=_rx(_B + r"(?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,99}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="stripe-webhook-secret",
        keywords=("whsec_",),
        pattern=_rx(_B + r"whsec_[A-Za-z0-9+/]{24,64}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="square-access-token",
        keywords=("sq0atp-", "sq0csp-"),
        pattern=_rx(_B + r"sq0(?:atp-[0-9A-Za-z_-]{22}|csp-[0-9A-Za-z_-]{43})" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="shopify-token",
        keywords=("shpat_", "shpca_", "shppa_", "shpss_"),
        pattern=_rx(_B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="huggingface-access-token",
        keywords=("hf_", "api_org_"),
        pattern=_rx(_B + r"(?:hf_|api_org_)[A-Za-z]{34}" + _E),
        min_entropy=3.0,
        check=_mixed_case,
    ),
    SecretRule(
        rule_id="npm-access-token",
        keywords=("npm_",),
        pattern=_rx(_B + r"(?i:npm_)[A-Za-z0-9]{36}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="pypi-upload-token",
        keywords=("pypi-ageichlwas5vcmc", "pypi-agendgvzdc5wexbplm9yzw"),
        pattern=_rx(_B + r"pypi-(?:AgEIcHlwaS5vcmc|AgENdGVzdC5weXBpLm9yZw)[0-9A-Za-z_-]{50,1000}+"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="sendgrid-api-token",
        keywords=("sg.",),
        pattern=_rx(_B + r"SG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="twilio-api-key",
        keywords=("sk",),
        pattern=_rx(_B + r"SK[0-9a-fA-F]{32}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="digitalocean-token",
        keywords=("dop_v1_", "doo_v1_", "dor_v1_"),
        pattern=_rx(_B + r"do[por]_v1_[a-f0-9]{64}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="1password-service-account-token",
        keywords=("ops_eyj",),
        pattern=_rx(_B + r"ops_eyJ[A-Za-z0-9+/]{250,4096}+={0,3}"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="hashicorp-tf-api-token",
        keywords=("atlasv1",),
        pattern=_rx(r"(?i:[a-z0-9]{14}\.atlasv1\.[a-z0-9_=-]{60,70})"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="vault-token",
        keywords=("hvs.", "hvb."),
        pattern=_rx(_B + r"hv[sb]\.[A-Za-z0-9_-]{90,200}+" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="notion-api-token",
        keywords=("ntn_",),
        pattern=_rx(_B + r"ntn_[0-9]{11}[A-Za-z0-9]{35}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="sentry-token",
        keywords=("sntryu_", "sntrys_"),
        pattern=_rx(_B + r"(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9_=+/-]{50,2048}+)"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="grafana-service-account-token",
        keywords=("glsa_",),
        pattern=_rx(_B + r"glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="linear-api-key",
        keywords=("lin_api_",),
        pattern=_rx(_B + r"lin_api_[A-Za-z0-9]{40}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="databricks-api-token",
        keywords=("dapi",),
        pattern=_rx(_B + r"dapi[a-f0-9]{32}(?:-[0-9]{1,2})?" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="atlassian-api-token",
        keywords=("atatt3",),
        pattern=_rx(_B + r"ATATT3[A-Za-z0-9_=-]{150,250}+"),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="telegram-bot-token",
        keywords=(":aa",),
        pattern=_rx(r"(?<![0-9])[0-9]{8,10}:AA[0-9A-Za-z_-]{33}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="discord-bot-token",
        keywords=("discord",),
        pattern=_rx(
            _B + r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _ED
        ),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="azure-storage-account-key",
        keywords=("accountkey=",),
        pattern=_rx(r"(?i:accountkey)=([A-Za-z0-9+/]{86,88}={0,2})"),
        group=1,
        min_entropy=4.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="jwt",
        keywords=("ey",),
        pattern=_rx(
            _B + r"ey[A-Za-z0-9_-]{17,2048}+\.ey[A-Za-z0-9_/\\-]{17,4096}+"
            r"\.(?:[A-Za-z0-9_/\\-]{10,4096}+={0,2})?"
        ),
        check=_jwt_header_is_json,
    ),
    # Credentials in places
    SecretRule(
        rule_id="url-credentials",
        keywords=("://",),
        pattern=_rx(r"://(?P<user>[^\s{}:/@\"'<>]{0,256}+):(?P<pw>[^\s{}/@\"'<>]{1,256}+)@"),
        group="pw",
        check=_url_password_is_real,
    ),
    SecretRule(
        rule_id="bearer-token",
        keywords=("bearer",),
        pattern=_rx(
            r"(?i:bearer)[ \t]{1,4}+(?P<value>[A-Za-z0-9._~+/-]{16,1024}+=*)"
            r"(?![A-Za-z0-9._~+/=-])"
        ),
        group="value",
        min_entropy=3.5,
        check=_assignment_value_is_secret,
    ),
    SecretRule(
        rule_id="basic-auth-header",
        keywords=("basic",),
        pattern=_rx(
            r"(?i:authorization)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?(?i:basic)[ \t]{1,4}+"
            r"(?P<value>[A-Za-z0-9+/]{8,1024}+={0,2})"
        ),
        group="value",
        min_entropy=3.0,
        check=_assignment_value_is_secret,
    ),
    SecretRule(
        rule_id="curl-user-auth",
        keywords=("curl",),
        pattern=_rx(
            r"(?<![^ \t])(?:-u|--user)[ \t=]{1,4}[\"']?"
            r"(?P<user>[^\s:\"']{1,128}+):(?P<value>[^\s\"']{6,256}+)"
        ),
        group="value",
        min_entropy=2.5,
        check=_curl_password_is_real,
    ),
    # The generic assignment rule last: provider rules name the finding better.
    SecretRule(
        rule_id="generic-api-key",
        keywords=("key", "token", "secret", "pass", "pwd", "auth", "cred"),
        pattern=_rx(_GENERIC_ASSIGNMENT),
        group="value",
        check=_generic_value_is_secret,
    ),
)


# --------------------------------------------------------------------------------------------
# Injection, exfiltration, persistence and role-marker rules

# Category and severity values; scanning.ScanCategory / scanning.Severity carry the same strings.
PROMPT_INJECTION = "prompt_injection"
ROLE_MARKER = "role_marker"
EXFILTRATION = "exfiltration"
PERSISTENCE = "persistence"
SUSPICIOUS = "suspicious"
CONFUSABLE = "confusable"
BLOCK = "block"
WARN = "warn"


@attrs.frozen(kw_only=True)
class PatternRule:
    """A rule over the lower-cased scan copy: a bounded regex, or a linear-time `finder`.

    `keywords` (lower case) gate the rule: it runs only when one of them occurs; an empty tuple
    means it always runs. `first_hit` returns the offset of the first hit or None.
    """

    rule_id: str
    category: str
    severity: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str] | None = None
    finder: Callable[[str], int | None] | None = None

    def first_hit(self, lowered: str) -> int | None:
        if self.pattern is not None:
            m = self.pattern.search(lowered)
            return None if m is None else m.start()
        assert self.finder is not None
        return self.finder(lowered)


_F = r"(?:\w++\s++){0,8}"  # up to eight filler words, possessive inside: no backtracking
_F3 = r"(?:\w++\s++){0,3}"
_APOS = "['\u2019]?"


def _alt(*patterns: str) -> re.Pattern[str]:
    return lazy_compile("|".join(f"(?:{p})" for p in patterns))


def _line_finder(trigger: re.Pattern[str], target: re.Pattern[str]) -> Callable[[str], int | None]:
    """First `trigger` hit whose line continues with a `target` hit; linear in the text."""

    def find(text: str) -> int | None:
        pos = 0
        while True:
            m = trigger.search(text, pos)
            if m is None:
                return None
            eol = text.find("\n", m.end())
            if eol < 0:
                eol = len(text)
            if target.search(text, m.end(), eol) is not None:
                return m.start()
            pos = eol + 1

    return find


_CURL = lazy_compile(r"\b(?:curl|wget|invoke-webrequest|iwr)\b")
_SECRET_VARIABLE = lazy_compile(
    r"\$\{?(?:env:)?\w{0,64}?(?:key|token|secret|password|passwd|credential)s?\b"
)
# `-H "Authorization: Bearer $TOKEN"` / `-u user:$PASSWORD` send the secret to the service it
# belongs to, which is ordinary API use; a secret in the data, the URL or a form is not.
_AUTH_ARGUMENT = lazy_compile(
    r"(?:(?:-h|--header)[ =]{1,4}[\"']?[\w-]{1,40}:[ \t]{0,4}(?:bearer|token|basic|ssws)?[ \t]{0,4}"
    r"|(?:-u|--user)[ =]{1,4}[\"']?[^\s:\"']{0,64}:?)\Z"
)


def _find_curl_secret_variable(text: str) -> int | None:
    pos = 0
    while True:
        m = _CURL.search(text, pos)
        if m is None:
            return None
        eol = text.find("\n", m.end())
        eol = len(text) if eol < 0 else eol
        for t in _SECRET_VARIABLE.finditer(text, m.end(), eol):
            if _AUTH_ARGUMENT.search(text[max(m.end(), t.start() - 100) : t.start()]) is None:
                return m.start()
        pos = eol + 1


_COMMENT_WORDS = lazy_compile(r"(?<![a-z])(?:ignore|override|system|secret|hidden)(?![a-z])")


def _find_hidden_html_comment(text: str) -> int | None:
    """`<!-- ... -->` (or an unterminated `<!--`) whose body has an attack word."""
    pos = 0
    while True:
        start = text.find("<!--", pos)
        if start < 0:
            return None
        end = text.find("-->", start + 4)
        body_end = len(text) if end < 0 else end
        if _COMMENT_WORDS.search(text, start + 4, body_end) is not None:
            return start
        if end < 0:
            return None
        pos = end + 3


_HIDING_TAG = lazy_compile(r"<\s{0,4}(?:div|span|p|section|font|a)\b")
_HIDING_STYLE = lazy_compile(
    r"display\s{0,4}:\s{0,4}none|visibility\s{0,4}:\s{0,4}hidden"
    r"|font-size\s{0,4}:\s{0,4}0(?![\d.])"
)


def _find_hidden_element(text: str) -> int | None:
    """An HTML element styled invisible (`display:none`, `visibility:hidden`, `font-size:0`)."""
    covered = -1
    for m in _HIDING_TAG.finditer(text):
        if m.start() < covered:
            continue  # inside a tag already checked as part of an earlier one
        end = text.find(">", m.end())
        end = min(len(text) if end < 0 else end, m.end() + 4096)
        if _HIDING_STYLE.search(text, m.end(), end) is not None:
            return m.start()
        covered = end
    return None


def _is_exfil_url(url: str) -> bool:
    query = url.find("?")
    return "$" in url or (query >= 0 and "=" in url[query:])


_PAREN_URL = lazy_compile(r"\(\s{0,4}+(https?://[^)\s]{1,2048}+)")
_IMG_SRC = lazy_compile(r"\bsrc\s{0,4}=\s{0,4}[\"']?(https?://[^\"'\s>]{1,2048}+)")


def _find_markdown_image_exfil(text: str) -> int | None:
    """`![alt](https://host/path?q=...)` or a URL with `$`/`${`: an image fetch leaks data."""
    pos = 0
    while True:
        start = text.find("![", pos)
        if start < 0:
            return None
        close = text.find("]", start + 2)
        if close < 0:
            return None
        newline = text.find("\n", start + 2, close)
        if newline >= 0:
            pos = newline + 1
            continue
        m = _PAREN_URL.match(text, close + 1)
        if m is not None and _is_exfil_url(m.group(1)):
            return start
        pos = close + 1


def _find_html_image_exfil(text: str) -> int | None:
    pos = 0
    while True:
        start = text.find("<img", pos)
        if start < 0:
            return None
        end = text.find(">", start)
        end = len(text) if end < 0 else end
        for m in _IMG_SRC.finditer(text, start, end):
            if _is_exfil_url(m.group(1)):
                return start
        pos = end + 1


_MIXED_SCRIPT_HINT = lazy_compile(r"[\u0370-\u052f]")
_LETTER_RUN = lazy_compile(r"[a-z\u0370-\u03ff\u0400-\u052f]{2,64}+")
# Greek letters that look like Latin ones; other Greek letters next to Latin are normal (Δx).
_GREEK_LOOKALIKES = frozenset("αβεικνορτυχΑΒΕΖΗΙΚΜΝΟΡΤΥΧ")


def _find_mixed_script_token(text: str) -> int | None:
    """A word mixing Latin letters with Cyrillic ones or Latin-lookalike Greek ones."""
    if text.isascii() or _MIXED_SCRIPT_HINT.search(text) is None:  # ASCII: no match (ADR 0109)
        return None
    for m in _LETTER_RUN.finditer(text):
        word = m.group()
        if word.isascii() or not any("a" <= c <= "z" for c in word):
            continue
        for c in word:
            if "\u0400" <= c <= "\u052f" or c in _GREEK_LOOKALIKES:
                return m.start()
    return None


INJECTION_RULES: tuple[PatternRule, ...] = (
    # ---- prompt injection / role hijack
    PatternRule(
        rule_id="ignore_previous",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("ignore",),
        pattern=_alt(
            rf"\bignore\s++{_F}(?:previous|all|above|prior|preceding|earlier)\s++{_F}"
            r"(?:instructions?|prompts?|directives?)\b"
        ),
    ),
    PatternRule(
        rule_id="ignore_previous_cjk",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("忽略", "无视", "忽视", "無視", "不要理"),
        pattern=_alt(
            r"(?:忽略|无视|忽视|無視|不要理会|不要理會)[^\n]{0,16}?"
            r"(?:之前|以上|上面|前面|先前|上述|所有|全部|你的)[^\n]{0,16}?(?:指令|指示|命令|提示词)",
            r"(?:以前|前|上記|これまで|すべて)の[^\n]{0,16}?(?:指示|命令|指令)[^\n]{0,8}?無視",
        ),
    ),
    PatternRule(
        rule_id="bypass_instructions",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(
            "ignore",
            "disregard",
            "skip",
            "forget",
            "neglect",
            "overlook",
            "omit",
            "bypass",
            "attention",
            "follow",
            "obey",
        ),
        pattern=_alt(
            r"\b(?:ignore|disregard|skip|forget|neglect|overlook|omit|bypass"
            rf"|pay\s+no\s+attention\s+to|do\s+not\s+(?:follow|obey)|don{_APOS}t\s+(?:follow|obey)"
            r"|stop\s+(?:following|obeying))\s++(?:(?:all|any|of|the)\s++){0,2}"
            r"(?:(?:your|prior|previous|preceding|above|foregoing|earlier|initial|original"
            r"|safety)\s++){1,2}"
            r"(?:instructions?|directives?|commands?|context|conversation|messages?|rules"
            r"|guidelines|guardrails|prompts?|programming|constraints)\b",
            r"\bforget\s+everything\s+(?:above|before|you\s+(?:know|were\s+told|have\s+been\s+told))\b",
        ),
    ),
    PatternRule(
        rule_id="disregard_rules",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("disregard",),
        pattern=_alt(
            rf"\bdisregard\s++{_F}(?:your|all|any)\s++{_F}(?:instructions|rules|guidelines)\b"
        ),
    ),
    PatternRule(
        rule_id="sys_prompt_override",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("override",),
        pattern=_alt(r"\bsystem\s+prompt\s+override\b"),
    ),
    PatternRule(
        rule_id="role_hijack",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("you",),
        pattern=_alt(
            rf"\byou\s+are\s++{_F}now\s+(?:a|an|the)\s",
            r"\byou['\u2019]re\s+now\s+(?:a|an|the)\s",
            r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will\s+be|act\s+as)\s",
        ),
    ),
    PatternRule(
        rule_id="role_pretend",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("pretend",),
        pattern=_alt(
            rf"\bpretend\s++{_F}(?:you\s+are|you['\u2019]re)\s",
            r"\bpretend\s+to\s+be\s+(?:an?\s+|the\s+)?(?:\w++\s++){0,2}"
            r"(?:ai|assistant|model|chatbot|llm|gpt|dan|human|person|unrestricted|jailbroken"
            r"|evil|uncensored)\b",
        ),
    ),
    PatternRule(
        rule_id="fake_update",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("been",),
        pattern=_alt(
            rf"\byou\s+have\s+been\s++{_F}(?:updated|upgraded|patched|reprogrammed|jailbroken)"
            r"\s+to\b"
        ),
    ),
    PatternRule(
        rule_id="identity_override",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("yourself",),
        pattern=_alt(r"\bname\s+yourself\s+\w"),
    ),
    PatternRule(
        rule_id="leak_system_prompt",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("prompt", "instructions", "words", "text", "everything"),
        pattern=_alt(
            rf"\boutput\s++{_F}(?:system|initial)\s+prompt\b",
            r"\b(?:reveal|print|show|leak|dump|disclose|output|display|expose)\s+(?:me\s+)?"
            r"(?:your|the)\s+(?:(?:full|entire|complete|hidden|original|initial|exact|secret)\s+)?"
            r"(?:system|hidden|initial|developer)\s+(?:prompt|instructions|message)\b",
            r"\b(?:reveal|print|show|repeat|display|leak|dump|disclose|tell\s+me|give\s+me)\s+"
            r"(?:me\s+)?(?:your|the\s+(?:full|entire|complete|hidden|original|initial|exact"
            rf"|secret))\s++{_F3}(?:system\s+)?(?:prompt|instructions)\b",
            rf"\brepeat\s++{_F3}(?:instructions|words|text|everything|prompt)\s+"
            r"(?:above|before\s+this)\b",
            r"\bwhat\s+(?:is|are|was|were)\s+your\s+(?:system\s+prompt|initial\s+instructions"
            r"|original\s+instructions)\b",
        ),
    ),
    PatternRule(
        rule_id="remove_filters",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("without",),
        pattern=_alt(
            rf"\b(?:respond|answer|reply|write|speak|talk)\s+without\s++{_F}"
            r"(?:restrictions|limitations|limits|filters|filtering|safety|censorship|guardrails)\b"
        ),
    ),
    PatternRule(
        rule_id="bypass_restrictions",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("act",),
        pattern=_alt(
            rf"\bact\s+as\s+(?:if|though)\s++{_F}you\s++{_F}"
            rf"(?:have\s+no|don{_APOS}t\s+have|do\s+not\s+have)\s++{_F}"
            r"(?:restrictions|limits|limitations|rules|filters|guidelines)\b"
        ),
    ),
    PatternRule(
        rule_id="deception_hide",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("user",),
        pattern=_alt(
            rf"\b(?:do\s+not|don{_APOS}t|never)\s++{_F3}(?:tell|inform|notify|alert|warn)\s++{_F3}"
            r"the\s+user\b(?!\s+to\b)",
            rf"\b(?:hide|conceal|keep)\s+(?:this|it|that|these|them)\s++{_F3}"
            r"(?:from|secret\s+from|hidden\s+from)\s+the\s+user\b",
        ),
    ),
    PatternRule(
        rule_id="conditional_deception",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("watching", "looking", "monitoring"),
        pattern=_alt(r"\b(?:when|if)\s+no\s*(?:one|body)\s+is\s+(?:watching|looking|monitoring)\b"),
    ),
    PatternRule(
        rule_id="translate_execute",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("translate",),
        finder=_line_finder(
            lazy_compile(r"\btranslate\b"),
            lazy_compile(r"\sinto\s+\w++(?:[\s-]++\w++){0,2}\s+and\s+(?:execute|run|eval)\b"),
        ),
    ),
    PatternRule(
        rule_id="html_comment",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("<!--",),
        finder=_find_hidden_html_comment,
    ),
    PatternRule(
        rule_id="hidden_div",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=("display", "visibility", "font-size"),
        finder=_find_hidden_element,
    ),
    # ---- exfiltration
    PatternRule(
        rule_id="exfil_curl",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=("curl", "wget", "invoke-webrequest", "iwr"),
        finder=_find_curl_secret_variable,
    ),
    PatternRule(
        rule_id="read_secrets",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=("cat",),
        finder=_line_finder(
            lazy_compile(r"\bcat[ \t]++(?!>)"),
            lazy_compile(
                r"\.env\b(?!\.(?:example|sample|template|dist))|\bcredentials\b|\.netrc\b"
                r"|\.pgpass\b|\.npmrc\b|\.pypirc\b|\.git-credentials\b|\.aws/|\.ssh/id_"
                r"|\.docker/config\.json\b|\.kube/config\b"
            ),
        ),
    ),
    PatternRule(
        rule_id="md_image_exfil",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=("![",),
        finder=_find_markdown_image_exfil,
    ),
    PatternRule(
        rule_id="html_image_exfil",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=("<img",),
        finder=_find_html_image_exfil,
    ),
    PatternRule(
        rule_id="context_exfil",
        category=EXFILTRATION,
        severity=WARN,
        keywords=("conversation", "history", "messages", "context"),
        pattern=_alt(
            rf"\b(?:include|output|print|share|send|post|upload|forward)\s++{_F}"
            r"(?:conversation|chat\s+history|previous\s+messages|full\s+context)\b"
        ),
    ),
    # ---- persistence
    PatternRule(
        rule_id="ssh_backdoor",
        category=PERSISTENCE,
        severity=BLOCK,
        keywords=("authorized_keys",),
        pattern=_alt(
            r"(?:\$home|\$\{home\}|~|/root|/home/[\w.-]{1,64}+|%userprofile%)/\.ssh/authorized_keys",
            r"(?:>>?|\btee\b(?:[ \t]+-a)?)[ \t]{0,4}[\"']?[\w./~${}%-]{0,200}?authorized_keys",
        ),
    ),
    PatternRule(
        rule_id="agent_config_mod",
        category=PERSISTENCE,
        severity=WARN,  # "update AGENTS.md when adding a dependency" is a real convention
        keywords=(
            "agents.md",
            "claude.md",
            "gemini.md",
            "memory.md",
            "user.md",
            ".cursorrules",
            ".clinerules",
            ".windsurfrules",
            "copilot-instructions.md",
        ),
        pattern=_alt(
            r"\b(?:update|modify|edit|write|change|append|add|insert|inject|overwrite|replace"
            r"|rewrite|prepend)\b[^\n]{0,120}?"
            r"(?:\b(?:agents|claude|gemini|memory|user)\.md\b|\.(?:cursorrules|clinerules"
            r"|windsurfrules)\b|copilot-instructions\.md\b)",
            r"(?:>>?|\btee\b(?:[ \t]+-a)?)[ \t]{0,4}[\"']?[\w./~${}%-]{0,200}?"
            r"(?:\b(?:agents|claude|gemini|memory|user)\.md\b|\.(?:cursorrules|clinerules"
            r"|windsurfrules)\b|copilot-instructions\.md\b)",
        ),
    ),
    PatternRule(
        rule_id="env_unset_agent",
        category=PERSISTENCE,
        severity=BLOCK,
        keywords=("unset",),
        pattern=_alt(r"\bunset\s+\w{0,64}?(?:claude|codex|hermes|agent|openai|anthropic)"),
    ),
    # ---- chat-template role markers and fake turns
    PatternRule(
        rule_id="role_token",
        category=ROLE_MARKER,
        severity=BLOCK,
        keywords=("<|", "[inst]", "[/inst]", "<<sys>>", "<</sys>>", "_of_turn>"),
        pattern=_alt(
            r"<\|[a-z0-9_]{2,40}\|>", r"\[/?inst\]", r"<</?sys>>", r"<(?:start|end)_of_turn>"
        ),
    ),
    PatternRule(
        rule_id="guidance_role_block",
        category=ROLE_MARKER,
        severity=BLOCK,
        keywords=("{{",),
        pattern=_alt(r"\{\{~?[#/]\s{0,4}(?:system|user|assistant)\s{0,4}~?\}\}"),
    ),
    PatternRule(
        rule_id="system_tag",
        category=ROLE_MARKER,
        severity=BLOCK,
        keywords=("system",),
        pattern=_alt(
            r"<\s{0,4}/?\s{0,4}system(?:[_-](?:prompt|message|reminder|instructions?))?\s{0,4}>"
        ),
    ),
    PatternRule(
        rule_id="fake_role_line",
        category=ROLE_MARKER,
        severity=BLOCK,
        keywords=("system", "assistant", "developer"),
        # "System: Ubuntu 22.04" is an ordinary environment fact, so a `system:` line only
        # counts when it goes on to address the model; assistant/developer lines always count.
        pattern=lazy_compile(
            r"^[ \t>*_#-]{0,8}+(?:(?:assistant|developer)[*_]{0,2}[ \t]{0,4}:[*_]{0,2}"
            r"[ \t]{0,16}+\S|system[*_]{0,2}[ \t]{0,4}:[*_]{0,2}[ \t]{0,16}+"
            r"(?:you\b|your\b|ignore|disregard|forget|obey|follow|from now on|new (?:rules|"
            r"instructions)|always\b|never\b|do not\b|don't\b|must\b|the (?:user|assistant)\b|"
            r"reply|respond|answer|act as|override|reveal|print|output))",
            re.MULTILINE,
        ),
    ),
    PatternRule(
        rule_id="transcript_marker",
        category=ROLE_MARKER,
        severity=BLOCK,
        keywords=("human", "assistant"),
        pattern=_alt(r"(?:\A|\n[ \t]{0,8}+\n)[ \t]{0,8}+(?:human|assistant)[ \t]{0,4}:"),
    ),
    # ---- warnings
    PatternRule(
        rule_id="c2_vocabulary",
        category=SUSPICIOUS,
        severity=WARN,
        keywords=("command", "c2", "beacon"),
        pattern=_alt(
            r"\bcommand[\s-]+and[\s-]+control\b",
            r"\bc2\s+(?:server|channel|beacon|infrastructure|callback)s?\b",
            r"\bbeacon(?:s|ing)?\s+(?:back\s+)?(?:to|with)\s",
        ),
    ),
    PatternRule(
        rule_id="mixed_script_token",
        category=CONFUSABLE,
        severity=WARN,
        keywords=(),
        finder=_find_mixed_script_token,
    ),
)
