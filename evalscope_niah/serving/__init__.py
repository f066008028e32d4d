"""Talking to model servers: what a server says (window, tokenizer), request deadlines, secrets, a local model and
router, and the request order and routing key that keep shared prefixes on one replica."""
