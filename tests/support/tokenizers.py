"""Tokenizer directories for a test server whose tokenizer is not ours."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from evalscope_niah.making.tokenization import shipped_qwen3_dir


def byte_level_qwen3_dir(directory: Path) -> Path:
    """Qwen3's tokenizer with its merges removed: the same vocabulary, specials and chat template, but every byte of
    text its own token, so it counts a prompt several times longer than Qwen3 does (a model with a small vocabulary,
    as SmolLM2 is for Chinese)."""
    directory.mkdir(parents=True, exist_ok=True)
    source = shipped_qwen3_dir()
    for name in ('tokenizer_config.json', 'vocab.json'):
        shutil.copy(source / name, directory / name)
    (directory / 'merges.txt').write_text('#version: 0.2\n', encoding='utf-8')
    config = json.loads((source / 'tokenizer.json').read_text(encoding='utf-8'))
    config['model']['merges'] = []
    (directory / 'tokenizer.json').write_text(json.dumps(config), encoding='utf-8')
    return directory
