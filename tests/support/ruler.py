"""RULER's scripts/synthetic.yaml niah entries, as facts the RULER tests check our presets against: haystack, key
type, value type, num_needle_k, num_needle_v, num_needle_q."""

SYNTHETIC_YAML = {
    'niah_single_1': ('noise', 'words', 'numbers', 1, 1, 1),
    'niah_single_2': ('essay', 'words', 'numbers', 1, 1, 1),
    'niah_single_3': ('essay', 'words', 'uuids', 1, 1, 1),
    'niah_multikey_1': ('essay', 'words', 'numbers', 4, 1, 1),
    'niah_multikey_2': ('needle', 'words', 'numbers', 1, 1, 1),
    'niah_multikey_3': ('needle', 'uuids', 'uuids', 1, 1, 1),
    'niah_multivalue': ('essay', 'words', 'numbers', 1, 4, 1),
    'niah_multiquery': ('essay', 'words', 'numbers', 1, 1, 4),
}
