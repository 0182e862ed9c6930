"""Search terms: how stored text and queries are cut into the keys full-text search matches.

One module for both sides of the search (ADR 0005, ADR 0012), so the index and the queries can
never disagree:

- `index_grams(text)`: the extra keys stored with a row in the `grams` column: the code-point
  bigrams of every CJK run (a run of one character stays a unigram), plus the Latin/digit pieces
  of words glued to CJK text ("用pytest运行" → "pytest"), which a word tokenizer would otherwise
  keep inside one long token.
- `plan_terms(query)`: the terms of a query: words (runs of letters, digits and combining marks
  that are not CJK, lower-cased) and the CJK bigrams of the query's CJK runs. The NFC form is the
  primary spelling; the NFKC + case-folded spelling adds alternatives when it differs
  (full-width letters, ligatures, ß → ss), so either way a row was written still matches.

A term always contains at least one letter or digit; punctuation, symbols, quotes and operators
never become terms, so no user input can change the structure of a query built from them.

Questions (ADR 0016): a query with at least one English function word ("what", "did", "the"…)
besides other words is read as a natural-language question. Its function words are *weak* (they
take no part in the all-terms and informative tiers; rows matching only them still come last),
and its other all-letter ASCII words are searched by prefix (`question_prefix`: "painted" →
`paint*`, "sunrise" → `sunrise*`), so inflected forms match without a stemmer in the index.
Keyword queries (no function word, or nothing but function words) are searched as typed.
"""

from __future__ import annotations

import functools
import re
import unicodedata

import attrs
from pi_hermes_memory.domain.search.cjk import cjk_patterns, is_cjk

#: At most this many distinct terms of a query are used (the rest are ignored).
MAX_QUERY_TERMS = 32
#: Only this many leading characters of a query are read (a query is not a document).
MAX_QUERY_CHARS = 4_096
#: A question's word is searched by prefix when the prefix has at least this many characters.
PREFIX_MIN_CHARS = 4
#: Inflection endings cut from a question's word before its prefix search (first match wins,
#: only when at least PREFIX_MIN_CHARS characters remain): "painted" → "paint*".
PREFIX_SUFFIXES = ("ing", "ed", "es", "s")

#: English function words: pronouns, articles, prepositions, conjunctions, auxiliaries,
#: question words and the pieces contractions leave ("what's" → "what", "s"). Their presence
#: marks a query as a question; in a question they are weak terms (ADR 0016).
_STOP_WORDS = (
    "a", "about", "above", "after", "again", "against", "all", "am", "an", "and", "any", "are",
    "aren", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "could", "couldn", "d", "did", "didn", "do", "does", "doesn", "doing",
    "don", "down", "during", "each", "few", "for", "from", "further", "had", "hadn", "has", "hasn",
    "have", "haven", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his",
    "how", "i", "if", "in", "into", "is", "isn", "it", "its", "itself", "just", "ll", "m", "me",
    "more", "most", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once", "only",
    "or", "other", "our", "ours", "ourselves", "out", "over", "own", "re", "s", "same", "she",
    "should", "shouldn", "so", "some", "such", "t", "than", "that", "the", "their", "theirs",
    "them", "themselves", "then", "there", "these", "they", "this", "those", "through", "to",
    "too", "under", "until", "up", "ve", "very", "was", "wasn", "we", "were", "weren", "what",
    "when", "where", "which", "while", "who", "whom", "why", "will", "with", "would", "wouldn",
    "you", "your", "yours", "yourself", "yourselves",
)  # fmt: skip
STOP_WORDS = frozenset(_STOP_WORDS)

#: Small talk and filler that carry no topic in an English query (besides `STOP_WORDS`), and
#: the words that ask a memory to remember rather than name what to remember ("do you
#: remember…", "I mentioned earlier…"): the question is about the rest of the sentence.
_ENGLISH_FILLER = (
    "also", "hello", "hey", "hi", "ok", "okay", "please", "thank", "thanks", "whether", "yeah",
    "yes",
    "earlier", "mentioned", "previously", "recall", "recalled", "remember", "remembered",
    "remembering", "remind", "reminded", "told",
)  # fmt: skip
#: The common function words of the other languages the content scanner covers: articles,
#: pronouns, prepositions, conjunctions and auxiliaries, lower case, with their diacritics
#: (they are also compared without them). Words that are also English content words ("war",
#: "die", "son", "come", "pour", "man") are left out: a stop word never matches at all.
_OTHER_FUNCTION_WORDS = (
    # Spanish
    "el", "la", "los", "las", "un", "una", "unos", "unas", "y", "o", "de", "del", "al", "en",
    "con", "por", "para", "que", "es", "se", "su", "sus", "lo", "le", "les", "mi", "tu",
    "yo", "él", "ella", "nosotros", "ellos", "este", "esta", "esto", "ese", "esa", "pero",
    "como", "más", "muy", "ya", "sí", "qué", "cómo", "cuál", "dónde", "cuándo", "hay", "fue",
    # German
    "der", "das", "dem", "des", "ein", "eine", "einer", "eines", "einem", "einen", "und",
    "oder", "ist", "sind", "nicht", "zu", "mit", "von", "auf", "für", "im", "ich", "du", "er",
    "sie", "es", "wir", "ihr", "wie", "wo", "wer", "wann", "warum", "auch", "noch", "nur",
    "aber", "wenn", "dass", "sich", "bei", "aus", "nach", "zum", "zur", "habe", "haben",
    "wird", "werden", "kann", "mein", "dein", "sein", "ja", "nein",
    # French
    "le", "les", "une", "des", "du", "et", "ou", "est", "sont", "ne", "pas", "je", "il",
    "elle", "nous", "vous", "ils", "elles", "ce", "cette", "ces", "qui", "quoi", "dans",
    "sur", "avec", "mais", "au", "aux", "mon", "ma", "mes", "ta", "tes", "sa", "ses",
    "leur", "leurs", "y", "où", "quand", "comment", "pourquoi", "été", "être", "avoir", "ai",
    "à", "ça", "c", "j", "l", "n", "qu",
    # Portuguese
    "o", "os", "as", "um", "uma", "e", "da", "das", "do", "dos", "em", "na", "nas", "no",
    "nos", "com", "não", "se", "ao", "aos", "eu", "ele", "ela", "eles", "isso", "isto",
    "mas", "mais", "onde", "quando", "porque", "são", "foi", "tem", "meu", "minha", "seu",
    # Italian
    "il", "lo", "gli", "di", "che", "è", "non", "per", "con", "una", "sono", "mi", "ti", "ci",
    "si", "io", "lui", "lei", "noi", "voi", "loro", "questo", "questa", "quello", "ma",
    "anche", "dove", "quando", "perché", "chi", "della", "dello", "delle", "degli", "nel",
    "nella", "alla", "dal", "dalla", "ho", "ha", "hanno",
    # Russian
    "и", "в", "во", "не", "что", "он", "на", "я", "с", "со", "как", "а", "то", "все", "она",
    "так", "его", "но", "да", "ты", "к", "у", "же", "вы", "за", "бы", "по", "только", "ее",
    "её", "мне", "было", "вот", "от", "меня", "еще", "ещё", "нет", "о", "из", "ему", "когда",
    "ли", "если", "уже", "или", "ни", "быть", "был", "до", "вас", "вам", "там", "они", "тут",
    "где", "есть", "для", "мы", "их", "чем", "была", "это", "этот", "эта", "эти", "кто",
    "какой", "мой", "при", "об", "про", "нас", "них", "меня", "тебя",
)  # fmt: skip
#: Every word that never matches on its own (issue 27): English and the other languages.
FUNCTION_WORDS = frozenset((*_STOP_WORDS, *_ENGLISH_FILLER, *_OTHER_FUNCTION_WORDS))

#: CJK function characters: Chinese particles, pronouns and function words, Japanese
#: particles, Korean particles. A one-character query term or a bigram made only of them is a
#: stop term ("的", "我们", "这个", "には").
_CJK_FUNCTION_CHARS = frozenset(
    "的了是在和也就都而及与着或我你他她它们这那吗呢吧啊个之把被让给从对于很还又么哪什怎呀嘛哦"
    "のはがをにでともへやかねよ"
    "은는을를에의와과도로"
)
#: CJK function words that are not made only of those characters.
_CJK_FUNCTION_BIGRAMS = frozenset(
    {"一个", "一些", "没有", "可以", "因为", "所以", "但是", "如果", "就是", "什么",
     "です", "ます", "から", "まで", "より", "した", "して", "ない", "ある", "いる", "この",
     "その", "あの", "こと", "もの",
     "에서", "으로", "하고", "그리", "리고", "그리고"}
)  # fmt: skip


def fold(word: str) -> str:
    """Lower case without diacritics (what unicode61 remove_diacritics does, roughly)."""
    if word.isascii():  # NFD leaves ASCII as it is and it has no combining marks
        return word.lower()
    decomposed = unicodedata.normalize("NFD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()


_FOLDED_FUNCTION_WORDS = frozenset(fold(w) for w in FUNCTION_WORDS)


@functools.lru_cache(maxsize=8192)
def is_stop_term(term: str) -> bool:
    """A query term that never matches on its own: a function word of any covered language
    (compared as written and without diacritics), or a CJK term made only of function
    characters (or a listed CJK function word)."""
    if _char_kind(term[0]) == "cjk":  # memoised per character (ADR 0114)
        return term in _CJK_FUNCTION_BIGRAMS or all(ch in _CJK_FUNCTION_CHARS for ch in term)
    low = term.lower()
    return low in FUNCTION_WORDS or fold(low) in _FOLDED_FUNCTION_WORDS


def _is_word_char(ch: str) -> bool:
    """Letters, digits and combining marks (the marks keep e.g. Devanagari words whole)."""
    return ch.isalnum() or unicodedata.category(ch)[0] == "M"


def cjk_runs(text: str) -> list[str]:
    """Maximal runs of CJK characters (Han, kana, Hangul), in order."""
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if is_cjk(ch):
            current.append(ch)
        elif current:
            runs.append("".join(current))
            current = []
    if current:
        runs.append("".join(current))
    return runs


def bigrams(run: str) -> list[str]:
    """Code-point bigrams of one CJK run; a single character stays a unigram."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


#: An ASCII text's pieces: runs of letters and digits, and runs of anything else
_ASCII_PIECE = re.compile(r"([A-Za-z0-9]+)|[^A-Za-z0-9]+")


def split_pieces(text: str) -> list[tuple[str, str]]:
    """Split `text` into ("cjk", run), ("word", run) and ("sep", run) pieces, in order.

    An ASCII text (no CJK, no combining marks) is cut by one regular expression, any other
    with each character's kind memoised (ADR 0081); the result equals
    `split_pieces_reference` (a property test checks it)."""
    if text.isascii():
        return [
            ("word", m.group()) if m.group(1) is not None else ("sep", m.group())
            for m in _ASCII_PIECE.finditer(text)
        ]
    pieces: list[tuple[str, str]] = []
    kind = ""
    start = 0
    for i, ch in enumerate(text):
        k = _char_kind(ch)
        if k != kind:
            if kind:
                pieces.append((kind, text[start:i]))
            kind, start = k, i
    if kind:
        pieces.append((kind, text[start:]))
    return pieces


@functools.lru_cache(maxsize=65_536)
def _char_kind(ch: str) -> str:
    """ "cjk", "word" or "sep" (memoised: `is_cjk` tests a list of ranges)."""
    return "cjk" if is_cjk(ch) else ("word" if _is_word_char(ch) else "sep")


def split_pieces_reference(text: str) -> list[tuple[str, str]]:
    """`split_pieces` one character at a time (every text; the ASCII path's oracle)."""
    pieces: list[tuple[str, str]] = []
    kind = ""
    start = 0
    for i, ch in enumerate(text):
        k = "cjk" if is_cjk(ch) else ("word" if _is_word_char(ch) else "sep")
        if k != kind:
            if kind:
                pieces.append((kind, text[start:i]))
            kind, start = k, i
    if kind:
        pieces.append((kind, text[start:]))
    return pieces


def _has_alnum(term: str) -> bool:
    # a whole alphanumeric term (every word, most CJK grams) answers without a walk (ADR 0114)
    return term.isalnum() or any(ch.isalnum() for ch in term)


def index_grams(text: str) -> list[str]:
    """The `grams` keys of a stored text (see the module docstring), in text order: each
    CJK run's bigrams, and each word piece (`split_pieces`) that touches a CJK run.

    Only the characters next to CJK runs are looked at one by one (regular expressions find
    the runs), so a long text with a little CJK costs little; the result equals walking
    `split_pieces(text)` (a test checks that)."""
    if text.isascii():  # no CJK, nothing glued to CJK
        return []
    cjk_char, cjk_run = cjk_patterns()
    if cjk_char.search(text) is None:
        return []
    keys: list[str] = []
    runs = [m.span() for m in cjk_run.finditer(text)]
    emitted = -1  # where the last glued word that was emitted ends
    for i, (start, end) in enumerate(runs):
        floor = runs[i - 1][1] if i else 0
        j = start
        while j > floor and _is_word_char(text[j - 1]):
            j -= 1
        if j < start and emitted != start and _has_alnum(text[j:start]):
            keys.append(text[j:start])
        keys.extend(bigrams(text[start:end]))
        ceiling = runs[i + 1][0] if i + 1 < len(runs) else len(text)
        k = end
        while k < ceiling and _is_word_char(text[k]):
            k += 1
        if k > end and _has_alnum(text[end:k]):
            keys.append(text[end:k])
            emitted = k
    return keys


@attrs.frozen(kw_only=True)
class QueryTerms:
    """The terms of one query. `words`/`grams` are the primary (NFC) spelling, in query order;
    `alt_words`/`alt_grams` are extra NFKC + case-folded spellings not already among them."""

    words: tuple[str, ...] = ()
    grams: tuple[str, ...] = ()
    alt_words: tuple[str, ...] = ()
    alt_grams: tuple[str, ...] = ()
    #: A question's function words (empty for a keyword query): no say in tiers 1-2.
    weak: frozenset[str] = frozenset()
    #: A question's words searched by prefix: (word, prefix) pairs (empty for keywords).
    prefixes: tuple[tuple[str, str], ...] = ()
    #: Every term (words and grams, both spellings) that never matches on its own
    #: (`is_stop_term`): the memory search indexes leave them out (issue 27).
    stop: frozenset[str] = frozenset()
    #: The memory search's prefix for every word, question or not (`keyword_stem`):
    #: (word, prefix) pairs; a word not listed is searched as written.
    stems: tuple[tuple[str, str], ...] = ()
    #: Words written capitalised inside a sentence (names, not acronyms): one no row
    #: holds weighs more in the keyword relevance (`NAMED_WEIGHT`), so a query about a name
    #: the store does not hold scores low everywhere.
    named: frozenset[str] = frozenset()

    @property
    def primary(self) -> tuple[str, ...]:
        """Every primary term (words, then grams)."""
        return (*self.words, *self.grams)

    @property
    def required(self) -> tuple[str, ...]:
        """The primary terms that are not weak: a row matching all of them ranks first."""
        return tuple(t for t in self.primary if t not in self.weak)

    @property
    def is_question(self) -> bool:
        return bool(self.weak)

    def prefix(self, word: str) -> str | None:
        """The prefix `word` is searched by (None: searched as the whole word)."""
        for term, key in self.prefixes:
            if term == word:
                return key
        return None

    def stem(self, word: str) -> str | None:
        """The prefix the memory search looks `word` up by (None: the whole word)."""
        for term, key in self.stems:
            if term == word:
                return key
        return None

    @property
    def meaningful(self) -> tuple[str, ...]:
        """Every term (both spellings) that is not a stop term, words first."""
        every = (*self.words, *self.alt_words, *self.grams, *self.alt_grams)
        return tuple(t for t in every if t not in self.stop)

    def __len__(self) -> int:
        return len(self.words) + len(self.grams) + len(self.alt_words) + len(self.alt_grams)


def _terms_of(text: str, lower: bool) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    for kind, run in split_pieces(text):
        if kind == "word" and _has_alnum(run):
            found.append(("word", run.lower() if lower else run))
        elif kind == "cjk":
            found.extend(("gram", g) for g in bigrams(run) if _has_alnum(g))
    return found


@functools.lru_cache(maxsize=512)
def plan_terms(query: str, *, max_terms: int = MAX_QUERY_TERMS) -> QueryTerms:
    """The search terms of `query`; empty (falsy) when it has no letters or digits.

    Memoised (the result is a frozen value): one search plans its query in the service, the
    index and the hybrid flow, and an agent often repeats a query (ADR 0040)."""
    head = query[:MAX_QUERY_CHARS]
    if head.isascii():
        # NFC and NFKC are the identity on ASCII and casefold() is lower(): the folded
        # spelling's terms are the primary ones, all skipped below (ADR 0102)
        named = _named_words(head)
        primary = _terms_of(head, lower=True)
        folded: list[tuple[str, str]] = []
    else:
        named = _named_words(unicodedata.normalize("NFC", head))
        primary = _terms_of(unicodedata.normalize("NFC", head), lower=True)
        folded = _terms_of(unicodedata.normalize("NFKC", head).casefold(), lower=False)
    seen: set[tuple[str, str]] = set()
    chosen: list[tuple[str, str, bool]] = []
    for is_alt, terms in ((False, primary), (True, folded)):
        for term in terms:
            if term in seen:
                continue
            seen.add(term)
            chosen.append((*term, is_alt))
            if len(chosen) >= max_terms:
                break
        if len(chosen) >= max_terms:
            break

    def pick(kind: str, alt: bool) -> tuple[str, ...]:
        return tuple(t for k, t, a in chosen if k == kind and a is alt)

    words, alt_words = pick("word", False), pick("word", True)
    weak = frozenset(w for w in (*words, *alt_words) if w in STOP_WORDS)
    question = bool(weak) and any(t not in weak for k, t, _ in chosen)
    prefixes: list[tuple[str, str]] = []
    if question:
        for word in (*words, *alt_words):
            key = question_prefix(word)
            if key is not None:
                prefixes.append((word, key))
    grams, alt_grams = pick("gram", False), pick("gram", True)
    stems = tuple(
        (word, key) for word in (*words, *alt_words) if (key := keyword_stem(word)) is not None
    )
    return QueryTerms(
        words=words,
        grams=grams,
        alt_words=alt_words,
        alt_grams=alt_grams,
        weak=weak if question else frozenset(),
        prefixes=tuple(prefixes),
        stop=frozenset(t for t in (*words, *alt_words, *grams, *alt_grams) if is_stop_term(t)),
        stems=stems,
        named=frozenset(named) - {w for w in words if is_stop_term(w)},
    )


_SENTENCE_END = frozenset(".!?。！？")


def _named_words(text: str) -> set[str]:
    """The (lower-cased) words of `text` written with a capital first letter and some lower
    case, somewhere other than at the start of a sentence: names ("Caroline", "Patagonia").
    All-capital words are left out: acronyms ("DB", "VPN") often stand for words the store
    spells out."""
    named: set[str] = set()
    starts = True
    for kind, run in split_pieces(text):
        if kind == "word":
            if not starts and run[0].isupper() and not run.isupper() and _has_alnum(run):
                named.add(run.lower())
            starts = False
        elif kind == "sep":
            starts = starts or any(ch in _SENTENCE_END for ch in run)
        else:
            starts = False
    return named


#: Endings `keyword_stem` cuts (the first that leaves STEM_MIN_CHARS letters wins), longest
#: first: derivations and inflections of English words.
STEM_SUFFIXES = (
    "ations", "ation", "ments", "ment", "ences", "ence", "ances", "ance", "ings", "ing",
    "ies", "ied", "ed", "es", "s", "e", "y",
)  # fmt: skip
#: A stem keeps at least this many letters; shorter words are searched as written.
STEM_MIN_CHARS = 4
_DOUBLED_KEEP = frozenset("lsz")


@functools.lru_cache(maxsize=8192)
def keyword_stem(word: str) -> str | None:
    """The prefix the memory search looks an English `word` up by, or None (as written).

    A light suffix stemmer (issue 27): all-letter ASCII words that are not function words,
    one ending of `STEM_SUFFIXES` cut when at least STEM_MIN_CHARS letters remain, and a
    doubled final consonant undone ("formatted" → "format"), so "deploys", "deployment" and
    "deployed" all become `deploy*`, which also finds "deploy"; a word with no such ending is
    its own prefix when it has STEM_MIN_CHARS letters ("sign" → `sign*`: signed, signing).
    CJK and non-Latin words are never touched; shorter words are searched as written.
    """
    if not (word.isascii() and word.isalpha()) or word in FUNCTION_WORDS:
        return None
    for suffix in STEM_SUFFIXES:
        if suffix == "s" and word.endswith("ss"):
            continue  # class, process: not a plural
        if suffix == "y" and len(word) > 1 and word[-2] in "aeiou":
            continue  # deploy, survey: the y belongs to the stem
        if word.endswith(suffix) and len(word) - len(suffix) >= STEM_MIN_CHARS:
            stem = word[: -len(suffix)]
            if (
                len(stem) > STEM_MIN_CHARS
                and stem[-1] == stem[-2]
                and stem[-1] not in "aeiou"
                and stem[-1] not in _DOUBLED_KEEP
            ):
                stem = stem[:-1]
            return stem
    return word if len(word) >= STEM_MIN_CHARS else None


def question_prefix(word: str) -> str | None:
    """The prefix a question's `word` is searched by, or None (searched as the whole word).

    Only all-letter ASCII words that are not function words: one inflection ending is cut
    (`PREFIX_SUFFIXES`) when PREFIX_MIN_CHARS letters remain, and the result must have at least
    PREFIX_MIN_CHARS letters: "painted" → "paint", "sunrise" → "sunrise", "uses" → "uses",
    "pets" → "pets", "go" → None. Stemming-free: "paint" finds painting, painter, paints.
    """
    if not (word.isascii() and word.isalpha()) or word in STOP_WORDS:
        return None
    for suffix in PREFIX_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= PREFIX_MIN_CHARS:
            return word[: -len(suffix)]
    return word if len(word) >= PREFIX_MIN_CHARS else None
