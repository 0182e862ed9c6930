"""The dense relevance floor: a fixed background sample and the calibration against it (ADR 0069).

An embedding model gives unrelated text a cosine far above 0 (e5-style models: 0.7-0.8), and
how far depends on the model and on the query: a short vague question sits close to everything.
So a cosine says nothing on its own. `BACKGROUND` is a fixed set of generic sentences, varied in
topic, register and language, that no memory store is about. Each embedding model embeds it once
(as passages; the vector store keeps the vectors, keyed by model id and `BACKGROUND_DIGEST`).
Per query, the cosines of the query with the background say what "unrelated" looks like for
this query under this model; a stored row is relevant only when it is clearly closer than that.

`Calibration.of(background_cosines)` summarises them (mean, spread, maximum, and the mean of
the `NEIGHBOURHOOD_K` highest: the query's hubness r_q); `Calibration.relevance(cosine,
hubness)` maps a row's cosine to a relevance in [0, 1] on the scale the keyword index uses
(the score contract: 0 = no better than unrelated text, 1 = as close as a text about exactly
the query). Two floors (`METHODS`):

- "csls" (the default, ADR 0072): the hubness-corrected score `2·cos(q, d) − r_q − r_d` of
  cross-domain similarity local scaling, with r_d (`hubness`) the row's cosine with the
  background's normalised centroid (a row close to everything generic, a hub, needs a higher
  cosine); relevance `(score - CSLS_FLOOR) / (CSLS_FULL - CSLS_FLOOR)` clipped;
- "z" (ADR 0069): `(z - Z_FLOOR) / (Z_FULL - Z_FLOOR)` clipped, with `z` the row's cosine in
  background standard deviations above the background's mean, and never above 0 for a cosine
  not above the background's maximum.

A hit passes the dense floor when its relevance is > 0.

Pure: the standard library only; the vectors and their products are computed by the callers.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from typing import Final

import attrs

#: Background standard deviations above the background's mean a cosine needs to count at all.
Z_FLOOR: Final = 4.5
#: ... and to count as fully relevant (relevance 1.0).
Z_FULL: Final = 8.5
#: The hubness-corrected (CSLS) floor (ADR 0072): a row's score is `2·cos(q, d) − r_q − r_d`,
#: with r_q the mean of the query's `NEIGHBOURHOOD_K` highest background cosines and r_d the
#: row's cosine with the background's centroid; it must exceed `CSLS_FLOOR` to count at all ...
CSLS_FLOOR: Final = 0.02
#: ... and reach `CSLS_FULL` to count as fully relevant.
CSLS_FULL: Final = 0.12
#: Background cosines averaged into the query's neighbourhood r_q.
NEIGHBOURHOOD_K: Final = 10
#: The floors `Calibration` can apply: "csls" (hubness-corrected, ADR 0072) or "z" (background
#: standard deviations, ADR 0069).
METHODS: Final = ("csls", "z")
#: The spread below which the background is treated as degenerate (a model that maps everything
#: to nearly one point): then the spread is taken to be this.
MIN_SPREAD: Final = 1e-3

#: Generic sentences no store is about (English first, then other languages the scanner and the
#: tokenizer cover). Changing this list changes `BACKGROUND_DIGEST`, so stored background
#: vectors are recomputed.
BACKGROUND: Final[tuple[str, ...]] = (
    "The weather was mild this morning with a light breeze from the west.",
    "She bought fresh bread and a bag of oranges at the market.",
    "The museum opens at ten and closes at six on weekdays.",
    "He has been learning to play the piano for three years.",
    "The river flooded the lower fields after a week of heavy rain.",
    "Our neighbours are repainting their fence a pale shade of green.",
    "The train to the coast was delayed by twenty minutes.",
    "A good night's sleep helps the body recover from exercise.",
    "The children built a sandcastle near the edge of the water.",
    "Ancient Rome relied on aqueducts to bring water into the city.",
    "The recipe calls for two eggs, a cup of flour and some butter.",
    "Volcanic eruptions can cool the climate for several years.",
    "The library is holding a book sale next Saturday afternoon.",
    "Penguins huddle together to stay warm during the winter.",
    "The football match ended in a draw after extra time.",
    "Tea was first cultivated in China thousands of years ago.",
    "The old bridge was closed for repairs over the summer.",
    "Many birds migrate south when the days grow shorter.",
    "The orchestra rehearsed the symphony for the concert tonight.",
    "He forgot his umbrella and got soaked on the way home.",
    "The moon orbits the earth roughly once every twenty-seven days.",
    "A small cafe on the corner serves excellent hot chocolate.",
    "The novel follows a family across three generations.",
    "Farmers harvest the wheat at the end of the summer.",
    "The price of coffee rose sharply last year.",
    "The cat slept on the windowsill in the afternoon sun.",
    "Mountain roads can be dangerous when covered in ice.",
    "The painting was sold at auction for a record price.",
    "Regular walks are good for both body and mind.",
    "The city council approved a new park near the harbour.",
    "Honey never spoils if it is stored properly.",
    "The marathon route passes through the historic old town.",
    "She wrote a letter to her grandmother every month.",
    "The forest is home to deer, foxes and many kinds of owls.",
    "Glaciers shape valleys slowly over thousands of years.",
    "The bakery sells out of croissants before nine o'clock.",
    "A thunderstorm knocked out the power for an hour.",
    "The students visited a chocolate factory on their school trip.",
    "Sunflowers turn to face the sun as they grow.",
    "The ship sailed across the Atlantic in about a week.",
    "Chess players often study famous games from the past.",
    "The garden needs watering twice a week in dry weather.",
    "The festival attracts thousands of visitors every spring.",
    "Whales communicate with songs that travel great distances.",
    "The hotel room had a view of the lake and the hills.",
    "Bees play an important role in pollinating crops.",
    "The actor won an award for his role in the historical drama.",
    "Salt was once so valuable that it was used as money.",
    "The hikers reached the summit just before sunset.",
    "Knitting a scarf takes patience and a lot of wool.",
    "The stadium was full for the final game of the season.",
    "Lighthouses guided ships safely along rocky coastlines.",
    "Dinosaurs lived on earth for more than a hundred million years.",
    "The farmer's market is busiest on Sunday mornings.",
    "He likes to read the newspaper with his breakfast.",
    "The dog chased a ball across the park.",
    "Apples and pears grow well in a cool climate.",
    "The singer's new album was released last Friday.",
    "Snow fell all night and covered the streets.",
    "The pyramids of Giza were built as tombs for the pharaohs.",
    "A bicycle is a cheap and healthy way to get around town.",
    "The waiter recommended the soup of the day.",
    "The earthquake damaged several buildings in the old quarter.",
    "Learning a new language opens doors to other cultures.",
    "The bus stop is just around the corner from the school.",
    "Tomatoes need plenty of sunlight to ripen.",
    "The circus came to town with acrobats and clowns.",
    "A rainbow appeared after the afternoon shower.",
    "The poet read her verses aloud to a quiet audience.",
    "Coral reefs are among the most diverse ecosystems on earth.",
    "The wedding took place in a small chapel by the sea.",
    "The price of a cinema ticket has gone up again.",
    "Owls hunt mostly at night and sleep during the day.",
    "The carpenter built a sturdy oak table for the kitchen.",
    "The election results were announced late in the evening.",
    "Autumn leaves turn red, orange and yellow.",
    "The astronaut described the view of the earth from orbit.",
    "Grandfather told stories about his childhood on the farm.",
    "A cup of warm milk before bed can help you fall asleep.",
    "The tennis player served an ace to win the set.",
    "Sheep graze on the green hills above the village.",
    "The jazz band played until well after midnight.",
    "Spices such as pepper and cinnamon were once traded across oceans.",
    "The baby took her first steps on her birthday.",
    "The desert is cold at night even when the days are hot.",
    "The photographer captured the sunrise over the valley.",
    "The kids played hide and seek in the garden.",
    "Thank you so much, that sounds great!",
    "How are you doing today?",
    "I will call you back later this evening.",
    "What time does the shop close on Sundays?",
    "Let me know if you need anything else.",
    "That was a lovely dinner, thanks for having us.",
    "Could you pass me the salt, please?",
    "See you next week at the same place.",
    "El tren sale de la estación a las ocho de la mañana.",
    "Me gusta pasear por la playa al atardecer.",
    "La abuela prepara una sopa deliciosa los domingos.",
    "Le marché du samedi propose des fromages de la région.",
    "Il pleut souvent en automne dans le nord du pays.",
    "Nous avons visité un château au bord de la Loire.",
    "Der Zug nach Berlin hat heute leider Verspätung.",
    "Im Winter fahren wir gern in die Berge zum Skifahren.",
    "Die Katze schläft den ganzen Nachmittag auf dem Sofa.",
    "Il gelato italiano è famoso in tutto il mondo.",
    "La piazza era piena di turisti e di piccioni.",
    "O café da manhã inclui pão, fruta e café com leite.",
    "As crianças brincaram no parque até escurecer.",
    "De fietsers reden langs de dijk in de wind.",
    "Vi åkte till landet och plockade blåbär i skogen.",
    "Kot śpi na parapecie w promieniach słońca.",
    "Летом мы часто ездим на дачу за город.",
    "В библиотеке тихо, и все читают книги.",
    "Η θάλασσα ήταν ήρεμη και ζεστή το καλοκαίρι.",
    "Bugün hava çok güzel, parkta yürüyüş yapalım.",
    "Hôm nay trời nắng đẹp, chúng tôi đi dạo công viên.",
    "Kami makan malam bersama keluarga di rumah nenek.",
    "今天天气很好，我们去公园散步吧。",
    "他每天早上骑自行车去上班。",
    "这家饭馆的饺子非常好吃。",
    "秋天的时候，山上的树叶都变红了。",
    "图书馆周末开放到晚上八点。",
    "奶奶在院子里种了很多花。",
    "我们明年夏天打算去海边旅行。",
    "小猫在沙发上睡了一下午。",
    "今日は雨が降っているので、家で本を読みます。",
    "駅の近くに新しいパン屋ができました。",
    "桜の季節には公園が人でいっぱいになります。",
    "週末は家族と一緒に山に登りました。",
    "오늘은 날씨가 맑아서 산책하기 좋아요.",
    "주말에 친구들과 바다에 놀러 갔어요.",
    "이 식당의 김치찌개는 정말 맛있어요.",
    "يشرب الناس الشاي بالنعناع في المساء.",
    "ذهبنا إلى السوق لشراء الفواكه والخضروات.",
    "בבוקר הלכנו לים ושחינו במים הקרירים.",
    "आज बारिश हो रही है, इसलिए हम घर पर हैं।",
    "ฝนตกหนักทั้งคืนจนถนนมีน้ำท่วม",
)


def _digest(sentences: Sequence[str]) -> str:
    hasher = hashlib.sha256()
    for sentence in sentences:
        hasher.update(sentence.encode("utf-8"))
        hasher.update(b"\x00")
    return hasher.hexdigest()[:16]


#: Identifies this version of `BACKGROUND`: stored background vectors carry it.
BACKGROUND_DIGEST: Final = _digest(BACKGROUND)


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    return float(value)


@attrs.frozen(kw_only=True)
class Calibration:
    """What unrelated text looks like to one query under one model: the mean, standard
    deviation and maximum of the query's cosines with the background sample, and the mean of
    its `NEIGHBOURHOOD_K` highest (the query's hubness r_q, for the "csls" floor)."""

    mean: float
    spread: float
    maximum: float
    z_floor: float = Z_FLOOR
    z_full: float = Z_FULL
    neighbourhood: float = 0.0
    method: str = "csls"
    csls_floor: float = CSLS_FLOOR
    csls_full: float = CSLS_FULL

    @classmethod
    def of(
        cls,
        cosines: Sequence[float],
        *,
        method: str = "csls",
        z_floor: float = Z_FLOOR,
        z_full: float = Z_FULL,
        csls_floor: float = CSLS_FLOOR,
        csls_full: float = CSLS_FULL,
        k: int = NEIGHBOURHOOD_K,
    ) -> Calibration:
        """The calibration of a query from its cosines with the background (at least two)."""
        values = [_finite("cosine", c) for c in cosines]
        if len(values) < 2:
            raise ValueError(f"a calibration needs at least two background cosines; got {values}")
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}; got {method!r}")
        if not _finite("z_full", z_full) > _finite("z_floor", z_floor):
            raise ValueError(f"z_full must be above z_floor; got {z_full} <= {z_floor}")
        if not _finite("csls_full", csls_full) > _finite("csls_floor", csls_floor):
            raise ValueError(f"csls_full must be above csls_floor; got {csls_full} <= {csls_floor}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1; got {k!r}")
        mean = math.fsum(values) / len(values)
        variance = math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1)
        top = sorted(values, reverse=True)[:k]
        return cls(
            mean=mean,
            spread=max(math.sqrt(variance), MIN_SPREAD),
            maximum=max(values),
            z_floor=z_floor,
            z_full=z_full,
            neighbourhood=math.fsum(top) / len(top),
            method=method,
            csls_floor=csls_floor,
            csls_full=csls_full,
        )

    def csls(self, cosine: float, hubness: float) -> float:
        """A row's hubness-corrected score `2·cosine − r_q − r_d` (r_d = `hubness`, the row's
        cosine with the background's centroid): how much closer the query and the row are to
        each other than each is to generic text."""
        return 2.0 * cosine - self.neighbourhood - hubness

    def z(self, cosine: float) -> float:
        """`cosine` in background standard deviations above the background's mean."""
        return (cosine - self.mean) / self.spread

    @property
    def floor(self) -> float:
        """The least cosine with a relevance above 0: above the background's maximum and
        `z_floor` standard deviations above its mean."""
        return max(self.maximum, self.mean + self.z_floor * self.spread)

    def relevance(self, cosine: float, hubness: float = 0.0) -> float:
        """A row's dense relevance in [0, 1] (non-finite inputs: 0). "csls": 0 at or below
        `csls_floor`, rising linearly in `csls` to 1 at `csls_full`; "z": 0 at or below
        `floor`, rising linearly in z to 1 at `z_full` standard deviations (`hubness`, the
        row's cosine with the background's centroid, is used by "csls" only)."""
        if not (math.isfinite(cosine) and math.isfinite(hubness)):
            return 0.0
        if self.method == "csls":
            score = self.csls(cosine, hubness)
            if score <= self.csls_floor:
                return 0.0
            return min(1.0, (score - self.csls_floor) / (self.csls_full - self.csls_floor))
        if cosine <= self.floor:
            return 0.0
        share = (self.z(cosine) - self.z_floor) / (self.z_full - self.z_floor)
        return min(1.0, max(0.0, share))


__all__ = [
    "BACKGROUND",
    "BACKGROUND_DIGEST",
    "CSLS_FLOOR",
    "CSLS_FULL",
    "METHODS",
    "MIN_SPREAD",
    "NEIGHBOURHOOD_K",
    "Z_FLOOR",
    "Z_FULL",
    "Calibration",
]
