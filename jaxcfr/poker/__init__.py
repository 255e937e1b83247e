"""The poker layer: where jaxcfr's solvers meet `abstractions`' card and bet arithmetic.

Heads-up no-limit hold'em as a public tree (betting actions and board cards) times a vector of
private hands per player, in the one canonical order of hole-card pairs (`abstractions.HOLES`).
"""
