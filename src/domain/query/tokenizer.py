"""The query tokenizer (spec 5.2). The rules live in ``context_service.lexical``, which the
service and ``contextctl``'s local store share; this module keeps the domain's import path."""

from __future__ import annotations

from context_service.lexical import tokenize

__all__ = ["tokenize"]
