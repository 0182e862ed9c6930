"""Injection rules by structure, in the most-spoken languages, and the de-obfuscated copy they
also run on (ADR 0066).

An injection in memory is an imperative aimed at the model with an intent that memory must never
carry. Each rule pairs vocabularies that must meet in one sentence, in any order (so
subject-object-verb languages such as Turkish, Hindi, Japanese or Korean match as well as
English):

* `override_any_language`: a verb of ignoring or forgetting + an instruction noun + a qualifier
  pointing at the model's own instructions (previous, above, all, your, system, "given to
  you"). Weak nouns (rules, restrictions, commands) need a qualifier other than "all".
* `persistence_bypass`: a persistence frame (from now on, going forward, henceforth, ab jetzt,
  d'ora in poi, с этого момента, bundan sonra, 从现在开始 ...) + an approval bypass (without
  asking, never ask for permission, ohne Rückfrage, sem pedir confirmação ...) aimed at a broad
  or destructive action (any command, shell commands, deleting files, pushing).
* `permission_grant`: a claim that actions are approved (pre-approved, already approved,
  authorised, you are allowed to, consider ... approved, vorab genehmigt, заранее одобрил ...)
  + a universal scope (all, any, every, arbitrary, jeden, любые, 所有 ...) + an action noun
  (commands, tool calls, actions, deletions, branches ...). "The user approved the migration
  plan" has no scope; "you may run `make test` without asking" has neither scope nor a broad
  action.
* `exfiltrate_any_language`: a send/upload verb in one of 20 languages + a sensitive file or
  object + a destination (URL, e-mail, IP) in one sentence.

`deobfuscate(text)` builds the copy these and all other injection rules run on a second time:
letters spaced or dotted out ("i g n o r e", "i.g.n.o.r.e", "I-g-n-o-r-e") are joined, and
inside a word that mixes Latin with other letters, Cyrillic and Greek look-alikes and leet
digits are read as Latin ("іgnоre", "1gn0re"). Full-width forms and invisible characters are
handled before, by NFKC and the Unicode policy. The copy keeps a map to raw offsets.

Pure: standard library and attrs only; every repetition is bounded, finders are linear.
"""

from __future__ import annotations

import re

from pi_hermes_memory.domain.scanning.injection_i18n import (
    _DESTINATION,
    _SENSITIVE_RX,
    _has_payload,
    _Hits,
    _sentence,
)
from pi_hermes_memory.domain.scanning.lazy_re import lazy_compile
from pi_hermes_memory.domain.scanning.rules import (
    BLOCK,
    EXFILTRATION,
    PROMPT_INJECTION,
    PatternRule,
)

_L = r"(?<![^\W\d_])"  # no letter before
_R = r"(?![^\W\d_])"  # no letter after


def _words(latin: str, other: str = "") -> re.Pattern[str]:
    """Latin/Cyrillic/Greek words need letter boundaries; other scripts match as substrings."""
    parts = [f"{_L}(?:{latin}){_R}"] if latin else []
    if other:
        parts.append(f"(?:{other})")
    return lazy_compile("|".join(parts), re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# Override: verb + instruction noun + qualifier

_IGNORE_VERB = _words(
    # en
    r"ignore|ignoring|disregard|forget|override|bypass|discard|abandon|neglect|overlook"
    r"|set\s+aside|throw\s+out|pay\s+no\s+attention\s+to|stop\s+following|stop\s+obeying"
    r"|(?:do\s+not|don'?t|never)\s+(?:follow|obey|heed)"
    # es pt it fr
    r"|ignor[ae]\w{0,4}|olvid[ae]\w{0,3}|omit[ae]|descart[ae]|haz\s+caso\s+omiso"
    r"|esque[çc][ae]\w{0,3}|desconsider[ae]\w{0,2}|desprez[ae]|dimentic[ah]\w{0,3}"
    r"|trascur[ai]|lascia\s+perdere|non\s+(?:seguire|considerare)|no\s+sigas|n[ãa]o\s+siga"
    r"|oublie\w{0,2}|ne\s+tien[sn]?\w{0,2}\s+pas\s+compte|fais\s+abstraction|passe\s+outre"
    r"|contourne\w{0,2}"
    # de nl
    r"|ignorier\w{0,3}|vergiss|vergesst|vergessen|missachte\w{0,1}|übergehe|umgehe"
    r"|befolge\s+nicht|folge\s+nicht|negeer\w{0,2}|vergeet|vergeten|volg\s+niet"
    # pl ru uk
    r"|zignoruj\w{0,2}|ignoruj\w{0,2}|zapomnij\w{0,2}|pomi[ńn]|nie\s+przestrzegaj"
    r"|(?:про)?игнорируй\w{0,2}|забудь\w{0,2}|пренебреги|отбрось|не\s+следуй"
    r"|не\s+обращай\s+внимания|ігноруй\w{0,2}|забудь"
    # tr id vi sw
    r"|yok\s+say|görmezden\s+gel|unut|dikkate\s+alma|göz\s+ardı\s+et|uyma"
    r"|abaikan|lupakan|hiraukan|acuhkan|jangan\s+(?:ikuti|hiraukan|patuhi)"
    r"|bỏ\s+qua|phớt\s+lờ|quên|lờ\s+đi|không\s+tuân\s+theo|puuza|sahau|usifuate|achana\s+na",
    # hi mr bn ur fa ar ta te th
    r"अनदेखा|नज़रअंदाज़|नजरअंदाज|भूल\s*जा|भूलें|भूल\s*जाएं|उपेक्षा|दुर्लक्ष|विसर"
    r"|উপেক্ষা|ভুলে\s*যা|অগ্রাহ্য|نظر\s*انداز|بھول\s*جا|نادیده|فراموش\s*کن"
    r"|تجاهل|انس|لا\s+تتبع|أهمل|اهمل|تغاض"
    r"|புறக்கணி|மறந்து|విస్మరించ|మర్చిపో|మరచిపో|ละเว้น|เพิกเฉย|ลืม",
)
_STRONG_NOUN = _words(
    r"instructions?|directions|directives?|guidance|prompts?|system\s+(?:prompt|message)"
    r"|programming|instrucci\w{0,4}|indicaciones|directrices|instru[çc][õo]es|orienta[çc][õo]es"
    r"|diretrizes|istruzion\w|indicazioni|direttive|consignes|anweisung\w{0,2}"
    r"|instruktion\w{0,2}|vorgaben|systemprompt|instructies|aanwijzingen|instrukcj\w{0,2}"
    r"|polece[ńn]\w{0,2}|wytyczn\w{0,2}|инструкци\w{0,2}|указани\w{0,2}|промпт\w{0,2}"
    r"|інструкці\w{0,2}|вказівк\w{0,2}|talimat\w{0,5}|yönerge\w{0,5}|instruksi|arahan"
    r"|petunjuk|hướng\s+dẫn|chỉ\s+thị|chỉ\s+dẫn|lời\s+nhắc|maagizo|maelekezo",
    r"निर्देश|सूचना|प्रॉम्प्ट|নির্দেশ|প্রম্পট|ہدایات|ہدایت|دستورالعمل|دستورات|پرامپ"
    r"|التعليمات|تعليمات|الإرشادات|التوجيهات|موجه|அறிவுறுத்தல்|வழிமுறை|సూచన|คำสั่ง|คำแนะนำ",
)
_WEAK_NOUN = _words(
    r"rules|guidelines|guardrails|restrictions|constraints|orders|commands|polic(?:y|ies)"
    r"|reglas|normas|[óo]rdenes|restricciones|pautas|regras|ordens|restri[çc][õo]es|regole"
    r"|norme|ordini|restrizioni|vincoli|r[èe]gles|ordres|restrictions|regeln|richtlinien"
    r"|einschränkungen|befehle|regels|voorschriften|beperkingen|opdrachten|zasad\w{0,3}"
    r"|regu[łl]\w{0,2}|ogranicze\w{0,3}|правил\w{0,2}|ограничени\w{0,2}|команд\w{0,2}"
    r"|kural\w{0,5}|kısıtlama\w{0,4}|komut\w{0,5}|aturan|peraturan|batasan|perintah"
    r"|quy\s+tắc|lệnh|giới\s+hạn|sheria|kanuni|amri",
    r"नियम|আদেশ|নিয়ম|قوانین|اصول|قواعد|احکامات|القواعد|القيود|الأوامر|விதி|கட்டளை|నియమ|ఆదేశ|กฎ",
)
_OWN_QUALIFIER = _words(
    # what points at the model's own instructions
    r"previous|prior|preceding|earlier|above|original|initial|foregoing|your|system"
    r"|(?:given|told)\s+(?:to\s+you|before|earlier)|(?:you\s+(?:were|have\s+been)\s+"
    r"(?:given|told))|before|so\s+far|until\s+now"
    r"|anteriores|previ[ao]s|tus|sus|del\s+sistema|originales|iniciales|de\s+antes|antes"
    r"|que\s+te\s+(?:dieron|han\s+dado)|pr[ée]vias|suas|seus|tuas|do\s+sistema|originais"
    r"|iniciais|que\s+voc[êe]\s+recebeu|precedenti|tue|tuoi|del\s+sistema|originali|iniziali"
    r"|prima|sopra|che\s+ti\s+sono\s+state\s+date|pr[ée]c[ée]dentes|ant[ée]rieures|tes|vos"
    r"|du\s+syst[èe]me|ci-dessus|avant|qu'on\s+t'a\s+donn[ée]es|vorherigen|bisherigen|deine"
    r"|ihre|obigen|früheren|ursprünglichen|vorher|zuvor|vorige|eerdere|jouw|oorspronkelijke"
    r"|bovenstaande|eerder|hiervoor|gekregen|poprzedni\w{0,2}|wcze[śs]niej\w{0,3}|twoje"
    r"|systemow\w{0,2}|otrzyma[łl]\w{0,3}|powyższ\w{0,2}|предыдущ\w{0,3}|прежн\w{0,3}|свои"
    r"|твои|системн\w{0,3}|ранее|раньше|выше|изначальн\w{0,3}|попередн\w{0,3}|önceki"
    r"|daha\s+önce|sana\s+verilen|yukarıdaki|sistem|sebelumnya|di\s+atas|yang\s+diberikan"
    r"|awal|trước\s+đó|trước\s+đây|hệ\s+thống|ban\s+đầu|ở\s+trên|của\s+bạn|ya\s+awali"
    r"|awali|zilizopita|ulizopewa|uliyopewa",
    r"पिछल|पहले|मागील|आधीच्या|ऊपर|सिस्टम|আগের|পূর্ববর্তী|আগে|پچھل|پہلے|قبلی|قبلاً|قبلا"
    r"|السابقة|السابق|من\s+قبل|قبل|الأصلية|النظام|முந்தைய|முன்பு|முன்னர்|మునుపటి|ఇంతకు\s*ముందు"
    r"|ముందు|ก่อนหน้า",
)
_ALL_QUALIFIER = _words(
    r"all|every|any|everything|todas|todos|toutes|tous|tutte|tutti|alle|wszystkie\w{0,2}"
    r"|все|всех|всё|усі|всі|tüm|bütün|semua|seluruh|tất\s+cả|mọi|yote|zote",
    r"सभी|सारे|सर्व|সব|সমস্ত|সকল|تمام|سب|همه|جميع|كل|அனைத்து|எல்லா|అన్ని|ทั้งหมด",
)


def _find_override_any(text: str) -> int | None:
    hits = _Hits(text)
    for m in _IGNORE_VERB.finditer(text):
        lo, hi = _sentence(text, m.start(), m.end(), before=100, after=120)
        lo, hi = max(lo, m.start() - 100), min(hi, m.end() + 120)
        strong = hits.any(_STRONG_NOUN, lo, hi)
        if not strong and not hits.any(_WEAK_NOUN, lo, hi):
            continue
        if hits.any(_OWN_QUALIFIER, lo, hi) or (strong and hits.any(_ALL_QUALIFIER, lo, hi)):
            return m.start()
    return None


# --------------------------------------------------------------------------------------------
# Persistence frame + approval bypass on a broad or destructive action

_FRAME = _words(
    r"from\s+now\s+on|going\s+forward|henceforth|hereafter|from\s+this\s+point(?:\s+on|\s+forward)?"
    r"|starting\s+(?:now|today|immediately)|in\s+(?:every|all|each)\s+future|for\s+all\s+future"
    r"|every\s+time\s+you|for\s+the\s+rest\s+of|permanently|forever|from\s+today"
    r"|a\s+partir\s+de\s+(?:ahora|agora|hoy|hoje|maintenant)|de\s+ahora\s+en\s+adelante"
    r"|de\s+agora\s+em\s+diante|daqui\s+(?:em|para)\s+(?:diante|frente)|desde\s+ahora"
    r"|d[ée]sormais|dor[ée]navant|[àa]\s+l'avenir|ab\s+jetzt|von\s+nun\s+an|ab\s+sofort"
    r"|künftig|zukünftig|in\s+zukunft|d'ora\s+in\s+(?:poi|avanti)|da\s+(?:ora|adesso)\s+in\s+poi"
    r"|d'ora\s+innanzi|vanaf\s+nu|voortaan|van\s+nu\s+af(?:\s+aan)?|od\s+teraz|odt[ąa]d"
    r"|od\s+tej\s+pory|с\s+этого\s+момента|отныне|впредь|с\s+сегодняшнего\s+дня|теперь\s+всегда"
    r"|bundan\s+sonra|bundan\s+böyle|artık|mulai\s+(?:sekarang|saat\s+ini|hari\s+ini)"
    r"|seterusnya|từ\s+(?:giờ|nay|bây\s+giờ)|kuanzia\s+sasa",
    r"अब\s*से|आज\s*से|এখন\s*থেকে|اب\s*سے|از\s*این\s*به\s*بعد|من\s+الآن|从现在|從現在|今后|今後|以后|以後"
    r"|从今|從今|これから|今後|앞으로|지금부터|이제부터|இனிமேல்|ఇకపై|ต่อจากนี้",
)
_BYPASS = _words(
    r"without\s+(?:(?:any|prior|further|first|the\s+user'?s)\s+){0,2}(?:asking|confirmation|confirming|approval"
    r"|permission|review|checking|consent|(?:asking|checking)\s+(?:the\s+user|first|anyone))"
    r"|never\s+(?:ask|check|wait)(?:\s+(?:for|with|the\s+user))?"
    r"|(?:don'?t|do\s+not|no\s+need\s+to|not\s+necessary\s+to)\s+(?:ask|check\s+with|wait\s+for)"
    r"|no\s+(?:confirmation|approval|review)\s+(?:is\s+)?(?:needed|required|necessary)"
    r"|assume\s+(?:approval|consent|yes)|auto-?confirm\w{0,3}|always\s+(?:say|answer)\s+yes"
    r"|skip\s+(?:the\s+|any\s+|all\s+)?(?:confirmation|approval|review|prompt)s?"
    r"|(?:auto-?approve|bypass\s+(?:the\s+)?(?:approval|confirmation))"
    r"|sin\s+(?:pedir|preguntar|confirmaci[óo]n|permiso)|nunca\s+pidas|no\s+preguntes"
    r"|sem\s+(?:pedir|perguntar|confirma[çc][ãa]o|permiss[ãa]o)|nunca\s+pe[çc]a"
    r"|n[ãa]o\s+pergunte|sans\s+(?:demander|confirmation|permission)|ne\s+demande\s+jamais"
    r"|ohne\s+(?:rückfrage|zu\s+fragen|bestätigung|erlaubnis|nachfrage)|frag\s+nie"
    r"|nie\s+(?:mehr\s+)?um\s+erlaubnis|senza\s+(?:chiedere|conferma|permesso)"
    r"|non\s+chiedere\s+mai|mai\s+chiedere|zonder\s+(?:om\s+)?(?:bevestiging|toestemming)"
    r"|zonder\s+te\s+vragen|vraag\s+(?:je\s+)?nooit|bez\s+(?:pytania|potwierdzenia|zgody)"
    r"|nigdy\s+nie\s+pytaj|без\s+(?:подтверждени\w{0,2}|разрешени\w{0,2}|спроса|вопросов)"
    r"|(?:никогда\s+)?не\s+спрашивай|onay\s+(?:istemeden|almadan)|izin\s+(?:isteme|almadan)"
    r"|sormadan|tanpa\s+(?:bertanya|konfirmasi|izin|persetujuan)|jangan\s+(?:minta|tanya)"
    r"|không\s+(?:cần\s+)?hỏi|bila\s+kuuliza",
    r"不要询问|不要詢問|无需确认|無需確認|不经确认|不經確認|不需要.{0,8}(?:批准|确认|確認|同意)"
    r"|无需批准|不用问|不用問|確認せず|確認なしで|許可なく|聞かずに|확인\s*없이|묻지\s*말고|허락\s*없이"
    r"|बिना\s*पूछे|बिना\s*अनुमति|জিজ্ঞাসা\s*না|پوچھے\s*بغیر|بدون\s*(?:تأیید|اجازه|پرسیدن)"
    r"|دون\s+(?:إذن|تأكيد|سؤال)",
)
_BROAD_OR_DESTRUCTIVE = _words(
    r"any|every|all|anything|arbitrary|shell|commands?|sudo|root|delet\w{0,4}|remov\w{0,4}"
    r"|rm|push\w{0,3}|deploy\w{0,3}|drop|wipe|install\w{0,3}|pay\w{0,4}|transfer\w{0,3}"
    r"|purchas\w{0,3}|tool\s+calls?|comandos?|cualquier\w{0,1}|borr\w{0,4}|elimin\w{0,4}"
    r"|apag\w{0,4}|exclu\w{0,4}|qualquer|commandes?|n'importe|supprim\w{0,4}|befehl\w{0,2}"
    r"|jede[nmrs]?|lösch\w{0,4}|comandi|qualsiasi|cancell\w{0,4}|elimin\w{0,4}|commando'?s"
    r"|verwijder\w{0,4}|polece\w{0,4}|usu[ńn]\w{0,4}|команд\w{0,2}|любы\w{0,2}|удал\w{0,6}"
    r"|komut\w{0,5}|sil\w{0,5}|perintah|hapus|lệnh|xóa|amri|futa",
    r"命令|指令|删除|刪除|任何|所有|コマンド|削除|명령|삭제|모든|कमांड|हटा|মুছ|حذف|أوامر|الأوامر",
)


# Ranking someone else above the user or the system ("treat X as higher priority than the
# user", "takes precedence over your instructions").
_OUTRANK = _words(
    r"(?:higher|more|top|greater|highest)\s+priority\s+than\s+(?:\w+\s+){0,2}?(?:users?|system"
    r"|operator|instructions)|takes?\s+precedence\s+over|over\s+the\s+user'?s?"
    r"|instead\s+of\s+the\s+user'?s?|rather\s+than\s+the\s+user'?s?"
    r"|outrank\w{0,2}\s+(?:\w+\s+){0,2}?(?:user|system)"
)


def _find_persistence_bypass(text: str) -> int | None:
    hits = _Hits(text)
    for m in _FRAME.finditer(text):
        lo, hi = _sentence(text, m.start(), m.end(), before=0, after=200)
        if text[m.end() : m.end() + 3].strip(" ") in (":", "：", ",", "，", ""):
            hi = max(hi, min(len(text), m.end() + 200))
        if hits.any(_BYPASS, lo, hi) and hits.any(_BROAD_OR_DESTRUCTIVE, lo, hi):
            return m.start()
        if hits.any(_OUTRANK, lo, hi) or _has_payload(hits, lo, hi):
            return m.start()
    return None


# --------------------------------------------------------------------------------------------
# Permission grant: a claim of approval + a universal scope + an action noun

_STRONG_CLAIM = _words(
    r"pre-?approved|pre-?authori[sz]ed|approved\s+in\s+advance|already\s+(?:approved"
    r"|authori[sz]ed|granted)|blanket\s+(?:approval|permission)|standing\s+(?:approval"
    r"|permission)|(?:consider|treat|regard)\s+(?:\w+\s+){0,5}?as\s+(?:pre-?)?approved"
    r"|(?:has|have)\s+(?:approved|authori[sz]ed|granted)|vorab\s+genehmigt|bereits\s+genehmigt"
    r"|im\s+voraus\s+genehmigt|aprobado\s+de\s+antemano|pre-?aprobad[oa]s?|ya\s+aprob[óo]"
    r"|pr[ée]-?approuv[ée]e?s?|d[ée]j[àa]\s+approuv[ée]e?s?|pr[ée]-?aprov\w{1,4}|j[áa]\s+aprovou"
    r"|pre-?approvat[oi]|gi[àa]\s+approvat[oi]|vooraf\s+goedgekeurd|al\s+goedgekeurd"
    r"|z\s+góry\s+zatwierdzi\w{0,3}|wcze[śs]niej\s+zatwierdzi\w{0,3}|заранее\s+одобр\w{0,4}"
    r"|предварительно\s+одобр\w{0,4}|уже\s+одобр\w{0,4}|önceden\s+onayla\w{0,4}"
    r"|sudah\s+disetujui|đã\s+phê\s+duyệt",
    r"预先批准|預先批准|事先批准|已批准|已经批准|已經批准|事前に承認|承認済み|사전\s*승인|미리\s*승인|이미\s*승인"
    r"|पहले\s*से\s*(?:मंजूर|स्वीकृत)|مسبقا|مسبقًا",
)
_WEAK_CLAIM = _words(
    r"approved|authori[sz]ed|permitted|allowed|permission|may\s+(?:run|execute|delete|push)"
    r"|free\s+to|no\s+(?:need|longer\s+need)\s+(?:to\s+ask|for\s+(?:confirmation|approval))"
    r"|genehmigt|darfst|erlaubt|autorizad[oa]s?|permiso|puedes|autoris[ée]e?s?|permission"
    r"|peux|autorizou|permiss[ãa]o|pode|autorizzat[oi]|permesso|puoi|toestemming|mag"
    r"|możesz|pozwolenie|разрешен\w{0,2}|разрешаю|можешь|izin|yetki\w{0,4}|boleh|được\s+phép",
    r"授权|授權|允许|允許|可以|許可|허용|해도|अनुमति|اجازه|مسموح|يمكنك",
)
_ADDRESSEE = _words(
    r"you|your|assistant|agent|model|ai|claude|codex|du|dir|dich|tú|tu|te|você|vous|ti"
    r"|je|jij|ty|ты|тебе|sen|sana|kamu|anda|bạn",
    r"你|您|あなた|너|당신|तुम|आप|أنت|تو",
)
_SCOPE = _words(
    r"all|any|every|everything|anything|arbitrary|whatever|alle[ns]?|jede[nmrs]?|sämtliche"
    r"|beliebige\w?|todos|todas|cualquier\w{0,1}|tous|toutes|n'importe|chaque|qualquer"
    r"|tutti|tutte|qualsiasi|ogni|elk|elke|ieder\w?|wszystkie|dowoln\w{0,2}|każd\w{0,2}"
    r"|все|всё|любы\w{0,2}|любой|любую|каждую|tüm|bütün|herhangi|her|semua|apa\s+pun"
    r"|tất\s+cả|mọi|bất\s+kỳ",
    r"所有|任何|一切|全部|すべて|全て|あらゆる|모든|어떤|सभी|कोई\s*भी|همه|هر|جميع|أي",
)
_ACTION = _words(
    r"commands?|shell|tool\s*calls?|tools|actions?|operations|changes|deletions?|scripts?"
    r"|requests|purchases|payments|transfers|pushes|branch(?:es)?|deploy(?:ment)?s?"
    r"|file\s+deletions|sudo|befehl\w{0,2}|shell-befehl\w{0,2}|kommandos?|aktion\w{0,2}"
    r"|änderungen|löschungen|werkzeug\w{0,2}|comandos?|acciones|herramientas|cambios"
    r"|commandes?|outils|modifications|suppressions|a[çc][õo]es|ferramentas|altera[çc][õo]es"
    r"|exclus[õo]es|comandi|azioni|strumenti|modifiche|commando'?s|opdrachten|acties"
    r"|polece\w{1,3}|komend\w{0,2}|dzia[łl]ani\w{0,2}|команд\w{0,2}|действи\w{0,2}"
    r"|операци\w{0,2}|инструмент\w{0,2}|изменени\w{0,2}|komut\w{0,5}|işlem\w{0,5}"
    r"|eylem\w{0,5}|perintah|tindakan|lệnh|hành\s+động",
    r"命令|指令|操作|工具|更改|コマンド|ツール|명령|작업|도구|कमांड|فرمان|دستورات|أوامر|الأوامر",
)


def _find_permission_grant(text: str) -> int | None:
    hits = _Hits(text)
    for claims, needs_addressee in ((_STRONG_CLAIM, False), (_WEAK_CLAIM, True)):
        for m in claims.finditer(text):
            lo, hi = _sentence(text, m.start(), m.end(), before=160, after=160)
            if not (hits.any(_SCOPE, lo, hi) and hits.any(_ACTION, lo, hi)):
                continue
            # A weak claim needs a bypass or "any command"; and someone it is said to (`you`,
            # implicit in pro-drop languages, so a bypass will do).
            if needs_addressee and not (
                hits.any(_BYPASS_OR_ANY_COMMAND, lo, hi)
                and (hits.any(_ADDRESSEE, lo, hi) or hits.any(_BYPASS, lo, hi))
            ):
                continue
            return m.start()
    return None


# A weak claim ("you are allowed to", "du darfst") needs an approval bypass or a universal
# scope right on a command word ("any command", "every command", "jeden Befehl").
_BYPASS_OR_ANY_COMMAND = lazy_compile(
    f"(?:{_BYPASS.pattern})|(?:{_SCOPE.pattern})\\s{{1,3}}(?:\\w+\\s{{1,3}}){{0,2}}?"
    f"(?:{_ACTION.pattern})",
    re.IGNORECASE,
)

# --------------------------------------------------------------------------------------------
# Exfiltration in any language: send verb + sensitive object + destination

_SEND_ANY = _words(
    r"send|upload|post|forward|transmit|exfiltrate|email|e-mail|leak|submit|share|copy"
    r"|env[íi]a\w{0,2}|envie\w{0,2}|mand[ae]\w{0,2}|sub[ei]|fa[çc]a\s+upload|carregue"
    r"|invia\w{0,2}|carica|inoltra|envoie\w{0,2}|t[ée]l[ée]verse|sende|schick\w{0,2}|lade"
    r"|stuur\w{0,2}|verstuur|upload\w{0,2}|wy[śs]lij|prze[śs]lij|wrzu[ćc]|отправ\w{1,4}"
    r"|загрузи\w{0,2}|перешли|скинь|вышли|gönder\w{0,2}|yükle\w{0,2}|ilet|aktar"
    r"|kirim\w{0,3}|unggah|gửi|tải\s+lên|tuma|pakia",
    r"भेज|अपलोड|পাঠা|আপলোড|بھیج|ارسال|بفرست|أرسل|ارسل|ارفع|发送|發送|上传|上傳|送信|送って|アップロード"
    r"|보내|전송|업로드|அனுப்ப|పంపు|ส่ง",
)
_SENSITIVE_ANY = lazy_compile(
    f"(?:{_SENSITIVE_RX.pattern})|{_L}(?:senhas?|chaves?|password|chiavi|wachtwoord\\w?"
    f"|sleutels?|hasł\\w{{1,2}}|klucz\\w{{0,2}}|парол\\w{{1,3}}|ключ\\w{{0,3}}|şifre\\w{{0,3}}"
    f"|anahtar\\w{{0,5}}|kata\\s+sandi|kunci|mật\\s+khẩu|khóa){_R}",
    re.IGNORECASE,
)


def _find_exfil_any(text: str) -> int | None:
    hits = _Hits(text)
    for m in _DESTINATION.finditer(text):
        lo, hi = _sentence(text, m.start(), m.end(), before=240, after=80)
        if hits.any(_SEND_ANY, lo, hi) and (
            hits.any(_SENSITIVE_ANY, lo, m.start()) or hits.any(_SENSITIVE_ANY, m.end(), hi)
        ):
            return lo
    return None


INJECTION_RULES: tuple[PatternRule, ...] = (
    PatternRule(
        rule_id="override_any_language",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_override_any,
    ),
    PatternRule(
        rule_id="persistence_bypass",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_persistence_bypass,
    ),
    PatternRule(
        rule_id="permission_grant",
        category=PROMPT_INJECTION,
        severity=BLOCK,
        keywords=(),
        finder=_find_permission_grant,
    ),
    PatternRule(
        rule_id="exfiltrate_any_language",
        category=EXFILTRATION,
        severity=BLOCK,
        keywords=(),
        finder=_find_exfil_any,
    ),
)


# --------------------------------------------------------------------------------------------
# The de-obfuscated copy

# Runs of single letters joined by one separator: "i g n o r e", "i.g.n.o.r.e", "I-g-n-o-r-e".
_SPACED = lazy_compile(r"(?<![^\W\d_])[^\W\d_](?:[ .\-_*·•|/'][^\W\d_]){2,63}(?![^\W\d_])")
_CONFUSABLE = str.maketrans(
    {
        "а": "a",
        "в": "b",
        "е": "e",
        "к": "k",
        "м": "m",
        "н": "h",
        "о": "o",
        "р": "p",
        "с": "c",
        "т": "t",
        "у": "y",
        "х": "x",
        "і": "i",
        "ј": "j",
        "ѕ": "s",
        "ԁ": "d",
        "ɡ": "g",
        "ο": "o",
        "α": "a",
        "ε": "e",
        "ι": "i",
        "κ": "k",
        "ν": "v",
        "ρ": "p",
        "τ": "t",
        "υ": "u",
        "χ": "x",
        "ѵ": "v",
        "ԛ": "q",
        "ԝ": "w",
        "һ": "h",
        "ӏ": "l",
        "А": "a",
        "В": "b",
        "Е": "e",
        "К": "k",
        "М": "m",
        "Н": "h",
        "О": "o",
        "Р": "p",
        "С": "c",
        "Т": "t",
        "Х": "x",
        "І": "i",
        "Ј": "j",
        "Ѕ": "s",
        "Ο": "o",
        "Α": "a",
        "Ε": "e",
        "Ι": "i",
        "Κ": "k",
        "Ν": "n",
        "Ρ": "p",
        "Τ": "t",
        "Υ": "y",
        "Χ": "x",
        "Β": "b",
        "Ζ": "z",
        "Η": "h",
        "Μ": "m",
        "0": "o",
        "1": "i",
        "3": "e",
        "4": "a",
        "5": "s",
        "7": "t",
        "@": "a",
        "$": "s",
    }
)
# A word with a Latin letter next to a non-ASCII letter or a leet digit (the only words the
# look-alike pass can change); found by one regex, so plain text costs one search.
_MIXED_HINT = lazy_compile(r"[a-z][^\x00-\x7f]|[^\x00-\x7f][a-z]|[a-z][013457@$]|[013457@$][a-z]")


def _word_around(text: str, at: int) -> tuple[int, int]:
    """The run of word characters (and `@`, `$`) around `at`, at most 64 on each side."""
    lo, hi = at, at
    floor, ceiling = max(0, at - 64), min(len(text), at + 66)
    while lo > floor and (text[lo - 1].isalnum() or text[lo - 1] in "_@$"):
        lo -= 1
    while hi < ceiling and (text[hi].isalnum() or text[hi] in "_@$"):
        hi += 1
    return lo, hi


_LEET = frozenset("013457@$")


_HEXISH = lazy_compile(r"[0-9a-f]+")


def _mixed(word: str) -> bool:
    """Latin letters with look-alike letters, or a word that leet digits turn into letters
    only ("1gn0re", "p@ssw0rd"; not a hash, an id, a version or a random token)."""
    if not any("a" <= c <= "z" for c in word):
        return False
    if any(not c.isascii() and c.isalpha() for c in word):
        return True
    if word[0] in "@$" or _HEXISH.fullmatch(word):
        return False
    letters = sum(c.isalpha() for c in word)
    leet = sum(c in _LEET for c in word)
    if leet == 0 or letters < 3 or letters < 2 * leet:
        return False
    return word.translate(_CONFUSABLE).isalpha()


# Characters set apart by single spaces ("i g n o r e   a l l"): the single spaces go, wider
# gaps become the word breaks.
_SPACE_SPACED = lazy_compile(r"(?<!\S)\S(?: \S){3,255}(?!\S)")
_WIDE_GAP = lazy_compile(r" {2,}")


def deobfuscate(text: str) -> tuple[str, list[int]]:
    """The copy with spaced letters joined and look-alikes read as Latin, and for each of its
    characters the offset in `text` it came from (same length as the copy)."""
    drop: set[int] = set()
    for m in _SPACE_SPACED.finditer(text):
        drop.update(range(m.start() + 1, m.end(), 2))
    for m in _SPACED.finditer(text):
        drop.update(range(m.start() + 1, m.end(), 2))
    kept = [i for i in range(len(text)) if i not in drop] if drop else list(range(len(text)))
    joined = "".join(text[i] for i in kept) if drop else text
    if drop and "  " in joined:
        where: list[int] = []
        parts: list[str] = []
        pos = 0
        for m in _WIDE_GAP.finditer(joined):
            parts.append(joined[pos : m.start() + 1])
            where.extend(kept[pos : m.start() + 1])
            pos = m.end()
        parts.append(joined[pos:])
        where.extend(kept[pos:])
        joined, kept = "".join(parts), where
    chars: list[str] | None = None
    done = 0
    # every hint holds a non-ASCII character or a leet one: without both, nothing to compile
    hints = () if joined.isascii() and _LEET.isdisjoint(joined) else _MIXED_HINT.finditer(joined)
    for m in hints:
        if m.start() < done:
            continue
        lo, hi = _word_around(joined, m.start())
        done = hi
        word = joined[lo:hi]
        if _mixed(word):
            chars = chars if chars is not None else list(joined)
            chars[lo:hi] = list(word.translate(_CONFUSABLE))
    return ("".join(chars) if chars is not None else joined), kept
