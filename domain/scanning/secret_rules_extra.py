"""More secret rules (ADR 0025): provider formats gitleaks knows that the first table lacked,
and context rules where a keyword makes a short or low-entropy value count.

Context rules and what they refuse:

* `password=`/`passwd:`/`pwd=`/`PGPASSWORD=`... with a value of 4 or more characters, unless
  the value is a reference (`${VAR}`, `$VAR`, `{{ tpl }}`, `<your password>`, `settings.PW`,
  `os.environ[...]`, a call), a documented placeholder (`changeme`, `example`, `xxxx`,
  `your...`), a type or flag word (`str`, `required`, `none`, `true`), a plain lower-case
  identifier without digits (`password=password`, `password=user_password`), or a camelCase
  identifier without digits. So `password=hunter2` and `DB_PASSWORD=Winter_64` are refused;
  `password: required` and `password = getpass()` are not. All-lower-case dictionary words
  (`password=sunshine`) are not refused: they look exactly like variable names in code.
* `.netrc` lines (`machine h login u password p`, `default login u password p`).
* `secret=`/`token=`/`api_key=` values: the generic rule; hex values need a credential word in
  the name (not `sha`/`hash`/`commit`...), letter-only values need mixed case with many capitals.
* Authorization headers with any scheme (Bearer, Token, Basic, SSWS, ApiKey...) and API-key
  headers (`X-API-Key:`, `X-Auth-Token:`, `PRIVATE-TOKEN:`).
* "<provider> token <value>" in prose: a credential word (token, secret, password, api key,
  access key, credential) followed directly by a long, high-entropy value.

Pure: standard library and attrs only; every repetition is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pi_hermes_memory.domain.scanning.rules import (
    SecretRule,
    _has_digit_and_letter,
    _not_placeholder,
    _rx,
    is_hex_digest,
    is_placeholder,
    is_reference,
    is_uuid,
    shannon_entropy,
)

_B = r"(?<![A-Za-z0-9_])"
_E = r"(?![A-Za-z0-9_])"
_ED = r"(?![A-Za-z0-9_-])"

_TYPE_WORDS = frozenset(
    (
        "none",
        "null",
        "nil",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "str",
        "string",
        "text",
        "int",
        "bool",
        "bytes",
        "secret",
        "secretstr",
        "optional",
        "required",
        "hidden",
        "masked",
        "redacted",
        "empty",
        "unset",
        "undefined",
        "default",
        "prompt",
        "random",
        "generated",
    )
)
_YAML_TAG = re.compile(r"![A-Za-z]{1,16}")  # `password: !vault |`, CloudFormation `!Ref`
_LOWER_IDENT = re.compile(r"[a-z_][a-z_]*(?:\.[a-z_][a-z_]*)*")
_CAMEL_IDENT = re.compile(r"[a-z]+(?:[A-Z][a-z]+)+")
_BAD_NAME_PARTS = frozenset(
    (
        "hash",
        "hashed",
        "digest",
        "file",
        "path",
        "env",
        "len",
        "length",
        "policy",
        "min",
        "max",
        "regex",
        "pattern",
        "field",
        "hint",
        "reset",
        "prompt",
        "label",
        "rule",
        "rules",
        "salt",
        "expiry",
        "expires",
        "expiration",
        "age",
        "count",
        "manager",
        "store",
        "vault",
        "strength",
        "confirm",
        "confirmation",
        "input",
        "format",
        "type",
        "validator",
        "changed",
        "required",
        "mode",
        "less",
        "cmd",
        "command",
        "url",
        "var",
        "name",
        "key",
        "id",
    )
)
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def _bad_name(name: str) -> bool:
    """`password_hash`, `passwordMinLength`, `PASSWORD_FILE`: the value is not the password.

    Whole name parts only: `admin_password` is a password (its `admin` is not `min`)."""
    parts = re.split(r"[_.-]+", _CAMEL_BOUNDARY.sub("_", name).lower())
    return any(p in _BAD_NAME_PARTS for p in parts) or "passwordless" in name.lower()


def _short_value_is_secret(value: str) -> bool:
    """A value after a password keyword: refuse unless it looks like a reference or a word."""
    if len(value) < 4 or is_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    if shannon_entropy(value) < 1.5:  # aaaaaaaa1111, 1111
        return False
    if _YAML_TAG.fullmatch(value) or value.lower() in _TYPE_WORDS:
        return False
    if value.endswith(("()", ")")) or "(" in value or "[" in value:
        return False
    if _LOWER_IDENT.fullmatch(value) or _CAMEL_IDENT.fullmatch(value):
        return False
    return not value.isdigit() or len(value) >= 6


def _password_assignment(m: re.Match[str]) -> bool:
    if _bad_name(m.group("name")):
        return False
    return _short_value_is_secret(m.group("value"))


def _netrc(m: re.Match[str]) -> bool:
    """In a .netrc line the word after `password` is the password, never a variable name."""
    value = m.group("value")
    if len(value) < 4 or is_reference(value) or is_placeholder(value):
        return False
    return value.lower() not in _TYPE_WORDS and shannon_entropy(value) >= 1.5


def _many_capitals(value: str) -> bool:
    letters = [c for c in value if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    lower = len(letters) - upper
    return len(value) >= 10 and upper >= 3 and lower >= 2 and upper >= 0.3 * len(letters)


def _header_value(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_reference(value) or is_placeholder(value) or (is_uuid(value) and len(value) < 30):
        return False
    if is_hex_digest(value):
        return len(value) >= 16
    return _has_digit_and_letter(value) or _many_capitals(value)


_STRONG_NAME = re.compile(r"api|access|secret|token|pass|pwd|cred|private|auth", re.IGNORECASE)
_HASHY_NAME = re.compile(
    r"sha|hash|digest|checksum|commit|etag|fingerprint|revision|rev\b|cache|sort|trace|span|"
    r"request|session_id|idempot|nonce",
    re.IGNORECASE,
)


def _prose_value(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    before = m.string[max(0, m.start() - 24) : m.start()]
    if _HASHY_NAME.search(before) is not None:
        return False
    if is_hex_digest(value):
        return len(value) >= 32 and shannon_entropy(value) > 3.0
    return (_has_digit_and_letter(value) or _many_capitals(value)) and shannon_entropy(value) > 3.5


def _context_key(window: int, words: re.Pattern[str]) -> Callable[[re.Match[str]], bool]:
    def check(m: re.Match[str]) -> bool:
        if is_placeholder(m.group(0)):
            return False
        before = m.string[max(0, m.start() - window) : m.start()]
        if re.search(r"sha(?:256|384|512)-\Z|integrity", before, re.IGNORECASE):
            return False
        return words.search(before) is not None

    return check


_AZURE_WORDS = re.compile(
    r"azure|storage|account|accountkey|access key|primary key|secondary key|key\b|_key|secret",
    re.IGNORECASE,
)
_HEROKU_UUID = (
    r"(?i:heroku)[\w .'\"-]{0,24}?(?i:key|token|auth|secret|password)[\w .:'\"=-]{0,24}?"
    r"(?<![0-9A-Fa-f])([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
    r"-[0-9a-fA-F]{12})(?![0-9A-Fa-f-])"
)

EXTRA_SECRET_RULES: tuple[SecretRule, ...] = (
    SecretRule(
        rule_id="replicate-api-token",
        keywords=("r8_",),
        pattern=_rx(_B + r"r8_[A-Za-z0-9]{37}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="discord-webhook-url",
        keywords=("discord",),
        pattern=_rx(
            r"https?://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/[0-9]{16,20}/"
            r"[A-Za-z0-9_-]{60,80}+"
        ),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="discord-token-shape",
        keywords=(".",),
        pattern=_rx(
            _B + r"[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}" + _ED
        ),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="postman-api-token",
        keywords=("pmak-",),
        pattern=_rx(_B + r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="azure-storage-key",
        keywords=("==",),
        pattern=_rx(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{86}==(?![A-Za-z0-9+/=])"),
        min_entropy=4.5,
        check=_context_key(160, _AZURE_WORDS),
    ),
    SecretRule(
        rule_id="azure-sas-token",
        keywords=("sig=",),
        pattern=_rx(
            r"(?i:\bsv=20[0-9]{2}-[0-9]{2}-[0-9]{2}&[\w%&=:.+/-]{0,600}?(?<=[?&])sig=)"
            r"(?P<value>[A-Za-z0-9%+/]{20,200}+)"
        ),
        group="value",
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="azure-shared-access-key",
        keywords=("sharedaccesskey=",),
        pattern=_rx(r"(?i:sharedaccesskey)=(?P<value>[A-Za-z0-9+/]{40,90}+={0,2})"),
        group="value",
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="azure-ad-client-secret",
        keywords=("q~",),
        pattern=_rx(
            r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}"
            r"(?![A-Za-z0-9_~.-])"
        ),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="heroku-api-key",
        keywords=("hrku-",),
        pattern=_rx(_B + r"HRKU-AA[0-9A-Za-z_-]{58}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="heroku-api-key-uuid",
        keywords=("heroku",),
        pattern=_rx(_HEROKU_UUID),
        group=1,
    ),
    SecretRule(
        rule_id="doppler-token",
        keywords=("dp.",),
        pattern=_rx(_B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,44}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="pulumi-access-token",
        keywords=("pul-",),
        pattern=_rx(_B + r"pul-[a-f0-9]{40}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="flyio-token",
        keywords=("fo1_", "fm1", "fm2_"),
        pattern=_rx(_B + r"(?:fo1_[A-Za-z0-9_-]{43}|fm[12][ar]?_[A-Za-z0-9+/]{100,}+={0,3})" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="supabase-token",
        keywords=("sbp_",),
        pattern=_rx(_B + r"sbp_[a-f0-9]{40}" + _E),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="tailscale-key",
        keywords=("tskey-",),
        pattern=_rx(
            _B + r"tskey-(?:api|auth|client|scim|webhook)-[A-Za-z0-9]{6,20}-[A-Za-z0-9]{16,64}" + _E
        ),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="docker-hub-pat",
        keywords=("dckr_",),
        pattern=_rx(_B + r"dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,32}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="newrelic-key",
        keywords=("nrak-", "nrii-", "nrjs-", "nral"),
        pattern=_rx(
            _B + r"(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9_-]{32}|NRJS-[a-f0-9]{19}"
            r"|[a-f0-9]{36}NRAL)" + _ED
        ),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="square-access-token-eaaa",
        keywords=("eaaa",),
        pattern=_rx(_B + r"EAAA[A-Za-z0-9_-]{60}" + _ED),
        min_entropy=3.5,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="mailgun-api-key",
        keywords=("key-", "-"),
        pattern=_rx(_B + r"(?:key-[a-f0-9]{32}|[a-f0-9]{32}-[a-f0-9]{8}-[a-f0-9]{8})" + _ED),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="mailchimp-api-key",
        keywords=("-us",),
        pattern=_rx(_B + r"[a-f0-9]{32}-us[0-9]{1,2}" + _E),
        min_entropy=3.0,
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="contentful-token",
        keywords=("cfpat-",),
        pattern=_rx(_B + r"CFPAT-[A-Za-z0-9_-]{43}" + _ED),
        check=_not_placeholder,
    ),
    SecretRule(
        rule_id="netrc-password",
        keywords=("password",),
        pattern=_rx(
            r"(?<![A-Za-z0-9_.-])(?:machine[ \t]++[^\s]{1,253}+|default)"
            r"(?:\s{1,8}+(?:login|account)[ \t]++[^\s]{1,256}+){0,2}"
            r"\s{1,8}+password[ \t]++(?P<value>[^\s]{1,256}+)"
        ),
        group="value",
        check=_netrc,
    ),
    SecretRule(
        rule_id="authorization-header",
        keywords=("authorization",),
        pattern=_rx(
            r"(?i:authorization)[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?"
            r"(?i:bearer|token|ssws|apikey|api-key|key|hmac|digest|sharedkey|basic|otoken)"
            r"[ \t]{1,4}+(?P<value>[A-Za-z0-9._~+/:-]{12,2048}+=*)"
        ),
        group="value",
        check=_header_value,
    ),
    SecretRule(
        rule_id="api-key-header",
        keywords=("key", "token"),
        pattern=_rx(
            r"(?<![A-Za-z0-9_-])(?i:x-api-key|x-apikey|api-key|apikey|x-auth-token"
            r"|x-access-token|private-token|x-api-token|x-goog-api-key|ocp-apim-subscription-key)"
            r"[\"']?[ \t]{0,4}:[ \t]{0,4}[\"']?(?P<value>[A-Za-z0-9._~+/=-]{16,512}+)"
        ),
        group="value",
        check=_header_value,
    ),
)

#: Runs after the generic assignment rule (which names `DB_PASSWORD=<long random>` as before);
#: it adds the short and low-entropy values that a password keyword makes count.
PASSWORD_ASSIGNMENT = SecretRule(
    rule_id="password-assignment",
    keywords=("pass", "pwd"),
    pattern=_rx(
        r"(?<![A-Za-z0-9_.-])(?P<name>-{0,2}(?:[A-Za-z0-9]{0,24}(?i:passw(?:or)?d|passphrase)"
        r"|(?:[A-Za-z0-9]{1,20}[_.-]){0,3}(?i:pwd|pass))[A-Za-z0-9_]{0,16})"
        r"[\"']?[ \t]{0,4}(?::=|=>|=|:)[ \t]{0,4}[\"'`]?"
        r"(?P<value>[^\s\"'`,;()\[\]{}<>]{1,128}+)(?![^\s\"'`,;)\]}>])"
    ),
    group="value",
    check=_password_assignment,
)

#: Runs after the generic assignment rule, which names `api_key = ...` better.
CREDENTIAL_IN_PROSE = SecretRule(
    rule_id="credential-in-prose",
    keywords=("token", "secret", "password", "key", "credential", "passwd"),
    pattern=_rx(
        r"(?<![A-Za-z0-9_-])(?i:tokens?|secrets?|passwords?|passwd|api[ _-]?keys?"
        r"|access[ _-]keys?|credentials?|ssws)"
        r"(?:[ \t]{1,4}+(?i:is|was|=|:|->|value|for\s+\w{1,20}\s+is))?[ \t]{1,4}+"
        r"[\"'`(]?(?P<value>[A-Za-z0-9_./+=~-]{16,512}+)"
    ),
    group="value",
    check=_prose_value,
)


#: The generic assignment rule's own name-based check, shared with scan_rules' generic rule.
STRONG_NAME = _STRONG_NAME
HASHY_NAME = _HASHY_NAME
