"""Every bound the rules decide by, in one block: change a pass mark, a cue window or the paste rule here.

Each bound says why it is what it is. Scores are in [0, 1]; a rule score is *certain* when the rules may decide
alone, else a judge decides and a rule-only run records at most ``UNCERTAIN_SCORE_CAP``.
"""

from __future__ import annotations

# --- what a score means --------------------------------------------------------------------------------------------

# A score at or above this counts as "found the needle" when rule scores are compared with judge verdicts (and in
# the real-answer agreement): halfway between a fail (<= UNCERTAIN_SCORE_CAP) and a pass (>= CERTAIN_PASS).
RULE_PASS_THRESHOLD = 0.5
# A certain pass: the key stated plainly. The adversarial table's right answers must reach it.
CERTAIN_PASS = 0.9
# Highest rule-only score of an answer the rules cannot confirm (and the most a wrong answer may score): below
# RULE_PASS_THRESHOLD, so an unconfirmed answer never counts as found.
UNCERTAIN_SCORE_CAP = 0.3
# Needle recall (custom needles with no short answer) is trusted outside (UNCERTAIN_LOW, CERTAIN_PASS): a tenth
# of the needle's facts is chance overlap, nine tenths is the needle; in between a judge decides.
UNCERTAIN_LOW = 0.1
# The key as one short item of a list of alternatives ('saffron, teal or crimson'): half the uncertain cap, since a
# list is a hedge a judge will rarely pass.
LIST_ITEM_SCORE = UNCERTAIN_SCORE_CAP * 0.5
# A reasoning/associative keyword listed next to another candidate with nothing to pick one: a certain fail, scored
# like chance overlap.
LISTED_NAME_SCORE = UNCERTAIN_LOW

# --- paraphrase shares ---------------------------------------------------------------------------------------------

# Share of the key's content units (word stems, CJK bigrams) that makes a keyless answer a paraphrase or a partial
# answer a judge should read; below it the key is simply missing (a certain 0).
PARAPHRASE_SHARE = 0.25
# In the needle-absent control, the share that makes an answer state the (absent) fact in other words: a guess.
# Higher than PARAPHRASE_SHARE because an abstention often names the topic ('no word of a sandwich here').
CONTROL_PARAPHRASE_SHARE = 0.4

# --- where cues count ----------------------------------------------------------------------------------------------

# Characters before/after each occurrence of the key in which a negation, retraction or hedge cue counts (English /
# Chinese): about one clause either side; Chinese packs a clause into fewer characters.
CUE_WINDOW = {'en': (60, 80), 'zh': (20, 30)}
# Items of at most this many words (English) / CJK characters (Chinese) are "short": three of them around the key
# make a list of alternatives, not a sentence.
LIST_ITEM_UNITS = {'en': 3, 'zh': 6}
# Characters between the keyword and another candidate that still read as a list ('Jack, La Giostra').
LIST_GAP_CHARS = 12
# A keyless (custom needle) answer is checked for cues only up to this many units: longer, the cues could be
# about anything, and recall alone decides.
KEYLESS_CUE_UNITS = 80
# An English-subset answer with more than this share of CJK letters is written in the other language.
OTHER_LANGUAGE_CJK_SHARE = 0.3

# --- work bounds (hostile answers) ---------------------------------------------------------------------------------

# Scanned prefix of an answer; a longer one is no clean abstention (or plain answer) anyway.
MAX_SCAN_CHARS = 20_000
# Occurrences of a key examined for cues and lists: each costs a scan of its sentence, so a reply repeating the key
# thousands of times must not cost thousands of scans.
MAX_SPANS = 20

# --- pasted context: decided by evidence, not by length -------------------------------------------------------------

# Verbatim runs are found as word n-grams (English words, single CJK characters): 8 units in a row that also occur in
# the prompt are copied, not written (a model's own sentence shares 8 words in a row with an essay by chance rarely).
PASTE_NGRAM = 8
# Units copied from the prompt beyond the needles, question and template that make an answer a paste: about two
# sentences. A right answer quotes the needle (allowed) and explains in its own words; one quoted sentence of the
# surrounding text (~20 words, ~40 characters) stays under this.
PASTE_MIN_UNITS = {'en': 40, 'zh': 80}
# The last resort, used only where the prompt is not known (a custom scorer, a review without its prompt): an answer
# this long is no answer whatever it holds. Far above verbose right answers: the longest graded-right answers in
# tests/data/real_answers are ~130 words, answers that quote the needle and explain it 60-200 words.
LAST_RESORT_UNITS = {'en': 400, 'zh': 800}
# needle_recall, the reported fact recall, scales answers longer than max(factor x needle, needle + margin) units
# down by allowed / length (CDME-style; the verdicts use the paste evidence instead).
RECALL_LENGTH_FACTOR = 3
RECALL_LENGTH_MARGIN = 40
