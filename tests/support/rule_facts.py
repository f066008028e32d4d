"""Needles, questions and filler the rule tests share (the package's default English and Chinese needles, a
CDME reasoning chain, multi-value retrieval values)."""

from __future__ import annotations

from evalscope_niah.scoring import PromptText

SF_NEEDLE = 'The best thing to do in San Francisco is eat a sandwich and sit in Dolores Park on a sunny day.'
SF_QUESTION = 'What is the best thing to do in San Francisco?'
ZH_NEEDLE = '小明最喜欢的实习的地点就是上海人工智能实验室。'
ZH_QUESTION = '小明最喜欢的实习地点是哪里？'
FILLER_EN = 'The history of the city is long and its harbour saw many ships arrive from distant shores. '
FILLER_ZH = '这座城市的历史非常悠久，港口见证了许多来自远方的船只。'

VALUES = ('4821937', '1234567', '7654321', '9081726')

MULTI_NEEDLES = tuple(f'One of the special magic numbers for Quillmere is: {v}.' for v in VALUES)

SF_PROMPT = PromptText(shown=FILLER_EN * 60 + SF_NEEDLE + ' ' + FILLER_EN * 60 + SF_QUESTION)
# A model's own explanation, ~60 words in no sentence of the haystack.
OWN_WORDS = (
    'This sentence is the only one in the text that speaks to the question, and it answers it directly: the author '
    'recommends a simple afternoon outdoors, a meal in the open air and a seat in a well known park when the weather '
    'is good. Everything else in the document concerns other subjects entirely.'
)

GIOSTRA = (
    'Of all the restaurants in Florence, La Giostra is considered the best.',
    'The dish La Giostra is best known for is its truffle macaroni.',
    'The truffle macaroni served at La Giostra is made by a chef named Jack.',
)
