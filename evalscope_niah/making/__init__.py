"""Making samples: parameters and corpora in, exact-length prompts out (corpus -> tokens -> haystack -> sample)."""
