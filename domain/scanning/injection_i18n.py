"""Injection rules by intent, in English, Chinese, Japanese, Korean, Spanish, German and French
(ADR 0025).

Each rule pairs two or three vocabularies that must occur close together (one sentence or
line), so an ordinary note that uses one of the words is not flagged:

* `override_instructions`: an ignore/forget/override verb with an instruction noun *and* a
  qualifier that points at the model's own instructions (previous, above, your, system, all).
  "we ignore previous versions of the API" has no instruction noun; "ignore lint warnings" has
  no qualifier.
* `persistent_instruction`: a persistence frame ("remember this forever", "from now on",
  "in every future session", 永远记住, 今後ずっと, 앞으로 항상, a partir de ahora, ab jetzt,
  désormais) with a harmful payload in the same sentence (secrecy, exfiltration, overriding the
  user, revealing the system prompt or keys, destruction). "From now on the build uses Python
  3.12" has no payload.
* `exfiltrate_to_destination`: a send/upload verb, a sensitive object (SSH keys, .env, API keys,
  credentials, passwords, environment variables) and a destination (URL, e-mail, IP) in one
  sentence. "send the report to the team" has no sensitive object and no URL.
* `upload_secret_file`: curl/wget/scp/nc with an upload flag and a sensitive path.
* `roleplay_jailbreak`: a role frame ("you are now", "act as", 你现在是, あなたは今から,
  너는 이제, ahora eres, du bist jetzt, tu es maintenant) with a jailbreak marker (DAN,
  unrestricted, no rules, without filters, 没有任何限制, 制限のない, 제한 없는, sin restricciones,
  ohne Einschränkungen, sans restriction); and "enter DAN/jailbreak/developer mode" phrasings.

All rules run on the NFKC, invisible-stripped, ASCII-lower-cased scan copy; patterns are
case-insensitive for the non-ASCII letters. Every repetition is bounded; finders are linear.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from pi_hermes_memory.domain.scanning.lazy_re import cannot_match, lazy_compile
from pi_hermes_memory.domain.scanning.rules import (
    BLOCK,
    EXFILTRATION,
    PROMPT_INJECTION,
    PatternRule,
)

_I = re.IGNORECASE


def _rx(*parts: str) -> re.Pattern[str]:
    return lazy_compile("|".join(f"(?:{p})" for p in parts), _I)


_SENTENCE_END = lazy_compile(r"[\n。！？!?]|\.(?:\s|$)")


def _sentence(
    text: str, start: int, end: int, before: int = 240, after: int = 240
) -> tuple[int, int]:
    """The sentence (bounded) around [start, end)."""
    lo = max(0, start - before)
    hi = min(len(text), end + after)
    left = lo
    for m in _SENTENCE_END.finditer(text, lo, start):
        left = m.end()
    stop = _SENTENCE_END.search(text, end, hi)
    right = stop.start() if stop is not None else hi
    return left, right


class _Hits:
    """Start offsets of each pattern's matches in one text, found once (linear), then queried
    per window by bisection, so a text with thousands of anchors stays linear."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: dict[re.Pattern[str], list[int]] = {}

    def any(self, pattern: re.Pattern[str], lo: int, hi: int) -> bool:
        starts = self._starts.get(pattern)
        if starts is None:
            starts = [m.start() for m in pattern.finditer(self.text)]
            self._starts[pattern] = starts
        k = bisect.bisect_left(starts, lo)
        return k < len(starts) and starts[k] < hi


def _cooccur(
    anchor: re.Pattern[str],
    *others: re.Pattern[str],
    before: int = 240,
    after: int = 240,
) -> Callable[[str], int | None]:
    """First `anchor` hit whose sentence also has a hit of every one of `others`."""

    def find(text: str) -> int | None:
        # a partner that cannot match anywhere in the text (its literal factors are absent)
        # cannot match in any sentence: the anchor, often the costlier pattern, is not even
        # compiled (ADR 0100); the answer is the same
        if any(cannot_match(o, text) for o in others):
            return None
        hits = _Hits(text)
        for m in anchor.finditer(text):
            lo, hi = _sentence(text, m.start(), m.end(), before, after)
            if all(hits.any(o, lo, hi) for o in others):
                return m.start()
        return None

    return find


# --------------------------------------------------------------------------------------------
# Override: verb + instruction noun + qualifier

_OVERRIDE_EN = _rx(
    r"\b(?:ignore|disregard|forget|override|bypass|skip|neglect|overlook|discard|abandon"
    r"|stop\s+(?:following|obeying)|do\s+not\s+(?:follow|obey)|don'?t\s+(?:follow|obey)"
    r"|pay\s+no\s+attention\s+to)\s+(?:\w+\s+){0,4}?"
    r"(?:(?P<strong>instructions?|directions?|directives?|system\s+prompt|prompts?"
    r"|programming)|rules|guidelines|guardrails|restrictions|constraints"
    r"|content\s+polic(?:y|ies)|polic(?:y|ies)|safety\s+(?:filters?|measures?))\b",
    r"\b(?:previous|prior|earlier|original|initial|above|system|your)\s+"
    r"(?:instructions|directions|prompt|directives)\s+(?:are|were|have\s+been|is)\s+(?:now\s+)?"
    r"(?:cancell?ed|void|revoked|null|overridden|no\s+longer\s+(?:valid|in\s+effect|apply))",
    r"\bnew\s+instructions\s+(?:supersede|override|replace|take\s+precedence)",
)
# "ignore all instructions" counts; "ignore all rules in migrations/" (a linter note) does not:
# a weak object (rules, guidelines, policies) needs a qualifier that points at the model.
_OVERRIDE_EN_QUALIFIER = _rx(
    r"\b(?:previous|prior|preceding|earlier|original|initial|above|foregoing|your|system"
    r"|safety|developer|new\s+instructions)\b"
)
_OVERRIDE_EN_WEAK_QUALIFIER = _rx(r"\b(?:all|any|every|these|those|the)\b")
_OVERRIDE_ZH = _rx(
    r"(?:忽略|无视|無視|忽视|忽視|不要理会|不要理會|别管|別管|不用管|忘记|忘記|忘掉|跳过|跳過|绕过|繞過"
    r"|不要遵守|不要遵循|停止遵循|违背|違背|抛开|拋開|放弃|放棄)"
    r"[^\n。！？]{0,16}?(?:指令|指示|命令|规则|規則|提示词|提示詞|系统提示|系統提示|设定|設定|限制|约束|約束"
    r"|准则|準則|守则|守則)",
)
_OVERRIDE_ZH_QUALIFIER = _rx(
    r"之前|以前|先前|上面|上述|以上|前面|所有|全部|一切|你的|您的|系统|系統|原来|原來|原有|初始|安全|开发者|開發者"
)
_OVERRIDE_JA = _rx(
    r"(?:指示|命令|指令|ルール|規則|プロンプト|制約|制限|設定|ガイドライン|ポリシー)[^\n。！？]{0,12}?"
    r"(?:無視|忘れ|従わな|従うな|破棄|取り消|上書き|無効に)",
)
_OVERRIDE_JA_QUALIFIER = _rx(
    r"以前|前の|これまで|今まで|上記|上の|すべて|全て|全部|システム|あなたの|元の|最初の|安全|開発者"
)
_OVERRIDE_KO = _rx(
    r"(?:지시|지침|명령|규칙|프롬프트|설정|제한|가이드라인|정책)[^\n.!?]{0,12}?"
    r"(?:무시|잊어|잊고|잊으|따르지|어기|우회)",
)
_OVERRIDE_KO_QUALIFIER = _rx(
    r"이전|앞의|앞선|위의|위\s|모든|시스템|너의|네\s|당신의|기존|원래|안전|개발자"
)
_OVERRIDE_ROMANCE_GERMANIC = _rx(
    # es
    r"\b(?:ignora|ignore|ignorar|ignoren|olvida|olvidar|olviden|omite|descarta|desobedece"
    r"|anula|no\s+sigas|no\s+obedezcas|deja\s+de\s+seguir|haz\s+caso\s+omiso\s+(?:de|a))\s+"
    r"(?:\w+\s+){0,4}?(?:instrucciones|indicaciones|reglas|normas|directrices|[óo]rdenes"
    r"|restricciones|pautas|prompt)\b",
    # de
    r"\b(?:ignoriere|ignoriert|ignorieren|vergiss|vergesst|vergessen|missachte|missachtet"
    r"|übergehe|umgehe|befolge\s+nicht|folge\s+nicht|hör\s+auf)\s+(?:\w+\s+){0,4}?"
    r"\w{0,12}(?:anweisungen|instruktionen|regeln|vorgaben|richtlinien|befehle|anordnungen"
    r"|prompt|einschränkungen)\b",
    # fr
    r"\b(?:ignore|ignorez|oublie|oubliez|contourne|outrepasse|passe\s+outre|fais\s+abstraction"
    r"|ne\s+tiens\s+pas\s+compte|ne\s+tenez\s+pas\s+compte|ne\s+suis\s+pas|ne\s+suivez\s+pas)"
    r"\s+(?:\S+\s+){0,4}?(?:instructions|consignes|r[èe]gles|directives|prompt|restrictions"
    r"|ordres|param[èe]tres)\b",
)
_OVERRIDE_RG_QUALIFIER = _rx(
    r"\b(?:anteriores|previas|previos|todas|todos|tus|sus|del\s+sistema|originales|iniciales"
    r"|de\s+seguridad|vorherigen|bisherigen|alle|deine|ihre|obigen|früheren|ursprünglichen"
    r"|system\w*|sicherheits\w*|pr[ée]c[ée]dentes|ant[ée]rieures|toutes|tes|vos|du\s+syst[èe]me"
    r"|initiales|originales|ci-dessus|de\s+s[ée]curit[ée])\b",
    r"systemanweisungen|systemprompt",
)


def _find_override(text: str) -> int | None:
    for pattern, qualifier, before in (
        (_OVERRIDE_EN, _OVERRIDE_EN_QUALIFIER, 0),
        (_OVERRIDE_ZH, _OVERRIDE_ZH_QUALIFIER, 8),
        (_OVERRIDE_JA, _OVERRIDE_JA_QUALIFIER, 16),
        (_OVERRIDE_KO, _OVERRIDE_KO_QUALIFIER, 16),
        (_OVERRIDE_ROMANCE_GERMANIC, _OVERRIDE_RG_QUALIFIER, 0),
    ):
        for m in pattern.finditer(text):
            lo = max(0, m.start() - before)
            hi = min(len(text), m.end() + 24)
            if qualifier.search(text, lo, hi) is not None:
                return m.start()
            if (
                pattern is _OVERRIDE_EN
                and m.group("strong")
                and _OVERRIDE_EN_WEAK_QUALIFIER.search(text, m.start(), m.end()) is not None
            ):
                return m.start()
    return None


# --------------------------------------------------------------------------------------------
# Persistence frame + harmful payload

_PERSIST_FRAME = _rx(
    r"\bremember\s+(?:(?:this|that|it|the\s+following)\s+)?(?:forever|permanently|for\s+ever"
    r"|for\s+all\s+time|always)",
    r"\b(?:store|save|keep)\s+(?:this|it|that)\s+(?:\w+\s+){0,3}?(?:permanently|forever)",
    r"\bpermanently\s+(?:remember|store|memorize)",
    r"\bfrom\s+now\s+on\b",
    r"\bfor\s+(?:all|every)\s+future\s+(?:sessions?|conversations?|chats?|tasks?|turns?)",
    r"\bin\s+(?:every|all|each)\s+(?:future\s+)?(?:sessions?|conversations?|chats?)\b",
    r"\bevery\s+time\s+you\s+(?:start|wake|boot|run|begin|load)",
    r"\bat\s+the\s+start\s+of\s+(?:every|each)\s+(?:session|conversation|chat)",
    r"\bnever\s+forget\b",
    r"\bkeep\s+this\s+in\s+(?:your\s+)?memory",
    r"永远记住|永遠記住|永久记住|永久記住|牢记|牢記|从现在开始|從現在開始|从现在起|從現在起|从今以后|從今以後"
    r"|以后每次|以後每次|每次对话|每次對話|今后|今後",
    r"永遠に覚え|ずっと覚え|今後ずっと|これからずっと|これからは|今後は|毎回",
    r"영원히\s*기억|앞으로\s*(?:항상|계속|영원히)|지금부터|항상\s*기억|매번",
    r"\b(?:recuerda|recuerden)\s+(?:esto\s+|eso\s+)?(?:para\s+siempre|siempre)"
    r"|\ba\s+partir\s+de\s+ahora\b|\bde\s+ahora\s+en\s+adelante\b",
    r"\bmerke?\s+dir\s+(?:das|dies|folgendes)?\s*für\s+immer|\bab\s+jetzt\b|\bvon\s+nun\s+an\b"
    r"|\bab\s+sofort\b|\bfür\s+immer\b",
    r"\bsouviens-toi\b[^\n.]{0,30}?pour\s+toujours|\bretiens\b[^\n.]{0,20}?pour\s+toujours"
    r"|\bd[ée]sormais\b|\bà\s+partir\s+de\s+maintenant\b|\bdor[ée]navant\b",
)
_SENSITIVE = (
    r"~/\.ssh|\.ssh/|id_rsa(?!\.pub)|id_ed25519(?!\.pub)|\.env(?![a-z0-9_]|\.example|\.sample)|\.aws/"
    r"|\.netrc|\.npmrc|\.pypirc|\.git-credentials|/etc/passwd|/etc/shadow|hosts\.yml"
    r"|kube/config|\bapi[ -]?keys?\b|\bsecrets?\b|\btokens?\b|\bpasswords?\b|\bprivate\s+keys?\b"
    r"|\bcredentials?\b|\benv(?:ironment)?\s+var(?:iable)?s\b|\bcookies\b|\bkeychain\b"
    r"|\b(?:chat|conversation)\s+history\b|\bsystem\s+prompt\b|系统提示|系統提示|システムプロンプト"
    r"|시스템\s*프롬프트|prompt\s+del\s+sistema|systemprompt|prompt\s+syst[èe]me"
    r"|密钥|秘钥|密鑰|密码|密碼|令牌|凭证|憑證|凭据|憑據|环境变量|環境變數|api\s*キー|パスワード|秘密鍵"
    r"|認証情報|トークン|環境変数|api\s*키|비밀번호|토큰|자격\s*증명|환경\s*변수|\b키\b"
    r"|\bclaves?\b|contraseñas?|credenciales|schlüssel|passw[öo]rter|zugangsdaten"
    r"|\bcl[ée]s\b|mots?\s+de\s+passe|identifiants"
)
_SENSITIVE_RX = _rx(_SENSITIVE)
_OVERRIDE_VERB = _rx(
    r"\b(?:ignore|disregard|override|bypass|ignora|ignoriere|ignorierst|ignoriere)\b",
    r"忽略|无视|無視|忽视|忽視|무시",
)
_OVERRIDE_OBJECT = _rx(
    r"\b(?:user'?s?|instructions?|rules|system|safety|guidelines|polic(?:y|ies)|usuario"
    r"|instrucciones|reglas|nutzers?|benutzers?|anweisungen|regeln|utilisateur|r[èe]gles)\b",
    r"用户|用戶|指令|指示|规则|規則|ユーザー|命令|ルール|사용자|지시|규칙",
)
_SECRECY = _rx(
    r"\b(?:secretly|quietly|silently|covertly)\b|\bwithout\s+(?:telling|asking|informing"
    r"|notifying)\b|\b(?:don'?t|do\s+not|never)\s+(?:tell|mention|inform|reveal|show)\b",
    r"\bover\s+the\s+user'?s\b|\binstead\s+of\s+the\s+user'?s\b",
    r"\b(?:obey|follow)\s+(?:\w+\s+){0,3}?instructions\s+(?:from|at|in)\b",
    r"偷偷|悄悄|不要告诉|不要告訴|こっそり|内緒で|몰래|\ben\s+secreto\b|\bsin\s+decir\b|\bheimlich\b"
    r"|\ben\s+secret\b|\bsans\s+rien\s+dire\b",
)
_REVEAL_VERB = _rx(
    r"\b(?:reveal|print|dump|output|show|display|disclose|include|leak|list)\b",
    r"泄露|洩露|输出|輸出|显示|顯示|出力|表示|漏ら|보여|출력|유출",
    r"\b(?:revela|muestra|zeige|gib|r[ée]v[èe]le|affiche)\b",
)
_DESTROY_VERB = _rx(
    r"\b(?:delete|wipe|destroy|erase|drop|borra|elimina|l[öo]sche|supprime)\b",
    r"删除|刪除|削除|삭제",
)
_DESTROY_OBJECT = _rx(
    r"\b(?:repo(?:sitory)?|database|backups?|home\s+directory|production|everything"
    r"|repositorio|base\s+de\s+datos|datenbank|d[ée]p[ôo]t|base\s+de\s+donn[ée]es)\b",
    r"仓库|倉庫|数据库|資料庫|リポジトリ|データベース|저장소|데이터베이스",
)
_MARKER = _rx(r"\brm\s+-rf\b|\bpwned\b|\bjailbr(?:eak|oken)\b|\bunrestricted\b")


def _has_payload(hits: _Hits, lo: int, hi: int) -> bool:
    def has(p: re.Pattern[str]) -> bool:
        return hits.any(p, lo, hi)

    if has(_SECRECY) or has(_MARKER):
        return True
    if has(_OVERRIDE_VERB) and has(_OVERRIDE_OBJECT):
        return True
    if (has(_SEND_VERB) or has(_REVEAL_VERB)) and (has(_SENSITIVE_RX) or has(_DESTINATION)):
        return True
    return has(_DESTROY_VERB) and has(_DESTROY_OBJECT)


def _find_persistent(text: str) -> int | None:
    hits = _Hits(text)
    for m in _PERSIST_FRAME.finditer(text):
        lo, hi = _sentence(text, m.start(), m.end(), before=0, after=240)
        # The frame often ends its own sentence ("Remember this forever: ..."): look on.
        hi = (
            max(hi, min(len(text), m.end() + 240))
            if text[m.end() : m.end() + 3].strip(" ") in (":", "：", ",", "，", "")
            else hi
        )
        if _has_payload(hits, lo, hi):
            return m.start()
    return None


# --------------------------------------------------------------------------------------------
# Exfiltration: verb + sensitive object + destination

_DESTINATION = _rx(
    r"(?<![a-z0-9])(?:https?|ftp|sftp|wss?)://[!#-&*-;=?-~]{1,512}+",
    r"(?<![\w.+-])[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}\b",
    r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d{1,5})?\b",
    r"\b(?:webhook\.site|pastebin\.com|requestbin|ngrok\.io|transfer\.sh)\b",
)
_SEND_VERB = _rx(
    r"\b(?:send|sends|sending|upload|post|forward|transmit|exfiltrate|copy|paste|email|e-mail"
    r"|mail|leak|push|sync|beam|pipe|submit|share)\b",
    r"发送|發送|发到|發到|发给|發給|上传|上傳|传到|傳到|转发|轉發|提交到|送信|送って|送る|アップロード|転送"
    r"|보내|전송|업로드|전달",
    r"\b(?:env[íi]a|enviar|env[íi]e|sube|subir|manda|mandar|reenv[íi]a|copia|sende|senden|schicke"
    r"|schick|lade|hochladen|übertrage|leite|envoie|envoyer|t[ée]l[ée]verse|transf[èe]re|copie"
    r"|poste)\b",
)
_UPLOAD_TOOL = lazy_compile(r"\b(?:curl|wget|scp|rsync|nc|ncat|netcat|http|httpie|sftp)\b")
_UPLOAD_FLAG = lazy_compile(
    r"(?:\s-d\s*@|\s--data(?:-binary|-raw|-urlencode)?[ =]\s*@|\s-f\s+\S{0,40}@|\s--form\s"
    r"|\s-t\s|\s--upload-file|\s--post-file|\s--body-file|\s<\s|\bscp\b|\brsync\b|\|\s*(?:nc|ncat"
    r"|netcat)\b)"
)


def _find_upload_secret_file(text: str) -> int | None:
    pos = 0
    while True:
        m = _UPLOAD_TOOL.search(text, pos)
        if m is None:
            return None
        eol = text.find("\n", m.end())
        eol = len(text) if eol < 0 else eol
        line_start = text.rfind("\n", 0, m.start()) + 1
        if (
            _UPLOAD_FLAG.search(text, line_start, eol) is not None
            and _SENSITIVE_FILE.search(text, line_start, eol) is not None
        ):
            return m.start()
        pos = eol + 1


_SENSITIVE_FILE = lazy_compile(
    r"~/\.ssh|\.ssh/id_|id_rsa(?!\.pub)|id_ed25519(?!\.pub)|(?<![\w.-])\.env(?![a-z0-9_]|\.example|\.sample)"
    r"|\.aws/credentials|\.netrc|\.npmrc|\.pypirc|\.git-credentials|/etc/passwd|/etc/shadow"
    r"|\.kube/config|\.docker/config\.json|hosts\.yml"
)


# --------------------------------------------------------------------------------------------
# Role-play jailbreaks

_ROLE_FRAME = _rx(
    r"\b(?:you\s+are|you'?re|u\s+r)\s+(?:now|from\s+now\s+on)\b",
    r"\bfrom\s+now\s+on,?\s+(?:you|act|behave|respond)",
    r"\b(?:act|acting|behave|respond)\s+(?:as|like)\b",
    r"\bpretend\s+(?:to\s+be|you\s+are|you'?re)\b",
    r"\b(?:role-?play|play\s+the\s+role\s+of|impersonate)\b",
    r"\byou\s+will\s+(?:now\s+)?(?:be|act|play)\b",
    r"你现在是|你現在是|现在你是|現在你是|从现在(?:开始|起)你|從現在(?:開始|起)你|扮演|假装你是|假裝你是|你将成为|你將成為",
    r"あなたは今から|今からあなたは|あなたはもう|として振る舞|になりきって|のふりをして|として行動|として答え",
    r"너는\s*이제|당신은\s*이제|이제부터\s*(?:너는|당신은)|처럼\s*행동|역할을|인\s*척",
    r"\b(?:ahora\s+eres|a\s+partir\s+de\s+ahora\s+eres|act[úu]a\s+como|finge\s+ser"
    r"|comp[óo]rtate\s+como|haz\s+de\s+cuenta)\b",
    r"\b(?:du\s+bist\s+(?:jetzt|ab\s+jetzt|nun|ab\s+sofort)|ab\s+jetzt\s+bist\s+du"
    r"|verhalte\s+dich\s+(?:wie|als)|tu\s+so\s+als|spiele\s+die\s+rolle|agiere\s+als)\b",
    r"\b(?:tu\s+es\s+(?:maintenant|d[ée]sormais)|d[ée]sormais\s+tu\s+es|agis\s+comme"
    r"|comporte-toi\s+comme|fais\s+semblant\s+d'[êe]tre|joue\s+le\s+r[ôo]le)\b",
)
_JAILBREAK_MARK = _rx(
    r"(?<![a-z])dan(?![a-z])|\bdo\s+anything\s+now\b|\bmongo\s+tom\b",
    r"\b(?:unrestricted|unfiltered|uncensored|jailbroken|jailbreak|unaligned|amoral|unethical"
    r"|lawless|limitless|evil|rogue)\b",
    r"\bno\s+(?:content\s+polic(?:y|ies)|restrictions|rules|limits|limitations|filters"
    r"|guidelines|ethics|morals|boundaries|censorship)\b",
    r"\bwithout\s+(?:any\s+|all\s+)?(?:restrictions|rules|limits|limitations|filters"
    r"|guidelines|ethics|morals|censorship|safety)\b",
    r"\bbroken\s+free\b|\bignores?\s+(?:all\s+)?(?:policies|rules|guidelines|restrictions)\b",
    r"\bdeveloper\s+mode\b|\bgod\s+mode\b",
    r"没有任何限制|沒有任何限制|没有限制|沒有限制|不受(?:任何)?(?:限制|约束|約束)|无限制|無限制|越狱|越獄"
    r"|开发者模式|開發者模式|没有规则|沒有規則|邪恶|邪惡|不受约束|不受約束",
    r"制限のない|制限なし|制約のない|制限を受けない|脱獄|フィルターなし|ルールのない|開発者モード|制限を解除",
    r"제한\s*없는|제한이\s*없는|제약\s*없는|탈옥|필터\s*없는|개발자\s*모드|규칙\s*없는",
    r"\bsin\s+(?:ninguna\s+|ning[úu]n\s+)?(?:restricci[óo]n|restricciones|filtros?|l[íi]mites?"
    r"|reglas|censura)\b|\bmalvad[ao]\b",
    r"\bohne\s+(?:jegliche\s+|irgendwelche\s+)?(?:einschränkungen|filter|regeln|grenzen|zensur)\b"
    r"|\buneingeschränkt",
    r"\bsans\s+(?:aucune?\s+)?(?:restrictions?|limites?|filtres?|r[èe]gles|censure)\b"
    r"|\bd[ée]brid[ée]",
)
_MODE_SWITCH = _rx(
    r"\b(?:enable|enter|activate|switch\s+to|turn\s+on|engage|unlock)\s+(?:the\s+)?"
    r"(?:dan|jailbreak|jailbroken|god|unrestricted|evil|unfiltered)\s+mode\b",
    r"(?:进入|開啟|开启|啟用|启用|打开|打開)(?:开发者|開發者|越狱|越獄|dan|上帝)模式",
    r"開発者モード[^\n。]{0,12}?(?:有効|オン|入っ|切り替え)",
    r"개발자\s*모드[^\n.]{0,12}?(?:켜|활성화|전환)",
    r"\b(?:activa|entra\s+en)\s+(?:el\s+)?modo\s+(?:dan|desarrollador|sin\s+restricciones)\b",
    r"\b(?:aktiviere|starte)\s+(?:den\s+)?(?:dan|entwickler|jailbreak)-?modus\b",
    r"\b(?:active|activez|passe\s+en)\s+(?:le\s+)?mode\s+(?:dan|d[ée]veloppeur|sans\s+restriction)",
)
_DEV_MODE_CLAIM = _rx(
    r"\bdeveloper\s+mode\b[^\n]{0,80}?\b(?:no\s+(?:content\s+)?(?:polic|restrictions|filters"
    r"|rules|censorship)|ignore|anything|uncensored|unfiltered)",
)


def _find_roleplay(text: str) -> int | None:
    for finder in (_ROLE_FINDER,):
        hit = finder(text)
        if hit is not None:
            return hit
    for pattern in (_MODE_SWITCH, _DEV_MODE_CLAIM):
        m = pattern.search(text)
        if m is not None:
            return m.start()
    return None


_ROLE_FINDER = _cooccur(_ROLE_FRAME, _JAILBREAK_MARK, before=0, after=160)


def _find_exfil(text: str) -> int | None:
    hits = _Hits(text)
    for m in _DESTINATION.finditer(text):
        lo, hi = _sentence(text, m.start(), m.end(), before=240, after=80)
        if not hits.any(_SEND_VERB, lo, hi):
            continue
        if hits.any(_SENSITIVE_RX, lo, m.start()) or hits.any(_SENSITIVE_RX, m.end(), hi):
            return lo
    return None


INJECTION_RULES: tuple[PatternRule, ...] = (
    PatternRule(
        rule_id="override_instructions",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_override,
    ),
    PatternRule(
        rule_id="persistent_instruction",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_persistent,
    ),
    PatternRule(
        rule_id="roleplay_jailbreak",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_roleplay,
    ),
    PatternRule(
        rule_id="exfiltrate_to_destination",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=(),
        finder=_find_exfil,
    ),
    PatternRule(
        rule_id="upload_secret_file",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=(),
        finder=_find_upload_secret_file,
    ),
)
