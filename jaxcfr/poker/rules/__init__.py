"""Ranges, cards and the real game: the rules every other part of the poker layer builds on."""
