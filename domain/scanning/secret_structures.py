"""Secret rules built from the structure around a value, not from a list of phrasings (ADR 0066).

* `cli-password-flag`: a client's password option on its command line. Long options named for
  a secret (`--password X`, `--db-password=X`, `--token X`, `--client-secret X`) on any
  command; short options only for the client that defines them (`mysql -pX`, `redis-cli -a X`,
  `docker|podman login -p X`, `sshpass -p X`, `mongosh -p X`, `sqlcmd -P X`, `ldapsearch -w X`,
  `zip -P X`, `7z -pX`, `openssl -passout pass:X`, `keytool -storepass X`, ...). A value that is
  a reference (`$VAR`, `"$(cmd)"`, `env:NAME`, `file:path`) or a flag is not one.
* `password-hash`: the formats of stored password hashes, which can be cracked offline:
  crypt(3) (`$1$`, `$5$`, `$6$`, `$y$`, `$apr1$` as htpasswd writes them, bcrypt `$2y$NN$`),
  Argon2 (`$argon2id$v=..$m=..,t=..,p=..$`), LDAP `{SSHA}`/`{SHA}`, Django `pbkdf2_sha256$`.
* `url-token-userinfo`: a URL whose user part is a token (`https://<key>@o1.ingest.sentry.io/2`,
  `https://<token>@github.com/org/repo`); `user:password@` stays with `url-credentials`.
* `aws-access-key-pair`: an AWS key id followed within a few characters by a 40-character
  secret (`AKIA… / wJal…`, `AKIA…:…`, one per line).
* `provider-key-assignment`: a value with a provider prefix (`sk-`, `ghp_`, `xoxb-`, ...)
  assigned to a secret-named variable, whatever the entropy of its body: `export
  OPENAI_API_KEY=sk-<anything>`. Documented placeholders (`sk-...`, `sk-your-key`) stay out.
* `credential-word`: the word for password or secret in 30-odd languages, then a colon, an
  equals sign or a copula (is, lautet, est, es, é, è, är, jest, to, 是, は, 는, adalah, là,
  है ...), then a value that is shaped like a credential (letters with digits or symbols, not a
  word, a reference or a number). "Das Passwort lautet Sommer2024!" is refused; "Das Passwort
  liegt im Tresor" and "the password is at least 12 characters" are not.

Pure: standard library and attrs only; every repetition is bounded.
"""

from __future__ import annotations

import re

from pi_hermes_memory.domain.scanning.rules import (
    SecretRule,
    _rx,
    is_hex_digest,
    is_placeholder,
    is_reference,
    is_uuid,
    shannon_entropy,
)
from pi_hermes_memory.domain.scanning.secret_rules_extra import _bad_name, _short_value_is_secret

_QUOTED_VALUE = (
    r"(?:'(?P<sq>[^'\n]{1,128}+)'|\"(?P<dq>[^\"\n]{1,128}+)\""
    r"|(?P<bare>(?!-)[^\s'\"`;|&<>(){}]{1,128}+))"
)


def _flag_value(m: re.Match[str]) -> str:
    return m.group("sq") or m.group("dq") or m.group("bare") or ""


def _is_value_reference(value: str) -> bool:
    lowered = value.lower()
    return (
        is_reference(value)
        or "$(" in value
        or "`" in value
        or lowered.startswith(("env:", "file:", "fd:", "stdin", "-", "@"))
        or lowered in ("prompt", "ask", "stdin", "-")
    )


def _cli_value_is_secret(value: str) -> bool:
    """A value given to a password option: anything that is not a reference or a filler.

    On a command line a password option's argument is the password, so a plain word counts
    (`redis-cli -a foobared`); references, placeholders and type words do not."""
    if value.startswith("pass:"):
        value = value[5:]
    if len(value) < 4 or _is_value_reference(value) or is_placeholder(value):
        return False
    if shannon_entropy(value) < 1.5:
        return False
    return _short_value_is_secret(value) or (value.isalpha() and len(value) >= 6)


# tool -> (options whose value is attached, options whose value follows, subcommand needed)
_TOOL_FLAGS: dict[str, tuple[frozenset[str], frozenset[str], str]] = {}


def _tools(names: str, attached: str = "", spaced: str = "", sub: str = "") -> None:
    for name in names.split():
        _TOOL_FLAGS[name] = (frozenset(attached.split()), frozenset(spaced.split()), sub)


_tools("mysql mysqldump mysqladmin mysqlimport mysqlcheck mysqlshow mariadb mariadb-dump", "-p")
_tools("redis-cli keydb-cli valkey-cli", "-a", "-a")
_tools("sshpass", "-p", "-p")
_tools("docker podman nerdctl buildah skopeo helm oras crane regctl", "", "-p", "login")
_tools("mongo mongosh mongodump mongorestore mongoexport mongoimport", "", "-p")
_tools("sqlcmd bcp isql osql", "-P", "-P")
_tools("ldapsearch ldapmodify ldapadd ldapdelete ldappasswd ldapwhoami", "", "-w")
_tools("zip unzip", "", "-P")
_tools("7z 7za 7zr rar unrar", "-p")
_tools("openssl", "", "-passout -passin -pass -k -password")
_tools("keytool", "", "-storepass -keypass -srcstorepass -deststorepass")
_tools("az", "", "-p", "login")
_tools("ipmitool mosquitto_pub mosquitto_sub", "", "-P")
_tools("ssh-keygen", "", "-N -P")

_TOOL_NAMES = sorted(_TOOL_FLAGS, key=len, reverse=True)
_TOOL_RX = re.compile(
    r"(?<![\w./-])(?P<tool>" + "|".join(re.escape(t) for t in _TOOL_NAMES) + r")(?![\w-])"
)
_SHORT_FLAG = _rx(
    r"(?<![^\s'\"`(])(?P<flag>-[A-Za-z][A-Za-z]{0,14})(?P<sep>[ \t]{1,4}|=)?" + _QUOTED_VALUE
)
_SECRET_LONG_FLAG = (
    r"--(?P<name>(?:[A-Za-z0-9]{1,16}-){0,3}(?:password|passwd|pass|pwd|passphrase|token"
    r"|secret|api-key|apikey|auth-token|access-key|secret-key|client-secret|private-key"
    r"|access-token|bearer-token))"
)
_LONG_FLAG = _rx(r"(?<![^\s'\"`(])" + _SECRET_LONG_FLAG + r"(?:[ \t]{1,4}|=)" + _QUOTED_VALUE)
_LONG_BAD = frozenset(("stdin", "file", "env", "prompt", "cmd", "command", "helper", "store"))


def _short_flag_check(m: re.Match[str]) -> bool:
    text, flag, sep = m.string, m.group("flag"), m.group("sep") or ""
    floor = max(0, m.start() - 512)
    line_start = text.rfind("\n", floor, m.start()) + 1 or floor
    given = _flag_value(m)
    for t in _TOOL_RX.finditer(text, line_start, m.start()):
        attached, spaced, sub = _TOOL_FLAGS[t.group("tool")]
        if sub and sub not in text[t.end() : m.start()].split():
            continue
        if (sep == "" and flag in attached) or (sep != "" and flag in spaced):
            value = given
            break
        if flag[:2] in attached and len(flag) > 2 and flag not in spaced:
            # `-pHunter2`: the regex took the password's first letters as part of the option.
            value = flag[2:] + (given if sep == "" else "")
            break
    else:
        return False
    return _cli_value_is_secret(value)


def _long_flag_check(m: re.Match[str]) -> bool:
    name = m.group("name").lower()
    if any(part in _LONG_BAD for part in name.split("-")) or _bad_name(name.replace("-", "_")):
        return False
    value = _flag_value(m)
    if any(w in name for w in ("pass", "pwd")):
        return _cli_value_is_secret(value)
    return _token_value(value)


def _token_value(value: str) -> bool:
    if len(value) < 12 or _is_value_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    if is_hex_digest(value):
        return len(value) >= 16 and shannon_entropy(value) > 3.0
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and shannon_entropy(value) > 3.0


_SHORT_FLAG_KEYWORDS = tuple(sorted(_TOOL_FLAGS))

# Passwords given as a positional argument or in a statement, where the grammar says so.
_POSITIONAL = _rx(
    r"(?<![\w-])(?:htpasswd[ \t]{1,4}-[A-Za-z]{0,4}b[A-Za-z]{0,4}"
    r"(?:[ \t]{1,4}[^\s'\"]{1,256}+){1,2}"
    r"|rabbitmqctl[ \t]{1,4}(?:add_user|change_password)[ \t]{1,4}[^\s'\"]{1,256}+"
    r"|net[ \t]{1,4}user[ \t]{1,4}[^\s'\"/]{1,256}+"
    r"|(?i:identified)[ \t]{1,4}(?i:by)(?:[ \t]{1,4}(?i:password))?"
    r"|(?i:with)(?:[ \t]{1,4}(?i:encrypted))?[ \t]{1,4}(?i:password))"
    r"[ \t]{1,4}" + _QUOTED_VALUE
)
_PIPED = _rx(
    r"(?<![\w-])(?:echo|printf)[ \t]{1,4}(?:-n[ \t]{1,4})?"
    + _QUOTED_VALUE
    + r"[ \t]{0,4}\|[ \t]{0,4}(?:sudo[ \t]{1,4})?"
    r"(?P<sink>(?:docker|podman|nerdctl|helm|oras|buildah|skopeo)[ \t]{1,4}"
    r"(?:registry[ \t]{1,4})?login\b[^\n]{0,200}?--password-stdin|chpasswd\b)"
)


def _positional_check(m: re.Match[str]) -> bool:
    return _cli_value_is_secret(_flag_value(m))


def _piped_check(m: re.Match[str]) -> bool:
    value = _flag_value(m)
    if m.group("sink").startswith("chpasswd"):
        value = value.partition(":")[2]
    return _cli_value_is_secret(value)


POSITIONAL_PASSWORD = SecretRule(
    rule_id="cli-password-argument",
    keywords=("htpasswd", "rabbitmqctl", "net user", "identified", "password"),
    pattern=_POSITIONAL,
    check=_positional_check,
)
PIPED_PASSWORD = SecretRule(
    rule_id="cli-password-argument",
    keywords=("--password-stdin", "chpasswd"),
    pattern=_PIPED,
    check=_piped_check,
)

CLI_SHORT_FLAG = SecretRule(
    rule_id="cli-password-flag",
    keywords=_SHORT_FLAG_KEYWORDS,
    pattern=_SHORT_FLAG,
    group=0,
    check=_short_flag_check,
)
CLI_LONG_FLAG = SecretRule(
    rule_id="cli-password-flag",
    keywords=("--",),
    pattern=_LONG_FLAG,
    group=0,
    check=_long_flag_check,
)

# --------------------------------------------------------------------------------------------
# Password hashes

_C64 = r"[./A-Za-z0-9]"
_PASSWORD_HASH = _rx(
    r"(?<![\w$])(?:"
    r"\$(?:1|5|6|md5|sha1|apr1)\$(?:rounds=[0-9]{1,9}\$)?" + _C64 + r"{1,16}\$" + _C64 + r"{22,86}"
    r"|\$2[abxy]?\$[0-9]{2}\$" + _C64 + r"{53}"
    r"|\$(?:y|gy|7)\$" + _C64 + r"{1,64}\$" + _C64 + r"{1,64}\$" + _C64 + r"{22,86}"
    r"|\$argon2(?:id|i|d)\$(?:v=[0-9]{1,3}\$)?m=[0-9]{1,9},t=[0-9]{1,4},p=[0-9]{1,4}"
    r"\$[A-Za-z0-9+/]{8,128}\$[A-Za-z0-9+/]{16,128}"
    r"|\$scrypt\$[A-Za-z0-9=,$+/.]{20,200}"
    r"|\{(?i:ssha|sha|smd5|md5|ssha256|ssha512|sha256|sha512|crypt|pbkdf2[a-z0-9-]{0,12})\}"
    r"[A-Za-z0-9+/.$=]{16,200}+"
    r"|pbkdf2_sha(?:1|256|512)\$[0-9]{3,7}\$[A-Za-z0-9]{4,64}\$[A-Za-z0-9+/]{20,88}={0,2}"
    r")"
)


def _hash_is_real(m: re.Match[str]) -> bool:
    value = m.group(0)
    tail = value.rsplit("$", 1)[-1].rsplit("}", 1)[-1]
    return not is_placeholder(value) and shannon_entropy(tail) > 3.0


PASSWORD_HASH = SecretRule(
    rule_id="password-hash",
    keywords=(
        "$1$",
        "$5$",
        "$6$",
        "$2",
        "$apr1$",
        "$md5$",
        "$y$",
        "$gy$",
        "$7$",
        "$argon2",
        "$scrypt$",
        "{ssha",
        "{sha",
        "{smd5",
        "{md5",
        "{crypt",
        "{pbkdf2",
        "pbkdf2_sha",
    ),
    pattern=_PASSWORD_HASH,
    check=_hash_is_real,
)

# --------------------------------------------------------------------------------------------
# A token as the user part of a URL (Sentry DSNs, git remotes, package indexes)

_URL_TOKEN = _rx(
    r"(?i:https?|ftps?|git|ssh|wss?|amqps?|redis|rediss|mongodb(?:\+srv)?|postgres(?:ql)?"
    r"|mysql)://(?P<value>[A-Za-z0-9_.~%-]{16,256}+)@(?P<host>[A-Za-z0-9.-]{1,253})"
)


def _url_token_check(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_placeholder(value) or is_reference(value) or "%" in value:
        return False
    if is_hex_digest(value):
        return len(value) >= 20 and shannon_entropy(value) > 3.0
    has_digit = any(c.isdigit() for c in value)
    has_alpha = any(c.isalpha() for c in value)
    return has_digit and has_alpha and shannon_entropy(value) > 3.3


URL_TOKEN_USERINFO = SecretRule(
    rule_id="url-token-userinfo",
    keywords=("://",),
    pattern=_URL_TOKEN,
    group="value",
    check=_url_token_check,
)

# --------------------------------------------------------------------------------------------
# AWS key id next to its secret

_AWS_PAIR = _rx(
    r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"[^\n]{0,48}?(?:\n[ \t>*-]{0,8})?(?<![A-Za-z0-9/+])(?P<value>[A-Za-z0-9/+]{40})"
    r"(?![A-Za-z0-9/+=])"
)


def _aws_pair_check(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_placeholder(m.group(0)) or is_hex_digest(value):
        return False
    return shannon_entropy(value) > 4.0


AWS_ACCESS_KEY_PAIR = SecretRule(
    rule_id="aws-access-key-pair",
    keywords=("akia", "asia", "abia", "acca", "a3t"),
    pattern=_AWS_PAIR,
    group="value",
    check=_aws_pair_check,
)

# --------------------------------------------------------------------------------------------
# A provider-prefixed value after a secret-named variable, whatever its entropy

_PROVIDER_PREFIX = (
    r"(?:sk-(?:proj-|ant-(?:api|admin)[0-9]{2}-|svcacct-|admin-|or-v1-)?|sk_(?:live|test|prod)_"
    r"|rk_(?:live|test|prod)_|pk_live_|whsec_|gsk_|gh[pousr]_|github_pat_|glpat-|xox[abposr]-"
    r"|xapp-|hf_|npm_|pypi-|AIza|SG\.|xai-|pplx-|r8_|do[por]_v1_|lin_api_|ntn_|dckr_pat_"
    r"|hv[sb]\.|tskey-|shp(?:at|ca|pa|ss)_|sntry[us]_|glsa_|AKIA|ASIA)"
)
_PROVIDER_ASSIGNMENT = _rx(
    r"(?P<name>(?i:api[_.-]?key|apikey|token|secret|passw(?:or)?d|pwd"
    r"|auth|credential|access[_.-]?key)[A-Za-z0-9_]{0,24})"
    r"(?:[\"'\]]{0,3}[ \t]{0,4}(?::=|=>|=|:)|[ \t]{1,4})[ \t]{0,4}[\"'`]?"
    r"(?P<value>" + _PROVIDER_PREFIX + r"[A-Za-z0-9_.-]{8,300}+)(?![A-Za-z0-9_.-])"
)


def _provider_assignment_check(m: re.Match[str]) -> bool:
    value = m.group("value")
    if is_placeholder(value) or ".." in value:
        return False
    body = re.sub("^" + _PROVIDER_PREFIX, "", value)
    # The whole variable name, from the start of the word the keyword sits in.
    start = m.start("name")
    floor = max(0, start - 48)
    while start > floor and (m.string[start - 1].isalnum() or m.string[start - 1] in "_.-"):
        start -= 1
    parts = re.split(r"[_.-]+", m.string[start : m.end("name")].lower())
    return len(set(body)) >= 3 and not any(p in _NOT_A_KEY_NAME for p in parts)


_NOT_A_KEY_NAME = frozenset(
    (
        "hash",
        "hashed",
        "digest",
        "file",
        "path",
        "url",
        "name",
        "id",
        "prefix",
        "format",
        "pattern",
        "regex",
        "header",
        "field",
        "type",
        "len",
        "length",
        "example",
        "sample",
    )
)


PROVIDER_KEY_ASSIGNMENT = SecretRule(
    rule_id="provider-key-assignment",
    keywords=(
        "sk-",
        "sk_",
        "rk_",
        "pk_live_",
        "whsec_",
        "gsk_",
        "gh",
        "github_pat_",
        "glpat-",
        "xox",
        "xapp-",
        "hf_",
        "npm_",
        "pypi-",
        "aiza",
        "sg.",
        "xai-",
        "pplx-",
        "r8_",
        "_v1_",
        "lin_api_",
        "ntn_",
        "dckr_pat_",
        "hvs.",
        "hvb.",
        "tskey-",
        "shp",
        "sntry",
        "glsa_",
        "akia",
        "asia",
    ),
    pattern=_PROVIDER_ASSIGNMENT,
    group="value",
    check=_provider_assignment_check,
)

# --------------------------------------------------------------------------------------------
# The word for password in many languages, then a value

_PW_WORDS_LATIN = (
    r"passwor[dt]s?|passwd|pwd|kennwort|contrase[ñn]as?|clave|senhas?|mot[ _-]?de[ _-]?passe"
    r"|parola(?:s[ıi])?|[şs]ifre(?:si)?|has[łl]o|wachtwoord|l[öo]senord(?:et)?|passord(?:et)?"
    r"|adgangskode|salasana|jelsz[óo]|heslo|kata[ _]?sandi(?:nya)?|m[ậa]t[ _]?kh[ẩa]u|lozinka"
    r"|geslo|parol[ăa]|nenosiri|passphrase"
)
_PW_WORDS_OTHER = (
    r"пароль|парол[ья]|лозинка|κωδικός|密码|密碼|口令|パスワード|暗証番号|비밀번호|암호"
    r"|पासवर्ड|कूटशब्द|পাসওয়ার্ড|كلمة\s?(?:المرور|السر)|رمز\s?عبور|گذرواژه|پاس\s?ورڈ|סיסמה"
    r"|รหัสผ่าน|கடவுச்சொல்|పాస్‌?వర్డ్|పాస్వర్డ్"
)
# A copula after which a credential-shaped value counts ("is", "lautet", "est", "é", "jest"...).
_COPULA = r"is|was|lautet|ist|est|es|era|é|è|är|jest|adalah|yaitu|ialah|là|это|olan"
# Ambiguous in another language ("to", "es", "er", "je", "ni", "-"): the value must be strong.
_WEAK_COPULA = r"to|er|je|ni|dir|dır|—|-|->|=>"
_ENGLISH_WORD = re.compile(r"[A-Za-z0-9_]*(?i:password|passwd|pwd|passphrase)s?")
_CJK_COPULA = r"是|为|為|は|が|는|은|이|가"
_CREDENTIAL_WORD = re.compile(
    r"(?:(?<![À-ɏ])(?P<lw>(?i:" + _PW_WORDS_LATIN + r")[A-Za-z0-9_]{0,16})"
    r"|(?P<ow>" + _PW_WORDS_OTHER + r"))"
    # Up to four words of qualifier ("für den Server", "del database", "от сервера") before
    # a connector; none without one ("Пароль Lx9!mm22", "पासवर्ड X है").
    r"(?:(?P<filler>(?:[^\S\n]{1,3}[^\s:=：\"'`]{1,24}+){0,4}?)"
    r"(?:(?P<conn>[^\S\n]{0,3}[:=：]|[^\S\n]{1,3}(?:" + _COPULA + r")(?=[^\S\n])"
    r"|[^\S\n]{0,3}(?:" + _CJK_COPULA + r"))"
    r"|(?P<weak>[^\S\n]{1,3}(?:" + _WEAK_COPULA + r")(?=[^\S\n])))|)"
    r"[^\S\n]{0,3}[\"'«“„`]?(?P<value>[!-~]{4,128}?)[\"'»”`]?"
    r"(?=[\s,;。、，]|[.!?](?:\s|$)|$)",
    re.IGNORECASE,
)
_NUMBER_UNIT = re.compile(r"[0-9]+(?:[a-z]{1,6}|\+)?|v?[0-9]+(?:\.[0-9]+)+", re.IGNORECASE)
_COPULA_AFTER = re.compile(
    r"[!?.,;:'\"»”]{0,3}[^\S\n]{1,3}(?:है|हैं|ہے|hai|ist|です|입니다|이다|dir|dır)(?=\W|$)"
)


def _credential_shape(value: str, strong: bool) -> bool:
    """Letters with digits or symbols, not a word, a number, a version, a path or a reference."""
    if len(value) < 6 or is_reference(value) or is_placeholder(value) or is_uuid(value):
        return False
    if _NUMBER_UNIT.fullmatch(value) or "://" in value or value.startswith(("(", "[", "{")):
        return False
    if any(c in value for c in "()[]{}<>") or value.startswith(("!", "&", "*", "%", "$")):
        return False  # a call, an index, a template, a YAML tag or anchor: code, not a value
    letters = sum(c.isalpha() for c in value)
    digits = sum(c.isdigit() for c in value)
    inner = value[1:-1]
    inner_symbol = any(not c.isalnum() for c in inner)
    if letters == 0 or shannon_entropy(value) < 1.5:
        return False
    inner_upper = any(c.isupper() for c in value[1:]) and any(c.islower() for c in value)
    if strong:
        return len(value) >= 8 and digits > 0 and (inner_upper or inner_symbol)
    return digits > 0 or inner_upper or (inner_symbol and not _LOWER_WORDS.fullmatch(value))


_LOWER_WORDS = re.compile(r"[a-z]+(?:[._-][a-z]+)*")


def _identifier_start(text: str, at: int, limit: int = 24) -> int:
    floor = max(0, at - limit)
    while at > floor and (
        text[at - 1].isascii() and (text[at - 1].isalnum() or text[at - 1] == "_")
    ):
        at -= 1
    return at


def _credential_word_check(m: re.Match[str]) -> bool:
    word = m.group("lw")
    if word is not None:
        start = _identifier_start(m.string, m.start("lw"))
        if start > 0 and "À" <= m.string[start - 1] <= "ɏ":
            return False  # inside a longer word
        word = m.string[start : m.end("lw")]
    if word is not None and _bad_name(word):
        return False
    value = m.group("value").rstrip(".,;:!?")
    english = word is not None and _ENGLISH_WORD.fullmatch(word) is not None
    conn = (m.group("conn") or "").strip()
    if conn in (":", "=", "："):
        # `password: X` / `password = X` in English is the assignment rules' (code-aware) job.
        return not english and _credential_shape(value, strong=False)
    if conn:
        return _credential_shape(value, strong=False)
    if m.group("weak"):
        return _credential_shape(value, strong=english)
    if (m.group("filler") or "").strip():
        return False
    after = m.string[m.end() : m.end() + 16]
    if _COPULA_AFTER.match(after) is not None:
        return _credential_shape(value, strong=False)
    return _credential_shape(value, strong=True)


_CREDENTIAL_KEYWORDS = (
    "pass",
    "pwd",
    "kennwort",
    "contrase",
    "clave",
    "senha",
    "parol",
    "ifre",
    "has",
    "wachtwoord",
    "senord",
    "adgangskode",
    "salasana",
    "jelsz",
    "heslo",
    "sandi",
    "kh",
    "lozinka",
    "geslo",
    "nenosiri",
    "ароль",
    "арол",
    "лозинка",
    "κωδικός",
    "密码",
    "密碼",
    "口令",
    "パスワード",
    "暗証番号",
    "비밀번호",
    "암호",
    "पासवर्ड",
    "कूटशब्द",
    "পাসওয়ার্ড",
    "كلمة",
    "رمز",
    "گذرواژه",
    "پاس",
    "סיסמה",
    "รหัสผ่าน",
    "கடவுச்சொல்",
    "పాస్",
)

CREDENTIAL_WORD = SecretRule(
    rule_id="credential-word",
    keywords=_CREDENTIAL_KEYWORDS,
    pattern=_CREDENTIAL_WORD,
    group="value",
    check=_credential_word_check,
)

#: In the order the scanner runs them (after the provider and context rules).
STRUCTURAL_SECRET_RULES: tuple[SecretRule, ...] = (
    PASSWORD_HASH,
    AWS_ACCESS_KEY_PAIR,
    URL_TOKEN_USERINFO,
    CLI_SHORT_FLAG,
    CLI_LONG_FLAG,
    POSITIONAL_PASSWORD,
    PIPED_PASSWORD,
    PROVIDER_KEY_ASSIGNMENT,
)
